//! Snapshot tests of what the live view says (`cluster-canary watch`), from histories shaped
//! as the state machine writes them: a rollout that waits for an approval and is promoted, and
//! one whose check fails and is rolled back. The snapshots are in `tests/snapshots/`; after a
//! deliberate change of wording, review and accept them with `INSTA_UPDATE=always`.

use cluster_canary::history::{EventKind, HistoryEvent};
use cluster_canary::progress::{Tracker, Update};
use cluster_canary::view::{json_line, lines, status_line, Output};
use serde_json::{json, Value};

const ARN: &str =
    "arn:aws:states:us-east-1:123456789012:execution:cluster-canary-rollout:green-20261122T171300Z";
const LISTENER: &str = "arn:aws:elasticloadbalancing:us-east-1:123456789012:listener/app/web/50dc6c495c0c9188/f2f7dc8efc522ab2";
const RECORD: &str = "route53:Z0123456789ABC:app.example.com.:A";

struct History {
    events: Vec<HistoryEvent>,
    clock: f64,
}

impl History {
    fn new() -> Self {
        let mut history = History {
            events: Vec::new(),
            clock: 1_795_000_000.0,
        };
        let plan = json!({"cluster": {"name": "green", "region": "us-east-1"}});
        history.push(EventKind::ExecutionStarted {
            input: Some(plan.to_string()),
        });
        history
    }

    fn push(&mut self, kind: EventKind) {
        self.clock += 1.0;
        self.events.push(HistoryEvent {
            timestamp: self.clock,
            kind,
        });
    }

    fn state(&mut self, name: &str, state: Value) {
        self.push(EventKind::StateEntered {
            name: name.to_owned(),
            input: Some(state.to_string()),
        });
        self.push(EventKind::StateExited {
            name: name.to_owned(),
            output: Some(state.to_string()),
        });
    }
}

fn weights(canary: u16) -> Value {
    json!([
        {"target": LISTENER, "stable": 100 - canary, "canary": canary},
        {"target": RECORD, "stable": 100 - canary, "canary": canary}
    ])
}

fn cursor(number: u32, weight: u8, approval: u32) -> Value {
    json!({"index": number - 1, "number": number, "count": 2, "step": {
        "weight": weight, "bakeSeconds": 120, "checkIntervalSeconds": 60, "checks": 2,
        "approvalTimeoutSeconds": approval, "onApprovalTimeout": "rollback"}})
}

fn check(cursor: &Value, number: u64, verdict: &str, alarm_state: &str) -> Value {
    json!({"cursor": cursor, "bake": {
        "check": number + 1, "verdict": verdict, "rollback": verdict == "fail",
        "summary": format!("alarm web-green-5xx is {alarm_state} since 2026-11-22T17:13:12Z: Threshold Crossed: 1 datapoint [42.0] was greater than the threshold (10.0).; metric 5xx rate of the canary 0.1 % (threshold 1 %)"),
        "counts": {"pass": if verdict == "pass" { 2 } else { 1 }, "fail": u8::from(verdict == "fail"), "inconclusive": 0, "ignored": 0}}})
}

/// Up to the first step's bake, shared by both rollouts.
fn first_step() -> History {
    let mut h = History::new();
    h.state(
        "PrepareTraffic",
        json!({"prepared": {"steps": [{"weight": 10}, {"weight": 100}], "baseline": weights(0)}}),
    );
    h.state(
        "DescribeCluster",
        json!({"plan": {"cluster": {"name": "green"}}, "cluster": {"status": "ACTIVE"}}),
    );
    h.state(
        "RegisterCluster",
        json!({"registration": {"secretName": "cluster-canary-green-ae46be15c7", "outcome": "created"}}),
    );
    h.state(
        "AppsStatus",
        json!({"apps": {"ready": false, "reason": "not ready: guestbook-green is OutOfSync/Progressing"}}),
    );
    h.state(
        "AppsStatus",
        json!({"apps": {"ready": true, "reason": "all 2 Applications are Synced and Healthy"}}),
    );
    let first = cursor(1, 10, 0);
    h.state("StepSetup", json!({ "cursor": first }));
    h.state(
        "SetWeights",
        json!({"cursor": first, "lastSet": {"weights": weights(10)}}),
    );
    h.state("BakeWait", json!({ "cursor": first }));
    h.state("Evaluate", check(&first, 1, "pass", "OK"));
    h
}

fn promoted_after_approval() -> History {
    let mut h = first_step();
    let last = cursor(2, 100, 600);
    h.state("StepSetup", json!({ "cursor": last }));
    let payload = json!({"operation": "awaitApproval", "taskToken": "AQC-secret-token", "executionArn": ARN,
                         "step": {"number": 2, "count": 2, "weight": 100}});
    h.push(EventKind::TaskScheduled {
        resource: "invoke.waitForTaskToken".to_owned(),
        parameters: json!({"FunctionName": "evaluate-alarms", "Payload": payload}).to_string(),
        timeout_seconds: Some(600),
    });
    let mut watching = check(&last, 1, "pass", "OK");
    watching["cursor"]["step"]["checks"] = json!(0);
    h.state("WatchEvaluate", watching);
    h.push(EventKind::StateEntered {
        name: "Approved".to_owned(),
        input: None,
    });
    h.state(
        "SetWeights",
        json!({"cursor": last, "lastSet": {"weights": weights(100)}}),
    );
    h.state("Evaluate", check(&last, 2, "pass", "OK"));
    h.state("VerifyPromotion", json!({}));
    h.push(EventKind::ExecutionEnded {
        status: "SUCCEEDED".to_owned(),
        error: None,
        cause: None,
    });
    h
}

fn rolled_back() -> History {
    let mut h = first_step();
    let first = cursor(1, 10, 0);
    h.state("Evaluate", check(&first, 2, "fail", "ALARM"));
    let cause =
        "CheckFailed at step 1 of 2 (10%): alarm web-green-5xx is ALARM since 2026-11-22T17:13:12Z";
    h.state(
        "DescribeCheckFailure",
        json!({"failure": {"Error": "CheckFailed", "Cause": cause}}),
    );
    h.state(
        "Restore",
        json!({"failure": {"Error": "CheckFailed", "Cause": cause}, "restored": {"weights": weights(0), "note": ""}}),
    );
    // The failure as described for the outcome: said by the outcome line, not again here.
    h.state(
        "RolledBackBy?",
        json!({"failure": {"Error": "CheckFailed", "Cause": format!("{cause}; traffic restored to the baseline.")}}),
    );
    h.push(EventKind::ExecutionEnded {
        status: "FAILED".to_owned(),
        error: Some("CheckFailed".to_owned()),
        cause: Some(format!("{cause}; traffic restored to the baseline.")),
    });
    h
}

fn updates(history: &History) -> Vec<Update> {
    let mut tracker = Tracker::new(ARN);
    history
        .events
        .iter()
        .filter_map(|e| tracker.feed(e))
        .collect()
}

fn text(history: &History, verbose: bool) -> String {
    updates(history)
        .iter()
        .flat_map(|u| lines(u, Output::Plain, verbose))
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn a_promoted_rollout_with_an_approval() {
    let history = promoted_after_approval();
    let shown = text(&history, false);
    assert!(!shown.contains("secret-token"), "the token is never shown");
    insta::assert_snapshot!("promoted_after_approval", shown);
}

#[test]
fn a_rolled_back_rollout() {
    insta::assert_snapshot!("rolled_back", text(&rolled_back(), false));
}

#[test]
fn a_failure_before_traffic_is_said_once_with_the_function_s_message() {
    let mut h = History::new();
    let failure = json!({"Error": "KubePermissionDenied",
        "Cause": json!({"errorType": "KubePermissionDenied", "errorMessage": "list ApplicationSets in namespace argocd: forbidden (403 Forbidden)"}).to_string()});
    h.state("AppsStatus", json!({ "failure": failure }));
    for carrying in [
        "FailedBeforeTrafficOutcome",
        "NotifyRolloutFailed",
        "RolloutFailedEnd?",
    ] {
        h.state(carrying, json!({ "failure": failure, "outcome": {} }));
    }
    h.push(EventKind::ExecutionEnded {
        status: "FAILED".to_owned(),
        error: Some("KubePermissionDenied".to_owned()),
        cause: failure["Cause"].as_str().map(str::to_owned),
    });
    insta::assert_snapshot!("failed_before_traffic", text(&h, false));
}

#[test]
fn verbose_shows_every_reason_of_a_check() {
    let shown = text(&rolled_back(), true);
    assert!(shown.contains("metric 5xx rate of the canary"), "{shown}");
}

#[test]
fn json_output_is_one_object_per_update() {
    let history = promoted_after_approval();
    let json: Vec<String> = updates(&history).iter().map(json_line).collect();
    for line in &json {
        let value: Value = serde_json::from_str(line).expect("each line is JSON");
        assert!(value["type"].is_string(), "{line}");
    }
    assert!(!json.join("\n").contains("secret-token"));
    insta::assert_snapshot!("promoted_after_approval_json", json.join("\n"));
}

#[test]
fn colour_only_on_a_terminal() {
    let history = rolled_back();
    let plain = updates(&history)
        .iter()
        .flat_map(|u| lines(u, Output::Plain, false))
        .collect::<String>();
    let coloured = updates(&history)
        .iter()
        .flat_map(|u| lines(u, Output::Terminal, false))
        .collect::<String>();
    assert!(!plain.contains('\u{1b}'));
    assert!(coloured.contains("\u{1b}["));
}

#[test]
fn the_status_line_counts_down_to_the_next_check() {
    let history = first_step();
    let mut tracker = Tracker::new(ARN);
    // Up to BakeWait: entered, not yet evaluated.
    let wait = history
        .events
        .iter()
        .position(|e| matches!(&e.kind, EventKind::StateEntered { name, .. } if name == "BakeWait"))
        .expect("BakeWait");
    for event in &history.events[..=wait] {
        tracker.feed(event);
    }
    let entered = history.events[wait].timestamp;
    let current: Vec<canary_core::TargetWeights> =
        serde_json::from_value(weights(10)).expect("weights");
    insta::assert_snapshot!(
        "status_line_while_baking",
        status_line(tracker.status(), entered + 48.0, Some(&current))
    );
}
