//! Prepare: everything that must hold before any traffic moves, checked with reads only;
//! then, and only then, the canary target group is attached at weight 0 where it is missing
//! (an ALB target group no rule forwards to is "unused" and not health-checked).

use std::collections::HashSet;

use canary_aws::{ForwardRead, TargetGroupInfo};
use canary_core::plan::{ResolvedStep, ValidPlan};
use canary_core::{RolloutPlan, TargetWeights, TrafficTarget, WeightPair};
use serde_json::Value;
use tracing::{info, warn};

use crate::error::ShiftError;
use crate::metrics;
use crate::request::{ExecutionContext, PrepareOutput, TargetReport};
use crate::traffic::{self, locate, Apis, Located, Observed};

pub async fn prepare(
    apis: &Apis<'_>,
    plan: Value,
    execution: &ExecutionContext,
) -> Result<PrepareOutput, ShiftError> {
    let ValidPlan { plan, steps } = RolloutPlan::parse(plan)?;
    refuse_concurrent_rollout(
        apis,
        &plan,
        &execution.state_machine_arn,
        Some(&execution.execution_arn),
    )
    .await?;
    let located = locate(&plan.traffic_targets);
    let mut checked = check_targets(apis, &plan, &steps).await?;

    // Every check passed: the only write prepare makes.
    for (target, check) in located.iter().zip(&mut checked) {
        if check.attach_canary {
            traffic::write(apis, target, &check.reading, check.baseline).await?;
            check.report.canary_attached = true;
            info!(target_key = %target.target.key(), "canary target group attached at weight 0");
        }
    }

    let baseline: Vec<TargetWeights> = located
        .iter()
        .zip(&checked)
        .map(|(target, check)| TargetWeights::new(target.target.key(), check.baseline))
        .collect();
    metrics::weights(&plan, &baseline);
    Ok(PrepareOutput {
        baseline,
        steps,
        targets: checked.into_iter().map(|c| c.report).collect(),
    })
}

/// Every read-only check prepare makes of the plan's targets, in plan order: they exist,
/// forward to the named target groups or have both weighted records, the stable side takes
/// traffic, Route 53 TTLs are shorter than the shortest bake. Writes nothing, so the operator
/// CLI's dry run (`cluster-canary plan check`) uses it as is.
pub async fn check_targets(
    apis: &Apis<'_>,
    plan: &RolloutPlan,
    steps: &[ResolvedStep],
) -> Result<Vec<TargetCheck>, ShiftError> {
    let shortest_bake = steps
        .iter()
        .map(|s| i64::from(s.bake_seconds))
        .min()
        .unwrap_or(0);
    let mut checked = Vec::with_capacity(plan.traffic_targets.len());
    for target in &locate(&plan.traffic_targets) {
        checked.push(check_target(apis, target, shortest_bake).await?);
    }
    Ok(checked)
}

/// Refuses when another RUNNING execution of the same state machine shifts any of the plan's
/// targets. Two executions that start at the same instant may both refuse: the safe side.
/// `own_execution` is the asking execution (none for a dry run).
pub async fn refuse_concurrent_rollout(
    apis: &Apis<'_>,
    plan: &RolloutPlan,
    state_machine_arn: &str,
    own_execution: Option<&str>,
) -> Result<(), ShiftError> {
    let ours: HashSet<String> = plan
        .traffic_targets
        .iter()
        .map(TrafficTarget::key)
        .collect();
    let running = apis
        .executions
        .running_executions(state_machine_arn)
        .await
        .map_err(|e| ShiftError::aws("execution.stateMachineArn", e))?;
    for other in running
        .iter()
        .filter(|arn| Some(arn.as_str()) != own_execution)
    {
        let input = apis
            .executions
            .execution_input(other)
            .await
            .map_err(|e| ShiftError::aws("execution.stateMachineArn", e))?;
        if let Some(target) = target_keys(input.as_deref())
            .into_iter()
            .find(|key| ours.contains(key))
        {
            return Err(ShiftError::ConcurrentRollout {
                execution_arn: other.clone(),
                target,
            });
        }
    }
    Ok(())
}

/// The target keys of another execution's input (a plan). Lenient: an input that is not a
/// plan shifts nothing we can recognise, and will fail its own Prepare.
fn target_keys(input: Option<&str>) -> Vec<String> {
    let Some(plan) = input.and_then(|text| serde_json::from_str::<Value>(text).ok()) else {
        return Vec::new();
    };
    plan.get("trafficTargets")
        .and_then(Value::as_array)
        .map(|targets| {
            targets
                .iter()
                .filter_map(|t| serde_json::from_value::<TrafficTarget>(t.clone()).ok())
                .map(|t| t.key())
                .collect()
        })
        .unwrap_or_default()
}

/// What the checks found for one target.
pub struct TargetCheck {
    /// The weights now: what a rollback restores.
    pub baseline: WeightPair,
    /// What the checks read, for the one write prepare may make (attaching the canary).
    reading: traffic::Reading,
    /// The canary target group is not in the forward action yet: prepare adds it at weight 0.
    pub attach_canary: bool,
    pub report: TargetReport,
}

async fn check_target(
    apis: &Apis<'_>,
    located: &Located<'_>,
    shortest_bake: i64,
) -> Result<TargetCheck, ShiftError> {
    let misconfigured = |message: String| ShiftError::TargetMisconfigured {
        path: located.label.clone(),
        message,
    };
    let mut report = TargetReport {
        target: located.target.key(),
        kind: "",
        canary_attached: false,
        sticky: false,
        ttl_seconds: None,
        notes: Vec::new(),
    };
    let (reading, attach_canary) = match located.target {
        TrafficTarget::Alb(alb) => {
            report.kind = "alb";
            let read = apis
                .alb
                .read_forward(alb)
                .await
                .map_err(|e| ShiftError::aws(&located.label, e))?;
            let region = alb.region().unwrap_or_default();
            let groups: Vec<TargetGroupInfo> = apis
                .alb
                .target_groups(
                    region,
                    &[
                        alb.stable_target_group_arn.clone(),
                        alb.canary_target_group_arn.clone(),
                    ],
                )
                .await
                .map_err(|e| ShiftError::aws(&located.label, e))?;
            let group_sticky = match &read {
                ForwardRead::Forward(f) => f.group_stickiness.filter(|s| s.enabled),
                ForwardRead::NotForward { .. } => None,
            };
            if let Some(s) = group_sticky {
                report.notes.push(format!(
                    "target group stickiness is on in the forward action ({} s): clients stay on their target group that long whatever the weights",
                    s.duration_seconds.unwrap_or_default()
                ));
            }
            for group in groups.iter().filter(|g| g.stickiness_enabled) {
                report.notes.push(format!(
                    "target group {} has sticky sessions (stickiness.enabled): sticky clients do not follow weight changes",
                    group.arn
                ));
            }
            report.sticky = !report.notes.is_empty();
            let attach = matches!(&read, ForwardRead::Forward(f) if f.weight_of(&alb.canary_target_group_arn).is_none());
            (traffic::Reading::alb(alb, read), attach)
        }
        TrafficTarget::Route53(r53) => {
            report.kind = "route53";
            let records = apis
                .route53
                .records(r53)
                .await
                .map_err(|e| ShiftError::aws(&located.label, e))?;
            let observed = traffic::route53_observed(located, r53, &records)?;
            let ours = records.iter().filter(|r| {
                r.set_identifier.as_deref() == Some(r53.stable_set_identifier.as_str())
                    || r.set_identifier.as_deref() == Some(r53.canary_set_identifier.as_str())
            });
            for record in ours {
                match (record.ttl, &record.alias_target) {
                    (Some(ttl), _) => {
                        report.ttl_seconds = report.ttl_seconds.max(Some(ttl));
                    }
                    (None, Some(alias)) => report.notes.push(format!(
                        "record `{}` is an alias to {alias}: resolvers cache it for the alias target's TTL (60 s for a load balancer)",
                        record.set_identifier.as_deref().unwrap_or_default()
                    )),
                    (None, None) => {}
                }
            }
            if let Some(ttl) = report.ttl_seconds.filter(|ttl| *ttl > shortest_bake) {
                return Err(misconfigured(format!(
                    "the records' TTL is {ttl} s, longer than the shortest bake ({shortest_bake} s): resolvers would still \
                     use the previous weights when the step's checks run; lower the TTL or lengthen the bake"
                )));
            }
            (traffic::Reading::route53(observed), false)
        }
    };
    let baseline = match &reading.observed {
        Observed::Pair(pair) => *pair,
        Observed::Reshaped(why) => return Err(misconfigured(why.clone())),
    };
    if baseline.stable == 0 {
        return Err(misconfigured(format!(
            "the stable side has weight 0 ({baseline}): there is no traffic to move, and nothing safe to roll back to"
        )));
    }
    if baseline.canary > 0 {
        let note = format!(
            "the canary already receives {:.1} % of the traffic ({baseline}); rollback restores that",
            baseline.canary_share_percent()
        );
        warn!(target_key = %report.target, "{note}");
        report.notes.push(note);
    }
    Ok(TargetCheck {
        baseline,
        reading,
        attach_canary,
        report,
    })
}

#[cfg(test)]
mod tests {
    use super::target_keys;

    #[test]
    fn other_inputs_are_read_leniently() {
        assert!(target_keys(None).is_empty());
        assert!(target_keys(Some("not json")).is_empty());
        assert!(target_keys(Some(r#"{"trafficTargets": "nope"}"#)).is_empty());
        let input = r#"{"trafficTargets": [
            {"alb": {"listenerArn": "L", "stableTargetGroupArn": "S", "canaryTargetGroupArn": "C"}},
            {"bogus": {}}
        ]}"#;
        assert_eq!(target_keys(Some(input)), ["L"]);
    }
}
