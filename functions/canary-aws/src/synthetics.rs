//! CloudWatch Synthetics canaries, as a test-traffic stage judges by them: whether one runs
//! (`GetCanary`), starting a stopped one (`StartCanary`), and its newest runs (`GetCanaryRuns`).

use async_trait::async_trait;
use aws_config::SdkConfig;
use aws_sdk_synthetics as synthetics;
use synthetics::types::{CanaryRunState, CanaryState};

use crate::error::{AwsError, AwsErrorKind};

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
        self.state == CanaryRunState::Passed.as_str()
    }

    pub fn failed(&self) -> bool {
        self.state == CanaryRunState::Failed.as_str()
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
}

impl SdkSynthetics {
    pub fn new(config: &SdkConfig) -> Self {
        SdkSynthetics {
            config: config.clone(),
        }
    }

    /// A client for the canary's Region. Building one makes no network call.
    fn client(&self, region: &str) -> synthetics::Client {
        let conf = synthetics::config::Builder::from(&self.config)
            .region(synthetics::config::Region::new(region.to_owned()))
            .build();
        synthetics::Client::from_conf(conf)
    }
}

/// Whether a canary in `state` runs without being started.
pub fn is_running(state: &str) -> bool {
    [
        CanaryState::Running.as_str(),
        CanaryState::Starting.as_str(),
    ]
    .contains(&state)
}

#[async_trait]
impl SyntheticsApi for SdkSynthetics {
    async fn canary_state(&self, region: &str, name: &str) -> Result<String, AwsError> {
        let out = self
            .client(region)
            .get_canary()
            .name(name)
            .send()
            .await
            .map_err(|e| AwsError::from_sdk("GetCanary", e))?;
        out.canary()
            .and_then(|c| c.status())
            .and_then(|s| s.state())
            .map(|s| s.as_str().to_owned())
            .ok_or_else(|| {
                AwsError::new(
                    AwsErrorKind::Rejected,
                    "GetCanary",
                    format!("canary {name} has no state"),
                )
            })
    }

    async fn start_canary(&self, region: &str, name: &str) -> Result<(), AwsError> {
        self.client(region)
            .start_canary()
            .name(name)
            .send()
            .await
            .map(drop)
            .map_err(|e| AwsError::from_sdk("StartCanary", e))
    }

    async fn runs(&self, region: &str, name: &str) -> Result<Vec<CanaryRun>, AwsError> {
        let out = self
            .client(region)
            .get_canary_runs()
            .name(name)
            .max_results(100)
            .send()
            .await
            .map_err(|e| AwsError::from_sdk("GetCanaryRuns", e))?;
        Ok(out
            .canary_runs()
            .iter()
            .map(|run| CanaryRun {
                state: run
                    .status()
                    .and_then(|s| s.state())
                    .map_or("UNKNOWN", |s| s.as_str())
                    .to_owned(),
                reason: run
                    .status()
                    .and_then(|s| s.state_reason())
                    .map(str::to_owned),
                started: run
                    .timeline()
                    .and_then(|t| t.started())
                    .map(|t| t.as_secs_f64()),
            })
            .collect())
    }
}
