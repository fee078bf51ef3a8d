//! The rollout's own spending of the plan's SLOs' error budget (`errorBudget.rolloutShare` and
//! `fastBurn`): the new cluster's requests and bad requests from its target groups (`alb` and
//! `vpcLattice` targets', `super::target_groups`), one
//! minute at a time since the rollout started, judged by `canary_core::error_budget::{judge_share,
//! judge_burn}` against the shares the freeze gate fixed at the start. Bad is 5xx for an
//! availability SLO, and for a latency one a request slower than its threshold (the trimmed
//! count `TC(<threshold>:)` of the latency, which counts each request's own time, as the
//! comparison's `slowerThan` does). One GetMetricData call per check; a fleet's soak judges its
//! promoted cells the same way, on the slow burn alone ([`burn_outcomes`]). And the remaining
//! budgets kept as CloudWatch metrics (`errorBudget.cloudwatch`), which the gate and each bake's
//! end read as they read the SLOs.

use std::collections::{BTreeMap, HashMap};
use std::time::{SystemTime, UNIX_EPOCH};

use async_trait::async_trait;
use canary_aws::{CloudWatchApi, MetricQuery};
use canary_core::error_budget::{
    judge_burn, judge_share, remaining_reading, CanaryPeriod, RolloutBudget, SloReading,
};
use canary_core::RolloutPlan;

use super::target_groups::{target_group_pairs, GroupMetric, TargetGroupPair};
use super::{metric_points, try_queries, Collected, PlannedQuery, SignalSource, Validated};
use crate::error::AnalysisError;
use crate::signals::BudgetCarried;

/// The new cluster's counts are read per minute.
const PERIOD_SECONDS: i64 = 60;
/// The longest look back: two weeks of minutes in one call is 20,160 points a query, well
/// under GetMetricData's 100,800 (a rollout that runs longer counts its last two weeks).
const MAX_LOOKBACK_SECONDS: i64 = 14 * 86_400;

pub(super) struct ErrorBudgetSpend<'a> {
    pub api: &'a dyn CloudWatchApi,
    /// The new cluster's target groups (the canary side of each pair).
    pub pairs: Vec<TargetGroupPair>,
    pub carried: &'a BudgetCarried,
}

/// The query (`budget<pair>_<id>`'s `<id>`) counting an SLO's bad requests: `errors` (5xx), or
/// `slow<k>` for the k-th distinct latency threshold of `thresholds`.
fn bad_id(budget: &RolloutBudget, thresholds: &[f64]) -> String {
    budget
        .slower_than
        .and_then(|t| thresholds.iter().position(|&u| u == t))
        .map_or_else(|| "errors".to_owned(), |k| format!("slow{k}"))
}

/// The distinct latency thresholds of the rollout's budgets, in their order.
fn thresholds(carried: &BudgetCarried) -> Vec<f64> {
    let mut thresholds: Vec<f64> = Vec::new();
    for t in carried.budgets.iter().filter_map(|b| b.slower_than) {
        if !thresholds.contains(&t) {
            thresholds.push(t);
        }
    }
    thresholds
}

impl ErrorBudgetSpend<'_> {
    /// Requests and 5xx of each canary target group, `budget<pair>_<requests|errors>`, and its
    /// requests slower than each of `thresholds`, `budget<pair>_slow<k>`, over
    /// `lookback_seconds`.
    fn queries(&self, lookback_seconds: i64, thresholds: &[f64]) -> Vec<PlannedQuery> {
        let mut planned = Vec::new();
        for (p, pair) in self.pairs.iter().enumerate() {
            let group = &pair.canary;
            let counts = [
                (
                    "requests".to_owned(),
                    GroupMetric::Requests,
                    "Sum".to_owned(),
                ),
                (
                    "errors".to_owned(),
                    GroupMetric::Errors5xx,
                    "Sum".to_owned(),
                ),
            ];
            let slow = thresholds.iter().enumerate().map(|(k, t)| {
                (
                    format!("slow{k}"),
                    GroupMetric::Latency,
                    group.slower_than(*t),
                )
            });
            for (id, metric, stat) in counts.into_iter().chain(slow) {
                let id = format!("budget{p}_{id}");
                planned.push(PlannedQuery {
                    query: group.query(id, metric, stat, PERIOD_SECONDS as i32),
                    lookback_seconds,
                });
            }
        }
        planned
    }
}

/// Each minute's requests and bad requests (the `budget<pair>_<bad>` queries), the target groups
/// summed, oldest first.
fn periods(
    points: &HashMap<String, Vec<(i64, f64)>>,
    pairs: usize,
    bad: &str,
) -> Vec<CanaryPeriod> {
    let mut minutes: BTreeMap<i64, CanaryPeriod> = BTreeMap::new();
    for p in 0..pairs {
        for (id, is_bad) in [("requests", false), (bad, true)] {
            for &(at, value) in points.get(&format!("budget{p}_{id}")).into_iter().flatten() {
                let minute = minutes.entry(at).or_insert(CanaryPeriod {
                    at,
                    requests: 0.0,
                    bad: 0.0,
                });
                match is_bad {
                    true => minute.bad += value,
                    false => minute.requests += value,
                }
            }
        }
    }
    minutes.into_values().collect()
}

fn epoch(time: SystemTime) -> i64 {
    time.duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs() as i64)
        .unwrap_or_default()
}

#[async_trait]
impl SignalSource for ErrorBudgetSpend<'_> {
    async fn validate(&self, now: SystemTime) -> Result<Validated, AnalysisError> {
        try_queries(self.api, &self.queries(PERIOD_SECONDS * 5, &[]), now).await
    }

    async fn collect(&self, now: SystemTime, _cluster: &str) -> Result<Collected, AnalysisError> {
        let carried = self.carried;
        if carried.budgets.is_empty() {
            return Ok(Collected::default());
        }
        let now_epoch = epoch(now);
        // From the minute the rollout started: nothing before it is the rollout's to spend.
        let since = carried.since - carried.since.rem_euclid(PERIOD_SECONDS);
        let lookback = (now_epoch - since).clamp(PERIOD_SECONDS, MAX_LOOKBACK_SECONDS);
        let thresholds = thresholds(carried);
        let points = metric_points(self.api, &self.queries(lookback, &thresholds), now).await?;
        let mut collected = Collected::default();
        for budget in &carried.budgets {
            let minutes = periods(&points, self.pairs.len(), &bad_id(budget, &thresholds));
            collected.outcomes.extend(judge_share(budget, &minutes));
            if let Some(windows) = carried.burn {
                collected
                    .outcomes
                    .extend(judge_burn(budget, windows, &minutes, now_epoch));
            }
        }
        Ok(collected)
    }
}

/// The new cluster's own burn of each of `budgets` over `windows` ending at `now`, from the
/// plan's ALB target groups (none without an `alb` target): one outcome each. A fleet's soak
/// judges its promoted cells so, on the slow pair. One GetMetricData call.
pub async fn burn_outcomes(
    api: &dyn CloudWatchApi,
    plan: &RolloutPlan,
    budgets: Vec<RolloutBudget>,
    windows: canary_core::plan::BurnWindows,
    now: SystemTime,
) -> Result<Vec<canary_core::analysis::CheckOutcome>, AnalysisError> {
    let pairs = target_group_pairs(&plan.traffic_targets);
    if pairs.is_empty() || budgets.is_empty() {
        return Ok(Vec::new());
    }
    let carried = BudgetCarried {
        // The burn alone: no share.
        budgets: budgets
            .into_iter()
            .map(|b| RolloutBudget { allowed: None, ..b })
            .collect(),
        since: epoch(now) - i64::from(windows.long_seconds),
        burn: Some(windows),
    };
    let spend = ErrorBudgetSpend {
        api,
        pairs,
        carried: &carried,
    };
    Ok(spend.collect(now, &plan.cluster.name).await?.outcomes)
}

/// The plan's remaining budgets kept as CloudWatch metrics (`errorBudget.cloudwatch`), one
/// GetMetricData call for all: each one's latest datapoint in its lookback, in the plan's order
/// (none: no data; the call failing: every one unread, which holds the rollout).
pub async fn remaining_budget_metrics(
    api: &dyn CloudWatchApi,
    plan: &RolloutPlan,
    now: SystemTime,
) -> Vec<SloReading> {
    let planned = budget_metric_queries(plan);
    if planned.is_empty() {
        return Vec::new();
    }
    let names = plan
        .error_budget
        .iter()
        .flat_map(|b| &b.cloudwatch)
        .map(|m| &m.name);
    match metric_points(api, &planned, now).await {
        Ok(points) => names
            .zip(&planned)
            .map(|(name, p)| {
                let latest = points
                    .get(&p.query.id)
                    .and_then(|v| v.last())
                    .map(|&(_, v)| v);
                remaining_reading(name, Ok(latest))
            })
            .collect(),
        Err(e) => names
            .map(|name| remaining_reading(name, Err(e.to_string())))
            .collect(),
    }
}

/// At Admit: CloudWatch refusing the remaining-budget metrics' queries is the plan's mistake
/// (`errorBudget.cloudwatch`).
pub async fn check_remaining_budget_metrics(
    api: &dyn CloudWatchApi,
    plan: &RolloutPlan,
    now: SystemTime,
) -> Result<(), AnalysisError> {
    let planned = budget_metric_queries(plan);
    if planned.is_empty() {
        return Ok(());
    }
    let queries: Vec<MetricQuery> = planned.iter().map(|p| p.query.clone()).collect();
    let start = now - std::time::Duration::from_secs(super::longest_lookback(&planned));
    api.metric_data(&queries, start, now)
        .await
        .map_err(|source| super::metric_data_error("errorBudget.cloudwatch", source))?;
    Ok(())
}

/// One query per remaining-budget metric, `remaining<i>`.
fn budget_metric_queries(plan: &RolloutPlan) -> Vec<PlannedQuery> {
    let metrics = plan.error_budget.iter().flat_map(|b| &b.cloudwatch);
    metrics
        .enumerate()
        .map(|(i, metric)| PlannedQuery {
            query: MetricQuery {
                id: format!("remaining{i}"),
                namespace: metric.namespace.clone(),
                metric_name: metric.metric_name.clone(),
                dimensions: metric.dimensions.clone(),
                stat: metric.stat().to_owned(),
                period_seconds: i32::try_from(metric.period_seconds()).unwrap_or(60),
            },
            lookback_seconds: metric.lookback_seconds(),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_target_groups_minutes_are_summed() {
        let points = HashMap::from([
            (
                "budget0_requests".to_owned(),
                vec![(60, 100.0), (120, 50.0)],
            ),
            ("budget0_errors".to_owned(), vec![(120, 5.0)]),
            ("budget1_requests".to_owned(), vec![(120, 10.0)]),
            ("budget1_errors".to_owned(), vec![(120, 1.0)]),
        ]);
        assert_eq!(
            periods(&points, 2, "errors"),
            [
                CanaryPeriod {
                    at: 60,
                    requests: 100.0,
                    bad: 0.0
                },
                CanaryPeriod {
                    at: 120,
                    requests: 60.0,
                    bad: 6.0
                },
            ]
        );
    }

    #[tokio::test]
    async fn a_latency_slo_counts_the_new_clusters_slow_requests_and_an_availability_one_its_5xx() {
        use super::super::target_groups::{alb_target, lattice_target};
        // A Lattice group's latency is in milliseconds: its slow count's threshold too.
        for (target, slow) in [(alb_target(), "TC(0.5:)"), (lattice_target(), "TC(500:)")] {
            spends_the_budgets_of(target, slow).await;
        }
    }

    async fn spends_the_budgets_of(target: canary_core::TrafficTarget, slow: &str) {
        use canary_aws::fakes::MetricAnswers;
        use canary_aws::MetricSeries;
        use canary_core::analysis::CheckVerdict;

        let now = SystemTime::now();
        let minute = epoch(now) - epoch(now).rem_euclid(60) - 60;
        // Each query's stat, kept, and 300 requests, 2 of them 5xx and 250 slower than 0.5 s.
        let asked = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let kept = asked.clone();
        let answers = MetricAnswers::new(move |queries: &[MetricQuery], _, _| {
            Ok(queries
                .iter()
                .map(|q| {
                    kept.lock().unwrap().push(format!("{} {}", q.id, q.stat));
                    let value = match q.stat.as_str() {
                        stat if stat.starts_with("TC(") => 250.0,
                        _ if q.metric_name.ends_with("RequestCount") => 300.0,
                        _ => 2.0,
                    };
                    (
                        q.id.clone(),
                        MetricSeries {
                            points: vec![(minute, value)],
                        },
                    )
                })
                .collect())
        });
        let budget = |slo: &str, slower_than| RolloutBudget {
            slo: slo.to_owned(),
            goal: 99.0,
            allowed: Some(100),
            slower_than,
        };
        let carried = BudgetCarried {
            budgets: vec![
                budget("checkout-availability", None),
                budget("checkout-latency", Some(0.5)),
                budget("search-latency", Some(0.5)),
            ],
            since: minute,
            burn: None,
        };
        let spend = ErrorBudgetSpend {
            api: &answers,
            pairs: target_group_pairs(&[target]),
            carried: &carried,
        };
        let collected = spend.collect(now, "green").await.expect("read");
        let verdicts: Vec<_> = collected.outcomes.iter().map(|o| o.verdict).collect();
        assert_eq!(
            verdicts,
            [CheckVerdict::Pass, CheckVerdict::Fail, CheckVerdict::Fail]
        );
        assert!(
            collected.outcomes[1].reason.contains(
                "the new cluster's 250 requests slower than 0.5 s are more than the 100 allowed"
            ),
            "{}",
            collected.outcomes[1].reason
        );
        assert!(collected.outcomes[0]
            .reason
            .contains("spent 2 of its 100 5xx"));
        // One call, and one slow count for the two SLOs of the same threshold.
        assert_eq!(
            *asked.lock().unwrap(),
            [
                "budget0_requests Sum".to_owned(),
                "budget0_errors Sum".to_owned(),
                format!("budget0_slow0 {slow}")
            ]
        );
    }

    #[tokio::test]
    async fn a_remaining_budget_metric_is_its_latest_datapoint_and_a_refused_read_holds() {
        use canary_aws::fakes::MetricAnswers;
        use canary_aws::{AwsError, AwsErrorKind, MetricSeries};
        use canary_core::error_budget::BudgetStatus;

        let plan = canary_core::RolloutPlan::parse(serde_json::json!({
            "cluster": {"name": "green", "region": "us-east-1"},
            "trafficTargets": [{"route53": {"hostedZoneId": "Z0123456789ABCDEFGHIJ", "recordName": "api.example.com",
                "recordType": "A", "stableSetIdentifier": "blue", "canarySetIdentifier": "green"}}],
            "steps": [{"weight": 100}],
            "bake": {"seconds": 60, "checkIntervalSeconds": 30},
            "errorBudget": {"cloudwatch": [
                {"name": "checkout", "namespace": "Shop", "metricName": "BudgetRemaining"},
                {"name": "payments", "namespace": "Shop", "metricName": "BudgetRemaining",
                 "dimensions": {"Service": "payments"}}]}
        }))
        .expect("valid")
        .plan;
        let now = SystemTime::now();
        let at = epoch(now) - 120;
        let answers = MetricAnswers::new(move |queries: &[MetricQuery], _, _| {
            Ok(queries
                .iter()
                .filter(|q| q.id == "remaining0")
                .map(|q| {
                    (
                        q.id.clone(),
                        MetricSeries {
                            points: vec![(at - 60, 0.4), (at, -0.1)],
                        },
                    )
                })
                .collect())
        });
        let readings = remaining_budget_metrics(&answers, &plan, now).await;
        let statuses: Vec<_> = readings
            .iter()
            .map(|r| match r {
                SloReading::Report(report) => report.status.clone(),
                SloReading::Unread { .. } => BudgetStatus::Other("unread".to_owned()),
            })
            .collect();
        assert_eq!(
            statuses,
            [BudgetStatus::Breached, BudgetStatus::InsufficientData]
        );
        let refused = MetricAnswers::new(|_: &[MetricQuery], _, _| {
            Err(AwsError::new(
                AwsErrorKind::AccessDenied,
                "GetMetricData",
                "not authorized",
            ))
        });
        let readings = remaining_budget_metrics(&refused, &plan, now).await;
        assert!(
            readings
                .iter()
                .all(|r| matches!(r, SloReading::Unread { .. })),
            "{readings:?}"
        );
        assert!(check_remaining_budget_metrics(&refused, &plan, now)
            .await
            .is_err());
    }
}
