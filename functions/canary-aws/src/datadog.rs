//! Datadog's v2 scalar query API (`POST https://api.<site>/api/v2/query/scalar`), with the API
//! and application keys read from the Secrets Manager secret the stack names
//! (`DATADOG_SECRET_ARN`, a JSON object `{"apiKey", "appKey"}`). The keys go only into the
//! request's `DD-API-KEY`/`DD-APPLICATION-KEY` headers: never into a log, an error or the state.
//! A rate-limited answer (429) is retried after the `X-RateLimit-Reset` Datadog gives.

use std::time::Duration;

use async_trait::async_trait;
use aws_config::SdkConfig;
use bytes::Bytes;
use canary_core::{limits, ErrorName};
use serde::Deserialize;
use serde_json::Value;

use crate::error::AwsError;
use crate::http::{first_bytes, HttpFailure, LazyHttps, MAX_ANSWER_BYTES};
use crate::secrets::{SdkSecrets, SecretsApi};

/// Attempts of one query when Datadog answers 429, the first included.
const RATE_LIMITED_ATTEMPTS: u32 = 3;
/// Longest wait for a rate limit to reset before trying again: beyond it the check fails
/// (`MetricsProviderUnavailable`) and the state machine's retry waits instead.
const MAX_RATE_LIMIT_WAIT: Duration = Duration::from_secs(30);

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DatadogError {
    #[error(
        "DATADOG_SECRET_ARN is not set: deploy the stack with DatadogSecretArn, the Secrets \
         Manager secret {{\"apiKey\", \"appKey\"}} of your Datadog organisation"
    )]
    NotConfigured,
    #[error("reading the Datadog keys: {0}")]
    Secret(AwsError),
    #[error("secret {0} must be a JSON object with string fields apiKey and appKey")]
    BadSecret(String),
    #[error("cannot reach {url}: {message}")]
    Unreachable { url: String, message: String },
    /// 401/403: the keys are wrong, revoked, or lack the `timeseries_query` permission.
    #[error("{url} refused the keys ({status}): {message}")]
    Refused {
        url: String,
        status: u16,
        message: String,
    },
    /// 400: the query does not parse or asks what the API refuses.
    #[error("{url} rejected the query ({status}): {message}")]
    QueryRejected {
        url: String,
        status: u16,
        message: String,
    },
    /// 429 after the retries, or 5xx.
    #[error("{url} failed ({status}): {message}")]
    Unavailable {
        url: String,
        status: u16,
        message: String,
    },
    #[error("{url} answered more than {MAX_ANSWER_BYTES} bytes: the query selects more than a check can judge")]
    AnswerTooLarge { url: String },
    #[error("{url} answered {status} with something that is not Datadog's API: {first_bytes:?}")]
    NotDatadog {
        url: String,
        status: u16,
        first_bytes: String,
    },
}

impl DatadogError {
    pub fn error_name(&self) -> ErrorName {
        match self {
            DatadogError::Secret(e) => e.error_name(),
            DatadogError::Unreachable { .. } | DatadogError::Unavailable { .. } => {
                ErrorName::MetricsProviderUnavailable
            }
            DatadogError::QueryRejected { .. } | DatadogError::AnswerTooLarge { .. } => {
                ErrorName::InvalidPlan
            }
            DatadogError::NotConfigured
            | DatadogError::BadSecret(_)
            | DatadogError::Refused { .. }
            | DatadogError::NotDatadog { .. } => ErrorName::MetricsProviderRefused,
        }
    }

    /// The query's own fault, not the provider's.
    pub fn is_about_the_query(&self) -> bool {
        self.error_name() == ErrorName::InvalidPlan
    }
}

#[async_trait]
pub trait DatadogApi: Send + Sync {
    /// Datadog's answer to the scalar query `body`, sent to the site's `url`.
    async fn scalar_query(&self, url: &str, body: &Value) -> Result<Value, DatadogError>;
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Keys {
    api_key: String,
    app_key: String,
}

pub struct HttpDatadog {
    secrets: SdkSecrets,
    secret_id: Option<String>,
    /// Replaces `https://api.<site>` (`DATADOG_API_URL`): a test server, or a proxy.
    api_url: Option<String>,
    http: LazyHttps,
}

impl HttpDatadog {
    /// The keys from the secret `secret_id` (the template's `DatadogSecretArn`); `api_url`
    /// replaces `https://api.<site>` (a test server, a proxy): see
    /// `canary_rollout::clients::CheckClients`, which reads both from the environment.
    pub fn new(sdk: &SdkConfig, secret_id: Option<String>, api_url: Option<String>) -> Self {
        HttpDatadog {
            secrets: SdkSecrets::new(sdk),
            secret_id,
            api_url: api_url.map(|u| u.trim_end_matches('/').to_owned()),
            http: LazyHttps::default(),
        }
    }

    async fn keys(&self) -> Result<Keys, DatadogError> {
        let secret_id = self
            .secret_id
            .as_deref()
            .ok_or(DatadogError::NotConfigured)?;
        let text = self
            .secrets
            .secret_string(secret_id)
            .await
            .map_err(DatadogError::Secret)?;
        // The message must not echo the secret's content.
        serde_json::from_str(&text).map_err(|_| DatadogError::BadSecret(secret_id.to_owned()))
    }

    fn url(&self, url: &str) -> String {
        match (&self.api_url, url.find("/api/")) {
            (Some(base), Some(path)) => format!("{base}{}", &url[path..]),
            _ => url.to_owned(),
        }
    }
}

#[async_trait]
impl DatadogApi for HttpDatadog {
    async fn scalar_query(&self, url: &str, body: &Value) -> Result<Value, DatadogError> {
        let keys = self.keys().await?;
        let url = self.url(url);
        let body = Bytes::from(body.to_string());
        let mut attempt = 1;
        loop {
            let request = http::Request::builder()
                .method("POST")
                .uri(&url)
                .header(http::header::CONTENT_TYPE, "application/json")
                .header(http::header::ACCEPT, "application/json")
                .header("DD-API-KEY", &keys.api_key)
                .header("DD-APPLICATION-KEY", &keys.app_key)
                .body(body.clone())
                .map_err(|_| DatadogError::BadSecret(self.secret_id.clone().unwrap_or_default()))?;
            let got = self
                .http
                .send(request)
                .await
                .map_err(|failure| match failure {
                    HttpFailure::Unreachable(message) => DatadogError::Unreachable {
                        url: url.clone(),
                        message,
                    },
                    HttpFailure::TooLarge => DatadogError::AnswerTooLarge { url: url.clone() },
                })?;
            if got.status == 429 && attempt < RATE_LIMITED_ATTEMPTS {
                let wait = rate_limit_reset(&got.headers);
                if wait <= MAX_RATE_LIMIT_WAIT {
                    tracing::info!(
                        wait_seconds = wait.as_secs(),
                        attempt,
                        "Datadog rate limit: waiting for its reset"
                    );
                    tokio::time::sleep(wait).await;
                    attempt += 1;
                    continue;
                }
            }
            return answer(&url, got.status, &got.headers, &got.body);
        }
    }
}

/// How long until Datadog's rate limit resets (`X-RateLimit-Reset`, seconds), at least 1 s.
fn rate_limit_reset(headers: &http::HeaderMap) -> Duration {
    let seconds = headers
        .get("x-ratelimit-reset")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<u64>().ok())
        .unwrap_or(1);
    Duration::from_secs(seconds.max(1))
}

/// What an answer means: the document of a success, or the error its status and text say.
fn answer(
    url: &str,
    status: u16,
    headers: &http::HeaderMap,
    body: &[u8],
) -> Result<Value, DatadogError> {
    let json: Option<Value> = serde_json::from_slice(body).ok();
    // Datadog's errors: {"errors": ["Forbidden"]}.
    let said = json.as_ref().and_then(|j| {
        let errors: Vec<&str> = j["errors"]
            .as_array()?
            .iter()
            .filter_map(Value::as_str)
            .collect();
        (!errors.is_empty())
            .then(|| limits::truncate(&errors.join("; "), limits::MAX_LINE_BYTES / 2))
    });
    let message = || said.clone().unwrap_or_else(|| first_bytes(body));
    let url = url.to_owned();
    match status {
        200 => match json {
            Some(j) if j["data"].is_object() => Ok(j),
            _ => Err(DatadogError::NotDatadog {
                url,
                status,
                first_bytes: first_bytes(body),
            }),
        },
        400 if said.is_some() => Err(DatadogError::QueryRejected {
            url,
            status,
            message: message(),
        }),
        401 | 403 => Err(DatadogError::Refused {
            url,
            status,
            message: message(),
        }),
        429 => Err(DatadogError::Unavailable {
            url,
            status,
            message: format!(
                "{}: rate limited, the limit resets in {} s",
                message(),
                rate_limit_reset(headers).as_secs()
            ),
        }),
        500..=599 => Err(DatadogError::Unavailable {
            url,
            status,
            message: message(),
        }),
        _ => Err(DatadogError::NotDatadog {
            url,
            status,
            first_bytes: first_bytes(body),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers_map_to_named_errors() {
        let url = "https://api.datadoghq.com/api/v2/query/scalar";
        let none = http::HeaderMap::new();
        let forbidden = answer(url, 403, &none, br#"{"errors":["Forbidden"]}"#).unwrap_err();
        assert_eq!(forbidden.error_name(), ErrorName::MetricsProviderRefused);
        assert_eq!(
            forbidden.to_string(),
            "https://api.datadoghq.com/api/v2/query/scalar refused the keys (403): Forbidden"
        );
        let bad = answer(url, 400, &none, br#"{"errors":["Error parsing query"]}"#).unwrap_err();
        assert!(bad.is_about_the_query());
        let mut limited = http::HeaderMap::new();
        limited.insert("x-ratelimit-reset", http::HeaderValue::from_static("42"));
        let slow = answer(url, 429, &limited, br#"{"errors":["Too many requests"]}"#).unwrap_err();
        assert_eq!(slow.error_name(), ErrorName::MetricsProviderUnavailable);
        assert!(slow
            .to_string()
            .ends_with("Too many requests: rate limited, the limit resets in 42 s"));
        assert_eq!(rate_limit_reset(&limited), Duration::from_secs(42));
        assert_eq!(rate_limit_reset(&none), Duration::from_secs(1));
        let page = answer(url, 200, &none, b"<html>").unwrap_err();
        assert_eq!(page.error_name(), ErrorName::MetricsProviderRefused);
        assert_eq!(
            DatadogError::NotConfigured.error_name(),
            ErrorName::MetricsProviderRefused
        );
    }
}
