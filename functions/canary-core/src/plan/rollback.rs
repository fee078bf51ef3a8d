//! The plan's `rollback` section: how long after restoring the baseline the rollout looks at
//! its targets again. A controller that owns a weight (ExternalDNS, the AWS Load Balancer
//! Controller, a Terraform run) may put the canary's weights back after a rollback; the look
//! after the settle period finds that, re-asserts the baseline and raises `RollbackReverted`.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::validate::Errors;

/// ExternalDNS's default `--interval` is one minute: two of them.
pub const DEFAULT_SETTLE_SECONDS: i64 = 120;
/// The safety net waits the settle period inside its Lambda invocation (the function's
/// timeout is 300 s), after a restore of up to a minute.
pub const MAX_SETTLE_SECONDS: i64 = 240;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
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
    }
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
