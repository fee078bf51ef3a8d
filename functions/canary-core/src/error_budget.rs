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

use crate::limits;
use crate::plan::{ErrorBudgetSection, OnInsufficientData};

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
            };
            if budget.remaining < 0 {
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

#[cfg(test)]
mod tests {
    use super::*;

    fn report(status: &str, total: i64, remaining: i64) -> SloBudget {
        SloBudget {
            name: "checkout-availability".to_owned(),
            status: BudgetStatus::parse(status),
            attainment: Some(99.95),
            goal: Some(99.9),
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
            role_arn: None,
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
    fn plan_check_lines() {
        let line = SloReading::Report(report("OK", 4_320, 2_100)).line();
        assert_eq!(
            line,
            "SLO checkout-availability: OK, attainment 99.950 % (goal 99.9 %), 2,100 of 4,320 requests of budget left (49 %)"
        );
    }
}
