//! Prepare: everything that must hold before any traffic moves, checked with reads only;
//! then, and only then, the canary target group is attached at weight 0 where it is missing
//! (an ALB target group no rule forwards to is "unused" and not health-checked).

use std::collections::HashSet;

use canary_aws::{AwsError, ExecutionsApi, Listed};
use canary_core::alarm_watch::overlaps;
use canary_core::analysis::AnalysisSection;
use canary_core::limits::{join_bounded, MAX_LINE_BYTES};
use canary_core::plan::{allows_canary_in_baseline, ValidPlan};
use canary_core::state::SET_STATE;
use canary_core::{RolloutPlan, TargetWeights, TrafficTarget, WeightPair};
use serde_json::Value;
use tokio::time::Instant;
use tracing::{info, warn};

use crate::error::ShiftError;
use crate::metrics;
use crate::outputs::{ExecutionContext, PrepareOutput, TargetReport};
use crate::traffic::{self, routers, Apis, Inspection, Move, Observed, Reading, TrafficRouter};

pub async fn prepare(
    apis: &Apis<'_>,
    valid: &ValidPlan,
    execution: &ExecutionContext,
) -> Result<PrepareOutput, ShiftError> {
    let ValidPlan { plan, steps } = valid;
    let running = running_plans(
        apis,
        &execution.state_machine_arn,
        Some(&execution.execution_arn),
    )
    .await?;
    refuse_concurrent(plan, &running)?;
    let alarm_overlaps = alarm_overlaps(plan, &running);
    for overlap in &alarm_overlaps {
        warn!(%overlap, "another running rollout watches the same alarms");
    }
    let routers = routers(apis, plan);
    let earlier = Earlier {
        executions: apis.executions,
        state_machine_arn: &execution.state_machine_arn,
    };
    let mut checked = check_routers(&routers, valid, Some(earlier)).await?;

    // Every check passed: the only write prepare makes.
    let settled_by = Instant::now() + traffic::WRITE_IN_EFFECT_WAIT;
    for (router, check) in routers.iter().zip(&mut checked) {
        if check.attach_canary {
            traffic::write(router.as_ref(), &check.reading, check.baseline, Move::Step).await?;
            traffic::settled(router.as_ref(), settled_by).await?;
            check.report.canary_attached = true;
            info!(target_key = %router.key(), "canary target group attached at weight 0");
        }
    }

    let baseline: Vec<TargetWeights> = routers
        .iter()
        .zip(&checked)
        .map(|(router, check)| TargetWeights::new(router.key(), check.baseline))
        .collect();
    metrics::weights(plan, &baseline);
    Ok(PrepareOutput {
        baseline,
        steps: steps.clone(),
        settle_seconds: canary_core::plan::settle_seconds(plan.rollback.as_ref()),
        targets: checked.into_iter().map(|c| c.report).collect(),
        alarm_overlaps,
    })
}

/// Every read-only check prepare makes of the plan's targets, in plan order: they exist,
/// have the shape the plan describes, the stable side takes traffic, and what the target's
/// kind checks (see `TrafficRouter::inspect`). Writes nothing, so the operator CLI's dry run
/// (`cluster-canary plan check`) uses it as is.
pub async fn check_targets(
    apis: &Apis<'_>,
    valid: &ValidPlan,
) -> Result<Vec<TargetCheck>, ShiftError> {
    check_routers(&routers(apis, &valid.plan), valid, None).await
}

/// Where Prepare looks for the earlier rollout that left the canary weighted.
struct Earlier<'a> {
    executions: &'a dyn ExecutionsApi,
    state_machine_arn: &'a str,
}

async fn check_routers(
    routers: &[Box<dyn TrafficRouter + '_>],
    valid: &ValidPlan,
    earlier: Option<Earlier<'_>>,
) -> Result<Vec<TargetCheck>, ShiftError> {
    let shortest_bake = valid
        .steps
        .iter()
        .map(|s| i64::from(s.bake_seconds))
        .min()
        .unwrap_or(0);
    let canary_allowed = allows_canary_in_baseline(valid.plan.rollback.as_ref());
    let mut checked = Vec::with_capacity(routers.len());
    let mut canary_weighted = Vec::new();
    for router in routers {
        let check = check_target(router.as_ref(), shortest_bake).await?;
        if check.baseline.canary > 0 {
            canary_weighted.push(format!("{}: {}", router.label(), check.baseline));
        }
        checked.push(check);
    }
    if !canary_weighted.is_empty() && !canary_allowed {
        let left_by = match earlier {
            // Only said: a lookup that fails leaves the refusal as it is.
            Some(earlier) => left_by_earlier_rollout(earlier, &valid.plan)
                .await
                .unwrap_or_else(|e| {
                    warn!(error = %e, "could not look for the rollout that left the canary weighted");
                    None
                }),
            None => None,
        };
        let back_to_zero = match left_by {
            Some(rollout) => format!(
                "the last rollout of these targets that set a step, {} ({}), ended without \
                 putting its baseline back: `cluster-canary restore {}` does",
                rollout.execution_arn, rollout.status, rollout.execution_arn
            ),
            None => "`cluster-canary list` shows the rollout that left it there, \
                     `cluster-canary restore <execution>` puts its baseline back"
                .to_owned(),
        };
        return Err(ShiftError::TargetMisconfigured {
            path: "trafficTargets".to_owned(),
            message: format!(
                "the canary already receives traffic ({}): a rollback restores the baseline it \
                 starts from, so it would leave that traffic on the new cluster. Put the canary's \
                 weight back to 0 first ({back_to_zero}), or set \
                 `rollback.allowCanaryInBaseline: true` to roll back to these weights on purpose; \
                 nothing was written",
                join_bounded(&canary_weighted, "; ", 5, MAX_LINE_BYTES)
            ),
        });
    }
    Ok(checked)
}

/// The newest rollout of any of `plan`'s targets that ended stopped, failed or timed out after
/// it set a step: what likely left the canary weighted (its safety net may not have run, or
/// was refused). A rollout that ended settled (promoted, rolled back) is not one.
async fn left_by_earlier_rollout(
    earlier: Earlier<'_>,
    plan: &RolloutPlan,
) -> Result<Option<RolloutOnTargets>, AwsError> {
    let ended_abnormally = earlier
        .executions
        .newest(earlier.state_machine_arn, NEWER_LOOKED_AT)
        .await?
        .into_iter()
        .filter(|listed| ["ABORTED", "FAILED", "TIMED_OUT"].contains(&listed.status.as_str()));
    for rollout in sharing_targets(earlier.executions, ended_abnormally, plan).await? {
        if set_a_step(earlier.executions, &rollout).await? {
            return Ok(Some(rollout));
        }
    }
    Ok(None)
}

/// The other RUNNING executions of the state machine, each with its input (a plan).
/// `own_execution` is the asking execution (none for a dry run).
pub async fn running_plans(
    apis: &Apis<'_>,
    state_machine_arn: &str,
    own_execution: Option<&str>,
) -> Result<Vec<(String, Option<String>)>, ShiftError> {
    let running = apis
        .executions
        .running_executions(state_machine_arn)
        .await
        .map_err(|e| ShiftError::aws("execution.stateMachineArn", e))?;
    let mut plans = Vec::new();
    for other in running
        .into_iter()
        .filter(|arn| Some(arn.as_str()) != own_execution)
    {
        let input = apis
            .executions
            .execution_input(&other)
            .await
            .map_err(|e| ShiftError::aws("execution.stateMachineArn", e))?;
        plans.push((other, input));
    }
    Ok(plans)
}

/// Refuses when another RUNNING execution of the same state machine shifts any of the plan's
/// targets (`running`: their plans, as [`running_plans`] reads them). Two executions that
/// start at the same instant may both refuse: the safe side.
pub fn refuse_concurrent(
    plan: &RolloutPlan,
    running: &[(String, Option<String>)],
) -> Result<(), ShiftError> {
    let ours: HashSet<String> = plan
        .traffic_targets
        .iter()
        .map(TrafficTarget::key)
        .collect();
    for (other, input) in running {
        if let Some(target) = target_keys(input.as_deref())
            .into_iter()
            .find(|key| ours.contains(key))
        {
            return Err(ShiftError::ConcurrentRollout {
                execution_arn: other.clone(),
                target,
            });
        }
    }
    Ok(())
}

/// At most this many overlaps are named (then "and N more").
const MAX_OVERLAPS: usize = 5;

/// The running rollouts whose alarm watch overlaps this plan's (`canary_core::alarm_watch::
/// overlaps`): one alarm's change then rolls back both, as documented; said, not refused.
pub fn alarm_overlaps(plan: &RolloutPlan, running: &[(String, Option<String>)]) -> Vec<String> {
    let Some(ours) = plan.analysis.as_ref().and_then(|a| a.alarms.as_ref()) else {
        return Vec::new();
    };
    let lines: Vec<String> = running
        .iter()
        .filter_map(|(arn, input)| {
            let theirs: AnalysisSection = input
                .as_deref()
                .and_then(|text| serde_json::from_str::<Value>(text).ok())
                .and_then(|plan| serde_json::from_value(plan.get("analysis")?.clone()).ok())?;
            let found = overlaps(theirs.alarms.as_ref()?, ours);
            (!found.is_empty()).then(|| {
                format!(
                    "running rollout {arn} watches {}: one alarm's change rolls back both",
                    join_bounded(&found, "; ", MAX_OVERLAPS, MAX_LINE_BYTES)
                )
            })
        })
        .collect();
    lines.into_iter().take(MAX_OVERLAPS).collect()
}

/// The target keys of another execution's input (a plan). Lenient: an input that is not a
/// plan shifts nothing we can recognise, and will fail its own Prepare.
pub fn target_keys(input: Option<&str>) -> Vec<String> {
    let Some(plan) = input.and_then(|text| serde_json::from_str::<Value>(text).ok()) else {
        return Vec::new();
    };
    plan.get("trafficTargets")
        .and_then(Value::as_array)
        .map(|targets| {
            targets
                .iter()
                .filter_map(|t| serde_json::from_value::<TrafficTarget>(t.clone()).ok())
                .map(|t| t.key())
                .collect()
        })
        .unwrap_or_default()
}

/// How many of the state machine's newest executions are looked through for a newer rollout
/// of the same targets.
const NEWER_LOOKED_AT: usize = 100;

/// A rollout of the same targets started after the one asked about.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RolloutOnTargets {
    pub execution_arn: String,
    pub status: String,
    /// The first target it shares.
    pub target: String,
}

impl std::fmt::Display for RolloutOnTargets {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} ({}, shifts {})",
            self.execution_arn, self.status, self.target
        )
    }
}

/// The executions started after `execution_arn` that shift any of `plan`'s targets (running or
/// ended), newest first: writing that execution's baseline could overwrite their weights, or
/// their promotion.
pub async fn newer_rollouts(
    executions: &dyn ExecutionsApi,
    execution_arn: &str,
    plan: &RolloutPlan,
) -> Result<Vec<RolloutOnTargets>, AwsError> {
    let newer = executions
        .started_after(execution_arn, NEWER_LOOKED_AT)
        .await?;
    sharing_targets(executions, newer.into_iter(), plan).await
}

/// Of `listed` (in their order), the executions that shift any of `plan`'s targets.
async fn sharing_targets(
    executions: &dyn ExecutionsApi,
    listed: impl Iterator<Item = Listed>,
    plan: &RolloutPlan,
) -> Result<Vec<RolloutOnTargets>, AwsError> {
    let ours: HashSet<String> = plan
        .traffic_targets
        .iter()
        .map(TrafficTarget::key)
        .collect();
    let mut sharing = Vec::new();
    for other in listed {
        let input = executions.execution_input(&other.arn).await?;
        if let Some(target) = target_keys(input.as_deref())
            .into_iter()
            .find(|key| ours.contains(key))
        {
            sharing.push(RolloutOnTargets {
                execution_arn: other.arn,
                status: other.status,
                target,
            });
        }
    }
    Ok(sharing)
}

/// Whether a newer rollout may have weights of its own on the targets, as a person restoring
/// by hand is told: it runs (it may set a step any moment), or it entered `SetWeights`.
pub async fn may_have_moved(
    executions: &dyn ExecutionsApi,
    newer: &RolloutOnTargets,
) -> Result<bool, AwsError> {
    Ok(newer.status == "RUNNING" || set_a_step(executions, newer).await?)
}

/// Whether a newer rollout has weights of its own on the targets: it entered `SetWeights`
/// (what the safety net, which cannot ask, goes by). One that ended before (refused at
/// Prepare) moved nothing. One that runs but has not set a step yet (in Prepare, waiting for
/// its apps or an approval) must not keep the safety net from restoring either: it may yet be
/// refused, and nothing would then restore (seeded history 126); if it goes on, its first step
/// finds the weights changed under it (compare-and-set) and stops, paging a person.
pub async fn set_a_step(
    executions: &dyn ExecutionsApi,
    newer: &RolloutOnTargets,
) -> Result<bool, AwsError> {
    let history = executions.history(&newer.execution_arn).await?;
    Ok(history.states.iter().any(|state| state.name == SET_STATE))
}

/// What the checks found for one target.
pub struct TargetCheck {
    /// The weights now: what a rollback restores.
    pub baseline: WeightPair,
    /// What the checks read, for the one write prepare may make (attaching the canary).
    reading: Reading,
    /// The canary target group is not in the forward action yet: prepare adds it at weight 0.
    pub attach_canary: bool,
    pub report: TargetReport,
}

async fn check_target(
    router: &dyn TrafficRouter,
    shortest_bake: i64,
) -> Result<TargetCheck, ShiftError> {
    let misconfigured = |message: String| ShiftError::TargetMisconfigured {
        path: router.label().to_owned(),
        message,
    };
    let Inspection {
        reading,
        attach_canary,
        kind,
        sticky,
        ttl_seconds,
        notes,
    } = router.inspect(shortest_bake).await?;
    let mut report = TargetReport {
        target: router.key(),
        kind,
        canary_attached: false,
        sticky,
        ttl_seconds,
        notes,
    };
    let baseline = match &reading.observed {
        Observed::Pair(pair) => *pair,
        Observed::Reshaped(why) => return Err(misconfigured(why.clone())),
    };
    if baseline.stable == 0 {
        return Err(misconfigured(format!(
            "the stable side has weight 0 ({baseline}): there is no traffic to move, and nothing safe to roll back to"
        )));
    }
    if baseline.canary > 0 {
        let note = format!(
            "the canary already receives {:.1} % of the traffic ({baseline}); rollback restores that \
             (rollback.allowCanaryInBaseline)",
            baseline.canary_share_percent()
        );
        warn!(target_key = %report.target, "{note}");
        report.notes.push(note);
    }
    Ok(TargetCheck {
        baseline,
        reading,
        attach_canary,
        report,
    })
}

#[cfg(test)]
mod tests {
    use super::{may_have_moved, newer_rollouts, target_keys};
    use async_trait::async_trait;
    use canary_aws::{
        AwsError, ExecutionHistory, ExecutionListing, ExecutionsApi, Listed, StateEvent,
    };
    use canary_core::RolloutPlan;
    use serde_json::json;

    /// Executions started after the one asked about: each with its input, and whether it
    /// entered SetWeights.
    struct Later(Vec<(Listed, String, bool)>);

    #[async_trait]
    impl ExecutionListing for Later {
        async fn execution_input(&self, arn: &str) -> Result<Option<String>, AwsError> {
            Ok(self
                .0
                .iter()
                .find(|(e, _, _)| e.arn == arn)
                .map(|(_, input, _)| input.clone()))
        }
        async fn newest(&self, _: &str, _: usize) -> Result<Vec<Listed>, AwsError> {
            Ok(self.0.iter().map(|(e, _, _)| e.clone()).collect())
        }
    }

    #[async_trait]
    impl ExecutionsApi for Later {
        async fn running_executions(&self, _: &str) -> Result<Vec<String>, AwsError> {
            Ok(Vec::new())
        }
        async fn history(&self, arn: &str) -> Result<ExecutionHistory, AwsError> {
            let moved = self.0.iter().any(|(e, _, moved)| e.arn == arn && *moved);
            Ok(ExecutionHistory {
                states: moved
                    .then(|| StateEvent {
                        name: "SetWeights".to_owned(),
                        exited: false,
                        input: None,
                        output: None,
                    })
                    .into_iter()
                    .collect(),
                failure_error: None,
                ended: None,
            })
        }
        async fn started_after(&self, _: &str, _: usize) -> Result<Vec<Listed>, AwsError> {
            Ok(self.0.iter().map(|(e, _, _)| e.clone()).collect())
        }
    }

    const L1: &str =
        "arn:aws:elasticloadbalancing:us-east-1:123456789012:listener/app/web/50dc6c495c0c9188/f2f7dc8efc522ab2";
    const L2: &str =
        "arn:aws:elasticloadbalancing:us-east-1:123456789012:listener/app/api/50dc6c495c0c9188/f2f7dc8efc522ab2";

    fn shifting(listener: &str) -> serde_json::Value {
        let group = |name: &str| {
            format!("arn:aws:elasticloadbalancing:us-east-1:123456789012:targetgroup/{name}/73e2d6bc24d8a067")
        };
        json!({
            "cluster": {"name": "green", "region": "us-east-1"},
            "trafficTargets": [{"alb": {"listenerArn": listener, "stableTargetGroupArn": group("blue"), "canaryTargetGroupArn": group("green")}}],
            "steps": [{"weight": 100}],
            "bake": {"seconds": 60, "checkIntervalSeconds": 10},
        })
    }

    fn listed(name: &str, status: &str) -> Listed {
        Listed {
            arn: format!("arn:aws:states:us-east-1:123456789012:execution:m:{name}"),
            status: status.to_owned(),
            started: 2.0,
            stopped: None,
        }
    }

    #[tokio::test]
    async fn a_newer_rollout_is_one_of_the_same_targets_whatever_its_status() {
        let plan = RolloutPlan::parse(shifting(L1)).expect("a valid plan").plan;
        let later = Later(vec![
            (
                listed("promoted", "SUCCEEDED"),
                shifting(L1).to_string(),
                true,
            ),
            (
                listed("elsewhere", "RUNNING"),
                shifting(L2).to_string(),
                true,
            ),
            (listed("not-a-plan", "FAILED"), "{}".to_owned(), false),
        ]);
        let old = "arn:aws:states:us-east-1:123456789012:execution:m:old";
        let newer = newer_rollouts(&later, old, &plan).await.expect("read");
        let described: Vec<String> = newer.iter().map(ToString::to_string).collect();
        assert_eq!(
            described,
            [format!(
                "arn:aws:states:us-east-1:123456789012:execution:m:promoted (SUCCEEDED, shifts {L1})"
            )]
        );
    }

    #[tokio::test]
    async fn only_a_newer_rollout_that_runs_or_set_weights_may_have_moved_traffic() {
        let plan = RolloutPlan::parse(shifting(L1)).expect("a valid plan").plan;
        let later = Later(vec![
            (listed("refused", "FAILED"), shifting(L1).to_string(), false),
            (
                listed("rolled-back", "FAILED"),
                shifting(L1).to_string(),
                true,
            ),
            (
                listed("preparing", "RUNNING"),
                shifting(L1).to_string(),
                false,
            ),
        ]);
        let old = "arn:aws:states:us-east-1:123456789012:execution:m:old";
        let mut moved = Vec::new();
        for newer in newer_rollouts(&later, old, &plan).await.expect("read") {
            moved.push(may_have_moved(&later, &newer).await.expect("read"));
        }
        assert_eq!(moved, [false, true, true]);
    }

    #[test]
    fn other_inputs_are_read_leniently() {
        assert!(target_keys(None).is_empty());
        assert!(target_keys(Some("not json")).is_empty());
        assert!(target_keys(Some(r#"{"trafficTargets": "nope"}"#)).is_empty());
        let input = r#"{"trafficTargets": [
            {"alb": {"listenerArn": "L", "stableTargetGroupArn": "S", "canaryTargetGroupArn": "C"}},
            {"bogus": {}}
        ]}"#;
        assert_eq!(target_keys(Some(input)), ["L"]);
    }
}
