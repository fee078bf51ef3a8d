//! The comparison check (plan `analysis.compare`): each compared metric's canary samples and
//! baseline samples over the same window, one per period — from CloudWatch (the ALB target
//! groups' metrics, canary target group against the stable one, or a metric with a dimension
//! per side; one GetMetricData call per check) or from a metrics provider (a Prometheus
//! subquery, a Datadog timeseries query, per side) — judged by
//! `canary_core::analysis::compare`; in a fleet, the canary's samples also against its
//! promoted peers' canaries (`compare.peers`).

use std::collections::{BTreeMap, HashMap};
use std::time::{SystemTime, UNIX_EPOCH};

use async_trait::async_trait;
use canary_aws::{CloudWatchApi, DatadogApi, MetricQuery, PrometheusApi, QueryError};
use canary_core::analysis::compare::{
    baseline_serves, derived_threshold, judge_against_peers, judge_comparison, judge_metric,
    judge_metric_without_baseline, too_few_peers, AlbSignal, CompareChecks, ComparedMetric,
    Evidence, Observation, Period, DERIVED_THRESHOLD_SECONDS,
};
use canary_core::analysis::datadog::{timeseries_request, timeseries_samples};
use canary_core::analysis::histogram::slow_request_queries;
use canary_core::analysis::prometheus::range_samples;
use canary_core::analysis::statistics::median;
use canary_core::analysis::{DatadogChecks, PrometheusChecks};
use canary_core::cluster::ClusterRef;
use canary_core::metrics::Point;
use tracing::warn;

use super::target_groups::{target_group_pairs, GroupMetric, MeasuredGroup, TargetGroupPair};
use super::{metric_points, try_queries, Collected, PlannedQuery, SignalSource, Validated};
use crate::error::AnalysisError;

pub(super) struct Compare<'a> {
    pub api: &'a dyn CloudWatchApi,
    /// Where `prometheus` and `datadog` metrics query (the plan's `analysis.prometheus` and
    /// `analysis.datadog`).
    pub prometheus: Option<(&'a dyn PrometheusApi, &'a PrometheusChecks)>,
    pub datadog: Option<(&'a dyn DatadogApi, &'a DatadogChecks)>,
    pub checks: &'a CompareChecks,
    pub cluster: &'a ClusterRef,
    /// The plan's target group pairs (its `alb` and `vpcLattice` targets'), for `alb` metrics.
    pub pairs: Vec<TargetGroupPair>,
    /// What the rollout's checks have taken in so far, and over how many runs of checks α is
    /// shared.
    pub carried: &'a super::Carried,
}

/// Whose samples a query reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Side {
    Canary,
    Baseline,
    /// The n-th of `compare.peers.cells`: its canary.
    Peer(usize),
}

impl Side {
    fn id(self) -> String {
        match self {
            Side::Canary => "canary".to_owned(),
            Side::Baseline => "baseline".to_owned(),
            Side::Peer(n) => format!("peer{n}"),
        }
    }
}

/// What a query reads for one side of one metric.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Reading {
    /// The metric's own value per period.
    Value,
    /// An ALB target group's requests, the divisor of its 5xx rate.
    Requests,
    /// An ALB target group's 5xx count.
    Errors,
}

impl Compare<'_> {
    /// Every side the check reads: canary, baseline, and each peer.
    fn sides(&self) -> Vec<Side> {
        let peers = self.checks.peers.as_ref().map_or(0, |p| p.cells.len());
        [Side::Canary, Side::Baseline]
            .into_iter()
            .chain((0..peers).map(Side::Peer))
            .collect()
    }

    /// A side's target groups (a peer's: the ALB target groups of its cell).
    fn target_groups(&self, side: Side) -> Vec<MeasuredGroup> {
        match side {
            Side::Canary | Side::Baseline => self
                .pairs
                .iter()
                .map(|pair| match side {
                    Side::Canary => pair.canary.clone(),
                    _ => pair.stable.clone(),
                })
                .collect(),
            Side::Peer(n) => self
                .checks
                .peers
                .iter()
                .flat_map(|p| p.cells.get(n))
                .flat_map(|peer| &peer.alb)
                .filter_map(|group| {
                    MeasuredGroup::alb(&group.listener_arn, &group.canary_target_group_arn)
                })
                .collect(),
        }
    }

    /// A side's value of a sided CloudWatch metric's side dimension, or of a Prometheus or
    /// Datadog metric's `{{cluster}}`.
    fn side_value(&self, metric: &ComparedMetric, side: Side) -> Option<String> {
        let query = metric.prometheus.as_ref().or(metric.datadog.as_ref());
        let (canary, baseline) = match (&metric.cloudwatch, query) {
            (Some(sided), _) => (sided.canary.as_str(), sided.baseline.as_str()),
            (None, Some(query)) => (query.canary_value(self.cluster), query.baseline.as_str()),
            (None, None) => return None,
        };
        match side {
            Side::Canary => Some(canary.to_owned()),
            Side::Baseline => Some(baseline.to_owned()),
            Side::Peer(n) => self
                .checks
                .peers
                .as_ref()?
                .cells
                .get(n)?
                .sides
                .get(&metric.name)
                .cloned(),
        }
    }

    /// The queries of metric `index` on `side`: one per ALB target group and reading, or one
    /// for a sided CloudWatch metric. Ids `cmp<metric>_<group>_<side>_<reading>`. A
    /// `slowerThan` derived from the baseline is `evidence`'s; until a check has taken one the
    /// metric has no query (no samples: NoData).
    fn queries_of(
        &self,
        index: usize,
        metric: &ComparedMetric,
        side: Side,
        evidence: &Evidence,
    ) -> Vec<PlannedQuery> {
        if metric.derived_from().is_some() && evidence.threshold(index).is_none() {
            return Vec::new();
        }
        let period_seconds = i32::try_from(self.checks.period_seconds).unwrap_or(60);
        let planned = |group: usize, reading: Reading, query: MetricQuery| PlannedQuery {
            query: MetricQuery {
                id: query_id(index, group, side, reading),
                period_seconds,
                ..query
            },
            lookback_seconds: self.checks.lookback_seconds,
        };
        // Each reading's statistic; `slowerThan` counts the values above it among all of them.
        let counted = |slow: Option<String>| match slow {
            Some(slow) => vec![
                (Reading::Requests, "SampleCount".to_owned()),
                (Reading::Errors, slow),
            ],
            None => vec![(Reading::Value, metric.stat().to_owned())],
        };
        if let Some(sided) = &metric.cloudwatch {
            let Some(value) = self.side_value(metric, side) else {
                return Vec::new();
            };
            let mut dimensions = sided.dimensions.clone();
            dimensions.insert(sided.side_dimension.clone(), value);
            return counted(metric.slow_count_stat(evidence.threshold(index)))
                .into_iter()
                .map(|(reading, stat)| {
                    let query = MetricQuery {
                        id: String::new(),
                        namespace: sided.namespace.clone(),
                        metric_name: sided.metric_name.clone(),
                        dimensions: dimensions.clone(),
                        stat,
                        period_seconds,
                    };
                    planned(0, reading, query)
                })
                .collect();
        }
        let threshold = metric.slower_than_seconds(evidence.threshold(index));
        let mut queries = Vec::new();
        for (g, group) in self.target_groups(side).into_iter().enumerate() {
            let readings: Vec<(Reading, GroupMetric, String)> = match metric.alb {
                // A Lattice group's latency is in milliseconds: its threshold too.
                Some(AlbSignal::Latency) => counted(threshold.map(|t| group.slower_than(t)))
                    .into_iter()
                    .map(|(reading, stat)| (reading, GroupMetric::Latency, stat))
                    .collect(),
                Some(AlbSignal::ErrorRate) => vec![
                    (Reading::Requests, GroupMetric::Requests, "Sum".to_owned()),
                    (Reading::Errors, GroupMetric::Errors5xx, "Sum".to_owned()),
                ],
                None => Vec::new(),
            };
            for (reading, read, stat) in readings {
                let query = group.query(String::new(), read, stat, period_seconds);
                queries.push(planned(g, reading, query));
            }
        }
        queries
    }

    /// Each Prometheus or Datadog metric's samples on each side, one query per side (a
    /// Prometheus subquery, a Datadog timeseries query), keyed like the CloudWatch queries'
    /// points (`query<metric>_<side>`). A provider that cannot be reached or refuses is the
    /// check's error (unjudged, then a rollback, as for any provider); an answer about the query
    /// itself leaves that side without samples (`strict`, at Prepare: refused).
    async fn provider_points(
        &self,
        now: SystemTime,
        strict: bool,
    ) -> Result<HashMap<String, Vec<(i64, f64)>>, AnalysisError> {
        let mut points = HashMap::new();
        for (index, metric) in self.checks.metrics.iter().enumerate() {
            let (field, query) = match (&metric.prometheus, &metric.datadog) {
                (Some(query), _) => ("prometheus", query),
                (None, Some(query)) => ("datadog", query),
                (None, None) => continue,
            };
            let path = format!("analysis.compare.metrics[{index}].{field}");
            let refused = |message: String| AnalysisError::QueryCheck {
                path: path.clone(),
                message,
            };
            for side in self.sides() {
                let Some(value) = self.side_value(metric, side) else {
                    continue;
                };
                let text = query.side_query(self.cluster, &value).map_err(&refused)?;
                // A histogram's slow requests are two series: those slower, and every request.
                let asked = match (metric.slower_than_seconds(None), &metric.prometheus) {
                    (Some(threshold), Some(_)) => {
                        let (requests, slow) =
                            slow_request_queries(&text, threshold, self.checks.period_seconds)
                                .map_err(&refused)?;
                        vec![
                            (provider_id(index, side), slow),
                            (requests_id(index, side), requests),
                        ]
                    }
                    _ => vec![(provider_id(index, side), text)],
                };
                for (key, text) in asked {
                    let answer = match self.ask(metric, &text, now).await {
                        Some(Ok(answer)) => answer,
                        Some(Err(error)) if error.is_about_the_query() => Err(error.to_string()),
                        Some(Err(error)) => return Err(provider_error(&path, error)),
                        None => Err(format!("the plan gives no `analysis.{field}` to query")),
                    };
                    match answer {
                        Ok(samples) => {
                            points.insert(key, samples);
                        }
                        Err(why) if strict => return Err(refused(format!("{}: {why}", side.id()))),
                        Err(why) => warn!(%path, side = %side.id(), %why, "no samples"),
                    }
                }
                if strict && metric.slower_than.is_some() {
                    self.refuse_a_threshold_between_buckets(&points, index, side)
                        .map_err(&refused)?;
                }
            }
        }
        Ok(points)
    }

    /// At Prepare: a side whose histogram has requests but no series for the threshold's
    /// bucket has a threshold that is not one of its bounds, and would never have a sample.
    fn refuse_a_threshold_between_buckets(
        &self,
        points: &HashMap<String, Vec<(i64, f64)>>,
        index: usize,
        side: Side,
    ) -> Result<(), String> {
        let has = |key: &str| points.get(key).is_some_and(|p| !p.is_empty());
        if has(&requests_id(index, side)) && !has(&provider_id(index, side)) {
            return Err(format!(
                "{}: the histogram has requests but no bucket whose `le` is slowerThan ({}): \
                 give one of its bucket bounds",
                side.id(),
                self.checks.metrics[index]
                    .slower_than_seconds(None)
                    .unwrap_or_default()
            ));
        }
        Ok(())
    }

    /// One side's samples of a Prometheus or Datadog metric over the window: the provider's
    /// error, or what its answer gives (`Err` for an answer the comparison cannot use); `None`
    /// when the plan does not configure the provider.
    async fn ask(
        &self,
        metric: &ComparedMetric,
        query: &str,
        now: SystemTime,
    ) -> Option<Result<Result<Vec<(i64, f64)>, String>, QueryError>> {
        let (lookback, period) = (self.checks.lookback_seconds, self.checks.period_seconds);
        if metric.prometheus.is_some() {
            let (api, section) = self.prometheus?;
            let endpoint = match section.endpoint() {
                Ok(endpoint) => endpoint,
                Err(why) => return Some(Ok(Err(why))),
            };
            let subquery = format!("({query})[{lookback}s:{period}s]");
            let answer = api.instant_query(&endpoint, &subquery, now).await;
            return Some(answer.map(|data| range_samples(&data)));
        }
        let (api, section) = self.datadog?;
        let now_ms = now
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX));
        let body = timeseries_request(query, now_ms - lookback * 1000, now_ms, period * 1000);
        let answer = api.query(&section.timeseries_url(), &body).await;
        Some(answer.map(|data| timeseries_samples(&data)))
    }

    fn queries(&self, evidence: &Evidence) -> Vec<PlannedQuery> {
        let mut queries = Vec::new();
        for (index, metric) in self.checks.metrics.iter().enumerate() {
            for side in self.sides() {
                queries.extend(self.queries_of(index, metric, side, evidence));
            }
        }
        queries
    }

    /// A derived `slowerThan`'s bucket: the hour and the minute its start is rounded down by.
    const HOUR_BUCKET_SECONDS: i64 = DERIVED_THRESHOLD_SECONDS + 60;

    /// Each `slowerThan` derived from the baseline that `evidence` has not taken yet: the
    /// baseline target groups' percentile of `TargetResponseTime` over the hour before `now`
    /// (the slowest group's, one GetMetricData call, only at a check that has none yet), taken
    /// into `evidence`. A metric whose baseline served nothing in that hour takes none (its
    /// check says NoData, and the next check tries again). Returns what was taken, for people.
    async fn derive_thresholds(
        &self,
        evidence: &mut Evidence,
        now: SystemTime,
    ) -> Result<Vec<String>, AnalysisError> {
        let derived: Vec<(usize, &ComparedMetric, &str)> = (self.checks.metrics.iter())
            .enumerate()
            .filter_map(|(index, metric)| Some((index, metric, metric.derived_from()?)))
            .filter(|(index, _, _)| evidence.threshold(*index).is_none())
            .collect();
        if derived.is_empty() {
            return Ok(Vec::new());
        }
        let mut queries = Vec::new();
        let baseline = self.target_groups(Side::Baseline);
        for (index, _, stat) in &derived {
            for (g, group) in baseline.iter().enumerate() {
                queries.push(group.query(
                    format!("derive{index}_{g}"),
                    GroupMetric::Latency,
                    (*stat).to_owned(),
                    Self::HOUR_BUCKET_SECONDS as i32,
                ));
            }
        }
        // One bucket of the hour up to now: CloudWatch rounds a recent StartTime down to the
        // whole minute, so the hour is asked from a whole minute in one bucket a minute longer
        // (an hour's bucket would end before now and leave a second, nearly empty one).
        let hour_ago = now.duration_since(UNIX_EPOCH).map_or(0, |d| {
            d.as_secs().saturating_sub(DERIVED_THRESHOLD_SECONDS as u64) / 60 * 60
        });
        let start = UNIX_EPOCH + std::time::Duration::from_secs(hour_ago);
        let series = self.api.metric_data(&queries, start, now).await?;
        let mut taken = Vec::new();
        for (index, metric, stat) in derived {
            let slowest = (baseline.iter().enumerate())
                .filter_map(|(g, group)| Some((group, series.get(&format!("derive{index}_{g}"))?)))
                .flat_map(|(group, series)| {
                    (series.points.iter()).map(|(_, value)| group.latency_seconds(stat, *value))
                })
                .reduce(f64::max);
            match slowest.and_then(derived_threshold) {
                Some(threshold) => {
                    evidence.take_threshold(self.checks, index, threshold);
                    taken.push(format!(
                        "compare {}: slowerThan {threshold} s (the baseline's {stat} over the last hour)",
                        metric.name
                    ));
                }
                None => taken.push(format!(
                    "compare {}: the baseline served no request in the last hour: no {stat} to derive slowerThan from yet",
                    metric.name
                )),
            }
        }
        Ok(taken)
    }

    /// One side's series of metric `index`, per target group (one group for a sided or
    /// provider metric): a value per period, or for an ALB 5xx rate the (errors, requests) of
    /// each period.
    fn groups(
        &self,
        points: &HashMap<String, Vec<(i64, f64)>>,
        index: usize,
        metric: &ComparedMetric,
        side: Side,
    ) -> Vec<BTreeMap<i64, Sample>> {
        let series = |group: usize, reading: Reading| {
            points
                .get(&query_id(index, group, side, reading))
                .cloned()
                .unwrap_or_default()
        };
        if metric.prometheus.is_some() || metric.datadog.is_some() {
            let values = points
                .get(&provider_id(index, side))
                .cloned()
                .unwrap_or_default();
            if metric.counted() {
                // `increase` extrapolates: the difference of two counts is kept within them.
                let requests: HashMap<i64, f64> = points
                    .get(&requests_id(index, side))
                    .cloned()
                    .unwrap_or_default()
                    .into_iter()
                    .collect();
                return vec![values
                    .into_iter()
                    .filter_map(|(at, slow)| {
                        let requests = requests.get(&at)?.max(0.0);
                        let errors = slow.clamp(0.0, requests);
                        Some((at, Sample::Counts { errors, requests }))
                    })
                    .collect()];
            }
            return vec![values
                .into_iter()
                .map(|(at, v)| (at, Sample::Value(v)))
                .collect()];
        }
        // A sided metric's one series, in its own unit; a target group's latency, in seconds.
        let groups: Vec<Option<MeasuredGroup>> = match metric.cloudwatch {
            Some(_) => vec![None],
            None => self.target_groups(side).into_iter().map(Some).collect(),
        };
        (groups.iter().enumerate())
            .map(|(g, group)| {
                if !metric.counted() {
                    return series(g, Reading::Value)
                        .into_iter()
                        .map(|(at, v)| {
                            let v = group
                                .as_ref()
                                .map_or(v, |group| group.latency_seconds(metric.stat(), v));
                            (at, Sample::Value(v))
                        })
                        .collect();
                }
                // A period without a 5xx datapoint had no errors (CloudWatch publishes none);
                // without a slow count, no slow request.
                let errors: HashMap<i64, f64> = series(g, Reading::Errors).into_iter().collect();
                series(g, Reading::Requests)
                    .into_iter()
                    .map(|(at, requests)| {
                        let errors = errors.get(&at).copied().unwrap_or(0.0);
                        (at, Sample::Counts { errors, requests })
                    })
                    .collect()
            })
            .collect()
    }

    /// Metric `index`'s periods, the canary against the baseline (each ALB pair's groups
    /// against each other) or against the peers (each period, the peers' median value, or
    /// their errors and requests together).
    fn periods(
        &self,
        points: &HashMap<String, Vec<(i64, f64)>>,
        index: usize,
        metric: &ComparedMetric,
        peers: usize,
    ) -> Vec<Period> {
        let canary = self.groups(points, index, metric, Side::Canary);
        let others: Vec<BTreeMap<i64, Sample>> = match peers {
            0 if metric.counted() => {
                vec![pooled(self.groups(points, index, metric, Side::Baseline))]
            }
            0 => self.groups(points, index, metric, Side::Baseline),
            _ => vec![pooled(
                (0..peers)
                    .flat_map(|n| self.groups(points, index, metric, Side::Peer(n)))
                    .collect(),
            )],
        };
        // Errors (or slow requests) and requests are compared per period, both sides' groups
        // together.
        let canary = match metric.counted() {
            true => vec![pooled(canary)],
            false => canary,
        };
        let mut periods = Vec::new();
        for (group, series) in canary.iter().enumerate() {
            let other = match others.len() {
                1 => others.first(),
                _ => others.get(group),
            };
            let Some(other) = other else { continue };
            for (at, reading) in series {
                let Some(observation) = other.get(at).and_then(|o| reading.against(o)) else {
                    continue;
                };
                periods.push(Period {
                    at: *at,
                    observation,
                });
            }
        }
        periods
    }

    /// One side's samples of metric `index` with their periods, for a person (`report`): the
    /// values, or each period's error rate (periods with requests).
    fn series(
        &self,
        points: &HashMap<String, Vec<(i64, f64)>>,
        index: usize,
        metric: &ComparedMetric,
        side: Side,
    ) -> Vec<(i64, f64)> {
        self.groups(points, index, metric, side)
            .into_iter()
            .flatten()
            .filter_map(|(at, reading)| match reading {
                Sample::Value(v) => Some((at, v)),
                Sample::Values(values) => median(&values).map(|v| (at, v)),
                Sample::Counts { errors, requests } => {
                    (requests > 0.0).then(|| (at, errors * 100.0 / requests))
                }
            })
            .collect()
    }
}

/// What one side's group read in one period.
#[derive(Debug, Clone, PartialEq)]
enum Sample {
    Value(f64),
    Counts {
        errors: f64,
        requests: f64,
    },
    /// Several values of one period (the peers'), judged by their median.
    Values(Vec<f64>),
}

impl Sample {
    /// The canary's reading against the other side's, in one period.
    fn against(&self, other: &Sample) -> Option<Observation> {
        let value = |reading: &Sample| match reading {
            Sample::Value(v) => Some(*v),
            Sample::Values(values) => median(values),
            Sample::Counts { .. } => None,
        };
        match (self, other) {
            (
                Sample::Counts {
                    errors: canary_errors,
                    requests: canary_requests,
                },
                Sample::Counts {
                    errors: other_errors,
                    requests: other_requests,
                },
            ) => Some(Observation::Counts {
                canary_errors: *canary_errors,
                canary_requests: *canary_requests,
                other_errors: *other_errors,
                other_requests: *other_requests,
            }),
            _ => Some(Observation::Value {
                canary: value(self)?,
                other: value(other)?,
            }),
        }
    }
}

/// Several groups' series as one: each period's errors and requests added up, or its values
/// kept together.
fn pooled(groups: Vec<BTreeMap<i64, Sample>>) -> BTreeMap<i64, Sample> {
    let mut pooled: BTreeMap<i64, Sample> = BTreeMap::new();
    for (at, reading) in groups.into_iter().flatten() {
        let entry = pooled.entry(at).or_insert(match reading {
            Sample::Counts { .. } => Sample::Counts {
                errors: 0.0,
                requests: 0.0,
            },
            _ => Sample::Values(Vec::new()),
        });
        match (entry, reading) {
            (
                Sample::Counts { errors, requests },
                Sample::Counts {
                    errors: e,
                    requests: r,
                },
            ) => {
                *errors += e;
                *requests += r;
            }
            (Sample::Values(values), Sample::Value(v)) => values.push(v),
            (Sample::Values(values), Sample::Values(more)) => values.extend(more),
            _ => {}
        }
    }
    pooled
}

/// One side's samples of one compared metric over a span, for a person (`cluster-canary
/// report`): `side` is `canary`, `baseline` or `peer <name>`.
#[derive(Debug, Clone, PartialEq)]
pub struct ComparedSeries {
    pub metric: String,
    pub side: String,
    /// (epoch seconds, value), oldest first.
    pub points: Vec<(i64, f64)>,
}

/// Every compared metric's samples of every side from `start` to `end`, as the comparison
/// reads them (one GetMetricData call, its pages followed; a subquery per side of Prometheus's
/// metrics). Empty without `analysis.compare`.
pub async fn compared_series(
    apis: &super::SignalApis<'_>,
    plan: &canary_core::RolloutPlan,
    start: SystemTime,
    end: SystemTime,
) -> Result<Vec<ComparedSeries>, AnalysisError> {
    let Some(analysis) = plan.analysis.as_ref() else {
        return Ok(Vec::new());
    };
    let Some(checks) = analysis.compare.as_ref() else {
        return Ok(Vec::new());
    };
    let span = end.duration_since(start).map_or(0, |d| d.as_secs());
    // The whole span as the window: the same queries, looking back from the end.
    let whole_span = CompareChecks {
        lookback_seconds: i64::try_from(span).unwrap_or(i64::MAX),
        ..checks.clone()
    };
    let source = Compare {
        api: apis.cloudwatch,
        prometheus: analysis.prometheus.as_ref().map(|p| (apis.prometheus, p)),
        datadog: analysis.datadog.as_ref().map(|d| (apis.datadog, d)),
        checks: &whole_span,
        cluster: &plan.cluster,
        pairs: target_group_pairs(&plan.traffic_targets),
        carried: &super::Carried::default(),
    };
    // A derived slowerThan as the rollout's first check took it: from the hour before.
    let mut evidence = Evidence::default();
    source.derive_thresholds(&mut evidence, start).await?;
    let mut points = metric_points(apis.cloudwatch, &source.queries(&evidence), end).await?;
    points.extend(source.provider_points(end, false).await?);
    let mut series = Vec::new();
    for (index, metric) in checks.metrics.iter().enumerate() {
        for side in source.sides() {
            let name = match side {
                Side::Peer(n) => format!(
                    "peer {}",
                    checks
                        .peers
                        .as_ref()
                        .and_then(|p| p.cells.get(n))
                        .map_or("", |peer| peer.name.as_str())
                ),
                _ => side.id(),
            };
            let mut points = source.series(&points, index, metric, side);
            points.sort_by_key(|(at, _)| *at);
            series.push(ComparedSeries {
                metric: metric.name.clone(),
                side: name,
                points,
            });
        }
    }
    Ok(series)
}

fn provider_error(path: &str, error: QueryError) -> AnalysisError {
    AnalysisError::MetricsProvider {
        path: path.to_owned(),
        name: error.error_name(),
        message: error.to_string(),
    }
}

#[async_trait]
impl SignalSource for Compare<'_> {
    /// CloudWatch takes the queries, and every Prometheus subquery answers with at most one
    /// series (no data yet is fine: the canary has had no traffic).
    async fn validate(&self, now: SystemTime) -> Result<Validated, AnalysisError> {
        // A derived slowerThan is read now for people (`plan check`); the rollout's first check
        // takes its own.
        let mut evidence = Evidence::default();
        let derived =
            self.derive_thresholds(&mut evidence, now)
                .await
                .map_err(|error| match error {
                    AnalysisError::Aws(source) => {
                        super::metric_data_error("analysis.compare", source)
                    }
                    other => other,
                })?;
        let mut validated = try_queries(self.api, &self.queries(&evidence), now).await?;
        validated.metric_queries += self.provider_points(now, true).await?.len();
        validated.current.extend(derived);
        Ok(validated)
    }

    async fn collect(&self, now: SystemTime, cluster: &str) -> Result<Collected, AnalysisError> {
        let mut carried = self.carried.evidence.clone();
        let derived = self.derive_thresholds(&mut carried, now).await?;
        if !derived.is_empty() {
            tracing::info!(derived = ?derived, "slowerThan derived from the baseline");
        }
        let mut points = metric_points(self.api, &self.queries(&carried), now).await?;
        points.extend(self.provider_points(now, false).await?);
        let mut collected = Collected::default();
        let mut level = |name: &str, side: &str, level: Option<f64>| {
            if let Some(level) = level {
                collected
                    .points
                    .push(Point::compared_median(cluster, name, side, level));
            }
        };
        carried.begin_bake(self.carried.step);
        let (evidence, runs) = (&carried, self.carried.runs);
        let mut taken = Vec::new();
        let mut judgements = Vec::new();
        for index in 0..self.checks.metrics.len() {
            let metric = &self.checks.metrics[index];
            let alpha = self.checks.alpha(index, runs);
            let judged = match self.carried.step_weight.is_none_or(baseline_serves) {
                true => {
                    let periods = self.periods(&points, index, metric, 0);
                    judge_metric(self.checks, index, false, alpha, evidence, &periods)
                }
                false => judge_metric_without_baseline(self.checks, index, alpha, evidence),
            };
            let Some(judged) = judged else {
                continue;
            };
            level(&judged.name, "canary", judged.canary_median);
            level(&judged.name, "baseline", judged.baseline_median);
            taken.push(judged.evidence.clone());
            judgements.push(judged);
        }
        let mut peer_outcomes = Vec::new();
        if let Some(peers) = &self.checks.peers {
            match too_few_peers(peers) {
                Some(outcome) => peer_outcomes.push(outcome),
                None => {
                    for index in 0..self.checks.metrics.len() {
                        let metric = &self.checks.metrics[index];
                        let periods = self.periods(&points, index, metric, peers.cells.len());
                        let alpha = self.checks.alpha(index, runs);
                        let Some(judged) =
                            judge_metric(self.checks, index, true, alpha, evidence, &periods)
                        else {
                            continue;
                        };
                        level(&judged.name, "peers", judged.baseline_median);
                        peer_outcomes.push(judge_against_peers(
                            self.checks,
                            &judged,
                            peers.cells.len(),
                        ));
                        taken.push(judged.evidence);
                    }
                }
            }
        }
        let verdict = judge_comparison(self.checks, &judgements);
        collected.outcomes = verdict.outcomes;
        collected.asks = verdict.asks;
        collected.outcomes.extend(peer_outcomes);
        let evidence = Evidence(taken);
        collected.regression_shown = evidence.shows_a_regression();
        collected.leaning = evidence.leans_to_a_regression();
        collected.evidence = Some(evidence);
        Ok(collected)
    }
}

fn provider_id(metric: usize, side: Side) -> String {
    format!("query{metric}_{}", side.id())
}

/// A Prometheus histogram's requests, beside its slow requests under [`provider_id`].
fn requests_id(metric: usize, side: Side) -> String {
    format!("query{metric}_{}_requests", side.id())
}

fn query_id(metric: usize, group: usize, side: Side, reading: Reading) -> String {
    let reading = match reading {
        Reading::Value => "value",
        Reading::Requests => "requests",
        Reading::Errors => "errors",
    };
    format!("cmp{metric}_{group}_{}_{reading}", side.id())
}

#[cfg(test)]
mod tests {
    use canary_aws::fakes::{FakeCloudWatch, MetricAnswers, MetricDataAnswer};
    use canary_aws::{AwsError, AwsErrorKind, MetricSeries};
    use canary_core::analysis::CheckVerdict;
    use canary_core::RolloutPlan;
    use serde_json::json;

    use super::*;
    use crate::signals::target_groups::target_group_pairs;

    fn compared(plan: &RolloutPlan) -> &CompareChecks {
        plan.analysis
            .as_ref()
            .and_then(|a| a.compare.as_ref())
            .expect("compare")
    }

    /// The comparison of `plan` on CloudWatch `api` alone, `carried` from the checks before.
    fn source<'a>(
        api: &'a dyn CloudWatchApi,
        plan: &'a RolloutPlan,
        carried: &'a crate::signals::Carried,
    ) -> Compare<'a> {
        Compare {
            api,
            prometheus: None,
            datadog: None,
            checks: compared(plan),
            cluster: &plan.cluster,
            pairs: target_group_pairs(&plan.traffic_targets),
            carried,
        }
    }

    /// CloudWatch answering each query with 20 values around the median its target group has,
    /// and nothing for a target group without one (no traffic: ALB publishes nothing).
    fn latencies(
        medians: BTreeMap<&'static str, f64>,
    ) -> MetricAnswers<impl Fn(&[MetricQuery], SystemTime, SystemTime) -> MetricDataAnswer> {
        MetricAnswers::new(move |queries: &[MetricQuery], _, end: SystemTime| {
            let end = end
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_secs() as i64);
            Ok(queries
                .iter()
                .map(|q| {
                    let group = q.dimensions.get("TargetGroup").map_or("", String::as_str);
                    let points = match medians.get(group) {
                        Some(median) => (0..20)
                            .map(|i| (end - 20 + i, median * (0.95 + 0.005 * (i * 7 % 20) as f64)))
                            .collect(),
                        None => Vec::new(),
                    };
                    (q.id.clone(), MetricSeries { points })
                })
                .collect())
        })
    }

    #[tokio::test]
    async fn a_cell_slower_than_its_peers_fails_on_the_peers_alone() {
        let peer = |n: usize| {
            json!({"name": format!("cell-{n}"), "alb": [{
                "listenerArn": format!("arn:aws:elasticloadbalancing:us-east-1:123456789012:listener/app/web{n}/50dc6c495c0c9188/f2f7dc8efc522ab2"),
                "canaryTargetGroupArn": format!("arn:aws:elasticloadbalancing:us-east-1:123456789012:targetgroup/peer{n}/4b7c9a1e2f3d5a68")}]})
        };
        let plan = plan(
            json!({"periodSeconds": 1, "lookbackSeconds": 60, "minSamples": 10,
            "metrics": [{"name": "latency", "alb": "latency"}],
            "peers": {"minPeers": 2, "scope": "fleet", "cells": [peer(1), peer(2), peer(3)]}}),
        );
        // The cell's own old cluster is as slow as its new one: the baseline comparison passes.
        let cloudwatch = latencies(BTreeMap::from([
            ("targetgroup/green/4b7c9a1e2f3d5a68", 0.15),
            ("targetgroup/blue/73e2d6bc24d8a067", 0.15),
            ("targetgroup/peer1/4b7c9a1e2f3d5a68", 0.10),
            ("targetgroup/peer2/4b7c9a1e2f3d5a68", 0.10),
            ("targetgroup/peer3/4b7c9a1e2f3d5a68", 0.10),
        ]));
        let carried = crate::signals::Carried::default();
        let source = source(&cloudwatch, &plan, &carried);
        let collected = source
            .collect(SystemTime::now(), "us-east-1/green")
            .await
            .expect("collected");
        let verdicts: Vec<(CheckVerdict, &str)> = collected
            .outcomes
            .iter()
            .map(|o| (o.verdict, o.reason.split(':').next().unwrap_or_default()))
            .collect();
        assert_eq!(
            verdicts,
            [
                (CheckVerdict::Pass, "compare latency"),
                (CheckVerdict::Fail, "peers latency")
            ],
            "{:?}",
            collected.outcomes
        );
        assert!(collected.outcomes[1]
            .reason
            .contains("an outlier among 3 promoted peer(s)"));
        assert_eq!(
            collected.points.len(),
            3,
            "canary, baseline and peers medians"
        );
    }

    #[tokio::test]
    async fn a_step_where_the_baseline_serves_nothing_is_not_compared() {
        let plan = plan(
            json!({"periodSeconds": 1, "lookbackSeconds": 60, "minSamples": 10,
            "metrics": [{"name": "latency", "alb": "latency"}]}),
        );
        // At 100 % the stable target group publishes nothing: every period would be NoData.
        let cloudwatch = latencies(BTreeMap::from([(
            "targetgroup/green/4b7c9a1e2f3d5a68",
            0.15,
        )]));
        let at = |step_weight: u8| crate::signals::Carried {
            step_weight: Some(step_weight),
            ..crate::signals::Carried::default()
        };
        let (at_100, at_10) = (at(100), at(10));
        let source = |carried| source(&cloudwatch, &plan, carried);
        let collected = source(&at_100)
            .collect(SystemTime::now(), "us-east-1/green")
            .await
            .expect("collected");
        assert_eq!(collected.outcomes.len(), 1);
        let outcome = &collected.outcomes[0];
        assert_eq!(outcome.verdict, CheckVerdict::Pass, "{}", outcome.reason);
        assert!(
            outcome
                .reason
                .contains("not compared: the baseline serves no traffic at this step"),
            "{}",
            outcome.reason
        );
        assert!(!collected.regression_shown);
        // Below 100 % the same world is a canary without a baseline: no data, never a pass.
        let collected = source(&at_10)
            .collect(SystemTime::now(), "us-east-1/green")
            .await
            .expect("collected");
        assert_eq!(collected.outcomes[0].verdict, CheckVerdict::Inconclusive);
    }

    #[test]
    fn slow_requests_are_counted_against_every_request() {
        let plan = plan(
            json!({"periodSeconds": 60, "lookbackSeconds": 600, "metrics": [
                {"name": "slow", "alb": "latency", "slowerThan": 0.5},
                {"name": "queue", "slowerThan": 2.5, "cloudwatch": {"namespace": "Shop", "metricName": "QueueTime",
                 "sideDimension": "Cluster", "canary": "green", "baseline": "blue"}},
            ]}),
        );
        let (cloudwatch, carried) = (
            FakeCloudWatch::default(),
            crate::signals::Carried::default(),
        );
        let source = source(&cloudwatch, &plan, &carried);
        let queries: Vec<(String, String, String)> = source
            .queries(&Evidence::default())
            .into_iter()
            .map(|p| (p.query.id, p.query.metric_name, p.query.stat))
            .collect();
        let stat = |id: &str| {
            queries
                .iter()
                .find(|(query, _, _)| query == id)
                .map(|(_, name, stat)| format!("{name} {stat}"))
        };
        assert_eq!(
            stat("cmp0_0_canary_requests").as_deref(),
            Some("TargetResponseTime SampleCount")
        );
        assert_eq!(
            stat("cmp0_0_baseline_errors").as_deref(),
            Some("TargetResponseTime TC(0.5:)")
        );
        assert_eq!(
            stat("cmp1_0_canary_errors").as_deref(),
            Some("QueueTime TC(2.5:)")
        );
        assert_eq!(queries.len(), 8, "{queries:?}");
    }

    /// A `vpcLattice` target's groups: `AWS/VpcLattice`'s `RequestTime` by the `TargetGroup`
    /// ID, asked (a threshold, a derived one too) and read in milliseconds, judged in seconds.
    #[tokio::test]
    async fn a_lattice_groups_latency_is_asked_in_milliseconds_and_judged_in_seconds() {
        let mut plan = plan(
            json!({"periodSeconds": 60, "lookbackSeconds": 600, "metrics": [
            {"name": "latency", "alb": "latency"},
            {"name": "slow", "alb": "latency", "slowerThan": {"baseline": "p99"}}]}),
        );
        plan.traffic_targets = vec![crate::signals::target_groups::lattice_target()];
        // The baseline's hour: a p99 of 400 ms.
        let cloudwatch = MetricAnswers::new(|queries: &[MetricQuery], _, _| {
            Ok(queries
                .iter()
                .map(|q| {
                    (
                        q.id.clone(),
                        MetricSeries {
                            points: vec![(0, 400.0)],
                        },
                    )
                })
                .collect())
        });
        let carried = crate::signals::Carried::default();
        let source = source(&cloudwatch, &plan, &carried);
        let mut evidence = Evidence::default();
        let taken = source
            .derive_thresholds(&mut evidence, SystemTime::now())
            .await
            .expect("derived");
        assert_eq!(
            taken,
            ["compare slow: slowerThan 0.4 s (the baseline's p99 over the last hour)"]
        );
        let queries = source.queries(&evidence);
        let asked = |id: &str| {
            let query = &queries.iter().find(|p| p.query.id == id).expect(id).query;
            let dimensions: Vec<_> = query.dimensions.iter().collect();
            format!(
                "{} {} {} {dimensions:?}",
                query.namespace, query.metric_name, query.stat
            )
        };
        assert_eq!(
            asked("cmp0_0_canary_value"),
            r#"AWS/VpcLattice RequestTime p99 [("TargetGroup", "tg-0123456789abcdefb")]"#
        );
        assert_eq!(
            asked("cmp1_0_baseline_errors"),
            r#"AWS/VpcLattice RequestTime TC(400:) [("TargetGroup", "tg-0123456789abcdefa")]"#
        );
        let points = HashMap::from([("cmp0_0_canary_value".to_owned(), vec![(60, 250.0)])]);
        let metric = &compared(&plan).metrics[0];
        assert_eq!(
            source.series(&points, 0, metric, Side::Canary),
            [(60, 0.25)]
        );
    }

    /// CloudWatch of a canary whose requests are slower than the baseline's p99 ten times as
    /// often: the baseline's hour answers `p99` with `hour_p99` (none: it served nothing),
    /// each minute 100 requests a side, 10 of the canary's and 1 of the baseline's above
    /// `TC(<threshold>:)`. Keeps each call's statistics and window.
    #[derive(Default)]
    struct SlowCanary {
        hour_p99: Option<f64>,
        calls: std::sync::Mutex<Vec<(Vec<String>, SystemTime, SystemTime)>>,
    }

    impl SlowCanary {
        fn answer(
            &self,
            queries: &[MetricQuery],
            start: SystemTime,
            end: SystemTime,
        ) -> MetricDataAnswer {
            if let Ok(mut calls) = self.calls.lock() {
                calls.push((queries.iter().map(|q| q.stat.clone()).collect(), start, end));
            }
            let end = end
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_secs() as i64);
            let minutes = |value: f64| (1..=10).map(|i| (end - 60 * i, value)).rev().collect();
            Ok(queries
                .iter()
                .map(|q| {
                    let canary = q.id.contains("canary");
                    let points = match q.stat.as_str() {
                        "p99" => self
                            .hour_p99
                            .map(|p| vec![(end - 3600, p)])
                            .unwrap_or_default(),
                        "SampleCount" => minutes(100.0),
                        _ => minutes(if canary { 10.0 } else { 1.0 }),
                    };
                    (q.id.clone(), MetricSeries { points })
                })
                .collect())
        }

        fn stats(&self) -> Vec<Vec<String>> {
            self.calls
                .lock()
                .map(|c| c.iter().map(|(stats, _, _)| stats.clone()).collect())
                .unwrap_or_default()
        }
    }

    #[tokio::test]
    async fn a_threshold_derived_from_the_baseline_is_taken_once_and_kept() {
        let plan = plan(
            json!({"periodSeconds": 60, "lookbackSeconds": 600, "minSamples": 5,
            "metrics": [{"name": "slow", "alb": "latency", "slowerThan": {"baseline": "p99"}}]}),
        );
        let checks = compared(&plan);
        let world = SlowCanary {
            hour_p99: Some(0.412_345),
            ..SlowCanary::default()
        };
        let cloudwatch =
            MetricAnswers::new(|q: &[MetricQuery], start, end| world.answer(q, start, end));
        let check = |evidence: Evidence| crate::signals::Carried {
            evidence,
            step_weight: Some(10),
            step: 1,
            ..crate::signals::Carried::default()
        };
        let first = check(Evidence::default());
        let source = |carried| source(&cloudwatch, &plan, carried);
        let collected = source(&first)
            .collect(SystemTime::now(), "us-east-1/green")
            .await
            .expect("collected");
        let evidence = collected.evidence.expect("evidence");
        assert_eq!(evidence.threshold(0), Some(0.412), "three digits");
        let calls = world.stats();
        assert_eq!(
            calls.len(),
            2,
            "the baseline's hour, then the check: {calls:?}"
        );
        assert_eq!(calls[0], ["p99"], "the baseline's target group alone");
        // One bucket from a whole minute an hour ago to now (CloudWatch rounds a recent start
        // down to the minute).
        let (_, start, end) = world
            .calls
            .lock()
            .map(|c| c[0].clone())
            .expect("a first call");
        let span = end.duration_since(start).map_or(0, |d| d.as_secs());
        assert!((3600..3660).contains(&span), "{span} s");
        let start_epoch = start.duration_since(UNIX_EPOCH).map_or(1, |d| d.as_secs());
        assert_eq!(start_epoch % 60, 0, "a whole minute");
        assert!(calls[1].contains(&"TC(0.412:)".to_owned()), "{calls:?}");
        let outcome = &collected.outcomes[0];
        assert_eq!(outcome.verdict, CheckVerdict::Fail, "{}", outcome.reason);
        assert!(
            outcome.reason.contains("requests slower than 0.412"),
            "{}",
            outcome.reason
        );
        // The next check keeps the threshold it carries, however the baseline's hour moved.
        let next = check(Evidence::parse(&evidence.to_text(), Some(checks)).expect("parsed"));
        source(&next)
            .collect(SystemTime::now(), "us-east-1/green")
            .await
            .expect("collected");
        let calls = world.stats();
        assert_eq!(
            calls.len(),
            3,
            "no second look at the baseline's hour: {calls:?}"
        );
        assert!(calls[2].contains(&"TC(0.412:)".to_owned()), "{calls:?}");
    }

    #[tokio::test]
    async fn a_baseline_without_requests_in_the_hour_gives_no_threshold_and_no_pass() {
        let plan = plan(
            json!({"periodSeconds": 60, "lookbackSeconds": 600, "minSamples": 5,
            "metrics": [{"name": "slow", "alb": "latency", "slowerThan": {"baseline": "p99"}}]}),
        );
        let world = SlowCanary::default();
        let cloudwatch =
            MetricAnswers::new(|q: &[MetricQuery], start, end| world.answer(q, start, end));
        let carried = crate::signals::Carried {
            step_weight: Some(10),
            step: 1,
            ..crate::signals::Carried::default()
        };
        let source = source(&cloudwatch, &plan, &carried);
        let collected = source
            .collect(SystemTime::now(), "us-east-1/green")
            .await
            .expect("collected");
        assert_eq!(collected.outcomes[0].verdict, CheckVerdict::Inconclusive);
        assert_eq!(collected.evidence.expect("evidence").threshold(0), None);
        let validated = source.validate(SystemTime::now()).await.expect("validated");
        assert!(
            validated.current.iter().any(|line| line
                .contains("the baseline served no request in the last hour: no p99 to derive slowerThan from yet")),
            "{:?}",
            validated.current
        );
    }

    #[tokio::test]
    async fn a_refused_read_of_the_baseline_hour_is_the_plans_at_prepare() {
        let plan = plan(json!({"metrics": [
            {"name": "slow", "alb": "latency", "slowerThan": {"baseline": "p99"}}]}));
        let refusing = MetricAnswers::new(|_: &[MetricQuery], _, _| {
            Err(AwsError::new(
                AwsErrorKind::Rejected,
                "GetMetricData",
                "no such statistic",
            ))
        });
        let carried = crate::signals::Carried::default();
        let refused = source(&refusing, &plan, &carried)
            .validate(SystemTime::now())
            .await
            .expect_err("refused");
        assert!(
            matches!(&refused, AnalysisError::QueriesRejected { path, .. } if path == "analysis.compare"),
            "{refused:?}"
        );
    }

    fn plan(compare: serde_json::Value) -> RolloutPlan {
        crate::signals::compared_alb_plan(compare).plan
    }

    #[test]
    fn each_side_reads_its_own_target_group_or_dimension() {
        let plan = plan(
            json!({"periodSeconds": 10, "lookbackSeconds": 300, "metrics": [
                {"name": "latency", "alb": "latency"},
                {"name": "errors", "alb": "errorRate"},
                {"name": "queue", "stat": "p90", "cloudwatch": {"namespace": "Shop", "metricName": "QueueTime",
                 "dimensions": {"Service": "checkout"}, "sideDimension": "Cluster", "canary": "green", "baseline": "blue"}},
            ], "peers": {"cells": [{"name": "use1-a", "sides": {"queue": "use1-a-green"}}]}}),
        );
        let (cloudwatch, carried) = (
            FakeCloudWatch::default(),
            crate::signals::Carried::default(),
        );
        let source = source(&cloudwatch, &plan, &carried);
        let queries: Vec<(String, String, String, String)> = source
            .queries(&Evidence::default())
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
                row("cmp2_0_peer0_value", "QueueTime", "p90", "use1-a-green"),
            ]
        );
    }

    #[test]
    fn error_rates_count_only_periods_with_requests() {
        let plan = plan(json!({"metrics": [{"name": "errors", "alb": "errorRate"}]}));
        let checks = compared(&plan);
        let metric = &checks.metrics[0];
        let (cloudwatch, carried) = (
            FakeCloudWatch::default(),
            crate::signals::Carried::default(),
        );
        let source = source(&cloudwatch, &plan, &carried);
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
        assert_eq!(
            source.series(&points, 0, metric, Side::Canary),
            [(60, 2.0), (180, 2.0)]
        );
        assert!(
            source.periods(&points, 0, metric, 0).is_empty(),
            "no baseline"
        );
        let evidence = Evidence::default();
        let judged = judge_metric(checks, 0, false, 0.01, &evidence, &[]).expect("judged");
        let outcomes = judge_comparison(checks, &[judged]).outcomes;
        assert_eq!(outcomes[0].verdict, CheckVerdict::Inconclusive);
        // With the baseline's: each period's errors and requests of both sides, no 5xx
        // datapoint meaning no errors.
        let mut both = points.clone();
        both.insert(
            "cmp0_0_baseline_requests".to_owned(),
            vec![(60, 900.0), (180, 450.0)],
        );
        both.insert("cmp0_0_baseline_errors".to_owned(), vec![(60, 9.0)]);
        let counts =
            |canary_errors, canary_requests, other_errors, other_requests| Observation::Counts {
                canary_errors,
                canary_requests,
                other_errors,
                other_requests,
            };
        assert_eq!(
            source.periods(&both, 0, metric, 0),
            [
                Period {
                    at: 60,
                    observation: counts(2.0, 100.0, 9.0, 900.0)
                },
                Period {
                    at: 180,
                    observation: counts(1.0, 50.0, 0.0, 450.0)
                },
            ]
        );
    }
}
