//! CloudWatch Synthetics canaries, as a test-traffic stage judges by them: whether one runs
//! (`GetCanary`), starting a stopped one (`StartCanary`), and its newest runs (`GetCanaryRuns`).
//! Sent by `crate::rest_json`, not `aws-sdk-synthetics`: its client, with the deserializers of a
//! canary's every shape, put evaluate-alarms past CI's 3.5 MB bound (docs/size-and-startup.md).
//! The canary names come from a validated plan (lowercase letters, digits, `-`, `_`), so they go
//! into the paths as they are.

use std::sync::Arc;

use async_trait::async_trait;
use aws_config::SdkConfig;
use bytes::Bytes;
use serde::Deserialize;

use crate::error::{AwsError, AwsErrorKind};
use crate::http::LazyHttps;
use crate::rest_json::RestJsonClient;

/// Its endpoints' host prefix and SigV4 service name.
const SERVICE: &str = "synthetics";

/// One run of a canary.
#[derive(Debug, Clone, PartialEq)]
pub struct CanaryRun {
    /// `PASSED`, `FAILED` or `RUNNING`.
    pub state: String,
    /// Why it failed, as Synthetics says (`StateReason`).
    pub reason: Option<String>,
    /// When it started, in seconds since the epoch.
    pub started: Option<f64>,
}

impl CanaryRun {
    pub fn passed(&self) -> bool {
        self.state == "PASSED"
    }

    pub fn failed(&self) -> bool {
        self.state == "FAILED"
    }
}

#[async_trait]
pub trait SyntheticsApi: Send + Sync {
    /// The canary's state (`RUNNING`, `STOPPED`, `READY`…); `NotFound` if there is none.
    async fn canary_state(&self, region: &str, name: &str) -> Result<String, AwsError>;
    /// Starts a canary that is not running.
    async fn start_canary(&self, region: &str, name: &str) -> Result<(), AwsError>;
    /// The canary's newest runs (one page, newest first).
    async fn runs(&self, region: &str, name: &str) -> Result<Vec<CanaryRun>, AwsError>;
}

pub struct SdkSynthetics {
    config: SdkConfig,
    http: Arc<LazyHttps>,
}

impl SdkSynthetics {
    pub fn new(config: &SdkConfig) -> Self {
        SdkSynthetics {
            config: config.clone(),
            http: Arc::default(),
        }
    }

    /// A client for the canary's Region. Building one makes no network call.
    fn client(&self, region: &str) -> RestJsonClient {
        RestJsonClient::new(
            &self.config,
            SERVICE,
            SERVICE,
            region,
            self.config.credentials_provider(),
            self.http.clone(),
        )
    }
}

/// Whether a canary in `state` runs without being started.
pub fn is_running(state: &str) -> bool {
    ["RUNNING", "STARTING"].contains(&state)
}

/// `GetCanary`'s answer, as far as it is read.
#[derive(Deserialize)]
#[serde(rename_all = "PascalCase")]
struct CanaryAnswer {
    canary: Option<CanaryShape>,
}

#[derive(Deserialize)]
#[serde(rename_all = "PascalCase")]
struct CanaryShape {
    status: Option<Status>,
}

#[derive(Deserialize)]
#[serde(rename_all = "PascalCase")]
struct Status {
    state: Option<String>,
    state_reason: Option<String>,
}

/// `GetCanaryRuns`' answer, as far as it is read.
#[derive(Deserialize)]
#[serde(rename_all = "PascalCase")]
struct RunsAnswer {
    #[serde(default)]
    canary_runs: Vec<RunShape>,
}

#[derive(Deserialize)]
#[serde(rename_all = "PascalCase")]
struct RunShape {
    status: Option<Status>,
    timeline: Option<Timeline>,
}

#[derive(Deserialize)]
#[serde(rename_all = "PascalCase")]
struct Timeline {
    /// Epoch seconds (restJson1's default timestamp format).
    started: Option<f64>,
}

impl From<RunShape> for CanaryRun {
    fn from(run: RunShape) -> Self {
        let (state, reason) = run
            .status
            .map_or((None, None), |s| (s.state, s.state_reason));
        CanaryRun {
            state: state.unwrap_or_else(|| "UNKNOWN".to_owned()),
            reason,
            started: run.timeline.and_then(|t| t.started),
        }
    }
}

#[async_trait]
impl SyntheticsApi for SdkSynthetics {
    async fn canary_state(&self, region: &str, name: &str) -> Result<String, AwsError> {
        const OPERATION: &str = "GetCanary";
        let answer: CanaryAnswer = self
            .client(region)
            .call(OPERATION, "GET", &format!("/canary/{name}"), None)
            .await?;
        answer
            .canary
            .and_then(|c| c.status)
            .and_then(|s| s.state)
            .ok_or_else(|| {
                AwsError::new(
                    AwsErrorKind::Rejected,
                    OPERATION,
                    format!("canary {name} has no state"),
                )
            })
    }

    async fn start_canary(&self, region: &str, name: &str) -> Result<(), AwsError> {
        self.client(region)
            .call::<serde::de::IgnoredAny>(
                "StartCanary",
                "POST",
                &format!("/canary/{name}/start"),
                None,
            )
            .await
            .map(drop)
    }

    async fn runs(&self, region: &str, name: &str) -> Result<Vec<CanaryRun>, AwsError> {
        const OPERATION: &str = "GetCanaryRuns";
        let answer: RunsAnswer = self
            .client(region)
            .call(
                OPERATION,
                "POST",
                &format!("/canary/{name}/runs"),
                Some(Bytes::from_static(br#"{"MaxResults": 100}"#)),
            )
            .await?;
        Ok(answer
            .canary_runs
            .into_iter()
            .map(CanaryRun::from)
            .collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rest_json;

    #[test]
    fn a_run_reads_its_state_reason_and_start_and_ignores_the_rest() {
        let answer: RunsAnswer = rest_json::parse(
            "GetCanaryRuns",
            br#"{"CanaryRuns": [{"Id": "r1", "Name": "green-smoke",
                "Status": {"State": "FAILED", "StateReason": "GET /checkout answered 503",
                           "StateReasonCode": "CANARY_FAILURE", "TestResult": "FAILED"},
                "Timeline": {"Started": 1700000000.25, "Completed": 1700000010.0},
                "ArtifactS3Location": "bucket/path"}, {"Id": "r2"}], "NextToken": "t"}"#,
        )
        .unwrap();
        let runs: Vec<CanaryRun> = answer
            .canary_runs
            .into_iter()
            .map(CanaryRun::from)
            .collect();
        assert_eq!(
            runs,
            [
                CanaryRun {
                    state: "FAILED".to_owned(),
                    reason: Some("GET /checkout answered 503".to_owned()),
                    started: Some(1_700_000_000.25),
                },
                CanaryRun {
                    state: "UNKNOWN".to_owned(),
                    reason: None,
                    started: None,
                },
            ]
        );
        assert!(runs[0].failed() && !runs[0].passed());
    }
}
