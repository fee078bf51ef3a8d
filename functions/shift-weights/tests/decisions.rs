//! shift-weights' JSON operations over the fakes (`canary_aws::fakes`): failure paths the
//! emulator cannot produce on demand (a Route 53 change that stays PENDING, unhealthy targets),
//! and the error names the state machine sees. Compare-and-set and restore have their decision
//! tests beside them in canary-rollout (`set.rs`, `restore.rs`, `traffic/*.rs`).

use canary_aws::fakes::arns::{BLUE, GREEN, LISTENER_A};
use canary_aws::fakes::{FakeAlb, FakeRoute53};
use canary_aws::TargetGroupWeight;
use canary_core::target_health::TargetState;
use canary_core::NamedError;
use serde_json::{json, Value};
use shift_weights::{handle, Apis};

fn alb_target(listener: &str) -> Value {
    json!({"alb": {"listenerArn": listener, "stableTargetGroupArn": BLUE, "canaryTargetGroupArn": GREEN}})
}

fn plan(targets: Vec<Value>) -> Value {
    json!({
        "cluster": {"name": "green", "region": "us-east-1"},
        "trafficTargets": targets,
        "steps": [{"weight": 10}, {"weight": 100}],
        "bake": {"seconds": 60, "checkIntervalSeconds": 10},
    })
}

fn weights(target: &str, stable: u16, canary: u16) -> Value {
    json!({"target": target, "stable": stable, "canary": canary})
}

fn fake_alb(at: &[(&str, u16, u16)]) -> FakeAlb {
    at.iter()
        .fold(FakeAlb::default(), |alb, (listener, stable, canary)| {
            alb.forward(listener, (BLUE, *stable), (GREEN, *canary))
        })
}

fn in_sync_route53() -> FakeRoute53 {
    FakeRoute53::at(100, 0)
}

fn current(alb: &FakeAlb, listener: &str) -> (u16, u16) {
    (alb.weight(listener, BLUE), alb.weight(listener, GREEN))
}

#[tokio::test]
async fn a_route53_change_that_stays_pending_is_a_retryable_error() {
    let alb = FakeAlb::default();
    let route53 = FakeRoute53::at(100, 0).never_in_sync();
    let apis = Apis {
        alb: &alb,
        route53: &route53,
        ..Apis::fake()
    };
    let target = json!({"route53": {
        "hostedZoneId": "Z1", "recordName": "www.example.com", "recordType": "CNAME",
        "stableSetIdentifier": "blue", "canarySetIdentifier": "green",
    }});
    let err = handle(
        &apis,
        json!({
            "operation": "set",
            "plan": plan(vec![target]),
            "canaryWeight": 10,
            "expected": [weights("route53:Z1:www.example.com.:CNAME", 100, 0)],
        }),
    )
    .await
    .expect_err("not in sync");
    assert_eq!(err.name().as_str(), "ChangeNotInSync");
    assert!(err.name().is_retryable());
    assert!(
        err.to_string()
            .contains("change C123 was written but is not INSYNC"),
        "{err}"
    );
}

fn route53_target() -> Value {
    json!({"route53": {
        "hostedZoneId": "Z1", "recordName": "www.example.com", "recordType": "CNAME",
        "stableSetIdentifier": "blue", "canarySetIdentifier": "green",
    }})
}

fn gated(targets: Vec<Value>) -> Value {
    let mut plan = plan(targets);
    plan["targetHealth"] =
        json!({"minHealthyTargets": 2, "timeoutSeconds": 60, "intervalSeconds": 10});
    plan
}

fn target(id: &str, state: &str, reason: Option<&str>) -> TargetState {
    TargetState {
        target: id.to_owned(),
        state: state.to_owned(),
        reason: reason.map(str::to_owned),
    }
}

/// moto reports every registered target healthy: unhealthy ones are tried here.
#[tokio::test]
async fn an_unhealthy_canary_target_holds_the_gate_and_is_named() {
    let look = |targets: Vec<TargetState>| async move {
        let alb = fake_alb(&[(LISTENER_A, 100, 0)]).health(GREEN, targets);
        let apis = Apis {
            alb: &alb,
            route53: &in_sync_route53(),
            ..Apis::fake()
        };
        let request =
            json!({"operation": "targetHealth", "plan": gated(vec![alb_target(LISTENER_A)])});
        handle(&apis, request).await.expect("a look")
    };
    let mut targets = vec![
        target("10.0.0.1", "healthy", None),
        target("10.0.0.2", "healthy", None),
        target("10.0.0.3", "unhealthy", Some("Target.Timeout")),
    ];
    let out = look(targets.clone()).await;
    assert_eq!(out["ready"], false);
    assert_eq!(out["intervalSeconds"], 10);
    assert_eq!(out["maxPolls"], 6);
    let reason = out["reason"].as_str().unwrap();
    assert!(
        reason.contains(
            "canary target group green: 2 of 3 targets healthy, unhealthy: 10.0.0.3 (Target.Timeout)"
        ),
        "{reason}"
    );

    targets.pop();
    let out = look(targets).await;
    assert_eq!(out["ready"], true, "{out}");
}

#[tokio::test]
async fn route53_gates_on_the_canary_records_health_check_only_if_it_has_one() {
    let alb = FakeAlb::default();
    let failing =
        in_sync_route53().canary_health(vec!["Failure: HTTP Status Code 503".to_owned(); 8]);
    let apis = Apis {
        alb: &alb,
        route53: &failing,
        ..Apis::fake()
    };
    let request = json!({"operation": "targetHealth", "plan": gated(vec![route53_target()])});
    let out = handle(&apis, request.clone()).await.expect("a look");
    assert_eq!(out["ready"], false);
    assert!(
        out["reason"].as_str().unwrap().contains(
            "health check hc-green: 0 of 8 checkers report healthy: Failure: HTTP Status Code 503"
        ),
        "{out}"
    );

    let unchecked = in_sync_route53();
    let apis = Apis {
        route53: &unchecked,
        ..apis
    };
    let out = handle(&apis, request).await.expect("a look");
    assert_eq!(out["ready"], true);
    assert!(
        out["notes"][0]
            .as_str()
            .unwrap()
            .contains("no Route 53 health check"),
        "{out}"
    );
}

#[tokio::test]
async fn asking_for_target_health_without_a_gate_is_invalid_input() {
    let alb = fake_alb(&[(LISTENER_A, 100, 0)]);
    let apis = Apis {
        alb: &alb,
        route53: &in_sync_route53(),
        ..Apis::fake()
    };
    let err = handle(
        &apis,
        json!({"operation": "targetHealth", "plan": plan(vec![alb_target(LISTENER_A)])}),
    )
    .await
    .expect_err("no gate");
    assert_eq!(err.name().as_str(), "InvalidInput");
    assert!(err.to_string().contains("no `targetHealth` gate"), "{err}");
}

#[test]
fn lambda_reports_the_stable_error_name_not_the_rust_type() {
    let err = shift_weights::ShiftError::WeightsChangedExternally("x".into());
    let diagnostic = canary_lambda::diagnostic(&err);
    assert_eq!(diagnostic.error_type, "WeightsChangedExternally");
    assert_eq!(
        diagnostic.error_message,
        "weights changed outside this rollout; nothing was written: x"
    );
}

fn retiring(targets: Vec<Value>) -> Value {
    let mut plan = plan(targets);
    plan["retire"] = json!({"detachStableTargetGroups": true});
    plan
}

async fn detach(alb: &FakeAlb, plan: Value, stable: u16, canary: u16) -> Result<Value, String> {
    let apis = Apis {
        alb,
        route53: &in_sync_route53(),
        ..Apis::fake()
    };
    let input = json!({"operation": "detach", "plan": plan, "expected": [weights(LISTENER_A, stable, canary)]});
    handle(&apis, input)
        .await
        .map_err(|e| format!("{}: {e}", e.name()))
}

#[tokio::test]
async fn detach_leaves_the_canary_alone_and_a_retry_finds_it_done() {
    let alb = fake_alb(&[(LISTENER_A, 0, 100)]);
    let out = detach(&alb, retiring(vec![alb_target(LISTENER_A)]), 0, 100)
        .await
        .expect("detached");
    assert_eq!(out["detached"], json!([LISTENER_A]));
    let only_canary = vec![TargetGroupWeight {
        arn: GREEN.into(),
        weight: 100,
    }];
    assert_eq!(alb.forwards_to(LISTENER_A), only_canary);
    let again = detach(&alb, retiring(vec![alb_target(LISTENER_A)]), 0, 100)
        .await
        .expect("a retry is no error");
    assert_eq!(again["detached"], json!([LISTENER_A]));
    assert_eq!(alb.forwards_to(LISTENER_A), only_canary);
}

#[tokio::test]
async fn detach_refuses_a_foreign_change_and_an_unpromoted_target_and_writes_nothing() {
    let alb = fake_alb(&[(LISTENER_A, 10, 90)]);
    let err = detach(&alb, retiring(vec![alb_target(LISTENER_A)]), 0, 100)
        .await
        .expect_err("changed since promotion");
    assert!(err.starts_with("WeightsChangedExternally"), "{err}");
    assert!(err.contains("found stable 10 / canary 90"), "{err}");
    let err = detach(&alb, retiring(vec![alb_target(LISTENER_A)]), 10, 90)
        .await
        .expect_err("not promoted");
    assert!(err.starts_with("InvalidInput"), "{err}");
    assert_eq!(current(&alb, LISTENER_A), (10, 90), "nothing written");

    // A plan that does not ask detaches nothing.
    let out = detach(&alb, plan(vec![alb_target(LISTENER_A)]), 0, 100)
        .await
        .expect("nothing to do");
    assert_eq!(out["detached"], json!([]));
    assert_eq!(current(&alb, LISTENER_A), (10, 90));
}
