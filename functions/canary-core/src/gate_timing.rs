//! How long a gate before traffic waits and how often it looks — the target health gate
//! (`targetHealth`) and the cluster readiness gate (`clusterReadiness`) alike: each look is a
//! few execution history events, so looks are capped.

pub use crate::limits::MAX_GATE_TIMEOUT_SECONDS;
use crate::validate::Errors;

/// Most looks one gate may take (`timeoutSeconds / intervalSeconds`): each is about eleven
/// execution history events, which must leave room under the 25,000-event limit.
pub const MAX_GATE_LOOKS: i64 = 60;
const DEFAULT_INTERVAL_SECONDS: i64 = 15;

/// A gate's `timeoutSeconds` and `intervalSeconds`, as the plan gives them.
#[derive(Debug, Clone, Copy)]
pub struct GateTiming<'a> {
    /// The plan section, for error paths (`targetHealth`).
    pub section: &'a str,
    pub timeout_seconds: Option<i64>,
    pub interval_seconds: Option<i64>,
    pub default_timeout_seconds: i64,
}

/// A gate's timing with its defaults filled in, as the state machine polls it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ResolvedTiming {
    pub interval_seconds: u32,
    /// Looks after the first one: `timeout / interval`, at least 1.
    pub max_polls: u32,
}

impl GateTiming<'_> {
    pub fn validate(&self, errors: &mut Errors) {
        let timeout = self.timeout_seconds.unwrap_or(self.default_timeout_seconds);
        if !(1..=MAX_GATE_TIMEOUT_SECONDS).contains(&timeout) {
            errors.push(
                format!("{}.timeoutSeconds", self.section),
                format!("must be from 1 to {MAX_GATE_TIMEOUT_SECONDS} seconds, got {timeout}"),
            );
        }
        let interval = self
            .interval_seconds
            .unwrap_or_else(|| default_interval(timeout.max(1)));
        if interval < 1 || interval > timeout.max(1) {
            errors.push(
                format!("{}.intervalSeconds", self.section),
                format!("must be from 1 to timeoutSeconds ({timeout}), got {interval}"),
            );
        } else if timeout / interval > MAX_GATE_LOOKS {
            errors.push(
                format!("{}.intervalSeconds", self.section),
                format!(
                    "{interval} s would look {} times in {timeout} s, more than {MAX_GATE_LOOKS}; \
                     use an interval of at least {} s",
                    timeout / interval,
                    (timeout + MAX_GATE_LOOKS - 1) / MAX_GATE_LOOKS
                ),
            );
        }
    }

    /// Defaults filled in. Only meaningful for timing that passed validation.
    pub fn resolve(&self) -> ResolvedTiming {
        let timeout = self
            .timeout_seconds
            .unwrap_or(self.default_timeout_seconds)
            .clamp(1, MAX_GATE_TIMEOUT_SECONDS);
        let interval = self
            .interval_seconds
            .unwrap_or_else(|| default_interval(timeout))
            .clamp(1, timeout);
        // The clamps keep both in u32 range.
        ResolvedTiming {
            interval_seconds: interval as u32,
            max_polls: (timeout / interval).max(1) as u32,
        }
    }
}

/// 15 s, longer when that would look more than [`MAX_GATE_LOOKS`] times, and never longer than
/// the timeout.
fn default_interval(timeout: i64) -> i64 {
    let spread = (timeout + MAX_GATE_LOOKS - 1) / MAX_GATE_LOOKS;
    DEFAULT_INTERVAL_SECONDS.max(spread).min(timeout)
}
