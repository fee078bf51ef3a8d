//! The HTTPS client of the metrics providers that are not AWS SDK services (Prometheus, AMP,
//! Datadog): hyper with rustls (the system's roots, the process's ring provider), connect and
//! read timeouts, one overall deadline, and every answer read up to a bound.

use std::sync::OnceLock;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Full, Limited};
use hyper_rustls::{HttpsConnector, HttpsConnectorBuilder};
use hyper_timeout::TimeoutConnector;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;

/// Largest answer read: a check's answer is one number and a little metadata; an answer of a
/// megabyte selects far more than a check can judge.
pub const MAX_ANSWER_BYTES: usize = 1 << 20;
/// Longest wait for one request, connection included: a check interval is at least 10 s.
pub const REQUEST_TIMEOUT: Duration = Duration::from_secs(20);

type HttpsClient = Client<TimeoutConnector<HttpsConnector<HttpConnector>>, Full<Bytes>>;

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
    client: OnceLock<Result<HttpsClient, String>>,
}

impl LazyHttps {
    fn client(&self) -> Result<&HttpsClient, HttpFailure> {
        let built = self.client.get_or_init(|| {
            let https = HttpsConnectorBuilder::new()
                .with_native_roots()
                .map_err(|e| format!("no system root certificates: {e}"))?
                .https_or_http()
                .enable_http1()
                .build();
            let mut connector = TimeoutConnector::new(https);
            connector.set_connect_timeout(Some(Duration::from_secs(5)));
            connector.set_read_timeout(Some(REQUEST_TIMEOUT));
            Ok(Client::builder(TokioExecutor::new()).build(connector))
        });
        built
            .as_ref()
            .map_err(|message| HttpFailure::Unreachable(message.clone()))
    }

    /// Sends `request` and reads its answer, within [`REQUEST_TIMEOUT`] and
    /// [`MAX_ANSWER_BYTES`].
    pub async fn send(&self, request: http::Request<Bytes>) -> Result<Answer, HttpFailure> {
        let client = self.client()?;
        let exchange = async {
            let response = client
                .request(request.map(Full::new))
                .await
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
