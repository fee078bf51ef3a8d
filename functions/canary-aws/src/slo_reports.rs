//! Application Signals' `BatchGetServiceLevelObjectiveBudgetReport` (`POST /budget-report`,
//! restJson1), the one call the error budget makes, sent over the SDK's own HTTPS connector
//! (`crate::http`) and signed with SigV4 (service `application-signals`) as the AMP queries are.
//!
//! Why not `aws-sdk-applicationsignals`: its client (the report's every SLI shape, its endpoint
//! rules, its runtime plugins) cost evaluate-alarms and fleet-waves 0.06-0.07 MB zipped each,
//! and they were past CI's 3.5 MB bound (docs/size-and-startup.md). This module reads only the
//! fields the budget uses; an unknown field is ignored, as the SDK ignores it. What the SDK did
//! and this does too: the endpoint (`AWS_ENDPOINT_URL` when set, else the Region's), the
//! credentials of the configuration or of the assumed role, the error's code and message
//! classified as every other AWS error (`crate::error`), and a throttled, 5xx or unreachable call
//! asked again (three attempts, as the SDK's standard retry mode).
//!
//! It does what `crate::rest_json` does (which came later, for Synthetics) in its own shape:
//! sent through that module, fleet-waves' package grew past CI's 3.5 MB bound by a few hundred
//! bytes of LTO's inlining (docs/size-and-startup.md). It shares the error reading.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use aws_credential_types::provider::{ProvideCredentials, SharedCredentialsProvider};
use backon::{ExponentialBuilder, Retryable};
use bytes::Bytes;
use serde::Deserialize;

use crate::error::{AwsError, AwsErrorKind};
use crate::http::{first_bytes, sign_sigv4, HttpFailure, LazyHttps};
use crate::rest_json;

pub const OPERATION: &str = "BatchGetServiceLevelObjectiveBudgetReport";
const SIGNING_NAME: &str = "application-signals";
/// The SDK's standard retry mode: three attempts in all.
const ATTEMPTS: usize = 3;

/// The answer, as far as the error budget reads it.
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct BudgetReports {
    #[serde(default)]
    pub reports: Vec<Report>,
    #[serde(default)]
    pub errors: Vec<ReportError>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct Report {
    pub arn: String,
    pub name: String,
    /// `PeriodBased` or `RequestBased`.
    pub evaluation_type: Option<String>,
    /// OK | WARNING | BREACHED | INSUFFICIENT_DATA.
    pub budget_status: String,
    pub attainment: Option<f64>,
    pub total_budget_seconds: Option<i64>,
    pub budget_seconds_remaining: Option<i64>,
    pub total_budget_requests: Option<i64>,
    pub budget_requests_remaining: Option<i64>,
    pub sli: Option<PeriodSli>,
    pub request_based_sli: Option<RequestSli>,
    pub goal: Option<Goal>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct PeriodSli {
    pub sli_metric: Option<SliMetric>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct RequestSli {
    pub request_based_sli_metric: Option<SliMetric>,
    /// A latency SLI's threshold, in the Latency metric's unit (milliseconds).
    pub metric_threshold: Option<f64>,
    /// How a good request's latency compares to `metric_threshold` (`LessThan`, ...).
    pub comparison_operator: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct SliMetric {
    /// `LATENCY` or `AVAILABILITY`.
    pub metric_type: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct Goal {
    pub attainment_goal: Option<f64>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct ReportError {
    pub name: String,
    pub arn: String,
    pub error_code: String,
    pub error_message: String,
}

impl Report {
    /// A latency SLO (its SLI's `MetricType`, request- or period-based).
    pub fn latency(&self) -> bool {
        let metric = match (&self.request_based_sli, &self.sli) {
            (Some(sli), _) => sli.request_based_sli_metric.as_ref(),
            (None, Some(sli)) => sli.sli_metric.as_ref(),
            (None, None) => None,
        };
        metric.and_then(|m| m.metric_type.as_deref()) == Some("LATENCY")
    }

    /// A request-based latency SLO's threshold in seconds: a request slower than it is bad.
    /// Application Signals' `Latency` metric is in milliseconds, and so is the SLI's
    /// `MetricThreshold`. `None` when the SLI's good requests are not those under a threshold.
    pub fn slower_than_seconds(&self) -> Option<f64> {
        let sli = self.request_based_sli.as_ref().filter(|_| self.latency())?;
        match sli.comparison_operator.as_deref() {
            Some("LessThan" | "LessThanOrEqualTo") => sli
                .metric_threshold
                .filter(|ms| *ms > 0.0)
                .map(|ms| ms / 1000.0),
            _ => None,
        }
    }
}

/// Application Signals in one Region, as one identity.
pub struct SloReportsClient {
    /// `https://application-signals.<region>.amazonaws.com`, or the configuration's endpoint.
    pub endpoint: String,
    pub region: String,
    pub credentials: Option<SharedCredentialsProvider>,
    pub http: std::sync::Arc<LazyHttps>,
}

impl SloReportsClient {
    /// The reports of `slos` at `at`, asked up to three times while the failure is transient.
    pub async fn budget_reports(
        &self,
        slos: &[&str],
        at: SystemTime,
    ) -> Result<BudgetReports, AwsError> {
        // 1 s, then 2 s: the SDK's standard backoff, with its jitter.
        let backoff = ExponentialBuilder::default()
            .with_min_delay(Duration::from_secs(1))
            .with_max_times(ATTEMPTS - 1)
            .with_jitter();
        (|| self.attempt(slos, at))
            .retry(backoff)
            .when(|e| e.kind == AwsErrorKind::Transient)
            .await
    }

    async fn attempt(&self, slos: &[&str], at: SystemTime) -> Result<BudgetReports, AwsError> {
        let credentials = match &self.credentials {
            Some(provider) => provider.provide_credentials().await.map_err(|e| {
                AwsError::new(
                    AwsErrorKind::AccessDenied,
                    OPERATION,
                    format!("no AWS credentials: {e}"),
                )
            })?,
            None => {
                return Err(AwsError::new(
                    AwsErrorKind::AccessDenied,
                    OPERATION,
                    "no AWS credentials",
                ))
            }
        };
        let request = budget_report_request(
            &self.endpoint,
            &self.region,
            slos,
            at,
            &credentials,
            SystemTime::now(),
        )?;
        let answer = self.http.send(request).await.map_err(|e| match e {
            HttpFailure::Unreachable(why) => AwsError::new(AwsErrorKind::Transient, OPERATION, why),
            HttpFailure::TooLarge => AwsError::new(
                AwsErrorKind::Rejected,
                OPERATION,
                "the answer is over 1 MiB (50 reports are far less)",
            ),
        })?;
        read_answer(
            answer.status,
            answer
                .headers
                .get("x-amzn-errortype")
                .and_then(|v| v.to_str().ok()),
            &answer.body,
        )
    }
}

/// The signed POST of one batch.
pub fn budget_report_request(
    endpoint: &str,
    region: &str,
    slos: &[&str],
    at: SystemTime,
    credentials: &aws_credential_types::Credentials,
    now: SystemTime,
) -> Result<http::Request<Bytes>, AwsError> {
    let refused = |e: &dyn std::fmt::Display| {
        AwsError::new(
            AwsErrorKind::Rejected,
            OPERATION,
            format!("cannot sign the request: {e}"),
        )
    };
    let seconds = at
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as f64 / 1000.0)
        .unwrap_or_default();
    let body = serde_json::json!({"SloIds": slos, "Timestamp": seconds}).to_string();
    let url = format!("{}/budget-report", endpoint.trim_end_matches('/'));
    let mut request = http::Request::builder()
        .method("POST")
        .uri(&url)
        .header(http::header::CONTENT_TYPE, "application/json")
        .body(Bytes::from(body))
        .map_err(|e| refused(&e))?;
    sign_sigv4(&mut request, credentials, region, SIGNING_NAME, now).map_err(|e| refused(&e))?;
    Ok(request)
}

/// The reports of a 200, or the error the status, `x-amzn-ErrorType` and body say.
pub fn read_answer(
    status: u16,
    error_type: Option<&str>,
    body: &[u8],
) -> Result<BudgetReports, AwsError> {
    if status == 200 {
        return serde_json::from_slice(body).map_err(|e| {
            AwsError::new(
                AwsErrorKind::Transient,
                OPERATION,
                format!(
                    "an answer that is not a budget report ({e}): {}",
                    first_bytes(body)
                ),
            )
        });
    }
    Err(rest_json::error_of(OPERATION, status, error_type, body))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_latency_threshold_counts_only_when_good_requests_are_under_it() {
        let report = |sli: &str| -> Report {
            serde_json::from_str(&format!(
                r#"{{"Arn": "arn:aws:application-signals:us-east-1:123456789012:slo/web",
                    "Name": "web", "BudgetStatus": "OK", "RequestBasedSli": {sli}}}"#
            ))
            .unwrap()
        };
        let latency = r#"{"RequestBasedSliMetric": {"MetricType": "LATENCY"}"#;
        assert_eq!(
            report(&format!(
                r#"{latency}, "MetricThreshold": 250, "ComparisonOperator": "LessThan"}}"#
            ))
            .slower_than_seconds(),
            Some(0.25)
        );
        // Good above the threshold, no operator, no threshold, or an availability SLI: none.
        for sli in [
            format!(r#"{latency}, "MetricThreshold": 250, "ComparisonOperator": "GreaterThan"}}"#),
            format!(r#"{latency}, "MetricThreshold": 250}}"#),
            format!(r#"{latency}, "ComparisonOperator": "LessThan"}}"#),
            r#"{"RequestBasedSliMetric": {"MetricType": "AVAILABILITY"}, "MetricThreshold": 250,
                "ComparisonOperator": "LessThan"}"#
                .to_owned(),
        ] {
            assert_eq!(report(&sli).slower_than_seconds(), None, "{sli}");
        }
    }

    #[test]
    fn a_report_reads_the_fields_the_budget_uses_and_ignores_the_rest() {
        let body = br#"{"Timestamp": 1.7e9, "Reports": [{
            "Arn": "arn:aws:application-signals:us-east-1:123456789012:slo/web",
            "Name": "web", "EvaluationType": "RequestBased", "BudgetStatus": "OK",
            "Attainment": 99.95, "TotalBudgetRequests": 1000, "BudgetRequestsRemaining": 500,
            "RequestBasedSli": {"RequestBasedSliMetric": {"MetricType": "LATENCY",
                "TotalRequestCountMetric": [{"Id": "t"}]}, "MetricThreshold": 500,
                "ComparisonOperator": "LessThanOrEqualTo"},
            "Goal": {"AttainmentGoal": 99.9, "Interval": {"RollingInterval": {"Duration": 30}}}}],
            "Errors": [{"Name": "gone", "Arn": "arn:aws:application-signals:us-east-1:123456789012:slo/gone",
                "ErrorCode": "ResourceNotFoundException", "ErrorMessage": "Slo gone not found"}]}"#;
        let answer = read_answer(200, None, body).unwrap();
        let report = &answer.reports[0];
        assert_eq!(
            (report.name.as_str(), report.budget_requests_remaining),
            ("web", Some(500))
        );
        assert!(report.latency());
        assert_eq!(report.slower_than_seconds(), Some(0.5));
        assert_eq!(
            report.goal.as_ref().and_then(|g| g.attainment_goal),
            Some(99.9)
        );
        assert_eq!(answer.errors[0].error_code, "ResourceNotFoundException");
    }

    #[test]
    fn an_error_is_read_as_every_rest_json_error_and_a_garbled_report_is_transient() {
        let denied = read_answer(
            403,
            Some("AccessDeniedException:http://internal.amazon.com/coral/"),
            br#"{"Message": "User is not authorized"}"#,
        )
        .unwrap_err();
        assert_eq!(denied.kind, AwsErrorKind::AccessDenied);
        assert_eq!(
            denied.to_string(),
            "BatchGetServiceLevelObjectiveBudgetReport failed: AccessDeniedException: User is not authorized"
        );
        let garbled = read_answer(200, None, b"not json").unwrap_err();
        assert_eq!(garbled.kind, AwsErrorKind::Transient);
    }

    #[test]
    fn the_request_is_signed_for_application_signals_in_its_region() {
        let credentials = aws_credential_types::Credentials::new(
            "AKID",
            "secret",
            Some("token".into()),
            None,
            "test",
        );
        let request = budget_report_request(
            "https://application-signals.eu-west-1.amazonaws.com/",
            "eu-west-1",
            &["web"],
            UNIX_EPOCH + Duration::from_millis(1_700_000_000_500),
            &credentials,
            UNIX_EPOCH + Duration::from_secs(1_700_000_000),
        )
        .unwrap();
        assert_eq!(
            request.uri().to_string(),
            "https://application-signals.eu-west-1.amazonaws.com/budget-report"
        );
        let authorization = request.headers()["authorization"].to_str().unwrap();
        assert!(
            authorization.contains("/20231114/eu-west-1/application-signals/aws4_request"),
            "{authorization}"
        );
        assert_eq!(request.headers()["x-amz-security-token"], "token");
        let body: serde_json::Value = serde_json::from_slice(request.body()).unwrap();
        assert_eq!(
            body,
            serde_json::json!({"SloIds": ["web"], "Timestamp": 1_700_000_000.5})
        );
    }
}
