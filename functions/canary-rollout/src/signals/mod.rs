//! The signal-source seam: one [`SignalSource`] per provider of evidence about the canary
//! (CloudWatch alarms, CloudWatch metric thresholds, the ALB canary-vs-stable judge, the
//! statistical comparison, Prometheus/AMP and Datadog queries), built in
//! one place ([`sources`]). The checks (`crate::analysis`) are written once over the trait:
//! validate every source at Prepare, collect every source's outcomes at a check, and let
//! `canary_core::analysis::decide` judge them together. Adding a provider: see
//! `docs/extending.md`.

mod alb_judge;
mod aws_health;
mod cloudwatch_alarms;
mod cloudwatch_metrics;
mod compare;
mod datadog;
mod eks_addons;
mod error_budget;
mod outlook;
mod prometheus;
mod query_checks;
pub(crate) mod target_groups;

use std::collections::HashMap;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use async_trait::async_trait;
use canary_aws::{
    AddonHealth, AwsError, AwsErrorKind, CloudWatchApi, DatadogApi, FreezeApi, MetricQuery,
    MetricSeries, PrometheusApi,
};
use canary_core::analysis::compare::Evidence;
use canary_core::analysis::CheckOutcome;
use canary_core::error_budget::RolloutBudget;
use canary_core::metrics::Point;
use canary_core::plan::BurnWindows;
use canary_core::RolloutPlan;

use crate::error::AnalysisError;

pub(crate) use cloudwatch_alarms::{alarm_outcome, alarm_outcomes};
pub use compare::{compared_series, ComparedSeries};
pub use error_budget::{burn_outcomes, check_remaining_budget_metrics, remaining_budget_metrics};
pub use outlook::{comparison_outlook, ComparisonOutlook, OUTLOOK_SECONDS};
pub use prometheus::{check_remaining_budgets, remaining_budgets};
use query_checks::QueryChecks;
use target_groups::target_group_pairs;

/// The APIs the signal sources read.
pub struct SignalApis<'a> {
    pub cloudwatch: &'a dyn CloudWatchApi,
    pub prometheus: &'a dyn PrometheusApi,
    pub datadog: &'a dyn DatadogApi,
    /// The new cluster's add-ons (the plan's `clusterReadiness`).
    pub addons: &'a dyn AddonHealth,
    /// Where AWS Health's open issues are recorded: only evaluate-alarms' checks read them.
    pub health: Option<HealthReads<'a>>,
}

/// The records of AWS Health's open issues (`canary_aws::freeze`) and the stack's path of them.
#[derive(Clone, Copy)]
pub struct HealthReads<'a> {
    pub api: &'a dyn FreezeApi,
    pub path: &'a str,
}

#[cfg(any(test, feature = "fakes"))]
impl SignalApis<'static> {
    /// For decision tests: every provider unused (`canary_aws::fakes::Unused`: a call is an
    /// error naming it). A test overrides what it exercises:
    /// `SignalApis { cloudwatch: &alarms, ..SignalApis::fake() }`.
    pub fn fake() -> Self {
        use canary_aws::fakes::Unused;
        SignalApis {
            cloudwatch: &Unused,
            prometheus: &Unused,
            datadog: &Unused,
            addons: &Unused,
            health: None,
        }
    }
}

/// What a source found it can evaluate, at Prepare.
#[derive(Debug, Default)]
pub struct Validated {
    /// The alarms it watches (names and prefix matches).
    pub alarms: Vec<String>,
    /// The metric queries each check makes.
    pub metric_queries: usize,
    /// What the queries give now, one line each, for `cluster-canary plan check`.
    pub current: Vec<String>,
}

/// What a source found at one check.
#[derive(Debug, Default)]
pub struct Collected {
    pub outcomes: Vec<CheckOutcome>,
    /// The values it judged, as CloudWatch metric points (`MetricValue`, `ErrorRatePercent`…).
    pub points: Vec<Point>,
    /// Unsure, and the plan asks a person then (the comparison's `ask`).
    pub asks: bool,
    /// The comparison's evidence after this check (the comparison only).
    pub evidence: Option<Evidence>,
    /// The comparison has shown a regression in the rollout: no bake passes while it stands.
    pub regression_shown: bool,
    /// The comparison leans to a regression not shown yet: a bake's end waits for more.
    pub leaning: bool,
}

/// What the comparison carries from check to check: its evidence so far, and over how many
/// runs of checks the rollout's α is shared (`canary_core::plan::ValidPlan::comparison_runs`).
#[derive(Debug, Clone, Default)]
pub struct Carried {
    pub evidence: Evidence,
    pub runs: u32,
    /// The canary's weight at the step being baked, percent (`None`: not known, as at
    /// Prepare): at 100 % the baseline serves nothing to compare with.
    pub step_weight: Option<u8>,
    /// The step being baked (from 1; 0 unknown): the periods the comparison counts toward
    /// `minSamples` are counted afresh for each step's bake.
    pub step: u32,
    /// What the rollout may spend of its SLOs' error budget (`errorBudget`).
    pub budget: BudgetCarried,
}

/// The rollout's shares of its SLOs' budgets, as the freeze gate fixed them, and since when
/// the new cluster's 5xx count against them.
#[derive(Debug, Clone, Default)]
pub struct BudgetCarried {
    pub budgets: Vec<RolloutBudget>,
    /// The rollout's start, epoch seconds.
    pub since: i64,
    /// The fast burn's windows (`None`: off).
    pub burn: Option<BurnWindows>,
}

/// One provider of evidence about the canary.
#[async_trait]
pub trait SignalSource: Send + Sync {
    /// At Prepare, before traffic moves: refuses what could never be evaluated (a missing
    /// alarm, a query the provider rejects), naming the plan path.
    async fn validate(&self, now: SystemTime) -> Result<Validated, AnalysisError>;
    /// At a check: one outcome per signal. A signal that cannot be read is `Inconclusive`,
    /// never a pass; a provider failure is an error (the state machine retries it).
    /// `cluster` is the metrics' Cluster dimension.
    async fn collect(&self, now: SystemTime, cluster: &str) -> Result<Collected, AnalysisError>;
}

/// The sources of the plan's `analysis` section, in the order their outcomes are listed:
/// the one place that chooses by provider.
pub fn sources<'a>(
    apis: &SignalApis<'a>,
    plan: &'a RolloutPlan,
    carried: &'a Carried,
) -> Vec<Box<dyn SignalSource + 'a>> {
    let mut sources: Vec<Box<dyn SignalSource + 'a>> = Vec::new();
    // A cluster in another account (`cluster.roleArn`): its add-ons are the gate's to read
    // (register-cluster assumes that role), not the checks'.
    if let (Some(gate), None) = (&plan.cluster_readiness, &plan.cluster.role_arn) {
        sources.push(Box::new(eks_addons::EksAddons {
            api: apis.addons,
            gate,
            cluster: &plan.cluster,
        }));
    }
    if let (true, Some(reads)) = (plan.rolls_back_on_health_issues(), apis.health) {
        sources.push(Box::new(aws_health::AwsHealthIssues {
            reads,
            regions: plan.regions(),
        }));
    }
    let Some(analysis) = &plan.analysis else {
        return sources;
    };
    if let Some(checks) = &analysis.alarms {
        sources.push(Box::new(cloudwatch_alarms::CloudWatchAlarms {
            api: apis.cloudwatch,
            checks,
        }));
    }
    if !analysis.metrics.is_empty() {
        sources.push(Box::new(cloudwatch_metrics::CloudWatchMetrics {
            api: apis.cloudwatch,
            checks: &analysis.metrics,
        }));
    }
    if let Some(checks) = &analysis.alb {
        let pairs = target_group_pairs(&plan.traffic_targets);
        if !pairs.is_empty() {
            sources.push(Box::new(alb_judge::AlbJudge {
                api: apis.cloudwatch,
                checks,
                pairs,
            }));
        }
    }
    let judges_the_canary = plan
        .error_budget
        .as_ref()
        .is_some_and(|b| b.judges_the_canary());
    let pairs = target_group_pairs(&plan.traffic_targets);
    if judges_the_canary && !pairs.is_empty() {
        sources.push(Box::new(error_budget::ErrorBudgetSpend {
            api: apis.cloudwatch,
            pairs,
            carried: &carried.budget,
        }));
    }
    if let Some(checks) = &analysis.compare {
        sources.push(Box::new(compare::Compare {
            api: apis.cloudwatch,
            prometheus: analysis.prometheus.as_ref().map(|p| (apis.prometheus, p)),
            datadog: analysis.datadog.as_ref().map(|d| (apis.datadog, d)),
            checks,
            cluster: &plan.cluster,
            pairs: target_group_pairs(&plan.traffic_targets),
            carried,
        }));
    }
    if let Some(section) = &analysis.prometheus {
        sources.push(Box::new(QueryChecks {
            provider: prometheus::Prometheus {
                api: apis.prometheus,
                section,
            },
            cluster: &plan.cluster,
        }));
    }
    if let Some(section) = &analysis.datadog {
        sources.push(Box::new(QueryChecks {
            provider: datadog::Datadog {
                api: apis.datadog,
                section,
            },
            cluster: &plan.cluster,
        }));
    }
    sources
}

/// One GetMetricData query and the lookback its values are judged over.
#[derive(Debug, Clone, PartialEq)]
struct PlannedQuery {
    query: MetricQuery,
    lookback_seconds: i64,
}

/// The values of each query (by id) inside its own lookback; one GetMetricData call spanning
/// the longest lookback.
async fn metric_values(
    cloudwatch: &dyn CloudWatchApi,
    planned: &[PlannedQuery],
    now: SystemTime,
) -> Result<HashMap<String, Vec<f64>>, AnalysisError> {
    Ok(metric_points(cloudwatch, planned, now)
        .await?
        .into_iter()
        .map(|(id, points)| (id, points.into_iter().map(|(_, v)| v).collect()))
        .collect())
}

/// Like [`metric_values`], with each value's time (epoch seconds), oldest first.
async fn metric_points(
    cloudwatch: &dyn CloudWatchApi,
    planned: &[PlannedQuery],
    now: SystemTime,
) -> Result<HashMap<String, Vec<(i64, f64)>>, AnalysisError> {
    let queries: Vec<MetricQuery> = planned.iter().map(|p| p.query.clone()).collect();
    let start = now - Duration::from_secs(longest_lookback(planned));
    let series = cloudwatch.metric_data(&queries, start, now).await?;
    let now_epoch = now
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs() as i64)
        .unwrap_or_default();
    Ok(planned
        .iter()
        .map(|p| {
            let points = points_in_lookback(series.get(&p.query.id), p.lookback_seconds, now_epoch);
            (p.query.id.clone(), points)
        })
        .collect())
}

/// Prepare's try of the queries: CloudWatch's refusal is the plan's fault (`InvalidPlan`).
async fn try_queries(
    cloudwatch: &dyn CloudWatchApi,
    planned: &[PlannedQuery],
    now: SystemTime,
) -> Result<Validated, AnalysisError> {
    let queries: Vec<MetricQuery> = planned.iter().map(|p| p.query.clone()).collect();
    let start = now - Duration::from_secs(longest_lookback(planned));
    cloudwatch
        .metric_data(&queries, start, now)
        .await
        .map_err(|source| metric_data_error("analysis", source))?;
    Ok(Validated {
        metric_queries: queries.len(),
        ..Validated::default()
    })
}

/// A GetMetricData failure: CloudWatch refusing the queries is the plan's at `path`; anything
/// else is AWS's (retried).
fn metric_data_error(path: &str, source: AwsError) -> AnalysisError {
    match source.kind {
        AwsErrorKind::Rejected => AnalysisError::QueriesRejected {
            path: path.to_owned(),
            source,
        },
        _ => AnalysisError::Aws(source),
    }
}

fn longest_lookback(planned: &[PlannedQuery]) -> u64 {
    planned
        .iter()
        .map(|p| u64::try_from(p.lookback_seconds).unwrap_or(0))
        .max()
        .unwrap_or(0)
}

/// The points of a query inside its own lookback (the call spans the longest lookback).
fn points_in_lookback(
    series: Option<&MetricSeries>,
    lookback_seconds: i64,
    now_epoch: i64,
) -> Vec<(i64, f64)> {
    let since = now_epoch - lookback_seconds;
    series
        .map(|s| {
            s.points
                .iter()
                .copied()
                .filter(|(t, _)| *t >= since)
                .collect()
        })
        .unwrap_or_default()
}

/// A valid plan of one ALB pair (blue stable, green canary; steps 10 and 100 %, a 600 s bake of
/// 60 s checks: long enough for a first step of 60 s periods to gather minSamples of them)
/// with `compare` as its comparison, for the signals' tests.
#[cfg(test)]
fn compared_alb_plan(compare: serde_json::Value) -> canary_core::plan::ValidPlan {
    RolloutPlan::parse(serde_json::json!({
        "cluster": {"name": "green", "region": "us-east-1"},
        "trafficTargets": [{"alb": {
            "listenerArn": "arn:aws:elasticloadbalancing:us-east-1:123456789012:listener/app/web/50dc6c495c0c9188/f2f7dc8efc522ab2",
            "stableTargetGroupArn": "arn:aws:elasticloadbalancing:us-east-1:123456789012:targetgroup/blue/73e2d6bc24d8a067",
            "canaryTargetGroupArn": "arn:aws:elasticloadbalancing:us-east-1:123456789012:targetgroup/green/4b7c9a1e2f3d5a68"}}],
        "steps": [{"weight": 10}, {"weight": 100}],
        "bake": {"seconds": 600, "checkIntervalSeconds": 60},
        "analysis": {"compare": compare},
    }))
    .expect("a valid plan")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_values_inside_the_lookback_count() {
        let series = MetricSeries {
            points: vec![(100, 1.0), (200, 2.0), (300, 3.0)],
        };
        assert_eq!(
            points_in_lookback(Some(&series), 150, 350),
            [(200, 2.0), (300, 3.0)]
        );
        assert!(points_in_lookback(None, 150, 350).is_empty());
    }
}
