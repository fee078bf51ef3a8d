//! The HTTPS client of the metrics providers that are not AWS SDK services (Prometheus, AMP,
//! Datadog): the AWS SDK's own connector (hyper 1, rustls on ring, the system's roots), connect
//! and read timeouts, one overall deadline, and every answer read up to a bound.
//!
//! The SDK's connector is linked anyway for the AWS calls; a hyper client of its own
//! (hyper-util's, hyper-rustls, hyper-timeout) was a second instantiation of hyper's client and
//! cost evaluate-alarms 0.06 MB zipped (docs/size-and-startup.md); kube's transport
//! (`canary_kube::transport`) made the same cut before.

use std::sync::OnceLock;
use std::time::Duration;

use aws_smithy_http_client::tls::{rustls_provider::CryptoMode, Provider};
use aws_smithy_http_client::Connector;
use aws_smithy_runtime_api::client::http::{HttpConnector, HttpConnectorSettings};
use aws_smithy_runtime_api::http::Request as SmithyRequest;
use aws_smithy_types::body::SdkBody;
use bytes::Bytes;
use http_body_util::{BodyExt, Limited};

/// Largest answer read: a check's answer is one number and a little metadata; an answer of a
/// megabyte selects far more than a check can judge.
pub const MAX_ANSWER_BYTES: usize = 1 << 20;
/// Longest wait for one request, connection included: a check interval is at least 10 s.
pub const REQUEST_TIMEOUT: Duration = Duration::from_secs(20);
/// Longest wait for a TCP connection and TLS handshake.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);

/// What a request that got no usable answer met.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HttpFailure {
    /// Refused, reset, timed out, a name that does not resolve, a TLS failure: the cause chain.
    Unreachable(String),
    /// The answer's body is over [`MAX_ANSWER_BYTES`].
    TooLarge,
}

/// An answer: its status, headers and (bounded) body.
pub struct Answer {
    pub status: u16,
    pub headers: http::HeaderMap,
    pub body: Bytes,
}

/// Built on first use: loading the system's roots is a cold-start cost that plans without
/// these providers should not pay.
#[derive(Default)]
pub struct LazyHttps {
    connector: OnceLock<Connector>,
}

impl LazyHttps {
    fn connector(&self) -> &Connector {
        self.connector.get_or_init(|| {
            Connector::builder()
                .connector_settings(
                    HttpConnectorSettings::builder()
                        .connect_timeout(CONNECT_TIMEOUT)
                        .read_timeout(REQUEST_TIMEOUT)
                        .build(),
                )
                .tls_provider(Provider::Rustls(CryptoMode::Ring))
                .build()
        })
    }

    /// Sends `request` and reads its answer, within [`REQUEST_TIMEOUT`] and
    /// [`MAX_ANSWER_BYTES`].
    pub async fn send(&self, request: http::Request<Bytes>) -> Result<Answer, HttpFailure> {
        let connector = self.connector();
        let exchange = async {
            let request = SmithyRequest::try_from(request.map(SdkBody::from))
                .map_err(|e| HttpFailure::Unreachable(error_chain(&e)))?;
            let response = connector
                .call(request)
                .await
                .map_err(|e| HttpFailure::Unreachable(error_chain(&e)))?
                .try_into_http1x()
                .map_err(|e| HttpFailure::Unreachable(error_chain(&e)))?;
            let (parts, body) = response.into_parts();
            let body = Limited::new(body, MAX_ANSWER_BYTES)
                .collect()
                .await
                .map_err(|e| {
                    if e.downcast_ref::<http_body_util::LengthLimitError>()
                        .is_some()
                    {
                        HttpFailure::TooLarge
                    } else {
                        HttpFailure::Unreachable(error_chain(e.as_ref()))
                    }
                })?
                .to_bytes();
            Ok(Answer {
                status: parts.status.as_u16(),
                headers: parts.headers,
                body,
            })
        };
        tokio::time::timeout(REQUEST_TIMEOUT, exchange)
            .await
            .map_err(|_| {
                HttpFailure::Unreachable(format!(
                    "no answer within {} s",
                    REQUEST_TIMEOUT.as_secs()
                ))
            })?
    }
}

/// The start of a body, as text, for an error a person reads.
pub fn first_bytes(body: &[u8]) -> String {
    let start = &body[..body.len().min(120)];
    String::from_utf8_lossy(start).into_owned()
}

/// An error and its causes, `: `-joined (hyper's own text is only "client error (Connect)").
fn error_chain(error: &(dyn std::error::Error + 'static)) -> String {
    let mut text = error.to_string();
    let mut next = error.source();
    while let Some(e) = next {
        let line = e.to_string();
        if !text.contains(&line) {
            text.push_str(": ");
            text.push_str(&line);
        }
        next = e.source();
    }
    text
}

/// Signs `request` with SigV4 for `service` in `region` as `credentials`, at `now` (a session
/// token goes in `x-amz-security-token`): the requests to AWS APIs this crate sends itself (AMP,
/// Application Signals). Errors are the signer's words.
pub fn sign_sigv4(
    request: &mut http::Request<Bytes>,
    credentials: &aws_credential_types::Credentials,
    region: &str,
    service: &str,
    now: std::time::SystemTime,
) -> Result<(), String> {
    use aws_sigv4::http_request::{sign, SignableBody, SignableRequest, SigningSettings};
    let identity = credentials.clone().into();
    let params = aws_sigv4::sign::v4::SigningParams::builder()
        .identity(&identity)
        .region(region)
        .name(service)
        .time(now)
        .settings(SigningSettings::default())
        .build()
        .map_err(|e| e.to_string())?
        .into();
    let url = request.uri().to_string();
    let headers = request
        .headers()
        .iter()
        .filter_map(|(name, value)| Some((name.as_str(), value.to_str().ok()?)));
    let signable = SignableRequest::new(
        request.method().as_str(),
        &url,
        headers,
        SignableBody::Bytes(request.body()),
    )
    .map_err(|e| e.to_string())?;
    let (instructions, _signature) = sign(signable, &params)
        .map_err(|e| e.to_string())?
        .into_parts();
    instructions.apply_to_request_http1x(request);
    Ok(())
}
