//! The `shift-weights` Lambda: what the state machine sends it ([`Request`]) and the dispatch
//! into `canary-rollout`, which holds the logic (prepare / set / verify / restore the traffic
//! weights, a gradual rollback's steps back, the target health gate, detaching the old cluster
//! after promotion, the safety net for executions that ended without their own rollback, and
//! its scheduled sweep).

use std::collections::BTreeMap;

use canary_core::{RolloutPlan, TargetWeights, WeightPair};
use canary_rollout::outputs::ExecutionContext;
use canary_rollout::sweep::{Sweep, SweepApis};
use canary_rollout::{
    metrics, prepare, restore, retire, safety_net, set, step_back, sweep, target_health,
    test_traffic,
};
use schemars::{schema_for, Schema};
use serde::{Deserialize, Serialize};
use serde_json::Value;

pub use canary_rollout::{Apis, ShiftError};

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
    /// A gradual rollback's step back (`rollback.gradual`): if the old cluster's side of every
    /// target is healthy, cut the canary's share to the next step for a rollback from
    /// `failed_weight`, if its weights are still `expected`.
    #[serde(rename_all = "camelCase")]
    StepBack {
        plan: Value,
        failed_weight: u8,
        expected: Vec<TargetWeights>,
    },
    /// The test-traffic stage's start (the plan's `testTraffic`): the rule of each `alb`
    /// target that sends test requests to the new cluster alone, tagged with the execution; the
    /// new cluster's own record of each `route53` target checked.
    #[serde(rename_all = "camelCase")]
    OpenTestTraffic { plan: Value, execution_arn: String },
    /// Deletes the test rules of the execution (at promotion, after a failed stage).
    #[serde(rename_all = "camelCase")]
    CloseTestTraffic { plan: Value, execution_arn: String },
    /// Put every target back to `baseline`, whatever its weights are now.
    #[serde(rename_all = "camelCase")]
    Restore {
        plan: Value,
        /// The rollout's execution: its test rules (`testTraffic`) are deleted with the restore.
        #[serde(default)]
        execution_arn: Option<String>,
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
        /// The step being set when it failed: a target already at its weights (the step
        /// reached it before another target refused) is this rollout's, not a foreign change.
        #[serde(default)]
        canary_weight: Option<u8>,
    },
    /// After a foreign change stopped the rollout: put back to `baseline` every target still
    /// at `expected` (what this rollout last set) or at `canary_weight` % (the step it was
    /// setting), and leave every other target as its writer left it (reported).
    #[serde(rename_all = "camelCase")]
    RestoreUnchanged {
        plan: Value,
        baseline: Vec<TargetWeights>,
        expected: Vec<TargetWeights>,
        #[serde(default)]
        canary_weight: Option<u8>,
    },
    /// After a rollback's settle period: every target must still be at `baseline`; one that
    /// is not (a controller put weights back) is restored again and reported (`reverted`).
    LookAgain {
        plan: Value,
        baseline: Vec<TargetWeights>,
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
    /// The safety net's sweep (the template's `SafetyNetSweep` schedule): put back the traffic
    /// of rollouts that ended ABORTED, FAILED or TIMED_OUT within `withinSeconds` (and more than
    /// `graceSeconds` ago) that the safety net would restore and whose targets are still where
    /// they left them; each one is told (`Safety Net Swept`, `SafetyNetSweeps`).
    #[serde(rename_all = "camelCase")]
    Sweep {
        state_machine_arn: String,
        /// The stack's SafetyNet rule, whose state each swept rollout's event tells.
        #[serde(default)]
        safety_net_rule: Option<String>,
        #[serde(default = "default_sweep_window")]
        within_seconds: u64,
        #[serde(default = "default_sweep_grace")]
        grace_seconds: u64,
    },
    /// A fleet that halted with `rollbackPromotedOnHalt`: put a promoted cell's targets that
    /// are still at the promotion back at its baseline (refused, nothing written, for one not
    /// promoted, retired, or followed by a newer rollout of the same targets).
    #[serde(rename_all = "camelCase")]
    RollBackPromotion {
        execution_arn: String,
        /// Why (the fleet's `FleetHalted`), for the `Rollbacks` metric.
        cause: String,
    },
}

/// An hour: as long as EventBridge and Lambda retry the SafetyNet rule's delivery.
fn default_sweep_window() -> u64 {
    3600
}

/// Two minutes: the SafetyNet rule's delivery restores within seconds; the sweep is for the one
/// that never comes.
fn default_sweep_grace() -> u64 {
    120
}

impl Request {
    pub fn parse(input: Value) -> Result<Self, ShiftError> {
        canary_core::input::parse_input(input).map_err(ShiftError::InvalidInput)
    }
}

/// Runs one invocation. The plan is parsed and validated once, here. `sweeping`: what only
/// the sweep uses.
pub async fn handle(
    apis: &Apis<'_>,
    sweeping: &SweepApis<'_>,
    input: Value,
) -> Result<Value, ShiftError> {
    match Request::parse(input)? {
        Request::Prepare { plan, execution } => {
            to_json(prepare::prepare(apis, &RolloutPlan::parse(plan)?, &execution).await?)
        }
        Request::Set {
            plan,
            canary_weight,
            expected,
        } => to_json(set::set(apis, &RolloutPlan::parse(plan)?, canary_weight, &expected).await?),
        Request::StepBack {
            plan,
            failed_weight,
            expected,
        } => to_json(
            step_back::step_back(apis, &RolloutPlan::parse(plan)?, failed_weight, &expected)
                .await?,
        ),
        Request::OpenTestTraffic {
            plan,
            execution_arn,
        } => {
            let plan = RolloutPlan::parse(plan)?.plan;
            to_json(test_traffic::open(apis, &plan, &execution_arn, now()).await?)
        }
        Request::CloseTestTraffic {
            plan,
            execution_arn,
        } => {
            let plan = RolloutPlan::parse(plan)?.plan;
            let deleted = test_traffic::close(apis.test_rules, &plan, &execution_arn).await?;
            to_json(test_traffic::ClosedStage { deleted })
        }
        Request::Restore {
            plan,
            execution_arn,
            baseline,
            expected,
            cause,
            failed_at,
            canary_weight,
        } => {
            let plan = RolloutPlan::parse(plan)?.plan;
            let why = restore::Rollback {
                cause: cause.unwrap_or_else(|| "Restore".to_owned()),
                failed_at,
            };
            let step = step_weights(canary_weight)?;
            let restored = restore::restore(apis, &plan, &baseline, expected.as_deref(), step)
                .await
                .inspect_err(|_| metrics::restore_failure(&plan))?;
            restore::record(&plan, &restored, &why);
            if let Some(execution_arn) = &execution_arn {
                test_traffic::close_after_restore(apis.test_rules, &plan, execution_arn).await;
            }
            to_json(restored)
        }
        Request::RestoreUnchanged {
            plan,
            baseline,
            expected,
            canary_weight,
        } => {
            let plan = RolloutPlan::parse(plan)?.plan;
            let step = step_weights(canary_weight)?;
            let restored = restore::restore_unchanged(apis, &plan, &baseline, &expected, step)
                .await
                .inspect_err(|_| metrics::restore_failure(&plan))?;
            restore::record_foreign_change(&plan, &restored);
            to_json(restored)
        }
        Request::LookAgain { plan, baseline } => {
            to_json(restore::look_again(apis, &RolloutPlan::parse(plan)?.plan, &baseline).await?)
        }
        Request::Detach { plan, expected } => {
            to_json(retire::detach(apis, &RolloutPlan::parse(plan)?.plan, &expected).await?)
        }
        Request::TargetHealth { plan } => {
            let plan = RolloutPlan::parse(plan)?.plan;
            let look = target_health::target_health(apis, &plan).await?;
            if !look.ready {
                canary_rollout::metrics::gate_hold(&plan, "targetHealth");
            }
            to_json(look)
        }
        Request::Verify { plan, expected } => {
            to_json(set::verify(apis.reads(), &RolloutPlan::parse(plan)?, &expected).await?)
        }
        Request::SafetyNet {
            execution_arn,
            status,
        } => to_json(safety_net::safety_net(apis, &execution_arn, status.as_deref()).await?),
        Request::Sweep {
            state_machine_arn,
            safety_net_rule,
            within_seconds,
            grace_seconds,
        } => {
            let request = Sweep {
                state_machine_arn: &state_machine_arn,
                safety_net_rule: safety_net_rule.as_deref(),
                within_seconds,
                grace_seconds,
            };
            to_json(sweep::sweep(apis, sweeping, &request, now()).await?)
        }
        Request::RollBackPromotion {
            execution_arn,
            cause,
        } => to_json(safety_net::roll_back_promotion(apis, &execution_arn, &cause).await?),
    }
}

/// The JSON schema of each operation's output the state machine calls, by operation name: its
/// contract with the state machine (`tests/contract.rs` checks every path the definition reads
/// against them; `schema/outputs/shift-weights.json` holds them).
pub fn output_schemas() -> BTreeMap<&'static str, Schema> {
    use canary_rollout::outputs::*;
    BTreeMap::from([
        ("prepare", schema_for!(PrepareOutput)),
        ("set", schema_for!(SetOutput)),
        ("stepBack", schema_for!(StepBackOutput)),
        ("verify", schema_for!(VerifyOutput)),
        ("restore", schema_for!(RestoreOutput)),
        ("restoreUnchanged", schema_for!(RestoreOutput)),
        ("rollBackPromotion", schema_for!(RestoreOutput)),
        ("lookAgain", schema_for!(LookAgainOutput)),
        ("detach", schema_for!(DetachOutput)),
        ("targetHealth", schema_for!(TargetHealthOutput)),
        ("openTestTraffic", schema_for!(test_traffic::OpenedStage)),
        ("closeTestTraffic", schema_for!(test_traffic::ClosedStage)),
    ])
}

/// Seconds since the epoch.
fn now() -> f64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64())
}

/// The weights of the step a rollback interrupted (`canaryWeight` %), if given.
fn step_weights(canary_weight: Option<u8>) -> Result<Option<WeightPair>, ShiftError> {
    canary_weight
        .map(|w| {
            WeightPair::for_canary_percent(w)
                .ok_or_else(|| ShiftError::InvalidInput(format!("canaryWeight {w} is over 100")))
        })
        .transpose()
}

fn to_json(output: impl Serialize) -> Result<Value, ShiftError> {
    serde_json::to_value(output)
        .map_err(|e| ShiftError::InvalidInput(format!("output not serializable: {e}")))
}
