//! The plan's `rollback` section: how long after restoring the baseline the rollout looks at
//! its targets again. A controller that owns a weight (ExternalDNS, the AWS Load Balancer
//! Controller, a Terraform run) may put the canary's weights back after a rollback; the look
//! after the settle period finds that, re-asserts the baseline and raises `RollbackReverted`.
//! `gradual` steps a failed canary's share back in a few holds instead of at once, so the old
//! cluster, which its autoscalers shrank as its share fell, is not sent everything at once.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::limits::{MAX_STEPS_BACK, MAX_STEP_BACK_HOLDS_SECONDS};
use crate::validate::Errors;

/// ExternalDNS's default `--interval` is one minute: two of them.
pub const DEFAULT_SETTLE_SECONDS: i64 = 120;
/// The safety net waits the settle period inside its Lambda invocation (the function's
/// timeout is 300 s), after a restore of up to a minute.
pub const MAX_SETTLE_SECONDS: i64 = 240;

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct RollbackSection {
    /// Seconds after a restore (the rollback, the safety net) before every target is read
    /// again; a target found away from the baseline is put back and `RollbackReverted` is
    /// raised. 0 looks at once. Default 120 (two ExternalDNS intervals).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0, max = 240))]
    pub settle_seconds: Option<i64>,
    /// Start even when the canary already receives traffic on a target (its weights then are
    /// the baseline a rollback restores, canary share and all). Off by default: Prepare
    /// refuses such a baseline, since rolling back to it leaves traffic on the new cluster
    /// (an earlier rollout that ended without restoring, or a weight set by hand).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub allow_canary_in_baseline: bool,
    /// Off by default. After a failed check of a bake (not an alarm marked `critical`, not any
    /// other failure): step the canary's share back in these steps, holding between them,
    /// while the old cluster stays healthy; then the baseline.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gradual: Option<GradualRollback>,
}

/// Longest hold after one step back.
pub const MAX_STEP_BACK_HOLD_SECONDS: i64 = 300;
pub const DEFAULT_STEP_BACK_HOLD_SECONDS: i64 = 60;
const MIN_STEP_BACK_HOLD_SECONDS: i64 = 5;

/// `rollback.gradual`: the canary's share at the failed step is cut to `steps[i]` % of itself,
/// one step at a time, `holdSeconds` apart; the last step, 0, is the baseline.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct GradualRollback {
    /// Percent of the canary's share when the check failed, strictly decreasing, ending with
    /// 0 (the baseline): `[50, 0]` halves it, holds, then restores the baseline.
    #[schemars(length(min = 2, max = 5))]
    pub steps: Vec<i64>,
    /// Seconds between steps back, each taken only while the old cluster's target groups
    /// (records' health checks) stay healthy. Default 60; all holds together at most 900.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 5, max = 300))]
    pub hold_seconds: Option<i64>,
    /// The old cluster's own CloudWatch alarms (names): each must be OK for a step back; one
    /// in ALARM or INSUFFICIENT_DATA sends the rollback to the baseline at once.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = 20))]
    pub alarms: Vec<String>,
}

/// Most alarms of the old cluster a gradual rollback reads before each step back.
pub const MAX_STEP_BACK_ALARMS: usize = 20;

impl GradualRollback {
    pub fn hold_seconds(&self) -> i64 {
        self.hold_seconds.unwrap_or(DEFAULT_STEP_BACK_HOLD_SECONDS)
    }

    /// The canary's share after the step back from `current`, the share now, for a rollback
    /// from `failed`, the share when the check failed: the first step below `current`.
    /// `None` when the next step is the baseline (a share rounding to 0 included), which the
    /// rollout's restore writes.
    pub fn next_share(&self, failed: u8, current: u8) -> Option<u8> {
        self.steps
            .iter()
            .filter_map(|percent| u8::try_from(i64::from(failed) * percent / 100).ok())
            .find(|share| *share < current)
            .filter(|share| *share > 0)
    }

    fn validate(&self, errors: &mut Errors) {
        const PATH: &str = "rollback.gradual";
        let steps = &self.steps;
        if !(2..=MAX_STEPS_BACK).contains(&steps.len()) {
            errors.push(
                format!("{PATH}.steps"),
                format!(
                    "give 2 to {MAX_STEPS_BACK} steps back, the last 0 (the baseline), got {}",
                    steps.len()
                ),
            );
        }
        let in_range = |percent: &i64| (0..=99).contains(percent);
        for (i, percent) in steps.iter().enumerate() {
            if !in_range(percent) {
                errors.push(
                    format!("{PATH}.steps[{i}]"),
                    format!("must be from 0 to 99 percent of the canary's share, got {percent}"),
                );
            } else if let Some(previous) = steps[..i].iter().rev().find(|p| in_range(p)) {
                // The last step in range: one out of range is said once, not again as the
                // next step's.
                if percent >= previous {
                    errors.push(
                        format!("{PATH}.steps[{i}]"),
                        format!("must be less than the previous step's {previous}, got {percent}"),
                    );
                }
            }
        }
        if steps.last().is_some_and(|last| *last != 0) {
            errors.push(
                format!("{PATH}.steps[{}]", steps.len() - 1),
                "the last step back must be 0, the baseline",
            );
        }
        if self.alarms.len() > MAX_STEP_BACK_ALARMS {
            errors.push(
                format!("{PATH}.alarms"),
                format!(
                    "at most {MAX_STEP_BACK_ALARMS} alarms of the old cluster, got {}",
                    self.alarms.len()
                ),
            );
        }
        for (i, name) in self.alarms.iter().enumerate() {
            if name.is_empty() || name.len() > 255 {
                errors.push(format!("{PATH}.alarms[{i}]"), "must be 1 to 255 characters");
            }
        }
        let hold = self.hold_seconds();
        if !(MIN_STEP_BACK_HOLD_SECONDS..=MAX_STEP_BACK_HOLD_SECONDS).contains(&hold) {
            errors.push(
                format!("{PATH}.holdSeconds"),
                format!(
                    "must be from {MIN_STEP_BACK_HOLD_SECONDS} to {MAX_STEP_BACK_HOLD_SECONDS} \
                     seconds, got {hold}"
                ),
            );
        } else {
            // One hold after every step back but the baseline.
            let holds = i64::try_from(steps.len().saturating_sub(1))
                .unwrap_or(i64::MAX)
                .saturating_mul(hold);
            if holds > MAX_STEP_BACK_HOLDS_SECONDS {
                errors.push(
                    format!("{PATH}.holdSeconds"),
                    format!(
                        "the holds of {} steps back add {holds} s to the way to the baseline; \
                         at most {MAX_STEP_BACK_HOLDS_SECONDS} s: fewer steps or a shorter hold",
                        steps.len() - 1
                    ),
                );
            }
        }
    }
}

impl RollbackSection {
    pub(crate) fn validate(&self, errors: &mut Errors) {
        if let Some(seconds) = self
            .settle_seconds
            .filter(|s| !(0..=MAX_SETTLE_SECONDS).contains(s))
        {
            errors.push(
                "rollback.settleSeconds",
                format!(
                    "must be from 0 to {MAX_SETTLE_SECONDS} seconds (the safety net waits it \
                     inside one Lambda invocation), got {seconds}"
                ),
            );
        }
        if let Some(gradual) = &self.gradual {
            gradual.validate(errors);
        }
    }
}

/// The plan's gradual rollback (`rollback.gradual`), if it has one.
pub fn gradual(rollback: Option<&RollbackSection>) -> Option<&GradualRollback> {
    rollback.and_then(|r| r.gradual.as_ref())
}

/// Whether the plan lets a baseline give the canary traffic (`rollback.allowCanaryInBaseline`).
pub fn allows_canary_in_baseline(rollback: Option<&RollbackSection>) -> bool {
    rollback.is_some_and(|r| r.allow_canary_in_baseline)
}

/// The settle period of a plan's rollback: its `rollback.settleSeconds`, or the default.
pub fn settle_seconds(rollback: Option<&RollbackSection>) -> i64 {
    rollback
        .and_then(|r| r.settle_seconds)
        .unwrap_or(DEFAULT_SETTLE_SECONDS)
}

#[cfg(test)]
mod tests {
    use super::GradualRollback;

    fn gradual(steps: &[i64]) -> GradualRollback {
        GradualRollback {
            steps: steps.to_vec(),
            hold_seconds: None,
            alarms: Vec::new(),
        }
    }

    #[test]
    fn each_step_back_is_the_first_share_below_the_one_now_and_zero_is_left_to_the_restore() {
        let halves = gradual(&[50, 0]);
        assert_eq!(halves.next_share(50, 50), Some(25));
        assert_eq!(halves.next_share(50, 25), None, "then the baseline");
        let thirds = gradual(&[66, 33, 0]);
        assert_eq!(thirds.next_share(100, 100), Some(66));
        assert_eq!(thirds.next_share(100, 66), Some(33));
        assert_eq!(thirds.next_share(100, 33), None);
        // A share so small its steps round to 0 goes to the baseline at once.
        assert_eq!(halves.next_share(1, 1), None);
        // A share already below a step (a retried step back) takes the next one.
        assert_eq!(thirds.next_share(100, 50), Some(33));
    }
}
