//! The rollout's CloudWatch metrics (see `canary_core::metrics`): every target's canary
//! share after each change, and each rollback with its cause and how long it took.

use std::time::SystemTime;

use canary_core::metrics::{cluster_dimension, Point};
use canary_core::{RolloutPlan, TargetWeights};

fn cluster(plan: &RolloutPlan) -> String {
    cluster_dimension(&plan.cluster.region, &plan.cluster.name)
}

/// The weights every target was read back at.
pub fn weights(plan: &RolloutPlan, weights: &[TargetWeights]) {
    let cluster = cluster(plan);
    emit_metrics(weights.iter().map(|w| Point::canary_weight(&cluster, w)));
}

/// A rollback that put every target back at the baseline: its cause, and the time since the
/// failure (`failed_at`, RFC 3339, as Step Functions gives `$$.State.EnteredTime`) when known.
pub fn rollback(plan: &RolloutPlan, cause: &str, failed_at: Option<&str>, now: SystemTime) {
    let cluster = cluster(plan);
    let seconds = failed_at
        .and_then(utc_time)
        .and_then(|at| now.duration_since(at).ok())
        .map(|elapsed| elapsed.as_secs_f64());
    emit_metrics(
        std::iter::once(Point::rollback(&cluster, cause))
            .chain(seconds.map(|s| Point::rollback_seconds(&cluster, s))),
    );
}

/// The look after a rollback's settle period found the baseline undone and put it back.
pub fn rollback_reverted(plan: &RolloutPlan) {
    emit_metrics([Point::rollback_reverted(&cluster(plan))]);
}

/// An attempt of a rollback's restore failed: pages at once (`RestoreFailingAlarm`).
pub fn restore_failure(plan: &RolloutPlan) {
    emit_metrics([Point::restore_failure(&cluster(plan))]);
}

/// The safety net's sweep restored a rollout its safety net had not: pages
/// (`SafetyNetSweptAlarm`).
pub fn safety_net_sweep(plan: &RolloutPlan) {
    emit_metrics([Point::safety_net_sweep(&cluster(plan))]);
}

/// The rollout's alarm watch could not be registered, the first time: instant rollback is off.
pub fn alarm_watch_unavailable(plan: &RolloutPlan) {
    emit_metrics([Point::alarm_watch_unavailable(&cluster(plan))]);
}

/// An event from `source` was refused as malformed, and answered as handled.
pub fn event_refused(source: &'static str) {
    emit_metrics([Point::event_refused(source)]);
}

/// A change freeze held the rollout at a check or a look of its gate.
pub fn frozen_check(plan: &RolloutPlan) {
    emit_metrics([Point::frozen_check(&cluster(plan))]);
}

/// A look of a gate before traffic (`canary_core::metrics::GATES`) held the rollout.
pub fn gate_hold(plan: &RolloutPlan, gate: &'static str) {
    emit_metrics([Point::gate_hold(&cluster(plan), gate)]);
}

/// A foreign change stopped the rollout.
pub fn foreign_change(plan: &RolloutPlan) {
    emit_metrics([Point::foreign_change(&cluster(plan))]);
}

pub(crate) use canary_aws::utc_time;

pub use canary_core::metrics::emit as emit_metrics;
