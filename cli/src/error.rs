//! What can stop a command, each with a message a person can act on.

use canary_aws::AwsError;

#[derive(Debug, thiserror::Error)]
pub enum CliError {
    /// A file could not be read, or a plan is not valid.
    #[error("{0}")]
    Invalid(String),
    /// What the command needs is not there: no state machine, no running rollout, nothing
    /// waiting for an approval.
    #[error("{0}")]
    NotFound(String),
    #[error("{0}")]
    Aws(#[from] AwsError),
    /// A traffic operation failed (the restore command).
    #[error("{0}")]
    Traffic(#[from] canary_rollout::ShiftError),
    /// The command would undo more than it is for (a restore over a promotion or a newer
    /// rollout); `--force` goes ahead.
    #[error("{0}")]
    Refused(String),
    /// The safety net did not restore in time.
    #[error("{0}")]
    TimedOut(String),
}
