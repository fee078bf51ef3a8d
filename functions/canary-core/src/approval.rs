//! The plan's `approval` section: a person approves before chosen steps.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::limits::{
    truncate, MAX_APPROVAL_TIMEOUT_SECONDS, MAX_REJECTION_CAUSE_BYTES, MAX_REJECTION_ERROR_BYTES,
};
use crate::validate::Errors;

/// A person approves before chosen steps. While the execution waits, the checks keep running
/// at the current weights: a failing check during the wait rolls back.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ApprovalSection {
    /// The weights of the steps that wait for an approval before they are set, e.g. `[100]`.
    /// A step's own `approval` wins: `true` asks for one, `false` never waits even when the
    /// step is listed here.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub before_steps: Vec<i64>,
    /// How long to wait for the approval. Default 3600.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1, max = 86400))]
    pub timeout_seconds: Option<i64>,
    /// What a timeout does: `rollback` (default) restores the baseline, `promote` goes on as if
    /// approved.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub on_timeout: Option<OnApprovalTimeout>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum OnApprovalTimeout {
    #[default]
    Rollback,
    Promote,
}

impl ApprovalSection {
    const DEFAULT_TIMEOUT_SECONDS: i64 = 3600;

    pub(crate) fn validate(&self, step_weights: &[i64], errors: &mut Errors) {
        for (i, weight) in self.before_steps.iter().enumerate() {
            if !step_weights.contains(weight) {
                errors.push(
                    format!("approval.beforeSteps[{i}]"),
                    format!("{weight} is not the weight of one of the plan's steps"),
                );
            }
        }
        let timeout = self.timeout();
        if !(1..=MAX_APPROVAL_TIMEOUT_SECONDS).contains(&timeout) {
            errors.push(
                "approval.timeoutSeconds",
                format!("must be from 1 to {MAX_APPROVAL_TIMEOUT_SECONDS} seconds, got {timeout}"),
            );
        }
    }

    pub fn timeout(&self) -> i64 {
        self.timeout_seconds
            .unwrap_or(Self::DEFAULT_TIMEOUT_SECONDS)
    }

    /// Whether the step of `weight` waits: its own `approval` when it says (`step_says`),
    /// else whether `beforeSteps` lists it.
    pub fn gates(&self, weight: i64, step_says: Option<bool>) -> bool {
        step_says.unwrap_or_else(|| self.before_steps.contains(&weight))
    }
}

/// An approver's rejection as the state keeps it: `SendTaskFailure`'s error and cause (either
/// may be absent) cut to [`MAX_REJECTION_ERROR_BYTES`] and [`MAX_REJECTION_CAUSE_BYTES`]
/// with "…", so that no answer, whatever sent it, can grow the execution's state or cause.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Rejection {
    pub error: String,
    pub cause: String,
}

impl Rejection {
    /// From the `{"Error", "Cause"}` object a `Catch` gives.
    pub fn bounded(caught: &serde_json::Value) -> Self {
        let text = |key: &str| {
            caught[key]
                .as_str()
                .map(str::trim)
                .filter(|t| !t.is_empty())
        };
        Rejection {
            error: truncate(
                text("Error").unwrap_or("ApprovalRejected"),
                MAX_REJECTION_ERROR_BYTES,
            ),
            cause: truncate(
                text("Cause").unwrap_or("rejected without a reason"),
                MAX_REJECTION_CAUSE_BYTES,
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn approvals_name_steps_by_weight() {
        let approval = ApprovalSection {
            before_steps: vec![50, 75],
            timeout_seconds: Some(0),
            on_timeout: None,
        };
        let mut errors = Errors::default();
        approval.validate(&[10, 50, 100], &mut errors);
        assert_eq!(
            errors.paths(),
            ["approval.beforeSteps[1]", "approval.timeoutSeconds"]
        );
        assert!(approval.gates(50, None) && approval.gates(10, Some(true)));
        assert!(!approval.gates(100, None));
        // The step's own setting wins over the list, both ways.
        assert!(!approval.gates(50, Some(false)));
    }

    #[test]
    fn a_rejection_is_cut_where_it_enters() {
        let long = "é".repeat(40_000);
        let rejection = Rejection::bounded(&serde_json::json!({"Error": long, "Cause": long}));
        assert!(rejection.error.len() <= MAX_REJECTION_ERROR_BYTES);
        assert!(rejection.cause.len() <= MAX_REJECTION_CAUSE_BYTES);
        assert!(rejection.cause.ends_with('…'));
        let plain = Rejection::bounded(
            &serde_json::json!({"Error": "ApprovalRejected", "Cause": "p99 looks off"}),
        );
        assert_eq!(
            (plain.error.as_str(), plain.cause.as_str()),
            ("ApprovalRejected", "p99 looks off")
        );
        let bare = Rejection::bounded(&serde_json::json!({"Error": null}));
        assert_eq!(
            (bare.error.as_str(), bare.cause.as_str()),
            ("ApprovalRejected", "rejected without a reason")
        );
    }
}
