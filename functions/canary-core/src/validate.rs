//! Collecting a plan's problems: every one with its JSON path, all reported at once.

use std::fmt;

use crate::limits;

/// One problem with a plan, at a JSON path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlanError {
    pub path: String,
    pub message: String,
}

impl fmt::Display for PlanError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.path, self.message)
    }
}

/// Every problem found with a plan. Never empty.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlanErrors(pub Vec<PlanError>);

impl fmt::Display for PlanErrors {
    /// Every problem up to [`limits::MAX_LISTED_ERRORS`], each cut to a line, then
    /// "… and N more": the message ends up in the execution's cause, which is bounded.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "invalid rollout plan: {}", self.listed())
    }
}

impl PlanErrors {
    /// The problems, bounded as the `Display` lists them, without saying what kind of plan
    /// they are of (a fleet plan's errors are said as such).
    pub fn listed(&self) -> String {
        let lines: Vec<String> = self.0.iter().map(PlanError::to_string).collect();
        limits::join_bounded(
            &lines,
            "; ",
            limits::MAX_LISTED_ERRORS,
            limits::MAX_ERROR_MESSAGE_BYTES - 100,
        )
    }
}

impl std::error::Error for PlanErrors {}

/// The problems found so far while validating a plan (see [`crate::TargetKind::validate`]).
#[derive(Default)]
pub struct Errors(pub(crate) Vec<PlanError>);

impl Errors {
    #[cfg(test)]
    pub(crate) fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    #[cfg(test)]
    pub(crate) fn paths(&self) -> Vec<&str> {
        self.0.iter().map(|e| e.path.as_str()).collect()
    }

    pub fn push(&mut self, path: impl Into<String>, message: impl Into<String>) {
        self.0.push(PlanError {
            path: path.into(),
            message: message.into(),
        });
    }
}
