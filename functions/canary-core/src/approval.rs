//! The plan's `approval` section: a person approves before chosen steps.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::limits::MAX_APPROVAL_TIMEOUT_SECONDS;
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
}
