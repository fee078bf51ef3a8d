//! The AMP query's SigV4 signature must be what botocore's signer (`SigV4Auth`, service `aps`)
//! gives for the same request, credentials and time: byte-equal `Authorization`,
//! `X-Amz-Date` and `X-Amz-Security-Token`. botocore runs from the test venv.

use std::process::Command;
use std::time::{Duration, UNIX_EPOCH};

use aws_credential_types::Credentials;
use canary_aws::prometheus::query_request;
use canary_core::analysis::PrometheusEndpoint;
use serde_json::Value;

const BOTOCORE_SIGNATURE: &str = r#"
import datetime, json, sys
from unittest import mock
import botocore.auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials

key, secret, token, region, url, body, epoch = sys.argv[1:8]
request = AWSRequest(method="POST", url=url, data=body.encode(),
                     headers={"Content-Type": "application/x-www-form-urlencoded"})
fixed = datetime.datetime.fromtimestamp(int(epoch), datetime.timezone.utc).replace(tzinfo=None)
with mock.patch("botocore.auth.get_current_datetime", return_value=fixed):
    botocore.auth.SigV4Auth(Credentials(key, secret, token or None), "aps", region).add_auth(request)
print(json.dumps({k.lower(): v for k, v in request.headers.items()}))
"#;

fn python() -> std::path::PathBuf {
    std::env::var_os("PYTHON")
        .map(Into::into)
        .unwrap_or_else(|| {
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../.venv/bin/python")
        })
}

fn botocore_headers(
    credentials: &Credentials,
    region: &str,
    url: &str,
    body: &str,
    epoch: u64,
) -> Value {
    let out = Command::new(python())
        .args([
            "-c",
            BOTOCORE_SIGNATURE,
            credentials.access_key_id(),
            credentials.secret_access_key(),
            credentials.session_token().unwrap_or_default(),
            region,
            url,
            body,
            &epoch.to_string(),
        ])
        .env("AWS_EC2_METADATA_DISABLED", "true")
        .env_remove("AWS_PROFILE")
        .output()
        .expect("run python with botocore (scripts/setup.sh)");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("botocore's headers as JSON")
}

#[test]
fn the_amp_query_is_signed_as_botocore_signs_it() {
    let endpoint = PrometheusEndpoint::Amp {
        base: "https://aps-workspaces.eu-west-1.amazonaws.com/workspaces/ws-0f1e2d3c-4b5a-6978-8a9b-0c1d2e3f4a5b".into(),
        region: "eu-west-1".into(),
    };
    let epoch = 1_795_000_000;
    let now = UNIX_EPOCH + Duration::from_secs(epoch);
    let query = "sum(rate(http_requests_total{cluster=\"green\",code=~\"5..\"}[5m])) / sum(rate(http_requests_total{cluster=\"green\"}[5m]))";
    for session_token in [
        None,
        Some("FwoGZXIvYXdzEJr//////////wEaDLm+token/with=odd+chars"),
    ] {
        let credentials = Credentials::new(
            "AKIAIOSFODNN7EXAMPLE",
            "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
            session_token.map(str::to_owned),
            None,
            "test",
        );
        let request = query_request(&endpoint, query, now, Some(&credentials), now).unwrap();
        let body = std::str::from_utf8(request.body()).unwrap();
        let expected = botocore_headers(
            &credentials,
            "eu-west-1",
            &request.uri().to_string(),
            body,
            epoch,
        );
        for header in ["authorization", "x-amz-date", "x-amz-security-token"] {
            let ours = request.headers().get(header).map(|v| v.to_str().unwrap());
            assert_eq!(
                ours,
                expected[header].as_str(),
                "{header} ({session_token:?})"
            );
        }
        assert!(expected["authorization"]
            .as_str()
            .unwrap()
            .contains("/eu-west-1/aps/aws4_request"));
    }
}

#[test]
fn a_plain_prometheus_query_is_not_signed() {
    let endpoint = PrometheusEndpoint::Plain {
        base: "http://prometheus.monitoring:9090".into(),
    };
    let credentials = Credentials::new("AKID", "SECRET", None, None, "test");
    let request =
        query_request(&endpoint, "up", UNIX_EPOCH, Some(&credentials), UNIX_EPOCH).unwrap();
    assert!(request.headers().get("authorization").is_none());
}
