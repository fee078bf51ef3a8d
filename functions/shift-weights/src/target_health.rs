//! The target health gate (plan `targetHealth`): before the first non-zero weight, does the
//! load balancer see the new cluster's targets as healthy? One look per invocation; the state
//! machine polls (`TargetHealth`, `TargetsHealthy?`) and fails before traffic when time is up.

use canary_core::gates::{health_check_problem, target_group_problem};
use canary_core::{limits, RolloutPlan, TrafficTarget};
use serde_json::Value;
use tracing::info;

use crate::error::ShiftError;
use crate::request::TargetHealthOutput;
use crate::traffic::{locate, route53_record, Apis, Located};

pub async fn target_health(apis: &Apis<'_>, plan: Value) -> Result<TargetHealthOutput, ShiftError> {
    let valid = RolloutPlan::parse(plan)?;
    let Some(gate) = valid.plan.target_health else {
        return Err(ShiftError::InvalidInput(
            "the plan has no `targetHealth` gate to check".to_owned(),
        ));
    };
    let gate = gate.resolve();
    let mut problems = Vec::new();
    let mut notes = Vec::new();
    for located in locate(&valid.plan.traffic_targets) {
        match look(apis, &located, gate.min_healthy_targets).await? {
            Look::Ready => {}
            Look::NotReady(problem) => problems.push(format!("{}: {problem}", located.label)),
            Look::NotGated(note) => notes.push(format!("{}: {note}", located.label)),
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

enum Look {
    Ready,
    NotReady(String),
    /// Nothing to wait for on this target (a Route 53 record without a health check).
    NotGated(String),
}

async fn look(
    apis: &Apis<'_>,
    located: &Located<'_>,
    min_healthy: u32,
) -> Result<Look, ShiftError> {
    let aws = |e| ShiftError::aws(&located.label, e);
    match located.target {
        TrafficTarget::Alb(alb) => {
            let arn = &alb.canary_target_group_arn;
            let targets = apis.alb.target_health(arn).await.map_err(aws)?;
            // `targetgroup/<name>/<id>`: the name is what a person recognises.
            let name = arn.split('/').nth(1).unwrap_or(arn);
            let group = format!("canary target group {name}");
            Ok(target_group_problem(&group, &targets, min_healthy)
                .map_or(Look::Ready, Look::NotReady))
        }
        TrafficTarget::Route53(r53) => {
            let records = apis.route53.records(r53).await.map_err(aws)?;
            let canary = route53_record(located, r53, &records, &r53.canary_set_identifier)?;
            let Some(health_check_id) = &canary.health_check_id else {
                return Ok(Look::NotGated(
                    "the canary record has no Route 53 health check; nothing to wait for"
                        .to_owned(),
                ));
            };
            let reports = apis
                .route53
                .health_check_reports(health_check_id)
                .await
                .map_err(aws)?;
            Ok(health_check_problem(health_check_id, &reports).map_or(Look::Ready, Look::NotReady))
        }
    }
}
