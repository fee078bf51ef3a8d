//! Static checks of `statemachine/rollout.asl.json` against the code and the SAM template.
//! (The definition is executed by moto's Step Functions engine in the end-to-end tests.)

use std::collections::BTreeSet;

use canary_core::argocd::MAX_APPS_POLLS;
use canary_core::gate_timing::MAX_GATE_LOOKS;
use canary_core::limits::{MAX_STEPS, MAX_TOTAL_CHECKS};
use canary_core::state::{
    BASELINE_POINTER, FOREIGN_ENDS, LAST_SET_POINTER, PREPARE_STATE, SETTLED_ENDS, SET_STATE,
};
use canary_core::ErrorName;
use cluster_canary_tests::repo_root;
use serde_json::{json, Value};
use strum::VariantArray;

/// Names only cluster-created raises; it is started by EventBridge, not by the state machine.
const INTAKE_ONLY: [ErrorName; 2] = [ErrorName::InvalidEvent, ErrorName::ProfileNotFound];
/// Error name prefixes Step Functions and its integrations produce themselves.
const BUILT_IN: [&str; 3] = ["States.", "Lambda.", "EventBridge."];

fn definition() -> Value {
    definition_at("statemachine/rollout.asl.json")
}

/// The fleet's state machine (statemachine/fleet.asl.json).
fn fleet_definition() -> Value {
    definition_at("statemachine/fleet.asl.json")
}

fn definition_at(path: &str) -> Value {
    let text = std::fs::read_to_string(repo_root().join(path)).expect("ASL file");
    serde_json::from_str(&text).expect("ASL is JSON")
}

fn states(asl: &Value) -> &serde_json::Map<String, Value> {
    asl["States"].as_object().expect("States")
}

/// Every state, those in Parallel branches and Map item processors too.
fn all_states(asl: &Value) -> Vec<(&String, &Value)> {
    let mut all = Vec::new();
    for (name, state) in states(asl) {
        all.push((name, state));
        for branch in state["Branches"].as_array().into_iter().flatten() {
            all.extend(all_states(branch));
        }
        if state["ItemProcessor"].is_object() {
            all.extend(all_states(&state["ItemProcessor"]));
        }
    }
    all
}

/// The state called `name`, wherever it is (in a Parallel branch too).
fn state_named(asl: &Value, name: &str) -> Value {
    all_states(asl)
        .into_iter()
        .find(|(n, _)| n.as_str() == name)
        .map(|(_, s)| s.clone())
        .unwrap_or_else(|| panic!("no state {name}"))
}

/// The errors Fail states inside Parallel branches raise: they end a branch (and stop the
/// other ones) for the Parallel's Catch to route, e.g. `Approved`.
fn branch_errors(asl: &Value) -> BTreeSet<String> {
    states(asl)
        .values()
        .flat_map(|s| s["Branches"].as_array().into_iter().flatten())
        .flat_map(all_states)
        .filter_map(|(_, s)| s["Error"].as_str().map(str::to_owned))
        .collect()
}

/// Every `ErrorEquals` name, with whether it sits in a Retry.
fn error_equals(asl: &Value) -> Vec<(String, bool)> {
    let mut names = Vec::new();
    for (_, state) in all_states(asl) {
        for (field, retry) in [("Retry", true), ("Catch", false)] {
            for clause in state[field].as_array().into_iter().flatten() {
                for name in clause["ErrorEquals"].as_array().into_iter().flatten() {
                    names.push((name.as_str().expect("a string").to_owned(), retry));
                }
            }
        }
    }
    names
}

#[test]
fn retry_and_catch_name_exactly_the_errors_the_functions_raise() {
    let asl = definition();
    let own = branch_errors(&asl);
    let used: BTreeSet<String> = error_equals(&asl)
        .into_iter()
        .map(|(n, _)| n)
        .filter(|n| !BUILT_IN.iter().any(|p| n.starts_with(p)) && !own.contains(n))
        .collect();
    let raised: BTreeSet<String> = ErrorName::VARIANTS
        .iter()
        .filter(|n| !INTAKE_ONLY.contains(n))
        .map(|n| n.as_str().to_owned())
        .collect();
    let unknown: Vec<_> = used.difference(&raised).collect();
    let unhandled: Vec<_> = raised.difference(&used).collect();
    assert!(
        unknown.is_empty(),
        "the state machine names errors no function raises: {unknown:?}"
    );
    assert!(
        unhandled.is_empty(),
        "errors the functions raise that the state machine never names: {unhandled:?}"
    );
}

#[test]
fn retryable_errors_are_retried_and_nothing_else_is_retried_by_name() {
    let names = error_equals(&definition());
    for name in ErrorName::VARIANTS
        .iter()
        .copied()
        .filter(|n| n.is_retryable())
    {
        assert!(
            names.contains(&(name.as_str().to_owned(), true)),
            "{name} is never retried"
        );
    }
    for (name, retry) in &names {
        let permanent = ErrorName::VARIANTS
            .iter()
            .any(|n| n.as_str() == name && !n.is_retryable());
        // Restore names InvalidInput/InvalidPlan in a Retry with MaxAttempts 0: not a retry.
        if *retry && permanent {
            let zero = all_states(&definition()).iter().any(|(_, s)| {
                s["Retry"].as_array().into_iter().flatten().any(|c| {
                    c["MaxAttempts"] == 0
                        && c["ErrorEquals"]
                            .as_array()
                            .unwrap()
                            .iter()
                            .any(|n| n == name.as_str())
                })
            });
            assert!(zero, "{name} is permanent but retried");
        }
    }
}

#[test]
fn every_lambda_task_retries_lambda_service_errors() {
    for asl in [definition(), fleet_definition()] {
        lambda_tasks_retry_lambda_service_errors(&asl);
    }
    assert!(branch_errors(&definition()).contains("Approved"));
}

fn lambda_tasks_retry_lambda_service_errors(asl: &Value) {
    let in_branches: BTreeSet<&String> = states(asl)
        .values()
        .flat_map(|s| s["Branches"].as_array().into_iter().flatten())
        .flat_map(all_states)
        .map(|(name, _)| name)
        .collect();
    for (name, state) in all_states(asl) {
        if state["Resource"] != "arn:aws:states:::lambda:invoke" {
            continue;
        }
        let retried: Vec<&str> = state["Retry"]
            .as_array()
            .into_iter()
            .flatten()
            .flat_map(|c| {
                c["ErrorEquals"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .filter_map(Value::as_str)
            })
            .collect();
        assert!(
            retried.contains(&"Lambda.TooManyRequestsException") || retried.contains(&"States.ALL"),
            "{name} does not retry Lambda throttling"
        );
        // A task in a Parallel branch fails the branch; the Parallel's Catch handles it.
        assert!(
            state["Catch"].is_array() || in_branches.contains(name),
            "{name} has no Catch"
        );
    }
}

#[test]
fn the_watch_while_waiting_for_approval_checks_like_the_bake() {
    let asl = definition();
    let all = all_states(&asl);
    let find = |wanted: &str| state_named(&asl, wanted);
    let (mut bake, mut watch) = (find("Evaluate"), find("WatchEvaluate"));
    assert_eq!(
        watch["Parameters"]["Payload"]["progress"]["checks"], 0,
        "no last check"
    );
    for state in [&mut bake, &mut watch] {
        let object = state.as_object_mut().unwrap();
        for differs in ["Catch", "Next", "Comment"] {
            object.remove(differs);
        }
        object["Parameters"]["Payload"]["progress"]
            .as_object_mut()
            .unwrap()
            .remove("checks");
    }
    assert_eq!(bake, watch);
    // The approver's answer never enters the state; the wait is the plan's timeout; the token
    // goes to the waiting task only, never into the event.
    let wait = find("WaitForApproval");
    assert_eq!(
        wait["Resource"],
        "arn:aws:states:::lambda:invoke.waitForTaskToken"
    );
    assert_eq!(
        wait["Parameters"]["Payload"]["taskToken.$"],
        "$$.Task.Token"
    );
    assert_eq!(wait["ResultPath"], Value::Null);
    assert_eq!(
        wait["TimeoutSecondsPath"],
        "$.cursor.step.approvalTimeoutSeconds"
    );
    let retried: Vec<&str> = wait["Retry"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|c| c["ErrorEquals"].as_array().unwrap())
        .filter_map(Value::as_str)
        .collect();
    assert!(
        retried.iter().all(|e| e.starts_with("Lambda.")),
        "never a rejection or a timeout: {retried:?}"
    );
    // A token goes only to the `.waitForTaskToken` task it belongs to: the approval's, and
    // the alarm watches', each to evaluate-alarms (never into an event, a log or the state).
    let with_token: Vec<(&String, &Value)> = all
        .iter()
        .copied()
        .filter(|(_, s)| s["Type"] == "Task")
        .filter(|(_, s)| serde_json::to_string(s).unwrap().contains("$$.Task.Token"))
        .collect();
    let names: BTreeSet<&str> = with_token.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(
        names,
        BTreeSet::from(["WaitForApproval", "WatchAlarms", "WatchAlarmsWhileWaiting"])
    );
    for (name, state) in with_token {
        assert_eq!(
            state["Resource"], "arn:aws:states:::lambda:invoke.waitForTaskToken",
            "{name}"
        );
        assert_eq!(
            state["Parameters"]["Payload"]["taskToken.$"], "$$.Task.Token",
            "{name}"
        );
        assert_eq!(state["ResultPath"], Value::Null, "{name}");
    }
}

/// The alarm watch beside the bake's checks and the approval wait: an alarm's event fails it
/// with the check's own error (a critical alarm's, in a bake, with the error that keeps its
/// rollback from being gradual), and nothing else the watch meets fails the rollout.
#[test]
fn the_alarm_watches_fail_only_with_the_checks_error() {
    use canary_core::alarm_watch::{CHECK_FAILED, CRITICAL_CHECK_FAILED};
    let asl = definition();
    let find = |wanted: &str| state_named(&asl, wanted);
    let bake_fired = [
        (vec![CHECK_FAILED], "AlarmFired", CHECK_FAILED),
        (
            vec![CRITICAL_CHECK_FAILED],
            "CriticalAlarmFired",
            CRITICAL_CHECK_FAILED,
        ),
    ];
    // An approval wait's failure is never rolled back gradually: one end for both.
    let waiting_fired = [(
        vec![CHECK_FAILED, CRITICAL_CHECK_FAILED],
        "AlarmFiredWhileWaiting",
        CHECK_FAILED,
    )];
    for (watch, fired, unavailable, during) in [
        (
            "WatchAlarms",
            &bake_fired[..],
            "AlarmWatchUnavailable",
            "bake",
        ),
        (
            "WatchAlarmsWhileWaiting",
            &waiting_fired[..],
            "AlarmWatchUnavailableWhileWaiting",
            "approval",
        ),
    ] {
        let state = find(watch);
        assert_eq!(state["Parameters"]["Payload"]["operation"], "watchAlarms");
        assert_eq!(state["Parameters"]["Payload"]["during"], during);
        assert!(
            state.get("TimeoutSeconds").is_none() && state.get("TimeoutSecondsPath").is_none(),
            "{watch} waits until its Parallel ends"
        );
        let catch = state["Catch"].as_array().unwrap();
        assert_eq!(catch.len(), fired.len() + 1, "{watch}");
        for (caught, (errors, end, error)) in catch.iter().zip(fired) {
            assert_eq!(caught["ErrorEquals"], serde_json::json!(errors), "{watch}");
            assert_eq!(caught["Next"], *end, "{watch}");
            assert_eq!(find(end)["Error"], *error, "{end}");
        }
        let last = &catch[fired.len()];
        assert_eq!(last["ErrorEquals"], serde_json::json!(["States.ALL"]));
        assert_eq!(last["Next"], unavailable);
        assert_eq!(state["Next"], unavailable);
        assert_eq!(find(unavailable)["Type"], "Succeed");
    }
    // The bake's checks end their branch with the same error the watch does.
    assert_eq!(
        find("BakeCheckFailed")["Error"],
        canary_core::alarm_watch::CHECK_FAILED
    );
    let bake = &states(&asl)["Bake"];
    let routed: Vec<(String, String)> = bake["Catch"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            (
                c["ErrorEquals"][0].as_str().unwrap().to_owned(),
                c["Next"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    assert_eq!(
        routed,
        [
            ("BakePassed".to_owned(), "NotAsked".to_owned()),
            ("BakeAsks".to_owned(), "Asked".to_owned()),
            (
                "WeightsChangedExternally".to_owned(),
                "MovedUnderCheckOutcome".to_owned()
            ),
            ("CheckFailed".to_owned(), "DescribeCheckFailure".to_owned()),
            (
                "FrozenTooLong".to_owned(),
                "DescribeFrozenTooLong".to_owned()
            ),
            ("States.ALL".to_owned(), "DescribeTaskFailure".to_owned()),
        ]
    );
}

/// Every check (a bake's, an approval wait's) reads where traffic is before it judges: a target
/// not where the rollout last set it stops the rollout as a foreign change at SetWeights does.
#[test]
fn every_check_looks_at_where_traffic_is() {
    let asl = definition();
    for check in ["Evaluate", "WatchEvaluate"] {
        let payload = &state_named(&asl, check)["Parameters"]["Payload"];
        assert_eq!(payload["expected.$"], "$.lastSet.weights", "{check}");
    }
    let foreign = |state: &str| -> Vec<String> {
        states(&asl)[state]["Catch"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|c| c["ErrorEquals"] == serde_json::json!(["WeightsChangedExternally"]))
            .map(|c| c["Next"].as_str().unwrap().to_owned())
            .collect()
    };
    assert_eq!(foreign("SetWeights"), ["StoppedByForeignChangeOutcome"]);
    for parallel in ["Bake", "AwaitApproval"] {
        assert_eq!(foreign(parallel), ["MovedUnderCheckOutcome"], "{parallel}");
    }
    let (at_set, at_check) = (
        &states(&asl)["StoppedByForeignChangeOutcome"]["Parameters"],
        &states(&asl)["MovedUnderCheckOutcome"]["Parameters"],
    );
    assert_eq!(at_set["End"], at_check["End"], "the same settled end");
    assert_eq!(at_set["Error"], at_check["Error"]);
}

/// A restore's first attempt that fails says so at once (Rollback Failing, and the function's
/// RestoreFailures metric pages) and is then retried hard; only bad input, which retrying
/// cannot fix, ends RollbackFailed straight away. Watching the history, `cluster-canary watch`
/// says it too (cli/src/progress.rs).
#[test]
fn a_failing_restore_is_said_at_its_first_attempt_then_retried_hard() {
    let asl = definition();
    let s = states(&asl);
    let first = &s["Restore"];
    let catches = first["Catch"].as_array().expect("Restore catches");
    assert_eq!(
        catches[0]["ErrorEquals"],
        json!(["InvalidInput", "InvalidPlan"])
    );
    assert_eq!(catches[0]["Next"], "RollbackFailedOutcome");
    assert_eq!(catches[1]["ErrorEquals"], json!(["States.ALL"]));
    assert_eq!(catches[1]["ResultPath"], "$.restoreFailing");
    assert_eq!(catches[1]["Next"], "NotifyRollbackFailing");
    let notify = &s["NotifyRollbackFailing"];
    assert_eq!(
        notify["Parameters"]["Entries"][0]["DetailType"],
        "Rollback Failing"
    );
    assert_eq!(notify["Next"], "RestoreRetried");
    assert_eq!(
        notify["Catch"][0]["Next"], "RestoreRetried",
        "never holds up the rollback"
    );
    let retried = &s["RestoreRetried"];
    assert_eq!(
        retried["Parameters"], first["Parameters"],
        "the same restore"
    );
    assert_eq!(retried["Retry"][1]["MaxAttempts"], 20);
    assert_eq!(retried["Catch"][0]["Next"], "RollbackFailedOutcome");
    assert_eq!(retried["Next"], first["Next"]);
}

/// After the rollback's restore and its events: wait the settle period, look again, and say so
/// when the baseline had been undone. A failed look is a failed rollback (the safety net then
/// tries again), never a quiet end.
#[test]
fn a_rollback_looks_again_after_its_settle_period() {
    let asl = definition();
    let s = states(&asl);
    assert_eq!(s["NotifyRolledBack"]["Next"], "SettleAfterRestore");
    assert_eq!(
        s["NotifyRolledBack"]["Catch"][0]["Next"],
        "SettleAfterRestore"
    );
    assert_eq!(
        s["SettleAfterRestore"]["SecondsPath"],
        "$.prepared.settleSeconds"
    );
    assert_eq!(
        s["PrepareTraffic"]["ResultSelector"]["settleSeconds.$"],
        "$.Payload.settleSeconds"
    );
    let look = &s["LookAfterRestore"];
    assert_eq!(look["Parameters"]["Payload"]["operation"], "lookAgain");
    assert_eq!(
        look["Retry"], s["RestoreRetried"]["Retry"],
        "retried as hard as the restore"
    );
    assert_eq!(look["Catch"][0]["Next"], "RollbackFailedOutcome");
    assert_eq!(look["Next"], "Reverted?");
    assert_eq!(
        s["Reverted?"]["Choices"][0]["Next"],
        "NotifyRollbackReverted"
    );
    assert_eq!(s["Reverted?"]["Default"], "RolledBack");
    assert_eq!(s["NotifyRollbackReverted"]["Next"], "RolledBack");
}

#[test]
fn every_substitution_is_defined_and_every_definition_used() {
    let asl_text = [
        "statemachine/rollout.asl.json",
        "statemachine/fleet.asl.json",
    ]
    .map(|path| std::fs::read_to_string(repo_root().join(path)).unwrap())
    .concat();
    let used: BTreeSet<String> = asl_text
        .split("${")
        .skip(1)
        .filter_map(|rest| rest.split_once('}').map(|(name, _)| name.to_owned()))
        .collect();
    let template = std::fs::read_to_string(repo_root().join("template.yaml")).unwrap();
    let mut defined = BTreeSet::new();
    let mut block_indent = None;
    for line in template.lines() {
        let indent = line.len() - line.trim_start().len();
        match block_indent {
            None if line.trim() == "DefinitionSubstitutions:" => block_indent = Some(indent),
            Some(outer) if indent > outer && !line.trim().is_empty() => {
                if let Some((key, _)) = line.trim().split_once(':') {
                    defined.insert(key.to_owned());
                }
            }
            Some(_) => block_indent = None,
            None => {}
        }
    }
    assert!(
        !defined.is_empty(),
        "no DefinitionSubstitutions found in template.yaml"
    );
    assert_eq!(
        used, defined,
        "ASL ${{…}} placeholders vs template DefinitionSubstitutions"
    );
}

#[test]
fn the_safety_net_finds_what_it_reads_in_the_history() {
    let asl = definition();
    let prepare = &states(&asl)[PREPARE_STATE];
    let set = &states(&asl)[SET_STATE];
    for (state, pointer) in [(prepare, BASELINE_POINTER), (set, LAST_SET_POINTER)] {
        let (path, field) = pointer.trim_start_matches('/').split_once('/').unwrap();
        assert_eq!(state["ResultPath"], format!("$.{path}"), "{pointer}");
        assert!(
            state["ResultSelector"].get(format!("{field}.$")).is_some(),
            "{pointer}"
        );
    }
}

/// History events a state adds each time it runs (entered + exited, and for a task
/// scheduled + started + succeeded).
fn events(state: &Value) -> usize {
    match state["Type"].as_str() {
        Some("Task") => 5,
        _ => 2,
    }
}

#[test]
fn a_long_rollout_stays_under_the_history_limit() {
    let asl = definition();
    let s = states(&asl);
    let bake_branches: Vec<&Value> = s["Bake"]["Branches"].as_array().unwrap().iter().collect();
    let checks = states(bake_branches[0]);
    let per_check: usize = ["BakeWait", "Evaluate", "CheckVerdict?"]
        .iter()
        .map(|n| events(&checks[*n]))
        .sum();
    // The bake's Parallel (4 events), each branch's states once but the checks, and the rest.
    let bake_once: usize = 4 + bake_branches
        .iter()
        .map(|b| states(b).values().map(events).sum::<usize>())
        .sum::<usize>()
        - per_check;
    let per_step: usize = [
        "StepSetup",
        "ApprovalNeeded?",
        "SetWeights",
        "NotifyShifted",
        "AfterStepHooks?",
        "RunAfterStepHooks",
        "NotAsked",
        "NextStep",
        "MoreSteps?",
    ]
    .iter()
    .map(|n| events(&s[*n]))
    .sum::<usize>()
        + bake_once;
    // Every state once, plus execution start/end, plus a gradual rollback's loop run again for
    // each of its steps back but the first (the most a plan allows: limits::MAX_STEPS_BACK).
    let step_back_loop: usize = [
        "StepBack",
        "SteppedBack?",
        "NotifySteppedBack",
        "HoldStepBack",
    ]
    .iter()
    .map(|n| events(&s[*n]))
    .sum();
    assert_eq!(
        step_back_loop, 14,
        "update the history budget in docs/architecture.md"
    );
    let fixed: usize = s.values().map(events).sum::<usize>()
        + 2
        + (canary_core::limits::MAX_STEPS_BACK - 1) * step_back_loop;
    assert_eq!(
        (per_check, per_step),
        (9, 54),
        "update the history budget in docs/architecture.md"
    );
    let history = |steps: usize, checks_per_step: usize| {
        fixed + steps * (per_step + checks_per_step * per_check)
    };
    // docs/architecture.md's example: 10 steps baking 1 h, checked every 30 s.
    assert!(history(10, 3600 / 30) < 25_000, "{}", history(10, 120));
    let per_target_health_look: usize = [
        "TargetHealth",
        "TargetsHealthy?",
        "WaitForTargets",
        "CountTargetsPoll",
    ]
    .iter()
    .map(|n| events(&s[*n]))
    .sum();
    let per_readiness_look: usize = [
        "ClusterReadiness",
        "ClusterReady?",
        "WaitForClusterReadiness",
        "CountReadinessPoll",
    ]
    .iter()
    .map(|n| events(&s[*n]))
    .sum();
    let per_apps_poll: usize = ["AppsStatus", "AppsReady?", "WaitForApps", "CountAppsPoll"]
        .iter()
        .map(|n| events(&s[*n]))
        .sum();
    // A step that waits for approval: the Parallel (4 events) and every state of its
    // branches once (the watch's checks are counted in MAX_TOTAL_CHECKS), and the states after.
    let branches: usize = s["AwaitApproval"]["Branches"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| states(b).values().map(events).sum::<usize>())
        .sum();
    // Asked about by the comparison: `AskSetup` before the same wait.
    let per_approval = 4
        + branches
        + events(&s["AskSetup"])
        + events(&s["OnApprovalTimeout?"])
        + events(&s["ApprovalTimeoutFails"]);
    // The most a valid plan allows.
    let worst = fixed
        + MAX_APPS_POLLS as usize * per_apps_poll
        + MAX_GATE_LOOKS as usize * (per_target_health_look + per_readiness_look)
        + MAX_STEPS * (per_step + per_approval)
        + MAX_TOTAL_CHECKS as usize * per_check;
    assert!(
        worst < 25_000,
        "the plan limits allow {worst} history events"
    );
}

#[test]
fn the_execution_times_out_after_the_longest_run_the_plan_caps_allow() {
    let asl = definition();
    assert_eq!(
        asl["TimeoutSeconds"].as_u64(),
        Some(canary_core::limits::max_execution_seconds()),
        "set the definition's TimeoutSeconds to canary_core::limits::max_execution_seconds()"
    );
    let s = states(&asl);
    assert_eq!(
        s["WaitForCluster"]["Seconds"].as_u64(),
        Some(canary_core::limits::CLUSTER_POLL_SECONDS)
    );
    assert_eq!(
        s["ClusterActive?"]["Choices"][2]["NumericGreaterThanEquals"].as_u64(),
        Some(canary_core::limits::MAX_CLUSTER_POLLS)
    );
}

#[test]
fn the_safety_net_knows_every_terminal_state() {
    let asl = definition();
    let terminal: BTreeSet<&str> = states(&asl)
        .iter()
        .filter(|(_, s)| matches!(s["Type"].as_str(), Some("Fail" | "Succeed")))
        .map(|(name, _)| name.as_str())
        .collect();
    let settled: BTreeSet<&str> = SETTLED_ENDS.iter().map(|(name, _)| *name).collect();
    let foreign: BTreeSet<&str> = FOREIGN_ENDS.iter().map(|(name, _)| *name).collect();
    // RollbackFailed is the one other terminal state the safety net acts on: it tries again.
    let acted_on: BTreeSet<&str> = terminal.difference(&settled).copied().collect();
    let expected: BTreeSet<&str> = foreign.iter().copied().chain(["RollbackFailed"]).collect();
    assert_eq!(acted_on, expected);
    assert!(settled.is_subset(&terminal), "{settled:?} vs {terminal:?}");
}

/// The safety net reads the end an `<End>Outcome` state decided (`$.outcome.End`): each state
/// that writes `$.outcome` names a terminal state, or carries the decided end on.
#[test]
fn every_outcome_names_its_terminal_state_and_keeps_it() {
    let asl = definition();
    let all = states(&asl);
    let writers: Vec<_> = all
        .iter()
        .filter(|(_, s)| s["ResultPath"] == "$.outcome")
        .collect();
    assert!(writers.len() >= 9, "{writers:?}");
    for (name, state) in writers {
        let params = &state["Parameters"];
        match (params["End"].as_str(), params["End.$"].as_str()) {
            (Some(end), None) => assert_eq!(
                all.get(end).and_then(|s| s["Type"].as_str()),
                Some("Fail"),
                "{name}: End {end} is no Fail state"
            ),
            (None, Some(path)) => assert_eq!(path, "$.outcome.End", "{name}"),
            other => panic!("{name}: no End: {other:?}"),
        }
    }
}

/// Every `putEvents` entry of the definition, as (detail-type, detail keys).
fn published_events(asl: &Value) -> Vec<(String, BTreeSet<String>)> {
    all_states(asl)
        .into_iter()
        .filter(|(_, s)| {
            s["Resource"]
                .as_str()
                .is_some_and(|r| r.starts_with("arn:aws:states:::events:putEvents"))
        })
        .flat_map(|(_, s)| s["Parameters"]["Entries"].as_array().unwrap().clone())
        .map(|entry| {
            assert_eq!(entry["Source"], "cluster-canary");
            let keys = entry["Detail"]
                .as_object()
                .expect("a Detail object")
                .keys()
                .map(|k| k.trim_end_matches(".$").to_owned())
                .collect();
            (entry["DetailType"].as_str().unwrap().to_owned(), keys)
        })
        .collect()
}

#[test]
fn every_event_the_definition_publishes_has_its_schema_and_matches_it() {
    let dir = repo_root().join("schema/events");
    let mut documented: BTreeSet<String> = std::fs::read_dir(&dir)
        .expect("schema/events")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .collect();
    let (rollout, fleet) = (definition(), fleet_definition());
    let published = published_events(&rollout)
        .into_iter()
        .chain(published_events(&fleet));
    for (detail_type, keys) in published {
        let file = format!(
            "{}.schema.json",
            detail_type.to_lowercase().replace(' ', "-")
        );
        let text = std::fs::read_to_string(dir.join(&file))
            .unwrap_or_else(|_| panic!("no schema/events/{file} for `{detail_type}`"));
        let schema: Value = serde_json::from_str(&text).expect("schema is JSON");
        let properties: BTreeSet<String> = schema["properties"]
            .as_object()
            .unwrap()
            .keys()
            .cloned()
            .collect();
        let required: BTreeSet<String> = schema["required"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r.as_str().unwrap().to_owned())
            .collect();
        assert_eq!(
            keys, properties,
            "`{detail_type}`: the definition's detail vs {file}"
        );
        assert!(
            required.is_subset(&keys),
            "`{detail_type}`: {required:?} vs {keys:?}"
        );
        documented.remove(&file);
    }
    // Put by functions, not a state machine (each checked against its schema in the
    // end-to-end tests): cluster-created's `Rollout Not Started`, evaluate-alarms' `Instant
    // Rollback Off` (tests/e2e/test_iam.py), fleet-waves' `Cell Failed` and `Fleet Stopped`
    // (tests/e2e/test_fleets.py), the freezes' `Rollout Frozen`, `Wave Frozen`, and the
    // CLI's `Rollouts Frozen` and `Rollouts Unfrozen` (tests/e2e/test_freezes.py), and
    // shift-weights' `Safety Net Swept` (tests/e2e/test_sweep.py).
    for sent_by_a_function in [
        "rollout-not-started.schema.json",
        "instant-rollback-off.schema.json",
        "cell-failed.schema.json",
        "fleet-stopped.schema.json",
        "rollout-frozen.schema.json",
        "wave-frozen.schema.json",
        "rollouts-frozen.schema.json",
        "rollouts-unfrozen.schema.json",
        "safety-net-swept.schema.json",
    ] {
        assert!(
            documented.remove(sent_by_a_function),
            "{sent_by_a_function}"
        );
    }
    assert!(
        documented.is_empty(),
        "schemas of events never sent: {documented:?}"
    );
}

#[test]
fn the_fleet_runs_each_wave_as_a_distributed_map_of_child_rollouts() {
    let fleet = fleet_definition();
    let wave = state_named(&fleet, "RunWave");
    assert_eq!(
        wave["ItemProcessor"]["ProcessorConfig"]["Mode"],
        "DISTRIBUTED"
    );
    assert_eq!(wave["MaxConcurrencyPath"], "$.next.wave.maxConcurrency");
    let cell = &wave["ItemProcessor"]["States"]["RunCell"];
    assert_eq!(
        cell["Resource"],
        "arn:aws:states:::states:startExecution.sync:2"
    );
    assert_eq!(
        cell["Parameters"]["StateMachineArn"],
        "${RolloutStateMachineArn}"
    );
    // Every iteration ends with what the judge reads: a cell and one of its statuses.
    let statuses: BTreeSet<&str> = all_states(&wave["ItemProcessor"])
        .into_iter()
        .filter(|(_, s)| s["End"] == true)
        .map(|(name, s)| {
            assert_eq!(s["Type"], "Pass", "{name}");
            assert_eq!(s["Parameters"]["cell.$"], "$.cell", "{name}");
            s["Parameters"]["status"].as_str().expect("a status")
        })
        .collect();
    assert_eq!(
        statuses,
        BTreeSet::from(["promoted", "notPromoted", "notStarted"])
    );
    // The fleet's function is asked only what it answers.
    let ops: BTreeSet<&str> = all_states(&fleet)
        .into_iter()
        .filter_map(|(_, s)| s["Parameters"]["Payload"]["op"].as_str())
        .collect();
    assert_eq!(
        ops,
        BTreeSet::from([
            "wave",
            "freeze",
            "admit",
            "halt",
            "judge",
            "soak",
            "awaitApproval",
            "notApproved",
            "promoted",
            "rolledBack"
        ])
    );
}

/// Step Functions caps every state's data and task input at 256 KiB, and an input may come at
/// the cap: the first state sends it to the function as it came and puts the answer (or the
/// refusal) in its place, so a plan it refuses never grows past the cap first (that would end
/// the execution States.DataLimitExceeded, which nothing catches).
#[test]
fn the_first_state_adds_nothing_to_an_input_it_may_refuse() {
    for (machine, function) in [
        (definition(), "${EvaluateAlarmsFunctionArn}"),
        (fleet_definition(), "${FleetWavesFunctionArn}"),
    ] {
        let first = state_named(&machine, machine["StartAt"].as_str().expect("StartAt"));
        assert_eq!(first["Resource"], function, "invoked directly");
        for grows in ["Parameters", "InputPath", "ResultSelector"] {
            assert!(first.get(grows).is_none(), "{grows}");
        }
        assert_eq!(first["ResultPath"], "$");
        for catch in first["Catch"].as_array().expect("Catch") {
            assert_eq!(catch["ResultPath"], "$", "{catch}");
        }
    }
}

/// A gradual rollback (`rollback.gradual`) follows only a bake's failed check that no critical
/// alarm caused; every way out of its loop, and every other failure, is the restore.
#[test]
fn only_a_bakes_failed_check_rolls_back_gradually_and_every_way_out_restores() {
    use canary_core::alarm_watch::{CHECK_FAILED, CRITICAL_CHECK_FAILED};
    let asl = definition();
    let s = states(&asl);
    assert_eq!(
        state_named(&asl, "BakeCriticalCheckFailed")["Error"],
        CRITICAL_CHECK_FAILED
    );
    let to_describe: Vec<&Value> = s["Bake"]["Catch"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["Next"] == "DescribeCheckFailure")
        .collect();
    assert_eq!(
        to_describe[0]["ErrorEquals"],
        serde_json::json!([CHECK_FAILED, CRITICAL_CHECK_FAILED])
    );
    let described = &s["DescribeCheckFailure"];
    assert_eq!(described["Parameters"]["Caught.$"], "$.failure.Error");
    assert_eq!(described["Next"], "GradualRollback?");
    let choice = &s["GradualRollback?"];
    assert_eq!(choice["Default"], "Restore");
    assert_eq!(
        choice["Choices"],
        serde_json::json!([{"And": [
            {"Variable": "$.failure.Caught", "StringEquals": CHECK_FAILED},
            {"Variable": "$.plan.rollback.gradual", "IsPresent": true}
        ], "Next": "LookBeforeStepBack"}])
    );
    for other in ["DescribeTaskFailure", "DescribeApprovalFailure"] {
        assert_eq!(s[other]["Next"], "Restore", "{other}");
    }
    // Each step back looks at the alarms first; a look that says no, or fails, restores.
    let look = &s["LookBeforeStepBack"];
    assert_eq!(look["Parameters"]["Payload"]["operation"], "stepBackLook");
    assert_eq!(look["Next"], "StepBackAllowed?");
    assert_eq!(
        look["Catch"][0]["ErrorEquals"],
        serde_json::json!(["States.ALL"])
    );
    assert_eq!(look["Catch"][0]["Next"], "Restore");
    assert_eq!(s["StepBackAllowed?"]["Default"], "Restore");
    assert_eq!(s["StepBackAllowed?"]["Choices"][0]["Next"], "StepBack");
    let step_back = &s[canary_core::state::STEP_BACK_STATE];
    assert_eq!(step_back["Parameters"]["Payload"]["operation"], "stepBack");
    assert_eq!(
        step_back["Parameters"]["Payload"]["expected.$"],
        "$.lastSet.weights"
    );
    // What it set is what the restore and the safety net compare against.
    assert_eq!(step_back["ResultPath"], "$.lastSet");
    assert_eq!(
        step_back["Catch"],
        serde_json::json!([
            // Someone else's weights found by a step back are theirs: left as found.
            {"ErrorEquals": ["WeightsChangedExternally"], "ResultPath": "$.stepBackFailure",
             "Next": "MovedUnderStepBackOutcome"},
            {"ErrorEquals": ["States.ALL"], "ResultPath": "$.stepBackFailure", "Next": "Restore"}
        ])
    );
    for retry in step_back["Retry"].as_array().unwrap() {
        for error in retry["ErrorEquals"].as_array().unwrap() {
            assert!(
                error.as_str().unwrap().starts_with("Lambda."),
                "a step back is retried only on the Lambda service's errors, got {error}"
            );
        }
    }
    assert_eq!(s["SteppedBack?"]["Default"], "Restore");
    assert_eq!(s["NotifySteppedBack"]["Next"], "HoldStepBack");
    assert_eq!(s["HoldStepBack"]["SecondsPath"], "$.lastSet.holdSeconds");
    assert_eq!(s["HoldStepBack"]["Next"], "LookBeforeStepBack");
}
