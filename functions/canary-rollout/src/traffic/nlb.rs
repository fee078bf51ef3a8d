//! What only a Network Load Balancer target has; its weights, writes, owners and health are the
//! ALB router's (`alb.rs`, over `ForwardTarget`): the same `ModifyListener` forward config.
//!
//! An NLB balances connections, not requests: a flow stays on the target group it opened on
//! until it closes, so a new weight reaches only connections opened after it. Its forward
//! action takes target groups of one protocol, no target group stickiness, and its listeners
//! have no rules (the plan's `nlb` has no `ruleArn`).

use canary_aws::TargetGroupInfo;

use crate::error::ShiftError;

/// Refuses stable and canary target groups of different protocols, before anything is written:
/// ELB would refuse the forward action that names both, at the canary's attach or a step.
pub(super) fn refuse_mixed_protocols(
    label: &str,
    groups: &[TargetGroupInfo],
) -> Result<(), ShiftError> {
    let mut protocols: Vec<(&str, &str)> = groups
        .iter()
        .map(|g| (g.arn.as_str(), g.protocol.as_deref().unwrap_or("unknown")))
        .collect();
    protocols.dedup_by(|a, b| a.1 == b.1);
    if protocols.len() <= 1 {
        return Ok(());
    }
    let said: Vec<String> = protocols
        .iter()
        .map(|(arn, protocol)| format!("{arn} is {protocol}"))
        .collect();
    Err(ShiftError::TargetMisconfigured {
        path: label.to_owned(),
        message: format!(
            "an NLB listener forwards to target groups of one protocol, and {}; nothing was \
             written. Give the new cluster a target group of the stable one's protocol",
            said.join(", ")
        ),
    })
}

/// Prepare's note on what a step of an NLB moves, with the bake the plan gives it.
pub(super) fn flow_note(min_step_seconds: Option<i64>, shortest_bake_seconds: i64) -> String {
    let floor = match min_step_seconds {
        Some(seconds) => format!("minStepSeconds {seconds} s holds every step at least that long"),
        None => "set minStepSeconds to the clients' connection lifetime so that no step is \
                 judged before its weight has reached them"
            .to_owned(),
    };
    format!(
        "an NLB moves new connections only: connections open at a step stay on their target \
         group until they close; the shortest bake is {shortest_bake_seconds} s, {floor}"
    )
}

#[cfg(test)]
mod tests {
    use canary_aws::fakes::FakeAlb;
    use canary_core::RolloutPlan;
    use serde_json::json;

    use crate::error::ShiftError;
    use crate::prepare::check_targets;
    use crate::traffic::Apis;

    const LISTENER: &str = "arn:aws:elasticloadbalancing:us-east-1:123456789012:listener/net/tcp/50dc6c495c0c9188/f2f7dc8efc522ab2";
    const BLUE: &str =
        "arn:aws:elasticloadbalancing:us-east-1:123456789012:targetgroup/blue/73e2d6bc24d8a067";
    const GREEN: &str =
        "arn:aws:elasticloadbalancing:us-east-1:123456789012:targetgroup/green/73e2d6bc24d8a068";

    fn plan(min_step_seconds: Option<i64>) -> canary_core::plan::ValidPlan {
        let mut nlb = json!({"listenerArn": LISTENER, "stableTargetGroupArn": BLUE, "canaryTargetGroupArn": GREEN});
        if let Some(seconds) = min_step_seconds {
            nlb["minStepSeconds"] = json!(seconds);
        }
        RolloutPlan::parse(json!({
            "cluster": {"name": "green", "region": "us-east-1"},
            "trafficTargets": [{"nlb": nlb}],
            "steps": [{"weight": 10}, {"weight": 100}],
            "bake": {"seconds": 600, "checkIntervalSeconds": 60},
        }))
        .expect("a valid plan")
    }

    #[tokio::test]
    async fn an_nlb_is_read_and_noted_as_one_that_moves_new_connections_only() {
        let alb = FakeAlb::default()
            .forward(LISTENER, (BLUE, 100), (GREEN, 0))
            .protocol(BLUE, "TCP")
            .protocol(GREEN, "TCP");
        let apis = Apis {
            alb: &alb,
            ..Apis::fake()
        };
        let checked = check_targets(&apis, &plan(Some(600)))
            .await
            .expect("checked");
        let report = &checked[0].report;
        assert_eq!(report.kind, "nlb");
        assert!(
            report
                .notes
                .iter()
                .any(|n| n.contains("moves new connections only")
                    && n.contains("minStepSeconds 600 s")),
            "{:?}",
            report.notes
        );
        let unset = check_targets(&apis, &plan(None)).await.expect("checked");
        assert!(
            unset[0]
                .report
                .notes
                .iter()
                .any(|n| n.contains("set minStepSeconds")),
            "{:?}",
            unset[0].report.notes
        );
    }

    #[tokio::test]
    async fn target_groups_of_two_protocols_are_refused_naming_both_and_nothing_is_written() {
        let alb = FakeAlb::default()
            .forward(LISTENER, (BLUE, 100), (GREEN, 0))
            .protocol(BLUE, "TCP")
            .protocol(GREEN, "UDP");
        let apis = Apis {
            alb: &alb,
            ..Apis::fake()
        };
        let Err(err) = check_targets(&apis, &plan(None)).await else {
            panic!("mixed protocols were accepted")
        };
        let ShiftError::TargetMisconfigured { path, message } = &err else {
            panic!("{err:?}")
        };
        assert!(path.starts_with("trafficTargets[0]"), "{path}");
        assert!(
            message.contains(&format!("{BLUE} is TCP"))
                && message.contains(&format!("{GREEN} is UDP")),
            "{message}"
        );
        assert_eq!(alb.weight(LISTENER, BLUE), 100);
    }

    #[test]
    fn a_step_shorter_than_min_step_seconds_is_refused_by_the_plan() {
        let Err(errors) = RolloutPlan::parse(json!({
            "cluster": {"name": "green", "region": "us-east-1"},
            "trafficTargets": [{"nlb": {"listenerArn": LISTENER, "stableTargetGroupArn": BLUE,
                "canaryTargetGroupArn": GREEN, "minStepSeconds": 600}}],
            "steps": [{"weight": 10, "bakeSeconds": 300}, {"weight": 100}],
            "bake": {"seconds": 600, "checkIntervalSeconds": 60},
        })) else {
            panic!("a step shorter than minStepSeconds was accepted")
        };
        let errors = errors.to_string();
        assert!(
            errors.contains("steps[0]") && errors.contains("minStepSeconds (600 s)"),
            "{errors}"
        );
        assert!(!errors.contains("steps[1]"), "{errors}");
    }
}
