//! Error budgets: what the plan's Application Signals SLOs (`crate::plan::ErrorBudgetSection`)
//! do to a rollout.
//!
//! An SRE team's first question about a change is how much of the service's error budget it
//! may spend. While an SLO's budget is spent (its report says BREACHED) or below the plan's
//! `minRemainingPercent`, the rollout moves no traffic forward: each reason below joins the
//! change freezes' reading (`crate::freeze`), so it holds at the gate before the first step and
//! at the end of every step's bake, within `freeze.maxFrozenSeconds`, and says why. A report
//! that cannot be read holds too (unknown is not "budget left"). Holding never moves traffic
//! back: a failing check, an alarm and the safety net roll back as ever.
//!
//! The rollout's own part: at the gate's last look (the rollout's start) each request-based SLO
//! gives the rollout a share of its budget ([`RolloutBudget`]), and every check counts the new
//! cluster's own bad requests against it ([`judge_share`]) and against the fast burn
//! ([`judge_burn`]): its 5xx for an availability SLO, its requests slower than the SLI's threshold
//! for a latency one. Both fail critical: the new cluster alone is spending what the whole
//! service may spend.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::analysis::{CheckOutcome, CheckVerdict};
use crate::limits;
use crate::plan::{BurnWindows, ErrorBudgetSection, OnInsufficientData};

/// An SLO's `BudgetStatus`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BudgetStatus {
    Ok,
    Warning,
    Breached,
    InsufficientData,
    /// A status this version does not know (the API may add one): held, as unknown.
    Other(String),
}

impl BudgetStatus {
    pub fn parse(status: &str) -> BudgetStatus {
        match status {
            "OK" => BudgetStatus::Ok,
            "WARNING" => BudgetStatus::Warning,
            "BREACHED" => BudgetStatus::Breached,
            "INSUFFICIENT_DATA" => BudgetStatus::InsufficientData,
            other => BudgetStatus::Other(other.to_owned()),
        }
    }

    fn as_str(&self) -> &str {
        match self {
            BudgetStatus::Ok => "OK",
            BudgetStatus::Warning => "WARNING",
            BudgetStatus::Breached => "BREACHED",
            BudgetStatus::InsufficientData => "INSUFFICIENT_DATA",
            BudgetStatus::Other(other) => other,
        }
    }
}

/// What an SLO's budget is counted in: requests (a request-based SLO) or seconds of good
/// periods (a period-based one).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BudgetUnit {
    Requests,
    Seconds,
    /// Percent of the budget: a remaining share a Prometheus query gives (total 100).
    Percent,
}

/// An SLO's budget over its interval, and what is left of it (negative once spent past it).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Budget {
    pub unit: BudgetUnit,
    pub total: i64,
    pub remaining: i64,
}

impl Budget {
    /// The percent of the budget left; `None` for a budget of 0 (a goal of 100 %).
    pub fn remaining_percent(&self) -> Option<f64> {
        (self.total > 0).then(|| self.remaining as f64 * 100.0 / self.total as f64)
    }
}

/// One SLO's budget report (`BatchGetServiceLevelObjectiveBudgetReport`).
#[derive(Debug, Clone, PartialEq)]
pub struct SloBudget {
    pub name: String,
    pub status: BudgetStatus,
    /// Percent of good requests or periods over the interval.
    pub attainment: Option<f64>,
    /// The SLO's attainment goal, percent.
    pub goal: Option<f64>,
    pub budget: Option<Budget>,
    /// A latency SLO (its SLI's `MetricType`): its bad requests are slow ones, not 5xx.
    pub latency: bool,
    /// A request-based latency SLO's threshold, seconds: a request slower than it is bad (its
    /// SLI's `MetricThreshold`, good `LessThan`/`LessThanOrEqualTo` it). `None` elsewhere.
    pub slower_than_seconds: Option<f64>,
    /// A period-based SLO (`EvaluationType` PeriodBased): its budget is in seconds of bad
    /// periods, not in requests.
    pub period_based: bool,
}

/// What was learnt of one of the plan's SLOs: its report, or why there is none.
#[derive(Debug, Clone, PartialEq)]
pub enum SloReading {
    Report(SloBudget),
    /// The SLO (as the plan names it) could not be read: an error of the batch for it, or of
    /// the whole call.
    Unread {
        slo: String,
        error: String,
    },
}

fn thousands(n: i64) -> String {
    let digits = n.unsigned_abs().to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    if n < 0 {
        format!("-{out}")
    } else {
        out
    }
}

impl SloBudget {
    /// `BREACHED, attainment 99.620 % (goal 99.9 %), its budget of 4,320 requests overspent by
    /// 1,234`, or `OK, ..., 2,100 of 4,320 requests of budget left (49 %)`.
    pub fn describe(&self) -> String {
        let mut parts = Vec::new();
        match (self.attainment, self.goal) {
            (Some(a), Some(g)) => parts.push(format!("attainment {a:.3} % (goal {g} %)")),
            (Some(a), None) => parts.push(format!("attainment {a:.3} %")),
            _ => {}
        }
        if let Some(budget) = self.budget {
            let unit = match budget.unit {
                BudgetUnit::Requests => "requests",
                BudgetUnit::Seconds => "seconds",
                BudgetUnit::Percent => "percent",
            };
            if budget.unit == BudgetUnit::Percent {
                parts.push(format!("{} % of its budget left", budget.remaining));
            } else if budget.remaining < 0 {
                parts.push(format!(
                    "its budget of {} {unit} overspent by {}",
                    thousands(budget.total),
                    thousands(-budget.remaining)
                ));
            } else {
                let percent = budget
                    .remaining_percent()
                    .map(|p| format!(" ({p:.0} %)"))
                    .unwrap_or_default();
                parts.push(format!(
                    "{} of {} {unit} of budget left{percent}",
                    thousands(budget.remaining),
                    thousands(budget.total)
                ));
            }
        }
        if parts.is_empty() {
            self.status.as_str().to_owned()
        } else {
            format!("{}, {}", self.status.as_str(), parts.join(", "))
        }
    }

    /// Why this SLO holds the rollout; `None` when it leaves it free.
    pub fn holds(&self, section: &ErrorBudgetSection) -> Option<String> {
        let name = &self.name;
        let min = section.min_remaining_percent();
        let why = match &self.status {
            BudgetStatus::Breached => format!("the error budget of SLO {name} is spent"),
            BudgetStatus::InsufficientData
                if section.on_insufficient_data == OnInsufficientData::Go =>
            {
                return None
            }
            BudgetStatus::InsufficientData => format!(
                "SLO {name} has too little data to tell its budget (errorBudget.onInsufficientData: hold)"
            ),
            BudgetStatus::Other(status) => {
                format!("SLO {name} reports a budget status this version does not know ({status})")
            }
            BudgetStatus::Ok | BudgetStatus::Warning => {
                match self.budget.and_then(|b| b.remaining_percent()) {
                    Some(left) if left < min => format!(
                        "SLO {name} has less of its error budget left than errorBudget.minRemainingPercent ({min} %)"
                    ),
                    _ => return None,
                }
            }
        };
        Some(limits::truncate(
            &format!("{why}: {}", self.describe()),
            limits::MAX_LINE_BYTES,
        ))
    }
}

impl SloReading {
    /// Why this reading holds the rollout (an unread report holds: no one can say budget is
    /// left); `None` when it leaves it free.
    pub fn holds(&self, section: &ErrorBudgetSection) -> Option<String> {
        match self {
            SloReading::Report(report) => report.holds(section),
            SloReading::Unread { slo, error } => Some(limits::truncate(
                &format!("the error budget of SLO {slo} could not be read, so it counts as spent: {error}"),
                limits::MAX_LINE_BYTES,
            )),
        }
    }

    /// One line for `plan check`: the SLO and what its report says.
    pub fn line(&self) -> String {
        match self {
            SloReading::Report(report) => format!("SLO {}: {}", report.name, report.describe()),
            SloReading::Unread { slo, error } => format!("SLO {slo}: not read: {error}"),
        }
    }
}

/// Why the plan's SLOs hold the rollout now, one line each (empty: they do not).
pub fn hold_reasons(section: &ErrorBudgetSection, readings: &[SloReading]) -> Vec<String> {
    readings.iter().filter_map(|r| r.holds(section)).collect()
}

/// The reading of a remaining-budget query (`errorBudget.prometheus`): its share of the budget
/// left, none (no data: INSUFFICIENT_DATA), or why it could not be read.
pub fn remaining_reading(name: &str, value: Result<Option<f64>, String>) -> SloReading {
    match value {
        Ok(Some(left)) => SloReading::Report(SloBudget {
            name: name.to_owned(),
            status: if left <= 0.0 {
                BudgetStatus::Breached
            } else {
                BudgetStatus::Ok
            },
            attainment: None,
            goal: None,
            budget: Some(Budget {
                unit: BudgetUnit::Percent,
                total: 100,
                remaining: (left * 100.0).floor().clamp(-1e9, 1e9) as i64,
            }),
            latency: false,
            slower_than_seconds: None,
            period_based: false,
        }),
        Ok(None) => SloReading::Report(SloBudget {
            name: name.to_owned(),
            status: BudgetStatus::InsufficientData,
            attainment: None,
            goal: None,
            budget: None,
            latency: false,
            slower_than_seconds: None,
            period_based: false,
        }),
        Err(error) => SloReading::Unread {
            slo: name.to_owned(),
            error,
        },
    }
}

/// The longest SLO name Application Signals gives: a rollout budget in the state is < 200 B.
const MAX_SLO_NAME_BYTES: usize = 128;

/// The rollout's share of one SLO's budget, fixed when it starts (the gate's last look), as
/// the state carries it to every check.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RolloutBudget {
    /// The SLO's name.
    pub slo: String,
    /// The SLO's attainment goal, percent: the fast burn's pace is the new cluster's share of
    /// bad requests over (100 − goal) %.
    pub goal: f64,
    /// The new cluster's bad requests the rollout may spend: `rolloutShare` percent of the SLO's
    /// budget of requests at the start; `None`: no share judged (`rolloutShare` 0).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub allowed: Option<i64>,
    /// A latency SLO's: the new cluster's bad requests are those slower than this, seconds
    /// (`None`: an availability SLO, whose bad requests are 5xx).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub slower_than: Option<f64>,
}

impl RolloutBudget {
    /// What the new cluster's bad requests are, as the reasons name them.
    pub fn bad_requests(&self) -> String {
        match self.slower_than {
            Some(seconds) => format!("requests slower than {seconds} s"),
            None => "5xx".to_owned(),
        }
    }
}

/// Why an SLO gives the rollout no share nor burn to judge (`plan check` says it); `None`
/// when it does.
pub fn not_judged(reading: &SloReading) -> Option<&'static str> {
    match reading {
        SloReading::Unread { .. } => Some("its report could not be read"),
        SloReading::Report(r) if r.period_based => {
            Some("a period-based SLO: its budget is in seconds, not in requests")
        }
        SloReading::Report(r) if r.latency && r.slower_than_seconds.is_none() => Some(
            "a latency SLO whose SLI gives no MetricThreshold a good request is under: \
             the new cluster's slow requests cannot be counted against it",
        ),
        SloReading::Report(r) => match (r.budget, r.goal) {
            (Some(b), Some(_)) if b.unit == BudgetUnit::Requests && b.total > 0 => None,
            (Some(b), _) if b.unit == BudgetUnit::Percent => {
                Some("a remaining share from Prometheus: no budget of requests")
            }
            _ => Some("its report gives no budget of requests"),
        },
    }
}

/// The rollout's budgets from the SLOs' readings at its start: each request-based SLO with a
/// budget of requests (a latency one with its threshold).
pub fn rollout_budgets(
    section: &ErrorBudgetSection,
    readings: &[SloReading],
) -> Vec<RolloutBudget> {
    if !section.judges_the_canary() {
        return Vec::new();
    }
    let share = section.rollout_share();
    readings
        .iter()
        .filter(|r| not_judged(r).is_none())
        .filter_map(|r| match r {
            SloReading::Report(report) => Some(RolloutBudget {
                // AWS's names are at most 128 characters; the state's budget holds only if so.
                slo: limits::truncate(&report.name, MAX_SLO_NAME_BYTES),
                goal: report.goal?,
                slower_than: report.slower_than_seconds,
                allowed: (share > 0.0)
                    .then(|| {
                        report
                            .budget
                            .map(|b| (b.total as f64 * share / 100.0).floor() as i64)
                    })
                    .flatten(),
            }),
            SloReading::Unread { .. } => None,
        })
        .collect()
}

/// The new cluster's requests and bad requests of one period (its target groups summed), as
/// one SLO counts them: 5xx, or requests slower than its threshold.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CanaryPeriod {
    /// The period's start, epoch seconds.
    pub at: i64,
    pub requests: f64,
    pub bad: f64,
}

/// The rollout's bad requests against its share of `budget`: more than allowed fails, critical.
pub fn judge_share(budget: &RolloutBudget, periods: &[CanaryPeriod]) -> Option<CheckOutcome> {
    let allowed = budget.allowed?;
    let spent = periods.iter().map(|p| p.bad).sum::<f64>().round() as i64;
    let slo = &budget.slo;
    let bad = budget.bad_requests();
    let outcome = if spent > allowed {
        CheckOutcome::new(
            CheckVerdict::Fail,
            format!(
                "the rollout spent its share of SLO {slo}'s error budget: the new cluster's {} {bad} are more than the {} allowed",
                thousands(spent),
                thousands(allowed)
            ),
        )
        .critical(true)
    } else {
        CheckOutcome::new(
            CheckVerdict::Pass,
            format!(
                "the rollout spent {} of its {} {bad} of SLO {slo}'s error budget",
                thousands(spent),
                thousands(allowed)
            ),
        )
    };
    Some(outcome)
}

/// The pace at which `periods` since `since` burn a budget of `goal`: their share of bad
/// requests over (100 − goal) %; `None` without a request.
fn burn_since(periods: &[CanaryPeriod], since: i64, goal: f64) -> Option<f64> {
    let (requests, bad) = periods
        .iter()
        .filter(|p| p.at >= since)
        .fold((0.0, 0.0), |(r, b), p| (r + p.requests, b + p.bad));
    (requests > 0.0).then(|| bad / requests / ((100.0 - goal) / 100.0))
}

/// The new cluster's own burn of `budget` over both windows ending at `now`: at `rate` or more
/// in both fails, critical. A goal of 100 % has no budget to burn (any 5xx breaches it).
pub fn judge_burn(
    budget: &RolloutBudget,
    windows: BurnWindows,
    periods: &[CanaryPeriod],
    now: i64,
) -> Option<CheckOutcome> {
    if budget.goal >= 100.0 {
        return None;
    }
    let slo = &budget.slo;
    let window = |seconds: u32| burn_since(periods, now - i64::from(seconds), budget.goal);
    let named = |seconds: u32| match seconds {
        s if s % 3_600 == 0 => format!("{} h", s / 3_600),
        s if s % 60 == 0 => format!("{} min", s / 60),
        s => format!("{s} s"),
    };
    let (long, short) = (windows.long_seconds, windows.short_seconds);
    let outcome = match (window(long), window(short)) {
        (Some(l), Some(s)) if l >= windows.rate && s >= windows.rate => CheckOutcome::new(
            CheckVerdict::Fail,
            format!(
                "the new cluster burns SLO {slo}'s error budget {l:.1}× over the last {} and {s:.1}× over {}, at least {}× in both",
                named(long),
                named(short),
                windows.rate
            ),
        )
        .critical(true),
        (l, s) => CheckOutcome::new(
            CheckVerdict::Pass,
            format!(
                "the new cluster burns SLO {slo}'s error budget {} over the last {} and {} over {}",
                l.map_or("nothing (no requests)".to_owned(), |l| format!("{l:.1}×")),
                named(long),
                s.map_or("nothing (no requests)".to_owned(), |s| format!("{s:.1}×")),
                named(short)
            ),
        ),
    };
    Some(outcome)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn report(status: &str, total: i64, remaining: i64) -> SloBudget {
        SloBudget {
            name: "checkout-availability".to_owned(),
            status: BudgetStatus::parse(status),
            attainment: Some(99.95),
            goal: Some(99.9),
            latency: false,
            slower_than_seconds: None,
            period_based: false,
            budget: Some(Budget {
                unit: BudgetUnit::Requests,
                total,
                remaining,
            }),
        }
    }

    fn section(min: Option<f64>, on_insufficient_data: OnInsufficientData) -> ErrorBudgetSection {
        ErrorBudgetSection {
            slos: vec!["checkout-availability".to_owned()],
            min_remaining_percent: min,
            on_insufficient_data,
            ..ErrorBudgetSection::default()
        }
    }

    #[test]
    fn a_spent_budget_holds_and_says_how_much_was_spent() {
        let plain = section(None, OnInsufficientData::Hold);
        let spent = report("BREACHED", 4_320, -1_234)
            .holds(&plain)
            .expect("held");
        assert!(
            spent.contains("error budget of SLO checkout-availability is spent"),
            "{spent}"
        );
        assert!(
            spent.contains("its budget of 4,320 requests overspent by 1,234"),
            "{spent}"
        );
        assert_eq!(report("OK", 4_320, 2_000).holds(&plain), None);
        // WARNING is the SLO's own threshold: only the plan's minimum holds.
        assert_eq!(report("WARNING", 4_320, 100).holds(&plain), None);
    }

    #[test]
    fn less_than_the_plans_minimum_left_holds() {
        let quarter = section(Some(25.0), OnInsufficientData::Hold);
        let low = report("WARNING", 4_320, 780).holds(&quarter).expect("held");
        assert!(low.contains("minRemainingPercent (25 %)"), "{low}");
        assert!(
            low.contains("780 of 4,320 requests of budget left (18 %)"),
            "{low}"
        );
        assert_eq!(report("OK", 4_320, 1_080).holds(&quarter), None);
        // A goal of 100 % has no budget to take a share of: only BREACHED holds then.
        assert_eq!(report("OK", 0, 0).holds(&quarter), None);
    }

    #[test]
    fn no_data_holds_unless_the_plan_says_go_and_an_unread_report_always_holds() {
        let insufficient = SloBudget {
            status: BudgetStatus::InsufficientData,
            attainment: None,
            budget: None,
            ..report("OK", 0, 0)
        };
        assert!(insufficient
            .holds(&section(None, OnInsufficientData::Hold))
            .is_some_and(|r| r.contains("too little data")));
        assert_eq!(
            insufficient.holds(&section(None, OnInsufficientData::Go)),
            None
        );
        let unread = SloReading::Unread {
            slo: "checkout-availability".to_owned(),
            error: "ThrottlingException: Rate exceeded".to_owned(),
        };
        let why = unread
            .holds(&section(None, OnInsufficientData::Go))
            .expect("held");
        assert!(
            why.contains("could not be read, so it counts as spent"),
            "{why}"
        );
        let unknown = report("FROZEN_SOLID", 10, 10);
        assert!(unknown
            .holds(&section(None, OnInsufficientData::Go))
            .is_some_and(|r| r.contains("does not know (FROZEN_SOLID)")));
    }

    #[test]
    fn every_reason_is_one_bounded_line() {
        let long = SloReading::Unread {
            slo: "x".repeat(128),
            error: "e".repeat(10_000),
        };
        let why = long
            .holds(&section(None, OnInsufficientData::Hold))
            .expect("held");
        assert!(why.len() <= limits::MAX_LINE_BYTES, "{}", why.len());
    }

    #[test]
    fn a_rollout_takes_its_share_of_each_request_based_slo_with_a_budget_of_requests() {
        let plain = section(None, OnInsufficientData::Hold);
        let latency = SloBudget {
            name: "checkout-latency".to_owned(),
            latency: true,
            slower_than_seconds: Some(0.5),
            ..report("OK", 4_320, 4_000)
        };
        let latency_without_threshold = SloBudget {
            name: "checkout-latency-counts".to_owned(),
            latency: true,
            ..report("OK", 4_320, 4_000)
        };
        let periods = SloBudget {
            name: "checkout-periods".to_owned(),
            period_based: true,
            budget: Some(Budget {
                unit: BudgetUnit::Seconds,
                total: 600,
                remaining: 600,
            }),
            ..report("OK", 0, 0)
        };
        let readings = [
            SloReading::Report(report("OK", 4_320, 2_100)),
            SloReading::Report(latency),
            SloReading::Report(periods),
            SloReading::Report(latency_without_threshold),
        ];
        assert_eq!(
            rollout_budgets(&plain, &readings),
            [
                RolloutBudget {
                    slo: "checkout-availability".to_owned(),
                    goal: 99.9,
                    allowed: Some(86),
                    slower_than: None,
                },
                RolloutBudget {
                    slo: "checkout-latency".to_owned(),
                    goal: 99.9,
                    allowed: Some(86),
                    slower_than: Some(0.5),
                }
            ]
        );
        assert!(not_judged(&readings[2]).is_some_and(|w| w.contains("period-based")));
        assert!(not_judged(&readings[3]).is_some_and(|w| w.contains("no MetricThreshold")));
        let burn_only = ErrorBudgetSection {
            rollout_share: Some(0.0),
            ..plain.clone()
        };
        assert_eq!(rollout_budgets(&burn_only, &readings)[0].allowed, None);
    }

    fn minute(at: i64, requests: f64, bad: f64) -> CanaryPeriod {
        CanaryPeriod { at, requests, bad }
    }

    #[test]
    fn the_share_fails_critical_once_the_new_clusters_5xx_pass_it() {
        let budget = RolloutBudget {
            slo: "checkout-availability".to_owned(),
            goal: 99.9,
            allowed: Some(86),
            slower_than: None,
        };
        let within = judge_share(
            &budget,
            &[minute(0, 1_000.0, 40.0), minute(60, 1_000.0, 46.0)],
        )
        .expect("judged");
        assert_eq!(within.verdict, CheckVerdict::Pass, "{}", within.reason);
        assert!(
            within.reason.contains("spent 86 of its 86 5xx"),
            "{}",
            within.reason
        );
        let spent = judge_share(&budget, &[minute(0, 1_000.0, 87.0)]).expect("judged");
        assert_eq!((spent.verdict, spent.critical), (CheckVerdict::Fail, true));
        assert!(
            spent.reason.contains("87 5xx are more than the 86 allowed"),
            "{}",
            spent.reason
        );
        let slow = RolloutBudget {
            slower_than: Some(0.5),
            ..budget.clone()
        };
        let spent = judge_share(&slow, &[minute(0, 1_000.0, 87.0)]).expect("judged");
        assert!(
            spent
                .reason
                .contains("87 requests slower than 0.5 s are more than the 86 allowed"),
            "{}",
            spent.reason
        );
        let off = RolloutBudget {
            allowed: None,
            ..budget
        };
        assert_eq!(judge_share(&off, &[minute(0, 1.0, 1.0)]), None);
    }

    #[test]
    fn the_fast_burn_fails_only_when_both_windows_burn_at_the_rate() {
        let budget = RolloutBudget {
            slo: "checkout-availability".to_owned(),
            goal: 99.9,
            allowed: None,
            slower_than: None,
        };
        let windows = BurnWindows {
            rate: 14.4,
            long_seconds: 3_600,
            short_seconds: 300,
        };
        let now = 10_000;
        // 2 % of requests fail: 20× the pace of a 99.9 % goal, over the hour and the last 5 min.
        let burning: Vec<CanaryPeriod> = (0..60)
            .map(|m| minute(now - 3_600 + m * 60, 1_000.0, 20.0))
            .collect();
        let fails = judge_burn(&budget, windows, &burning, now).expect("judged");
        assert_eq!(
            (fails.verdict, fails.critical),
            (CheckVerdict::Fail, true),
            "{}",
            fails.reason
        );
        assert!(
            fails
                .reason
                .contains("20.0× over the last 1 h and 20.0× over 5 min"),
            "{}",
            fails.reason
        );
        // A burst of the last five minutes alone: the hour has not burnt at the rate.
        let mut burst: Vec<CanaryPeriod> = (0..55)
            .map(|m| minute(now - 3_600 + m * 60, 1_000.0, 0.0))
            .collect();
        burst.extend((55..60).map(|m| minute(now - 3_600 + m * 60, 1_000.0, 100.0)));
        assert_eq!(
            judge_burn(&budget, windows, &burst, now)
                .expect("judged")
                .verdict,
            CheckVerdict::Pass
        );
        let quiet = judge_burn(&budget, windows, &[], now).expect("judged");
        assert!(
            quiet.reason.contains("nothing (no requests)"),
            "{}",
            quiet.reason
        );
        let perfect = RolloutBudget {
            goal: 100.0,
            ..budget
        };
        assert_eq!(judge_burn(&perfect, windows, &burning, now), None);
    }

    #[test]
    fn a_remaining_share_from_prometheus_holds_when_spent_or_under_the_minimum() {
        let quarter = section(Some(25.0), OnInsufficientData::Hold);
        let spent = remaining_reading("checkout", Ok(Some(-0.2)));
        let why = spent.holds(&quarter).expect("held");
        assert!(
            why.contains(
                "the error budget of SLO checkout is spent: BREACHED, -20 % of its budget left"
            ),
            "{why}"
        );
        let low = remaining_reading("checkout", Ok(Some(0.18)));
        assert!(low
            .holds(&quarter)
            .is_some_and(|w| w.contains("minRemainingPercent (25 %)")));
        assert_eq!(
            remaining_reading("checkout", Ok(Some(0.6))).holds(&quarter),
            None
        );
        assert!(remaining_reading("checkout", Ok(None))
            .holds(&quarter)
            .is_some_and(|w| w.contains("too little data")));
        assert!(remaining_reading("checkout", Err("503".to_owned()))
            .holds(&quarter)
            .is_some_and(|w| w.contains("could not be read")));
        assert!(not_judged(&low).is_some_and(|w| w.contains("Prometheus")));
        assert!(rollout_budgets(&quarter, &[low]).is_empty());
    }

    #[test]
    fn plan_check_lines() {
        let line = SloReading::Report(report("OK", 4_320, 2_100)).line();
        assert_eq!(
            line,
            "SLO checkout-availability: OK, attainment 99.950 % (goal 99.9 %), 2,100 of 4,320 requests of budget left (49 %)"
        );
    }
}
