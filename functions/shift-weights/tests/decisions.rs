//! The decision logic against in-memory fakes of the AWS traits: failure paths the emulator
//! cannot produce on demand (a throttle on one call, a Route 53 change that stays PENDING).

use std::collections::HashMap;
use std::sync::Mutex;

use async_trait::async_trait;
use canary_aws::{
    AlbApi, AwsError, AwsErrorKind, ExecutionsApi, ForwardAction, ForwardRead, Route53Api,
    TargetGroupInfo, TargetGroupWeight, TxtRecord, WeightedRecord,
};
use canary_core::target_health::TargetState;
use canary_core::NamedError;
use canary_core::{AlbTarget, Route53Target};
use serde_json::{json, Value};
use shift_weights::{handle, Apis};

const LISTENER_A: &str =
    "arn:aws:elasticloadbalancing:us-east-1:123456789012:listener/app/web/50dc6c495c0c9188/f2f7dc8efc522ab2";
const LISTENER_B: &str =
    "arn:aws:elasticloadbalancing:us-east-1:123456789012:listener/app/web/50dc6c495c0c9188/0000000000000002";
const BLUE: &str =
    "arn:aws:elasticloadbalancing:us-east-1:123456789012:targetgroup/blue/73e2d6bc24d8a067";
const GREEN: &str =
    "arn:aws:elasticloadbalancing:us-east-1:123456789012:targetgroup/green/4b7c9a1e2f3d5a68";

#[derive(Default)]
struct FakeAlb {
    forwards: Mutex<HashMap<String, Vec<TargetGroupWeight>>>,
    /// Listener ARNs whose next write fails with a throttle.
    throttle_next_write: Mutex<Vec<String>>,
    /// `DescribeTargetHealth` answers by target group (none registered when absent).
    health: HashMap<String, Vec<TargetState>>,
}

fn throttled(operation: &'static str) -> AwsError {
    AwsError {
        kind: AwsErrorKind::Transient,
        operation,
        code: Some("Throttling".into()),
        message: "Rate exceeded".into(),
    }
}

#[async_trait]
impl AlbApi for FakeAlb {
    async fn read_forward(&self, target: &AlbTarget) -> Result<ForwardRead, AwsError> {
        let forwards = self.forwards.lock().unwrap();
        Ok(ForwardRead::Forward(ForwardAction {
            target_groups: forwards[&target.listener_arn].clone(),
            group_stickiness: None,
            actions: Default::default(),
        }))
    }

    async fn write_forward(
        &self,
        target: &AlbTarget,
        _current: &ForwardAction,
        weights: &[TargetGroupWeight],
    ) -> Result<(), AwsError> {
        let mut throttled_arns = self.throttle_next_write.lock().unwrap();
        if let Some(i) = throttled_arns
            .iter()
            .position(|a| *a == target.listener_arn)
        {
            throttled_arns.remove(i);
            return Err(throttled("ModifyListener"));
        }
        self.forwards
            .lock()
            .unwrap()
            .insert(target.listener_arn.clone(), weights.to_vec());
        Ok(())
    }

    async fn target_groups(
        &self,
        _region: &str,
        arns: &[String],
    ) -> Result<Vec<TargetGroupInfo>, AwsError> {
        Ok(arns
            .iter()
            .map(|arn| TargetGroupInfo {
                arn: arn.clone(),
                stickiness_enabled: false,
            })
            .collect())
    }

    async fn target_health(&self, target_group_arn: &str) -> Result<Vec<TargetState>, AwsError> {
        Ok(self
            .health
            .get(target_group_arn)
            .cloned()
            .unwrap_or_default())
    }

    /// Nothing here is a controller's (over the wire: shift-weights `against_moto.rs`).
    async fn tags(
        &self,
        _region: &str,
        _arn: &str,
    ) -> Result<std::collections::BTreeMap<String, String>, AwsError> {
        Ok(Default::default())
    }
}

struct FakeRoute53 {
    weights: Mutex<(u16, u16)>,
    in_sync: bool,
    /// The canary record's health check reports; `None`: the record has no health check.
    canary_health: Option<Vec<String>>,
}

#[async_trait]
impl Route53Api for FakeRoute53 {
    async fn records(&self, _target: &Route53Target) -> Result<Vec<WeightedRecord>, AwsError> {
        let (stable, canary) = *self.weights.lock().unwrap();
        let record = |id: &str, weight| WeightedRecord {
            set_identifier: Some(id.to_owned()),
            weight: Some(weight),
            ttl: Some(30),
            alias_target: None,
            health_check_id: (id == "green" && self.canary_health.is_some())
                .then(|| "hc-green".to_owned()),
        };
        Ok(vec![record("blue", stable), record("green", canary)])
    }

    async fn named_records(
        &self,
        _zone_id: &str,
        _name: &str,
        _record_type: &str,
    ) -> Result<Vec<WeightedRecord>, AwsError> {
        unreachable!("the rollout reads its targets' records only")
    }

    async fn create_weighted(
        &self,
        _zone_id: &str,
        _name: &str,
        _record_type: &str,
        _records: &[canary_aws::NewWeightedRecord],
    ) -> Result<String, AwsError> {
        unreachable!("the rollout creates no record")
    }

    async fn write_weights(
        &self,
        _target: &Route53Target,
        stable: u16,
        canary: u16,
    ) -> Result<String, AwsError> {
        *self.weights.lock().unwrap() = (stable, canary);
        Ok("C123".into())
    }

    async fn wait_in_sync(&self, _change_id: &str) -> Result<bool, AwsError> {
        Ok(self.in_sync)
    }

    async fn health_check_reports(&self, _health_check_id: &str) -> Result<Vec<String>, AwsError> {
        Ok(self.canary_health.clone().unwrap_or_default())
    }

    /// No ExternalDNS here (over the wire: shift-weights `against_moto.rs`).
    async fn txt_records(&self, _zone_id: &str, _name: &str) -> Result<Vec<TxtRecord>, AwsError> {
        Ok(Vec::new())
    }
}

struct NoExecutions;

#[async_trait]
impl ExecutionsApi for NoExecutions {
    async fn running_executions(&self, _state_machine_arn: &str) -> Result<Vec<String>, AwsError> {
        Ok(Vec::new())
    }

    async fn execution_input(&self, _execution_arn: &str) -> Result<Option<String>, AwsError> {
        Ok(None)
    }

    async fn history(
        &self,
        _execution_arn: &str,
    ) -> Result<canary_aws::ExecutionHistory, AwsError> {
        Ok(canary_aws::ExecutionHistory::default())
    }
}

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
    let alb = FakeAlb::default();
    for (listener, stable, canary) in at {
        alb.forwards.lock().unwrap().insert(
            (*listener).to_owned(),
            vec![
                TargetGroupWeight {
                    arn: BLUE.into(),
                    weight: *stable,
                },
                TargetGroupWeight {
                    arn: GREEN.into(),
                    weight: *canary,
                },
            ],
        );
    }
    alb
}

fn in_sync_route53() -> FakeRoute53 {
    FakeRoute53 {
        weights: Mutex::new((100, 0)),
        in_sync: true,
        canary_health: None,
    }
}

fn current(alb: &FakeAlb, listener: &str) -> (u16, u16) {
    let forwards = alb.forwards.lock().unwrap();
    let weight = |arn| {
        forwards[listener]
            .iter()
            .find(|w| w.arn == arn)
            .map_or(0, |w| w.weight)
    };
    (weight(BLUE), weight(GREEN))
}

#[tokio::test]
async fn restore_goes_on_past_a_throttled_target_then_a_retry_finishes() {
    let alb = fake_alb(&[(LISTENER_A, 90, 10), (LISTENER_B, 90, 10)]);
    alb.throttle_next_write
        .lock()
        .unwrap()
        .push(LISTENER_A.to_owned());
    let route53 = in_sync_route53();
    let apis = Apis {
        alb: &alb,
        route53: &route53,
        executions: &NoExecutions,
        argocd: None,
    };
    let input = json!({
        "operation": "restore",
        "plan": plan(vec![alb_target(LISTENER_A), alb_target(LISTENER_B)]),
        "baseline": [weights(LISTENER_A, 100, 0), weights(LISTENER_B, 100, 0)],
    });

    let err = handle(&apis, input.clone())
        .await
        .expect_err("the throttle surfaces");
    assert_eq!(err.name().as_str(), "AwsTransient");
    assert!(err.name().is_retryable());
    assert!(
        err.to_string()
            .contains("ModifyListener failed: Throttling"),
        "{err}"
    );
    assert_eq!(
        current(&alb, LISTENER_A),
        (90, 10),
        "the throttled target is not restored yet"
    );
    assert_eq!(
        current(&alb, LISTENER_B),
        (100, 0),
        "the other target was restored anyway"
    );

    handle(&apis, input)
        .await
        .expect("the retry restores the rest");
    assert_eq!(current(&alb, LISTENER_A), (100, 0));
}

#[tokio::test]
async fn a_set_interrupted_half_way_completes_on_retry() {
    let alb = fake_alb(&[(LISTENER_A, 100, 0), (LISTENER_B, 100, 0)]);
    alb.throttle_next_write
        .lock()
        .unwrap()
        .push(LISTENER_B.to_owned());
    let route53 = in_sync_route53();
    let apis = Apis {
        alb: &alb,
        route53: &route53,
        executions: &NoExecutions,
        argocd: None,
    };
    let input = json!({
        "operation": "set",
        "plan": plan(vec![alb_target(LISTENER_A), alb_target(LISTENER_B)]),
        "canaryWeight": 10,
        "expected": [weights(LISTENER_A, 100, 0), weights(LISTENER_B, 100, 0)],
    });

    let err = handle(&apis, input.clone()).await.expect_err("throttled");
    assert_eq!(err.name().as_str(), "AwsTransient");
    assert_eq!(current(&alb, LISTENER_A), (90, 10));
    assert_eq!(current(&alb, LISTENER_B), (100, 0));

    // Same input again, as Step Functions' Retry sends it: A is already there, B is written.
    let out = handle(&apis, input).await.expect("retry");
    assert_eq!(
        out["weights"],
        json!([weights(LISTENER_A, 90, 10), weights(LISTENER_B, 90, 10)])
    );
}

#[tokio::test]
async fn a_route53_change_that_stays_pending_is_a_retryable_error() {
    let alb = FakeAlb::default();
    let route53 = FakeRoute53 {
        weights: Mutex::new((100, 0)),
        in_sync: false,
        canary_health: None,
    };
    let apis = Apis {
        alb: &alb,
        route53: &route53,
        executions: &NoExecutions,
        argocd: None,
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
        let mut alb = fake_alb(&[(LISTENER_A, 100, 0)]);
        alb.health.insert(GREEN.to_owned(), targets);
        let apis = Apis {
            alb: &alb,
            route53: &in_sync_route53(),
            executions: &NoExecutions,
            argocd: None,
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
    let failing = FakeRoute53 {
        canary_health: Some(vec!["Failure: HTTP Status Code 503".to_owned(); 8]),
        ..in_sync_route53()
    };
    let apis = Apis {
        alb: &alb,
        route53: &failing,
        executions: &NoExecutions,
        argocd: None,
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
        executions: &NoExecutions,
        argocd: None,
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
        executions: &NoExecutions,
        argocd: None,
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
    assert_eq!(alb.forwards.lock().unwrap()[LISTENER_A], only_canary);
    let again = detach(&alb, retiring(vec![alb_target(LISTENER_A)]), 0, 100)
        .await
        .expect("a retry is no error");
    assert_eq!(again["detached"], json!([LISTENER_A]));
    assert_eq!(alb.forwards.lock().unwrap()[LISTENER_A], only_canary);
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
