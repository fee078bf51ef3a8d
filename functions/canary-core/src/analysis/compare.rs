//! The comparison check (`analysis.compare`): each metric's canary samples against the
//! baseline's over the same window, judged with the Mann–Whitney U test and the
//! Hodges–Lehmann shift ([`super::statistics`]); the metrics' results weighted into a score, and
//! the score into Pass, Marginal, Fail or Inconclusive. The plan section, its validation and
//! the judgement; the rollout's `signals/compare.rs` reads the samples. Semantics:
//! docs/signals/compare.md.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::metric_query::{check_period_and_lookback, check_stat};
use super::outcome::{CheckOutcome, CheckVerdict};
use super::query_template::render_query;
use super::statistics::{self, Comparison, MAX_SAMPLES_PER_SIDE};
use crate::cluster::ClusterRef;
use crate::targets::TrafficTarget;
use crate::validate::Errors;

/// Most metrics one comparison check compares.
pub const MAX_COMPARED_METRICS: usize = 20;
/// Longest name of a compared metric: it is in every reason and a metric dimension.
pub const MAX_COMPARED_NAME_CHARS: usize = 64;
/// Queries of one GetMetricData call: the comparison reads every metric of both sides at once.
pub const MAX_QUERIES_PER_CALL: usize = 500;
/// Most peers a cell is compared with (`peers.cells`): the plan travels in the state.
pub const MAX_PEERS: usize = 10;

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
    /// The confidence of the test and of the shift's interval, e.g. 0.95 (the default): a
    /// difference counts when the test's p-value is below 1 − confidence.
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
    0.95
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
    /// From the ALB traffic targets: the canary target group against the stable one.
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
    /// `TargetResponseTime` at the metric's `stat`, seconds.
    Latency,
    /// `HTTPCode_Target_5XX_Count` × 100 / `RequestCount` of each period with requests.
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

impl ComparedMetric {
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
        let alb_pairs: std::collections::BTreeSet<(&str, &str)> = targets
            .iter()
            .filter_map(|t| t.as_alb())
            .map(|a| {
                (
                    a.canary_target_group_arn.as_str(),
                    a.stable_target_group_arn.as_str(),
                )
            })
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
                let per_side = |pairs: usize| match (m.alb, &m.cloudwatch) {
                    (Some(AlbSignal::Latency), _) => pairs,
                    (Some(AlbSignal::ErrorRate), _) => 2 * pairs,
                    (None, Some(_)) => 1,
                    // A query of Prometheus's or Datadog's, not CloudWatch's.
                    (None, None) => 0,
                };
                2 * per_side(alb_pairs.len())
                    + peer_groups.iter().map(|g| per_side(*g)).sum::<usize>()
            })
            .sum();
        if queries > MAX_QUERIES_PER_CALL {
            errors.push(
                format!("{path}.metrics"),
                format!("{queries} queries per check (one per side, peer and ALB target group, two for an error rate), over the {MAX_QUERIES_PER_CALL} of one GetMetricData call: compare fewer metrics"),
            );
        }
        // An `alb` metric pools one sample per period from every target group of a side (and the
        // peers' side pools every peer's groups): the cap is on the pooled samples, or a side
        // over it could never be judged (NoData at every check, then a rollback for no evidence).
        let pooled_groups = alb_pairs.len().max(peer_groups.iter().sum());
        let pooled = periods.saturating_mul(pooled_groups as i64);
        if self.metrics.iter().any(|m| m.alb.is_some())
            && periods <= MAX_SAMPLES_PER_SIDE as i64
            && pooled > MAX_SAMPLES_PER_SIDE as i64
        {
            errors.push(
                format!("{path}.lookbackSeconds"),
                format!("{periods} periods × {pooled_groups} target groups pooled on one side is {pooled} samples, over the {MAX_SAMPLES_PER_SIDE} a side may have: use a longer periodSeconds or a shorter lookbackSeconds"),
            );
        }
        let has_alb = !alb_pairs.is_empty();
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
            metric.validate(&path, cluster, has_alb, providers, errors);
        }
    }
}

impl ComparedMetric {
    fn validate(
        &self,
        path: &str,
        cluster: &ClusterRef,
        has_alb: bool,
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
        } else if self.alb.is_some() && !has_alb {
            errors.push(
                format!("{path}.alb"),
                "compares the target groups of an `alb` traffic target, and the plan has none",
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
        check_stat(&format!("{path}.stat"), self.stat(), errors);
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
    Pass,
    /// The canary is higher than the baseline, beyond chance and beyond `allowedIncrease`.
    High,
    /// The canary is lower, beyond chance and beyond `allowedDecrease`.
    Low,
    /// Too few samples on a side (fewer than `minSamples`): never a pass.
    NoData,
}

/// One metric's comparison, for the verdict's reasons and the metrics.
#[derive(Debug, Clone, PartialEq)]
pub struct MetricJudgement {
    pub name: String,
    pub result: MetricResult,
    pub canary_samples: usize,
    pub baseline_samples: usize,
    pub canary_median: Option<f64>,
    pub baseline_median: Option<f64>,
    pub comparison: Option<Comparison>,
    /// (baseline median + shift) / baseline median: the canary as a ratio of the baseline.
    pub ratio: Option<f64>,
    pub critical: bool,
    pub weight: f64,
}

/// Judges one metric's samples (in any order).
pub fn judge_metric(
    checks: &CompareChecks,
    metric: &ComparedMetric,
    canary: &[f64],
    baseline: &[f64],
) -> MetricJudgement {
    let mut judgement = MetricJudgement {
        name: metric.name.clone(),
        result: MetricResult::NoData,
        canary_samples: canary.len(),
        baseline_samples: baseline.len(),
        canary_median: statistics::median(canary),
        baseline_median: statistics::median(baseline),
        comparison: None,
        ratio: None,
        critical: metric.critical,
        weight: metric.weight,
    };
    let enough = checks.min_samples();
    if canary.len() < enough || baseline.len() < enough {
        return judgement;
    }
    let (Some(comparison), Some(baseline_median)) = (
        statistics::compare(canary, baseline, checks.confidence),
        judgement.baseline_median,
    ) else {
        return judgement;
    };
    let ratio = if baseline_median != 0.0 {
        (baseline_median + comparison.shift) / baseline_median
    } else if comparison.shift > 0.0 {
        f64::INFINITY
    } else if comparison.shift < 0.0 {
        0.0
    } else {
        1.0
    };
    let significant = comparison.p_value < 1.0 - checks.confidence;
    let watches_increase = metric.direction != Direction::Decrease;
    let watches_decrease = metric.direction != Direction::Increase;
    judgement.result = if significant
        && watches_increase
        && comparison.shift > 0.0
        && ratio > metric.allowed_increase
    {
        MetricResult::High
    } else if significant
        && watches_decrease
        && comparison.shift < 0.0
        && ratio < metric.allowed_decrease
    {
        MetricResult::Low
    } else {
        MetricResult::Pass
    };
    judgement.comparison = Some(comparison);
    judgement.ratio = Some(ratio);
    judgement
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

/// A fleet cell's canary against its peers' canaries (their samples pooled) for one metric:
/// an outlier — High or Low, as [`judge_metric`] judges a canary against its baseline — fails
/// the check whatever the score; a metric without enough samples on a side is inconclusive.
pub fn judge_against_peers(
    checks: &CompareChecks,
    metric: &ComparedMetric,
    canary: &[f64],
    peers: &[f64],
    peer_count: usize,
) -> (MetricJudgement, CheckOutcome) {
    let judged = judge_metric(checks, metric, canary, peers);
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
    let head = format!("peers {}: {what}", metric.name);
    let outcome = CheckOutcome::new(verdict, reason(checks, &judged, &head, "peers"));
    (judged, outcome)
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
/// vs baseline 0.12 (x1.5), shift +0.06 [+0.05, +0.07], p 0.0001, 20 vs 20 samples"; `other`
/// names the side the canary is compared with.
fn reason(checks: &CompareChecks, j: &MetricJudgement, head: &str, other: &str) -> String {
    let (canary, others) = (j.canary_samples, j.baseline_samples);
    let Some(comparison) = j.comparison else {
        return format!(
            "{head}: {canary} canary and {others} {other} sample(s) in the last {} s, fewer than minSamples {} on a side",
            checks.lookback_seconds, checks.min_samples
        );
    };
    format!(
        "{head}: canary median {} vs {other} {} (x{}), shift {} [{}, {}], p {}, {canary} vs {others} samples",
        number(j.canary_median.unwrap_or(f64::NAN)),
        number(j.baseline_median.unwrap_or(f64::NAN)),
        number(j.ratio.unwrap_or(f64::NAN)),
        signed(comparison.shift),
        signed(comparison.lower),
        signed(comparison.upper),
        number(comparison.p_value),
    )
}

/// Four significant digits (small values in scientific notation): enough to read, short
/// enough for a bounded reason.
fn number(value: f64) -> String {
    if !value.is_finite() {
        format!("{value}")
    } else if value != 0.0 && value.abs() < 1e-3 {
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
