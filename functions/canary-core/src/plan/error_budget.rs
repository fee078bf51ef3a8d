//! The plan's `errorBudget` section: CloudWatch Application Signals SLOs whose error budget
//! gates the rollout (`crate::error_budget` says what a spent budget does).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use std::collections::BTreeMap;

use crate::analysis::metric_query::{check_period_and_lookback, check_stat};
use crate::arn;
use crate::validate::Errors;

/// Most SLOs a plan names: all of them are read in one `BatchGetServiceLevelObjectiveBudgetReport`
/// call (which takes 50) at the gate and at every step's end, and each can add one line to the
/// hold's reason.
pub const MAX_SLOS: usize = 10;

/// What an SLO whose budget report says INSUFFICIENT_DATA does to the rollout.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum OnInsufficientData {
    /// Hold it, as a spent budget does: nobody can tell how much budget is left.
    #[default]
    Hold,
    /// Go on, as with budget left (a new service whose SLO has no data yet).
    Go,
}

#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ErrorBudgetSection {
    /// Application Signals SLOs, by name (in the new cluster's Region and account, or the
    /// role's) or ARN. While one is BREACHED (or has less than `minRemainingPercent` of its
    /// budget left) no rollout starts and no step after the first is set: the rollout holds
    /// as under a change freeze, within `freeze.maxFrozenSeconds`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub slos: Vec<String>,
    /// Budgets kept in Prometheus or AMP (Sloth's or Pyrra's recording rules): each an instant
    /// query, asked of `analysis.prometheus`'s endpoint, whose one number is the share of the
    /// budget left (1: all of it, 0 or less: spent). They hold the rollout as the SLOs do.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub prometheus: Vec<RemainingBudgetQuery>,
    /// Budgets kept as CloudWatch metrics: each metric's latest datapoint in its lookback is the
    /// share of the budget left (1: all of it, 0 or less: spent).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub cloudwatch: Vec<RemainingBudgetMetric>,
    /// Hold while less than this percent of an SLO's budget is left (0 to 100). Default: 0,
    /// hold only while it is BREACHED.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_remaining_percent: Option<f64>,
    /// `hold` (the default) or `go` while an SLO's report says INSUFFICIENT_DATA.
    #[serde(default)]
    pub on_insufficient_data: OnInsufficientData,
    /// A role in the SLOs' account to read them through (SLOs of another account). Default: the
    /// function's own role, in the stack's account.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub role_arn: Option<String>,
    /// The rollout's own share of each request-based SLO's budget, in percent of the budget of
    /// its interval as it was when the rollout started (0 to 100, default 2, the SRE workbook's
    /// figure; 0: off). Every check counts the new cluster's bad requests since the rollout
    /// started against it (5xx, or for a latency SLO requests slower than its SLI's
    /// `MetricThreshold`); spent, the check fails (critical).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rollout_share: Option<f64>,
    /// The fast burn on the new cluster alone: every check fails (critical) while its own bad
    /// requests burn an SLO's budget at `rate` times the sustainable pace or more, over both windows.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fast_burn: Option<FastBurn>,
}

/// A budget's remaining share, as a Prometheus query gives it (e.g. Sloth's
/// `slo:period_error_budget_remaining:ratio{sloth_service="checkout"}`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct RemainingBudgetQuery {
    /// What the reasons call it (1–64 characters).
    pub name: String,
    /// An instant query whose one number is the share of the budget left.
    pub query: String,
}

/// A budget's remaining share as a CloudWatch metric gives it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct RemainingBudgetMetric {
    /// What the reasons call it (1–64 characters).
    pub name: String,
    pub namespace: String,
    pub metric_name: String,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub dimensions: BTreeMap<String, String>,
    /// Default `Average`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stat: Option<String>,
    /// Default 60.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub period_seconds: Option<i64>,
    /// How far back its latest datapoint may be, seconds (default 900): older, it has no data.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lookback_seconds: Option<i64>,
}

impl RemainingBudgetMetric {
    pub fn stat(&self) -> &str {
        self.stat.as_deref().unwrap_or("Average")
    }

    pub fn period_seconds(&self) -> i64 {
        self.period_seconds.unwrap_or(60)
    }

    pub fn lookback_seconds(&self) -> i64 {
        self.lookback_seconds.unwrap_or(900)
    }
}

/// Longest remaining-budget query: it is read at every hold look.
const MAX_BUDGET_QUERY_BYTES: usize = 2_048;

/// The SRE workbook's page-worthy burn: 14.4 times the pace that spends a 30-day budget in 30
/// days (2 % of it in an hour), over an hour and over five minutes.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct FastBurn {
    /// Times the sustainable pace (default 14.4; 0: off).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rate: Option<f64>,
    /// The long window, seconds (300 to 86,400; default 3,600, or the rollout's whole bake
    /// where that is shorter).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub long_window_seconds: Option<u32>,
    /// The short window, seconds (60 to the long one; default a twelfth of the long one, at
    /// least 60).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub short_window_seconds: Option<u32>,
}

/// The default share of an SLO's budget one rollout may spend, percent.
pub const DEFAULT_ROLLOUT_SHARE: f64 = 2.0;
/// The default fast burn rate.
pub const DEFAULT_BURN_RATE: f64 = 14.4;
const DEFAULT_LONG_WINDOW_SECONDS: u32 = 3_600;
const MAX_LONG_WINDOW_SECONDS: u32 = 86_400;
/// The slow burn a fleet's soak judges (the SRE workbook's second pair): 6× over 6 h and 30 min.
pub const SLOW_BURN_RATE: f64 = 6.0;
const SLOW_LONG_WINDOW_SECONDS: u32 = 21_600;

/// The fast burn's windows and rate, as a check applies them.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct BurnWindows {
    pub rate: f64,
    pub long_seconds: u32,
    pub short_seconds: u32,
}

/// A remaining budget's name, as the reasons say it.
fn check_name(path: &str, name: &str, errors: &mut Errors) {
    if name.is_empty() || name.len() > 64 {
        errors.push(
            path,
            format!("must be 1 to 64 characters, got {}", name.len()),
        );
    }
}

/// An SLO reference as Application Signals takes it: a name (`[0-9A-Za-z][-._0-9A-Za-z
/// ]{0,126}[0-9A-Za-z]`) or an SLO ARN (`arn:aws:application-signals:<region>:<account>:slo/<name>`).
pub fn is_slo_reference(reference: &str) -> bool {
    match slo_arn_parts(reference) {
        Some(_) => true,
        None => !reference.starts_with("arn:") && is_slo_name(reference),
    }
}

/// The Region and account of an SLO ARN; `None` for a name or anything else.
pub fn slo_arn_parts(reference: &str) -> Option<(&str, &str)> {
    let rest = reference.strip_prefix("arn:")?;
    let parts: Vec<&str> = rest.splitn(5, ':').collect();
    match parts.as_slice() {
        [partition, "application-signals", region, account, resource]
            if partition.starts_with("aws")
                && arn::is_region(region)
                && account.len() == 12
                && account.chars().all(|c| c.is_ascii_digit())
                && resource.strip_prefix("slo/").is_some_and(is_slo_name) =>
        {
            Some((region, account))
        }
        _ => None,
    }
}

fn is_slo_name(name: &str) -> bool {
    let inner_ok = |c: char| c.is_ascii_alphanumeric() || matches!(c, '-' | '.' | '_' | ' ');
    let bytes = name.as_bytes();
    (2..=128).contains(&name.len())
        && bytes[0].is_ascii_alphanumeric()
        && bytes[bytes.len() - 1].is_ascii_alphanumeric()
        && name.chars().all(inner_ok)
}

impl ErrorBudgetSection {
    /// The percent of an SLO's budget under which the rollout holds.
    pub fn min_remaining_percent(&self) -> f64 {
        self.min_remaining_percent.unwrap_or(0.0)
    }

    /// The rollout's share of an SLO's budget, percent; 0: not judged.
    pub fn rollout_share(&self) -> f64 {
        self.rollout_share.unwrap_or(DEFAULT_ROLLOUT_SHARE)
    }

    /// The fast burn a check applies, its windows cut to `bake_seconds` (the rollout's whole
    /// bake) where that is shorter than the long window the plan leaves to the default;
    /// `None`: off.
    pub fn burn_windows(&self, bake_seconds: u64) -> Option<BurnWindows> {
        let burn = self.fast_burn.unwrap_or_default();
        let rate = burn.rate.unwrap_or(DEFAULT_BURN_RATE);
        if rate <= 0.0 {
            return None;
        }
        let long_seconds = burn.long_window_seconds.unwrap_or_else(|| {
            let bake = u32::try_from(bake_seconds).unwrap_or(u32::MAX);
            DEFAULT_LONG_WINDOW_SECONDS.min(bake).max(300)
        });
        let short_seconds = burn
            .short_window_seconds
            .unwrap_or((long_seconds / 12).max(60));
        Some(BurnWindows {
            rate,
            long_seconds,
            short_seconds,
        })
    }

    /// The slow burn a fleet's soak of `soak_seconds` judges each promoted cell's new cluster by:
    /// 6× over 6 h and 30 min, the long window no longer than the soak (at least 300 s) and the
    /// short one a twelfth of it (at least 60 s). `None` when the plan turns the fast burn off.
    pub fn slow_burn_windows(&self, soak_seconds: u64) -> Option<BurnWindows> {
        self.burn_windows(u64::MAX)?;
        let soak = u32::try_from(soak_seconds).unwrap_or(u32::MAX);
        let long_seconds = SLOW_LONG_WINDOW_SECONDS.min(soak).max(300);
        Some(BurnWindows {
            rate: SLOW_BURN_RATE,
            long_seconds,
            short_seconds: (long_seconds / 12).max(60),
        })
    }

    /// Whether the checks count the new cluster's requests against the SLOs (a share or the
    /// fast burn is on).
    pub fn judges_the_canary(&self) -> bool {
        self.rollout_share() > 0.0 || self.burn_windows(u64::MAX).is_some()
    }

    pub(crate) fn validate(&self, errors: &mut Errors) {
        let budgets = self.slos.len() + self.prometheus.len() + self.cloudwatch.len();
        if budgets == 0 {
            errors.push(
                "errorBudget.slos",
                "name at least one SLO (or a remaining budget in errorBudget.prometheus or .cloudwatch)",
            );
        } else if budgets > MAX_SLOS {
            errors.push(
                "errorBudget.slos",
                format!(
                    "at most {MAX_SLOS} SLOs and remaining-budget queries together, got {budgets}"
                ),
            );
        }
        for (i, metric) in self.cloudwatch.iter().enumerate() {
            let path = format!("errorBudget.cloudwatch[{i}]");
            check_name(&format!("{path}.name"), &metric.name, errors);
            if metric.namespace.is_empty() || metric.metric_name.is_empty() {
                errors.push(path.clone(), "give its namespace and metricName");
            }
            check_stat(&format!("{path}.stat"), metric.stat(), errors);
            check_period_and_lookback(
                &path,
                metric.period_seconds(),
                metric.lookback_seconds(),
                errors,
            );
        }
        for (i, budget) in self.prometheus.iter().enumerate() {
            check_name(
                &format!("errorBudget.prometheus[{i}].name"),
                &budget.name,
                errors,
            );
            if budget.query.trim().is_empty() || budget.query.len() > MAX_BUDGET_QUERY_BYTES {
                errors.push(
                    format!("errorBudget.prometheus[{i}].query"),
                    format!("must be a PromQL query of 1 to {MAX_BUDGET_QUERY_BYTES} bytes"),
                );
            }
        }
        let mut seen = std::collections::BTreeSet::new();
        for (i, slo) in self.slos.iter().enumerate() {
            if !is_slo_reference(slo) {
                errors.push(
                    format!("errorBudget.slos[{i}]"),
                    format!(
                        "`{slo}` is not an SLO name (2–128 letters, digits, '-', '.', '_' or spaces, \
                         starting and ending with a letter or digit) nor an SLO ARN such as \
                         arn:aws:application-signals:us-east-1:111122223333:slo/checkout-availability"
                    ),
                );
            } else if !seen.insert(slo.as_str()) {
                errors.push(
                    format!("errorBudget.slos[{i}]"),
                    format!("`{slo}` is named twice"),
                );
            }
        }
        if let Some(percent) = self.min_remaining_percent {
            if !(0.0..100.0).contains(&percent) {
                errors.push(
                    "errorBudget.minRemainingPercent",
                    format!(
                        "must be from 0 to under 100 (percent of the SLO's budget), got {percent}"
                    ),
                );
            }
        }
        if let Some(share) = self.rollout_share {
            if !(0.0..=100.0).contains(&share) {
                errors.push(
                    "errorBudget.rolloutShare",
                    format!(
                        "must be from 0 (off) to 100 (percent of each SLO's budget), got {share}"
                    ),
                );
            }
        }
        if let Some(burn) = &self.fast_burn {
            if let Some(rate) = burn.rate.filter(|r| !(0.0..=1_000.0).contains(r)) {
                errors.push(
                    "errorBudget.fastBurn.rate",
                    format!(
                        "must be from 0 (off) to 1000 (times the sustainable pace), got {rate}"
                    ),
                );
            }
            let long = burn.long_window_seconds;
            if let Some(long) = long.filter(|l| !(300..=MAX_LONG_WINDOW_SECONDS).contains(l)) {
                errors.push(
                    "errorBudget.fastBurn.longWindowSeconds",
                    format!("must be from 300 to {MAX_LONG_WINDOW_SECONDS} seconds, got {long}"),
                );
            }
            if let Some(short) = burn.short_window_seconds {
                let most = long.unwrap_or(DEFAULT_LONG_WINDOW_SECONDS);
                if !(60..=most).contains(&short) {
                    errors.push(
                        "errorBudget.fastBurn.shortWindowSeconds",
                        format!("must be from 60 to the long window's {most} seconds, got {short}"),
                    );
                }
            }
        }
        if let Some(role) = self
            .role_arn
            .as_deref()
            .filter(|r| !arn::is_iam_role_arn(r))
        {
            errors.push(
                "errorBudget.roleArn",
                format!("`{role}` is not an IAM role ARN such as arn:aws:iam::111122223333:role/slo-reader"),
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slo_references() {
        for good in [
            "checkout-availability",
            "Checkout latency p99",
            "a1",
            "arn:aws:application-signals:us-east-1:111122223333:slo/checkout-availability",
        ] {
            assert!(is_slo_reference(good), "{good}");
        }
        for bad in [
            "a",
            "-leading",
            "trailing ",
            "has/slash",
            "arn:aws:application-signals:us-east-1:111122223333:service/x1",
            "arn:aws:application-signals:nowhere:111122223333:slo/x1",
            "arn:aws:cloudwatch:us-east-1:111122223333:slo/x1",
        ] {
            assert!(!is_slo_reference(bad), "{bad}");
        }
        assert_eq!(
            slo_arn_parts("arn:aws:application-signals:eu-west-1:111122223333:slo/x1"),
            Some(("eu-west-1", "111122223333"))
        );
        assert_eq!(slo_arn_parts("x1"), None);
    }

    #[test]
    fn the_burns_windows_default_to_an_hour_and_five_minutes_or_the_rollouts_bake() {
        let section = ErrorBudgetSection::default();
        let hour = section.burn_windows(7_200).expect("on by default");
        assert_eq!(
            (hour.rate, hour.long_seconds, hour.short_seconds),
            (14.4, 3_600, 300)
        );
        let short = section.burn_windows(1_200).expect("on");
        assert_eq!((short.long_seconds, short.short_seconds), (1_200, 100));
        let tiny = section.burn_windows(30).expect("on");
        assert_eq!((tiny.long_seconds, tiny.short_seconds), (300, 60));
        let off = ErrorBudgetSection {
            fast_burn: Some(FastBurn {
                rate: Some(0.0),
                ..FastBurn::default()
            }),
            rollout_share: Some(0.0),
            ..ErrorBudgetSection::default()
        };
        assert_eq!(off.burn_windows(7_200), None);
        assert!(!off.judges_the_canary());
        assert!(section.judges_the_canary());
    }

    #[test]
    fn a_soaks_slow_burn_is_6_times_over_6_hours_and_30_minutes_or_the_soak() {
        let section = ErrorBudgetSection::default();
        let day = section.slow_burn_windows(86_400).expect("on by default");
        assert_eq!(
            (day.rate, day.long_seconds, day.short_seconds),
            (6.0, 21_600, 1_800)
        );
        let soak = section.slow_burn_windows(900).expect("on");
        assert_eq!((soak.long_seconds, soak.short_seconds), (900, 75));
        let none = section.slow_burn_windows(0).expect("on");
        assert_eq!((none.long_seconds, none.short_seconds), (300, 60));
        let off = ErrorBudgetSection {
            fast_burn: Some(FastBurn {
                rate: Some(0.0),
                ..FastBurn::default()
            }),
            ..ErrorBudgetSection::default()
        };
        assert_eq!(off.slow_burn_windows(86_400), None);
    }
}
