//! Prometheus HTTP API instant queries (`POST <base>/api/v1/query`, a form body), to a plain
//! Prometheus or to an Amazon Managed Service for Prometheus workspace, signed with SigV4
//! (service `aps`) as the function's role. Each answer is bounded before it is parsed; errors
//! carry the endpoint and the server's own words, never a credential.

use std::time::{SystemTime, UNIX_EPOCH};

use async_trait::async_trait;
use aws_config::SdkConfig;
use aws_credential_types::provider::{ProvideCredentials, SharedCredentialsProvider};
use aws_credential_types::Credentials;
use bytes::Bytes;
use canary_core::analysis::PrometheusEndpoint;
use canary_core::limits;
use serde_json::Value;

use crate::http::LazyHttps;
use crate::query_error::{Provider, QueryError};

/// How Prometheus and AMP word their failures.
pub const PROMETHEUS: Provider = Provider {
    refuses: "the query",
    api: "the Prometheus API's JSON",
    rejects_queries_with: &[400, 422],
};

#[async_trait]
pub trait PrometheusApi: Send + Sync {
    /// The `data` of one instant query evaluated at `time`.
    async fn instant_query(
        &self,
        endpoint: &PrometheusEndpoint,
        query: &str,
        time: SystemTime,
    ) -> Result<Value, QueryError>;
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

    async fn credentials(&self) -> Result<Credentials, QueryError> {
        let provider = self.credentials.as_ref().ok_or_else(|| {
            QueryError::credentials(signing_failed(&"the function has no AWS credentials"))
        })?;
        provider
            .provide_credentials()
            .await
            .map_err(|e| QueryError::credentials(signing_failed(&e)))
    }
}

#[async_trait]
impl PrometheusApi for HttpPrometheus {
    async fn instant_query(
        &self,
        endpoint: &PrometheusEndpoint,
        query: &str,
        time: SystemTime,
    ) -> Result<Value, QueryError> {
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
            .map_err(|failure| QueryError::from_http(&url, failure))?;
        answer(&url, got.status, &got.body)
    }
}

#[cfg(feature = "fakes")]
#[async_trait]
impl PrometheusApi for crate::fakes::Unused {
    async fn instant_query(
        &self,
        endpoint: &PrometheusEndpoint,
        _: &str,
        _: SystemTime,
    ) -> Result<Value, QueryError> {
        Err(crate::fakes::unused_query(&endpoint.query_url()))
    }
}

/// The POST a query makes, signed for AMP with `credentials` at `now`.
pub fn query_request(
    endpoint: &PrometheusEndpoint,
    query: &str,
    time: SystemTime,
    credentials: Option<&Credentials>,
    now: SystemTime,
) -> Result<http::Request<Bytes>, QueryError> {
    let url = endpoint.query_url();
    let time = time
        .duration_since(UNIX_EPOCH)
        .map(|d| format!("{:.3}", d.as_secs_f64()))
        .unwrap_or_default();
    let body = form_urlencoded::Serializer::new(String::new())
        .append_pair("query", query)
        .append_pair("time", &time)
        .finish();
    let signing = |e: &dyn std::fmt::Display| QueryError::credentials(signing_failed(e));
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
        crate::http::sign_sigv4(&mut request, credentials, region, "aps", now)
            .map_err(|e| signing(&e))?;
    }
    Ok(request)
}

fn signing_failed(cause: &dyn std::fmt::Display) -> String {
    format!("cannot sign the AMP query: {cause}")
}

/// What an answer means: the `data` of a success, or the error its status and text say.
fn answer(url: &str, status: u16, body: &[u8]) -> Result<Value, QueryError> {
    let json: Option<Value> = serde_json::from_slice(body).ok();
    if status == 200 {
        if let Some(j) = json
            .as_ref()
            .filter(|j| j["status"] == "success" && j["data"].is_object())
        {
            return Ok(j["data"].clone());
        }
    }
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
    Err(QueryError::from_answer(PROMETHEUS, url, status, said, body))
}

#[cfg(test)]
mod tests {
    use super::*;
    use canary_core::ErrorName;
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
