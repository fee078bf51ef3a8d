//! The decision logic against in-memory fakes of the AWS traits: failure paths the emulator
//! cannot produce on demand (a throttle on one call, a Route 53 change that stays PENDING).

use std::collections::HashMap;
use std::sync::Mutex;

use async_trait::async_trait;
use canary_aws::{
    AlbApi, AwsError, AwsErrorKind, ExecutionsApi, ForwardAction, ForwardRead, Route53Api,
    TargetGroupInfo, TargetGroupWeight, WeightedRecord,
};
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
}

struct FakeRoute53 {
    weights: Mutex<(u16, u16)>,
    in_sync: bool,
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
        };
        Ok(vec![record("blue", stable), record("green", canary)])
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
    };
    let apis = Apis {
        alb: &alb,
        route53: &route53,
        executions: &NoExecutions,
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

#[test]
fn lambda_reports_the_stable_error_name_not_the_rust_type() {
    let err = shift_weights::ShiftError::WeightsChangedExternally("x".into());
    let diagnostic = canary_aws::lambda::diagnostic(&err);
    assert_eq!(diagnostic.error_type, "WeightsChangedExternally");
    assert_eq!(
        diagnostic.error_message,
        "weights changed outside this rollout; nothing was written: x"
    );
}
