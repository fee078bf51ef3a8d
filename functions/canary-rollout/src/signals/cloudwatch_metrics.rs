//! CloudWatch metric thresholds (plan `analysis.metrics`): each check's statistic over its
//! lookback, reduced to one value and judged against its `min`/`max`.

use std::time::SystemTime;

use async_trait::async_trait;
use canary_aws::{CloudWatchApi, MetricQuery};
use canary_core::analysis::{judge_threshold, reduce, MetricCheck};
use canary_core::metrics::Point;

use super::{metric_values, try_queries, Collected, PlannedQuery, SignalSource, Validated};
use crate::error::AnalysisError;

pub(super) struct CloudWatchMetrics<'a> {
    pub api: &'a dyn CloudWatchApi,
    pub checks: &'a [MetricCheck],
}

impl CloudWatchMetrics<'_> {
    /// One query per check, `m<index>`.
    fn queries(&self) -> Vec<PlannedQuery> {
        self.checks
            .iter()
            .enumerate()
            .map(|(i, check)| PlannedQuery {
                query: MetricQuery {
                    id: format!("m{i}"),
                    namespace: check.namespace.clone(),
                    metric_name: check.metric_name.clone(),
                    dimensions: check.dimensions.clone(),
                    stat: check.stat.clone(),
                    period_seconds: i32::try_from(check.period_seconds).unwrap_or(60),
                },
                lookback_seconds: check.lookback_seconds,
            })
            .collect()
    }
}

#[async_trait]
impl SignalSource for CloudWatchMetrics<'_> {
    async fn validate(&self, now: SystemTime) -> Result<Validated, AnalysisError> {
        try_queries(self.api, &self.queries(), now).await
    }

    async fn collect(&self, now: SystemTime, cluster: &str) -> Result<Collected, AnalysisError> {
        let planned = self.queries();
        let values = metric_values(self.api, &planned, now).await?;
        let mut collected = Collected::default();
        for (check, planned) in self.checks.iter().zip(&planned) {
            let value = values
                .get(&planned.query.id)
                .and_then(|values| reduce(values, check.reduce));
            if let Some(value) = value {
                collected
                    .points
                    .push(Point::metric_value(cluster, &check.name, value));
            }
            collected.outcomes.push(judge_threshold(check, value));
        }
        Ok(collected)
    }
}
