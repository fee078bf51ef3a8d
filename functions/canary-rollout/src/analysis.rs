//! The checks: `validate` (at Prepare, before any traffic moves: every named alarm exists,
//! every prefix matches an alarm, CloudWatch accepts the metric queries) and `evaluate` (every
//! check interval of a bake: read alarms and metrics, judge them with
//! `canary_core::analysis::decide`, and say whether to roll back).

use std::collections::BTreeSet;
use std::time::SystemTime;

use canary_core::analysis::{
    decide_asking, BakeProgress, CheckOutcome, CheckVerdict, ComparisonSays, Decision,
};
use canary_core::metrics::{cluster_dimension, Point};
use canary_core::ErrorName;
use canary_core::RolloutPlan;
use serde::Serialize;
use tracing::{info, warn};

use crate::metrics::emit_metrics;
use crate::signals::{sources, Carried, SignalApis};

pub use crate::error::AnalysisError;

#[derive(Debug, Serialize, PartialEq, schemars::JsonSchema)]
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
    for source in sources(apis, plan, &Carried::default()) {
        let validated = source.validate(now).await?;
        alarms.extend(validated.alarms);
        metric_queries += validated.metric_queries;
        current.extend(validated.current);
    }
    crate::step_back::validate_alarms(apis.cloudwatch, plan).await?;
    Ok(ValidateOutput {
        alarms: alarms.into_iter().collect(),
        metric_queries,
        current,
    })
}

/// At a check: every source's outcomes, judged together with the bake's progress. The
/// decision carries the comparison's evidence on (what `carried` held, and what this check
/// took in).
pub async fn evaluate(
    apis: &SignalApis<'_>,
    plan: &RolloutPlan,
    progress: BakeProgress,
    carried: &Carried,
    now: SystemTime,
) -> Result<Decision, AnalysisError> {
    refuse_past_the_unjudged_bound(plan, progress, now)?;
    let cluster = cluster_dimension(&plan.cluster.region, &plan.cluster.name);
    let mut outcomes = Vec::new();
    let mut points = Vec::new();
    let mut unanswered = None;
    let mut comparison = ComparisonSays::default();
    let mut evidence = carried.evidence.clone();
    for source in sources(apis, plan, carried) {
        match source.collect(now, &cluster).await {
            Ok(collected) => {
                outcomes.extend(collected.outcomes);
                points.extend(collected.points);
                comparison.asks |= collected.asks;
                comparison.regression_shown |= collected.regression_shown;
                comparison.leaning |= collected.leaning;
                // Taken in even when another source leaves the check unjudged: each period
                // counts once, whenever it is judged.
                if let Some(taken) = collected.evidence {
                    evidence = taken;
                }
            }
            Err(AnalysisError::MetricsProvider {
                path,
                name,
                message,
            }) if name.is_retryable() => {
                outcomes.push(CheckOutcome::new(
                    CheckVerdict::Inconclusive,
                    format!("{path}: no answer: {message}"),
                ));
                unanswered.get_or_insert(Unanswered {
                    path,
                    name,
                    message,
                });
            }
            Err(error) => return Err(error),
        }
    }
    // A signal that failed is a failure whatever else went unanswered; without one, a check
    // a provider left unanswered is unjudged.
    if let Some(unanswered) = unanswered {
        if !outcomes.iter().any(|o| o.verdict == CheckVerdict::Fail) {
            return unjudged(plan, progress, now, unanswered).map(|d| d.with_evidence(&evidence));
        }
    }
    let decision = decide_asking(plan.analysis.as_ref(), &outcomes, progress, comparison)
        .with_evidence(&evidence);
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

/// A metrics provider's error that leaves its checks without an answer (unreachable,
/// failing, rate limited: a retryable error).
struct Unanswered {
    path: String,
    name: ErrorName,
    message: String,
}

/// Before asking anything: a step already unjudged for `analysis.maxUnjudgedSeconds` fails
/// now, rather than after one more request that may take the provider's whole timeout. So an
/// outage rolls back within the bound + one check interval + one provider timeout (the
/// request of the last check started inside the bound), as docs/functions.md says.
fn refuse_past_the_unjudged_bound(
    plan: &RolloutPlan,
    progress: BakeProgress,
    now: SystemTime,
) -> Result<(), AnalysisError> {
    let since = progress.unjudged_since;
    let Some(analysis) = plan.analysis.as_ref().filter(|_| since > 0) else {
        return Ok(());
    };
    let bound = analysis.max_unjudged_seconds(progress.check_interval_seconds);
    let waited = epoch_seconds(now).saturating_sub(since);
    if waited < bound {
        return Ok(());
    }
    warn!(
        waited,
        bound, "no verdict past analysis.maxUnjudgedSeconds: rolling back without asking again"
    );
    // Which providers can leave a check unanswered: the plan's query providers.
    let providers: Vec<&str> = [
        ("analysis.prometheus", analysis.prometheus.is_some()),
        ("analysis.datadog", analysis.datadog.is_some()),
    ]
    .into_iter()
    .filter_map(|(path, given)| given.then_some(path))
    .collect();
    Err(AnalysisError::MetricsProvider {
        path: match providers.is_empty() {
            true => "analysis".to_owned(),
            false => providers.join(", "),
        },
        name: ErrorName::MetricsProviderUnavailable,
        message: format!(
            "the metrics provider left the checks unanswered: the canary has gone {waited} s \
             without a verdict, past analysis.maxUnjudgedSeconds ({bound} s)"
        ),
    })
}

/// A check a metrics provider left without a verdict, and no other signal failed. Within the
/// plan's `analysis.maxUnjudgedSeconds` since the first such check, the check is unjudged and
/// the bake waits for the next one; past it, the provider's error ends the check, and the
/// rollout rolls back.
fn unjudged(
    plan: &RolloutPlan,
    progress: BakeProgress,
    now: SystemTime,
    unanswered: Unanswered,
) -> Result<Decision, AnalysisError> {
    let Unanswered {
        path,
        name,
        message,
    } = unanswered;
    let bound = plan.analysis.as_ref().map_or(0, |a| {
        a.max_unjudged_seconds(progress.check_interval_seconds)
    });
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

#[cfg(test)]
mod tests {
    use async_trait::async_trait;
    use canary_aws::fakes::FakeCloudWatch;
    use canary_aws::{AlarmStateValue, PrometheusApi, QueryError};
    use canary_core::analysis::PrometheusEndpoint;
    use serde_json::{json, Value};

    use super::*;

    /// A Prometheus that never answers.
    struct Down;

    #[async_trait]
    impl PrometheusApi for Down {
        async fn instant_query(
            &self,
            endpoint: &PrometheusEndpoint,
            _: &str,
            _: SystemTime,
        ) -> Result<Value, QueryError> {
            Err(QueryError::Unreachable {
                url: endpoint.query_url(),
                message: "timed out".to_owned(),
            })
        }
    }

    fn plan() -> RolloutPlan {
        RolloutPlan::parse(json!({
            "cluster": {"name": "green", "region": "us-east-1"},
            "trafficTargets": [{"route53": {
                "hostedZoneId": "Z1", "recordName": "app.example.com", "recordType": "A",
                "stableSetIdentifier": "blue", "canarySetIdentifier": "green"}}],
            "steps": [{"weight": 10}, {"weight": 100}],
            "bake": {"seconds": 60, "checkIntervalSeconds": 10},
            "analysis": {
                "alarms": {"names": ["web-green-5xx"]},
                "prometheus": {"url": "http://prometheus.example:9090", "checks": [
                    {"name": "errors", "query": "sum(errors)", "max": 1}]},
            },
        }))
        .expect("a valid plan")
        .plan
    }

    fn progress() -> BakeProgress {
        BakeProgress {
            check: 2,
            checks: 6,
            passes: 1,
            check_interval_seconds: 10,
            ..BakeProgress::default()
        }
    }

    #[tokio::test]
    async fn a_failing_alarm_rolls_back_even_while_a_provider_is_unanswered() {
        let alarms = FakeCloudWatch::default().with("web-green-5xx", AlarmStateValue::Alarm);
        let apis = SignalApis {
            cloudwatch: &alarms,
            prometheus: &Down,
            ..SignalApis::fake()
        };
        let decision = evaluate(
            &apis,
            &plan(),
            progress(),
            &Carried::default(),
            SystemTime::now(),
        )
        .await
        .expect("a verdict");
        assert_eq!(decision.verdict, CheckVerdict::Fail);
        assert!(decision.rollback, "{decision:?}");
        assert_eq!(decision.unjudged_since, 0);
        assert!(
            decision
                .reasons
                .iter()
                .any(|r| r.contains("analysis.prometheus") && r.contains("no answer")),
            "{decision:?}"
        );
    }

    #[tokio::test]
    async fn without_a_failure_an_unanswered_provider_leaves_the_check_unjudged() {
        let alarms = FakeCloudWatch::default().with("web-green-5xx", AlarmStateValue::Ok);
        let apis = SignalApis {
            cloudwatch: &alarms,
            prometheus: &Down,
            ..SignalApis::fake()
        };
        let decision = evaluate(
            &apis,
            &plan(),
            progress(),
            &Carried::default(),
            SystemTime::now(),
        )
        .await
        .expect("unjudged");
        assert_eq!(decision.verdict, CheckVerdict::Inconclusive);
        assert!(!decision.rollback);
        assert_eq!((decision.check, decision.passes), (1, 1), "not counted");
        assert!(decision.unjudged_since > 0);
    }
    /// A provider that answers nothing: any request to it is this test's failure.
    struct NeverAsked;

    #[async_trait]
    impl PrometheusApi for NeverAsked {
        async fn instant_query(
            &self,
            _: &PrometheusEndpoint,
            _: &str,
            _: SystemTime,
        ) -> Result<Value, QueryError> {
            panic!("asked past the bound: the check would wait out one more timeout")
        }
    }

    #[tokio::test]
    async fn past_the_unjudged_bound_the_check_fails_before_asking_again() {
        let alarms = FakeCloudWatch::default().with("web-green-5xx", AlarmStateValue::Ok);
        let apis = SignalApis {
            cloudwatch: &alarms,
            prometheus: &NeverAsked,
            ..SignalApis::fake()
        };
        let now = SystemTime::now();
        let bound = plan()
            .analysis
            .as_ref()
            .expect("analysis")
            .max_unjudged_seconds(10);
        let unjudged = BakeProgress {
            unjudged_since: epoch_seconds(now) - bound,
            ..progress()
        };
        let err = evaluate(&apis, &plan(), unjudged, &Carried::default(), now)
            .await
            .expect_err("past the bound");
        assert_eq!(
            canary_core::NamedError::name(&err),
            ErrorName::MetricsProviderUnavailable
        );
        assert!(
            err.to_string().contains(&format!(
                "gone {bound} s without a verdict, past analysis.maxUnjudgedSeconds ({bound} s)"
            )),
            "{err}"
        );
        // Within the bound it asks (and stays unjudged while the provider is down).
        let apis = SignalApis {
            cloudwatch: &alarms,
            prometheus: &Down,
            ..SignalApis::fake()
        };
        let within = BakeProgress {
            unjudged_since: epoch_seconds(now) - bound + 1,
            ..progress()
        };
        let decision = evaluate(&apis, &plan(), within, &Carried::default(), now)
            .await
            .expect("unjudged");
        assert_eq!(decision.verdict, CheckVerdict::Inconclusive);
    }
}
