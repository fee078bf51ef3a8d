//! The plan's `freeze` section: AWS Systems Manager Change Calendars that freeze the rollout,
//! and the bound on how long one freeze may hold it (`crate::freeze` says what a freeze does).
//!
//! The bound is also a history budget: a held step runs one more check per interval, so the
//! checks a freeze may add at every step (and the gate's looks) count toward the plan's cap of
//! [`MAX_TOTAL_CHECKS`] like a bake's.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::steps::ResolvedStep;
use crate::limits::{MAX_FROZEN_SECONDS, MAX_TOTAL_CHECKS};
use crate::validate::Errors;

/// Most Change Calendars a plan names: one `GetCalendarState` call each at every step's end.
pub const MAX_FREEZE_CALENDARS: usize = 5;
/// How long one freeze holds a rollout when the plan does not say: an hour, or less when the
/// plan's checks leave less room in its history budget.
pub const DEFAULT_MAX_FROZEN_SECONDS: u32 = 3_600;

#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct FreezeSection {
    /// Change Calendars (names, or ARNs of calendars shared from another account) that freeze
    /// this rollout while CLOSED, besides the stack's own (`ChangeCalendars`) and its switch.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub calendars: Vec<String>,
    /// How long one freeze may hold the rollout, in seconds, before it rolls back as frozen too
    /// long (before any traffic moved: ends with nothing changed). Default: an hour, or what
    /// the plan's history budget leaves.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_frozen_seconds: Option<i64>,
}

/// What an open AWS Health issue in one of the rollout's Regions does to it (`crate::health`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum OnOpenIssue {
    /// Hold it as a change freeze does: no step forward until the issue is closed, within the
    /// freeze's bound (`freeze.maxFrozenSeconds`).
    #[default]
    Hold,
    /// Roll back: the bake's watch fails at the issue's event (as at an alarm's), and every
    /// check fails while it is open. Before the first step, it holds as `hold` does.
    RollBack,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct AwsHealthSection {
    /// `hold` (the default) or `rollBack`.
    #[serde(default)]
    pub on_open_issue: OnOpenIssue,
}

/// A Change Calendar reference as SSM takes it: a document name (3–128 of `a-zA-Z0-9_-.`) or
/// a document ARN.
pub fn is_calendar_reference(reference: &str) -> bool {
    let name_ok = |name: &str| {
        (3..=128).contains(&name.len())
            && name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'))
    };
    match reference.strip_prefix("arn:") {
        Some(rest) => {
            let parts: Vec<&str> = rest.splitn(5, ':').collect();
            matches!(parts.as_slice(), [partition, "ssm", region, account, resource]
                if partition.starts_with("aws")
                    && crate::arn::is_region(region)
                    && account.len() == 12
                    && account.chars().all(|c| c.is_ascii_digit())
                    && resource.strip_prefix("document/").is_some_and(name_ok))
        }
        None => name_ok(reference),
    }
}

/// Checks a freeze adds per second of one hold, summed over the places a hold may happen:
/// every step's end (one check per step interval) and the gate before the first step (one
/// look per `gate_interval`).
fn checks_per_frozen_second(steps: &[ResolvedStep], gate_interval: u32) -> f64 {
    steps
        .iter()
        .map(|s| 1.0 / f64::from(s.check_interval_seconds.max(1)))
        .sum::<f64>()
        + 1.0 / f64::from(gate_interval.max(1))
}

/// How long one freeze may hold this rollout: the plan's `maxFrozenSeconds`, or the default
/// cut to what the history budget leaves after `checks` (the plan's bakes and waits).
pub fn frozen_bound_seconds(
    section: Option<&FreezeSection>,
    steps: &[ResolvedStep],
    gate_interval: u32,
    checks: u64,
) -> u32 {
    if let Some(seconds) = section.and_then(|s| s.max_frozen_seconds) {
        return u32::try_from(seconds).unwrap_or(0);
    }
    let room = MAX_TOTAL_CHECKS.saturating_sub(checks) as f64;
    let fits = (room / checks_per_frozen_second(steps, gate_interval)).floor();
    (fits.min(f64::from(DEFAULT_MAX_FROZEN_SECONDS))) as u32
}

impl FreezeSection {
    pub(crate) fn validate(
        &self,
        steps: &[ResolvedStep],
        gate_interval: u32,
        checks: u64,
        errors: &mut Errors,
    ) {
        if self.calendars.len() > MAX_FREEZE_CALENDARS {
            errors.push(
                "freeze.calendars",
                format!(
                    "at most {MAX_FREEZE_CALENDARS} Change Calendars, got {}",
                    self.calendars.len()
                ),
            );
        }
        let mut seen = std::collections::BTreeSet::new();
        for (i, calendar) in self.calendars.iter().enumerate() {
            if !is_calendar_reference(calendar) {
                errors.push(
                    format!("freeze.calendars[{i}]"),
                    format!("`{calendar}` is not a Change Calendar name (3–128 letters, digits, '_', '-' or '.') nor an SSM document ARN"),
                );
            } else if !seen.insert(calendar.as_str()) {
                errors.push(
                    format!("freeze.calendars[{i}]"),
                    format!("`{calendar}` is named twice"),
                );
            }
        }
        let Some(seconds) = self.max_frozen_seconds else {
            return;
        };
        if !(60..=MAX_FROZEN_SECONDS).contains(&seconds) {
            errors.push(
                "freeze.maxFrozenSeconds",
                format!("must be from 60 to {MAX_FROZEN_SECONDS} seconds (a week), got {seconds}"),
            );
            return;
        }
        let added = (seconds as f64 * checks_per_frozen_second(steps, gate_interval)).ceil();
        if checks as f64 + added > MAX_TOTAL_CHECKS as f64 {
            errors.push(
                "freeze.maxFrozenSeconds",
                format!(
                    "{seconds} s of freeze at every step would add {added} checks to the rollout's {checks}, more than {MAX_TOTAL_CHECKS} in all \
                     (a Step Functions execution is limited to 25,000 history events): use a shorter bound or a longer check interval"
                ),
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn step(interval: u32) -> ResolvedStep {
        ResolvedStep {
            weight: 10,
            bake_seconds: 600,
            check_interval_seconds: interval,
            checks: 600 / interval,
            approval_timeout_seconds: 0,
            on_approval_timeout: Default::default(),
            ask_timeout_seconds: 0,
        }
    }

    #[test]
    fn calendar_references() {
        for good in [
            "holiday-freeze",
            "abc",
            "arn:aws:ssm:us-east-1:111122223333:document/holiday-freeze",
        ] {
            assert!(is_calendar_reference(good), "{good}");
        }
        for bad in [
            "ab",
            "has space",
            "arn:aws:ssm:us-east-1:111122223333:parameter/x",
            "arn:aws:ssm:nowhere:111122223333:document/x1y",
            "arn:aws:s3:us-east-1:111122223333:document/abc",
        ] {
            assert!(!is_calendar_reference(bad), "{bad}");
        }
    }

    #[test]
    fn the_default_bound_is_an_hour_or_what_the_budget_leaves() {
        let steps = [step(60), step(60)];
        // Three places at one check a minute: an hour adds 180 checks.
        assert_eq!(frozen_bound_seconds(None, &steps, 60, 20), 3_600);
        // 90 checks left: 30 minutes.
        assert_eq!(frozen_bound_seconds(None, &steps, 60, 1_910), 1_800);
        assert_eq!(frozen_bound_seconds(None, &steps, 60, 2_000), 0);
        let set = FreezeSection {
            max_frozen_seconds: Some(7_200),
            ..Default::default()
        };
        assert_eq!(frozen_bound_seconds(Some(&set), &steps, 60, 20), 7_200);
    }

    #[test]
    fn a_bound_over_the_budget_is_refused() {
        let steps = [step(60), step(60)];
        let mut errors = Errors::default();
        let section = FreezeSection {
            max_frozen_seconds: Some(86_400),
            ..Default::default()
        };
        section.validate(&steps, 60, 20, &mut errors);
        assert_eq!(errors.0.len(), 1);
        assert_eq!(errors.0[0].path, "freeze.maxFrozenSeconds");
        assert!(
            errors.0[0].message.contains("would add 4320 checks"),
            "{}",
            errors.0[0].message
        );
    }
}
