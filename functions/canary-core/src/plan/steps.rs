//! The plan's steps and bake: each step's weight, how long it bakes and how often it is
//! checked, resolved into what the state machine runs.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::RolloutPlan;
use crate::approval::OnApprovalTimeout;
use crate::limits::{MAX_BAKE_SECONDS, MAX_TOTAL_CHECKS};
use crate::targets::TrafficTarget;
use crate::validate::Errors;

/// After 100 %, the checks go on for `bakeSeconds` (every `bake.checkIntervalSeconds`); a
/// failure then still restores the baseline: the old cluster is still attached.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Promotion {
    /// The 100 % step's bake (instead of `bake.seconds`).
    #[schemars(range(min = 1, max = 86400))]
    pub bake_seconds: i64,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Step {
    /// The canary's share of traffic in percent, 1–100.
    #[schemars(range(min = 1, max = 100))]
    pub weight: i64,
    /// Overrides `bake.seconds` for this step.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1, max = 86400))]
    pub bake_seconds: Option<i64>,
    /// Overrides `bake.checkIntervalSeconds` for this step.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1))]
    pub check_interval_seconds: Option<i64>,
    /// Wait for a person's approval before setting this step (timeout and what it does: the
    /// plan's `approval`). It wins over `approval.beforeSteps`: `false` never waits.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub approval: Option<bool>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Bake {
    /// How long each step is watched before the next one, in seconds.
    #[schemars(range(min = 1, max = 86400))]
    pub seconds: i64,
    /// How often the checks run during a bake, in seconds. At most `seconds`.
    #[schemars(range(min = 1))]
    pub check_interval_seconds: i64,
}

/// A step with its bake settings resolved, as the state machine runs it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ResolvedStep {
    pub weight: u8,
    pub bake_seconds: u32,
    pub check_interval_seconds: u32,
    /// Checks in the bake: `bake_seconds / check_interval_seconds`, at least 1.
    pub checks: u32,
    /// How long the step waits for an approval before it is set; 0: it does not wait.
    pub approval_timeout_seconds: u32,
    /// What running out of that time does.
    pub on_approval_timeout: OnApprovalTimeout,
    /// How long the step waits for an approval when the previous step's bake ended with an
    /// unsure comparison that asks a person (`analysis.compare`'s `ask`); 0: it is never asked
    /// about (the first step, a step that waits for its own approval, a plan that never asks).
    #[serde(default)]
    pub ask_timeout_seconds: u32,
}

/// The least time these steps take: every bake, the promotion's included (approvals and the
/// gates' waits come on top).
pub fn least_seconds(steps: &[ResolvedStep]) -> u64 {
    steps.iter().map(|s| u64::from(s.bake_seconds)).sum()
}

/// The checks a rollout of these steps may run: every bake's, and those of the waits for a
/// person (the checks go on while a step waits, asked or not).
pub(super) fn checks_of(steps: &[ResolvedStep]) -> u64 {
    steps
        .iter()
        .map(|s| {
            let wait = s.approval_timeout_seconds.max(s.ask_timeout_seconds);
            u64::from(s.checks) + u64::from(wait / s.check_interval_seconds.max(1))
        })
        .sum()
}

impl RolloutPlan {
    pub(super) fn resolve_steps(&self, errors: &mut Errors) -> Vec<ResolvedStep> {
        let bake_ok = check_bake(
            "bake.seconds",
            self.bake.seconds,
            "bake.checkIntervalSeconds",
            self.bake.check_interval_seconds,
            errors,
        );
        let promotion_bake = self.promotion.map(|p| p.bake_seconds);
        if let (Some(_), Some((i, last))) =
            (promotion_bake, self.steps.iter().enumerate().next_back())
        {
            if last.bake_seconds.is_some() {
                errors.push(
                    "promotion.bakeSeconds",
                    format!("steps[{i}] sets its own bakeSeconds: set one of the two"),
                );
            }
        }
        let mut resolved = Vec::with_capacity(self.steps.len());
        let approval = self.approval.clone().unwrap_or_default();
        let approval_timeout = u32::try_from(approval.timeout()).ok();
        let asks = self
            .analysis
            .as_ref()
            .and_then(|a| a.compare.as_ref())
            .is_some_and(|c| c.asks());
        for (i, step) in self.steps.iter().enumerate() {
            let is_last = i + 1 == self.steps.len();
            let bake = step
                .bake_seconds
                .or(promotion_bake.filter(|_| is_last))
                .unwrap_or(self.bake.seconds);
            let interval = step
                .check_interval_seconds
                .unwrap_or(self.bake.check_interval_seconds);
            let promoted = is_last && step.bake_seconds.is_none() && promotion_bake.is_some();
            let overridden = step.bake_seconds.is_some() || step.check_interval_seconds.is_some();
            let step_ok = !(overridden || promoted)
                || check_bake(
                    &if promoted {
                        "promotion.bakeSeconds".to_owned()
                    } else {
                        format!("steps[{i}].bakeSeconds")
                    },
                    bake,
                    &format!("steps[{i}].checkIntervalSeconds"),
                    interval,
                    errors,
                );
            let values = (
                u8::try_from(step.weight).ok().filter(|w| *w <= 100),
                u32::try_from(bake).ok(),
                u32::try_from(interval).ok(),
            );
            if let (
                true,
                true,
                (Some(weight), Some(bake_seconds), Some(check_interval_seconds)),
                Some(timeout),
            ) = (bake_ok, step_ok, values, approval_timeout)
            {
                let checks = (bake_seconds / check_interval_seconds).max(1);
                let gated = approval.gates(step.weight, step.approval);
                let approval_timeout_seconds = if gated { timeout } else { 0 };
                let ask_timeout_seconds = if asks && i > 0 && !gated { timeout } else { 0 };
                resolved.push(ResolvedStep {
                    weight,
                    bake_seconds,
                    check_interval_seconds,
                    checks,
                    approval_timeout_seconds,
                    on_approval_timeout: approval.on_timeout.unwrap_or_default(),
                    ask_timeout_seconds,
                });
            }
        }
        // A bake short of data may run on (`analysis.extendBakeSeconds`): its checks count.
        let extra_checks: u64 = self.analysis.as_ref().map_or(0, |analysis| {
            resolved
                .iter()
                .map(|s| u64::from(analysis.extra_checks(s.bake_seconds, s.check_interval_seconds)))
                .sum()
        });
        let total_checks = checks_of(&resolved) + extra_checks;
        if total_checks > MAX_TOTAL_CHECKS {
            errors.push(
                "steps",
                format!(
                    "the rollout would run {total_checks} checks (bake / interval summed over steps, the bakes' extensions for want of data (analysis.extendBakeSeconds), and approval timeout / interval for steps that wait for one), more than {MAX_TOTAL_CHECKS}; \
                     a Step Functions execution is limited to 25,000 history events: use a longer check interval or fewer steps"
                ),
            );
        }
        resolved
    }
}

impl RolloutPlan {
    /// Every step of a plan that shifts an NLB with `minStepSeconds` bakes at least that long:
    /// a shorter bake would judge connections opened before its weight was set.
    pub(super) fn check_min_step_seconds(&self, steps: &[ResolvedStep], errors: &mut Errors) {
        let floors = self
            .traffic_targets
            .iter()
            .enumerate()
            .filter_map(|(t, target)| {
                let TrafficTarget::Nlb(nlb) = target else {
                    return None;
                };
                Some((t, u32::try_from(nlb.min_step_seconds?).ok()?))
            });
        for (t, floor) in floors {
            for (i, step) in steps.iter().enumerate() {
                if step.bake_seconds < floor {
                    errors.push(
                        format!("steps[{i}]"),
                        format!(
                            "bakes {} s, less than trafficTargets[{t}].nlb.minStepSeconds ({floor} s): \
                             an NLB moves new connections only, so a shorter bake judges the old ones; \
                             bake this step longer or lower minStepSeconds",
                            step.bake_seconds
                        ),
                    );
                }
            }
        }
    }
}

impl RolloutPlan {
    /// A comparison's first step can gather `minSamples` periods: its bake and its extension
    /// for want of data (`analysis.extendBakeSeconds`) hold that many periods of the canary.
    /// Later steps also have the earlier steps' periods in their window; the first has none, and
    /// a plan where it cannot would end every healthy rollout "no evidence" there.
    pub(super) fn check_comparison_periods(&self, steps: &[ResolvedStep], errors: &mut Errors) {
        let Some(analysis) = self.analysis.as_ref() else {
            return;
        };
        let (Some(compare), Some(first)) = (analysis.compare.as_ref(), steps.first()) else {
            return;
        };
        let Ok(period) = u32::try_from(compare.period_seconds) else {
            return;
        };
        if period == 0 || !crate::analysis::compare::baseline_serves(first.weight) {
            return;
        }
        let extra = analysis.extra_checks(first.bake_seconds, first.check_interval_seconds)
            * first.check_interval_seconds;
        let seconds =
            (first.bake_seconds + extra).min(u32::try_from(compare.lookback_seconds).unwrap_or(0));
        let periods = seconds / period;
        if i64::from(periods) < compare.min_samples {
            errors.push(
                "steps[0]",
                format!(
                    "bakes {} s, {extra} s more at most for want of data (analysis.extendBakeSeconds), \
                     within a lookback of {} s: {periods} period(s) of {period} s, fewer than \
                     analysis.compare.minSamples ({}): the first step could never pass the comparison; \
                     bake it longer, extend it, or lower minSamples",
                    first.bake_seconds, compare.lookback_seconds, compare.min_samples
                ),
            );
        }
    }
}

fn check_bake(
    bake_path: &str,
    bake: i64,
    interval_path: &str,
    interval: i64,
    errors: &mut Errors,
) -> bool {
    let before = errors.0.len();
    if !(1..=MAX_BAKE_SECONDS).contains(&bake) {
        errors.push(
            bake_path,
            format!("must be from 1 to {MAX_BAKE_SECONDS} seconds, got {bake}"),
        );
    }
    if interval < 1 {
        errors.push(
            interval_path,
            format!("must be at least 1 second, got {interval}"),
        );
    } else if interval > bake && bake >= 1 {
        errors.push(
            interval_path,
            format!("must not be longer than the bake time ({bake} s), got {interval}"),
        );
    }
    errors.0.len() == before
}
