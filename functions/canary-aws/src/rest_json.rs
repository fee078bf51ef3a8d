//! AWS restJson1 calls sent over the SDK's own HTTPS connector (`crate::http`) and signed with
//! SigV4, for the APIs whose SDK client the function packages have no room for: Synthetics'
//! canaries (`crate::synthetics`), and the error reading of Application Signals' budget reports
//! (`crate::slo_reports`, which sends its one call itself). Each such client linked its endpoint rules, runtime plugins and the
//! deserializers of every shape its operations answer with, 0.05-0.07 MB zipped a function, and
//! the packages were past CI's 3.5 MB bound (docs/size-and-startup.md).
//!
//! What the SDK did and this does too: the endpoint (`AWS_ENDPOINT_URL` when set, else the
//! Region's), the credentials of the configuration or of an assumed role, the error's code and
//! message classified as every other AWS error (`crate::error`), and a throttled, 5xx or
//! unreachable call asked again (three attempts, as the SDK's standard retry mode). The callers
//! read only the fields they use; an unknown field is ignored, as the SDK ignores it.

use std::sync::Arc;
use std::time::{Duration, SystemTime};

use aws_config::SdkConfig;
use aws_credential_types::provider::{ProvideCredentials, SharedCredentialsProvider};
use backon::{ExponentialBuilder, Retryable};
use bytes::Bytes;

use crate::error::{AwsError, AwsErrorKind};
use crate::http::{first_bytes, sign_sigv4, HttpFailure, LazyHttps};

/// The SDK's standard retry mode: three attempts in all.
const ATTEMPTS: usize = 3;

/// One AWS service in one Region, as one identity.
pub struct RestJsonClient {
    /// `https://<host prefix>.<region>.amazonaws.com`, or the configuration's endpoint.
    pub endpoint: String,
    pub region: String,
    /// The SigV4 service name.
    pub signing_name: &'static str,
    pub credentials: Option<SharedCredentialsProvider>,
    pub http: Arc<LazyHttps>,
}

impl RestJsonClient {
    /// The service whose endpoints are `https://<host_prefix>.<region>.amazonaws.com`, unless
    /// the configuration names one (`AWS_ENDPOINT_URL`, the local harness), as every SDK
    /// client takes it.
    pub fn new(
        config: &SdkConfig,
        host_prefix: &str,
        signing_name: &'static str,
        region: &str,
        credentials: Option<SharedCredentialsProvider>,
        http: Arc<LazyHttps>,
    ) -> Self {
        let endpoint = config.endpoint_url().map_or_else(
            || format!("https://{host_prefix}.{region}.amazonaws.com"),
            str::to_owned,
        );
        RestJsonClient {
            endpoint,
            region: region.to_owned(),
            signing_name,
            credentials,
            http,
        }
    }

    /// `method path` with `body` (JSON text, or none), asked up to three times while the failure is
    /// transient (an answer it cannot read among them): the 200's body read as `T`, or the error
    /// the answer says.
    pub async fn call<T: serde::de::DeserializeOwned>(
        &self,
        operation: &'static str,
        method: &str,
        path: &str,
        body: Option<Bytes>,
    ) -> Result<T, AwsError> {
        // 1 s, then 2 s: the SDK's standard backoff, with its jitter.
        let backoff = ExponentialBuilder::default()
            .with_min_delay(Duration::from_secs(1))
            .with_max_times(ATTEMPTS - 1)
            .with_jitter();
        (|| self.attempt(operation, method, path, body.clone()))
            .retry(backoff)
            .when(|e| e.kind == AwsErrorKind::Transient)
            .await
    }

    async fn attempt<T: serde::de::DeserializeOwned>(
        &self,
        operation: &'static str,
        method: &str,
        path: &str,
        body: Option<Bytes>,
    ) -> Result<T, AwsError> {
        let no_credentials =
            |why: String| AwsError::new(AwsErrorKind::AccessDenied, operation, why);
        let credentials = match &self.credentials {
            Some(provider) => provider
                .provide_credentials()
                .await
                .map_err(|e| no_credentials(format!("no AWS credentials: {e}")))?,
            None => return Err(no_credentials("no AWS credentials".to_owned())),
        };
        let request = signed_request(
            &Signing {
                endpoint: &self.endpoint,
                region: &self.region,
                service: self.signing_name,
                operation,
            },
            method,
            path,
            body,
            &credentials,
            SystemTime::now(),
        )?;
        let answer = self.http.send(request).await.map_err(|e| match e {
            HttpFailure::Unreachable(why) => AwsError::new(AwsErrorKind::Transient, operation, why),
            HttpFailure::TooLarge => AwsError::new(
                AwsErrorKind::Rejected,
                operation,
                "the answer is over 1 MiB",
            ),
        })?;
        let error_type = answer
            .headers
            .get("x-amzn-errortype")
            .and_then(|v| v.to_str().ok());
        let body = ok_body(operation, answer.status, error_type, answer.body)?;
        parse(operation, &body)
    }
}

/// Where and as what a request is signed.
pub struct Signing<'a> {
    pub endpoint: &'a str,
    pub region: &'a str,
    pub service: &'a str,
    /// The operation's name, for the errors.
    pub operation: &'static str,
}

/// The signed request: `path` under the endpoint, `body` (JSON text) if any.
pub fn signed_request(
    signing: &Signing<'_>,
    method: &str,
    path: &str,
    body: Option<Bytes>,
    credentials: &aws_credential_types::Credentials,
    now: SystemTime,
) -> Result<http::Request<Bytes>, AwsError> {
    let refused = |e: &dyn std::fmt::Display| {
        AwsError::new(
            AwsErrorKind::Rejected,
            signing.operation,
            format!("cannot sign the request: {e}"),
        )
    };
    let url = format!("{}{path}", signing.endpoint.trim_end_matches('/'));
    let request = http::Request::builder().method(method).uri(&url);
    let request = match body {
        Some(json) => request
            .header(http::header::CONTENT_TYPE, "application/json")
            .body(json),
        None => request.body(Bytes::new()),
    };
    let mut request = request.map_err(|e| refused(&e))?;
    sign_sigv4(
        &mut request,
        credentials,
        signing.region,
        signing.service,
        now,
    )
    .map_err(|e| refused(&e))?;
    Ok(request)
}

/// The body of a 200, or the error the status, `x-amzn-ErrorType` and body say.
pub fn ok_body(
    operation: &'static str,
    status: u16,
    error_type: Option<&str>,
    body: Bytes,
) -> Result<Bytes, AwsError> {
    if status == 200 {
        return Ok(body);
    }
    Err(error_of(operation, status, error_type, &body))
}

/// The error a restJson1 answer that is not a 200 says: the code is `x-amzn-ErrorType`'s, else
/// the body's `__type`, either without its namespace or URL; the message is the body's.
pub fn error_of(
    operation: &'static str,
    status: u16,
    error_type: Option<&str>,
    body: &[u8],
) -> AwsError {
    let json: serde_json::Value = serde_json::from_slice(body).unwrap_or_default();
    let code = error_type
        .or(json["__type"].as_str())
        .map(|c| {
            let c = c.split(':').next().unwrap_or(c);
            c.rsplit('#').next().unwrap_or(c).to_owned()
        })
        .filter(|c| !c.is_empty());
    let message = json["message"]
        .as_str()
        .or(json["Message"].as_str())
        .map(str::to_owned)
        .unwrap_or_else(|| format!("HTTP {status}: {}", first_bytes(body)));
    let kind = crate::error::classify(code.as_deref(), status);
    let mut error = AwsError::new(kind, operation, message);
    error.code = code;
    error
}

/// A 200's body read as `T`; one that is not is transient (a proxy's page, a truncated answer).
pub fn parse<T: serde::de::DeserializeOwned>(
    operation: &'static str,
    body: &[u8],
) -> Result<T, AwsError> {
    serde_json::from_slice(body).map_err(|e| {
        AwsError::new(
            AwsErrorKind::Transient,
            operation,
            format!("an answer it cannot read ({e}): {}", first_bytes(body)),
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const OP: &str = "GetThing";

    #[test]
    fn errors_are_classified_as_every_aws_error() {
        let error = |status, header, body: &'static [u8]| {
            ok_body(OP, status, header, Bytes::from_static(body)).unwrap_err()
        };
        let denied = error(
            403,
            Some("AccessDeniedException:http://internal.amazon.com/coral/"),
            br#"{"Message": "User is not authorized"}"#,
        );
        assert_eq!(denied.kind, AwsErrorKind::AccessDenied);
        assert_eq!(
            denied.to_string(),
            "GetThing failed: AccessDeniedException: User is not authorized"
        );
        let throttled = error(
            400,
            None,
            br#"{"__type": "com.amazonaws#ThrottlingException", "message": "slow down"}"#,
        );
        assert_eq!(throttled.kind, AwsErrorKind::Transient);
        let invalid = error(400, Some("ValidationException"), br#"{"message": "bad"}"#);
        assert_eq!(invalid.kind, AwsErrorKind::Rejected);
        let missing = error(
            404,
            Some("ResourceNotFoundException"),
            br#"{"Message": "no"}"#,
        );
        assert_eq!(missing.kind, AwsErrorKind::NotFound);
        let broken = error(502, None, b"<html>bad gateway</html>");
        assert_eq!(broken.kind, AwsErrorKind::Transient);
        let garbled = parse::<serde_json::Value>(OP, b"not json").unwrap_err();
        assert_eq!(garbled.kind, AwsErrorKind::Transient);
    }

    #[test]
    fn a_request_is_signed_for_its_service_in_its_region_and_a_bodyless_one_has_no_type() {
        let credentials = aws_credential_types::Credentials::new(
            "AKID",
            "secret",
            Some("token".into()),
            None,
            "test",
        );
        let signing = Signing {
            endpoint: "https://synthetics.eu-west-1.amazonaws.com/",
            region: "eu-west-1",
            service: "synthetics",
            operation: OP,
        };
        let now = std::time::UNIX_EPOCH + Duration::from_secs(1_700_000_000);
        let request =
            signed_request(&signing, "GET", "/canary/web", None, &credentials, now).unwrap();
        assert_eq!(
            request.uri().to_string(),
            "https://synthetics.eu-west-1.amazonaws.com/canary/web"
        );
        let authorization = request.headers()["authorization"].to_str().unwrap();
        assert!(
            authorization.contains("/20231114/eu-west-1/synthetics/aws4_request"),
            "{authorization}"
        );
        assert_eq!(request.headers()["x-amz-security-token"], "token");
        assert!(request.headers().get("content-type").is_none());
        let body = Bytes::from_static(br#"{"MaxResults":100}"#);
        let request = signed_request(
            &signing,
            "POST",
            "/canary/web/runs",
            Some(body),
            &credentials,
            now,
        )
        .unwrap();
        assert_eq!(request.headers()["content-type"], "application/json");
        assert_eq!(request.body().as_ref(), br#"{"MaxResults":100}"#);
    }
}
