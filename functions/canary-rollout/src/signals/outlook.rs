//! `plan check`'s outlook of the comparison's traffic: the last hour's requests of the plan's
//! target groups (its `alb` and `vpcLattice` targets'; one GetMetricData call), and what they
//! promise each step (`canary_core::plan::forecast`).

use std::collections::HashMap;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use canary_aws::{CloudWatchApi, MetricQuery};
use canary_core::plan::forecast::{forecast, StepForecast};
use canary_core::plan::ValidPlan;

use super::metric_data_error;
use super::target_groups::{target_group_pairs, GroupMetric};
use crate::error::AnalysisError;

/// How far back the traffic is read.
pub const OUTLOOK_SECONDS: u64 = 3_600;

/// The last hour's traffic through the plan's target groups, and each step's outlook.
#[derive(Debug, Clone, PartialEq)]
pub struct ComparisonOutlook {
    /// The requests of a median period of the last hour (both target groups of every pair).
    pub median_requests: f64,
    pub period_seconds: i64,
    pub steps: Vec<StepForecast>,
}

/// None when the plan has no comparison or no target group whose requests tell its traffic.
pub async fn comparison_outlook(
    cloudwatch: &dyn CloudWatchApi,
    valid: &ValidPlan,
    now: SystemTime,
) -> Result<Option<ComparisonOutlook>, AnalysisError> {
    let plan = &valid.plan;
    let Some(analysis) = &plan.analysis else {
        return Ok(None);
    };
    let Some(compare) = &analysis.compare else {
        return Ok(None);
    };
    let pairs = target_group_pairs(&plan.traffic_targets);
    let (Ok(period), false) = (u64::try_from(compare.period_seconds), pairs.is_empty()) else {
        return Ok(None);
    };
    let period = period.max(1);
    let queries: Vec<MetricQuery> = pairs
        .iter()
        .enumerate()
        .flat_map(|(p, pair)| {
            [("stable", &pair.stable), ("canary", &pair.canary)].map(|(side, group)| {
                group.query(
                    format!("requests{p}_{side}"),
                    GroupMetric::Requests,
                    "Sum".to_owned(),
                    i32::try_from(period).unwrap_or(60),
                )
            })
        })
        .collect();
    let start = now - Duration::from_secs(OUTLOOK_SECONDS);
    let series = cloudwatch
        .metric_data(&queries, start, now)
        .await
        .map_err(|source| metric_data_error("trafficTargets", source))?;
    let requests = per_period(series.values().flat_map(|s| &s.points), start, period);
    let mut sorted = requests.clone();
    sorted.sort_by(f64::total_cmp);
    let median_requests = sorted.get(sorted.len() / 2).copied().unwrap_or(0.0);
    Ok(
        forecast(&requests, &valid.steps, analysis).map(|steps| ComparisonOutlook {
            median_requests,
            period_seconds: compare.period_seconds,
            steps,
        }),
    )
}

/// The requests of each period from `start`, every series added up; a period without a
/// datapoint had none (ALB publishes nothing for a target group without requests).
fn per_period<'a>(
    points: impl Iterator<Item = &'a (i64, f64)>,
    start: SystemTime,
    period: u64,
) -> Vec<f64> {
    let from = start.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs()) as i64;
    let periods = (OUTLOOK_SECONDS / period) as usize;
    let mut summed: HashMap<usize, f64> = HashMap::new();
    for (at, value) in points {
        let index = (at - from).div_euclid(period as i64);
        if let Ok(index) = usize::try_from(index) {
            *summed
                .entry(index.min(periods.saturating_sub(1)))
                .or_default() += value;
        }
    }
    (0..periods)
        .map(|i| summed.get(&i).copied().unwrap_or(0.0))
        .collect()
}

#[cfg(test)]
mod tests {
    use canary_aws::fakes::{MetricAnswers, MetricDataAnswer};
    use canary_aws::{AwsError, AwsErrorKind};
    use serde_json::json;

    use super::*;

    /// CloudWatch that refuses every GetMetricData call as `kind`.
    fn refusing(
        kind: AwsErrorKind,
    ) -> MetricAnswers<impl Fn(&[MetricQuery], SystemTime, SystemTime) -> MetricDataAnswer> {
        MetricAnswers::new(move |_: &[MetricQuery], _, _| {
            Err(AwsError::new(kind, "GetMetricData", "no"))
        })
    }

    #[tokio::test]
    async fn a_refused_read_of_the_last_hour_says_whose_it_is() {
        let valid = crate::signals::compared_alb_plan(
            json!({"metrics": [{"name": "5xx", "alb": "errorRate"}]}),
        );
        let refused =
            comparison_outlook(&refusing(AwsErrorKind::Rejected), &valid, SystemTime::now())
                .await
                .expect_err("refused");
        assert!(
            matches!(&refused, AnalysisError::QueriesRejected { path, .. } if path == "trafficTargets"),
            "{refused:?}"
        );
        // AWS's own trouble stays AWS's (retried by whoever asked), never the plan's fault.
        let busy = comparison_outlook(
            &refusing(AwsErrorKind::Transient),
            &valid,
            SystemTime::now(),
        )
        .await
        .expect_err("refused");
        assert!(matches!(busy, AnalysisError::Aws(_)), "{busy:?}");
    }

    #[test]
    fn each_period_adds_every_series_and_a_missing_one_had_no_requests() {
        let start = UNIX_EPOCH + Duration::from_secs(1_000_000);
        let at = |minute: i64| 1_000_000 + minute * 60;
        let points = [(at(0), 5.0), (at(0), 7.0), (at(2), 1.0), (at(59), 3.0)];
        let requests = per_period(points.iter(), start, 60);
        assert_eq!(requests.len(), 60);
        assert_eq!(&requests[..3], &[12.0, 0.0, 1.0]);
        assert_eq!(requests[59], 3.0);
    }
}
