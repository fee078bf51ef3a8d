//! The target groups' canary-vs-stable judge (plan `analysis.alb`): for each `alb` and
//! `vpcLattice` traffic target, the canary's and the stable target group's request count, 5xx
//! count and latency from CloudWatch (`super::target_groups`), compared by
//! `canary_core::analysis::judge_alb`. Ratios are computed here from the raw sums, not with
//! metric math, so the same numbers reach the verdict whatever evaluates the queries.

use std::collections::HashMap;
use std::time::SystemTime;

use async_trait::async_trait;
use canary_aws::CloudWatchApi;
use canary_core::analysis::{judge_alb, reduce, sum, AlbChecks, Reduce, TargetGroupTraffic};
use canary_core::metrics::Point;

use super::target_groups::{GroupMetric, MeasuredGroup, TargetGroupPair};
use super::{metric_values, try_queries, Collected, PlannedQuery, SignalSource, Validated};
use crate::error::AnalysisError;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Side {
    Canary,
    Stable,
}

pub(super) struct AlbJudge<'a> {
    pub api: &'a dyn CloudWatchApi,
    pub checks: &'a AlbChecks,
    pub pairs: Vec<TargetGroupPair>,
}

impl AlbJudge<'_> {
    /// Three queries per side of each pair, `alb<pair>_<side>_<metric>`.
    fn queries(&self) -> Vec<PlannedQuery> {
        let alb = self.checks;
        let period = i32::try_from(alb.period_seconds).unwrap_or(60);
        let mut planned = Vec::new();
        for (p, pair) in self.pairs.iter().enumerate() {
            for side in [Side::Canary, Side::Stable] {
                let group = group_of(pair, side);
                for metric in [
                    GroupMetric::Requests,
                    GroupMetric::Errors5xx,
                    GroupMetric::Latency,
                ] {
                    let stat = match metric {
                        GroupMetric::Latency => alb.latency_statistic.clone(),
                        _ => "Sum".to_owned(),
                    };
                    planned.push(PlannedQuery {
                        query: group.query(query_id(p, side, metric), metric, stat, period),
                        lookback_seconds: alb.lookback_seconds,
                    });
                }
            }
        }
        planned
    }
}

fn group_of(pair: &TargetGroupPair, side: Side) -> &MeasuredGroup {
    match side {
        Side::Canary => &pair.canary,
        Side::Stable => &pair.stable,
    }
}

#[async_trait]
impl SignalSource for AlbJudge<'_> {
    async fn validate(&self, now: SystemTime) -> Result<Validated, AnalysisError> {
        try_queries(self.api, &self.queries(), now).await
    }

    async fn collect(&self, now: SystemTime, cluster: &str) -> Result<Collected, AnalysisError> {
        let values: HashMap<String, Vec<f64>> =
            metric_values(self.api, &self.queries(), now).await?;
        let mut collected = Collected::default();
        for (index, pair) in self.pairs.iter().enumerate() {
            let side = |side: Side| {
                let group = group_of(pair, side);
                traffic_of(|metric| {
                    let values = values.get(&query_id(index, side, metric));
                    let values = values.into_iter().flatten();
                    match metric {
                        GroupMetric::Latency => values
                            .map(|v| group.latency_seconds(&self.checks.latency_statistic, *v))
                            .collect(),
                        _ => values.copied().collect(),
                    }
                })
            };
            let (canary, stable) = (side(Side::Canary), side(Side::Stable));
            for (name, traffic) in [("canary", &canary), ("stable", &stable)] {
                if let Some(rate) = traffic.error_rate_percent() {
                    collected
                        .points
                        .push(Point::error_rate(cluster, &pair.label, name, rate));
                }
                if let Some(latency) = traffic.latency_seconds {
                    collected
                        .points
                        .push(Point::latency(cluster, &pair.label, name, latency));
                }
            }
            collected
                .outcomes
                .extend(judge_alb(self.checks, &pair.label, canary, stable));
        }
        Ok(collected)
    }
}

fn query_id(pair: usize, side: Side, metric: GroupMetric) -> String {
    format!("alb{pair}_{}_{}", side_id(side), metric_id(metric))
}

fn side_id(side: Side) -> &'static str {
    match side {
        Side::Canary => "canary",
        Side::Stable => "stable",
    }
}

fn metric_id(metric: GroupMetric) -> &'static str {
    match metric {
        GroupMetric::Requests => "requests",
        GroupMetric::Errors5xx => "errors",
        GroupMetric::Latency => "latency",
    }
}

/// The traffic of one side of one pair: counters summed, latency (seconds) at its worst period.
fn traffic_of(values: impl Fn(GroupMetric) -> Vec<f64>) -> TargetGroupTraffic {
    TargetGroupTraffic {
        requests: sum(&values(GroupMetric::Requests)),
        errors_5xx: sum(&values(GroupMetric::Errors5xx)),
        latency_seconds: reduce(&values(GroupMetric::Latency), Reduce::Max),
    }
}
