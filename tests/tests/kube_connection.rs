//! Reaching the management cluster's Kubernetes API: a TLS failure (a CA that did not sign the
//! server's certificate, a name the certificate does not cover, CA data that is not a
//! certificate) is `KubeTlsFailed`, never retried, with rustls's reason in the message; a
//! refused connection stays `KubeTransient`, with its cause, as does an API server shedding
//! load (429) or failing (5xx). Against the Kubernetes API test server over real HTTPS.

use canary_kube::access::client;
use canary_kube::{ClusterSecrets, KubeArgoCd, KubeError};
use cluster_canary_tests::{KubeServer, ADMIN_TOKEN};

async fn list_secrets(server: &str, ca_data: &str) -> Result<(), KubeError> {
    let client = client(server, ca_data, ADMIN_TOKEN.to_owned()).await?;
    KubeArgoCd::new(client, "argocd")
        .cluster_secrets()
        .await
        .map(drop)
}

fn tls_error(result: Result<(), KubeError>) -> String {
    let err = result.expect_err("the connection must fail");
    assert_eq!(err.error_name().as_str(), "KubeTlsFailed", "{err}");
    assert!(!err.error_name().is_retryable());
    err.to_string()
}

#[tokio::test]
async fn the_right_ca_connects() {
    let kube = KubeServer::start(&[]);
    list_secrets(&kube.server, &kube.ca_data)
        .await
        .expect("connects");
}

#[tokio::test]
async fn a_ca_that_did_not_sign_the_certificate_is_a_tls_failure() {
    let kube = KubeServer::start(&[]);
    let other = KubeServer::start(&[]);
    let message = tls_error(list_secrets(&kube.server, &other.ca_data).await);
    // Both test CAs have the same subject: rustls finds the issuer, then a bad signature.
    assert!(
        message.contains("invalid peer certificate: BadSignature")
            || message.contains("invalid peer certificate: UnknownIssuer"),
        "{message}"
    );
}

#[tokio::test]
async fn a_name_the_certificate_does_not_cover_is_a_tls_failure() {
    let kube = KubeServer::start(&["--certificate-for", "kube.example.internal"]);
    let message = tls_error(list_secrets(&kube.server, &kube.ca_data).await);
    assert!(
        message.contains("invalid peer certificate: certificate not valid for name \"127.0.0.1\""),
        "{message}"
    );
}

#[tokio::test]
async fn ca_data_that_is_not_a_certificate_is_a_tls_failure() {
    use base64::Engine;
    let kube = KubeServer::start(&[]);
    let not_a_certificate = base64::engine::general_purpose::STANDARD
        .encode("-----BEGIN CERTIFICATE-----\nbm9wZQ==\n-----END CERTIFICATE-----\n");
    let message = tls_error(list_secrets(&kube.server, &not_a_certificate).await);
    assert!(
        message.contains("failed to add a root certificate: invalid peer certificate: BadEncoding"),
        "{message}"
    );
}

#[tokio::test]
async fn a_refused_connection_is_transient_and_says_so() {
    let kube = KubeServer::start(&[]);
    let closed = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.local_addr().unwrap().port()
    };
    let err = list_secrets(&format!("https://127.0.0.1:{closed}"), &kube.ca_data)
        .await
        .expect_err("nothing listens there");
    assert_eq!(err.error_name().as_str(), "KubeTransient", "{err}");
    assert!(err.to_string().contains("Connection refused"), "{err}");
}

/// An API server failing (500) is `KubeTransient`, for the state machine to retry; one shedding
/// load (429) or unavailable (503) is retried by kube's own policy after `Retry-After`. The
/// test server's faults (`/_test/faults`) answer each once, as kube-apiserver does.
#[tokio::test]
async fn an_api_server_failing_is_transient_and_one_shedding_load_is_retried() {
    let kube = KubeServer::start(&[]);
    let admin = kube.admin_client().await;
    for code in [500, 429, 503] {
        let fault = serde_json::json!({"method": "GET", "pathContains": "/secrets", "times": 1, "code": code});
        let request = http::Request::post("/_test/faults")
            .header("Content-Type", "application/json")
            .body(fault.to_string().into_bytes())
            .expect("a request");
        admin.request_text(request).await.expect("the fault is set");
        let listed = list_secrets(&kube.server, &kube.ca_data).await;
        if code == 500 {
            let err = listed.expect_err("the fault answers");
            assert_eq!(err.error_name().as_str(), "KubeTransient", "{err}");
            assert!(err.to_string().contains("500"), "{err}");
        } else {
            listed.expect("kube's retry policy asked again");
        }
        let faults = http::Request::get("/_test/faults")
            .body(Vec::new())
            .expect("a request");
        let faults: serde_json::Value =
            serde_json::from_str(&admin.request_text(faults).await.expect("the faults"))
                .expect("JSON");
        assert!(
            faults["items"]
                .as_array()
                .is_some_and(|all| all.iter().all(|f| f["times"] == 0)),
            "every fault answered: {faults}"
        );
    }
    list_secrets(&kube.server, &kube.ca_data)
        .await
        .expect("served once the faults are used");
}

#[tokio::test]
async fn bad_connection_settings_are_refused_before_connecting_and_never_echo_the_token() {
    use base64::Engine;
    let kube = KubeServer::start(&[]);
    let base64 = |text: &str| base64::engine::general_purpose::STANDARD.encode(text);
    let key_only = base64("-----BEGIN PRIVATE KEY-----\nbm9wZQ==\n-----END PRIVATE KEY-----\n");
    for (server, ca_data, token, expected) in [
        (
            kube.server.as_str(),
            "not base64!",
            ADMIN_TOKEN,
            "the CA data is not base64",
        ),
        (
            kube.server.as_str(),
            key_only.as_str(),
            ADMIN_TOKEN,
            "the CA data holds no PEM certificate",
        ),
        (
            kube.server.as_str(),
            kube.ca_data.as_str(),
            "secret-token\nsecond-line",
            "the token has characters an HTTP header cannot carry",
        ),
        (
            "https://a b",
            kube.ca_data.as_str(),
            ADMIN_TOKEN,
            "bad connection settings: server \"https://a b\"",
        ),
    ] {
        let Err(err) = client(server, ca_data, token.to_owned()).await else {
            panic!("bad settings must be refused: {server}");
        };
        assert_eq!(err.error_name().as_str(), "KubeRequestFailed", "{err}");
        assert!(err.to_string().contains(expected), "{err}");
        assert!(!err.to_string().contains("secret-token"), "{err}");
    }
}
