//! The target health gate (plan `targetHealth`): before the first non-zero weight, does the
//! load balancer see the new cluster's targets as healthy? One look per invocation; the state
//! machine polls (`TargetHealth`, `TargetsHealthy?`) and fails before traffic when time is up.

use canary_core::{limits, RolloutPlan};
use tracing::info;

use crate::error::ShiftError;
use crate::outputs::TargetHealthOutput;
use crate::traffic::{routers, Apis, Health, Side};

pub async fn target_health(
    apis: &Apis<'_>,
    plan: &RolloutPlan,
) -> Result<TargetHealthOutput, ShiftError> {
    let Some(gate) = &plan.target_health else {
        return Err(ShiftError::InvalidInput(
            "the plan has no `targetHealth` gate to check".to_owned(),
        ));
    };
    let gate = gate.resolve();
    let mut problems = Vec::new();
    let mut notes = Vec::new();
    for router in routers(apis, plan) {
        match router
            .health(Side::Canary, gate.min_healthy_targets)
            .await?
        {
            Health::Ready => {}
            Health::NotReady(problem) => problems.push(format!("{}: {problem}", router.label())),
            Health::NotGated(note) => notes.push(format!("{}: {note}", router.label())),
        }
    }
    let reason = if problems.is_empty() {
        "every canary target is healthy".to_owned()
    } else {
        limits::join_bounded(
            &problems,
            "; ",
            limits::MAX_LISTED_ERRORS,
            limits::MAX_REASON_BYTES,
        )
    };
    info!(ready = problems.is_empty(), %reason, "target health");
    Ok(TargetHealthOutput {
        ready: problems.is_empty(),
        reason,
        interval_seconds: gate.interval_seconds,
        max_polls: gate.max_polls,
        notes,
    })
}

#[cfg(test)]
mod tests {
    use canary_aws::fakes::arns::{BLUE, GREEN, LISTENER_A};
    use canary_aws::fakes::{FakeAlb, FakeRoute53};
    use canary_core::target_health::TargetState;
    use canary_core::{NamedError, RolloutPlan};
    use serde_json::{json, Value};

    use super::target_health;
    use crate::traffic::Apis;

    fn alb_target() -> Value {
        json!({"alb": {"listenerArn": LISTENER_A, "stableTargetGroupArn": BLUE, "canaryTargetGroupArn": GREEN}})
    }

    fn route53_target() -> Value {
        json!({"route53": {
            "hostedZoneId": "Z1", "recordName": "www.example.com", "recordType": "CNAME",
            "stableSetIdentifier": "blue", "canarySetIdentifier": "green",
        }})
    }

    /// A plan over `target`, with the gate (at least 2 healthy, 60 s, every 10 s) or without.
    fn plan(target: Value, gated: bool) -> RolloutPlan {
        let mut plan = json!({
            "cluster": {"name": "green", "region": "us-east-1"},
            "trafficTargets": [target],
            "steps": [{"weight": 10}, {"weight": 100}],
            "bake": {"seconds": 60, "checkIntervalSeconds": 10},
        });
        if gated {
            plan["targetHealth"] =
                json!({"minHealthyTargets": 2, "timeoutSeconds": 60, "intervalSeconds": 10});
        }
        RolloutPlan::parse(plan).expect("a valid plan").plan
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
            let alb = FakeAlb::default()
                .forward(LISTENER_A, (BLUE, 100), (GREEN, 0))
                .health(GREEN, targets);
            let apis = Apis {
                alb: &alb,
                ..Apis::fake()
            };
            target_health(&apis, &plan(alb_target(), true))
                .await
                .expect("a look")
        };
        let mut targets = vec![
            target("10.0.0.1", "healthy", None),
            target("10.0.0.2", "healthy", None),
            target("10.0.0.3", "unhealthy", Some("Target.Timeout")),
        ];
        let out = look(targets.clone()).await;
        assert!(!out.ready);
        assert_eq!((out.interval_seconds, out.max_polls), (10, 6));
        assert!(
            out.reason.contains(
                "canary target group green: 2 of 3 targets healthy, unhealthy: 10.0.0.3 (Target.Timeout)"
            ),
            "{}",
            out.reason
        );

        targets.pop();
        let out = look(targets).await;
        assert!(out.ready, "{out:?}");
    }

    #[tokio::test]
    async fn route53_gates_on_the_canary_records_health_check_only_if_it_has_one() {
        let failing =
            FakeRoute53::at(100, 0)
                .canary_health(vec!["Failure: HTTP Status Code 503".to_owned(); 8]);
        let apis = Apis {
            route53: &failing,
            ..Apis::fake()
        };
        let out = target_health(&apis, &plan(route53_target(), true))
            .await
            .expect("a look");
        assert!(!out.ready);
        assert!(
            out.reason.contains(
                "health check hc-green: 0 of 8 checkers report healthy: Failure: HTTP Status Code 503"
            ),
            "{out:?}"
        );

        let unchecked = FakeRoute53::at(100, 0);
        let apis = Apis {
            route53: &unchecked,
            ..apis
        };
        let out = target_health(&apis, &plan(route53_target(), true))
            .await
            .expect("a look");
        assert!(out.ready);
        assert!(out.notes[0].contains("no Route 53 health check"), "{out:?}");
    }

    #[tokio::test]
    async fn asking_for_target_health_without_a_gate_is_invalid_input() {
        let err = target_health(&Apis::fake(), &plan(alb_target(), false))
            .await
            .expect_err("no gate");
        assert_eq!(err.name().as_str(), "InvalidInput");
        assert!(err.to_string().contains("no `targetHealth` gate"), "{err}");
    }
}
