//! The ALB canary-vs-stable judge (plan `analysis.alb`): for each ALB traffic target, the
//! canary's and the stable target group's request count, 5xx count and latency from
//! CloudWatch, compared by `canary_core::analysis::judge_alb`. Ratios are computed here from
//! the raw sums, not with metric math, so the same numbers reach the verdict whatever
//! evaluates the queries.

use std::collections::{BTreeMap, HashMap};
use std::time::SystemTime;

use async_trait::async_trait;
use canary_aws::{CloudWatchApi, MetricQuery};
use canary_core::analysis::{judge_alb, reduce, sum, AlbChecks, Reduce, TargetGroupTraffic};
use canary_core::arn::{parse_elb_arn, ElbResource};
use canary_core::metrics::Point;
use canary_core::{AlbTarget, TrafficTarget};

use super::{metric_values, try_queries, Collected, PlannedQuery, SignalSource, Validated};
use crate::error::AnalysisError;

pub(super) const ALB_NAMESPACE: &str = "AWS/ApplicationELB";

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Side {
    Canary,
    Stable,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AlbMetric {
    Requests,
    Errors5xx,
    Latency,
}

/// A canary/stable target group pair behind one load balancer, with a label for reasons.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AlbPair {
    pub label: String,
    pub load_balancer: String,
    pub canary: String,
    pub stable: String,
}

/// The `LoadBalancer` dimension of a listener's load balancer: `app/<name>/<id>`.
pub(super) fn load_balancer_dimension(listener_arn: &str) -> Option<String> {
    let listener = parse_elb_arn(listener_arn, ElbResource::Listener).ok()?;
    // `app/<name>/<id>/<listener id>` → `app/<name>/<id>`
    Some(listener.path.rsplit_once('/')?.0.to_owned())
}

/// The `TargetGroup` dimension of a target group: `targetgroup/<name>/<id>`.
pub(super) fn target_group_dimension(arn: &str) -> Option<String> {
    let group = parse_elb_arn(arn, ElbResource::TargetGroup).ok()?;
    Some(format!("targetgroup/{}", group.path))
}

/// The dimensions are the ARNs' resource parts.
fn alb_pair(alb: &AlbTarget) -> Option<AlbPair> {
    let canary = target_group_dimension(&alb.canary_target_group_arn)?;
    Some(AlbPair {
        // `targetgroup/<name>/<id>`: the name is what a person recognises.
        label: canary.split('/').nth(1).unwrap_or(&canary).to_owned(),
        load_balancer: load_balancer_dimension(&alb.listener_arn)?,
        stable: target_group_dimension(&alb.stable_target_group_arn)?,
        canary,
    })
}

/// The distinct target group pairs of the plan's ALB targets (a listener and its rule often
/// share them).
pub fn alb_pairs(targets: &[TrafficTarget]) -> Vec<AlbPair> {
    let mut pairs: Vec<AlbPair> = Vec::new();
    for target in targets {
        if let Some(alb) = target.as_alb() {
            if let Some(pair) = alb_pair(alb).filter(|p| !pairs.contains(p)) {
                pairs.push(pair);
            }
        }
    }
    pairs
}

pub(super) struct AlbJudge<'a> {
    pub api: &'a dyn CloudWatchApi,
    pub checks: &'a AlbChecks,
    pub pairs: Vec<AlbPair>,
}

impl AlbJudge<'_> {
    /// Three queries per side of each pair, `alb<pair>_<side>_<metric>`.
    fn queries(&self) -> Vec<PlannedQuery> {
        let alb = self.checks;
        let mut planned = Vec::new();
        for (p, pair) in self.pairs.iter().enumerate() {
            for side in [Side::Canary, Side::Stable] {
                let target_group = match side {
                    Side::Canary => &pair.canary,
                    Side::Stable => &pair.stable,
                };
                for metric in [
                    AlbMetric::Requests,
                    AlbMetric::Errors5xx,
                    AlbMetric::Latency,
                ] {
                    let (name, stat) = match metric {
                        AlbMetric::Requests => ("RequestCount", "Sum"),
                        AlbMetric::Errors5xx => ("HTTPCode_Target_5XX_Count", "Sum"),
                        AlbMetric::Latency => {
                            ("TargetResponseTime", alb.latency_statistic.as_str())
                        }
                    };
                    planned.push(PlannedQuery {
                        query: MetricQuery {
                            id: query_id(p, side, metric),
                            namespace: ALB_NAMESPACE.to_owned(),
                            metric_name: name.to_owned(),
                            dimensions: BTreeMap::from([
                                ("LoadBalancer".to_owned(), pair.load_balancer.clone()),
                                ("TargetGroup".to_owned(), target_group.clone()),
                            ]),
                            stat: stat.to_owned(),
                            period_seconds: i32::try_from(alb.period_seconds).unwrap_or(60),
                        },
                        lookback_seconds: alb.lookback_seconds,
                    });
                }
            }
        }
        planned
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
                traffic_of(|metric| {
                    values
                        .get(&query_id(index, side, metric))
                        .cloned()
                        .unwrap_or_default()
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

fn query_id(pair: usize, side: Side, metric: AlbMetric) -> String {
    format!("alb{pair}_{}_{}", side_id(side), metric_id(metric))
}

fn side_id(side: Side) -> &'static str {
    match side {
        Side::Canary => "canary",
        Side::Stable => "stable",
    }
}

fn metric_id(metric: AlbMetric) -> &'static str {
    match metric {
        AlbMetric::Requests => "requests",
        AlbMetric::Errors5xx => "errors",
        AlbMetric::Latency => "latency",
    }
}

/// The traffic of one side of one pair: counters summed, latency at its worst period.
pub fn traffic_of(values: impl Fn(AlbMetric) -> Vec<f64>) -> TargetGroupTraffic {
    TargetGroupTraffic {
        requests: sum(&values(AlbMetric::Requests)),
        errors_5xx: sum(&values(AlbMetric::Errors5xx)),
        latency_seconds: reduce(&values(AlbMetric::Latency), Reduce::Max),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dimensions_come_from_the_arns_and_pairs_are_deduplicated() {
        let target = |rule: Option<&str>| {
            TrafficTarget::Alb(AlbTarget {
                listener_arn: "arn:aws:elasticloadbalancing:us-east-1:123456789012:listener/app/web/50dc6c495c0c9188/f2f7dc8efc522ab2".into(),
                rule_arn: rule.map(str::to_owned),
                stable_target_group_arn: "arn:aws:elasticloadbalancing:us-east-1:123456789012:targetgroup/blue/73e2d6bc24d8a067".into(),
                canary_target_group_arn: "arn:aws:elasticloadbalancing:us-east-1:123456789012:targetgroup/green/4b7c9a1e2f3d5a68".into(),
                owner: None,
            })
        };
        let pairs = alb_pairs(&[target(None), target(Some("rule"))]);
        assert_eq!(
            pairs,
            [AlbPair {
                label: "green".into(),
                load_balancer: "app/web/50dc6c495c0c9188".into(),
                canary: "targetgroup/green/4b7c9a1e2f3d5a68".into(),
                stable: "targetgroup/blue/73e2d6bc24d8a067".into(),
            }]
        );
    }
}
