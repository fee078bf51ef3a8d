//! An execution's history as the CLI reads it: a model of the Step Functions history events
//! it needs (no SDK types), and what can be concluded from them without a network: the
//! approval a rollout waits for, the baseline a rollback restores, the step it is at.

use std::fmt;

pub use canary_aws::executions::{EventKind, HistoryEvent};
use canary_core::state::{ExecutionState, PREPARE_STATE, SET_STATE};
use canary_core::TargetWeights;
use serde_json::Value;

/// The resource of the task an approval waits on (`lambda:invoke.waitForTaskToken`).
const WAIT_FOR_TASK_TOKEN: &str = "invoke.waitForTaskToken";

/// The states entered once an approval wait is over: the approval branch's answers (after
/// `WaitForApproval`) and `AwaitApproval`'s Catch targets (another branch ended the wait). The
/// alarm watch beside the approval waits on a task of the same resource, so the end of "a
/// `waitForTaskToken` task" cannot tell which wait ended.
pub const APPROVED_AT: &str = "Approved";
pub const NOT_APPROVED_AT: [&str; 2] = ["BoundRejection", "ApprovalTimedOut"];
const APPROVAL_OVER_AT: [&str; 3] = [
    "SetWeights",
    "OnApprovalTimeout?",
    "DescribeApprovalFailure",
];

/// A task token: never printed, not even by `{:?}`.
#[derive(Clone, PartialEq, Eq)]
pub struct TaskToken(pub String);

impl fmt::Debug for TaskToken {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("TaskToken(…)")
    }
}

/// The step a rollout waits for a person to approve.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PendingApproval {
    pub token: TaskToken,
    pub step: StepRef,
}

/// Step `number` of `count`, giving the canary `weight` %.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct StepRef {
    pub number: u32,
    pub count: u32,
    pub weight: u8,
}

/// The approval the execution waits for now: the latest `awaitApproval` task scheduled and
/// not yet answered, timed out or ended by the wait's other branches. `None` when nothing waits.
pub fn pending_approval(events: &[HistoryEvent]) -> Option<PendingApproval> {
    let mut pending = None;
    for event in events {
        match &event.kind {
            EventKind::TaskScheduled {
                resource,
                parameters,
                ..
            } if resource == WAIT_FOR_TASK_TOKEN => {
                if let Some(approval) = approval_task(parameters) {
                    pending = Some(approval);
                }
            }
            EventKind::StateEntered { name, .. }
                if name == APPROVED_AT
                    || NOT_APPROVED_AT.contains(&name.as_str())
                    || APPROVAL_OVER_AT.contains(&name.as_str()) =>
            {
                pending = None
            }
            EventKind::ExecutionEnded { .. } => pending = None,
            _ => {}
        }
    }
    pending
}

/// The `Payload` of a task's parameters (an object, or a JSON string as some engines record
/// it) when it is an `awaitApproval` request: `operation` for the rollout's function, `op`
/// for the fleet's.
fn approval_payload(parameters: &str) -> Option<Value> {
    let parameters: Value = serde_json::from_str(parameters).ok()?;
    let payload = match &parameters["Payload"] {
        Value::String(text) => serde_json::from_str(text).ok()?,
        other => other.clone(),
    };
    (payload["operation"] == "awaitApproval" || payload["op"] == "awaitApproval").then_some(payload)
}

/// The states a fleet enters once a wave's approval wait is over.
const WAVE_APPROVAL_OVER_AT: [&str; 2] = ["NotifyWaveStarted", "NotApproved"];

/// The wave a fleet waits to have approved: its task token and the wave's number.
pub fn pending_wave_approval(events: &[HistoryEvent]) -> Option<(TaskToken, u64)> {
    let mut pending = None;
    for event in events {
        match &event.kind {
            EventKind::TaskScheduled {
                resource,
                parameters,
                ..
            } if resource == WAIT_FOR_TASK_TOKEN => {
                if let Some(payload) = approval_payload(parameters) {
                    pending = payload["taskToken"]
                        .as_str()
                        .zip(payload["wave"].as_u64())
                        .map(|(token, wave)| (TaskToken(token.to_owned()), wave));
                }
            }
            EventKind::StateEntered { name, .. }
                if WAVE_APPROVAL_OVER_AT.contains(&name.as_str()) =>
            {
                pending = None
            }
            EventKind::ExecutionEnded { .. } => pending = None,
            _ => {}
        }
    }
    pending
}

/// The token and step of an `awaitApproval` task's parameters.
fn approval_task(parameters: &str) -> Option<PendingApproval> {
    let payload = approval_payload(parameters)?;
    Some(PendingApproval {
        token: TaskToken(payload["taskToken"].as_str()?.to_owned()),
        step: serde_json::from_value(payload["step"].clone()).ok()?,
    })
}

/// The weights a rollback restores, as Prepare read them; `None` before Prepare finished
/// (no traffic has moved then).
pub fn baseline(events: &[HistoryEvent]) -> Option<Vec<TargetWeights>> {
    events.iter().find_map(|event| match &event.kind {
        EventKind::StateExited { name, output } if name == PREPARE_STATE => Some(
            ExecutionState::parse(output.as_deref()?)?
                .prepared?
                .baseline,
        ),
        _ => None,
    })
}

/// Whether the execution ever entered its step-setting state: before that, no traffic moved
/// (Prepare attaches a canary at weight 0 at most).
pub fn set_a_step(events: &[HistoryEvent]) -> bool {
    events.iter().any(
        |event| matches!(&event.kind, EventKind::StateEntered { name, .. } if name == SET_STATE),
    )
}

/// The plan the execution was started with.
pub fn plan(events: &[HistoryEvent]) -> Option<Value> {
    events.iter().find_map(|event| match &event.kind {
        EventKind::ExecutionStarted { input } => serde_json::from_str(input.as_deref()?).ok(),
        _ => None,
    })
}

/// The last step the execution set (or is about to set), from `StepSetup`'s output.
pub fn current_step(events: &[HistoryEvent]) -> Option<StepRef> {
    events.iter().rev().find_map(|event| match &event.kind {
        EventKind::StateExited { name, output } if name == "StepSetup" => {
            let cursor = serde_json::from_str::<Value>(output.as_deref()?).ok()?["cursor"].take();
            step_of_cursor(&cursor)
        }
        _ => None,
    })
}

/// The line of a check's summary that says a change freeze holds the step (evaluate-alarms
/// puts it last: `frozen: ...` or `frozen too long: ...`).
pub fn freeze_reason(summary: &str) -> Option<String> {
    summary
        .rsplit("; ")
        .find(|line| line.starts_with("frozen"))
        .map(str::to_owned)
}

/// What a hold's reason says holds the rollout: a change freeze, the error budget, or both
/// (the words `canary_core::freeze::FreezeReading::holder` puts in it).
pub fn holder(reason: &str) -> &'static str {
    use canary_core::freeze::{HELD_BY_BOTH, HELD_BY_BUDGET, HELD_BY_FREEZE};
    [HELD_BY_BOTH, HELD_BY_BUDGET]
        .into_iter()
        .find(|h| {
            reason.contains(&format!("frozen: {h} holds")) || reason.contains(&format!("by {h} ("))
        })
        .unwrap_or(HELD_BY_FREEZE)
}

/// A freeze's hold for people: since when (UTC), and why.
pub fn held_since(since: u64, reason: &str) -> String {
    let at = aws_smithy_types::DateTime::from_secs(i64::try_from(since).unwrap_or(i64::MAX))
        .fmt(aws_smithy_types::date_time::Format::DateTime)
        .unwrap_or_else(|_| since.to_string());
    format!("since {at}: {reason}")
}

/// Whether a change freeze holds the execution now, and why: the last look of its gate or
/// check of its bake says so.
pub fn frozen(events: &[HistoryEvent]) -> Option<String> {
    events.iter().rev().find_map(|event| match &event.kind {
        EventKind::StateExited { name, output } if name == "FreezeGate" => {
            let state = serde_json::from_str::<Value>(output.as_deref()?).ok()?;
            let freeze = &state["freeze"];
            Some((freeze["frozen"] == true).then(|| {
                held_since(
                    freeze["since"].as_u64().unwrap_or(0),
                    freeze["reason"].as_str().unwrap_or_default(),
                )
            }))
        }
        EventKind::StateExited { name, output }
            if name == "Evaluate" || name == "WatchEvaluate" =>
        {
            let state = serde_json::from_str::<Value>(output.as_deref()?).ok()?;
            let bake = &state["bake"];
            let since = bake["frozenSince"].as_u64().unwrap_or(0);
            Some(
                (since > 0)
                    .then(|| freeze_reason(bake["summary"].as_str().unwrap_or_default()))
                    .flatten()
                    .map(|reason| held_since(since, &reason)),
            )
        }
        _ => None,
    })?
}

/// `{number, count, step: {weight}}` as `StepSetup` leaves it in `$.cursor`.
pub fn step_of_cursor(cursor: &Value) -> Option<StepRef> {
    Some(StepRef {
        number: u32::try_from(cursor["number"].as_u64()?).ok()?,
        count: u32::try_from(cursor["count"].as_u64()?).ok()?,
        weight: u8::try_from(cursor["step"]["weight"].as_u64()?).ok()?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(kind: EventKind) -> HistoryEvent {
        HistoryEvent {
            timestamp: 0.0,
            kind,
        }
    }

    fn scheduled(operation: &str, token: &str) -> HistoryEvent {
        let payload = serde_json::json!({
            "operation": operation, "taskToken": token, "executionArn": "arn",
            "step": {"number": 3, "count": 3, "weight": 100}
        });
        at(EventKind::TaskScheduled {
            resource: WAIT_FOR_TASK_TOKEN.to_owned(),
            parameters: serde_json::json!({"FunctionName": "f", "Payload": payload}).to_string(),
            timeout_seconds: Some(600),
        })
    }

    fn entered(name: &str) -> HistoryEvent {
        at(EventKind::StateEntered {
            name: name.to_owned(),
            input: None,
        })
    }

    #[test]
    fn a_hold_is_named_by_what_holds_it() {
        assert_eq!(
            holder("frozen: the error budget holds the rollout where it is (SLO x is spent)"),
            "the error budget"
        );
        assert_eq!(
            holder("frozen too long: held 61 s by a change freeze and the error budget (a; b)"),
            "a change freeze and the error budget"
        );
        assert_eq!(
            holder("frozen: a change freeze holds the rollout where it is (SLO x, calendar c)"),
            "a change freeze"
        );
    }

    #[test]
    fn an_approval_waits_until_its_task_ends() {
        let waiting = [scheduled("awaitApproval", "T1")];
        let pending = pending_approval(&waiting).expect("waits");
        assert_eq!(pending.token, TaskToken("T1".to_owned()));
        assert_eq!(
            pending.step,
            StepRef {
                number: 3,
                count: 3,
                weight: 100
            }
        );
        for over in [
            "Approved",
            "BoundRejection",
            "ApprovalTimedOut",
            "DescribeApprovalFailure",
        ] {
            assert_eq!(
                pending_approval(&[scheduled("awaitApproval", "T1"), entered(over)]),
                None,
                "{over}"
            );
        }
        let again = [
            scheduled("awaitApproval", "T1"),
            entered("Approved"),
            scheduled("awaitApproval", "T2"),
        ];
        assert_eq!(
            pending_approval(&again).map(|p| p.token),
            Some(TaskToken("T2".to_owned()))
        );
    }

    #[test]
    fn the_alarm_watch_beside_an_approval_neither_hides_nor_ends_it() {
        let watch = || scheduled("watchAlarms", "W1");
        let beside = [watch(), scheduled("awaitApproval", "T1"), watch()];
        assert_eq!(
            pending_approval(&beside).map(|p| p.token),
            Some(TaskToken("T1".to_owned()))
        );
        // The watch's branch ended (it could not register): the approval still waits.
        let watch_ended = [
            scheduled("awaitApproval", "T1"),
            watch(),
            entered("AlarmWatchUnavailableWhileWaiting"),
        ];
        assert!(pending_approval(&watch_ended).is_some());
    }

    #[test]
    fn other_tasks_and_an_ended_execution_wait_for_nothing() {
        assert_eq!(pending_approval(&[scheduled("hooks", "T1")]), None);
        let ended_execution = [
            scheduled("awaitApproval", "T1"),
            at(EventKind::ExecutionEnded {
                status: "ABORTED".to_owned(),
                error: None,
                cause: None,
            }),
        ];
        assert_eq!(pending_approval(&ended_execution), None);
        let not_json = at(EventKind::TaskScheduled {
            resource: WAIT_FOR_TASK_TOKEN.to_owned(),
            parameters: "{".to_owned(),
            timeout_seconds: None,
        });
        assert_eq!(pending_approval(&[not_json]), None);
    }

    #[test]
    fn a_token_is_never_in_debug_output() {
        let pending = pending_approval(&[scheduled("awaitApproval", "SECRET-TOKEN")]);
        assert!(!format!("{pending:?}").contains("SECRET-TOKEN"));
    }

    #[test]
    fn a_payload_recorded_as_a_string_is_read_too() {
        let payload = r#"{"operation":"awaitApproval","taskToken":"T","step":{"number":1,"count":2,"weight":50}}"#;
        let event = at(EventKind::TaskScheduled {
            resource: WAIT_FOR_TASK_TOKEN.to_owned(),
            parameters: serde_json::json!({ "Payload": payload }).to_string(),
            timeout_seconds: None,
        });
        assert_eq!(pending_approval(&[event]).map(|p| p.step.weight), Some(50));
    }

    #[test]
    fn the_baseline_is_what_prepare_read() {
        let prepared = at(EventKind::StateExited {
            name: "PrepareTraffic".to_owned(),
            output: Some(
                r#"{"prepared": {"baseline": [{"target": "L", "stable": 100, "canary": 0}], "steps": []}}"#
                    .to_owned(),
            ),
        });
        assert_eq!(
            baseline(&[prepared]),
            Some(vec![TargetWeights::new(
                "L",
                canary_core::WeightPair {
                    stable: 100,
                    canary: 0
                }
            )])
        );
        assert_eq!(baseline(&[]), None);
    }

    fn exited(name: &str, output: serde_json::Value) -> HistoryEvent {
        at(EventKind::StateExited {
            name: name.to_owned(),
            output: Some(output.to_string()),
        })
    }

    #[test]
    fn a_freeze_is_read_from_the_last_gate_look_or_check() {
        let gate = |frozen: bool| {
            exited(
                "FreezeGate",
                serde_json::json!({"freeze": {"frozen": frozen, "since": 1_795_766_400, "reason": "frozen: switch on"}}),
            )
        };
        assert_eq!(
            frozen(&[gate(true)]).as_deref(),
            Some("since 2026-11-27T08:00:00Z: frozen: switch on")
        );
        assert_eq!(frozen(&[gate(true), gate(false)]), None, "lifted");
        let check = |since: u64| {
            exited(
                "Evaluate",
                serde_json::json!({"bake": {"frozenSince": since,
                    "summary": "alarm a is OK; frozen: a change freeze holds the rollout where it is (Change Calendar c is CLOSED)"}}),
            )
        };
        let held = frozen(&[gate(false), check(1_795_766_400)]).expect("held");
        assert!(
            held.ends_with(": frozen: a change freeze holds the rollout where it is (Change Calendar c is CLOSED)"),
            "{held}"
        );
        assert_eq!(frozen(&[check(1_795_766_400), check(0)]), None);
    }
}
