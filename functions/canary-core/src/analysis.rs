//! The plan's `analysis` section and the verdict logic of one check: given what every alarm
//! and metric said, decide pass / fail / inconclusive, count consecutive failures, and say
//! whether the rollout must roll back. Pure: the evaluate-alarms function feeds it.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::limits;
use crate::plan::{Errors, TrafficTarget};

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
    /// Built-in checks of the canary target group of every ALB traffic target.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub alb: Option<AlbChecks>,
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
}

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
    /// Limit on the canary's `HTTPCode_Target_5XX_Count / RequestCount`, percent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_error_rate_percent: Option<f64>,
    /// The canary's 5xx rate may not exceed the stable one times this.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_error_rate_vs_stable: Option<f64>,
    /// Canary 5xx rates at or below this are noise to the relative comparison, percent. Default 0.1.
    #[serde(default = "default_error_rate_noise")]
    pub error_rate_noise_percent: f64,
    /// Limit on the canary's `TargetResponseTime` statistic, seconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_latency_seconds: Option<f64>,
    /// The canary's latency may not exceed the stable one times this.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_latency_vs_stable: Option<f64>,
    /// The `TargetResponseTime` statistic. Default `p99`.
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

    pub(crate) fn validate(&self, targets: &[TrafficTarget], errors: &mut Errors) {
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
        if !targets.iter().any(|t| matches!(t, TrafficTarget::Alb(_))) {
            errors.push(
                path,
                "the built-in ALB checks need at least one `alb` traffic target",
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

fn check_stat(path: &str, stat: &str, errors: &mut Errors) {
    const PLAIN: [&str; 5] = ["SampleCount", "Average", "Sum", "Minimum", "Maximum"];
    let percentile = stat
        .strip_prefix('p')
        .and_then(|p| p.parse::<f64>().ok())
        .is_some_and(|p| p > 0.0 && p < 100.0);
    if !PLAIN.contains(&stat) && !percentile {
        errors.push(
            path,
            format!("`{stat}` is not a statistic: use SampleCount, Average, Sum, Minimum, Maximum or a percentile such as p99"),
        );
    }
}

fn check_period_and_lookback(path: &str, period: i64, lookback: i64, errors: &mut Errors) {
    let period_ok = [1, 5, 10, 20, 30].contains(&period) || (period >= 60 && period % 60 == 0);
    if !period_ok {
        errors.push(
            format!("{path}.periodSeconds"),
            format!(
                "CloudWatch periods are 1, 5, 10, 20, 30 or a multiple of 60 seconds, got {period}"
            ),
        );
    } else if lookback < period {
        errors.push(
            format!("{path}.lookbackSeconds"),
            format!("{lookback} s is shorter than the metric period ({period} s): the check would never see a datapoint"),
        );
    }
    if lookback > 86_400 {
        errors.push(
            format!("{path}.lookbackSeconds"),
            "must be at most one day (86400 s)",
        );
    }
}

/// How one alarm or metric judged the canary.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum CheckVerdict {
    Pass,
    Fail,
    Inconclusive,
    /// Configured not to count (an INSUFFICIENT_DATA alarm under `ignore`).
    Ignored,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CheckOutcome {
    pub verdict: CheckVerdict,
    /// One line for people: "alarm api-5xx is ALARM since 2026-11-22T12:03:10Z: Threshold Crossed ...".
    pub reason: String,
}

impl CheckOutcome {
    pub fn new(verdict: CheckVerdict, reason: impl Into<String>) -> Self {
        CheckOutcome {
            verdict,
            reason: reason.into(),
        }
    }
}

/// Where the bake stands before this check.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct BakeProgress {
    /// Failing checks in a row so far.
    #[serde(default)]
    pub consecutive_failures: u32,
    /// Passing checks so far in this step's bake.
    #[serde(default)]
    pub passes: u32,
    /// The number of this check in the step's bake, from 1.
    #[serde(default)]
    pub check: u32,
    /// How many checks the step's bake has (the resolved step's `checks`).
    #[serde(default)]
    pub checks: u32,
}

impl BakeProgress {
    /// This check ends the step's bake.
    pub fn last_check(&self) -> bool {
        self.checks > 0 && self.check >= self.checks
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Decision {
    /// This check's verdict: `fail` if any signal failed, else `inconclusive` if any was
    /// inconclusive (or none counted), else `pass`.
    pub verdict: CheckVerdict,
    /// Roll back now.
    pub rollback: bool,
    /// The check this verdict is for (`progress.check`): the state machine counts from it.
    pub check: u32,
    pub consecutive_failures: u32,
    pub passes: u32,
    /// How many signals gave each verdict in this check.
    pub counts: VerdictCounts,
    /// Why, one line per signal, failing ones first, then inconclusive, then passing: at most
    /// [`limits::MAX_VERDICT_REASONS`] and "… and N more" (every signal is in the function's
    /// log); then the decision's own reason when it rolls back.
    pub reasons: Vec<String>,
    /// The reasons in one bounded line, for an execution's failure cause.
    pub summary: String,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct VerdictCounts {
    pub pass: u32,
    pub fail: u32,
    pub inconclusive: u32,
    pub ignored: u32,
}

impl VerdictCounts {
    fn of(outcomes: &[CheckOutcome]) -> Self {
        let mut counts = VerdictCounts::default();
        for outcome in outcomes {
            *match outcome.verdict {
                CheckVerdict::Pass => &mut counts.pass,
                CheckVerdict::Fail => &mut counts.fail,
                CheckVerdict::Inconclusive => &mut counts.inconclusive,
                CheckVerdict::Ignored => &mut counts.ignored,
            } += 1;
        }
        counts
    }
}

/// The signals' reasons as a verdict carries them: failing first, bounded (see [`Decision::reasons`]).
fn bounded_reasons(outcomes: &[CheckOutcome]) -> Vec<String> {
    let rank = |v: CheckVerdict| match v {
        CheckVerdict::Fail => 0,
        CheckVerdict::Inconclusive => 1,
        CheckVerdict::Pass => 2,
        CheckVerdict::Ignored => 3,
    };
    let mut ordered: Vec<&CheckOutcome> = outcomes.iter().collect();
    ordered.sort_by_key(|o| rank(o.verdict)); // stable: signals keep their order within a verdict
    let mut reasons: Vec<String> = ordered
        .iter()
        .take(limits::MAX_VERDICT_REASONS)
        .map(|o| limits::truncate(&o.reason, limits::MAX_LINE_BYTES))
        .collect();
    if ordered.len() > limits::MAX_VERDICT_REASONS {
        reasons.push(format!(
            "… and {} more signal(s) (every one is in the function's log)",
            ordered.len() - limits::MAX_VERDICT_REASONS
        ));
    }
    reasons
}

fn summary_of(reasons: &[String]) -> String {
    limits::truncate(&reasons.join("; "), limits::MAX_SUMMARY_BYTES)
}

/// Judges one check from its signals' outcomes.
pub fn decide(
    analysis: Option<&AnalysisSection>,
    outcomes: &[CheckOutcome],
    progress: BakeProgress,
) -> Decision {
    let counts = VerdictCounts::of(outcomes);
    let mut reasons = bounded_reasons(outcomes);
    let Some(analysis) = analysis else {
        reasons.push("no analysis configured: the step passes on time alone".to_owned());
        return Decision {
            verdict: CheckVerdict::Pass,
            rollback: false,
            check: progress.check,
            consecutive_failures: 0,
            passes: progress.passes + 1,
            counts,
            summary: summary_of(&reasons),
            reasons,
        };
    };
    let verdict = if counts.fail > 0 {
        CheckVerdict::Fail
    } else if counts.inconclusive > 0 {
        CheckVerdict::Inconclusive
    } else if counts.pass > 0 {
        CheckVerdict::Pass
    } else {
        reasons.push("no signal counted in this check".to_owned());
        CheckVerdict::Inconclusive
    };

    let counts_as_failure = verdict == CheckVerdict::Fail
        || (verdict == CheckVerdict::Inconclusive
            && analysis.inconclusive == InconclusivePolicy::CountAsFailure);
    let consecutive_failures = match verdict {
        CheckVerdict::Pass => 0,
        _ if counts_as_failure => progress.consecutive_failures.saturating_add(1),
        _ => progress.consecutive_failures,
    };
    let passes = progress.passes + u32::from(verdict == CheckVerdict::Pass);
    let limit = analysis.failure_limit();
    let mut rollback = false;
    if consecutive_failures >= limit {
        rollback = true;
        reasons.push(format!(
            "{consecutive_failures} failing check(s) in a row reached the failure limit of {limit}"
        ));
    } else if progress.last_check() && passes == 0 && analysis.no_evidence == NoEvidencePolicy::Fail
    {
        rollback = true;
        reasons.push(
            "the step's bake ended without a single passing check: no evidence, no promotion"
                .to_owned(),
        );
    }
    Decision {
        verdict,
        rollback,
        check: progress.check,
        consecutive_failures,
        passes,
        counts,
        summary: summary_of(&reasons),
        reasons,
    }
}

/// One value from a metric's datapoints (in time order, oldest first).
pub fn reduce(values: &[f64], how: Reduce) -> Option<f64> {
    let last = values.last().copied()?;
    Some(match how {
        Reduce::Latest => last,
        Reduce::Average => sum(values) / values.len() as f64,
        Reduce::Max => values.iter().copied().fold(f64::NEG_INFINITY, f64::max),
        Reduce::Min => values.iter().copied().fold(f64::INFINITY, f64::min),
        Reduce::Sum => sum(values),
    })
}

/// The sum, 0 for none. (`Iterator::sum` of no floats is -0.0, which prints as "-0".)
pub fn sum(values: &[f64]) -> f64 {
    values.iter().fold(0.0, |total, v| total + v)
}

/// Compares a value with a metric check's limits.
pub fn judge_threshold(check: &MetricCheck, value: Option<f64>) -> CheckOutcome {
    let name = &check.name;
    let Some(value) = value else {
        return CheckOutcome::new(
            CheckVerdict::Inconclusive,
            format!(
                "no datapoints for {name} in the last {} s",
                check.lookback_seconds
            ),
        );
    };
    if let Some(max) = check.max.filter(|max| value > *max) {
        return CheckOutcome::new(CheckVerdict::Fail, format!("{name} is {value} > max {max}"));
    }
    if let Some(min) = check.min.filter(|min| value < *min) {
        return CheckOutcome::new(CheckVerdict::Fail, format!("{name} is {value} < min {min}"));
    }
    CheckOutcome::new(
        CheckVerdict::Pass,
        format!("{name} is {value}, within limits"),
    )
}

/// Sums of the ALB counters of one target group over the lookback.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct TargetGroupTraffic {
    pub requests: f64,
    pub errors_5xx: f64,
    /// The latency statistic, worst period in the lookback; `None` without datapoints.
    pub latency_seconds: Option<f64>,
}

impl TargetGroupTraffic {
    pub fn error_rate_percent(&self) -> Option<f64> {
        (self.requests > 0.0).then(|| self.errors_5xx * 100.0 / self.requests)
    }
}

/// The built-in ALB checks for one canary/stable target group pair.
pub fn judge_alb(
    checks: &AlbChecks,
    label: &str,
    canary: TargetGroupTraffic,
    stable: TargetGroupTraffic,
) -> Vec<CheckOutcome> {
    let mut outcomes = Vec::new();
    let min_requests = checks.min_requests.max(0) as f64;
    let lookback = checks.lookback_seconds;
    let enough_traffic = canary.requests >= min_requests && canary.requests > 0.0;
    let wants_errors =
        checks.max_error_rate_percent.is_some() || checks.max_error_rate_vs_stable.is_some();
    if wants_errors && !enough_traffic {
        outcomes.push(CheckOutcome::new(
            CheckVerdict::Inconclusive,
            format!(
                "{label}: canary served {} request(s) in the last {lookback} s, fewer than the {} needed to judge its 5xx rate",
                canary.requests, min_requests.max(1.0)
            ),
        ));
    }
    if let (Some(limit), Some(rate), true) = (
        checks.max_error_rate_percent,
        canary.error_rate_percent(),
        enough_traffic,
    ) {
        let verdict = if rate > limit {
            CheckVerdict::Fail
        } else {
            CheckVerdict::Pass
        };
        let cmp = if rate > limit { ">" } else { "<=" };
        outcomes.push(CheckOutcome::new(
            verdict,
            format!("{label}: canary 5xx rate {rate:.2} % {cmp} max {limit} %"),
        ));
    }
    if let (Some(factor), Some(rate), true) = (
        checks.max_error_rate_vs_stable,
        canary.error_rate_percent(),
        enough_traffic,
    ) {
        outcomes.push(match stable.error_rate_percent() {
            None => CheckOutcome::new(
                CheckVerdict::Inconclusive,
                format!("{label}: stable served no requests in the last {lookback} s; nothing to compare the canary's 5xx rate with"),
            ),
            Some(stable_rate) => {
                let allowed = stable_rate * factor;
                if rate > allowed && rate > checks.error_rate_noise_percent {
                    CheckOutcome::new(
                        CheckVerdict::Fail,
                        format!("{label}: canary 5xx rate {rate:.2} % > stable {stable_rate:.2} % x {factor}"),
                    )
                } else {
                    CheckOutcome::new(
                        CheckVerdict::Pass,
                        format!("{label}: canary 5xx rate {rate:.2} % is within stable {stable_rate:.2} % x {factor}"),
                    )
                }
            }
        });
    }
    let stat = &checks.latency_statistic;
    if checks.max_latency_seconds.is_some() || checks.max_latency_vs_stable.is_some() {
        match canary.latency_seconds {
            None => outcomes.push(CheckOutcome::new(
                CheckVerdict::Inconclusive,
                format!(
                    "{label}: no datapoints for canary {stat} latency in the last {lookback} s"
                ),
            )),
            Some(latency) => {
                if let Some(limit) = checks.max_latency_seconds {
                    let fail = latency > limit;
                    outcomes.push(CheckOutcome::new(
                        if fail {
                            CheckVerdict::Fail
                        } else {
                            CheckVerdict::Pass
                        },
                        format!(
                            "{label}: canary {stat} latency {latency:.3} s {} max {limit} s",
                            if fail { ">" } else { "<=" }
                        ),
                    ));
                }
                if let Some(factor) = checks.max_latency_vs_stable {
                    outcomes.push(match stable.latency_seconds {
                        None => CheckOutcome::new(
                            CheckVerdict::Inconclusive,
                            format!("{label}: no datapoints for stable {stat} latency; nothing to compare with"),
                        ),
                        Some(stable_latency) => {
                            let fail = latency > stable_latency * factor;
                            CheckOutcome::new(
                                if fail { CheckVerdict::Fail } else { CheckVerdict::Pass },
                                format!(
                                    "{label}: canary {stat} latency {latency:.3} s {} stable {stable_latency:.3} s x {factor}",
                                    if fail { ">" } else { "<=" }
                                ),
                            )
                        }
                    });
                }
            }
        }
    }
    outcomes
}
