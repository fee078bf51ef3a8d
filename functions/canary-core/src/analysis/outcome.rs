//! What one signal says about the canary ([`CheckOutcome`]), and the judgement of a value
//! against its limits. Below everything else in `analysis`: the sections' checks and the
//! query providers judge with it, and [`super::verdict`] decides from the outcomes.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// How one alarm or metric judged the canary.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum CheckVerdict {
    Pass,
    Fail,
    Inconclusive,
    /// Configured not to count (an INSUFFICIENT_DATA alarm under `ignore`).
    Ignored,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CheckOutcome {
    pub verdict: CheckVerdict,
    /// One line for people: "alarm api-5xx is ALARM since 2026-11-22T12:03:10Z: Threshold Crossed ...".
    pub reason: String,
    /// A failure of this signal rolls back straight to the baseline, even with
    /// `rollback.gradual` (an alarm of `analysis.alarms.critical`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub critical: bool,
}

impl CheckOutcome {
    pub fn new(verdict: CheckVerdict, reason: impl Into<String>) -> Self {
        CheckOutcome {
            verdict,
            reason: reason.into(),
            critical: false,
        }
    }

    /// The same outcome, its failure marked critical or not.
    pub fn critical(self, critical: bool) -> Self {
        CheckOutcome { critical, ..self }
    }
}

/// Compares `subject`'s value with its limits: outside fails, within passes.
pub fn judge_limits(subject: &str, value: f64, min: Option<f64>, max: Option<f64>) -> CheckOutcome {
    if let Some(max) = max.filter(|max| value > *max) {
        return CheckOutcome::new(
            CheckVerdict::Fail,
            format!("{subject} is {value} > max {max}"),
        );
    }
    if let Some(min) = min.filter(|min| value < *min) {
        return CheckOutcome::new(
            CheckVerdict::Fail,
            format!("{subject} is {value} < min {min}"),
        );
    }
    CheckOutcome::new(
        CheckVerdict::Pass,
        format!("{subject} is {value}, within limits"),
    )
}
