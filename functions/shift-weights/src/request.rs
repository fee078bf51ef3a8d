//! What the state machine sends the function and what it gets back.

use canary_core::{ResolvedStep, TargetWeights};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::error::ShiftError;

#[derive(Debug, Deserialize)]
#[serde(tag = "operation", rename_all = "camelCase", deny_unknown_fields)]
pub enum Request {
    /// Validate the plan, check every target, refuse concurrent rollouts, read the baseline.
    #[serde(rename_all = "camelCase")]
    Prepare {
        plan: Value,
        execution: ExecutionContext,
    },
    /// Put every target at `canary_weight` %, if its weights are still `expected`.
    #[serde(rename_all = "camelCase")]
    Set {
        plan: Value,
        canary_weight: i64,
        expected: Vec<TargetWeights>,
    },
    /// Put every target back to `baseline`, whatever its weights are now.
    #[serde(rename_all = "camelCase")]
    Restore {
        plan: Value,
        baseline: Vec<TargetWeights>,
        /// The weights this rollout last set, if any: a target found at neither these nor the
        /// baseline was changed by someone else, which the output and log report.
        #[serde(default)]
        expected: Option<Vec<TargetWeights>>,
        /// Why it rolls back (the failure's error name), for the `Rollbacks` metric.
        #[serde(default)]
        cause: Option<String>,
        /// When the failure happened (RFC 3339), for the `RollbackSeconds` metric.
        #[serde(default)]
        failed_at: Option<String>,
    },
    /// After promotion: take the stable target group out of every ALB forward action, if
    /// every target is still at `expected` (what promotion left).
    Detach {
        plan: Value,
        expected: Vec<TargetWeights>,
    },
    /// The target health gate: one look at the health of every canary target.
    TargetHealth { plan: Value },
    /// Before promotion: every target must still be at `expected` (what this rollout last
    /// set); a foreign change during the last bake is `WeightsChangedExternally`.
    Verify {
        plan: Value,
        expected: Vec<TargetWeights>,
    },
    /// The safety net for an execution that ended without its own rollback (stopped, timed
    /// out, or failed with an error no Catch handles): find its plan, baseline and last
    /// weights in its history, then restore unless it provably ended settled.
    #[serde(rename_all = "camelCase")]
    SafetyNet {
        execution_arn: String,
        /// The execution's status from the status-change event.
        #[serde(default)]
        status: Option<String>,
    },
}

/// Which execution is asking, from the Step Functions context object
/// (`$$.Execution.Id`, `$$.StateMachine.Id`).
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ExecutionContext {
    pub execution_arn: String,
    pub state_machine_arn: String,
}

impl Request {
    pub fn parse(input: Value) -> Result<Self, ShiftError> {
        canary_core::input::parse_input(input).map_err(ShiftError::InvalidInput)
    }
}

#[derive(Debug, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct PrepareOutput {
    /// The weights to restore on rollback, one per traffic target, in plan order.
    pub baseline: Vec<TargetWeights>,
    /// The plan's steps with bake settings resolved, for the state machine to iterate.
    pub steps: Vec<ResolvedStep>,
    pub targets: Vec<TargetReport>,
}

#[derive(Debug, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct TargetReport {
    pub target: String,
    pub kind: &'static str,
    /// The canary target group was not in the forward action and was added at weight 0.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub canary_attached: bool,
    /// Sticky sessions are on: clients already routed keep their target group, so traffic
    /// follows weight changes more slowly than the weights say.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub sticky: bool,
    /// TTL of the Route 53 records; resolvers cache the old answer this long after a change.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ttl_seconds: Option<i64>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
}

#[derive(Debug, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct SetOutput {
    pub canary_weight: u8,
    /// The weights read back after writing.
    pub weights: Vec<TargetWeights>,
}

#[derive(Debug, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct RestoreOutput {
    /// The weights read back after restoring.
    pub weights: Vec<TargetWeights>,
    /// Targets whose weights were neither the baseline nor what this rollout last set.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub unexpected: Vec<UnexpectedWeights>,
    /// For the execution's cause: empty, or which foreign changes the restore overwrote
    /// (". It overwrote weights changed outside this rollout: …"). Bounded.
    pub note: String,
}

#[derive(Debug, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct TargetHealthOutput {
    /// Every canary target is healthy enough for traffic.
    pub ready: bool,
    /// What is not healthy yet, or that everything is. Bounded.
    pub reason: String,
    /// How long the state machine waits before looking again, and how many more looks the
    /// gate's timeout allows (from the plan's `targetHealth`).
    pub interval_seconds: u32,
    pub max_polls: u32,
    /// Targets with nothing to wait for (a Route 53 record without a health check).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
}

#[derive(Debug, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct DetachOutput {
    /// The ALB targets whose forward action now sends to the canary target group only.
    pub detached: Vec<String>,
}

#[derive(Debug, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct VerifyOutput {
    /// The weights read back, all as this rollout last set them.
    pub weights: Vec<TargetWeights>,
}

#[derive(Debug, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct SafetyNetOutput {
    pub execution_arn: String,
    /// `false` when the execution ended settled (see `safety_net::SETTLED_ENDS`), had not
    /// moved traffic yet, or a newer rollout now shifts the same traffic.
    pub restored: bool,
    pub reason: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub restore: Option<RestoreOutput>,
}

#[derive(Debug, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct UnexpectedWeights {
    pub target: String,
    pub found: String,
}
