//! The checks: `validate` (at Prepare, before any traffic moves: every named alarm exists,
//! every prefix matches an alarm, CloudWatch accepts the metric queries) and `evaluate` (every
//! check interval of a bake: read alarms and metrics, judge them with
//! `canary_core::analysis::decide`, and say whether to roll back).

use std::collections::BTreeSet;
use std::time::SystemTime;

use canary_core::analysis::{decide, BakeProgress, CheckVerdict, Decision};
use canary_core::metrics::{cluster_dimension, Point};
use canary_core::RolloutPlan;
use serde::Serialize;
use tracing::{info, warn};

use crate::metrics::emit_metrics;
use crate::signals::{sources, SignalApis};

pub use crate::error::AnalysisError;

#[derive(Debug, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct ValidateOutput {
    /// The alarms the rollout watches (names and prefix matches), at most
    /// [`canary_core::limits::MAX_ALARMS`]. The state machine keeps only their number.
    pub alarms: Vec<String>,
    /// Metric queries each check makes.
    pub metric_queries: usize,
    /// What the queries give now (`plan check` shows them); not part of the state.
    #[serde(skip)]
    pub current: Vec<String>,
}

/// At Prepare: every signal source of the plan can be evaluated (see `SignalSource::validate`).
pub async fn validate(
    apis: &SignalApis<'_>,
    plan: &RolloutPlan,
) -> Result<ValidateOutput, AnalysisError> {
    let now = SystemTime::now();
    let mut alarms = BTreeSet::new();
    let mut metric_queries = 0;
    let mut current = Vec::new();
    for source in sources(apis, plan) {
        let validated = source.validate(now).await?;
        alarms.extend(validated.alarms);
        metric_queries += validated.metric_queries;
        current.extend(validated.current);
    }
    Ok(ValidateOutput {
        alarms: alarms.into_iter().collect(),
        metric_queries,
        current,
    })
}

/// At a check: every source's outcomes, judged together with the bake's progress.
pub async fn evaluate(
    apis: &SignalApis<'_>,
    plan: &RolloutPlan,
    progress: BakeProgress,
    now: SystemTime,
) -> Result<Decision, AnalysisError> {
    let cluster = cluster_dimension(&plan.cluster.region, &plan.cluster.name);
    let mut outcomes = Vec::new();
    let mut points = Vec::new();
    for source in sources(apis, plan) {
        match source.collect(now, &cluster).await {
            Ok(collected) => {
                outcomes.extend(collected.outcomes);
                points.extend(collected.points);
            }
            Err(error) => return unjudged(plan, progress, now, error),
        }
    }
    let decision = decide(plan.analysis.as_ref(), &outcomes, progress);
    points.extend(Point::check_result(
        &cluster,
        decision.verdict == CheckVerdict::Pass,
        decision.verdict == CheckVerdict::Fail,
    ));
    emit_metrics(points);
    // The verdict carries a bounded summary; every signal's reason goes to the log.
    for outcome in &outcomes {
        info!(verdict = ?outcome.verdict, reason = %outcome.reason, "signal");
    }
    info!(
        verdict = ?decision.verdict,
        rollback = decision.rollback,
        consecutive_failures = decision.consecutive_failures,
        summary = %decision.summary,
        "check evaluated"
    );
    Ok(decision)
}

/// A check a metrics provider left without a verdict (unreachable, failing: a retryable
/// error). Within the plan's `analysis.maxUnjudgedSeconds` since the first such check, the
/// check is unjudged and the bake waits for the next one; past it, the provider's error ends
/// the check, and the rollout rolls back. Any other error is the check's error as it was.
fn unjudged(
    plan: &RolloutPlan,
    progress: BakeProgress,
    now: SystemTime,
    error: AnalysisError,
) -> Result<Decision, AnalysisError> {
    let AnalysisError::MetricsProvider {
        path,
        name,
        message,
    } = error
    else {
        return Err(error);
    };
    let bound = plan
        .analysis
        .as_ref()
        .map(|a| a.max_unjudged_seconds(progress.check_interval_seconds));
    let (Some(bound), true) = (bound, name.is_retryable()) else {
        return Err(AnalysisError::MetricsProvider {
            path,
            name,
            message,
        });
    };
    let now = epoch_seconds(now);
    let since = match progress.unjudged_since {
        0 => now,
        since => since.min(now),
    };
    let waited = now - since;
    if waited >= bound {
        warn!(%path, waited, bound, "no verdict past analysis.maxUnjudgedSeconds: rolling back");
        return Err(AnalysisError::MetricsProvider {
            path,
            name,
            message: format!(
                "{message}; the canary has gone {waited} s without a verdict, past \
                 analysis.maxUnjudgedSeconds ({bound} s)"
            ),
        });
    }
    warn!(%path, waited, bound, "check unjudged: the metrics provider gave no answer");
    Ok(Decision::unjudged(
        progress,
        since,
        format!(
            "unjudged: {path}: {message} ({waited} s without a verdict; the rollout rolls back \
             at {bound} s, analysis.maxUnjudgedSeconds)"
        ),
    ))
}

fn epoch_seconds(at: SystemTime) -> u64 {
    at.duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}
