//! The comparison check's statistics: evidence that accumulates over a rollout, one period at a
//! time, and stays valid however often it is looked at (an e-process: under "no regression" its
//! value stays below 1/α with probability at least 1 − α at every look together, by Ville's
//! inequality). Two kinds, one per kind of metric; both keep a few numbers between checks.
//!
//! - [`Signs`], for a value per period (a latency at a statistic, a query's value): in each
//!   period, is the canary beyond the allowed band around the baseline of the *same* period?
//!   Without a regression that happens at most half the time, whatever the values' distribution
//!   (tails, ties, load that hits both clusters at once). The evidence is the Bayes factor of
//!   savvi's `Multinomial` test (Lindon & Malek, "Anytime-valid inference for multinomial count
//!   data", NeurIPS 2022) of the counts [beyond, not beyond] against θ₀ = [½, ½] with its
//!   Dirichlet prior k·θ₀, k = 2 (a uniform prior on the share beyond): a test martingale when
//!   the share is ½. It is two-sided; a regression counts only when more than half the periods
//!   were beyond, which keeps it valid for "at most half" (the event only grows with the
//!   periods beyond). `tests/statistics_vs_savvi.rs` checks it against savvi itself.
//! - [`Counts`], for errors over requests: given the errors both clusters had in a period, each
//!   one is the canary's with the share of requests the canary served (rates equal), or less
//!   (the canary no worse than `allowedIncrease` times the baseline's rate). The evidence is the
//!   mean of the likelihood ratios of canary error rates 1.25 to 10 times that (a discrete
//!   mixture, as savvi's `InhomogeneousPoissonProcess`, the canary test of the same paper, mixes
//!   over rates; ours lets the canary's share of requests change from period to period, as it
//!   does from step to step). Checked against scipy's binomial distribution.
//!
//! Pure arithmetic, no IO. Semantics and the false-rollback figures: docs/signals/compare.md.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use statrs::function::gamma::ln_gamma;

/// The canary's error rate as a multiple of the highest rate "no regression" allows, in the
/// mixture of [`Counts`]: equal weights.
pub const RATE_MULTIPLES: [f64; 6] = [1.25, 1.5, 2.0, 3.0, 5.0, 10.0];

/// The sign sequence of one direction: paired periods compared, and how many had the canary
/// beyond the allowed band in that direction.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Signs {
    pub periods: u32,
    pub beyond: u32,
    /// The last period's excess over the band, when the metric's own autocorrelation is
    /// whitened out ([`Signs::innovation`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_excess: Option<f64>,
}

impl Signs {
    /// What a period's `excess` over the band says once the metric's own autocorrelation `rho`
    /// (AR(1), per period) is taken out: `excess − rho × the last period's`, the part the past
    /// did not foretell. With `rho` right, it is as often above 0 as below when nothing
    /// regressed, however long each cluster's own drifts last; with `rho` 0, the excess itself.
    pub fn innovation(&mut self, excess: f64, rho: f64) -> f64 {
        if rho <= 0.0 {
            return excess;
        }
        let innovation = excess - rho * self.last_excess.unwrap_or(0.0);
        self.last_excess = Some(excess);
        innovation
    }

    pub fn add(&mut self, beyond: bool) {
        self.periods = self.periods.saturating_add(1);
        self.beyond = self.beyond.saturating_add(u32::from(beyond));
    }

    /// The natural log of the evidence: savvi's `Multinomial(θ₀ = [½, ½], k = 2)` odds after the
    /// counts [beyond, periods − beyond], `ln B(1 + s, 1 + n − s) − ln B(1, 1) + n ln 2`.
    pub fn log_evidence(&self) -> f64 {
        let (n, s) = (
            f64::from(self.periods),
            f64::from(self.beyond.min(self.periods)),
        );
        ln_gamma(1.0 + s) + ln_gamma(1.0 + n - s) - ln_gamma(2.0 + n) + n * std::f64::consts::LN_2
    }

    /// The natural log of the evidence of a regression: [`Self::log_evidence`] when more than
    /// half the periods were beyond, at most 0 otherwise (the odds then speak of the other
    /// direction: evidence of no regression).
    pub fn log_evidence_of_regression(&self) -> f64 {
        match u64::from(self.beyond) * 2 > u64::from(self.periods) {
            true => self.log_evidence(),
            false => self.log_evidence().min(0.0),
        }
    }

    /// The evidence shows a regression: at `log_threshold` (ln 1/α, above 0) or more.
    pub fn shows(&self, log_threshold: f64) -> bool {
        self.log_evidence_of_regression() >= log_threshold
    }
}

/// The error-count sequence of one direction: for each of [`RATE_MULTIPLES`], the log of its
/// likelihood ratio so far.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Counts {
    /// Kept to 6 decimals in the state, each rounded down (never more evidence than there is).
    #[serde(serialize_with = "floor_to_micros")]
    pub log_ratios: Vec<f64>,
}

impl Default for Counts {
    fn default() -> Self {
        Counts {
            log_ratios: vec![0.0; RATE_MULTIPLES.len()],
        }
    }
}

fn floor_to_micros<S: serde::Serializer>(values: &[f64], serializer: S) -> Result<S::Ok, S::Error> {
    use serde::ser::SerializeSeq;
    let mut seq = serializer.serialize_seq(Some(values.len()))?;
    for value in values {
        seq.serialize_element(&((value * 1e6).floor() / 1e6))?;
    }
    seq.end()
}

impl Counts {
    /// One period: `canary_errors` of `errors` were the canary's, when "no regression" says each
    /// is the canary's with probability at most `null_share` (for a decrease: at least, and
    /// `lower` is true). A period without errors, or a share of 0 or 1, says nothing.
    pub fn add(&mut self, canary_errors: u64, errors: u64, null_share: f64, lower: bool) {
        if errors == 0 || !(null_share > 0.0 && null_share < 1.0) {
            return;
        }
        let (x, k) = (canary_errors.min(errors) as f64, errors as f64);
        for (log_ratio, multiple) in self.log_ratios.iter_mut().zip(RATE_MULTIPLES) {
            // The alternative multiplies the odds of an error being the canary's by θ: its
            // likelihood ratio over the null is θ^x / (1 − p + θp)^k.
            let theta = if lower { 1.0 / multiple } else { multiple };
            *log_ratio += x * theta.ln() - k * (1.0 - null_share + theta * null_share).ln();
        }
    }

    /// The natural log of the evidence: the log of the mean of the likelihood ratios.
    pub fn log_evidence(&self) -> f64 {
        let count = self.log_ratios.len();
        let Some(top) = self.log_ratios.iter().copied().reduce(f64::max) else {
            return 0.0;
        };
        let sum: f64 = self.log_ratios.iter().map(|l| (l - top).exp()).sum();
        top + sum.ln() - (count as f64).ln()
    }

    pub fn shows(&self, log_threshold: f64) -> bool {
        self.log_evidence() >= log_threshold
    }
}

/// The median of a sample (the mean of the middle two for an even count); `None` when empty.
pub fn median(values: &[f64]) -> Option<f64> {
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    let n = sorted.len();
    match n {
        0 => None,
        _ if n % 2 == 1 => Some(sorted[n / 2]),
        _ => Some((sorted[n / 2 - 1] + sorted[n / 2]) / 2.0),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_median_of_odd_and_even_counts() {
        assert_eq!(median(&[3.0, 1.0, 2.0]), Some(2.0));
        assert_eq!(median(&[4.0, 1.0, 2.0, 3.0]), Some(2.5));
        assert_eq!(median(&[]), None);
    }

    #[test]
    fn no_period_is_no_evidence() {
        assert!(Signs::default().log_evidence().abs() < 1e-12);
        assert_eq!(Counts::default().log_evidence(), 0.0);
    }

    #[test]
    fn the_state_keeps_log_ratios_rounded_down() {
        let counts = Counts {
            log_ratios: vec![1.234_567_89, -1.234_567_89],
        };
        let text = serde_json::to_string(&counts).expect("json");
        assert_eq!(text, r#"{"logRatios":[1.234567,-1.234568]}"#);
    }

    #[test]
    fn every_period_beyond_doubles_the_evidence_less_the_prior_s_share() {
        // All n beyond: 2^n / (n + 1).
        let mut signs = Signs::default();
        for _ in 0..13 {
            signs.add(true);
        }
        let expected = (8192.0_f64 / 14.0).ln();
        assert!((signs.log_evidence() - expected).abs() < 1e-9);
        assert!(signs.shows((100.0_f64).ln()));
        assert!(!signs.shows((1000.0_f64).ln()));
    }

    #[test]
    fn a_known_autocorrelation_is_taken_out_of_each_excess() {
        let mut signs = Signs::default();
        assert_eq!(signs.innovation(1.0, 0.0), 1.0);
        assert_eq!(
            signs.last_excess, None,
            "nothing kept without autocorrelation"
        );
        assert_eq!(signs.innovation(1.0, 0.9), 1.0);
        // A drift that persists as the autocorrelation foretells is no news.
        assert!((signs.innovation(0.9, 0.9) - 0.0).abs() < 1e-12);
        assert!(signs.innovation(0.5, 0.9) < 0.0);
        assert_eq!(signs.last_excess, Some(0.5));
    }

    #[test]
    fn periods_mostly_below_never_show_an_increase() {
        // 20 periods none beyond: the two-sided evidence is large, but it speaks of the other
        // direction.
        let mut signs = Signs::default();
        for _ in 0..20 {
            signs.add(false);
        }
        assert!(signs.log_evidence() > 10.0);
        assert_eq!(signs.log_evidence_of_regression(), 0.0);
        assert!(!signs.shows(1.0));
    }

    #[test]
    fn errors_in_the_canary_s_share_are_no_evidence_and_more_are() {
        let mut even = Counts::default();
        let mut worse = Counts::default();
        for _ in 0..10 {
            even.add(10, 100, 0.1, false);
            worse.add(30, 120, 0.1, false);
        }
        assert!(even.log_evidence() < 0.0, "{}", even.log_evidence());
        assert!(worse.shows((1e6_f64).ln()), "{}", worse.log_evidence());
        // Fewer errors than the share is evidence of a decrease, not of an increase.
        let mut fewer = Counts::default();
        fewer.add(0, 200, 0.1, true);
        assert!(fewer.log_evidence() > 5.0);
    }

    #[test]
    fn a_period_without_errors_or_without_a_share_says_nothing() {
        let mut counts = Counts::default();
        counts.add(0, 0, 0.5, false);
        counts.add(3, 3, 0.0, false);
        counts.add(3, 3, 1.0, false);
        assert_eq!(counts, Counts::default());
    }
}
