use canary_aws::AwsError;
use canary_core::{ErrorName, NamedError, PlanErrors};

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
    #[error("{point} hook {function} failed: {reason}")]
    HookFailed {
        point: &'static str,
        function: String,
        reason: String,
    },
    /// A CloudWatch (or Lambda, for hooks) failure. Never a pass: the state machine retries transient ones and rolls
    /// back when they persist.
    #[error("{0}")]
    Aws(#[from] AwsError),
}

impl NamedError for AnalysisError {
    fn name(&self) -> ErrorName {
        match self {
            AnalysisError::InvalidInput(_) => ErrorName::InvalidInput,
            AnalysisError::InvalidPlan(_)
            | AnalysisError::QueriesRejected { .. }
            | AnalysisError::TooManyAlarms { .. } => ErrorName::InvalidPlan,
            AnalysisError::AlarmNotFound { .. } => ErrorName::AlarmNotFound,
            AnalysisError::HookFailed { .. } => ErrorName::HookFailed,
            AnalysisError::Aws(e) => e.error_name(),
        }
    }
}
