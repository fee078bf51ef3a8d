//! The safety net's sweep: the safety net must not hang on one EventBridge rule. A rule
//! disabled by a person or a drift-fixing tool, or a delivery lost after its retries, leaves a
//! stopped rollout's traffic where it stopped, and nothing else would hear of it. So a schedule
//! (template.yaml, `SafetyNetSweep`, every 5 minutes) runs this: it lists the rollouts that ended
//! ABORTED, FAILED or TIMED_OUT within the last hour (and at least the grace period ago, so
//! that the rule's own delivery goes first), and for each that the safety net would restore
//! ([`assess`]) and whose traffic is still where the rollout left it, puts that traffic back at
//! the baseline, then says so: a `Safety Net Swept` event, the `SafetyNetSweeps` metric (which
//! pages), a log line naming the SafetyNet rule's state.
//!
//! Its scope is narrower than the safety net's, because it acts late and again and again: it
//! only moves a target still at what the rollout last set, or at the step it was setting (a
//! compare-and-set, as after a foreign change). A target found anywhere else was moved since
//! (a person's restore by hand, their own weights, the safety net's restore already) and is
//! left as found. A newer rollout of the same targets that set a step, a promotion, an end
//! the rollout rolled back itself: left alone, as the safety net leaves them.
//!
//! The test-traffic rules are the one thing it also looks for in a rollout that ended
//! SUCCEEDED: such a rollout ran its own ending, weights included, but a `CloseTestTraffic` that
//! failed past its retries does not fail it (a promotion is not undone for a rule), and its rule
//! would send test requests to a cluster nobody judges any more, with nothing else to delete it.

use canary_aws::{EndedExecutions, EventPublisher, Listed, RuleState, RuleStates};
use canary_core::limits::{truncate, MAX_REASON_BYTES};
use canary_core::{TargetWeights, WeightPair};
use serde::Serialize;
use serde_json::json;
use tracing::{info, warn};

use crate::error::ShiftError;
use crate::metrics;
use crate::restore::restore_unchanged;
use crate::safety_net::{
    assess, close_test_traffic, newer_that_moved, plan_of, step_being_set, Assessment,
};
use crate::traffic::{self, routers, Apis, Observed};

/// The statuses of an execution that ended without its own rollback's guarantee.
const ENDS: [&str; 3] = ["ABORTED", "TIMED_OUT", "FAILED"];
/// An execution that ended on its own: only its test-traffic rules are looked for.
const SUCCEEDED: &str = "SUCCEEDED";
/// How many of each status's newest-started executions one sweep lists (one ListExecutions
/// page each).
const LISTED_PER_STATUS: usize = 1000;
/// How many ended executions one sweep reads the history of, the newest ended first: within
/// the function's timeout at a few calls each. The rest wait for the next sweep.
pub const MAX_EXAMINED: usize = 100;

/// The detail-type of the event a sweep's restore is told in.
pub const SWEPT: &str = "Safety Net Swept";

/// What the sweep reads and tells with, beyond the traffic's APIs.
pub struct SweepApis<'a> {
    pub ended: &'a dyn EndedExecutions,
    pub events: &'a dyn EventPublisher,
    pub rules: &'a dyn RuleStates,
}

/// One sweep's parameters (the schedule's input).
pub struct Sweep<'a> {
    /// The rollout state machine.
    pub state_machine_arn: &'a str,
    /// The stack's SafetyNet rule, whose state the sweep tells.
    pub safety_net_rule: Option<&'a str>,
    /// How far back an end is looked at.
    pub within_seconds: u64,
    /// How long after an end the sweep leaves it to the SafetyNet rule's delivery.
    pub grace_seconds: u64,
}

#[derive(Debug, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct SweepOutput {
    /// How many ended executions were looked at.
    pub examined: usize,
    /// Ended executions left for the next sweep (past [`MAX_EXAMINED`]).
    pub deferred: usize,
    /// The SafetyNet rule's state (`ENABLED`, `DISABLED`, `MISSING`), or why it is unknown;
    /// read only when something was swept.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub safety_net_rule: Option<String>,
    /// The executions whose traffic this sweep put back.
    pub swept: Vec<SweptExecution>,
}

#[derive(Debug, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct SweptExecution {
    pub execution_arn: String,
    /// How it ended, and what the sweep did (bounded).
    pub reason: String,
    /// The weights read back.
    pub weights: Vec<TargetWeights>,
}

/// The executions to look at: ended within the window and past the grace period, those that
/// can have left weights (not SUCCEEDED) first, each kind newest ended first, at most
/// [`MAX_EXAMINED`] (the count of the rest).
pub fn to_examine(mut ended: Vec<Listed>, sweep: &Sweep<'_>, now: f64) -> (Vec<Listed>, usize) {
    let oldest = now - sweep.within_seconds as f64;
    let newest = now - sweep.grace_seconds as f64;
    ended.retain(|e| e.stopped.is_some_and(|at| at >= oldest && at <= newest));
    ended.sort_by(|a, b| {
        (a.status == SUCCEEDED)
            .cmp(&(b.status == SUCCEEDED))
            .then_with(|| {
                b.stopped
                    .partial_cmp(&a.stopped)
                    .unwrap_or(std::cmp::Ordering::Equal)
            })
    });
    let deferred = ended.len().saturating_sub(MAX_EXAMINED);
    ended.truncate(MAX_EXAMINED);
    (ended, deferred)
}

pub async fn sweep(
    apis: &Apis<'_>,
    sweeping: &SweepApis<'_>,
    sweep: &Sweep<'_>,
    now: f64,
) -> Result<SweepOutput, ShiftError> {
    let since = now - sweep.within_seconds as f64;
    let mut ended = Vec::new();
    for status in ENDS.into_iter().chain([SUCCEEDED]) {
        ended.extend(
            sweeping
                .ended
                .ended_since(sweep.state_machine_arn, status, since, LISTED_PER_STATUS)
                .await
                .map_err(|e| ShiftError::aws("stateMachineArn", e))?,
        );
    }
    let (ended, deferred) = to_examine(ended, sweep, now);
    // Read once something was swept: the rule's state is what the sweep's tellings say.
    let mut rule = None;
    let mut swept = Vec::new();
    let mut first_error = None;
    for execution in &ended {
        match examine(apis, execution).await {
            Ok(Some(found)) => {
                if rule.is_none() {
                    rule = Some(rule_state(sweeping.rules, sweep.safety_net_rule).await);
                }
                let rule = rule.as_deref().unwrap_or_default();
                tell(sweeping.events, &found, execution, sweep, rule).await;
                swept.push(found.swept);
            }
            Ok(None) => {}
            Err(e) => {
                warn!(execution_arn = %execution.arn, error = %e, "sweep: could not look at or restore it");
                first_error.get_or_insert(e);
            }
        }
    }
    info!(
        examined = ended.len(),
        deferred,
        swept = swept.len(),
        safety_net_rule = rule.as_deref().unwrap_or("not read"),
        "safety net sweep done"
    );
    // Lambda's retries, then the dead-letter queue and its alarm, hear of what failed; the
    // executions already restored are at their baseline and are not written again.
    if let Some(e) = first_error {
        return Err(e);
    }
    Ok(SweepOutput {
        examined: ended.len(),
        deferred,
        safety_net_rule: rule,
        swept,
    })
}

async fn rule_state(rules: &dyn RuleStates, name: Option<&str>) -> String {
    let Some(name) = name else {
        return "not named".to_owned();
    };
    match rules.rule_state(name).await {
        Ok(state) => state.as_str().to_owned(),
        // An AWS error's text: bounded, as it reaches the `Safety Net Swept` event.
        Err(e) => truncate(&format!("unknown ({e})"), MAX_REASON_BYTES),
    }
}

struct Found {
    swept: SweptExecution,
    plan: canary_core::RolloutPlan,
}

/// Whether `execution` left traffic the safety net would have put back (never one that
/// SUCCEEDED), or test-traffic rules, and if so puts the traffic back (only the targets still
/// where it left them) and deletes the rules. The weights first: nothing about the rules may
/// hold them up.
async fn examine(apis: &Apis<'_>, execution: &Listed) -> Result<Option<Found>, ShiftError> {
    let arn = execution.arn.as_str();
    let restored = if execution.status == SUCCEEDED {
        Ok(None)
    } else {
        put_back(apis, execution).await
    };
    let closed = close_test_traffic(apis, arn).await;
    let restored = restored?;
    let rules = closed?;
    if rules.is_empty() {
        return Ok(restored);
    }
    let said = format!(
        "its test-traffic rules were left behind, and the sweep deleted them: {}",
        rules.join(", ")
    );
    Ok(Some(match restored {
        Some(mut found) => {
            found.swept.reason =
                truncate(&format!("{}; {said}", found.swept.reason), MAX_REASON_BYTES);
            found
        }
        None => Found {
            swept: SweptExecution {
                execution_arn: arn.to_owned(),
                reason: truncate(
                    &format!("the execution ended {}; {said}", execution.status),
                    MAX_REASON_BYTES,
                ),
                weights: Vec::new(),
            },
            plan: plan_of(apis, arn).await?,
        },
    }))
}

/// The weights of [`examine`].
async fn put_back(apis: &Apis<'_>, execution: &Listed) -> Result<Option<Found>, ShiftError> {
    let arn = execution.arn.as_str();
    let history = apis
        .executions
        .history(arn)
        .await
        .map_err(|e| ShiftError::aws("executionArn", e))?;
    let (baseline, expected, why) = match assess(Some(&execution.status), &history) {
        Assessment::LeaveAlone(_) => return Ok(None),
        Assessment::Restore {
            baseline,
            expected,
            why,
        } => {
            let expected = expected.unwrap_or_else(|| baseline.clone());
            (baseline, expected, why)
        }
        Assessment::RestoreUnchanged {
            baseline,
            expected,
            why,
        } => (baseline, expected, why),
    };
    let step = step_being_set(&history);
    let plan = plan_of(apis, arn).await?;
    if !left_where_it_was(apis, &plan, &baseline, &expected, step).await? {
        return Ok(None);
    }
    let newer = newer_that_moved(apis, arn, &plan).await?;
    if !newer.is_empty() {
        info!(execution_arn = arn, newer = ?newer, "sweep: a newer rollout of the same targets moved them; left alone");
        return Ok(None);
    }
    warn!(execution_arn = arn, %why, "sweep: traffic still where the rollout left it; restoring the baseline");
    let restored = restore_unchanged(apis, &plan, &baseline, &expected, step).await?;
    metrics::weights(&plan, &restored.weights);
    metrics::safety_net_sweep(&plan);
    let reason = truncate(
        &format!(
            "{why}; its traffic was still where it left it, and the sweep put it back at the \
             baseline{}",
            restored.note
        ),
        MAX_REASON_BYTES,
    );
    Ok(Some(Found {
        swept: SweptExecution {
            execution_arn: arn.to_owned(),
            reason,
            weights: restored.weights,
        },
        plan,
    }))
}

/// Whether some target is away from the baseline at what the rollout last set or the step it
/// was setting: only reads (the restore's hold and writes are for what needs them).
async fn left_where_it_was(
    apis: &Apis<'_>,
    plan: &canary_core::RolloutPlan,
    baseline: &[TargetWeights],
    expected: &[TargetWeights],
    step: Option<WeightPair>,
) -> Result<bool, ShiftError> {
    for router in routers(apis, plan) {
        let key = router.key();
        let weights_of =
            |of: &[TargetWeights]| of.iter().find(|w| w.target == key).map(TargetWeights::pair);
        let Observed::Pair(now) = traffic::observe(router.as_ref()).await? else {
            continue;
        };
        let rollouts = Some(now) == weights_of(expected) || Some(now) == step;
        if rollouts && Some(now) != weights_of(baseline) {
            return Ok(true);
        }
    }
    Ok(false)
}

/// The `Safety Net Swept` event and a log line a person can act on.
async fn tell(
    events: &dyn EventPublisher,
    found: &Found,
    execution: &Listed,
    sweep: &Sweep<'_>,
    rule: &str,
) {
    let rule_named = sweep.safety_net_rule.unwrap_or("(not named)");
    let rule_off = rule != RuleState::Enabled.as_str();
    if execution.status == SUCCEEDED {
        warn!(
            execution_arn = %found.swept.execution_arn,
            "the sweep deleted the test-traffic rules a promoted or rolled-back rollout left"
        );
    } else {
        warn!(
            execution_arn = %found.swept.execution_arn,
            safety_net_rule = rule_named,
            safety_net_rule_state = rule,
            "the sweep restored a rollout its safety net had not{}",
            if rule_off { ": the SafetyNet rule is not enabled" } else { "" }
        );
    }
    let detail = json!({
        "executionArn": found.swept.execution_arn,
        "cluster": found.plan.cluster,
        "status": execution.status,
        "reason": found.swept.reason,
        "weights": found.swept.weights,
        "safetyNetRule": {"name": sweep.safety_net_rule, "state": rule},
    });
    events.put_or_log(SWEPT, &detail).await;
}

#[cfg(test)]
mod tests {
    use super::*;

    fn listed(name: &str, stopped: Option<f64>) -> Listed {
        ended(name, "ABORTED", stopped)
    }

    fn ended(name: &str, status: &str, stopped: Option<f64>) -> Listed {
        Listed {
            arn: format!("arn:aws:states:us-east-1:123456789012:execution:m:{name}"),
            status: status.to_owned(),
            started: 0.0,
            stopped,
        }
    }

    const SWEEP: Sweep<'static> = Sweep {
        state_machine_arn: "arn:aws:states:us-east-1:123456789012:stateMachine:m",
        safety_net_rule: None,
        within_seconds: 3600,
        grace_seconds: 120,
    };

    #[test]
    fn the_window_takes_ends_past_the_grace_period_and_within_the_hour_newest_first() {
        let now = 10_000.0;
        let ended = vec![
            listed("too-recent", Some(now - 60.0)),
            listed("older", Some(now - 1000.0)),
            listed("newer", Some(now - 200.0)),
            listed("too-old", Some(now - 4000.0)),
            listed("running", None),
        ];
        let (examined, deferred) = to_examine(ended, &SWEEP, now);
        let names: Vec<_> = examined
            .iter()
            .map(|e| e.arn.rsplit(':').next().unwrap())
            .collect();
        assert_eq!(names, ["newer", "older"]);
        assert_eq!(deferred, 0);
    }

    #[test]
    fn past_the_cap_the_oldest_ends_wait_for_the_next_sweep() {
        let now = 10_000.0;
        let ended = (0..MAX_EXAMINED + 7)
            .map(|i| listed(&format!("e{i}"), Some(now - 200.0 - i as f64)))
            .collect();
        let (examined, deferred) = to_examine(ended, &SWEEP, now);
        assert_eq!((examined.len(), deferred), (MAX_EXAMINED, 7));
        assert!(examined[0].arn.ends_with(":e0"), "the newest end first");
    }

    #[test]
    fn ends_that_can_have_left_weights_come_before_succeeded_ones() {
        let now = 10_000.0;
        let all = vec![
            ended("promoted", SUCCEEDED, Some(now - 200.0)),
            ended("failed", "FAILED", Some(now - 3000.0)),
            ended("stopped", "ABORTED", Some(now - 1000.0)),
        ];
        let (examined, _) = to_examine(all, &SWEEP, now);
        let names: Vec<_> = examined
            .iter()
            .map(|e| e.arn.rsplit(':').next().unwrap())
            .collect();
        assert_eq!(names, ["stopped", "failed", "promoted"]);
    }
}
