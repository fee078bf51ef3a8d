//! A gradual rollback's step back (plan `rollback.gradual`). During a whole-cluster canary the
//! old cluster's autoscalers shrink it as its share falls, so putting everything back on it at
//! once can take down what was healthy. After a bake's failed check the state machine takes
//! two looks before each step back: [`look_at_alarms`] (evaluate-alarms: no alarm the plan marks
//! critical is in ALARM, and the old cluster's own alarms are OK), then [`step_back`]
//! (shift-weights: the old cluster's side of every target is healthy — the target health gate's
//! look, on the stable side — and only then the canary's share is cut to the next step, with
//! compare-and-set against what the rollout last set). Anything else — the next step is the
//! baseline, a look fails, any error — and the state machine restores the baseline at once, as
//! every other rollback does.

use canary_aws::CloudWatchApi;
use canary_core::analysis::{CheckVerdict, InsufficientDataPolicy};
use canary_core::limits::{join_bounded, MAX_LISTED_ERRORS, MAX_REASON_BYTES};
use canary_core::plan::{gradual, ValidPlan};
use canary_core::{RolloutPlan, TargetWeights, WeightPair};
use tracing::{info, warn};

use crate::error::{AnalysisError, ShiftError};
use crate::outputs::{StepBackLook, StepBackOutput};
use crate::set::{move_to, plan_step};
use crate::signals::alarm_outcome;
use crate::traffic::{routers, Apis, Health, Side};

/// At Admit: every alarm `rollback.gradual.alarms` names exists (`AlarmNotFound`).
pub async fn validate_alarms(
    cloudwatch: &dyn CloudWatchApi,
    plan: &RolloutPlan,
) -> Result<(), AnalysisError> {
    let Some(gradual) = gradual(plan.rollback.as_ref()).filter(|g| !g.alarms.is_empty()) else {
        return Ok(());
    };
    let found = cloudwatch.alarms_by_names(&gradual.alarms).await?;
    match gradual
        .alarms
        .iter()
        .position(|name| !found.iter().any(|a| &a.name == name))
    {
        Some(i) => Err(AnalysisError::AlarmNotFound {
            path: format!("rollback.gradual.alarms[{i}]"),
            message: format!(
                "there is no metric or composite alarm named `{}`",
                gradual.alarms[i]
            ),
        }),
        None => Ok(()),
    }
}

/// Before each step back: the old cluster's own alarms (`rollback.gradual.alarms`) are OK and
/// no alarm of `analysis.alarms.critical` is in ALARM. An alarm of the old cluster deleted
/// since Admit cannot vouch for it either.
pub async fn look_at_alarms(
    cloudwatch: &dyn CloudWatchApi,
    plan: &RolloutPlan,
) -> Result<StepBackLook, AnalysisError> {
    let old_cluster = gradual(plan.rollback.as_ref()).map_or(&[][..], |g| &g.alarms[..]);
    let critical = plan
        .analysis
        .as_ref()
        .and_then(|a| a.alarms.as_ref())
        .map_or(&[][..], |a| &a.critical[..]);
    let mut problems = Vec::new();
    for (names, insufficient) in [
        (old_cluster, InsufficientDataPolicy::Fail),
        (critical, InsufficientDataPolicy::Ignore),
    ] {
        if names.is_empty() {
            continue;
        }
        let found = cloudwatch.alarms_by_names(names).await?;
        for name in names {
            match found.iter().find(|a| &a.name == name) {
                Some(alarm) => {
                    let outcome = alarm_outcome(alarm, insufficient);
                    if outcome.verdict == CheckVerdict::Fail {
                        problems.push(outcome.reason);
                    }
                }
                None if insufficient == InsufficientDataPolicy::Fail => {
                    problems.push(format!("alarm {name} no longer exists"))
                }
                None => {}
            }
        }
    }
    if problems.is_empty() {
        return Ok(StepBackLook {
            go: true,
            reason: "no critical alarm in ALARM, the old cluster's alarms OK".to_owned(),
        });
    }
    let problems = join_bounded(&problems, "; ", MAX_LISTED_ERRORS, MAX_REASON_BYTES / 2);
    warn!(%problems, "no step back: the baseline at once");
    Ok(StepBackLook {
        go: false,
        reason: format!("{problems}: straight to the baseline"),
    })
}

/// One step back from `expected` (what the rollout last set), for a rollback from
/// `failed_weight`, the canary's share at the step whose check failed.
pub async fn step_back(
    apis: &Apis<'_>,
    valid: &ValidPlan,
    failed_weight: u8,
    expected: &[TargetWeights],
) -> Result<StepBackOutput, ShiftError> {
    let plan = &valid.plan;
    let Some(gradual) = gradual(plan.rollback.as_ref()) else {
        return Err(ShiftError::InvalidInput(
            "the plan has no `rollback.gradual` to step back by".to_owned(),
        ));
    };
    plan_step(valid, i64::from(failed_weight), "failedWeight")?;
    // Every target is at the same share: a step sets them all, a step back too.
    let current = expected
        .iter()
        .map(|w| w.canary)
        .max()
        .ok_or_else(|| ShiftError::InvalidInput("expected has no weights".to_owned()))?;
    let current = u8::try_from(current.min(100)).unwrap_or(100);
    let hold_seconds = gradual.hold_seconds();
    let stay = |reason: String| StepBackOutput {
        stepped_back: false,
        canary_weight: current,
        weights: expected.to_vec(),
        hold_seconds,
        reason,
    };
    let Some(next) = gradual.next_share(failed_weight, current) else {
        info!(current, "the next step back is the baseline");
        return Ok(stay(format!(
            "the canary has {current}%: the next step back is the baseline"
        )));
    };

    let min_healthy_targets = plan
        .target_health
        .map_or(1, |gate| gate.resolve().min_healthy_targets);
    let mut problems = Vec::new();
    for router in routers(apis, plan) {
        if let Health::NotReady(problem) = router.health(Side::Stable, min_healthy_targets).await? {
            problems.push(format!("{}: {problem}", router.label()));
        }
    }
    if !problems.is_empty() {
        let problems = join_bounded(&problems, "; ", MAX_LISTED_ERRORS, MAX_REASON_BYTES / 2);
        warn!(%problems, "the old cluster is not healthy: no step back, the baseline at once");
        return Ok(stay(format!(
            "the old cluster is not healthy ({problems}): straight to the baseline"
        )));
    }

    let desired = WeightPair::for_canary_percent(next)
        .ok_or_else(|| ShiftError::InvalidInput(format!("a step back to {next}%")))?;
    let weights = move_to(apis, valid, desired, expected).await?;
    info!(from = current, to = next, failed_weight, "stepped back");
    Ok(StepBackOutput {
        stepped_back: true,
        canary_weight: next,
        weights,
        hold_seconds,
        reason: format!(
            "stepped back to {next}% of traffic on the new cluster (from {current}%; the check \
             failed at {failed_weight}%) while the old cluster is healthy"
        ),
    })
}

#[cfg(test)]
mod tests {
    use canary_aws::fakes::arns::{BLUE, GREEN, LISTENER_A};
    use canary_aws::fakes::{FakeAlb, FakeRoute53};
    use canary_core::target_health::TargetState;
    use canary_core::{NamedError, RolloutPlan, TargetWeights, WeightPair};
    use serde_json::json;

    use canary_aws::fakes::FakeCloudWatch;
    use canary_aws::AlarmStateValue::{Alarm, InsufficientData, Ok as AlarmOk};

    use super::{look_at_alarms, step_back, validate_alarms};
    use crate::traffic::Apis;

    /// A plan stepping back by half, the old cluster's own alarm `blue-5xx`, `green-crash`
    /// critical beside `green-latency`.
    fn plan_with_alarms() -> RolloutPlan {
        RolloutPlan::parse(json!({
            "cluster": {"name": "green", "region": "us-east-1"},
            "trafficTargets": [{"alb": {"listenerArn": LISTENER_A, "stableTargetGroupArn": BLUE, "canaryTargetGroupArn": GREEN}}],
            "steps": [{"weight": 50}, {"weight": 100}],
            "bake": {"seconds": 60, "checkIntervalSeconds": 10},
            "analysis": {"alarms": {"names": ["green-latency", "green-crash"], "critical": ["green-crash"]}},
            "rollback": {"gradual": {"steps": [50, 0], "alarms": ["blue-5xx"]}},
        }))
        .expect("a valid plan")
        .plan
    }

    #[tokio::test]
    async fn a_step_back_waits_for_no_critical_alarm_and_the_old_clusters_alarms_ok() {
        let plan = plan_with_alarms();
        let look = |cloudwatch: FakeCloudWatch| {
            let plan = plan.clone();
            async move { look_at_alarms(&cloudwatch, &plan).await.expect("a look") }
        };
        let world = |latency, crash, blue| {
            FakeCloudWatch::default()
                .with("green-latency", latency)
                .with("green-crash", crash)
                .with("blue-5xx", blue)
        };
        // The failing check's own alarm in ALARM does not stop a step back.
        assert!(look(world(Alarm, AlarmOk, AlarmOk)).await.go);
        assert!(
            look(world(Alarm, InsufficientData, AlarmOk)).await.go,
            "critical only in ALARM"
        );
        let critical = look(world(Alarm, Alarm, AlarmOk)).await;
        assert!(!critical.go);
        assert!(
            critical.reason.starts_with("alarm green-crash is ALARM"),
            "{}",
            critical.reason
        );
        assert!(
            critical.reason.ends_with(": straight to the baseline"),
            "{}",
            critical.reason
        );
        let old = look(world(Alarm, AlarmOk, InsufficientData)).await;
        assert!(
            !old.go && old.reason.contains("alarm blue-5xx is INSUFFICIENT_DATA"),
            "{}",
            old.reason
        );
        let gone = look(
            FakeCloudWatch::default()
                .with("green-latency", Alarm)
                .with("green-crash", AlarmOk),
        )
        .await;
        assert!(
            !gone.go && gone.reason.contains("alarm blue-5xx no longer exists"),
            "{}",
            gone.reason
        );
    }

    #[tokio::test]
    async fn admit_refuses_an_old_cluster_alarm_that_does_not_exist() {
        let plan = plan_with_alarms();
        let cloudwatch = FakeCloudWatch::default().with("blue-5xx", AlarmOk);
        validate_alarms(&cloudwatch, &plan)
            .await
            .expect("it exists");
        let err = validate_alarms(&FakeCloudWatch::default(), &plan)
            .await
            .expect_err("missing");
        assert_eq!(err.name().as_str(), "AlarmNotFound");
        assert!(
            err.to_string().contains("rollback.gradual.alarms[0]"),
            "{err}"
        );
    }

    fn plan(gradual: bool) -> canary_core::plan::ValidPlan {
        let mut plan = json!({
            "cluster": {"name": "green", "region": "us-east-1"},
            "trafficTargets": [{"alb": {"listenerArn": LISTENER_A, "stableTargetGroupArn": BLUE, "canaryTargetGroupArn": GREEN}}],
            "steps": [{"weight": 10}, {"weight": 60}, {"weight": 100}],
            "bake": {"seconds": 60, "checkIntervalSeconds": 10},
        });
        if gradual {
            plan["rollback"] = json!({"gradual": {"steps": [50, 20, 0], "holdSeconds": 30}});
        }
        RolloutPlan::parse(plan).expect("a valid plan")
    }

    fn at(canary: u16) -> Vec<TargetWeights> {
        vec![TargetWeights::new(
            LISTENER_A,
            WeightPair {
                stable: 100 - canary,
                canary,
            },
        )]
    }

    fn healthy(n: usize) -> Vec<TargetState> {
        (0..n)
            .map(|i| TargetState {
                target: format!("10.0.0.{i}"),
                state: "healthy".to_owned(),
                reason: None,
            })
            .collect()
    }

    #[tokio::test]
    async fn steps_back_while_the_old_cluster_is_healthy_then_leaves_the_baseline_to_the_restore() {
        let alb = FakeAlb::default()
            .forward(LISTENER_A, (BLUE, 40), (GREEN, 60))
            .health(BLUE, healthy(2));
        let apis = Apis {
            alb: &alb,
            ..Apis::fake()
        };
        let first = step_back(&apis, &plan(true), 60, &at(60))
            .await
            .expect("a step");
        assert!(first.stepped_back, "{first:?}");
        assert_eq!((first.canary_weight, first.hold_seconds), (30, 30));
        assert_eq!(first.weights, at(30));
        assert_eq!(alb.weight(LISTENER_A, GREEN), 30);

        let second = step_back(&apis, &plan(true), 60, &first.weights)
            .await
            .expect("a step");
        assert_eq!((second.stepped_back, second.canary_weight), (true, 12));

        let last = step_back(&apis, &plan(true), 60, &second.weights)
            .await
            .expect("a look");
        assert!(!last.stepped_back);
        assert!(
            last.reason.contains("the next step back is the baseline"),
            "{}",
            last.reason
        );
        assert_eq!(
            last.weights,
            at(12),
            "nothing written: the restore writes the baseline"
        );
        assert_eq!(alb.weight(LISTENER_A, GREEN), 12);
    }

    #[tokio::test]
    async fn an_unhealthy_old_cluster_means_no_step_back_and_names_what_is_wrong() {
        let alb = FakeAlb::default()
            .forward(LISTENER_A, (BLUE, 40), (GREEN, 60))
            .health(BLUE, vec![]);
        let apis = Apis {
            alb: &alb,
            ..Apis::fake()
        };
        let out = step_back(&apis, &plan(true), 60, &at(60))
            .await
            .expect("a look");
        assert!(!out.stepped_back);
        assert!(
            out.reason
                .contains("stable target group blue: 0 healthy targets, 1 needed"),
            "{}",
            out.reason
        );
        assert_eq!(alb.weight(LISTENER_A, GREEN), 60, "nothing written");
    }

    /// The old cluster behind a Route 53 record: its health check is what is looked at; a
    /// record without one has nothing to look at and does not hold the step back.
    #[tokio::test]
    async fn a_stable_record_whose_health_check_fails_means_no_step_back() {
        let plan = RolloutPlan::parse(json!({
            "cluster": {"name": "green", "region": "us-east-1"},
            "trafficTargets": [{"route53": {
                "hostedZoneId": "Z1", "recordName": "www.example.com", "recordType": "CNAME",
                "stableSetIdentifier": "blue", "canarySetIdentifier": "green"}}],
            "steps": [{"weight": 50}, {"weight": 100}],
            "bake": {"seconds": 60, "checkIntervalSeconds": 10},
            "rollback": {"gradual": {"steps": [50, 0]}},
        }))
        .expect("a valid plan");
        let expected = |canary: u16| {
            vec![TargetWeights::new(
                "route53:Z1:www.example.com.:CNAME",
                WeightPair {
                    stable: 100 - canary,
                    canary,
                },
            )]
        };
        let failing =
            FakeRoute53::at(50, 50)
                .stable_health(vec!["Failure: HTTP Status Code 503".to_owned(); 8]);
        let apis = Apis {
            route53: &failing,
            ..Apis::fake()
        };
        let out = step_back(&apis, &plan, 50, &expected(50))
            .await
            .expect("a look");
        assert!(!out.stepped_back);
        assert!(
            out.reason
                .contains("health check hc-blue: 0 of 8 checkers report healthy"),
            "{}",
            out.reason
        );
        assert_eq!(failing.weights(), (50, 50), "nothing written");

        let unchecked = FakeRoute53::at(50, 50);
        let apis = Apis {
            route53: &unchecked,
            ..Apis::fake()
        };
        let out = step_back(&apis, &plan, 50, &expected(50))
            .await
            .expect("a step");
        assert_eq!((out.stepped_back, unchecked.weights()), (true, (75, 25)));
    }

    #[tokio::test]
    async fn a_plan_without_gradual_or_a_weight_not_its_own_is_refused_and_nothing_moves() {
        let alb = FakeAlb::default().forward(LISTENER_A, (BLUE, 40), (GREEN, 60));
        let apis = Apis {
            alb: &alb,
            ..Apis::fake()
        };
        let err = step_back(&apis, &plan(false), 60, &at(60))
            .await
            .expect_err("no gradual");
        assert_eq!(err.name().as_str(), "InvalidInput");
        assert!(err.to_string().contains("rollback.gradual"), "{err}");
        let err = step_back(&apis, &plan(true), 55, &at(60))
            .await
            .expect_err("not a step");
        assert!(err.to_string().contains("failedWeight 55"), "{err}");
        let err = step_back(&apis, &plan(true), 60, &[])
            .await
            .expect_err("no weights");
        assert!(err.to_string().contains("expected has no weights"), "{err}");
        assert_eq!(alb.weight(LISTENER_A, GREEN), 60);
    }

    #[tokio::test]
    async fn a_target_someone_else_moved_is_an_error_the_state_machine_restores_on() {
        let alb = FakeAlb::default()
            .forward(LISTENER_A, (BLUE, 80), (GREEN, 20))
            .health(BLUE, healthy(1));
        let apis = Apis {
            alb: &alb,
            ..Apis::fake()
        };
        let err = step_back(&apis, &plan(true), 60, &at(60))
            .await
            .expect_err("moved");
        assert_eq!(err.name().as_str(), "WeightsChangedExternally");
        assert_eq!(alb.weight(LISTENER_A, GREEN), 20);
    }
}
