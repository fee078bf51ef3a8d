//! Change freezes: what one does to a rollout, the stack's freeze switch, and the gate before
//! the first step (the plan's side is `crate::plan::FreezeSection`).
//!
//! While a calendar is CLOSED, or the stack's freeze switch is on (`cluster-canary freeze`), a
//! rollout moves no traffic forward: before its first step it waits (`FreezeGate`), at the end
//! of a step's bake it keeps the step and goes on checking. A failed check, an alarm, an abort
//! and the safety net are never held. A hold longer than the bound rolls back ("frozen too
//! long"), or before any traffic moved ends the rollout with nothing changed.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::analysis::{BakeProgress, Decision};
use crate::error_budget::RolloutBudget;
use crate::limits;

pub use crate::plan::{FreezeSection, DEFAULT_MAX_FROZEN_SECONDS};

/// The stack's freeze switch, as `cluster-canary freeze` writes it into the stack's SSM
/// parameter (`FREEZE_PARAMETER`): one write freezes every rollout and fleet of the stack.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct FreezeSwitch {
    pub frozen: bool,
    /// Why, as the person who froze said it.
    #[serde(default)]
    pub reason: String,
    /// When it was turned on or off, RFC 3339 UTC.
    #[serde(default)]
    pub since: String,
    /// Who turned it (`--by`, else $USER).
    #[serde(default)]
    pub by: String,
}

/// Most bytes of a freeze's reason: it is shown in every held rollout's check.
pub const MAX_FREEZE_REASON_BYTES: usize = 256;

impl FreezeSwitch {
    /// Why the switch freezes a rollout, in one line.
    pub fn reason_line(&self) -> String {
        format!(
            "the stack's freeze switch is on since {} (by {}: {})",
            self.since,
            self.by,
            limits::truncate(&self.reason, MAX_FREEZE_REASON_BYTES)
        )
    }
}

/// Why a rollout is held now: one line per CLOSED calendar, the switch or an open AWS Health
/// issue, and one per SLO of the plan whose error budget holds it (`crate::error_budget`).
/// Both empty: not held.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct FreezeReading {
    pub reasons: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub budgets: Vec<String>,
}

impl FreezeReading {
    pub fn frozen(&self) -> bool {
        !self.reasons.is_empty() || !self.budgets.is_empty()
    }

    pub fn summary(&self) -> String {
        self.reasons
            .iter()
            .chain(&self.budgets)
            .map(String::as_str)
            .collect::<Vec<_>>()
            .join("; ")
    }

    /// What holds the rollout, in words people read in the gate's and the checks' reasons
    /// (`cluster-canary watch` and `report` name the hold by them).
    pub fn holder(&self) -> &'static str {
        match (self.reasons.is_empty(), self.budgets.is_empty()) {
            (false, false) => HELD_BY_BOTH,
            (true, false) => HELD_BY_BUDGET,
            _ => HELD_BY_FREEZE,
        }
    }
}

/// The holders a hold's reason names (`FreezeReading::holder`).
pub const HELD_BY_FREEZE: &str = "a change freeze";
pub const HELD_BY_BUDGET: &str = "the error budget";
pub const HELD_BY_BOTH: &str = "a change freeze and the error budget";

/// What a freeze does to a rollout that would move now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FreezeHold {
    /// Not frozen: go on.
    Go,
    /// Frozen: stay where it is; `since` (epoch seconds) is when this hold began.
    Hold { since: u64, reason: String },
    /// Held longer than the bound: roll back (or end before traffic).
    TooLong { since: u64, reason: String },
}

/// The hold of a rollout that `reading` finds frozen (or not), held since `since` (0: not held
/// before this look), at `now`, with `bound` seconds allowed.
pub fn hold(reading: &FreezeReading, since: u64, now: u64, bound: u32) -> FreezeHold {
    if !reading.frozen() {
        return FreezeHold::Go;
    }
    let since = if since == 0 { now } else { since };
    let held = now.saturating_sub(since);
    // The stack may name any number of calendars: the reason that goes into the verdict, the
    // gate's answer and the events is one bounded line.
    let why = limits::truncate(&reading.summary(), limits::MAX_SUMMARY_BYTES / 2);
    let holder = reading.holder();
    if held > u64::from(bound) {
        FreezeHold::TooLong {
            since,
            reason: format!(
                "frozen too long: held {held} s by {holder} ({why}), over the plan's bound of {bound} s (freeze.maxFrozenSeconds)"
            ),
        }
    } else {
        FreezeHold::Hold {
            since,
            reason: format!(
                "frozen: {holder} holds the rollout where it is ({why}), held {held} s of at most {bound} s"
            ),
        }
    }
}

impl Decision {
    /// This check's decision with a freeze's hold applied: a check that does not roll back and
    /// ends the step's bake (`progress.last_check()`) is held while frozen (not counted, so the
    /// bake takes one more check and the step stays), and rolls back once held too long. A
    /// rollback is never held.
    pub fn with_freeze(mut self, progress: BakeProgress, hold: FreezeHold) -> Decision {
        if self.rollback {
            return self;
        }
        match hold {
            FreezeHold::Go => {
                self.frozen_since = 0;
                return self;
            }
            FreezeHold::Hold { since, reason } => {
                self.check = progress.check.saturating_sub(1);
                self.frozen_since = since;
                self.ask = false;
                self.reasons.push(reason);
            }
            FreezeHold::TooLong { reason, .. } => {
                self.rollback = true;
                self.frozen_too_long = true;
                self.ask = false;
                self.reasons.push(reason);
            }
        }
        self.summary = limits::truncate(&self.reasons.join("; "), limits::MAX_SUMMARY_BYTES);
        self
    }
}

/// What the gate before the first step answers (`freezeGate`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct FreezeGate {
    /// Frozen now: the rollout waits `intervalSeconds` and looks again.
    pub frozen: bool,
    /// Held longer than the plan's bound: the rollout ends with nothing moved.
    pub too_long: bool,
    /// Since when the gate holds the rollout (epoch seconds); 0: it does not.
    pub since: u64,
    /// Why, in one bounded line.
    pub reason: String,
    pub interval_seconds: u32,
    /// The rollout's share of each SLO of the plan's `errorBudget`, fixed at the look that
    /// lets it go (`crate::error_budget`): every check counts the new cluster's 5xx against it.
    #[serde(default)]
    pub budgets: Vec<RolloutBudget>,
}

impl FreezeGate {
    pub fn of(hold: FreezeHold, interval_seconds: u32) -> FreezeGate {
        let (frozen, too_long, since, reason) = match hold {
            FreezeHold::Go => (false, false, 0, "no change freeze".to_owned()),
            FreezeHold::Hold { since, reason } => (true, false, since, reason),
            FreezeHold::TooLong { since, reason } => (true, true, since, reason),
        };
        FreezeGate {
            frozen,
            too_long,
            since,
            reason: limits::truncate(&reason, limits::MAX_SUMMARY_BYTES),
            interval_seconds,
            budgets: Vec::new(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frozen(reason: &str) -> FreezeReading {
        FreezeReading {
            reasons: vec![reason.to_owned()],
            ..Default::default()
        }
    }

    #[test]
    fn a_held_check_is_not_counted_and_a_rollback_is_never_held() {
        let progress = BakeProgress {
            check: 5,
            checks: 5,
            ..Default::default()
        };
        let passing = crate::analysis::decide(None, &[], progress);
        let reading = frozen("calendar holiday-freeze is CLOSED");
        let held = passing
            .clone()
            .with_freeze(progress, hold(&reading, 0, 1_000, 60));
        assert_eq!(
            (held.check, held.frozen_since, held.rollback),
            (4, 1_000, false)
        );
        assert!(
            held.summary
                .contains("frozen: a change freeze holds the rollout"),
            "{}",
            held.summary
        );
        let released = passing.clone().with_freeze(progress, FreezeHold::Go);
        assert_eq!((released.check, released.frozen_since), (5, 0));
        let too_long = passing.with_freeze(progress, hold(&reading, 1, 1_000, 60));
        assert!(too_long.rollback);
        assert!(
            too_long.summary.contains("frozen too long"),
            "{}",
            too_long.summary
        );
        let mut failing = crate::analysis::decide(None, &[], progress);
        failing.rollback = true;
        let kept = failing
            .clone()
            .with_freeze(progress, hold(&reading, 0, 1_000, 60));
        assert_eq!(kept, failing);
    }

    #[test]
    fn a_hold_starts_goes_on_and_ends_too_long() {
        assert_eq!(
            hold(&FreezeReading::default(), 100, 200, 60),
            FreezeHold::Go
        );
        let reading = frozen("calendar holiday-freeze is CLOSED");
        assert!(matches!(
            hold(&reading, 0, 1_000, 60),
            FreezeHold::Hold { since: 1_000, .. }
        ));
        assert!(matches!(
            hold(&reading, 1_000, 1_060, 60),
            FreezeHold::Hold { since: 1_000, .. }
        ));
        let FreezeHold::TooLong { reason, .. } = hold(&reading, 1_000, 1_061, 60) else {
            panic!("past the bound")
        };
        assert!(reason.contains("frozen too long: held 61 s"), "{reason}");
        assert!(reason.contains("holiday-freeze"), "{reason}");
        let many = FreezeReading {
            reasons: (0..1_000)
                .map(|i| format!("Change Calendar freeze-{i} is CLOSED"))
                .collect(),
            ..Default::default()
        };
        let FreezeHold::Hold { reason, .. } = hold(&many, 0, 1_000, 60) else {
            panic!("held")
        };
        assert!(reason.len() < limits::MAX_SUMMARY_BYTES, "{}", reason.len());
    }

    #[test]
    fn a_hold_names_what_holds_it() {
        let spent = "the error budget of SLO checkout is spent".to_owned();
        let budget = FreezeReading {
            budgets: vec![spent.clone()],
            ..Default::default()
        };
        let FreezeHold::Hold { reason, .. } = hold(&budget, 0, 1_000, 60) else {
            panic!("held")
        };
        assert!(
            reason.starts_with("frozen: the error budget holds the rollout where it is (the error budget of SLO checkout is spent)"),
            "{reason}"
        );
        let both = FreezeReading {
            budgets: vec![spent],
            ..frozen("calendar holiday-freeze is CLOSED")
        };
        assert_eq!(both.holder(), HELD_BY_BOTH);
        assert_eq!(
            both.summary(),
            "calendar holiday-freeze is CLOSED; the error budget of SLO checkout is spent"
        );
        let FreezeHold::TooLong { reason, .. } = hold(&both, 1, 1_000, 60) else {
            panic!("too long")
        };
        assert!(
            reason.starts_with(
                "frozen too long: held 999 s by a change freeze and the error budget ("
            ),
            "{reason}"
        );
    }
}
