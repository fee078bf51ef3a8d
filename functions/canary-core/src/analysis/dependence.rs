//! How much one period of a compared series foretells the next, and how widely the series
//! spreads, estimated from the rollout's own periods (a metric's excess over the band, or an
//! error count's Pearson residuals): each cluster drifting on its own for minutes at a time, or
//! a canary whose error rate varies more than Poisson errors do, must not be taken for a
//! regression, and a regression that begins mid-rollout must not be taken for a drift.
//!
//! Both come from the series' differences at lags 1 and 2, not from its deviations from its
//! mean: for an AR(1) of ρ and variance σ², E[(xₜ − xₜ₋₁)²] = 2σ²(1 − ρ) and
//! E[(xₜ − xₜ₋₂)²] = 2σ²(1 − ρ²), so their ratio is 1 + ρ. A level shift — a regression that
//! begins — is one large difference at each lag, each bounded to [`DIFFERENCE_BOUND`] times the
//! typical difference so far, where deviations from the mean would make the whole series after
//! it look like one long drift (and the regression would be explained away).
//!
//! Estimates are of the past periods only, so a period is judged by what came before it.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Values of a series before its dependence is estimated from it; before that, none is allowed
/// for.
pub const MIN_PERIODS_TO_ESTIMATE: u32 = 5;
/// The highest autocorrelation the evidence allows for (the plan's `autocorrelation` is capped
/// alike).
pub const MAX_AUTOCORRELATION: f64 = 0.95;
/// Standard errors added to an estimated autocorrelation ([`as_used`]) of error counts' residuals
/// (their drift is estimated from few errors at a small share), and of a value's excesses (one
/// sign a period says little, and a margin there costs a latency regression many periods).
pub const COUNTS_MARGIN: f64 = 1.0;
pub const SIGNS_MARGIN: f64 = 0.0;
/// A difference counts for at most this many times the typical difference so far.
pub const DIFFERENCE_BOUND: f64 = 3.0;
/// Standard errors a series' mean must be from 0 to stand out of its drift.
pub const CLEAR_MEAN: f64 = 4.0;

/// The differences of a series at lags 1 and 2: how many values (`n`), the sums of the squared
/// (bounded) differences at each lag (`sq`), and the last two values (`last`). Short names: the
/// state carries one per compared metric, direction and side.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Deltas {
    #[serde(rename = "n")]
    pub values: u32,
    #[serde(rename = "sq", serialize_with = "pair_in_six_digits")]
    pub squares: [f64; 2],
    #[serde(rename = "last", serialize_with = "pair_in_six_digits")]
    pub recent: [f64; 2],
}

/// A value kept to 6 significant digits in the state: the estimates need no more, and the
/// evidence of 20 metrics stays within `MAX_EVIDENCE_BYTES`.
pub fn six_digits(value: f64) -> f64 {
    format!("{value:.5e}").parse::<f64>().unwrap_or(value)
}

fn pair_in_six_digits<S: serde::Serializer>(
    pair: &[f64; 2],
    serializer: S,
) -> Result<S::Ok, S::Error> {
    pair.map(six_digits).serialize(serializer)
}

impl Deltas {
    pub fn is_empty(&self) -> bool {
        self.values == 0
    }

    /// Takes in the series' next value (a non-finite one is left out).
    pub fn add(&mut self, value: f64) {
        self.add_on_scale(value, 0.0);
    }

    /// [`Self::add`] for a series whose mean squared difference is known to be at least
    /// `typical` when nothing is wrong (Pearson residuals of Poisson counts: 2): its
    /// differences are bounded from the first one, so a regression that begins at once is not
    /// taken for a spread. Without it (0), from the third difference on.
    pub fn add_on_scale(&mut self, value: f64, typical: f64) {
        if !value.is_finite() {
            return;
        }
        for lag in [1_u32, 2] {
            let differences = self.values.saturating_sub(lag);
            if self.values < lag {
                continue;
            }
            let index = (lag - 1) as usize;
            let mut difference = value - self.recent[index];
            let seen = match differences {
                0 => None,
                n => Some(self.squares[index] / f64::from(n)),
            };
            let scale = match (seen, differences >= 3 || typical > 0.0) {
                (Some(seen), true) => Some(seen.max(typical)),
                (None, true) => Some(typical),
                (_, false) => None,
            };
            if let Some(scale) = scale.filter(|s| *s > 0.0) {
                let bound = DIFFERENCE_BOUND * scale.sqrt();
                difference = difference.clamp(-bound, bound);
            }
            let squares = self.squares[index] + difference * difference;
            // Kept finite (JSON has no infinity): a series that large is left as it was.
            if squares.is_finite() {
                self.squares[index] = squares;
            }
        }
        self.recent = [value, self.recent[0]];
        self.values = self.values.saturating_add(1);
    }

    /// Whether `mean`, the series' mean, stands out of what its drift could make of it: at least
    /// [`CLEAR_MEAN`] standard errors from 0, the standard error that of the mean of an AR(1)
    /// of the estimated variance and `rho` (√(σ² (1 + ρ) / (1 − ρ) / n)). A canary steadily
    /// beyond the band by far more than the series moves is a regression, however smooth the
    /// series: its signs are not a drift's.
    pub fn mean_stands_out(&self, mean: f64, rho: f64) -> bool {
        let Some(variance) = self.variance() else {
            return false;
        };
        let error = (variance * carried_over(rho) / f64::from(self.values)).sqrt();
        mean.abs() >= CLEAR_MEAN * error
    }

    /// The mean squared differences at lags 1 and 2, once there are enough of them.
    fn mean_squares(&self) -> Option<(f64, f64)> {
        if self.values < MIN_PERIODS_TO_ESTIMATE {
            return None;
        }
        let at_1 = self.squares[0] / f64::from(self.values - 1);
        let at_2 = self.squares[1] / f64::from(self.values - 2);
        Some((at_1, at_2))
    }

    /// The ratio of the lag-2 to the lag-1 mean squared difference, less 1; 0 for a series that
    /// has not moved (nothing to carry over).
    fn raw_autocorrelation(at_1: f64, at_2: f64) -> f64 {
        match at_1 > 0.0 {
            true => at_2 / at_1 - 1.0,
            false => 0.0,
        }
    }

    /// The lag-1 autocorrelation, as the evidence allows for it ([`as_used`], `margin`
    /// standard errors added): the ratio of the lag-2 to the lag-1 mean squared difference,
    /// less 1.
    pub fn autocorrelation(&self, margin: f64) -> f64 {
        // Before there are enough values nothing is allowed for: a few periods bounded each
        // (the bets' cap, one sign each) cannot show a regression on their own.
        let n = f64::from(self.values.max(1));
        match self.mean_squares() {
            Some((at_1, at_2)) => as_used(Self::raw_autocorrelation(at_1, at_2), n, margin),
            None => 0.0,
        }
    }

    /// The variance of the series: the lag-1 mean squared difference over 2 (1 − ρ), ρ the
    /// estimate itself (0 to [`MAX_AUTOCORRELATION`]); `None` before there are enough values.
    pub fn variance(&self) -> Option<f64> {
        let (at_1, at_2) = self.mean_squares()?;
        let rho = Self::raw_autocorrelation(at_1, at_2).clamp(0.0, MAX_AUTOCORRELATION);
        Some(at_1 / (2.0 * (1.0 - rho)))
    }
}

/// A lag-1 autocorrelation estimated from `n` values, as the evidence allows for it: corrected
/// for its bias toward 0 (Kendall's, about (1 + 3ρ) / n), plus `margin` standard errors
/// (√((1 − ρ²) / n)), from 0 to [`MAX_AUTOCORRELATION`]. A short series of a drift that
/// carries over looks less autocorrelated than it is, and allowing for too little is what rolls
/// a healthy canary back; too much only costs speed.
pub fn as_used(rho: f64, n: f64, margin: f64) -> f64 {
    let rho = rho.clamp(-1.0, 1.0);
    let estimate = rho + (1.0 + 3.0 * rho.max(0.0)) / n + margin * ((1.0 - rho * rho) / n).sqrt();
    estimate.clamp(0.0, MAX_AUTOCORRELATION)
}

/// How much more a sum of AR(1) values of lag-1 autocorrelation `rho` spreads than a sum of
/// independent ones: (1 + ρ) / (1 − ρ), ρ at most [`MAX_AUTOCORRELATION`].
pub fn carried_over(rho: f64) -> f64 {
    let rho = rho.clamp(0.0, MAX_AUTOCORRELATION);
    (1.0 + rho) / (1.0 - rho)
}

/// How much more a count of an AR(1)'s values above their median spreads than a count of
/// independent signs: 1 + 2 Σₖ (2/π) arcsin(ρᵏ), the signs at lag k of a Gaussian AR(1) of ρ
/// correlating (2/π) arcsin(ρᵏ).
pub fn signs_carried_over(rho: f64) -> f64 {
    let rho = rho.clamp(0.0, MAX_AUTOCORRELATION);
    let mut factor = 1.0;
    let mut power = rho;
    for _ in 0..1_000 {
        let term = 2.0 * std::f64::consts::FRAC_2_PI * power.asin();
        factor += term;
        power *= rho;
        if term < 1e-4 {
            break;
        }
    }
    factor
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `n` values of an AR(1) of `rho` (variance 1), plus `shift` from the middle on.
    fn series(rho: f64, shift: f64, n: usize) -> Deltas {
        let mut uniform = crate::analysis::test_uniforms(20_261_202);
        let mut deltas = Deltas::default();
        let mut value = 0.0;
        for i in 0..n {
            let noise = (-2.0 * uniform().ln()).sqrt() * (std::f64::consts::TAU * uniform()).cos();
            value = rho * value + (1.0 - rho * rho).sqrt() * noise;
            deltas.add(value + if i >= n / 2 { shift } else { 0.0 });
        }
        deltas
    }

    #[test]
    fn a_drift_is_found_in_the_differences() {
        let drifting = series(0.8, 0.0, 2_000);
        let rho = drifting.autocorrelation(0.0);
        assert!((0.75..0.9).contains(&rho), "{rho}");
        let variance = drifting.variance().expect("enough values");
        assert!((0.8..1.25).contains(&variance), "{variance}");
        let independent = series(0.0, 0.0, 2_000);
        assert!(independent.autocorrelation(0.0) < 0.1, "{independent:?}");
    }

    #[test]
    fn a_steady_excess_far_beyond_its_moves_stands_out_of_any_drift() {
        // A smooth series (it carries over) ten standard deviations from 0.
        let mut smooth = Deltas::default();
        for i in 0..20 {
            smooth.add(0.05 + 0.001 * f64::from(i % 4));
        }
        assert!(smooth.mean_stands_out(0.0515, smooth.autocorrelation(0.0)));
        // The same smoothness around 0: a drift.
        assert!(!smooth.mean_stands_out(0.0015, smooth.autocorrelation(0.0)));
    }

    #[test]
    fn a_level_shift_is_not_a_drift() {
        // A regression of ten standard deviations beginning halfway.
        let shifted = series(0.0, 10.0, 60);
        assert!(shifted.autocorrelation(COUNTS_MARGIN) < 0.5, "{shifted:?}");
        let variance = shifted.variance().expect("enough values");
        assert!(variance < 3.0, "{variance}");
    }

    #[test]
    fn few_values_say_nothing_and_more_get_a_margin() {
        assert_eq!(series(0.0, 0.0, 4).autocorrelation(COUNTS_MARGIN), 0.0);
        assert_eq!(series(0.0, 0.0, 4).variance(), None);
        assert!(
            series(0.0, 0.0, 5).autocorrelation(COUNTS_MARGIN) > 0.3,
            "a margin for 5 values"
        );
        assert!((carried_over(0.5) - 3.0).abs() < 1e-12);
        assert_eq!(signs_carried_over(0.0), 1.0);
        // Signs of an AR(1) of 0.9 spread about thirteen times as much as independent ones.
        assert!(
            (12.0..14.5).contains(&signs_carried_over(0.9)),
            "{}",
            signs_carried_over(0.9)
        );
    }

    #[test]
    fn the_state_keeps_six_digits_and_no_infinity() {
        let mut deltas = Deltas::default();
        for value in [1.0, f64::INFINITY, 1e300, -1e300, 2.0] {
            deltas.add(value);
        }
        assert!(deltas.squares.iter().all(|s| s.is_finite()));
        let text = serde_json::to_string(&Deltas {
            values: 3,
            squares: [1.234_567_891_23, 0.0],
            recent: [-0.000_123_456_789_123, 5.0],
        })
        .expect("json");
        assert_eq!(
            text,
            r#"{"n":3,"sq":[1.23457,0.0],"last":[-0.000123457,5.0]}"#
        );
    }
}
