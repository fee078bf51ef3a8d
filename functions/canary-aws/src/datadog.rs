//! Datadog's v2 scalar query API (`POST https://api.<site>/api/v2/query/scalar`), with the API
//! and application keys read from the Secrets Manager secret the stack names
//! (`DATADOG_SECRET_ARN`, a JSON object `{"apiKey", "appKey"}`). The keys go only into the
//! request's `DD-API-KEY`/`DD-APPLICATION-KEY` headers: never into a log, an error or the state.
//! A rate-limited answer (429) is retried after the `X-RateLimit-Reset` Datadog gives.

use std::time::Duration;

use async_trait::async_trait;
use aws_config::SdkConfig;
use bytes::Bytes;
use canary_core::limits;
use serde::Deserialize;
use serde_json::Value;

use crate::http::{first_bytes, LazyHttps};
use crate::query_error::{Provider, QueryError};
use crate::secrets::{SdkSecrets, SecretsApi};

/// Attempts of one query when Datadog answers 429, the first included.
const RATE_LIMITED_ATTEMPTS: u32 = 3;
/// Longest wait for a rate limit to reset before trying again: beyond it the check fails
/// (`MetricsProviderUnavailable`) and the state machine's retry waits instead.
const MAX_RATE_LIMIT_WAIT: Duration = Duration::from_secs(30);

/// How Datadog words its failures: a 401/403 is about the keys (wrong, revoked, or without
/// the `timeseries_query` permission).
pub const DATADOG: Provider = Provider {
    refuses: "the keys",
    api: "Datadog's API",
    rejects_queries_with: &[400],
};

const NOT_CONFIGURED: &str =
    "DATADOG_SECRET_ARN is not set: deploy the stack with DatadogSecretArn, \
     the Secrets Manager secret {\"apiKey\", \"appKey\"} of your Datadog organisation";

fn bad_secret(secret_id: &str) -> QueryError {
    QueryError::credentials(format!(
        "secret {secret_id} must be a JSON object with string fields apiKey and appKey"
    ))
}

#[async_trait]
pub trait DatadogApi: Send + Sync {
    /// Datadog's answer to the metrics query `body`, sent to the site's `url`: the scalar query
    /// endpoint (the checks) or the timeseries one (the comparison's samples).
    async fn query(&self, url: &str, body: &Value) -> Result<Value, QueryError>;
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

    async fn keys(&self) -> Result<Keys, QueryError> {
        let secret_id = self
            .secret_id
            .as_deref()
            .ok_or_else(|| QueryError::credentials(NOT_CONFIGURED))?;
        let text =
            self.secrets
                .secret_string(secret_id)
                .await
                .map_err(|e| QueryError::Credentials {
                    name: e.error_name(),
                    message: format!("reading the Datadog keys: {e}"),
                })?;
        // The message must not echo the secret's content.
        serde_json::from_str(&text).map_err(|_| bad_secret(secret_id))
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
    async fn query(&self, url: &str, body: &Value) -> Result<Value, QueryError> {
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
                .map_err(|_| bad_secret(self.secret_id.as_deref().unwrap_or_default()))?;
            let got = self
                .http
                .send(request)
                .await
                .map_err(|failure| QueryError::from_http(&url, failure))?;
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

#[cfg(feature = "fakes")]
#[async_trait]
impl DatadogApi for crate::fakes::Unused {
    async fn query(&self, url: &str, _: &Value) -> Result<Value, QueryError> {
        Err(crate::fakes::unused_query(url))
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
) -> Result<Value, QueryError> {
    let json: Option<Value> = serde_json::from_slice(body).ok();
    if status == 200 {
        if let Some(j) = json.filter(|j| j["data"].is_object()) {
            return Ok(j);
        }
        return Err(QueryError::from_answer(DATADOG, url, status, None, body));
    }
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
    let said = if status == 429 {
        // Still limited after the retries: say when the limit resets.
        Some(format!(
            "{}: rate limited, the limit resets in {} s",
            said.unwrap_or_else(|| first_bytes(body)),
            rate_limit_reset(headers).as_secs()
        ))
    } else {
        said
    };
    Err(QueryError::from_answer(DATADOG, url, status, said, body))
}

#[cfg(test)]
mod tests {
    use super::*;
    use canary_core::ErrorName;

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
            QueryError::credentials(NOT_CONFIGURED).error_name(),
            ErrorName::MetricsProviderRefused
        );
    }
}
