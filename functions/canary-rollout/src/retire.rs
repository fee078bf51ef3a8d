//! Detach (plan `retire.detachStableTargetGroups`), after promotion: take the stable side out
//! of every target whose kind has one to take out (an ALB forward action's stable target
//! group; see `TrafficRouter::detach`), leaving the canary's alone. Compare-and-set: each
//! target must still be as promotion left it (`expected`), or detached already (a retry).
//! A plan that does not ask detaches nothing.

use canary_core::{RolloutPlan, TargetWeights};

use crate::error::ShiftError;
use crate::outputs::DetachOutput;
use crate::set::per_target;
use crate::traffic::{routers, Apis, Detach};

pub async fn detach(
    apis: &Apis<'_>,
    plan: &RolloutPlan,
    expected: &[TargetWeights],
) -> Result<DetachOutput, ShiftError> {
    if !plan
        .retire
        .as_ref()
        .is_some_and(|r| r.detach_stable_target_groups)
    {
        return Ok(DetachOutput {
            detached: Vec::new(),
        });
    }
    let routers = routers(apis, plan);
    let expected = per_target(&routers, expected, "expected")?;
    let mut detached = Vec::new();
    for (router, expected) in routers.iter().zip(expected) {
        if router.detach(expected).await? == Detach::Detached {
            detached.push(router.key());
        }
    }
    Ok(DetachOutput { detached })
}

#[cfg(test)]
mod tests {
    use canary_aws::fakes::arns::{BLUE, GREEN, LISTENER_A};
    use canary_aws::fakes::FakeAlb;
    use canary_aws::TargetGroupWeight;
    use canary_core::{NamedError, RolloutPlan, TargetWeights, WeightPair};
    use serde_json::json;

    use super::detach;
    use crate::traffic::Apis;

    fn plan(detach_asked: bool) -> RolloutPlan {
        let mut plan = json!({
            "cluster": {"name": "green", "region": "us-east-1"},
            "trafficTargets": [{"alb": {"listenerArn": LISTENER_A, "stableTargetGroupArn": BLUE, "canaryTargetGroupArn": GREEN}}],
            "steps": [{"weight": 10}, {"weight": 100}],
            "bake": {"seconds": 60, "checkIntervalSeconds": 10},
        });
        if detach_asked {
            plan["retire"] = json!({"detachStableTargetGroups": true});
        }
        RolloutPlan::parse(plan).expect("a valid plan").plan
    }

    fn alb(stable: u16, canary: u16) -> FakeAlb {
        FakeAlb::default().forward(LISTENER_A, (BLUE, stable), (GREEN, canary))
    }

    /// Detach, expecting the listener at `stable`/`canary`: the detached targets, or the
    /// error's name and message.
    async fn detach_at(
        alb: &FakeAlb,
        plan: &RolloutPlan,
        stable: u16,
        canary: u16,
    ) -> Result<Vec<String>, String> {
        let apis = Apis {
            alb,
            ..Apis::fake()
        };
        let expected = [TargetWeights::new(
            LISTENER_A.to_owned(),
            WeightPair { stable, canary },
        )];
        detach(&apis, plan, &expected)
            .await
            .map(|out| out.detached)
            .map_err(|e| format!("{}: {e}", e.name()))
    }

    fn current(alb: &FakeAlb) -> (u16, u16) {
        (alb.weight(LISTENER_A, BLUE), alb.weight(LISTENER_A, GREEN))
    }

    #[tokio::test]
    async fn detach_leaves_the_canary_alone_and_a_retry_finds_it_done() {
        let alb = alb(0, 100);
        let detached = detach_at(&alb, &plan(true), 0, 100).await;
        assert_eq!(detached, Ok(vec![LISTENER_A.to_owned()]));
        let only_canary = vec![TargetGroupWeight {
            arn: GREEN.into(),
            weight: 100,
        }];
        assert_eq!(alb.forwards_to(LISTENER_A), only_canary);
        let again = detach_at(&alb, &plan(true), 0, 100).await;
        assert_eq!(
            again,
            Ok(vec![LISTENER_A.to_owned()]),
            "a retry is no error"
        );
        assert_eq!(alb.forwards_to(LISTENER_A), only_canary);
    }

    #[tokio::test]
    async fn detach_refuses_a_foreign_change_and_an_unpromoted_target_and_writes_nothing() {
        let alb = alb(10, 90);
        let err = detach_at(&alb, &plan(true), 0, 100)
            .await
            .expect_err("changed since promotion");
        assert!(err.starts_with("WeightsChangedExternally"), "{err}");
        assert!(err.contains("found stable 10 / canary 90"), "{err}");
        let err = detach_at(&alb, &plan(true), 10, 90)
            .await
            .expect_err("not promoted");
        assert!(err.starts_with("InvalidInput"), "{err}");
        assert_eq!(current(&alb), (10, 90), "nothing written");

        // A plan that does not ask detaches nothing.
        assert_eq!(detach_at(&alb, &plan(false), 0, 100).await, Ok(vec![]));
        assert_eq!(current(&alb), (10, 90));
    }
}
