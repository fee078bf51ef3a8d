//! The rollout's errors: the traffic operations' ([`ShiftError`]) and the checks' and hooks'
//! ([`AnalysisError`]), each with the stable name the state machine retries and catches on.

use canary_aws::AwsError;
use canary_core::{ErrorName, NamedError, PlanErrors};
use canary_kube::KubeError;

#[derive(Debug, thiserror::Error)]
pub enum ShiftError {
    #[error("invalid input: {0}")]
    InvalidInput(String),
    #[error("{0}")]
    InvalidPlan(#[from] PlanErrors),
    #[error("{path}: {message}")]
    TargetNotFound { path: String, message: String },
    #[error("{path}: {message}")]
    TargetMisconfigured { path: String, message: String },
    #[error("{path}: {message}")]
    TrafficOwnedByController { path: String, message: String },
    #[error(
        "execution {execution_arn} is already shifting {target}; wait for it to end or stop it"
    )]
    ConcurrentRollout {
        execution_arn: String,
        target: String,
    },
    #[error("weights changed outside this rollout; nothing was written: {0}")]
    WeightsChangedExternally(String),
    /// The read-back after a write found other weights: this rollout did write, and something
    /// else (another writer, a reconciling controller) wrote after it. The same name for the
    /// state machine; the message must not say nothing was written.
    #[error(
        "weights changed outside this rollout right after it wrote them (another writer, or a \
         controller putting its own back): {0}"
    )]
    ChangedAfterWrite(String),
    #[error("{path}: {source}")]
    Aws { path: String, source: AwsError },
    #[error("{path}: Route 53 change {change_id} was written but is not INSYNC yet")]
    ChangeNotInSync { path: String, change_id: String },
    /// A Kubernetes API error met on a GitOps target's Argo CD cluster Secrets.
    #[error("{path}: {source}")]
    Kube { path: String, source: KubeError },
    #[error("{path}: {message}")]
    WeightsNotSynced { path: String, message: String },
    /// A step written and not applied within the bound (its message names the target).
    #[error("{0}; the step may already be live, unjudged: rolling back")]
    StepNotInEffect(String),
}

impl NamedError for ShiftError {
    fn name(&self) -> ErrorName {
        match self {
            ShiftError::InvalidInput(_) => ErrorName::InvalidInput,
            ShiftError::InvalidPlan(_) => ErrorName::InvalidPlan,
            ShiftError::TargetNotFound { .. } => ErrorName::TargetNotFound,
            ShiftError::TargetMisconfigured { .. } => ErrorName::TargetMisconfigured,
            ShiftError::TrafficOwnedByController { .. } => ErrorName::TrafficOwnedByController,
            ShiftError::ConcurrentRollout { .. } => ErrorName::ConcurrentRollout,
            ShiftError::WeightsChangedExternally(_) | ShiftError::ChangedAfterWrite(_) => {
                ErrorName::WeightsChangedExternally
            }
            ShiftError::Aws { source, .. } => source.error_name(),
            ShiftError::ChangeNotInSync { .. } => ErrorName::ChangeNotInSync,
            ShiftError::Kube { source, .. } => source.error_name(),
            ShiftError::WeightsNotSynced { .. } => ErrorName::WeightsNotSynced,
            ShiftError::StepNotInEffect(_) => ErrorName::StepNotInEffect,
        }
    }
}

impl ShiftError {
    /// An AWS error met while working on the traffic target at `path`.
    pub fn aws(path: &str, source: AwsError) -> Self {
        ShiftError::Aws {
            path: path.to_owned(),
            source,
        }
    }
}

/// The checks' and hooks' errors (the evaluate-alarms function's).
#[derive(Debug, thiserror::Error)]
pub enum AnalysisError {
    #[error("invalid input: {0}")]
    InvalidInput(String),
    #[error("{0}")]
    InvalidPlan(#[from] PlanErrors),
    #[error("{path}: {message}")]
    AlarmNotFound { path: String, message: String },
    #[error("{path}: {message}")]
    TooManyAlarms { path: String, message: String },
    #[error("{path}: CloudWatch rejected the metric queries: {source}")]
    QueriesRejected { path: String, source: AwsError },
    /// A Prometheus or Datadog check that cannot be evaluated: the query, or what it gives.
    #[error("{path}: {message}")]
    QueryCheck { path: String, message: String },
    /// A metrics provider (Prometheus, AMP, Datadog) cannot be reached, fails or refuses;
    /// `name` is its error's.
    #[error("{path}: {message}")]
    MetricsProvider {
        path: String,
        name: ErrorName,
        message: String,
    },
    /// The test-traffic stage failed; the message names the failed run or alarm and the test
    /// address.
    #[error("test traffic failed: {0}")]
    TestTrafficFailed(String),
    #[error("{point} hook {function} failed: {reason}")]
    HookFailed {
        point: &'static str,
        function: String,
        reason: String,
    },
    /// A Change Calendar or the freeze switch that Admit cannot read: `access_denied` when the
    /// role may not (AwsAccessDenied), else the plan's or stack's mistake (InvalidPlan).
    #[error("{0}")]
    Freeze(#[from] canary_aws::FreezeCheckError),
    /// A check's look at the traffic targets: `WeightsChangedExternally` when one is not
    /// where the rollout last set it, or the error reading it.
    #[error("{0}")]
    Traffic(#[from] ShiftError),
    /// A CloudWatch (or Lambda, for hooks) failure. Never a pass: the state machine retries transient ones and rolls
    /// back when they persist.
    #[error("{0}")]
    Aws(#[from] AwsError),
    /// Admit: the stack's SafetyNet rule is disabled or deleted.
    #[error("{0}")]
    SafetyNetDisabled(String),
}

impl NamedError for AnalysisError {
    fn name(&self) -> ErrorName {
        match self {
            AnalysisError::InvalidInput(_) => ErrorName::InvalidInput,
            AnalysisError::InvalidPlan(_)
            | AnalysisError::QueriesRejected { .. }
            | AnalysisError::TooManyAlarms { .. }
            | AnalysisError::QueryCheck { .. } => ErrorName::InvalidPlan,
            AnalysisError::MetricsProvider { name, .. } => *name,
            AnalysisError::AlarmNotFound { .. } => ErrorName::AlarmNotFound,
            AnalysisError::Freeze(e) if e.access_denied => ErrorName::AwsAccessDenied,
            AnalysisError::Freeze(_) => ErrorName::InvalidPlan,
            AnalysisError::HookFailed { .. } => ErrorName::HookFailed,
            AnalysisError::TestTrafficFailed(_) => ErrorName::TestTrafficFailed,
            AnalysisError::Traffic(e) => e.name(),
            AnalysisError::Aws(e) => e.error_name(),
            AnalysisError::SafetyNetDisabled(_) => ErrorName::SafetyNetDisabled,
        }
    }
}
