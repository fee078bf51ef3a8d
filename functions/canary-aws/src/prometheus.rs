//! Prometheus HTTP API instant queries (`POST <base>/api/v1/query`, a form body), to a plain
//! Prometheus or to an Amazon Managed Service for Prometheus workspace, signed with SigV4
//! (service `aps`) as the function's role. Each answer is bounded before it is parsed; errors
//! carry the endpoint and the server's own words, never a credential.

use std::time::{SystemTime, UNIX_EPOCH};

use async_trait::async_trait;
use aws_config::SdkConfig;
use aws_credential_types::provider::{ProvideCredentials, SharedCredentialsProvider};
use aws_credential_types::Credentials;
use aws_sigv4::http_request::{sign, SignableBody, SignableRequest, SigningSettings};
use aws_sigv4::sign::v4;
use bytes::Bytes;
use canary_core::analysis::PrometheusEndpoint;
use canary_core::{limits, ErrorName};
use serde_json::Value;

use crate::http::{first_bytes, HttpFailure, LazyHttps, MAX_ANSWER_BYTES};

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PrometheusError {
    /// No answer: refused, reset, timed out, a name that does not resolve, a TLS failure.
    #[error("cannot reach {url}: {message}")]
    Unreachable { url: String, message: String },
    /// 401 or 403: the function's role (AMP) or the network path may not query.
    #[error("{url} refused the query ({status}): {message}")]
    Refused {
        url: String,
        status: u16,
        message: String,
    },
    /// 400 or 422: the query does not parse, or breaks the server's limits.
    #[error("{url} rejected the query ({status}): {message}")]
    QueryRejected {
        url: String,
        status: u16,
        message: String,
    },
    /// 429 or 5xx: the server is throttling or failing; retrying may succeed.
    #[error("{url} failed ({status}): {message}")]
    Unavailable {
        url: String,
        status: u16,
        message: String,
    },
    #[error("{url} answered more than {MAX_ANSWER_BYTES} bytes: the query selects more than a check can judge")]
    AnswerTooLarge { url: String },
    /// Not the Prometheus API's JSON (a proxy's page, a wrong path).
    #[error("{url} answered {status} with something that is not the Prometheus API's JSON: {first_bytes:?}")]
    NotPrometheus {
        url: String,
        status: u16,
        first_bytes: String,
    },
    #[error("cannot sign the AMP query: {0}")]
    Signing(String),
}

impl PrometheusError {
    pub fn error_name(&self) -> ErrorName {
        match self {
            PrometheusError::Unreachable { .. } | PrometheusError::Unavailable { .. } => {
                ErrorName::MetricsProviderUnavailable
            }
            PrometheusError::QueryRejected { .. } | PrometheusError::AnswerTooLarge { .. } => {
                ErrorName::InvalidPlan
            }
            PrometheusError::Refused { .. }
            | PrometheusError::NotPrometheus { .. }
            | PrometheusError::Signing(_) => ErrorName::MetricsProviderRefused,
        }
    }

    /// The query's own fault (it does not parse, or asks too much), not the provider's.
    pub fn is_about_the_query(&self) -> bool {
        self.error_name() == ErrorName::InvalidPlan
    }
}

#[async_trait]
pub trait PrometheusApi: Send + Sync {
    /// The `data` of one instant query evaluated at `time`.
    async fn instant_query(
        &self,
        endpoint: &PrometheusEndpoint,
        query: &str,
        time: SystemTime,
    ) -> Result<Value, PrometheusError>;
}

/// Queries over HTTPS or plain HTTP.
pub struct HttpPrometheus {
    credentials: Option<SharedCredentialsProvider>,
    http: LazyHttps,
}

impl HttpPrometheus {
    pub fn new(sdk: &SdkConfig) -> Self {
        HttpPrometheus {
            credentials: sdk.credentials_provider(),
            http: LazyHttps::default(),
        }
    }

    async fn credentials(&self) -> Result<Credentials, PrometheusError> {
        let provider = self.credentials.as_ref().ok_or_else(|| {
            PrometheusError::Signing("the function has no AWS credentials".to_owned())
        })?;
        provider
            .provide_credentials()
            .await
            .map_err(|e| PrometheusError::Signing(e.to_string()))
    }
}

#[async_trait]
impl PrometheusApi for HttpPrometheus {
    async fn instant_query(
        &self,
        endpoint: &PrometheusEndpoint,
        query: &str,
        time: SystemTime,
    ) -> Result<Value, PrometheusError> {
        let url = endpoint.query_url();
        let credentials = match endpoint {
            PrometheusEndpoint::Amp { .. } => Some(self.credentials().await?),
            PrometheusEndpoint::Plain { .. } => None,
        };
        let request = query_request(
            endpoint,
            query,
            time,
            credentials.as_ref(),
            SystemTime::now(),
        )?;
        let got = self
            .http
            .send(request)
            .await
            .map_err(|failure| match failure {
                HttpFailure::Unreachable(message) => PrometheusError::Unreachable {
                    url: url.clone(),
                    message,
                },
                HttpFailure::TooLarge => PrometheusError::AnswerTooLarge { url: url.clone() },
            })?;
        answer(&url, got.status, &got.body)
    }
}

/// The POST a query makes, signed for AMP with `credentials` at `now`.
pub fn query_request(
    endpoint: &PrometheusEndpoint,
    query: &str,
    time: SystemTime,
    credentials: Option<&Credentials>,
    now: SystemTime,
) -> Result<http::Request<Bytes>, PrometheusError> {
    let url = endpoint.query_url();
    let time = time
        .duration_since(UNIX_EPOCH)
        .map(|d| format!("{:.3}", d.as_secs_f64()))
        .unwrap_or_default();
    let body = form_urlencoded::Serializer::new(String::new())
        .append_pair("query", query)
        .append_pair("time", &time)
        .finish();
    let signing = |e: &dyn std::fmt::Display| PrometheusError::Signing(e.to_string());
    let mut request = http::Request::builder()
        .method("POST")
        .uri(&url)
        .header(
            http::header::CONTENT_TYPE,
            "application/x-www-form-urlencoded",
        )
        .body(Bytes::from(body))
        .map_err(|e| signing(&e))?;
    if let (PrometheusEndpoint::Amp { region, .. }, Some(credentials)) = (endpoint, credentials) {
        let identity = credentials.clone().into();
        let params = v4::SigningParams::builder()
            .identity(&identity)
            .region(region)
            .name("aps")
            .time(now)
            .settings(SigningSettings::default())
            .build()
            .map_err(|e| signing(&e))?
            .into();
        let headers = request
            .headers()
            .iter()
            .filter_map(|(name, value)| Some((name.as_str(), value.to_str().ok()?)));
        let signable =
            SignableRequest::new("POST", &url, headers, SignableBody::Bytes(request.body()))
                .map_err(|e| signing(&e))?;
        let (instructions, _signature) = sign(signable, &params)
            .map_err(|e| signing(&e))?
            .into_parts();
        instructions.apply_to_request_http1x(&mut request);
    }
    Ok(request)
}

/// What an answer means: the `data` of a success, or the error its status and text say.
fn answer(url: &str, status: u16, body: &[u8]) -> Result<Value, PrometheusError> {
    let json: Option<Value> = serde_json::from_slice(body).ok();
    // Prometheus says {"status":"error","error":"..."}; AMP's gateway {"message":"..."}.
    let said = json
        .as_ref()
        .and_then(|j| {
            j["error"]
                .as_str()
                .or(j["message"].as_str())
                .or(j["Message"].as_str())
        })
        .map(|m| limits::truncate(m, limits::MAX_LINE_BYTES / 2));
    let message = || said.clone().unwrap_or_else(|| first_bytes(body));
    let url = url.to_owned();
    match status {
        200 => match json {
            Some(j) if j["status"] == "success" && j["data"].is_object() => Ok(j["data"].clone()),
            _ => Err(PrometheusError::NotPrometheus {
                url,
                status,
                first_bytes: first_bytes(body),
            }),
        },
        400 | 422 if said.is_some() => Err(PrometheusError::QueryRejected {
            url,
            status,
            message: message(),
        }),
        401 | 403 => Err(PrometheusError::Refused {
            url,
            status,
            message: message(),
        }),
        429 | 500..=599 => Err(PrometheusError::Unavailable {
            url,
            status,
            message: message(),
        }),
        _ => Err(PrometheusError::NotPrometheus {
            url,
            status,
            first_bytes: first_bytes(body),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn answers_map_to_named_errors() {
        let url = "http://p:9090/api/v1/query";
        let ok = br#"{"status":"success","data":{"resultType":"scalar","result":[1,"2"]}}"#;
        assert_eq!(answer(url, 200, ok).unwrap()["resultType"], "scalar");
        let bad = br#"{"status":"error","errorType":"bad_data","error":"parse error at char 5"}"#;
        let e = answer(url, 400, bad).unwrap_err();
        assert_eq!(e.error_name(), ErrorName::InvalidPlan);
        assert_eq!(
            e.to_string(),
            "http://p:9090/api/v1/query rejected the query (400): parse error at char 5"
        );
        let denied = br#"{"message":"User is not authorized to perform: aps:QueryMetrics"}"#;
        assert_eq!(
            answer(url, 403, denied).unwrap_err().error_name(),
            ErrorName::MetricsProviderRefused
        );
        assert_eq!(
            answer(url, 503, b"busy").unwrap_err().error_name(),
            ErrorName::MetricsProviderUnavailable
        );
        let page = answer(url, 200, b"<html>login</html>").unwrap_err();
        assert_eq!(page.error_name(), ErrorName::MetricsProviderRefused);
        assert!(
            page.to_string().contains("\"<html>login</html>\""),
            "{page}"
        );
        assert_eq!(
            answer(url, 404, b"404 page not found")
                .unwrap_err()
                .error_name(),
            ErrorName::MetricsProviderRefused
        );
    }

    #[test]
    fn the_form_body_carries_the_query_and_the_time() {
        let endpoint = PrometheusEndpoint::Plain {
            base: "http://p:9090".into(),
        };
        let time = UNIX_EPOCH + Duration::from_millis(1_700_000_000_250);
        let request = query_request(&endpoint, "sum(up{a=\"b c\"})", time, None, time).unwrap();
        assert_eq!(request.uri(), "http://p:9090/api/v1/query");
        assert_eq!(
            request.body().as_ref(),
            b"query=sum%28up%7Ba%3D%22b+c%22%7D%29&time=1700000000.250"
        );
        assert!(request.headers().get("authorization").is_none());
    }
}
