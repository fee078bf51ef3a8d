//! The target health gate (plan `targetHealth`): before the first non-zero weight, does the
//! load balancer see the new cluster's targets as healthy? One look per invocation; the state
//! machine polls (`TargetHealth`, `TargetsHealthy?`) and fails before traffic when time is up.

use canary_core::{limits, RolloutPlan};
use tracing::info;

use crate::error::ShiftError;
use crate::outputs::TargetHealthOutput;
use crate::traffic::{routers, Apis, Health};

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
        match router.health(gate.min_healthy_targets).await? {
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
