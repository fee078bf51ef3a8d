//! The plan's `analysis` section: what to watch between steps, and its validation.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::compare::CompareChecks;
use super::datadog::DatadogChecks;
use super::metric_query::{check_period_and_lookback, check_stat};
use super::prometheus::PrometheusChecks;
use crate::cluster::ClusterRef;
use crate::targets::TrafficTarget;
use crate::validate::Errors;

/// Most metric queries of one check: GetMetricData takes 500 per call, and the built-in ALB
/// checks add four per load-balanced target group pair.
pub const MAX_METRIC_CHECKS: usize = 50;

/// What to watch between steps, and how to judge it.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct AnalysisSection {
    /// CloudWatch alarms (metric and composite) that must not be in ALARM.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub alarms: Option<AlarmChecks>,
    /// Metric thresholds over `GetMetricData` queries.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub metrics: Vec<MetricCheck>,
    /// Built-in checks of the canary target group of every `alb` and `vpcLattice` traffic
    /// target, against its stable target group (docs/signals/alb-judge.md).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub alb: Option<AlbChecks>,
    /// PromQL instant queries against Prometheus or an AMP workspace (docs/signals/prometheus.md).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prometheus: Option<PrometheusChecks>,
    /// Datadog metrics queries through its scalar query API (docs/signals/datadog.md).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub datadog: Option<DatadogChecks>,
    /// The canary against the baseline, statistically, metric by metric over the same window
    /// (docs/signals/compare.md).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub compare: Option<CompareChecks>,
    /// Roll back after this many failing checks in a row. Default 1.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1, max = 100))]
    pub failure_limit: Option<i64>,
    /// How an inconclusive check counts. Default `ignore`.
    #[serde(default)]
    pub inconclusive: InconclusivePolicy,
    /// What to do when a step's bake ends without a single passing check. Default `fail`:
    /// never promote on no evidence.
    #[serde(default)]
    pub no_evidence: NoEvidencePolicy,
    /// How long a step may go without a verdict because a metrics provider is unreachable or
    /// failing (seconds, 10 to 3600). Checks meanwhile are unjudged: they neither pass nor
    /// count toward the bake; past this the rollout rolls back. Default: three check
    /// intervals of the step, at least 30 s.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 10, max = 3600))]
    pub max_unjudged_seconds: Option<i64>,
    /// How much longer a step may bake when its bake ends short of data (seconds, 0 to
    /// 86,400): no check passed and the last one is inconclusive (a compared metric with fewer
    /// than `minSamples` periods, an alarm with too little data). The bake goes on a check at a
    /// time until a check passes or this runs out; only then does `noEvidence` apply. A step
    /// at 1 % of a quiet service's traffic gathers its periods slowly. Default: each step's own
    /// bake when the plan compares (`compare`), 0 otherwise. Counted in the rollout's checks.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0, max = 86400))]
    pub extend_bake_seconds: Option<i64>,
}

/// The bounds of `analysis.maxUnjudgedSeconds`.
pub const MAX_UNJUDGED_SECONDS: std::ops::RangeInclusive<i64> = 10..=3600;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum InconclusivePolicy {
    /// Neither a pass nor a failure: the consecutive-failure count stays as it is.
    #[default]
    Ignore,
    /// Counts like a failing check.
    CountAsFailure,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum NoEvidencePolicy {
    #[default]
    Fail,
    Pass,
}

#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct AlarmChecks {
    /// Alarm names; each must exist when the rollout starts.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub names: Vec<String>,
    /// Alarm name prefixes; each must match at least one alarm when the rollout starts.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub prefixes: Vec<String>,
    /// What an alarm in INSUFFICIENT_DATA means. Default `inconclusive`.
    #[serde(default)]
    pub insufficient_data: InsufficientDataPolicy,
    /// Alarms (of `names`, or matched by `prefixes`) whose ALARM rolls back straight to the
    /// baseline, even with `rollback.gradual`: the ones that mean the canary fails hard.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = 50))]
    pub critical: Vec<String>,
}

/// Most alarms one plan may mark critical.
pub const MAX_CRITICAL_ALARMS: usize = 50;

impl AlarmChecks {
    /// Whether `alarm` is one the plan marks critical.
    pub fn is_critical(&self, alarm: &str) -> bool {
        self.critical.iter().any(|name| name == alarm)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum InsufficientDataPolicy {
    #[default]
    Inconclusive,
    Fail,
    Ignore,
}

/// A threshold on one CloudWatch metric.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct MetricCheck {
    /// A name for people, used in the check's reason.
    pub name: String,
    pub namespace: String,
    pub metric_name: String,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub dimensions: BTreeMap<String, String>,
    /// `SampleCount`, `Average`, `Sum`, `Minimum`, `Maximum`, or a percentile such as `p99`.
    pub stat: String,
    /// 1, 5, 10, 20, 30, or a multiple of 60.
    pub period_seconds: i64,
    /// How far back each check looks. At least one period.
    pub lookback_seconds: i64,
    /// How the datapoints in the lookback become one value. Default `latest`.
    #[serde(default)]
    pub reduce: Reduce,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max: Option<f64>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum Reduce {
    #[default]
    Latest,
    Average,
    Max,
    Min,
    Sum,
}

/// Built-in checks of each ALB target's canary target group, from `AWS/ApplicationELB`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct AlbChecks {
    /// Lookback of every built-in check, seconds. Default 300.
    #[serde(default = "default_alb_lookback")]
    pub lookback_seconds: i64,
    /// Metric period, seconds. Default 60.
    #[serde(default = "default_alb_period")]
    pub period_seconds: i64,
    /// Fewer canary requests than this in the lookback make the check inconclusive. Default 1.
    #[serde(default = "default_min_requests")]
    pub min_requests: i64,
    /// Limit on the canary's 5xx over its requests, percent (ALB's `HTTPCode_Target_5XX_Count /
    /// RequestCount`, Lattice's `HTTPCode_5XX_Count / TotalRequestCount`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_error_rate_percent: Option<f64>,
    /// The canary's 5xx rate may not exceed the stable one times this.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_error_rate_vs_stable: Option<f64>,
    /// Canary 5xx rates at or below this are noise to the relative comparison, percent. Default 0.1.
    #[serde(default = "default_error_rate_noise")]
    pub error_rate_noise_percent: f64,
    /// Limit on the canary's latency statistic (ALB's `TargetResponseTime`, Lattice's
    /// `RequestTime`), seconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_latency_seconds: Option<f64>,
    /// The canary's latency may not exceed the stable one times this.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_latency_vs_stable: Option<f64>,
    /// The latency statistic. Default `p99`.
    #[serde(default = "default_latency_statistic")]
    pub latency_statistic: String,
}

fn default_alb_lookback() -> i64 {
    300
}
fn default_alb_period() -> i64 {
    60
}
fn default_min_requests() -> i64 {
    1
}
fn default_error_rate_noise() -> f64 {
    0.1
}
fn default_latency_statistic() -> String {
    "p99".to_owned()
}

impl AnalysisSection {
    pub fn failure_limit(&self) -> u32 {
        self.failure_limit
            .and_then(|l| u32::try_from(l).ok())
            .filter(|l| *l >= 1)
            .unwrap_or(1)
    }

    /// How long a step with checks `check_interval_seconds` apart may go without a verdict.
    pub fn max_unjudged_seconds(&self, check_interval_seconds: u32) -> u64 {
        match self
            .max_unjudged_seconds
            .and_then(|s| u64::try_from(s).ok())
        {
            Some(seconds) => seconds,
            None => (3 * u64::from(check_interval_seconds)).max(30),
        }
    }

    /// How many checks a step baking `bake_seconds`, a check every `check_interval_seconds`,
    /// may run past its bake's end for want of data (`extendBakeSeconds`).
    pub fn extra_checks(&self, bake_seconds: u32, check_interval_seconds: u32) -> u32 {
        let seconds = match self.extend_bake_seconds {
            Some(seconds) => u32::try_from(seconds).unwrap_or(0),
            None if self.compare.is_some() => bake_seconds,
            None => 0,
        };
        seconds.div_ceil(check_interval_seconds.max(1))
    }

    pub(crate) fn validate(
        &self,
        cluster: &ClusterRef,
        targets: &[TrafficTarget],
        errors: &mut Errors,
    ) {
        if let Some(seconds) = self
            .extend_bake_seconds
            .filter(|s| !(0..=crate::limits::MAX_BAKE_SECONDS).contains(s))
        {
            errors.push(
                "analysis.extendBakeSeconds",
                format!(
                    "must be from 0 to {}, got {seconds}",
                    crate::limits::MAX_BAKE_SECONDS
                ),
            );
        }
        if let Some(seconds) = self
            .max_unjudged_seconds
            .filter(|s| !MAX_UNJUDGED_SECONDS.contains(s))
        {
            errors.push(
                "analysis.maxUnjudgedSeconds",
                format!("must be from 10 to 3600, got {seconds}"),
            );
        }
        if let Some(limit) = self.failure_limit.filter(|l| !(1..=100).contains(l)) {
            errors.push(
                "analysis.failureLimit",
                format!("must be from 1 to 100, got {limit}"),
            );
        }
        if let Some(alarms) = &self.alarms {
            if alarms.names.is_empty() && alarms.prefixes.is_empty() {
                errors.push("analysis.alarms", "give at least one alarm name or prefix");
            }
            for (i, name) in alarms.names.iter().enumerate() {
                if name.is_empty() || name.len() > 255 {
                    errors.push(
                        format!("analysis.alarms.names[{i}]"),
                        "must be 1 to 255 characters",
                    );
                }
            }
            for (i, prefix) in alarms.prefixes.iter().enumerate() {
                if prefix.is_empty() || prefix.len() > 255 {
                    errors.push(
                        format!("analysis.alarms.prefixes[{i}]"),
                        "must be 1 to 255 characters",
                    );
                }
            }
            if alarms.critical.len() > MAX_CRITICAL_ALARMS {
                errors.push(
                    "analysis.alarms.critical",
                    format!(
                        "at most {MAX_CRITICAL_ALARMS} critical alarms, got {}",
                        alarms.critical.len()
                    ),
                );
            }
            for (i, name) in alarms.critical.iter().enumerate() {
                let watched = alarms.names.contains(name)
                    || alarms.prefixes.iter().any(|p| name.starts_with(p.as_str()));
                if !watched {
                    errors.push(
                        format!("analysis.alarms.critical[{i}]"),
                        format!(
                            "`{}` is not one of analysis.alarms.names nor matched by its prefixes",
                            crate::limits::truncate(name, 255)
                        ),
                    );
                }
            }
        }
        if self.metrics.len() > MAX_METRIC_CHECKS {
            errors.push(
                "analysis.metrics",
                format!(
                    "at most {MAX_METRIC_CHECKS} metric checks, got {}",
                    self.metrics.len()
                ),
            );
        }
        for (i, metric) in self.metrics.iter().enumerate() {
            metric.validate(&format!("analysis.metrics[{i}]"), errors);
        }
        if let Some(alb) = &self.alb {
            alb.validate(targets, errors);
        }
        if let Some(prometheus) = &self.prometheus {
            let compared = self.compare.iter().flat_map(|c| &c.metrics);
            let used_by_comparison = compared.into_iter().any(|m| m.prometheus.is_some());
            prometheus.validate(cluster, used_by_comparison, errors);
        }
        if let Some(datadog) = &self.datadog {
            let compared = self.compare.iter().flat_map(|c| &c.metrics);
            let used_by_comparison = compared.into_iter().any(|m| m.datadog.is_some());
            datadog.validate(cluster, used_by_comparison, errors);
        }
        if let Some(compare) = &self.compare {
            compare.validate(
                cluster,
                targets,
                self.prometheus.is_some(),
                self.datadog.is_some(),
                errors,
            );
        }
    }
}

impl MetricCheck {
    fn validate(&self, path: &str, errors: &mut Errors) {
        for (field, value) in [
            ("name", &self.name),
            ("namespace", &self.namespace),
            ("metricName", &self.metric_name),
        ] {
            if value.is_empty() || value.len() > 255 {
                errors.push(format!("{path}.{field}"), "must be 1 to 255 characters");
            }
        }
        if self.dimensions.len() > 30 {
            errors.push(
                format!("{path}.dimensions"),
                "CloudWatch allows at most 30 dimensions",
            );
        }
        check_stat(&format!("{path}.stat"), &self.stat, errors);
        check_period_and_lookback(path, self.period_seconds, self.lookback_seconds, errors);
        match (self.min, self.max) {
            (None, None) => errors.push(
                path,
                "give `min`, `max` or both: a check without a limit cannot fail",
            ),
            (Some(min), Some(max)) if min > max => errors.push(
                format!("{path}.min"),
                format!("{min} is greater than max {max}"),
            ),
            _ => {}
        }
    }
}

impl AlbChecks {
    fn validate(&self, targets: &[TrafficTarget], errors: &mut Errors) {
        let path = "analysis.alb";
        if !targets.iter().any(|t| t.judged_target_groups().is_some()) {
            errors.push(
                path,
                "the built-in target group checks need at least one `alb` or `vpcLattice` traffic target",
            );
        }
        check_period_and_lookback(path, self.period_seconds, self.lookback_seconds, errors);
        check_stat(
            &format!("{path}.latencyStatistic"),
            &self.latency_statistic,
            errors,
        );
        if self.min_requests < 0 {
            errors.push(format!("{path}.minRequests"), "must not be negative");
        }
        let limits = [
            ("maxErrorRatePercent", self.max_error_rate_percent),
            ("maxErrorRateVsStable", self.max_error_rate_vs_stable),
            ("maxLatencySeconds", self.max_latency_seconds),
            ("maxLatencyVsStable", self.max_latency_vs_stable),
        ];
        if limits.iter().all(|(_, v)| v.is_none()) {
            errors.push(
                path,
                "set at least one of maxErrorRatePercent, maxErrorRateVsStable, maxLatencySeconds, maxLatencyVsStable",
            );
        }
        for (field, value) in limits {
            if let Some(v) = value.filter(|v| !(v.is_finite() && *v >= 0.0)) {
                errors.push(
                    format!("{path}.{field}"),
                    format!("must be a non-negative number, got {v}"),
                );
            }
        }
        for (field, value) in [
            ("maxErrorRateVsStable", self.max_error_rate_vs_stable),
            ("maxLatencyVsStable", self.max_latency_vs_stable),
        ] {
            if let Some(v) = value.filter(|v| *v < 1.0) {
                errors.push(
                    format!("{path}.{field}"),
                    format!("a factor below 1 ({v}) would demand the canary be better than stable; use 1 or more"),
                );
            }
        }
        if !(0.0..=100.0).contains(&self.error_rate_noise_percent) {
            errors.push(
                format!("{path}.errorRateNoisePercent"),
                "must be a percentage from 0 to 100",
            );
        }
    }
}
