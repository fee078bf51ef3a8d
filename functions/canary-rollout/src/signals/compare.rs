//! The comparison check (plan `analysis.compare`): each compared metric's canary samples and
//! baseline samples over the same window, one per period, from CloudWatch — the ALB target
//! groups' metrics (canary target group against the stable one) or a metric with a dimension
//! per side — judged by `canary_core::analysis::compare`. One GetMetricData call per check.

use std::collections::{BTreeMap, HashMap};
use std::time::SystemTime;

use async_trait::async_trait;
use canary_aws::{CloudWatchApi, MetricQuery};
use canary_core::analysis::compare::{
    judge_comparison, judge_metric, AlbSignal, CompareChecks, ComparedMetric,
};
use canary_core::metrics::Point;

use super::alb_judge::{AlbPair, ALB_NAMESPACE};
use super::{metric_points, try_queries, Collected, PlannedQuery, SignalSource, Validated};
use crate::error::AnalysisError;

pub(super) struct Compare<'a> {
    pub api: &'a dyn CloudWatchApi,
    pub checks: &'a CompareChecks,
    /// The plan's ALB target group pairs, for `alb` metrics.
    pub pairs: Vec<AlbPair>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Side {
    Canary,
    Baseline,
}

impl Side {
    fn id(self) -> &'static str {
        match self {
            Side::Canary => "canary",
            Side::Baseline => "baseline",
        }
    }
}

/// What a query reads for one side of one metric.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Reading {
    /// The metric's own value per period.
    Value,
    /// An ALB pair's requests, the divisor of its 5xx rate.
    Requests,
    /// An ALB pair's 5xx count.
    Errors,
}

impl Compare<'_> {
    /// The queries of metric `index` on `side`: one per ALB pair and reading, or one for a
    /// sided CloudWatch metric. Ids `cmp<metric>_<pair>_<side>_<reading>`.
    fn queries_of(&self, index: usize, metric: &ComparedMetric, side: Side) -> Vec<PlannedQuery> {
        let period_seconds = i32::try_from(self.checks.period_seconds).unwrap_or(60);
        let planned = |pair: usize, reading: Reading, query: MetricQuery| PlannedQuery {
            query: MetricQuery {
                id: query_id(index, pair, side, reading),
                period_seconds,
                ..query
            },
            lookback_seconds: self.checks.lookback_seconds,
        };
        if let Some(sided) = &metric.cloudwatch {
            let mut dimensions = sided.dimensions.clone();
            let value = match side {
                Side::Canary => &sided.canary,
                Side::Baseline => &sided.baseline,
            };
            dimensions.insert(sided.side_dimension.clone(), value.clone());
            let query = MetricQuery {
                id: String::new(),
                namespace: sided.namespace.clone(),
                metric_name: sided.metric_name.clone(),
                dimensions,
                stat: metric.stat().to_owned(),
                period_seconds,
            };
            return vec![planned(0, Reading::Value, query)];
        }
        let readings: &[(Reading, &str, &str)] = match metric.alb {
            Some(AlbSignal::Latency) => &[(Reading::Value, "TargetResponseTime", "")],
            Some(AlbSignal::ErrorRate) => &[
                (Reading::Requests, "RequestCount", "Sum"),
                (Reading::Errors, "HTTPCode_Target_5XX_Count", "Sum"),
            ],
            None => &[],
        };
        let mut queries = Vec::new();
        for (p, pair) in self.pairs.iter().enumerate() {
            let target_group = match side {
                Side::Canary => &pair.canary,
                Side::Baseline => &pair.stable,
            };
            for (reading, name, stat) in readings {
                let stat = if stat.is_empty() { metric.stat() } else { stat };
                let query = MetricQuery {
                    id: String::new(),
                    namespace: ALB_NAMESPACE.to_owned(),
                    metric_name: (*name).to_owned(),
                    dimensions: BTreeMap::from([
                        ("LoadBalancer".to_owned(), pair.load_balancer.clone()),
                        ("TargetGroup".to_owned(), target_group.clone()),
                    ]),
                    stat: stat.to_owned(),
                    period_seconds,
                };
                queries.push(planned(p, *reading, query));
            }
        }
        queries
    }

    fn queries(&self) -> Vec<PlannedQuery> {
        let mut queries = Vec::new();
        for (index, metric) in self.checks.metrics.iter().enumerate() {
            for side in [Side::Canary, Side::Baseline] {
                queries.extend(self.queries_of(index, metric, side));
            }
        }
        queries
    }

    /// One side's samples of metric `index`: a value per period; for an ALB 5xx rate, the
    /// rate of each period with requests (a period without requests says nothing of errors).
    /// Several ALB pairs pool their samples.
    fn samples(
        &self,
        points: &HashMap<String, Vec<(i64, f64)>>,
        index: usize,
        metric: &ComparedMetric,
        side: Side,
    ) -> Vec<f64> {
        let series = |pair: usize, reading: Reading| {
            points
                .get(&query_id(index, pair, side, reading))
                .cloned()
                .unwrap_or_default()
        };
        if metric.cloudwatch.is_some() || metric.alb == Some(AlbSignal::Latency) {
            let pairs = if metric.cloudwatch.is_some() {
                1
            } else {
                self.pairs.len()
            };
            return (0..pairs)
                .flat_map(|pair| series(pair, Reading::Value))
                .map(|(_, v)| v)
                .collect();
        }
        let mut rates = Vec::new();
        for pair in 0..self.pairs.len() {
            let errors: HashMap<i64, f64> = series(pair, Reading::Errors).into_iter().collect();
            for (at, requests) in series(pair, Reading::Requests) {
                if requests > 0.0 {
                    let errors = errors.get(&at).copied().unwrap_or(0.0);
                    rates.push(errors * 100.0 / requests);
                }
            }
        }
        rates
    }
}

#[async_trait]
impl SignalSource for Compare<'_> {
    async fn validate(&self, now: SystemTime) -> Result<Validated, AnalysisError> {
        try_queries(self.api, &self.queries(), now).await
    }

    async fn collect(&self, now: SystemTime, cluster: &str) -> Result<Collected, AnalysisError> {
        let points = metric_points(self.api, &self.queries(), now).await?;
        let mut collected = Collected::default();
        let mut judgements = Vec::new();
        for (index, metric) in self.checks.metrics.iter().enumerate() {
            let canary = self.samples(&points, index, metric, Side::Canary);
            let baseline = self.samples(&points, index, metric, Side::Baseline);
            let judged = judge_metric(self.checks, metric, &canary, &baseline);
            for (side, median) in [
                (Side::Canary, judged.canary_median),
                (Side::Baseline, judged.baseline_median),
            ] {
                if let Some(median) = median {
                    collected.points.push(Point::compared_median(
                        cluster,
                        &metric.name,
                        side.id(),
                        median,
                    ));
                }
            }
            judgements.push(judged);
        }
        let (_, _, outcomes) = judge_comparison(self.checks, &judgements);
        collected.outcomes = outcomes;
        Ok(collected)
    }
}

fn query_id(metric: usize, pair: usize, side: Side, reading: Reading) -> String {
    let reading = match reading {
        Reading::Value => "value",
        Reading::Requests => "requests",
        Reading::Errors => "errors",
    };
    format!("cmp{metric}_{pair}_{}_{reading}", side.id())
}

#[cfg(test)]
mod tests {
    use canary_aws::fakes::FakeCloudWatch;
    use canary_core::analysis::CheckVerdict;
    use canary_core::RolloutPlan;
    use serde_json::json;

    use super::*;
    use crate::signals::alb_judge::alb_pairs;

    fn plan(compare: serde_json::Value) -> RolloutPlan {
        RolloutPlan::parse(json!({
            "cluster": {"name": "green", "region": "us-east-1"},
            "trafficTargets": [{"alb": {
                "listenerArn": "arn:aws:elasticloadbalancing:us-east-1:123456789012:listener/app/web/50dc6c495c0c9188/f2f7dc8efc522ab2",
                "stableTargetGroupArn": "arn:aws:elasticloadbalancing:us-east-1:123456789012:targetgroup/blue/73e2d6bc24d8a067",
                "canaryTargetGroupArn": "arn:aws:elasticloadbalancing:us-east-1:123456789012:targetgroup/green/4b7c9a1e2f3d5a68"}}],
            "steps": [{"weight": 10}, {"weight": 100}],
            "bake": {"seconds": 60, "checkIntervalSeconds": 10},
            "analysis": {"compare": compare},
        }))
        .expect("a valid plan")
        .plan
    }

    #[test]
    fn each_side_reads_its_own_target_group_or_dimension() {
        let plan = plan(
            json!({"periodSeconds": 10, "lookbackSeconds": 300, "metrics": [
                {"name": "latency", "alb": "latency"},
                {"name": "errors", "alb": "errorRate"},
                {"name": "queue", "stat": "p90", "cloudwatch": {"namespace": "Shop", "metricName": "QueueTime",
                 "dimensions": {"Service": "checkout"}, "sideDimension": "Cluster", "canary": "green", "baseline": "blue"}},
            ]}),
        );
        let checks = plan
            .analysis
            .as_ref()
            .and_then(|a| a.compare.as_ref())
            .expect("compare");
        let source = Compare {
            api: &FakeCloudWatch::default(),
            checks,
            pairs: alb_pairs(&plan.traffic_targets),
        };
        let queries: Vec<(String, String, String, String)> = source
            .queries()
            .into_iter()
            .map(|p| {
                let side = p
                    .query
                    .dimensions
                    .get("TargetGroup")
                    .or_else(|| p.query.dimensions.get("Cluster"))
                    .cloned()
                    .unwrap_or_default();
                (p.query.id, p.query.metric_name, p.query.stat, side)
            })
            .collect();
        let row = |id: &str, name: &str, stat: &str, side: &str| {
            (
                id.to_owned(),
                name.to_owned(),
                stat.to_owned(),
                side.to_owned(),
            )
        };
        let (green, blue) = (
            "targetgroup/green/4b7c9a1e2f3d5a68",
            "targetgroup/blue/73e2d6bc24d8a067",
        );
        assert_eq!(
            queries,
            [
                row("cmp0_0_canary_value", "TargetResponseTime", "p99", green),
                row("cmp0_0_baseline_value", "TargetResponseTime", "p99", blue),
                row("cmp1_0_canary_requests", "RequestCount", "Sum", green),
                row(
                    "cmp1_0_canary_errors",
                    "HTTPCode_Target_5XX_Count",
                    "Sum",
                    green
                ),
                row("cmp1_0_baseline_requests", "RequestCount", "Sum", blue),
                row(
                    "cmp1_0_baseline_errors",
                    "HTTPCode_Target_5XX_Count",
                    "Sum",
                    blue
                ),
                row("cmp2_0_canary_value", "QueueTime", "p90", "green"),
                row("cmp2_0_baseline_value", "QueueTime", "p90", "blue"),
            ]
        );
    }

    #[test]
    fn error_rates_count_only_periods_with_requests() {
        let plan = plan(json!({"metrics": [{"name": "errors", "alb": "errorRate"}]}));
        let checks = plan
            .analysis
            .as_ref()
            .and_then(|a| a.compare.as_ref())
            .expect("compare");
        let metric = &checks.metrics[0];
        let source = Compare {
            api: &FakeCloudWatch::default(),
            checks,
            pairs: alb_pairs(&plan.traffic_targets),
        };
        let points = HashMap::from([
            (
                "cmp0_0_canary_requests".to_owned(),
                vec![(60, 100.0), (120, 0.0), (180, 50.0)],
            ),
            (
                "cmp0_0_canary_errors".to_owned(),
                vec![(60, 2.0), (180, 1.0)],
            ),
        ]);
        assert_eq!(source.samples(&points, 0, metric, Side::Canary), [2.0, 2.0]);
        assert!(source
            .samples(&points, 0, metric, Side::Baseline)
            .is_empty());
        let (_, _, outcomes) =
            judge_comparison(checks, &[judge_metric(checks, metric, &[2.0, 2.0], &[])]);
        assert_eq!(outcomes[0].verdict, CheckVerdict::Inconclusive);
    }
}
