//! Reaching the Kubernetes API of the management cluster (where Argo CD runs), in one of two
//! modes chosen by configuration:
//! - `eks`: the management cluster is EKS. Endpoint and CA come from DescribeCluster; the
//!   bearer token is minted from the function's own AWS credentials (see `token`).
//! - `secret`: a Secrets Manager secret holds `{"server", "caData", "token"}`, for an Argo CD
//!   that is not on EKS or lives in another account.
//!
//! The token never leaves this module except inside the kube client; it is not logged.

use std::time::SystemTime;

use async_trait::async_trait;
use aws_config::SdkConfig;
use aws_credential_types::provider::{ProvideCredentials, SharedCredentialsProvider};
use base64::engine::general_purpose::STANDARD as BASE64;
use base64::Engine;
use canary_aws::{AwsError, AwsErrorKind, EksApi, SdkEks, SdkSecrets, SecretsApi};
use kube::client::retry::RetryPolicy;
use kube::client::ConfigExt;
use rustls::pki_types::CertificateDer;
use serde::Deserialize;
use tower::retry::RetryLayer;
use tower::ServiceBuilder;
use tower_http::auth::AddAuthorizationLayer;

use crate::argocd::{ClusterSecrets, KubeArgoCd};
use crate::error::{KubeError, KubeErrorKind};
use crate::token::eks_token;
use crate::transport::SdkTransport;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ManagementAccess {
    Eks { cluster_name: String },
    Secret { secret_id: String },
}

impl ManagementAccess {
    /// From `MANAGEMENT_ACCESS` (`eks` | `secret`) and `MANAGEMENT_CLUSTER_NAME` /
    /// `MANAGEMENT_SECRET_ID`.
    pub fn from_env(get: impl Fn(&str) -> Option<String>) -> Result<Self, String> {
        let required = |name: &str| {
            get(name)
                .filter(|v| !v.is_empty())
                .ok_or(format!("{name} is not set"))
        };
        match get("MANAGEMENT_ACCESS").as_deref() {
            Some("eks") => Ok(ManagementAccess::Eks {
                cluster_name: required("MANAGEMENT_CLUSTER_NAME")?,
            }),
            Some("secret") => Ok(ManagementAccess::Secret {
                secret_id: required("MANAGEMENT_SECRET_ID")?,
            }),
            Some(other) => Err(format!(
                "MANAGEMENT_ACCESS must be `eks` or `secret`, got `{other}`"
            )),
            None => Err("MANAGEMENT_ACCESS is not set; it must be `eks` or `secret`".to_owned()),
        }
    }
}

/// What Secrets Manager holds in `secret` mode.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct ConnectionSecret {
    server: String,
    ca_data: String,
    token: String,
}

/// The AWS side of connecting: where the endpoint, CA and credentials come from.
pub struct AccessDeps<'a> {
    pub eks: &'a dyn EksApi,
    pub secrets: &'a dyn SecretsApi,
    pub credentials: &'a dyn ProvideCredentials,
    pub region: &'a str,
}

/// The real AWS clients behind [`AccessDeps`], built once from the function's configuration.
pub struct SdkAccess {
    eks: SdkEks,
    secrets: SdkSecrets,
    credentials: SharedCredentialsProvider,
    region: String,
}

impl SdkAccess {
    pub fn new(config: &SdkConfig) -> Result<Self, String> {
        Ok(SdkAccess {
            eks: SdkEks::new(config),
            secrets: SdkSecrets::new(config),
            credentials: config
                .credentials_provider()
                .ok_or("no AWS credentials provider configured")?,
            region: config
                .region()
                .map(ToString::to_string)
                .ok_or("no AWS region configured")?,
        })
    }

    pub fn deps(&self) -> AccessDeps<'_> {
        AccessDeps {
            eks: &self.eks,
            secrets: &self.secrets,
            credentials: &self.credentials,
            region: &self.region,
        }
    }
}

const CONNECT: &str = "connect to the management cluster";

fn rejected(message: impl Into<String>) -> KubeError {
    KubeError::new(KubeErrorKind::Rejected, CONNECT, message)
}

fn from_aws(e: canary_aws::AwsError) -> KubeError {
    let kind = match e.kind {
        canary_aws::AwsErrorKind::Transient => KubeErrorKind::Transient,
        canary_aws::AwsErrorKind::AccessDenied => KubeErrorKind::AwsPermission,
        _ => KubeErrorKind::Rejected,
    };
    KubeError::new(kind, CONNECT, e.to_string())
}

/// Argo CD's namespace of the management cluster, for what reaches it along the way (the
/// GitOps traffic targets): a connection per call, so a token never outlives an invocation.
#[async_trait]
pub trait ArgoCdConnect: Send + Sync {
    async fn argocd(&self, namespace: &str) -> Result<Box<dyn ClusterSecrets>, KubeError>;
    /// The ARN of EKS cluster `name` in `region` of this account, which registration wrote on
    /// its Secret; `None` when there is no such cluster (any more).
    async fn cluster_arn(&self, region: &str, name: &str) -> Result<Option<String>, AwsError>;
}

/// [`ArgoCdConnect`] through [`connect`], owning its configuration and AWS clients: built
/// once (`canary_rollout::clients::TrafficClients`, for shift-weights and the operator CLI) and
/// kept; each call connects anew.
pub struct OwnedManagement {
    access: ManagementAccess,
    aws: SdkAccess,
}

impl OwnedManagement {
    pub fn new(access: ManagementAccess, config: &SdkConfig) -> Result<Self, String> {
        Ok(OwnedManagement {
            access,
            aws: SdkAccess::new(config)?,
        })
    }
}

#[async_trait]
impl ArgoCdConnect for OwnedManagement {
    async fn argocd(&self, namespace: &str) -> Result<Box<dyn ClusterSecrets>, KubeError> {
        let client = connect(&self.access, &self.aws.deps()).await?;
        Ok(Box::new(KubeArgoCd::new(client, namespace)))
    }

    async fn cluster_arn(&self, region: &str, name: &str) -> Result<Option<String>, AwsError> {
        match self
            .aws
            .deps()
            .eks
            .describe_cluster(Some(region), name)
            .await
        {
            Ok(cluster) => Ok(Some(cluster.arn)),
            Err(e) if e.kind == AwsErrorKind::NotFound => Ok(None),
            Err(e) => Err(e),
        }
    }
}

/// A kube client for the management cluster.
pub async fn connect(
    access: &ManagementAccess,
    deps: &AccessDeps<'_>,
) -> Result<kube::Client, KubeError> {
    let (server, ca_data, token) = match access {
        ManagementAccess::Eks { cluster_name } => {
            let cluster = deps
                .eks
                .describe_cluster(None, cluster_name)
                .await
                .map_err(from_aws)?;
            let (Some(server), Some(ca)) = (cluster.endpoint, cluster.ca_data) else {
                return Err(rejected(format!(
                    "management cluster {cluster_name} has no endpoint yet (status {})",
                    cluster.status
                )));
            };
            let credentials = deps.credentials.provide_credentials().await.map_err(|e| {
                KubeError::new(
                    KubeErrorKind::Transient,
                    CONNECT,
                    format!("no AWS credentials: {e}"),
                )
            })?;
            let token = eks_token(&credentials, deps.region, cluster_name, SystemTime::now())
                .map_err(|e| rejected(e.to_string()))?;
            (server, ca, token)
        }
        ManagementAccess::Secret { secret_id } => {
            let text = deps
                .secrets
                .secret_string(secret_id)
                .await
                .map_err(from_aws)?;
            // The message must not echo the secret's content.
            let secret: ConnectionSecret = serde_json::from_str(&text).map_err(|_| {
                rejected(format!(
                    "secret {secret_id} must be a JSON object with string fields server, caData and token"
                ))
            })?;
            (secret.server, secret.ca_data, secret.token)
        }
    };
    client(&server, &ca_data, token).await
}

/// A kube client for `server`, trusting the base64 PEM `ca_data`, authenticating with `token`.
///
/// Assembled from kube's own layers (`ConfigExt`) rather than from a kubeconfig: the functions
/// only ever hold a server, a CA and a bearer token, and kube's kubeconfig path links a YAML
/// parser and the exec/OIDC auth providers (JSONPath, regex) into every package that reaches
/// Kubernetes (docs/size-and-startup.md). The stack is kube's default one without those and
/// without its debug-level HTTP spans, over the AWS SDK's HTTPS connector (`transport`).
pub async fn client(server: &str, ca_data: &str, token: String) -> Result<kube::Client, KubeError> {
    let cluster_url: http::Uri = server
        .parse()
        .map_err(|e| rejected(format!("bad connection settings: server {server:?}: {e}")))?;
    let mut config = kube::Config::new(cluster_url);
    // API audit logs say who acted (kube-rs sends no User-Agent of its own).
    config.headers.push((
        http::header::USER_AGENT,
        http::HeaderValue::from_static(concat!("cluster-canary/", env!("CARGO_PKG_VERSION"))),
    ));
    let ca = trusted(server, ca_certificates(server, ca_data)?)?;
    // tower-http panics on a token that is no header value (a secret's stray newline, say).
    if http::HeaderValue::try_from(format!("Bearer {token}")).is_err() {
        return Err(rejected(format!(
            "bad connection settings for {server}: the token has characters an HTTP header cannot carry"
        )));
    }
    let transport = SdkTransport::trusting(&ca).map_err(|e| {
        KubeError::new(
            KubeErrorKind::Tls,
            CONNECT,
            format!("cannot build a client for {server}: {e}"),
        )
    })?;
    let service = ServiceBuilder::new()
        .layer(config.base_uri_layer())
        // kube's own: 429, 503 and 504 retried after the server's Retry-After.
        .layer(RetryLayer::new(RetryPolicy::server_retry()))
        .layer(AddAuthorizationLayer::bearer(&token).as_sensitive(true))
        .layer(
            config
                .extra_headers_layer()
                .map_err(|e| KubeError::from_kube(CONNECT, e))?,
        )
        .service(transport);
    Ok(kube::Client::new(service, "default"))
}

/// The CA's certificates, each checked as rustls checks a root (the SDK's connector panics on
/// one it cannot add), as PEM for the connector's trust store.
fn trusted(server: &str, ca: Vec<pem::Pem>) -> Result<Vec<String>, KubeError> {
    let mut roots = rustls::RootCertStore::empty();
    for certificate in &ca {
        roots
            .add(CertificateDer::from(certificate.contents()))
            .map_err(|e| {
                // The CA data decoded, but is not a certificate rustls can trust.
                KubeError::new(
                    KubeErrorKind::Tls,
                    CONNECT,
                    format!(
                        "cannot build a client for {server}: failed to add a root certificate: {e}"
                    ),
                )
            })?;
    }
    Ok(ca.iter().map(pem::encode).collect())
}

/// The certificates of the base64 PEM bundle `ca_data`, as a kubeconfig's
/// `certificate-authority-data` holds them.
fn ca_certificates(server: &str, ca_data: &str) -> Result<Vec<pem::Pem>, KubeError> {
    let bad = |what: String| rejected(format!("bad connection settings for {server}: {what}"));
    let pem = BASE64
        .decode(ca_data.trim())
        .map_err(|e| bad(format!("the CA data is not base64: {e}")))?;
    let certificates: Vec<pem::Pem> = pem::parse_many(&pem)
        .map_err(|e| bad(format!("the CA data is not PEM: {e}")))?
        .into_iter()
        .filter(|block| block.tag() == "CERTIFICATE")
        .collect();
    if certificates.is_empty() {
        return Err(bad("the CA data holds no PEM certificate".to_owned()));
    }
    Ok(certificates)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A Secrets Manager that refuses, as IAM does without `secretsmanager:GetSecretValue`.
    struct Refusing;

    #[async_trait]
    impl SecretsApi for Refusing {
        async fn secret_string(&self, secret_id: &str) -> Result<String, AwsError> {
            Err(AwsError::new(
                AwsErrorKind::AccessDenied,
                "GetSecretValue",
                format!("not authorized to perform: secretsmanager:GetSecretValue on {secret_id}"),
            ))
        }
    }

    #[async_trait]
    impl EksApi for Refusing {
        async fn describe_cluster(
            &self,
            _region: Option<&str>,
            name: &str,
        ) -> Result<canary_aws::ClusterInfo, AwsError> {
            Err(AwsError::new(
                AwsErrorKind::AccessDenied,
                "DescribeCluster",
                format!("not authorized to perform: eks:DescribeCluster on {name}"),
            ))
        }
    }

    #[tokio::test]
    async fn an_aws_refusal_on_the_way_to_the_management_cluster_is_named_as_aws_not_kubernetes() {
        let credentials = SharedCredentialsProvider::new(aws_credential_types::Credentials::new(
            "test", "test", None, None, "test",
        ));
        let deps = AccessDeps {
            eks: &Refusing,
            secrets: &Refusing,
            credentials: &credentials,
            region: "us-east-1",
        };
        for access in [
            ManagementAccess::Secret {
                secret_id: "argocd-hub".into(),
            },
            ManagementAccess::Eks {
                cluster_name: "hub".into(),
            },
        ] {
            let Err(err) = connect(&access, &deps).await else {
                panic!("connected despite the refusal");
            };
            assert_eq!(err.error_name().as_str(), "AwsAccessDenied", "{err}");
            assert!(
                err.to_string().contains("not authorized to perform"),
                "{err}"
            );
        }
    }

    #[test]
    fn access_mode_from_env() {
        let env = |pairs: &'static [(&str, &str)]| {
            move |k: &str| {
                pairs
                    .iter()
                    .find(|(n, _)| *n == k)
                    .map(|(_, v)| (*v).to_owned())
            }
        };
        assert_eq!(
            ManagementAccess::from_env(env(&[
                ("MANAGEMENT_ACCESS", "eks"),
                ("MANAGEMENT_CLUSTER_NAME", "hub")
            ])),
            Ok(ManagementAccess::Eks {
                cluster_name: "hub".into()
            })
        );
        assert_eq!(
            ManagementAccess::from_env(env(&[("MANAGEMENT_ACCESS", "secret")])),
            Err("MANAGEMENT_SECRET_ID is not set".into())
        );
        assert!(ManagementAccess::from_env(env(&[]))
            .unwrap_err()
            .contains("must be `eks` or `secret`"));
    }
}
