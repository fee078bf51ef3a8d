//! The built-in ALB checks: the canary target group's 5xx rate and latency, alone and
//! against the stable target group's.

use super::outcome::{CheckOutcome, CheckVerdict};
use super::section::AlbChecks;

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
