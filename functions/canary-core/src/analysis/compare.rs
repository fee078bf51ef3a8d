//! The comparison check (`analysis.compare`): each metric's canary against the baseline of the
//! same periods, as evidence that accumulates over the rollout ([`super::statistics`]: each
//! period taken in once, the evidence carried by the state from check to check, one α for the
//! whole rollout and every metric); the metrics' results weighted into a score, and the score
//! into Pass, Marginal, Fail or Inconclusive. The plan section, its validation, the evidence and
//! the judgement; the rollout's `signals/compare.rs` reads the periods. Semantics:
//! docs/signals/compare.md.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::dependence::MAX_AUTOCORRELATION;
use super::metric_query::{check_period_and_lookback, check_stat};
use super::outcome::{CheckOutcome, CheckVerdict};
use super::query_template::render_query;
use super::statistics::{self, Counts, Signs};
use crate::cluster::ClusterRef;
use crate::limits::MAX_EVIDENCE_BYTES;
use crate::targets::TrafficTarget;
use crate::validate::Errors;

/// Highest `slowerThan`: a day, in seconds (or the metric's unit).
pub const MAX_SLOWER_THAN: f64 = 86_400.0;
/// Most metrics one comparison check compares.
pub const MAX_COMPARED_METRICS: usize = 20;
/// Longest name of a compared metric: it is in every reason and a metric dimension.
pub const MAX_COMPARED_NAME_CHARS: usize = 64;
/// Queries of one GetMetricData call: the comparison reads every metric of both sides at once.
pub const MAX_QUERIES_PER_CALL: usize = 500;
/// Most peers a cell is compared with (`peers.cells`): the plan travels in the state.
pub const MAX_PEERS: usize = 10;
/// Most samples one side of a metric may have in the window (periods × the target groups or
/// peers pooled on it): each check reads and sorts them.
pub const MAX_SAMPLES_PER_SIDE: usize = 2_000;

/// The canary against the baseline, statistically (docs/signals/compare.md).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CompareChecks {
    /// One sample per period and side, seconds. Default 60.
    #[serde(default = "default_period")]
    pub period_seconds: i64,
    /// The window compared, seconds back from the check: the same window for both sides.
    /// Default 600.
    #[serde(default = "default_lookback")]
    pub lookback_seconds: i64,
    /// Fewer samples than this on either side and the metric has no data. Default 10, at
    /// least 3.
    #[serde(default = "default_min_samples")]
    pub min_samples: i64,
    /// 1 − α, where α is the chance the comparison rolls back a healthy rollout, over the whole
    /// rollout, every check and every metric together. Default 0.99.
    #[serde(default = "default_confidence")]
    pub confidence: f64,
    /// The score (0–100: the weighted share of metrics that pass) the check passes at.
    /// Default 95.
    #[serde(default = "default_pass_score")]
    pub pass_score: f64,
    /// Below `passScore`, the score the check is Marginal at; below this it fails. Default 75.
    #[serde(default = "default_marginal_score")]
    pub marginal_score: f64,
    /// What a Marginal check does. Default `hold`.
    #[serde(default)]
    pub on_marginal: UnsureAction,
    /// What an Inconclusive check (a metric with too few samples) does. Default `hold`.
    #[serde(default)]
    pub on_inconclusive: UnsureAction,
    pub metrics: Vec<ComparedMetric>,
    /// In a fleet: the cell's canary also against the canaries of cells already promoted
    /// (docs/fleets.md, "A cell against its peers").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub peers: Option<PeerComparison>,
}

/// A fleet cell's canary against its promoted peers' canaries: each compared metric, the same
/// window, the peers' samples pooled in the baseline's place. An outlier fails the check.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PeerComparison {
    /// With fewer peers than this the cell is not judged against them. Default 2.
    #[serde(default = "default_min_peers")]
    pub min_peers: i64,
    /// Which promoted cells are peers. Default `wave`.
    #[serde(default)]
    pub scope: PeerScope,
    /// The peers. The fleet fills this when it starts the cell: the cells promoted so far in
    /// `scope`, in the cell's region and account (by `cluster.region` and `cluster.roleArn`),
    /// at most 10.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub cells: Vec<Peer>,
}

fn default_min_peers() -> i64 {
    2
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum PeerScope {
    /// The cells of the cell's own wave promoted before it started.
    #[default]
    Wave,
    /// Every cell of the fleet promoted before it started, this wave's and earlier waves'.
    Fleet,
}

/// One promoted peer: where its canary's metrics are.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Peer {
    /// The peer cell's name.
    pub name: String,
    /// Its ALB traffic targets' canary target groups, for `alb` metrics.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub alb: Vec<PeerTargetGroup>,
    /// For each compared `cloudwatch` or `prometheus` metric (by name), the peer's canary value
    /// of its side dimension or `{{cluster}}`.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub sides: BTreeMap<String, String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PeerTargetGroup {
    pub listener_arn: String,
    pub canary_target_group_arn: String,
}

impl PeerComparison {
    /// Fewest peers to judge against (`minPeers`, at least 1).
    pub fn min_peers(&self) -> usize {
        usize::try_from(self.min_peers).unwrap_or(1).max(1)
    }

    fn validate(&self, path: &str, errors: &mut Errors) {
        if !(1..=MAX_PEERS as i64).contains(&self.min_peers) {
            errors.push(
                format!("{path}.minPeers"),
                format!("must be from 1 to {MAX_PEERS}, got {}", self.min_peers),
            );
        }
        if self.cells.len() > MAX_PEERS {
            errors.push(
                format!("{path}.cells"),
                format!("at most {MAX_PEERS} peers, got {}", self.cells.len()),
            );
        }
        for (i, peer) in self.cells.iter().enumerate() {
            if peer.name.is_empty() || peer.name.len() > 64 {
                errors.push(
                    format!("{path}.cells[{i}].name"),
                    "must be 1 to 64 characters",
                );
            }
            if peer.alb.len() > crate::limits::MAX_TARGETS {
                errors.push(
                    format!("{path}.cells[{i}].alb"),
                    format!("at most {} target groups", crate::limits::MAX_TARGETS),
                );
            }
        }
    }
}

fn default_period() -> i64 {
    60
}
fn default_lookback() -> i64 {
    600
}
fn default_min_samples() -> i64 {
    10
}
fn default_confidence() -> f64 {
    0.99
}
fn default_pass_score() -> f64 {
    95.0
}
fn default_marginal_score() -> f64 {
    75.0
}

/// What a comparison that neither passes nor fails does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum UnsureAction {
    /// The check is inconclusive: not a pass, so the step's bake goes on and judges again; a
    /// bake without a passing check does not promote (`analysis.noEvidence`).
    #[default]
    Hold,
    /// Like `hold`; and when the step's last check is still unsure, the rollout waits for a
    /// person's approval (`cluster-canary approve`/`reject`, the plan's `approval.timeoutSeconds`
    /// and `onTimeout`) before the next step, the checks and the alarm watch going on. At the
    /// last step (nothing left to ask before) it is `hold`.
    Ask,
    /// The check fails, like a failed check.
    Fail,
}

/// One metric compared between the canary and the baseline. Exactly one source: `alb` or
/// `cloudwatch`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ComparedMetric {
    /// A name for people, in reasons and the `ComparedMedian` metric's `Check` dimension.
    pub name: String,
    /// From the `alb` and `vpcLattice` traffic targets: the canary target group against the
    /// stable one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub alb: Option<AlbSignal>,
    /// A CloudWatch metric with one dimension telling the sides apart.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cloudwatch: Option<SidedMetric>,
    /// A PromQL query with `{{cluster}}` for the side, on `analysis.prometheus`'s endpoint.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prometheus: Option<SidedQuery>,
    /// A Datadog metrics query with `{{cluster}}` for the side, on `analysis.datadog`'s site.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub datadog: Option<SidedQuery>,
    /// Judge the metric request by request: each period, the requests slower than this
    /// (seconds for `alb: latency`; the metric's unit for a `cloudwatch` one) against each
    /// side's requests, like errors over requests (CloudWatch's trimmed count `TC(<slowerThan>:)`
    /// against `SampleCount`, of the values put in the period). A regression of the slow tail
    /// shows in a few periods, where a percentile per period says one bit a period. Only for
    /// `alb: latency` and `cloudwatch` metrics put with values (a distribution CloudWatch counts);
    /// no `stat`, no `autocorrelation`; direction `increase`. `{"baseline": "p99"}` (`alb:
    /// latency` only) derives it from the baseline: its p99 over the hour before the rollout's
    /// first compared check, fixed for the rest of the rollout.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub slower_than: Option<SlowerThan>,
    /// The statistic of each period (`alb` and `cloudwatch` metrics): `SampleCount`, `Average`, `Sum`, `Minimum`, `Maximum` or a
    /// percentile such as `p99`. Default `p99` for `alb: latency`, `Average` otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stat: Option<String>,
    /// Which change is bad. Default `increase`.
    #[serde(default)]
    pub direction: Direction,
    /// The canary may be this many times the baseline before an increase counts, e.g. 1.2.
    /// Default 1.
    #[serde(default = "one")]
    pub allowed_increase: f64,
    /// The canary may fall to this share of the baseline before a decrease counts, e.g. 0.8.
    /// Default 1.
    #[serde(default = "one")]
    pub allowed_decrease: f64,
    /// A High or Low here fails the whole check at once, whatever the score.
    #[serde(default)]
    pub critical: bool,
    /// How much of each cluster's own deviation carries over from one period to the next
    /// (AR(1), 0 to 0.95): the comparison judges each period by what the last one did not
    /// foretell, so a cluster drifting on its own for a while is not taken for a regression.
    /// For values only. Default: estimated from the rollout's own periods (the lag-1
    /// autocorrelation of the canary's excess over the band, once 5 periods are in); give it
    /// to override the estimate (0: periods independent, apart from a load both share).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub autocorrelation: Option<f64>,
    /// The metric's weight in the score. Default 1.
    #[serde(default = "one")]
    pub weight: f64,
}

fn one() -> f64 {
    1.0
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum AlbSignal {
    /// The latency at the metric's `stat`, seconds: ALB's `TargetResponseTime`, Lattice's
    /// `RequestTime` (read in milliseconds).
    Latency,
    /// 5xx × 100 / requests of each period with requests: ALB's `HTTPCode_Target_5XX_Count`
    /// and `RequestCount`, Lattice's `HTTPCode_5XX_Count` and `TotalRequestCount`.
    ErrorRate,
}

/// A CloudWatch metric of both clusters: the same namespace, name and dimensions, and one
/// dimension whose value tells the canary from the baseline.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SidedMetric {
    pub namespace: String,
    pub metric_name: String,
    /// Dimensions both sides share.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub dimensions: BTreeMap<String, String>,
    /// The dimension that tells the sides apart, e.g. `ClusterName`.
    pub side_dimension: String,
    /// Its value for the canary, e.g. the new cluster's name.
    pub canary: String,
    /// Its value for the baseline.
    pub baseline: String,
}

/// A metrics provider's query of both clusters: one series, `{{cluster}}` (and `{{region}}`)
/// in it filled with each side's value. Prometheus: the window's samples as a subquery,
/// `(<query>)[<lookbackSeconds>s:<periodSeconds>s]`, one instant query per side. Datadog: one
/// timeseries query per side over the window, a point per `periodSeconds`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SidedQuery {
    /// e.g. `histogram_quantile(0.99, sum by (le) (rate(http_request_duration_seconds_bucket{cluster="{{cluster}}"}[1m])))`.
    /// With `slowerThan` (Prometheus only): the histogram's series selector, without a suffix,
    /// e.g. `http_request_duration_seconds{cluster="{{cluster}}"}`: its `_count` and the
    /// `_bucket` whose `le` is `slowerThan` are counted per period.
    pub query: String,
    /// `{{cluster}}` for the canary. Default: the new cluster's name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub canary: Option<String>,
    /// `{{cluster}}` for the baseline, e.g. the old cluster's name.
    pub baseline: String,
}

impl SidedQuery {
    /// The canary side's value of `{{cluster}}`.
    pub fn canary_value<'a>(&'a self, cluster: &'a ClusterRef) -> &'a str {
        self.canary.as_deref().unwrap_or(&cluster.name)
    }

    /// The query for the side whose `{{cluster}}` is `side`.
    pub fn side_query(&self, cluster: &ClusterRef, side: &str) -> Result<String, String> {
        let as_side = ClusterRef {
            name: side.to_owned(),
            ..cluster.clone()
        };
        render_query(&self.query, &as_side)
    }

    /// [`Self::side_query`] as a PromQL subquery of the window's samples.
    pub fn samples_query(
        &self,
        cluster: &ClusterRef,
        side: &str,
        checks: &CompareChecks,
    ) -> Result<String, String> {
        let query = self.side_query(cluster, side)?;
        Ok(format!(
            "({query})[{}s:{}s]",
            checks.lookback_seconds, checks.period_seconds
        ))
    }

    fn validate(&self, path: &str, cluster: &ClusterRef, errors: &mut Errors) {
        if !self.query.contains("{{cluster}}") {
            errors.push(
                format!("{path}.query"),
                "name the side with `{{cluster}}`: without it both sides would be the same series",
            );
        }
        if let Err(message) = render_query(&self.query, cluster) {
            errors.push(format!("{path}.query"), message);
        }
        let canary = self.canary_value(cluster);
        for (field, value) in [("canary", canary), ("baseline", self.baseline.as_str())] {
            if value.is_empty() || value.len() > 255 || value.contains(['"', '\\', '{', '}']) {
                errors.push(
                    format!("{path}.{field}"),
                    "must be 1 to 255 characters, without quotes, backslashes or braces",
                );
            }
        }
        if canary == self.baseline {
            errors.push(
                format!("{path}.baseline"),
                format!("is the canary's value too (`{canary}`): the check would compare a side with itself"),
            );
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum Direction {
    /// A higher canary is bad (latency, errors).
    #[default]
    Increase,
    /// A lower canary is bad (throughput, success rate).
    Decrease,
    /// Either way is bad.
    Either,
}

/// `slowerThan`: a threshold the plan names, or one derived from the baseline.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(
    untagged,
    expecting = "seconds (a number), or a percentile of the baseline such as {\"baseline\": \"p99\"}"
)]
pub enum SlowerThan {
    Seconds(f64),
    FromBaseline(FromBaseline),
}

/// `slowerThan: {"baseline": "p99"}`: the baseline's percentile over the hour before the
/// rollout's first compared check. Fixed once taken, in the evidence the state carries: a
/// threshold that moved with the baseline's own requests would be judged by the same requests
/// it counts, and the count of slow requests would no longer be symmetric between the sides.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct FromBaseline {
    /// A percentile statistic, `p50` to `p99.9`.
    pub baseline: String,
}

/// How far back the baseline's latency is read for a derived `slowerThan`, seconds.
pub const DERIVED_THRESHOLD_SECONDS: i64 = 3600;

/// A derived threshold, as the CloudWatch statistic `TC(<threshold>:)` will carry it: three
/// significant digits (a threshold that precise is all a latency percentile says).
pub fn derived_threshold(value: f64) -> Option<f64> {
    let rounded = format!("{value:.2e}").parse::<f64>().ok()?;
    (rounded > 0.0 && rounded <= MAX_SLOWER_THAN).then_some(rounded)
}

impl ComparedMetric {
    /// The percentile of the baseline a derived `slowerThan` takes, if it is derived.
    pub fn derived_from(&self) -> Option<&str> {
        match &self.slower_than {
            Some(SlowerThan::FromBaseline(from)) => Some(&from.baseline),
            _ => None,
        }
    }

    /// `slowerThan` in seconds: the plan's, or the derived one the evidence holds (`derived`).
    pub fn slower_than_seconds(&self, derived: Option<f64>) -> Option<f64> {
        match &self.slower_than {
            Some(SlowerThan::Seconds(seconds)) => Some(*seconds),
            Some(SlowerThan::FromBaseline(_)) => derived,
            None => None,
        }
    }

    /// Judged by counts over requests (errors, or requests slower than `slowerThan`), not by a
    /// value per period.
    pub fn counted(&self) -> bool {
        self.alb == Some(AlbSignal::ErrorRate) || self.slower_than.is_some()
    }

    /// `slowerThan`'s CloudWatch statistic: the count of values above it, `TC(<slowerThan>:)`
    /// (the lower bound exclusive, as CloudWatch's statistics definitions have it); `derived`
    /// as for [`Self::slower_than_seconds`].
    pub fn slow_count_stat(&self, derived: Option<f64>) -> Option<String> {
        self.slower_than_seconds(derived)
            .map(|threshold| format!("TC({threshold}:)"))
    }

    /// The statistic of each period.
    pub fn stat(&self) -> &str {
        match (&self.stat, self.alb) {
            (Some(stat), _) => stat,
            (None, Some(AlbSignal::Latency)) => "p99",
            (None, _) => "Average",
        }
    }
}

impl CompareChecks {
    /// Metric `index`'s share of the rollout's α (1 − `confidence`) against the baseline, or
    /// the peers: α split over the `runs` of checks that keep their own evidence
    /// ([`crate::plan::ValidPlan::comparison_runs`]), then by `weight` over every metric (each
    /// counted again against the peers when the plan compares with them); a metric watching
    /// `either` direction splits its share again between the two. So the chance that any
    /// metric shows a regression of a healthy canary, at any check of the rollout, is at most
    /// α (a union bound; each evidence is valid however often it is looked at).
    pub fn alpha(&self, index: usize, runs: u32) -> f64 {
        let sides = if self.peers.is_some() { 2.0 } else { 1.0 };
        let total: f64 = self.metrics.iter().fold(0.0, |sum, m| sum + m.weight) * sides;
        let weight = self.metrics.get(index).map_or(0.0, |m| m.weight);
        if total <= 0.0 {
            return 0.0;
        }
        (1.0 - self.confidence) / f64::from(runs.max(1)) * weight / total
    }

    /// An unsure comparison may ask a person before the next step.
    pub fn asks(&self) -> bool {
        self.on_marginal == UnsureAction::Ask || self.on_inconclusive == UnsureAction::Ask
    }

    /// The fewest samples a side needs (`minSamples`, at least 1).
    pub fn min_samples(&self) -> usize {
        usize::try_from(self.min_samples).unwrap_or(1).max(1)
    }

    /// `prometheus`, `datadog`: whether the plan gives `analysis.prometheus` /
    /// `analysis.datadog` (where `prometheus` and `datadog` metrics query).
    pub(crate) fn validate(
        &self,
        cluster: &ClusterRef,
        targets: &[TrafficTarget],
        prometheus: bool,
        datadog: bool,
        errors: &mut Errors,
    ) {
        let path = "analysis.compare";
        check_period_and_lookback(path, self.period_seconds, self.lookback_seconds, errors);
        let periods = self.lookback_seconds / self.period_seconds.max(1);
        if !(3..=MAX_SAMPLES_PER_SIDE as i64).contains(&self.min_samples) {
            errors.push(
                format!("{path}.minSamples"),
                format!(
                    "must be from 3 to {MAX_SAMPLES_PER_SIDE}, got {}: fewer samples cannot tell the sides apart",
                    self.min_samples
                ),
            );
        } else if self.period_seconds > 0 && periods < self.min_samples {
            errors.push(
                format!("{path}.minSamples"),
                format!(
                    "{} exceeds the {periods} period(s) of lookbackSeconds / periodSeconds: no side could ever have enough samples",
                    self.min_samples
                ),
            );
        }
        if periods > MAX_SAMPLES_PER_SIDE as i64 {
            errors.push(
                format!("{path}.lookbackSeconds"),
                format!("at most {MAX_SAMPLES_PER_SIDE} periods per side, got {periods}: use a longer periodSeconds"),
            );
        }
        if !(self.confidence >= 0.5 && self.confidence <= 0.999) {
            errors.push(
                format!("{path}.confidence"),
                format!("must be from 0.5 to 0.999, got {}", self.confidence),
            );
        }
        for (field, score) in [
            ("passScore", self.pass_score),
            ("marginalScore", self.marginal_score),
        ] {
            if !(0.0..=100.0).contains(&score) {
                errors.push(
                    format!("{path}.{field}"),
                    format!("must be from 0 to 100, got {score}"),
                );
            }
        }
        if self.marginal_score > self.pass_score {
            errors.push(
                format!("{path}.marginalScore"),
                format!(
                    "{} is above passScore {}: a check could not be marginal",
                    self.marginal_score, self.pass_score
                ),
            );
        }
        if self.metrics.is_empty() || self.metrics.len() > MAX_COMPARED_METRICS {
            errors.push(
                format!("{path}.metrics"),
                format!(
                    "give 1 to {MAX_COMPARED_METRICS} metrics, got {}",
                    self.metrics.len()
                ),
            );
        }
        let group_pairs: std::collections::BTreeSet<(&str, &str)> = targets
            .iter()
            .filter_map(TrafficTarget::judged_target_groups)
            .collect();
        // Each side's queries, and the canary side's again for each peer's canary.
        let peer_groups: Vec<usize> = self
            .peers
            .iter()
            .flat_map(|p| &p.cells)
            .map(|peer| peer.alb.len())
            .collect();
        let queries: usize = self
            .metrics
            .iter()
            .map(|m| {
                // A counted metric reads two series per group: requests, and the errors or
                // slow requests among them.
                let readings = 1 + usize::from(m.counted());
                let per_side = |pairs: usize| match (m.alb, &m.cloudwatch) {
                    (Some(_), _) => readings * pairs,
                    (None, Some(_)) => readings,
                    // A query of Prometheus's or Datadog's, not CloudWatch's.
                    (None, None) => 0,
                };
                2 * per_side(group_pairs.len())
                    + peer_groups.iter().map(|g| per_side(*g)).sum::<usize>()
            })
            .sum();
        if queries > MAX_QUERIES_PER_CALL {
            errors.push(
                format!("{path}.metrics"),
                format!("{queries} queries per check (one per side, peer and ALB target group, two for an error rate or slow requests), over the {MAX_QUERIES_PER_CALL} of one GetMetricData call: compare fewer metrics"),
            );
        }
        // Every side's samples in the window: one per period from each target group pooled on
        // it (an `alb` metric: the pairs on the baseline's side, every peer's groups on the
        // peers'), or one per period from each peer for a sided or provider metric.
        if periods <= MAX_SAMPLES_PER_SIDE as i64 {
            let peers = self.peers.as_ref().map_or(0, |p| p.cells.len());
            for (i, metric) in self.metrics.iter().enumerate() {
                let sides = match metric.alb {
                    Some(_) => [
                        ("target groups on the baseline's side", group_pairs.len()),
                        ("target groups of the peers", peer_groups.iter().sum()),
                    ],
                    None => [("baseline", 1), ("peers", peers)],
                };
                for (what, pooled) in sides {
                    let samples = periods.saturating_mul(pooled as i64);
                    if samples > MAX_SAMPLES_PER_SIDE as i64 {
                        errors.push(
                            format!("{path}.metrics[{i}]"),
                            format!("{periods} periods × {pooled} {what} is {samples} samples on one side, over the {MAX_SAMPLES_PER_SIDE} a side may have: use a longer periodSeconds or a shorter lookbackSeconds"),
                        );
                        break;
                    }
                }
            }
        }
        let has_groups = !group_pairs.is_empty();
        if let Some(peers) = &self.peers {
            peers.validate(&format!("{path}.peers"), errors);
        }
        let mut names = std::collections::BTreeSet::new();
        for (i, metric) in self.metrics.iter().enumerate() {
            let path = format!("{path}.metrics[{i}]");
            if !names.insert(metric.name.as_str()) {
                errors.push(
                    format!("{path}.name"),
                    format!("`{}` is the name of an earlier metric", metric.name),
                );
            }
            let providers = Providers {
                prometheus,
                datadog,
            };
            metric.validate(&path, cluster, has_groups, providers, errors);
        }
    }
}

impl ComparedMetric {
    fn validate(
        &self,
        path: &str,
        cluster: &ClusterRef,
        has_groups: bool,
        providers: Providers,
        errors: &mut Errors,
    ) {
        let name_ok = !self.name.is_empty()
            && self.name.chars().count() <= MAX_COMPARED_NAME_CHARS
            && !self.name.chars().any(char::is_control);
        if !name_ok {
            errors.push(
                format!("{path}.name"),
                format!(
                    "must be 1 to {MAX_COMPARED_NAME_CHARS} characters, none a control character"
                ),
            );
        }
        let sources = [
            self.alb.is_some(),
            self.cloudwatch.is_some(),
            self.prometheus.is_some(),
            self.datadog.is_some(),
        ];
        if sources.iter().filter(|given| **given).count() != 1 {
            errors.push(
                path,
                "give exactly one source: `alb`, `cloudwatch`, `prometheus` or `datadog`",
            );
        } else if self.alb.is_some() && !has_groups {
            errors.push(
                format!("{path}.alb"),
                "compares the target groups of an `alb` or `vpcLattice` traffic target, and the plan has none",
            );
        }
        if let Some(metric) = &self.cloudwatch {
            metric.validate(&format!("{path}.cloudwatch"), errors);
        }
        for (field, query, given, section) in [
            (
                "prometheus",
                &self.prometheus,
                providers.prometheus,
                "analysis.prometheus` (`url` or `ampWorkspace`)",
            ),
            (
                "datadog",
                &self.datadog,
                providers.datadog,
                "analysis.datadog` (its `site`; the stack's keys)",
            ),
        ] {
            let Some(query) = query else { continue };
            query.validate(&format!("{path}.{field}"), cluster, errors);
            if !given {
                errors.push(
                    format!("{path}.{field}"),
                    format!("queries where `{section} says, and the plan gives none"),
                );
            }
            if self.stat.is_some() {
                errors.push(
                    format!("{path}.stat"),
                    format!("a {field} metric's query says what each sample is: leave `stat` out"),
                );
            }
        }
        if let Some(threshold) = &self.slower_than {
            self.validate_slower_than(path, cluster, threshold, errors);
        } else {
            check_stat(&format!("{path}.stat"), self.stat(), errors);
        }
        if !(self.allowed_increase.is_finite() && self.allowed_increase >= 1.0) {
            errors.push(
                format!("{path}.allowedIncrease"),
                format!(
                    "must be 1 or more (a ratio of the baseline), got {}",
                    self.allowed_increase
                ),
            );
        }
        if !(self.allowed_decrease > 0.0 && self.allowed_decrease <= 1.0) {
            errors.push(
                format!("{path}.allowedDecrease"),
                format!(
                    "must be above 0 and at most 1 (a ratio of the baseline), got {}",
                    self.allowed_decrease
                ),
            );
        }
        let Some(rho) = self.autocorrelation else {
            return self.validate_weight(path, errors);
        };
        if !(0.0..=MAX_AUTOCORRELATION).contains(&rho) {
            errors.push(
                format!("{path}.autocorrelation"),
                format!("must be from 0 to {MAX_AUTOCORRELATION}, got {rho}"),
            );
        }
        self.validate_weight(path, errors);
    }

    fn validate_slower_than(
        &self,
        path: &str,
        cluster: &ClusterRef,
        threshold: &SlowerThan,
        errors: &mut Errors,
    ) {
        let field = format!("{path}.slowerThan");
        match threshold {
            // Bounded: it is written into the CloudWatch statistic (`TC(<slowerThan>:)`).
            SlowerThan::Seconds(seconds) if !(*seconds > 0.0 && *seconds <= MAX_SLOWER_THAN) => {
                errors.push(
                    field.clone(),
                    format!("must be above 0 and at most {MAX_SLOWER_THAN}, got {seconds}"),
                );
            }
            SlowerThan::Seconds(_) => {}
            SlowerThan::FromBaseline(from) => {
                if !is_baseline_percentile(&from.baseline) {
                    errors.push(
                        format!("{field}.baseline"),
                        format!(
                            "a percentile of the baseline's latency, `p50` to `p99.9`, got {:?}",
                            from.baseline
                        ),
                    );
                }
                if self.alb != Some(AlbSignal::Latency) {
                    errors.push(
                        field.clone(),
                        "is derived from the baseline's ALB latency: give `{\"baseline\": \"p99\"}` on an `alb: latency` metric, or a number (a Prometheus histogram's bucket bound, a `cloudwatch` metric's unit)",
                    );
                }
            }
        }
        if let Some(query) = &self.prometheus {
            // The selector as the canary's side renders it (`{{cluster}}` has braces).
            let rendered = query.side_query(cluster, query.canary_value(cluster));
            if let Err(why) = rendered
                .and_then(|selector| super::histogram::parse_selector(&selector).map(|_| ()))
            {
                errors.push(format!("{path}.prometheus.query"), why);
            }
        } else if !(self.alb == Some(AlbSignal::Latency) || self.cloudwatch.is_some()) {
            errors.push(
                field,
                "counts requests slower than it with CloudWatch's trimmed count or a Prometheus histogram's buckets: give it on an `alb: latency` metric, a `cloudwatch` metric put with values, or a `prometheus` histogram",
            );
        }
        if self.stat.is_some() {
            errors.push(
                format!("{path}.stat"),
                "a metric judged by slowerThan counts requests (TC against SampleCount, or a histogram's buckets): leave `stat` out",
            );
        }
        if self.direction != Direction::Increase {
            errors.push(
                format!("{path}.direction"),
                "slowerThan counts slow requests: only more of them is a regression (`increase`)",
            );
        }
    }

    fn validate_weight(&self, path: &str, errors: &mut Errors) {
        if !(self.weight.is_finite() && self.weight > 0.0) {
            errors.push(
                format!("{path}.weight"),
                format!("must be a positive number, got {}", self.weight),
            );
        }
    }
}

/// Which metrics providers the plan configures.
#[derive(Debug, Clone, Copy)]
struct Providers {
    prometheus: bool,
    datadog: bool,
}

impl SidedMetric {
    fn validate(&self, path: &str, errors: &mut Errors) {
        for (field, value) in [
            ("namespace", &self.namespace),
            ("metricName", &self.metric_name),
            ("sideDimension", &self.side_dimension),
            ("canary", &self.canary),
            ("baseline", &self.baseline),
        ] {
            if value.is_empty() || value.len() > 255 {
                errors.push(format!("{path}.{field}"), "must be 1 to 255 characters");
            }
        }
        if self.canary == self.baseline {
            errors.push(
                format!("{path}.baseline"),
                format!(
                    "is the canary's value too (`{}`): the check would compare a side with itself",
                    self.canary
                ),
            );
        }
        if self.dimensions.contains_key(&self.side_dimension) {
            errors.push(
                format!("{path}.dimensions"),
                format!(
                    "names the side dimension `{}`: give its values as `canary` and `baseline`",
                    self.side_dimension
                ),
            );
        }
        if self.dimensions.len() + 1 > 30 {
            errors.push(
                format!("{path}.dimensions"),
                "CloudWatch allows at most 30 dimensions",
            );
        }
    }
}

/// What one metric's comparison found.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum MetricResult {
    /// Enough periods in the window, and no evidence of a regression beyond the allowed band.
    Pass,
    /// The evidence shows the canary higher than `allowedIncrease` allows, at the metric's α.
    High,
    /// The evidence shows it lower than `allowedDecrease` allows.
    Low,
    /// Fewer than `minSamples` periods with both sides in the window, and no regression shown:
    /// never a pass.
    NoData,
}

/// One period of one compared metric: the canary and the side it is compared with (the
/// baseline, or the peers) in the same period.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Period {
    /// The period's start, epoch seconds.
    pub at: i64,
    pub observation: Observation,
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Observation {
    /// A value per period and side (a latency at a statistic, a query's value).
    Value { canary: f64, other: f64 },
    /// Errors and requests per period and side (`alb: errorRate`).
    Counts {
        canary_errors: f64,
        canary_requests: f64,
        other_errors: f64,
        other_requests: f64,
    },
}

impl Observation {
    /// Both sides have something to compare: finite values, requests on both sides.
    fn usable(&self) -> bool {
        match *self {
            Observation::Value { canary, other } => canary.is_finite() && other.is_finite(),
            Observation::Counts {
                canary_errors,
                canary_requests,
                other_errors,
                other_requests,
            } => {
                [canary_errors, canary_requests, other_errors, other_requests]
                    .iter()
                    .all(|v| v.is_finite() && *v >= 0.0)
                    && canary_requests > 0.0
                    && other_requests > 0.0
            }
        }
    }
}

/// The evidence of a regression at which a bake's end waits for more (`analysis.extendBakeSeconds`)
/// rather than pass: a healthy canary's evidence ever reaches it with probability at most 1/10.
pub const LEANING_EVIDENCE: f64 = 10.0;

/// One direction's evidence: signs for values, counts for errors over requests.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum Sequence {
    Signs(Signs),
    Counts(Counts),
}

impl Sequence {
    /// The natural log of the evidence of a regression.
    fn log_evidence(&self) -> f64 {
        match self {
            Sequence::Signs(signs) => signs.log_evidence_of_regression(),
            Sequence::Counts(counts) => counts.log_evidence(),
        }
    }

    fn shows(&self, log_threshold: f64) -> bool {
        match self {
            Sequence::Signs(signs) => signs.shows(log_threshold),
            Sequence::Counts(counts) => counts.shows(log_threshold),
        }
    }
}

/// What the comparison has taken in of one metric (against the baseline, or the peers) since
/// the rollout began. The state carries it from check to check (`evidence`); a check takes in
/// only the periods after `through`, so a retried check, or a window that overlaps the last
/// one, counts no period twice.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct MetricEvidence {
    /// The metric's index in `compare.metrics`.
    pub metric: usize,
    /// Against the peers (`compare.peers`) rather than the baseline.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub peers: bool,
    /// The newest period taken in (its start, epoch seconds); none before the first.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub through: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub increase: Option<Sequence>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub decrease: Option<Sequence>,
    /// A regression once shown stays shown for the rest of the rollout.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shown: Option<MetricResult>,
    /// Periods taken in since the step's bake began ([`Evidence::begin_bake`]): at a quiet
    /// step many periods have no canary request, and the window alone may never hold
    /// `minSamples` of them.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub bake_periods: u32,
    /// The step (from 1) whose bake `bake_periods` counts; 0 before any.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub bake_step: u32,
    /// A derived `slowerThan` (`{"baseline": …}`), seconds, as the first check that compared
    /// the metric took it: the same for the rest of the rollout.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub threshold: Option<f64>,
}

fn is_zero(count: &u32) -> bool {
    *count == 0
}

impl MetricEvidence {
    fn new(metric: usize, peers: bool, watched: &ComparedMetric) -> Self {
        let sequence = || match (watched.counted(), watched.autocorrelation) {
            (true, _) => Sequence::Counts(Counts::default()),
            (false, Some(_)) => Sequence::Signs(Signs::default()),
            (false, None) => Sequence::Signs(Signs::estimating()),
        };
        MetricEvidence {
            metric,
            peers,
            through: None,
            increase: (watched.direction != Direction::Decrease).then(sequence),
            decrease: (watched.direction != Direction::Increase).then(sequence),
            shown: None,
            bake_periods: 0,
            bake_step: 0,
            threshold: None,
        }
    }

    /// Takes in one period's observation.
    fn take(&mut self, metric: &ComparedMetric, observation: Observation) {
        let (increase, decrease) = (metric.allowed_increase, metric.allowed_decrease);
        for (sequence, lower) in [(&mut self.increase, false), (&mut self.decrease, true)] {
            match (sequence.as_mut(), observation) {
                (Some(Sequence::Signs(signs)), Observation::Value { canary, other }) => {
                    // How far the canary is beyond the band around the baseline of the period,
                    // the band on the baseline's magnitude, so that a negative value's band is
                    // as wide as a positive one's.
                    let excess = match lower {
                        false => canary - (other + (increase - 1.0) * other.abs()),
                        true => (other - (1.0 - decrease) * other.abs()) - canary,
                    };
                    let news = signs.innovation(excess, metric.autocorrelation.unwrap_or(0.0));
                    signs.add(news > 0.0);
                }
                (
                    Some(Sequence::Counts(counts)),
                    Observation::Counts {
                        canary_errors,
                        canary_requests,
                        other_errors,
                        other_requests,
                    },
                ) => {
                    let allowed = if lower { decrease } else { increase };
                    let share =
                        allowed * canary_requests / (allowed * canary_requests + other_requests);
                    let (canary, other) = (canary_errors.round(), other_errors.round());
                    counts.add(
                        canary as u64,
                        (canary + other) as u64,
                        share,
                        lower,
                        metric.autocorrelation,
                    );
                }
                _ => {}
            }
        }
    }
}

/// Everything the comparison has taken in, as the state carries it (a JSON text of at most
/// [`MAX_EVIDENCE_BYTES`]).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(transparent)]
pub struct Evidence(pub Vec<MetricEvidence>);

impl Evidence {
    /// The state's text, for the plan's comparison (`None`: the plan compares nothing); empty
    /// is no evidence yet (the rollout's first check). Refused unless a check of this plan
    /// could have written it: each entry names one of the plan's metrics, holds the kind of
    /// evidence that metric takes, and says no more than its periods can.
    pub fn parse(text: &str, checks: Option<&CompareChecks>) -> Result<Self, String> {
        if text.trim().is_empty() {
            return Ok(Evidence::default());
        }
        if text.len() > MAX_EVIDENCE_BYTES {
            return Err(format!(
                "the comparison's evidence is {} bytes, over the {MAX_EVIDENCE_BYTES} the state carries",
                text.len()
            ));
        }
        let evidence: Evidence = serde_json::from_str(text)
            .map_err(|e| format!("the comparison's evidence is not what a check writes: {e}"))?;
        let metrics = checks.map_or(&[][..], |c| &c.metrics[..]);
        for taken in &evidence.0 {
            let refused = |why: String| {
                format!(
                    "the comparison's evidence of metric {}: {why}",
                    taken.metric
                )
            };
            let metric = metrics.get(taken.metric).ok_or_else(|| {
                refused(format!(
                    "the plan compares {} metric(s), numbered from 0",
                    metrics.len()
                ))
            })?;
            match (taken.threshold, metric.derived_from()) {
                (Some(_), None) => {
                    Err("a derived slowerThan for a metric whose plan derives none".to_owned())
                }
                (Some(threshold), Some(_)) if derived_threshold(threshold) != Some(threshold) => {
                    Err(format!("a derived slowerThan of {threshold}"))
                }
                _ => Ok(()),
            }
            .map_err(refused)?;
            for sequence in [&taken.increase, &taken.decrease].into_iter().flatten() {
                match (sequence, metric.counted()) {
                    (Sequence::Signs(signs), false) => signs.check(),
                    (Sequence::Counts(counts), true) => counts.check(),
                    (Sequence::Signs(_), true) => Err("signs for a counted metric".to_owned()),
                    (Sequence::Counts(_), false) => Err("counts for a valued metric".to_owned()),
                }
                .map_err(refused)?;
            }
        }
        Ok(evidence)
    }

    /// The text the state carries.
    pub fn to_text(&self) -> String {
        serde_json::to_string(self).unwrap_or_else(|_| "[]".to_owned())
    }

    /// A metric's evidence of a regression stands at [`LEANING_EVIDENCE`] or more and has not
    /// shown one yet: more than a healthy canary's evidence reaches but one time in ten (Ville's
    /// inequality), not yet the threshold. A bake does not end on it while it may go on.
    pub fn leans_to_a_regression(&self) -> bool {
        !self.shows_a_regression()
            && self.0.iter().any(|e| {
                [&e.increase, &e.decrease]
                    .into_iter()
                    .flatten()
                    .any(|sequence| sequence.log_evidence() >= LEANING_EVIDENCE.ln())
            })
    }

    /// The checks of step `step` (from 1) are judging: what an earlier step's bake counted is
    /// counted afresh. A check taken again (a retry) counts on from where it was.
    pub fn begin_bake(&mut self, step: u32) {
        for metric in self.0.iter_mut().filter(|m| m.bake_step != step) {
            metric.bake_periods = 0;
            metric.bake_step = step;
        }
    }

    /// A metric has shown a regression (High or Low, against the baseline or the peers): it
    /// stands for the rest of the rollout, and no bake passes while it does.
    pub fn shows_a_regression(&self) -> bool {
        self.0.iter().any(|e| e.shown.is_some())
    }

    fn of(&self, metric: usize, peers: bool) -> Option<&MetricEvidence> {
        self.0
            .iter()
            .find(|e| e.metric == metric && e.peers == peers)
    }

    /// The derived `slowerThan` of metric `index`, once a check has taken it.
    pub fn threshold(&self, index: usize) -> Option<f64> {
        self.0
            .iter()
            .filter(|e| e.metric == index)
            .find_map(|e| e.threshold)
    }

    /// Takes `threshold` as metric `index`'s derived `slowerThan`, against the baseline and the
    /// peers alike, where none was taken yet ([`derived_threshold`]'s digits).
    pub fn take_threshold(&mut self, checks: &CompareChecks, index: usize, threshold: f64) {
        let Some(metric) = checks.metrics.get(index) else {
            return;
        };
        let sides: &[bool] = match checks.peers {
            Some(_) => &[false, true],
            None => &[false],
        };
        for &peers in sides {
            if self.of(index, peers).is_none() {
                self.0.push(MetricEvidence::new(index, peers, metric));
            }
        }
        for taken in self.0.iter_mut().filter(|e| e.metric == index) {
            taken.threshold = taken.threshold.or(Some(threshold));
        }
    }
}

/// One metric's comparison, for the verdict's reasons and the metrics.
#[derive(Debug, Clone, PartialEq)]
pub struct MetricJudgement {
    pub name: String,
    pub result: MetricResult,
    /// Periods in the window with both sides.
    pub periods: usize,
    /// The window's median of each side's values; for an error rate, each side's rate over the
    /// window (errors × 100 / requests).
    pub canary_median: Option<f64>,
    pub baseline_median: Option<f64>,
    /// The evidence's natural log in the direction that speaks loudest, and the log of 1/α it
    /// must reach.
    pub log_evidence: f64,
    pub log_threshold: f64,
    /// What the evidence says so far, for people: "11 of 13 periods above the band".
    pub taken_in: String,
    pub critical: bool,
    pub weight: f64,
    /// The evidence after this check, for the state.
    pub evidence: MetricEvidence,
    /// Judged at a step where the baseline serves no traffic: nothing compared
    /// ([`judge_metric_without_baseline`]).
    pub without_baseline: bool,
}

/// Judges metric `index` of the plan from the window's periods (any order, several per period
/// when target groups pool), taking in those after the evidence so far; `alpha` is the metric's
/// share of the rollout's α ([`CompareChecks::alpha`]).
pub fn judge_metric(
    checks: &CompareChecks,
    index: usize,
    peers: bool,
    alpha: f64,
    evidence: &Evidence,
    window: &[Period],
) -> Option<MetricJudgement> {
    let metric = checks.metrics.get(index)?;
    // A value metric's periods are a series (its autocorrelation is of one): the target groups
    // pooled on a side are averaged per period.
    let merged;
    let window = if metric.counted() {
        window
    } else {
        merged = one_per_period(window);
        &merged[..]
    };
    let mut periods: Vec<&Period> = window.iter().filter(|p| p.observation.usable()).collect();
    periods.sort_by_key(|p| p.at);
    let mut taken = evidence
        .of(index, peers)
        .cloned()
        .unwrap_or_else(|| MetricEvidence::new(index, peers, metric));
    let through = taken.through;
    for period in periods.iter().filter(|p| through.is_none_or(|t| p.at > t)) {
        taken.take(metric, period.observation);
        taken.through = Some(taken.through.map_or(period.at, |t| t.max(period.at)));
        // Counted as far as any `minSamples` goes.
        taken.bake_periods = (taken.bake_periods + 1).min(MAX_SAMPLES_PER_SIDE as u32);
    }
    let directions = u32::from(taken.increase.is_some()) + u32::from(taken.decrease.is_some());
    let log_threshold = (f64::from(directions.max(1)) / alpha).ln();
    if taken.shown.is_none() {
        taken.shown = if taken
            .increase
            .as_ref()
            .is_some_and(|s| s.shows(log_threshold))
        {
            Some(MetricResult::High)
        } else if taken
            .decrease
            .as_ref()
            .is_some_and(|s| s.shows(log_threshold))
        {
            Some(MetricResult::Low)
        } else {
            None
        };
    }
    let result = match taken.shown {
        Some(shown) => shown,
        None if periods.len().max(taken.bake_periods as usize) < checks.min_samples() => {
            MetricResult::NoData
        }
        None => MetricResult::Pass,
    };
    let (canary_median, baseline_median) = levels(&periods);
    let loudest = [&taken.increase, &taken.decrease]
        .into_iter()
        .flatten()
        .max_by(|a, b| a.log_evidence().total_cmp(&b.log_evidence()));
    Some(MetricJudgement {
        name: metric.name.clone(),
        result,
        periods: periods.len(),
        canary_median,
        baseline_median,
        log_evidence: loudest.map_or(0.0, Sequence::log_evidence),
        log_threshold,
        taken_in: taken_in(metric, &taken),
        critical: metric.critical,
        weight: metric.weight,
        evidence: taken,
        without_baseline: false,
    })
}

/// Whether a step whose canary weight is `weight` percent leaves the baseline any traffic to
/// compare with: at 100 % the old cluster serves no request, and ALB publishes nothing for a
/// target group without requests.
pub fn baseline_serves(weight: u8) -> bool {
    weight < 100
}

/// [`judge_metric`] at a step where the baseline serves no traffic ([`baseline_serves`]):
/// there is nothing to compare, and nothing is taken in. The evidence of the earlier steps
/// stands: a regression it showed is still High or Low; otherwise the metric passes, and its
/// reason says it was not compared. (Without this, every check at the last step would be
/// NoData, and a healthy rollout would end "no evidence" at 100 %.)
pub fn judge_metric_without_baseline(
    checks: &CompareChecks,
    index: usize,
    alpha: f64,
    evidence: &Evidence,
) -> Option<MetricJudgement> {
    let mut judged = judge_metric(checks, index, false, alpha, evidence, &[])?;
    if judged.result == MetricResult::NoData {
        judged.result = MetricResult::Pass;
    }
    judged.without_baseline = true;
    Some(judged)
}

/// The window with one value per period (each side's mean over the target groups pooled), so
/// that each period follows the last one of the same series: the autocorrelation is of a
/// series.
fn one_per_period(window: &[Period]) -> Vec<Period> {
    let mut by_period: BTreeMap<i64, (f64, f64, f64)> = BTreeMap::new();
    for period in window.iter().filter(|p| p.observation.usable()) {
        if let Observation::Value { canary, other } = period.observation {
            let sums = by_period.entry(period.at).or_insert((0.0, 0.0, 0.0));
            *sums = (sums.0 + canary, sums.1 + other, sums.2 + 1.0);
        }
    }
    by_period
        .into_iter()
        .map(|(at, (canary, other, count))| Period {
            at,
            observation: Observation::Value {
                canary: canary / count,
                other: other / count,
            },
        })
        .collect()
}

/// Each side's level over the window: the median of the values, or the error rate.
fn levels(periods: &[&Period]) -> (Option<f64>, Option<f64>) {
    let (mut canary, mut other) = (Vec::new(), Vec::new());
    let mut totals = [0.0_f64; 4];
    let mut counts = false;
    for period in periods {
        match period.observation {
            Observation::Value {
                canary: c,
                other: o,
            } => {
                canary.push(c);
                other.push(o);
            }
            Observation::Counts {
                canary_errors,
                canary_requests,
                other_errors,
                other_requests,
            } => {
                counts = true;
                for (total, value) in totals.iter_mut().zip([
                    canary_errors,
                    canary_requests,
                    other_errors,
                    other_requests,
                ]) {
                    *total += value;
                }
            }
        }
    }
    if !counts {
        return (statistics::median(&canary), statistics::median(&other));
    }
    let rate = |errors: f64, requests: f64| (requests > 0.0).then(|| errors * 100.0 / requests);
    (rate(totals[0], totals[1]), rate(totals[2], totals[3]))
}

/// A percentile statistic a derived `slowerThan` may take: `p50` to `p99.9`.
fn is_baseline_percentile(stat: &str) -> bool {
    stat.strip_prefix('p')
        .filter(|n| !n.starts_with('+') && !n.contains('e') && !n.contains('E'))
        .and_then(|n| n.parse::<f64>().ok())
        .is_some_and(|n| (50.0..=99.9).contains(&n))
}

/// What the evidence has taken in, in the direction that speaks loudest.
fn taken_in(metric: &ComparedMetric, taken: &MetricEvidence) -> String {
    let loudest = [(&taken.increase, "above"), (&taken.decrease, "below")]
        .into_iter()
        .filter_map(|(s, word)| s.as_ref().map(|s| (s, word)))
        .max_by(|a, b| a.0.log_evidence().total_cmp(&b.0.log_evidence()));
    match loudest {
        Some((Sequence::Signs(signs), word)) => format!(
            "{} of {} period(s) {word} the allowed band",
            signs.beyond, signs.periods
        ),
        Some((Sequence::Counts(_), _)) => match metric.slower_than_seconds(taken.threshold) {
            Some(threshold) => format!(
                "the canary's requests slower than {threshold} against its share of the requests"
            ),
            None => "the canary's errors against its share of the requests".to_owned(),
        },
        None => "nothing".to_owned(),
    }
}

/// What the whole comparison says.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum CompareResult {
    Pass,
    Marginal,
    Fail,
    /// A metric without enough samples, and the others do not fail the check already.
    Inconclusive,
}

/// What the comparison says at one check.
#[derive(Debug, Clone, PartialEq)]
pub struct ComparisonVerdict {
    pub result: CompareResult,
    /// 0–100: the weighted share of metrics that pass.
    pub score: f64,
    /// One per metric: a passing metric passes; every other carries the check's verdict (after
    /// `onMarginal`/`onInconclusive`), so the metrics that made the check fail are the check's
    /// failing signals.
    pub outcomes: Vec<CheckOutcome>,
    /// Unsure, and the plan says `ask`.
    pub asks: bool,
}

/// The check's result from its metrics' judgements.
pub fn judge_comparison(
    checks: &CompareChecks,
    judgements: &[MetricJudgement],
) -> ComparisonVerdict {
    // Folded from 0.0: `Iterator::sum` of no floats is -0.0, which prints as "-0".
    let weight_of = |keep: &dyn Fn(MetricResult) -> bool| -> f64 {
        judgements
            .iter()
            .filter(|j| keep(j.result))
            .fold(0.0, |total, j| total + j.weight)
    };
    let total = weight_of(&|_| true);
    let score_of = |weight: f64| {
        if total > 0.0 {
            100.0 * weight / total
        } else {
            0.0
        }
    };
    let score = score_of(weight_of(&|r| r == MetricResult::Pass));
    // The best the metrics without data could bring: every one passing.
    let best_score = score_of(weight_of(&|r| {
        matches!(r, MetricResult::Pass | MetricResult::NoData)
    }));
    let critical_failed = judgements
        .iter()
        .any(|j| j.critical && matches!(j.result, MetricResult::High | MetricResult::Low));
    let no_data = judgements.iter().any(|j| j.result == MetricResult::NoData);
    let result = if critical_failed || best_score < checks.marginal_score || judgements.is_empty() {
        CompareResult::Fail
    } else if no_data {
        CompareResult::Inconclusive
    } else if score >= checks.pass_score {
        CompareResult::Pass
    } else if score >= checks.marginal_score {
        CompareResult::Marginal
    } else {
        CompareResult::Fail
    };
    let action = match result {
        CompareResult::Marginal => Some(checks.on_marginal),
        CompareResult::Inconclusive => Some(checks.on_inconclusive),
        CompareResult::Pass | CompareResult::Fail => None,
    };
    let check_verdict = match (result, action) {
        (CompareResult::Pass, _) => CheckVerdict::Pass,
        (_, Some(UnsureAction::Hold | UnsureAction::Ask)) => CheckVerdict::Inconclusive,
        _ => CheckVerdict::Fail,
    };
    let check = format!(
        "check {} at score {score:.0}{}",
        result_word(result),
        match result {
            CompareResult::Marginal | CompareResult::Inconclusive => match action {
                Some(UnsureAction::Fail) => ", failed by the plan",
                Some(UnsureAction::Ask) => ", held; a person is asked if it stays so",
                _ => ", held",
            },
            _ if critical_failed => ", a critical metric",
            _ => "",
        }
    );
    let outcomes = judgements
        .iter()
        .map(|j| {
            let verdict = match j.result {
                MetricResult::Pass => CheckVerdict::Pass,
                _ => check_verdict,
            };
            let head = format!("compare {}: {} ({check})", j.name, result_name(j.result));
            CheckOutcome::new(verdict, reason(checks, j, &head, "baseline"))
        })
        .collect();
    ComparisonVerdict {
        result,
        score,
        outcomes,
        asks: action == Some(UnsureAction::Ask),
    }
}

/// Whether the cell has enough peers to be judged against them; if not, the one outcome that
/// says so (`Ignored`: it neither passes nor fails the check).
pub fn too_few_peers(peers: &PeerComparison) -> Option<CheckOutcome> {
    let (count, needed) = (peers.cells.len(), peers.min_peers());
    (count < needed).then(|| {
        CheckOutcome::new(
            CheckVerdict::Ignored,
            format!(
                "peers: {count} promoted peer(s), fewer than minPeers {needed}: the canary is not judged against peers"
            ),
        )
    })
}

/// A fleet cell's canary against its peers' canaries for one metric (each period, the peers'
/// median, or their errors and requests together, in the baseline's place): an outlier — High
/// or Low, as [`judge_metric`] judges a canary against its baseline — fails the check whatever
/// the score; a metric without enough periods is inconclusive. `judged` is [`judge_metric`]'s
/// with `peers` true.
pub fn judge_against_peers(
    checks: &CompareChecks,
    judged: &MetricJudgement,
    peer_count: usize,
) -> CheckOutcome {
    let (verdict, what) = match judged.result {
        MetricResult::Pass => (CheckVerdict::Pass, "Pass".to_owned()),
        MetricResult::High | MetricResult::Low => (
            CheckVerdict::Fail,
            format!(
                "{}, an outlier among {peer_count} promoted peer(s)",
                result_name(judged.result)
            ),
        ),
        MetricResult::NoData => (CheckVerdict::Inconclusive, "NoData".to_owned()),
    };
    let head = format!("peers {}: {what}", judged.name);
    CheckOutcome::new(verdict, reason(checks, judged, &head, "peers"))
}

fn result_word(result: CompareResult) -> &'static str {
    match result {
        CompareResult::Pass => "Pass",
        CompareResult::Marginal => "Marginal",
        CompareResult::Fail => "Fail",
        CompareResult::Inconclusive => "Inconclusive",
    }
}

fn result_name(result: MetricResult) -> &'static str {
    match result {
        MetricResult::Pass => "Pass",
        MetricResult::High => "High",
        MetricResult::Low => "Low",
        MetricResult::NoData => "NoData",
    }
}

/// One line after `head`: "compare latency: High (check Fail at score 50): canary median 0.18
/// vs baseline 0.12 (x1.5) in the last 600 s (10 periods); 11 of 12 period(s) above the
/// allowed band since the comparison began: evidence 585 of the 400 a regression needs";
/// `other` names
/// the side the canary is compared with.
fn reason(checks: &CompareChecks, j: &MetricJudgement, head: &str, other: &str) -> String {
    let lookback = checks.lookback_seconds;
    let window = match (j.canary_median, j.baseline_median) {
        _ if j.without_baseline => format!(
            "not compared: the {other} serves no traffic at this step (the canary takes all of it)"
        ),
        _ if j.result == MetricResult::NoData => format!(
            "{} period(s) with both sides in the last {lookback} s ({} since the step's bake began), fewer than minSamples {}",
            j.periods, j.evidence.bake_periods, checks.min_samples
        ),
        (Some(canary), Some(base)) => {
            let relation = if canary > 0.0 && base > 0.0 {
                format!("x{}", number(canary / base))
            } else {
                format!("shift {}", signed(canary - base))
            };
            format!(
                "canary {} vs {other} {} ({relation}) in the last {lookback} s ({} periods)",
                number(canary),
                number(base),
                j.periods
            )
        }
        _ => format!("{} periods in the last {lookback} s", j.periods),
    };
    format!(
        "{head}: {window}; {} since the comparison began: evidence {} of the {} a regression needs",
        j.taken_in,
        number(j.log_evidence.exp()),
        number(j.log_threshold.exp()),
    )
}

/// Four significant digits (small values in scientific notation): enough to read, short
/// enough for a bounded reason.
fn number(value: f64) -> String {
    if !value.is_finite() {
        format!("{value}")
    } else if value != 0.0 && !(1e-3..1e6).contains(&value.abs()) {
        format!("{value:.2e}")
    } else {
        format!("{}", format!("{value:.4e}").parse::<f64>().unwrap_or(value))
    }
}

fn signed(value: f64) -> String {
    let text = number(value);
    match value > 0.0 {
        true => format!("+{text}"),
        false => text,
    }
}

#[cfg(test)]
mod tests;
