//! The rollout's own spending of the plan's SLOs' error budget (`errorBudget.rolloutShare` and
//! `fastBurn`): the new cluster's requests and 5xx from its ALB target groups, one minute at a
//! time since the rollout started, judged by `canary_core::error_budget::{judge_share,
//! judge_burn}` against the shares the freeze gate fixed at the start. One GetMetricData call
//! per check.

use std::collections::{BTreeMap, HashMap};
use std::time::{SystemTime, UNIX_EPOCH};

use async_trait::async_trait;
use canary_aws::{CloudWatchApi, MetricQuery};
use canary_core::error_budget::{judge_burn, judge_share, CanaryPeriod};

use super::alb_judge::{AlbPair, ALB_NAMESPACE};
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
    pub pairs: Vec<AlbPair>,
    pub carried: &'a BudgetCarried,
}

impl ErrorBudgetSpend<'_> {
    /// Requests and 5xx of each canary target group, `budget<pair>_<requests|errors>`, over
    /// `lookback_seconds`.
    fn queries(&self, lookback_seconds: i64) -> Vec<PlannedQuery> {
        let mut planned = Vec::new();
        for (p, pair) in self.pairs.iter().enumerate() {
            for (id, metric) in [
                ("requests", "RequestCount"),
                ("errors", "HTTPCode_Target_5XX_Count"),
            ] {
                planned.push(PlannedQuery {
                    query: MetricQuery {
                        id: format!("budget{p}_{id}"),
                        namespace: ALB_NAMESPACE.to_owned(),
                        metric_name: metric.to_owned(),
                        dimensions: BTreeMap::from([
                            ("LoadBalancer".to_owned(), pair.load_balancer.clone()),
                            ("TargetGroup".to_owned(), pair.canary.clone()),
                        ]),
                        stat: "Sum".to_owned(),
                        period_seconds: PERIOD_SECONDS as i32,
                    },
                    lookback_seconds,
                });
            }
        }
        planned
    }
}

/// Each minute's requests and 5xx, the target groups summed, oldest first.
fn periods(points: &HashMap<String, Vec<(i64, f64)>>, pairs: usize) -> Vec<CanaryPeriod> {
    let mut minutes: BTreeMap<i64, CanaryPeriod> = BTreeMap::new();
    for p in 0..pairs {
        for (id, errors) in [("requests", false), ("errors", true)] {
            for &(at, value) in points.get(&format!("budget{p}_{id}")).into_iter().flatten() {
                let minute = minutes.entry(at).or_insert(CanaryPeriod {
                    at,
                    requests: 0.0,
                    errors: 0.0,
                });
                match errors {
                    true => minute.errors += value,
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
        try_queries(self.api, &self.queries(PERIOD_SECONDS * 5), now).await
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
        let points = metric_points(self.api, &self.queries(lookback), now).await?;
        let minutes = periods(&points, self.pairs.len());
        let mut collected = Collected::default();
        for budget in &carried.budgets {
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
            periods(&points, 2),
            [
                CanaryPeriod {
                    at: 60,
                    requests: 100.0,
                    errors: 0.0
                },
                CanaryPeriod {
                    at: 120,
                    requests: 60.0,
                    errors: 6.0
                },
            ]
        );
    }
}
