//! The safety net: restoring the baseline of an execution that ended abnormally. Step
//! Functions runs no Catch for a stopped (ABORTED) or timed-out execution, nor for the
//! terminal `States.DataLimitExceeded` and `States.Runtime` errors (FAILED), so an EventBridge
//! rule on the state machine's "Execution Status Change" (ABORTED, TIMED_OUT, FAILED) invokes
//! this. Everything it needs is in the execution itself: the plan is its input, the baseline
//! is what the `PrepareTraffic` state left, the last weights are what the last `SetWeights`
//! state left, and how it ended is the last state it entered and its failure error.
//!
//! It restores unless the execution provably ended with traffic at the baseline or promoted.
//! After a foreign change it restores only the targets still where the rollout left them
//! (the execution's own `RestoreUnchanged` may have failed); a restore is idempotent, so a
//! duplicate delivery rewrites nothing.

use canary_aws::ExecutionHistory;
use canary_core::limits::{join_bounded, MAX_REASON_BYTES};
use canary_core::plan::settle_seconds;
use canary_core::state::{
    ExecutionState, FOREIGN_ENDS, LAST_SET_STATES, PREPARE_STATE, SETTLED_ENDS, SET_STATE,
};
use canary_core::{RolloutPlan, TargetWeights, WeightPair};
use serde_json::Value;
use std::time::Duration;
use tracing::{info, warn};

use crate::error::ShiftError;
use crate::metrics;
use crate::outputs::{RestoreOutput, SafetyNetOutput};
use crate::prepare::{newer_rollouts, set_a_step};
use crate::restore::{
    hold_seconds, look_again, record, record_foreign_change, restore, restore_unchanged, Rollback,
};
use crate::test_traffic;
use crate::traffic::Apis;

/// What the safety net does about one ended execution.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Assessment {
    LeaveAlone(String),
    Restore {
        baseline: Vec<TargetWeights>,
        expected: Option<Vec<TargetWeights>>,
        why: String,
    },
    /// A foreign change stopped it: only the targets still at `expected` (what it last set)
    /// go back to the baseline; the others are left as their writer left them.
    RestoreUnchanged {
        baseline: Vec<TargetWeights>,
        expected: Vec<TargetWeights>,
        why: String,
    },
}

fn state_after(output: Option<&str>) -> Option<ExecutionState> {
    ExecutionState::parse(output?)
}

/// The baseline Prepare read (none before Prepare finished) and the weights the last step or
/// step back set (none before the first).
fn baseline_and_last_set(
    history: &ExecutionHistory,
) -> Option<(Vec<TargetWeights>, Option<Vec<TargetWeights>>)> {
    let exits = || history.states.iter().filter(|s| s.exited);
    let baseline = exits()
        .filter(|s| s.name == PREPARE_STATE)
        .find_map(|s| Some(state_after(s.output.as_deref())?.prepared?.baseline))?;
    let last_set = exits()
        .rev()
        .filter(|s| LAST_SET_STATES.contains(&s.name.as_str()))
        .find_map(|s| Some(state_after(s.output.as_deref())?.last_set?.weights));
    Some((baseline, last_set))
}

/// The step the execution was setting when it ended, if it ended inside `SetWeights` (its
/// input's `cursor.step.weight`): an earlier attempt may have written it, and a target found
/// at it is this rollout's, not a foreign change.
pub fn step_being_set(history: &ExecutionHistory) -> Option<WeightPair> {
    let last = history.states.iter().rev().find(|s| s.name == SET_STATE)?;
    if last.exited {
        return None;
    }
    let input: Value = serde_json::from_str(last.input.as_deref()?).ok()?;
    let weight = u8::try_from(input.pointer("/cursor/step/weight")?.as_u64()?).ok()?;
    WeightPair::for_canary_percent(weight)
}

/// Decides from the history alone (pure, table-tested).
pub fn assess(status: Option<&str>, history: &ExecutionHistory) -> Assessment {
    let exits = || history.states.iter().filter(|s| s.exited);
    let Some((baseline, expected)) = baseline_and_last_set(history) else {
        return Assessment::LeaveAlone(
            "the execution ended before Prepare finished: no traffic had moved".to_owned(),
        );
    };
    let last_entered = history.states.iter().rev().find(|s| !s.exited);
    let at = last_entered.map_or("an unknown state", |s| s.name.as_str());
    let foreign_end = |end: &str, how: &str| {
        FOREIGN_ENDS
            .iter()
            .find(|(name, _)| *name == end)
            .map(|(state, why)| Assessment::RestoreUnchanged {
                // Before its first step, what it last set is the baseline itself.
                expected: expected.clone().unwrap_or_else(|| baseline.clone()),
                baseline: baseline.clone(),
                why: format!("the execution ended in {state}: {why}{how}"),
            })
    };
    let platform_error = history
        .failure_error
        .as_deref()
        .filter(|e| e.starts_with("States."));
    if status != Some("ABORTED") && status != Some("TIMED_OUT") && platform_error.is_none() {
        if let Some((state, why)) =
            last_entered.and_then(|s| SETTLED_ENDS.iter().find(|(name, _)| *name == s.name))
        {
            return Assessment::LeaveAlone(format!("the execution ended in {state}: {why}"));
        }
        if let Some(assessment) = last_entered.and_then(|s| foreign_end(&s.name, "")) {
            return assessment;
        }
    }
    // The end was decided once an `<End>Outcome` state wrote it; what follows (the cause's
    // wording, the Rollout Failed event) moves no traffic. A platform error or a stop in there
    // must not undo a promotion or overwrite weights someone else changed.
    let decided = exits()
        .rev()
        .find_map(|s| Some(state_after(s.output.as_deref())?.outcome?.end));
    if let Some(end) = decided {
        let how = format!(" (decided before it stopped at {at})");
        if let Some((state, why)) = SETTLED_ENDS.iter().find(|(name, _)| *name == end) {
            return Assessment::LeaveAlone(format!("the execution ended in {state}: {why}{how}"));
        }
        if let Some(assessment) = foreign_end(&end, &how) {
            return assessment;
        }
    }
    let how = match (status, platform_error) {
        (_, Some(error)) => format!("failed with {error} at {at}, which no Catch handles"),
        (Some(status), None) => format!("ended {status} at {at}"),
        (None, None) => format!("ended at {at}"),
    };
    // A rollout that never began a step moved nothing (its Prepare only attaches the canary at
    // weight 0): writing its baseline would overwrite whatever was set since, a restore by hand
    // of an older rollout, say. A step begun and cut short may have written: that restores.
    if expected.is_none() && !history.states.iter().any(|s| s.name == SET_STATE) {
        return Assessment::LeaveAlone(format!(
            "the execution {how} before its first step: no traffic had moved"
        ));
    }
    Assessment::Restore {
        baseline,
        expected,
        why: format!("the execution {how}, without its own rollback"),
    }
}

/// The plan an execution was started with (its input).
pub(crate) async fn plan_of(
    apis: &Apis<'_>,
    execution_arn: &str,
) -> Result<RolloutPlan, ShiftError> {
    let plan: Value = apis
        .executions
        .execution_input(execution_arn)
        .await
        .map_err(|e| ShiftError::aws("executionArn", e))?
        .and_then(|text| serde_json::from_str(&text).ok())
        .ok_or_else(|| {
            ShiftError::InvalidInput(format!(
                "execution {execution_arn} has no JSON input (plan)"
            ))
        })?;
    Ok(RolloutPlan::parse(plan)?.plan)
}

/// Deletes the test-traffic rules an ended execution left (its plan's `testTraffic`), whatever
/// else is done about its weights: a rule sends test requests to a cluster no rollout judges
/// any more. An execution whose input is no valid plan has none.
pub(crate) async fn close_test_traffic(
    apis: &Apis<'_>,
    execution_arn: &str,
) -> Result<Vec<String>, ShiftError> {
    let plan = match plan_of(apis, execution_arn).await {
        Ok(plan) => plan,
        Err(ShiftError::InvalidInput(_) | ShiftError::InvalidPlan(_)) => return Ok(Vec::new()),
        Err(e) => return Err(e),
    };
    let deleted = test_traffic::close(apis.test_rules, &plan, execution_arn).await?;
    if !deleted.is_empty() {
        warn!(execution_arn, deleted = ?deleted, "the ended rollout's test-traffic rules deleted");
    }
    Ok(deleted)
}

/// The newer rollouts of the same targets that set a step (one refused at Prepare, or not
/// there yet, moved nothing and does not count).
pub(crate) async fn newer_that_moved(
    apis: &Apis<'_>,
    execution_arn: &str,
    plan: &RolloutPlan,
) -> Result<Vec<String>, ShiftError> {
    let aws = |e| ShiftError::aws("executionArn", e);
    let mut newer = Vec::new();
    for other in newer_rollouts(apis.executions, execution_arn, plan)
        .await
        .map_err(aws)?
    {
        if set_a_step(apis.executions, &other).await.map_err(aws)? {
            newer.push(other.to_string());
        }
    }
    Ok(newer)
}

/// A fleet that halts with `rollbackPromotedOnHalt` undoes the promotion of each cell it
/// promoted: the targets still at what the rollout last set go back to its baseline and are
/// held there, compare-and-set as after a foreign change (a target someone changed since is
/// left as found and reported). Refused, writing nothing, for a rollout that did not end
/// promoted, one that retired its old cluster (traffic would go back to a cluster detached or
/// deregistered), and one a newer rollout of the same targets followed.
pub async fn roll_back_promotion(
    apis: &Apis<'_>,
    execution_arn: &str,
    cause: &str,
) -> Result<RestoreOutput, ShiftError> {
    let history = apis
        .executions
        .history(execution_arn)
        .await
        .map_err(|e| ShiftError::aws("executionArn", e))?;
    let refuse = |why: String| {
        Err(ShiftError::InvalidInput(format!(
            "not rolling back {execution_arn}: {why}"
        )))
    };
    if history.ended.as_deref() != Some("SUCCEEDED") {
        let ended = history.ended.as_deref().unwrap_or("still running");
        return refuse(format!("it is {ended}, not promoted"));
    }
    let Some((baseline, Some(promoted))) = baseline_and_last_set(&history) else {
        return refuse("its history holds no baseline or promoted weights".to_owned());
    };
    let plan = plan_of(apis, execution_arn).await?;
    if plan.retire.is_some() {
        return refuse("it retired its old cluster after the promotion".to_owned());
    }
    let newer = newer_that_moved(apis, execution_arn, &plan).await?;
    if !newer.is_empty() {
        return refuse(format!(
            "a newer rollout of the same targets ran since: {}",
            join_bounded(&newer, "; ", 5, MAX_REASON_BYTES)
        ));
    }
    warn!(
        execution_arn,
        cause, "rolling back a promotion: the fleet halted"
    );
    let restored = restore_unchanged(apis, &plan, &baseline, &promoted, None).await?;
    if restored.unexpected.is_empty() {
        let why = Rollback {
            cause: cause.to_owned(),
            failed_at: None,
        };
        record(&plan, &restored, &why);
    } else {
        // Someone moved this cell's traffic since its promotion: what they changed is theirs,
        // left as found; no rollback is counted for a cell that did not go back, and the
        // foreign change pages a person as any other does.
        warn!(execution_arn, note = %restored.note, "promotion not rolled back where changed outside its rollout");
        record_foreign_change(&plan, &restored);
    }
    Ok(restored)
}

pub async fn safety_net(
    apis: &Apis<'_>,
    execution_arn: &str,
    status: Option<&str>,
) -> Result<SafetyNetOutput, ShiftError> {
    // The weights first: nothing about the test rules may hold them up. The rules go whatever
    // the weights needed; failing to delete them fails the invocation after the weights are
    // done (Lambda tries it again; a restore done already writes nothing).
    let output = settle_weights(apis, execution_arn, status).await;
    let closed = close_test_traffic(apis, execution_arn).await;
    let output = output?;
    closed?;
    Ok(output)
}

/// What the safety net does about the weights of an ended execution.
async fn settle_weights(
    apis: &Apis<'_>,
    execution_arn: &str,
    status: Option<&str>,
) -> Result<SafetyNetOutput, ShiftError> {
    let aws = |e| ShiftError::aws("executionArn", e);
    let history = apis.executions.history(execution_arn).await.map_err(aws)?;
    let left_alone = |reason: String| {
        info!(execution_arn, status = status.unwrap_or(""), %reason, "safety net: nothing to restore");
        Ok(SafetyNetOutput {
            execution_arn: execution_arn.to_owned(),
            restored: false,
            reason,
            restore: None,
            look_again: None,
        })
    };
    let (baseline, expected, why, leave_foreign) = match assess(status, &history) {
        Assessment::LeaveAlone(reason) => return left_alone(reason),
        Assessment::Restore {
            baseline,
            expected,
            why,
        } => (baseline, expected, why, false),
        Assessment::RestoreUnchanged {
            baseline,
            expected,
            why,
        } => (baseline, Some(expected), why, true),
    };
    let plan = plan_of(apis, execution_arn).await?;
    // A delivery that arrives after a newer rollout of the same targets started (EventBridge
    // and Lambda retry for up to an hour) must not undo its weights or its promotion.
    let newer = newer_that_moved(apis, execution_arn, &plan).await?;
    if !newer.is_empty() {
        return left_alone(format!(
            "{why}, but a newer rollout of the same targets ran or runs since: {}. Its weights \
             (or its promotion) are left alone",
            join_bounded(&newer, "; ", 5, MAX_REASON_BYTES)
        ));
    }
    warn!(execution_arn, status = status.unwrap_or(""), %why, "safety net: restoring the baseline");
    if leave_foreign {
        // No look after a settle period: it would put back the targets left to their writer.
        // Nor a rollback counted: the execution's own `RestoreUnchanged` has almost always
        // done it, and this repeat writes nothing.
        let expected = expected.as_deref().unwrap_or(&baseline);
        let restored =
            restore_unchanged(apis, &plan, &baseline, expected, step_being_set(&history)).await?;
        metrics::weights(&plan, &restored.weights);
        return Ok(SafetyNetOutput {
            execution_arn: execution_arn.to_owned(),
            restored: true,
            reason: format!(
                "{why}: every target still where it left them is at the baseline{}",
                restored.note
            ),
            restore: Some(restored),
            look_again: None,
        });
    }
    let step = step_being_set(&history);
    let restored = restore(apis, &plan, &baseline, expected.as_deref(), step).await?;
    let why_metric = Rollback {
        cause: "SafetyNet".to_owned(),
        failed_at: None,
    };
    record(&plan, &restored, &why_metric);
    // The execution's own look after a restore cannot run (it has ended): this invocation
    // waits the settle period itself, within the function's timeout (the plan caps it at
    // MAX_SETTLE_SECONDS). The restore's hold (GitOps targets) watched already, so it counts
    // toward the settle period: together they stay within the larger of the two.
    let settle = settle_seconds(plan.rollback.as_ref());
    let wait = settle
        .unsigned_abs()
        .saturating_sub(hold_seconds(apis, &plan));
    info!(
        execution_arn,
        settle_seconds = settle,
        wait_seconds = wait,
        "safety net: looking again after the settle period"
    );
    tokio::time::sleep(Duration::from_secs(wait)).await;
    let looked = look_again(apis, &plan, &baseline).await?;
    let reverted = if looked.reverted {
        format!(
            "; after {settle} s something had put weights back ({}), and the baseline was \
             re-asserted (RollbacksReverted)",
            looked.found
        )
    } else {
        String::new()
    };
    Ok(SafetyNetOutput {
        execution_arn: execution_arn.to_owned(),
        restored: true,
        reason: format!(
            "{why}: traffic restored to the baseline{}{reverted}",
            restored.note
        ),
        restore: Some(restored),
        look_again: Some(looked),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use canary_aws::StateEvent;

    fn entered(name: &str) -> StateEvent {
        StateEvent {
            name: name.to_owned(),
            exited: false,
            input: None,
            output: None,
        }
    }

    fn exited(name: &str, output: Value) -> StateEvent {
        StateEvent {
            name: name.to_owned(),
            exited: true,
            input: None,
            output: Some(output.to_string()),
        }
    }

    const BASE: &str = r#"[{"target":"l","stable":100,"canary":0}]"#;

    fn moved_traffic(then: &[&str], error: Option<&str>) -> ExecutionHistory {
        let base: Value = serde_json::from_str(BASE).unwrap();
        let mut states = vec![
            entered("PrepareTraffic"),
            exited(
                "PrepareTraffic",
                serde_json::json!({"prepared": {"baseline": base}}),
            ),
            entered("SetWeights"),
            exited(
                "SetWeights",
                serde_json::json!({"lastSet": {"weights": [{"target":"l","stable":50,"canary":50}]}}),
            ),
        ];
        states.extend(then.iter().map(|n| entered(n)));
        ExecutionHistory {
            states,
            failure_error: error.map(str::to_owned),
            ended: None,
        }
    }

    #[test]
    fn a_stop_during_a_gradual_rollback_restores_knowing_what_the_last_step_back_set() {
        let mut history = moved_traffic(&[], None);
        history.states.extend([
            entered("StepBack"),
            exited(
                "StepBack",
                serde_json::json!({"lastSet": {"weights": [{"target":"l","stable":75,"canary":25}], "steppedBack": true}}),
            ),
            entered("HoldStepBack"),
        ]);
        match assess(Some("ABORTED"), &history) {
            Assessment::Restore { expected, why, .. } => {
                assert_eq!(expected.expect("a last set")[0].canary, 25);
                assert!(why.contains("ended ABORTED at HoldStepBack"), "{why}");
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn settled_ends_are_left_alone_and_every_other_end_restores() {
        let cases: [(&str, &[&str], Option<&str>, bool); 9] = [
            (
                "FAILED",
                &["Restore", "RolledBack"],
                Some("CheckFailed"),
                false,
            ),
            ("SUCCEEDED", &["VerifyPromotion", "Promoted"], None, false),
            // A platform error while building the Fail state's cause: not provably settled.
            ("FAILED", &["RolledBack"], Some("States.Runtime"), true),
            (
                "FAILED",
                &["Evaluate"],
                Some("States.DataLimitExceeded"),
                true,
            ),
            (
                "FAILED",
                &["DescribeCheckFailure"],
                Some("States.Runtime"),
                true,
            ),
            (
                "FAILED",
                &["Restore", "RollbackFailed"],
                Some("RollbackFailed"),
                true,
            ),
            ("ABORTED", &["BakeWait"], None, true),
            ("TIMED_OUT", &["Evaluate"], None, true),
            // Stopped right as it entered a settled state: the state never ran.
            ("ABORTED", &["RolledBack"], None, true),
        ];
        for (status, then, error, restores) in cases {
            let verdict = assess(Some(status), &moved_traffic(then, error));
            assert_eq!(
                matches!(verdict, Assessment::Restore { .. }),
                restores,
                "{status} {then:?} {error:?}: {verdict:?}"
            );
        }
        let Assessment::Restore { expected, why, .. } = assess(
            Some("FAILED"),
            &moved_traffic(&["Evaluate"], Some("States.DataLimitExceeded")),
        ) else {
            panic!("restores")
        };
        assert_eq!(expected.unwrap()[0].canary, 50, "the last weights set");
        assert_eq!(
            why,
            "the execution failed with States.DataLimitExceeded at Evaluate, which no Catch handles, without its own rollback"
        );
    }

    #[test]
    fn an_end_its_outcome_decided_stays_settled_whatever_fails_after() {
        let decided = |end: &str, status: &str, error: Option<&str>| {
            let mut history = moved_traffic(&[], error);
            history.states.extend([
                entered("RetireOldCluster"),
                exited(
                    &format!("{end}Outcome"),
                    serde_json::json!({"outcome": {"End": end, "Error": "SecretNotOwned", "Cause": "…"}}),
                ),
                entered("ReadOutcomeDetail"),
            ]);
            assess(Some(status), &history)
        };
        let verdict = decided("RetireFailed", "FAILED", Some("States.Runtime"));
        assert_eq!(
            verdict,
            Assessment::LeaveAlone(
                "the execution ended in RetireFailed: it was promoted; only retiring the old cluster \
                 failed, and traffic stays on the new cluster (decided before it stopped at ReadOutcomeDetail)"
                    .to_owned()
            )
        );
        // After a foreign change, what it left where it was goes back, whatever ended it.
        let Assessment::RestoreUnchanged { expected, why, .. } =
            decided("ChangedBeforePromotion", "ABORTED", None)
        else {
            panic!("restores the unchanged targets")
        };
        assert_eq!(expected[0].canary, 50, "compared with the last weights set");
        assert!(
            why.starts_with("the execution ended in ChangedBeforePromotion: someone else changed"),
            "{why}"
        );
        // A failed rollback is decided too, but nothing is where it should be: restore.
        assert!(matches!(
            decided("RollbackFailed", "FAILED", Some("States.Runtime")),
            Assessment::Restore { .. }
        ));
    }

    #[test]
    fn a_foreign_change_end_restores_only_what_is_still_where_it_left_it() {
        let verdict = assess(
            Some("FAILED"),
            &moved_traffic(
                &["StoppedByForeignChange"],
                Some("WeightsChangedExternally"),
            ),
        );
        let Assessment::RestoreUnchanged { expected, .. } = verdict else {
            panic!("{verdict:?}")
        };
        assert_eq!(expected[0].canary, 50);
        // Stopped before its first step: what it last set is the baseline, so nothing is its.
        let mut history = moved_traffic(&[], Some("WeightsChangedExternally"));
        history.states.truncate(2);
        history.states.push(entered("StoppedByForeignChange"));
        let Assessment::RestoreUnchanged {
            expected, baseline, ..
        } = assess(Some("FAILED"), &history)
        else {
            panic!("restores the unchanged targets")
        };
        assert_eq!(expected, baseline);
    }

    #[test]
    fn stopped_before_its_first_step_nothing_is_restored_but_a_step_begun_is() {
        let mut history = moved_traffic(&[], None);
        history.states.truncate(2);
        history.states.push(entered("WaitForApproval"));
        assert_eq!(
            assess(Some("ABORTED"), &history),
            Assessment::LeaveAlone(
                "the execution ended ABORTED at WaitForApproval before its first step: no \
                 traffic had moved"
                    .to_owned()
            )
        );
        history.states.push(entered("SetWeights"));
        assert!(matches!(
            assess(Some("ABORTED"), &history),
            Assessment::Restore { expected: None, .. }
        ));
    }

    #[test]
    fn before_prepare_finished_nothing_moved() {
        let history = ExecutionHistory {
            states: vec![entered("Admit"), entered("Init")],
            failure_error: Some("States.Runtime".to_owned()),
            ended: Some("FAILED".to_owned()),
        };
        assert_eq!(
            assess(Some("FAILED"), &history),
            Assessment::LeaveAlone(
                "the execution ended before Prepare finished: no traffic had moved".to_owned()
            )
        );
    }

    fn state(name: &str, exited: bool, input: Option<&str>) -> StateEvent {
        StateEvent {
            name: name.to_owned(),
            exited,
            input: input.map(str::to_owned),
            output: None,
        }
    }

    #[test]
    fn the_step_being_set_is_the_one_entered_and_not_left() {
        let step =
            |weight: u64| serde_json::json!({"cursor": {"step": {"weight": weight}}}).to_string();
        let mut history = ExecutionHistory {
            states: vec![
                state("SetWeights", false, Some(&step(10))),
                state("SetWeights", true, None),
            ],
            ..ExecutionHistory::default()
        };
        assert_eq!(step_being_set(&history), None, "the step was set");
        history
            .states
            .push(state("SetWeights", false, Some(&step(50))));
        assert_eq!(step_being_set(&history), WeightPair::for_canary_percent(50));
        history
            .states
            .push(state("SetWeights", false, Some("not json")));
        assert_eq!(step_being_set(&history), None);
    }
}
