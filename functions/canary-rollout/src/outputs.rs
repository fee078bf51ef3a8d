//! What the traffic operations answer the state machine (their JSON is a contract: deployed
//! state machines read these fields), and the asking execution's context.

use canary_core::{ResolvedStep, TargetWeights};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Which execution is asking, from the Step Functions context object
/// (`$$.Execution.Id`, `$$.StateMachine.Id`).
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ExecutionContext {
    pub execution_arn: String,
    pub state_machine_arn: String,
}

#[derive(Debug, Serialize, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PrepareOutput {
    /// The weights to restore on rollback, one per traffic target, in plan order.
    pub baseline: Vec<TargetWeights>,
    /// The plan's steps with bake settings resolved, for the state machine to iterate.
    pub steps: Vec<ResolvedStep>,
    /// How long after a restore the rollout looks at its targets again (`rollback.settleSeconds`
    /// or its default), for the state machine's wait.
    pub settle_seconds: i64,
    pub targets: Vec<TargetReport>,
    /// Running rollouts whose alarm watch overlaps this plan's (one alarm rolls back both).
    /// Said in the output and the log, not kept in the state.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub alarm_overlaps: Vec<String>,
}

#[derive(Debug, Serialize, PartialEq, JsonSchema)]
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

#[derive(Debug, Serialize, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SetOutput {
    pub canary_weight: u8,
    /// The weights read back after writing.
    pub weights: Vec<TargetWeights>,
}

#[derive(Debug, Serialize, PartialEq, JsonSchema)]
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
    /// How many times the hold after the restore put a target back (a GitOps sync in flight
    /// writing the weights it carried).
    #[serde(skip_serializing_if = "is_zero")]
    pub reasserted: u32,
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}

/// The look after a restore's settle period.
#[derive(Debug, Serialize, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct LookAgainOutput {
    /// A target had moved away from the baseline since the restore, and was put back.
    pub reverted: bool,
    /// Which targets, and what they were found at (`<target> was 50/50; …`); empty when
    /// nothing moved. Bounded.
    pub found: String,
    /// The weights read back: every target at the baseline.
    pub weights: Vec<TargetWeights>,
}

#[derive(Debug, Serialize, PartialEq, JsonSchema)]
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

/// What one step back of a gradual rollback did: the state machine keeps it as `$.lastSet`
/// (its `weights` are what the restore compares against) and holds `holdSeconds` before the
/// next, or restores the baseline at once when it did not step back.
#[derive(Debug, Serialize, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct StepBackOutput {
    pub stepped_back: bool,
    /// The canary's share now.
    pub canary_weight: u8,
    /// The weights read back after the step back; `expected` unchanged when none was taken.
    pub weights: Vec<TargetWeights>,
    /// How long to hold before the next step back (`rollback.gradual.holdSeconds`).
    pub hold_seconds: i64,
    /// Why it stepped back to here, or why it goes straight to the baseline. Bounded.
    pub reason: String,
}

/// What the alarms said before a step back (evaluate-alarms `stepBackLook`): `go`, or the
/// baseline at once and why.
#[derive(Debug, Serialize, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct StepBackLook {
    pub go: bool,
    /// Bounded.
    pub reason: String,
}

#[derive(Debug, Serialize, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct DetachOutput {
    /// The ALB targets whose forward action now sends to the canary target group only.
    pub detached: Vec<String>,
}

#[derive(Debug, Serialize, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct VerifyOutput {
    /// The weights read back, all as this rollout last set them.
    pub weights: Vec<TargetWeights>,
}

#[derive(Debug, Serialize, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SafetyNetOutput {
    pub execution_arn: String,
    /// `false` when the execution ended settled (see `canary_core::state::SETTLED_ENDS`), had not
    /// moved traffic yet, or a newer rollout now shifts the same traffic.
    pub restored: bool,
    pub reason: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub restore: Option<RestoreOutput>,
    /// After a restore, the look once the plan's settle period passed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub look_again: Option<LookAgainOutput>,
}

#[derive(Debug, Serialize, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct UnexpectedWeights {
    pub target: String,
    pub found: String,
}
