//! What the comparison (`analysis.compare`) can expect of the traffic before a rollout starts
//! (`cluster-canary plan check`): from the requests of each period of the last hour, how many
//! periods with requests on both sides each step's checks will have, and the chance that they
//! reach `minSamples`. A step short of them extends its bake, then ends "no evidence": at a
//! tenth of the docs' traffic a third of healthy rollouts ended so at the 1 % step (issue 67).
//!
//! The model, and what it leaves out:
//! - ALB's weighted forward picks a target group per request, so a period of `n` requests at a
//!   canary share `p` has requests on both sides with probability 1 − pⁿ − (1 − p)ⁿ.
//! - A step's periods are drawn from the last hour's, independently: a quiet night ahead, or
//!   traffic that comes in hours, is not foreseen.
//! - A metric has a sample on a side in a period when that side served a request (ALB publishes
//!   nothing for a target group without requests); a Prometheus or Datadog metric may have
//!   fewer (a query over a rate needs more than one request).
//! - A step's checks count its own periods (its bake, and the extension for want of data,
//!   `analysis.extendBakeSeconds`) or the lookback's, which may reach back into the steps before;
//!   the chance is that either reaches `minSamples`, so it is a lower bound. Earlier steps count
//!   with their bakes only, and waits for an approval are left out (both only add periods).

use super::ResolvedStep;
use crate::analysis::compare::baseline_serves;
use crate::analysis::AnalysisSection;

/// The chance of enough periods below which `plan check` says a step may end short of data:
/// the comparison's own default α, so that want of traffic is not a likelier way for a healthy
/// rollout to roll back than the comparison itself.
pub const ENOUGH_CHANCE: f64 = 0.99;

/// One step's outlook.
#[derive(Debug, Clone, PartialEq)]
pub struct StepForecast {
    /// From 1.
    pub step: usize,
    /// The canary's share, percent.
    pub weight: u8,
    /// Whether the step compares at all: at 100 % the baseline serves nothing, and the evidence
    /// of the steps before stands ([`baseline_serves`]).
    pub compared: bool,
    /// Periods with requests on both sides expected where the step's last check counts them.
    pub expected_periods: f64,
    /// `minSamples`.
    pub needed: usize,
    /// The chance, at least, that the step's checks count `minSamples` such periods.
    pub chance_enough: f64,
}

impl StepForecast {
    /// Whether the step may end "no evidence" on healthy traffic more often than
    /// [`ENOUGH_CHANCE`] allows.
    pub fn short(&self) -> bool {
        self.compared && self.chance_enough < ENOUGH_CHANCE
    }
}

/// The chance that a period of `requests` requests has some on each side at canary share
/// `share` (0–1).
fn both_sides_served(requests: f64, share: f64) -> f64 {
    if requests < 1.0 {
        return 0.0;
    }
    (1.0 - share.powf(requests) - (1.0 - share).powf(requests)).clamp(0.0, 1.0)
}

/// A run of `periods` periods, each with data with probability `chance`.
#[derive(Debug, Clone, Copy)]
struct Run {
    periods: u64,
    chance: f64,
}

/// The chance that runs of independent periods hold at least `needed` with data (a
/// Poisson-binomial tail, counts past `needed` merged).
fn chance_of_at_least(runs: &[Run], needed: usize) -> f64 {
    let mut counts = vec![0.0_f64; needed + 1];
    counts[0] = 1.0;
    for run in runs {
        for _ in 0..run.periods {
            for k in (0..=needed).rev() {
                let stay = counts[k] * (1.0 - run.chance);
                let from_below = if k > 0 {
                    counts[k - 1] * run.chance
                } else {
                    0.0
                };
                counts[k] = if k == needed {
                    counts[k] + from_below
                } else {
                    stay + from_below
                };
            }
        }
    }
    counts[needed].clamp(0.0, 1.0)
}

fn expected(runs: &[Run]) -> f64 {
    runs.iter().map(|r| r.periods as f64 * r.chance).sum()
}

/// Each step's outlook from `requests`, the requests of each period of the last hour (a period
/// without a datapoint is 0), all the plan's target groups added up. None without a
/// comparison or without a period of traffic.
pub fn forecast(
    requests: &[f64],
    steps: &[ResolvedStep],
    analysis: &AnalysisSection,
) -> Option<Vec<StepForecast>> {
    let compare = analysis.compare.as_ref()?;
    let period = u64::try_from(compare.period_seconds)
        .ok()
        .filter(|p| *p > 0)?;
    if requests.is_empty() {
        return None;
    }
    let lookback_periods = u64::try_from(compare.lookback_seconds).unwrap_or(0) / period;
    let needed = compare.min_samples();
    // The chance, at a step's share, that a period drawn from the last hour has data.
    let chance_at = |weight: u8| {
        let share = f64::from(weight) / 100.0;
        requests
            .iter()
            .map(|n| both_sides_served(*n, share))
            .sum::<f64>()
            / requests.len() as f64
    };
    let mut outlook = Vec::with_capacity(steps.len());
    for (i, step) in steps.iter().enumerate() {
        let compared = baseline_serves(step.weight);
        if !compared {
            outlook.push(StepForecast {
                step: i + 1,
                weight: step.weight,
                compared,
                expected_periods: 0.0,
                needed,
                chance_enough: 1.0,
            });
            continue;
        }
        let extension = analysis.extra_checks(step.bake_seconds, step.check_interval_seconds)
            * step.check_interval_seconds;
        let own = Run {
            periods: u64::from(step.bake_seconds + extension) / period,
            chance: chance_at(step.weight),
        };
        // The lookback at the last check: the step's latest periods, then the steps before.
        let mut window = vec![Run {
            periods: own.periods.min(lookback_periods),
            ..own
        }];
        let mut room = lookback_periods.saturating_sub(own.periods);
        for earlier in steps[..i].iter().rev() {
            if room == 0 {
                break;
            }
            let periods = (u64::from(earlier.bake_seconds) / period).min(room);
            window.push(Run {
                periods,
                chance: chance_at(earlier.weight),
            });
            room -= periods;
        }
        let (own_runs, window_runs) = ([own], window);
        let expected_periods = expected(&own_runs).max(expected(&window_runs));
        let chance_enough =
            chance_of_at_least(&own_runs, needed).max(chance_of_at_least(&window_runs, needed));
        outlook.push(StepForecast {
            step: i + 1,
            weight: step.weight,
            compared,
            expected_periods,
            needed,
            chance_enough,
        });
    }
    Some(outlook)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn analysis(compare: serde_json::Value) -> AnalysisSection {
        serde_json::from_value(serde_json::json!({"compare": compare})).expect("an analysis")
    }

    fn docs_compare() -> serde_json::Value {
        serde_json::json!({"periodSeconds": 60, "lookbackSeconds": 1200, "minSamples": 10,
            "metrics": [{"name": "5xx", "alb": "errorRate"}]})
    }

    fn step(weight: u8, bake_seconds: u32) -> ResolvedStep {
        ResolvedStep {
            weight,
            bake_seconds,
            check_interval_seconds: 60,
            checks: bake_seconds / 60,
            approval_timeout_seconds: 0,
            on_approval_timeout: Default::default(),
            ask_timeout_seconds: 0,
        }
    }

    #[test]
    fn both_sides_are_served_by_enough_requests_only() {
        assert_eq!(both_sides_served(0.0, 0.01), 0.0);
        assert_eq!(both_sides_served(1.0, 0.01), 0.0);
        // 100 requests at 1 %: the canary gets none in 36.6 % of periods.
        assert!((both_sides_served(100.0, 0.01) - (1.0 - 0.99_f64.powi(100))).abs() < 1e-9);
        assert!(both_sides_served(10_000.0, 0.01) > 0.999_999);
    }

    #[test]
    fn the_chance_of_enough_periods_is_a_binomial_tail() {
        // 10 periods at ½: at least 10 is 2⁻¹⁰; at least 1 is 1 − 2⁻¹⁰.
        let runs = [Run {
            periods: 10,
            chance: 0.5,
        }];
        assert!((chance_of_at_least(&runs, 10) - 0.5_f64.powi(10)).abs() < 1e-12);
        assert!((chance_of_at_least(&runs, 1) - (1.0 - 0.5_f64.powi(10))).abs() < 1e-12);
        assert_eq!(chance_of_at_least(&runs, 11), 0.0);
    }

    #[test]
    fn busy_traffic_fills_every_step_and_the_last_is_not_compared() {
        let steps = [step(1, 600), step(10, 600), step(50, 600), step(100, 600)];
        let outlook =
            forecast(&[3_000.0; 60], &steps, &analysis(docs_compare())).expect("a forecast");
        assert!(outlook[..3].iter().all(|s| !s.short()), "{outlook:?}");
        assert!(!outlook[3].compared && !outlook[3].short());
        // The first step's own ten periods plus its ten of extension (the default: its bake).
        assert!(
            (outlook[0].expected_periods - 20.0).abs() < 0.01,
            "{outlook:?}"
        );
    }

    #[test]
    fn a_tenth_of_the_traffic_leaves_the_first_step_short() {
        // 30 requests a minute: at 1 % the canary gets one in a quarter of the minutes.
        let steps = [step(1, 600), step(10, 600), step(100, 600)];
        let outlook = forecast(&[30.0; 60], &steps, &analysis(docs_compare())).expect("a forecast");
        assert!(outlook[0].short(), "{outlook:?}");
        assert!(outlook[0].expected_periods < 6.0, "{outlook:?}");
        assert!(!outlook[1].short(), "{outlook:?}");
    }

    #[test]
    fn a_later_step_counts_the_earlier_steps_periods_its_lookback_reaches() {
        // A short 10 % step after a long 5 % one: 2 own periods, the lookback adds the 5 %'s.
        let compare = serde_json::json!({"periodSeconds": 60, "lookbackSeconds": 1200,
            "minSamples": 10, "metrics": [{"name": "5xx", "alb": "errorRate"}]});
        let mut analysis = analysis(compare);
        analysis.extend_bake_seconds = Some(0);
        let steps = [step(5, 1200), step(10, 120)];
        let outlook = forecast(&[5_000.0; 60], &steps, &analysis).expect("a forecast");
        assert!(
            (outlook[1].expected_periods - 20.0).abs() < 0.01,
            "{outlook:?}"
        );
        assert!(!outlook[1].short(), "{outlook:?}");
    }

    #[test]
    fn no_forecast_without_a_comparison_or_without_traffic_figures() {
        let steps = [step(1, 600)];
        assert!(forecast(&[100.0], &steps, &AnalysisSection::default()).is_none());
        assert!(forecast(&[], &steps, &analysis(docs_compare())).is_none());
    }
}
