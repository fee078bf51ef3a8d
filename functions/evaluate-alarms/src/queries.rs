//! The GetMetricData queries of one check: the plan's metric checks plus, for each ALB
//! traffic target, the canary's and the stable target group's request count, 5xx count and
//! latency. Ratios are computed here from the raw sums, not with metric math, so the same
//! numbers reach the verdict whatever evaluates the queries.

use std::collections::BTreeMap;

use canary_aws::{MetricQuery, MetricSeries};
use canary_core::analysis::{reduce, sum, AnalysisSection, Reduce, TargetGroupTraffic};
use canary_core::{AlbTarget, TrafficTarget};

const ALB_NAMESPACE: &str = "AWS/ApplicationELB";

/// What a query's values are for.
#[derive(Debug, Clone, PartialEq)]
pub enum Purpose {
    /// The plan's `analysis.metrics[index]`.
    Threshold(usize),
    /// A built-in ALB metric of one target group pair.
    Alb {
        pair: usize,
        side: Side,
        metric: AlbMetric,
    },
}

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

#[derive(Debug, Clone, PartialEq)]
pub struct PlannedQuery {
    pub query: MetricQuery,
    pub purpose: Purpose,
    pub lookback_seconds: i64,
}

/// The `LoadBalancer` dimension (`app/<name>/<id>`) and the `TargetGroup` dimension
/// (`targetgroup/<name>/<id>`) are the ARNs' resource parts.
fn alb_pair(alb: &AlbTarget) -> Option<AlbPair> {
    let listener = alb.listener_arn.split_once(":listener/")?.1;
    let load_balancer = listener.rsplit_once('/')?.0.to_owned();
    let resource = |arn: &str| arn.splitn(6, ':').nth(5).map(str::to_owned);
    let canary = resource(&alb.canary_target_group_arn)?;
    Some(AlbPair {
        label: canary.split('/').nth(1).unwrap_or(&canary).to_owned(),
        load_balancer,
        canary,
        stable: resource(&alb.stable_target_group_arn)?,
    })
}

/// The distinct target group pairs of the plan's ALB targets (a listener and its rule often
/// share them).
pub fn alb_pairs(targets: &[TrafficTarget]) -> Vec<AlbPair> {
    let mut pairs: Vec<AlbPair> = Vec::new();
    for target in targets {
        if let TrafficTarget::Alb(alb) = target {
            if let Some(pair) = alb_pair(alb).filter(|p| !pairs.contains(p)) {
                pairs.push(pair);
            }
        }
    }
    pairs
}

pub fn plan_queries(analysis: &AnalysisSection, pairs: &[AlbPair]) -> Vec<PlannedQuery> {
    let mut planned = Vec::new();
    for (i, check) in analysis.metrics.iter().enumerate() {
        planned.push(PlannedQuery {
            query: MetricQuery {
                id: format!("m{i}"),
                namespace: check.namespace.clone(),
                metric_name: check.metric_name.clone(),
                dimensions: check.dimensions.clone(),
                stat: check.stat.clone(),
                period_seconds: i32::try_from(check.period_seconds).unwrap_or(60),
            },
            purpose: Purpose::Threshold(i),
            lookback_seconds: check.lookback_seconds,
        });
    }
    if let Some(alb) = &analysis.alb {
        for (p, pair) in pairs.iter().enumerate() {
            for (side, target_group) in [(Side::Canary, &pair.canary), (Side::Stable, &pair.stable)]
            {
                for (metric, name, stat) in [
                    (AlbMetric::Requests, "RequestCount", "Sum"),
                    (AlbMetric::Errors5xx, "HTTPCode_Target_5XX_Count", "Sum"),
                    (
                        AlbMetric::Latency,
                        "TargetResponseTime",
                        alb.latency_statistic.as_str(),
                    ),
                ] {
                    planned.push(PlannedQuery {
                        query: MetricQuery {
                            id: format!("alb{p}_{}_{}", side_id(side), metric_id(metric)),
                            namespace: ALB_NAMESPACE.to_owned(),
                            metric_name: name.to_owned(),
                            dimensions: BTreeMap::from([
                                ("LoadBalancer".to_owned(), pair.load_balancer.clone()),
                                ("TargetGroup".to_owned(), target_group.clone()),
                            ]),
                            stat: stat.to_owned(),
                            period_seconds: i32::try_from(alb.period_seconds).unwrap_or(60),
                        },
                        purpose: Purpose::Alb {
                            pair: p,
                            side,
                            metric,
                        },
                        lookback_seconds: alb.lookback_seconds,
                    });
                }
            }
        }
    }
    planned
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

/// The values of a query inside its own lookback (the call spans the longest lookback).
pub fn values_in_lookback(
    series: Option<&MetricSeries>,
    lookback_seconds: i64,
    now_epoch: i64,
) -> Vec<f64> {
    let since = now_epoch - lookback_seconds;
    series
        .map(|s| {
            s.points
                .iter()
                .filter(|(t, _)| *t >= since)
                .map(|(_, v)| *v)
                .collect()
        })
        .unwrap_or_default()
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

    #[test]
    fn only_values_inside_the_lookback_count() {
        let series = MetricSeries {
            points: vec![(100, 1.0), (200, 2.0), (300, 3.0)],
        };
        assert_eq!(values_in_lookback(Some(&series), 150, 350), [2.0, 3.0]);
        assert!(values_in_lookback(None, 150, 350).is_empty());
    }
}
