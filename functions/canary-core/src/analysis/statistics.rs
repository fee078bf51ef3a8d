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
//!   periods beyond). `tests/statistics_vs_savvi.rs` checks it against savvi itself. A cluster
//!   that drifts on its own (slower than the other for minutes at a time) breaks "half the
//!   time" from one period to the next: each period is judged by what the last one did not
//!   foretell, with the excess's lag-1 autocorrelation the plan gives or, by default, the one
//!   the rollout's own periods show so far ([`Signs::innovation`]).
//! - [`Counts`], for errors (or slow requests) over requests: given the errors both clusters
//!   had in a period, each one is the canary's with the share of requests the canary served
//!   (rates equal), or less (the canary no worse than `allowedIncrease` times the baseline's
//!   rate). Each of six bets (canary error rates 1.25 to 10 times that) stakes [`STAKE`] of its
//!   wealth on each period's likelihood ratio, the ratio counted up to [`PERIOD_RATIO_CAP`]:
//!   a period multiplies a bet by 1 + STAKE × (min(ratio, cap) − 1), so one period can neither
//!   say more than a period can (a burst of errors on one cluster, a pod restarting) nor wipe a
//!   bet out (a burst on the other). E[min(ratio, cap)] ≤ E[ratio] = 1 when the errors are
//!   Poisson with equal rates, so each bet is still a test supermartingale there, and so is
//!   their mean, the evidence (a mixture over rates, as savvi's `InhomogeneousPoissonProcess`,
//!   the canary test of the same paper, mixes; ours lets the canary's share of requests change
//!   from period to period, as it does from step to step). Checked against scipy's binomial
//!   distribution.
//!
//! Pure arithmetic, no IO. Semantics and the false-rollback figures: docs/signals/compare.md.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use statrs::function::gamma::ln_gamma;

use super::dependence::{
    carried_over, signs_carried_over, six_digits, Deltas, COUNTS_MARGIN, SIGNS_MARGIN,
};

/// The canary's error rate as a multiple of the highest rate "no regression" allows, in the
/// mixture of [`Counts`]: equal weights.
pub const RATE_MULTIPLES: [f64; 6] = [1.25, 1.5, 2.0, 3.0, 5.0, 10.0];
/// The most one period's likelihood ratio counts for in a [`Counts`] bet. With [`STAKE`], a
/// period multiplies the evidence by at most 1 + 0.8 × 3 = 3.4: a regression takes at least
/// five periods at the docs' α (ln 400 / ln 3.4), and a burst of errors on the canary alone,
/// which Poisson errors would call overwhelming, is one period's worth.
pub const PERIOD_RATIO_CAP: f64 = 4.0;
/// The share of its wealth each [`Counts`] bet stakes on a period: a period that speaks
/// against a regression (a burst of errors on the baseline) leaves at least 1 − STAKE of it.
pub const STAKE: f64 = 0.8;
/// The sign sequence of one direction: paired periods compared, and how many had the canary
/// beyond the allowed band in that direction.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Signs {
    pub periods: u32,
    pub beyond: u32,
    /// The last period's excess over the band, when the plan's `autocorrelation` is whitened
    /// out ([`Signs::innovation`]). Never beside `dependence`: one or the other.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        serialize_with = "excess_in_six_digits"
    )]
    pub last_excess: Option<f64>,
    /// The excesses' differences, when the dependence between periods (each cluster's own
    /// drift) is estimated from them: the plan gives no `autocorrelation`
    /// ([`Signs::effective_share`]).
    #[serde(rename = "drift", default, skip_serializing_if = "Option::is_none")]
    pub dependence: Option<Deltas>,
    /// The excesses' sum, with `dependence`: their mean may stand out of any drift.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        serialize_with = "excess_in_six_digits"
    )]
    pub excess_sum: Option<f64>,
}

fn excess_in_six_digits<S: serde::Serializer>(
    value: &Option<f64>,
    serializer: S,
) -> Result<S::Ok, S::Error> {
    value.map(six_digits).serialize(serializer)
}

impl Signs {
    /// What a check could have written: never more periods beyond the band than periods.
    pub fn check(&self) -> Result<(), String> {
        if self.beyond > self.periods {
            return Err(format!(
                "{} periods beyond the band of {} taken in",
                self.beyond, self.periods
            ));
        }
        Ok(())
    }

    /// A sequence whose dependence between periods is estimated from its own periods.
    pub fn estimating() -> Self {
        Signs {
            dependence: Some(Deltas::default()),
            ..Signs::default()
        }
    }

    /// What a period's `excess` over the band says: with the plan's `autocorrelation` `rho`
    /// (AR(1), per period), `excess − rho × the last period's`, the part the past did not
    /// foretell; with it estimated, the excess itself (and the estimate takes it in). With
    /// `rho` right, the innovation is as often above 0 as below when nothing regressed,
    /// however long each cluster's own drifts last.
    pub fn innovation(&mut self, excess: f64, rho: f64) -> f64 {
        if let Some(dependence) = self.dependence.as_mut() {
            dependence.add(excess);
            let sum = self.excess_sum.unwrap_or(0.0) + excess;
            // Kept finite (JSON has no infinity): a series that large is left as it was.
            if sum.is_finite() {
                self.excess_sum = Some(sum);
            }
            return excess;
        }
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

    /// The share of a period's say the evidence gives each period: 1 for independent periods
    /// (or the plan's `autocorrelation` whitened out), 1 / (how much more the count of periods
    /// beyond spreads than independent signs would) when the excesses carry over from period to
    /// period as an AR(1) of the estimated ρ ([`dependence::signs_carried_over`]) — unless their
    /// mean stands out of what such a drift could make of it ([`Deltas::mean_stands_out`]).
    pub fn effective_share(&self) -> f64 {
        match &self.dependence {
            Some(dependence) => {
                let rho = dependence.autocorrelation(SIGNS_MARGIN);
                let mean = self.excess_sum.unwrap_or(0.0) / f64::from(dependence.values.max(1));
                match dependence.mean_stands_out(mean, rho) {
                    true => 1.0,
                    false => 1.0 / signs_carried_over(rho),
                }
            }
            None => 1.0,
        }
    }

    /// The natural log of the evidence: savvi's `Multinomial(θ₀ = [½, ½], k = 2)` odds after the
    /// counts [beyond, periods − beyond], `ln B(1 + s, 1 + n − s) − ln B(1, 1) + n ln 2`, each
    /// count times [`Self::effective_share`].
    pub fn log_evidence(&self) -> f64 {
        let share = self.effective_share();
        let (n, s) = (
            f64::from(self.periods) * share,
            f64::from(self.beyond.min(self.periods)) * share,
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
/// bet's wealth so far, and the periods' Pearson residuals' differences.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Counts {
    /// Kept to 6 decimals in the state, each rounded down (never more evidence than there is).
    #[serde(serialize_with = "floor_to_micros")]
    pub log_ratios: Vec<f64>,
    /// The Pearson residuals of the periods taken in, (canary errors − share × errors) /
    /// √(share × (1 − share) × errors): under Poisson errors of equal rates each has mean 0 and
    /// variance 1 and foretells nothing of the next ([`Counts::dispersion`]).
    #[serde(default, skip_serializing_if = "Deltas::is_empty")]
    pub residuals: Deltas,
    /// The sum of those periods' share × (1 − share) × errors ([`Counts::dispersion`]).
    #[serde(
        rename = "poisson",
        default,
        skip_serializing_if = "is_zero",
        serialize_with = "in_six_digits"
    )]
    pub poisson_sum: f64,
}

/// A bet's log wealth is kept from −30 to 100, which bounds its place in the state. Above: far
/// past any 1/α the evidence is compared with (ln 1/α is at most about 14), and lowering a
/// wealth never makes the evidence say more. Below: a wealth of e⁻³⁰ counts for nothing, and
/// keeping it there adds at most e⁻³⁰ (10⁻¹³) per period to the evidence's mean.
pub const LOWEST_LOG_WEALTH: f64 = -30.0;
pub const HIGHEST_LOG_WEALTH: f64 = 100.0;

/// Periods of Poisson spread the dispersion starts from: a few periods cannot say much.
const PRIOR_PERIODS: f64 = 3.0;

impl Default for Counts {
    fn default() -> Self {
        Counts {
            log_ratios: vec![0.0; RATE_MULTIPLES.len()],
            residuals: Deltas::default(),
            poisson_sum: 0.0,
        }
    }
}

fn is_zero(value: &f64) -> bool {
    *value == 0.0
}

fn in_six_digits<S: serde::Serializer>(value: &f64, serializer: S) -> Result<S::Ok, S::Error> {
    serializer.serialize_f64(six_digits(*value))
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
    /// What a check could have written: one log wealth per bet, each within the bounds it is
    /// kept to.
    pub fn check(&self) -> Result<(), String> {
        if self.log_ratios.len() != RATE_MULTIPLES.len() {
            return Err(format!(
                "{} bets' log wealth, not {}",
                self.log_ratios.len(),
                RATE_MULTIPLES.len()
            ));
        }
        let bounds = LOWEST_LOG_WEALTH..=HIGHEST_LOG_WEALTH;
        match self.log_ratios.iter().find(|l| !bounds.contains(*l)) {
            Some(outside) => Err(format!(
                "a log wealth of {outside}, outside {LOWEST_LOG_WEALTH} to {HIGHEST_LOG_WEALTH}"
            )),
            None => Ok(()),
        }
    }

    /// One period: `canary_errors` of `errors` were the canary's, when "no regression" says each
    /// is the canary's with probability at most `null_share` (for a decrease: at least, and
    /// `lower` is true). A period without errors, or a share of 0 or 1, says nothing. `rho`:
    /// the plan's `autocorrelation` of the metric, if it gives one ([`Counts::dispersion`]).
    pub fn add(
        &mut self,
        canary_errors: u64,
        errors: u64,
        null_share: f64,
        lower: bool,
        rho: Option<f64>,
    ) {
        if errors == 0 || !(null_share > 0.0 && null_share < 1.0) {
            return;
        }
        let (x, k) = (canary_errors.min(errors) as f64, errors as f64);
        // The canary's errors' variance under the null (binomial, given the period's errors).
        let poisson = null_share * (1.0 - null_share) * k;
        // Tempered by what the periods before showed, never by this one's own split.
        let temper = 1.0 / self.dispersion(rho, poisson);
        for (log_wealth, multiple) in self.log_ratios.iter_mut().zip(RATE_MULTIPLES) {
            // The alternative multiplies the odds of an error being the canary's by θ: its
            // likelihood ratio over the null is θ^x / (1 − p + θp)^k.
            let theta = if lower { 1.0 / multiple } else { multiple };
            let log_ratio = x * theta.ln() - k * (1.0 - null_share + theta * null_share).ln();
            let counted = (temper * log_ratio).min(PERIOD_RATIO_CAP.ln()).exp();
            *log_wealth = (*log_wealth + (1.0 + STAKE * (counted - 1.0)).ln())
                .clamp(LOWEST_LOG_WEALTH, HIGHEST_LOG_WEALTH);
        }
        let residual = (x - null_share * k) / poisson.sqrt();
        // Under Poisson errors a residual's difference from the last has a mean square of 2.
        self.residuals.add_on_scale(residual, 2.0);
        let poisson_sum = self.poisson_sum + poisson;
        if poisson_sum.is_finite() {
            self.poisson_sum = poisson_sum;
        }
    }

    /// How much more a period's count spreads than Poisson errors would make it, at least 1:
    /// the residuals' variance (shrunk toward 1 by [`PRIOR_PERIODS`]) scaled to this period,
    /// times (1 + ρ) / (1 − ρ) for their lag-1 autocorrelation ρ (`rho`, the plan's
    /// `autocorrelation`, or estimated: [`Deltas`]). The bets take each period's likelihood
    /// ratio to the power 1 / dispersion, as a quasi-likelihood does: for errors that spread φ
    /// times more than Poisson's, the ratio to the power 1/φ has a mean of at most 1 again.
    ///
    /// Scaled: a drift of the error *rates* (each cluster's own) adds to a count's variance in
    /// proportion to the count squared, so a residual's variance is 1 + `poisson` × the drift's
    /// (`poisson`: this period's share × (1 − share) × errors). The variance's excess over 1 is
    /// the drift's at the mean `poisson` of the periods taken in; a period with more (a larger
    /// share) has it that many times over, never less. Without it a step to a larger share
    /// was tempered by what the drift did to the smaller steps' counts, and each cluster's own
    /// drift rolled healthy canaries back at the 25 and 50 % steps.
    pub fn dispersion(&self, rho: Option<f64>, poisson: f64) -> f64 {
        let rho = rho.unwrap_or_else(|| self.residuals.autocorrelation(COUNTS_MARGIN));
        let differences = f64::from(self.residuals.values.saturating_sub(1));
        let variance = match self.residuals.variance() {
            Some(variance) => {
                let variance =
                    (PRIOR_PERIODS + differences * variance) / (PRIOR_PERIODS + differences);
                let mean_poisson = self.poisson_sum / f64::from(self.residuals.values.max(1));
                let scale = match mean_poisson > 0.0 {
                    true => (poisson / mean_poisson).max(1.0),
                    false => 1.0,
                };
                match variance > 1.0 {
                    true => 1.0 + (variance - 1.0) * scale,
                    false => variance,
                }
            }
            None => 1.0,
        };
        (variance * carried_over(rho)).max(1.0)
    }

    /// The natural log of the evidence: the log of the mean of the bets' wealth.
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
            ..Counts::default()
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
            "nothing kept when the plan says the periods are independent"
        );
        assert_eq!(signs.innovation(1.0, 0.9), 1.0);
        // A drift that persists as the autocorrelation foretells is no news.
        assert!((signs.innovation(0.9, 0.9) - 0.0).abs() < 1e-12);
        assert!(signs.innovation(0.5, 0.9) < 0.0);
        assert_eq!(signs.last_excess, Some(0.5));
        assert_eq!(
            signs.effective_share(),
            1.0,
            "nothing estimated when the plan says"
        );
    }

    #[test]
    fn estimated_dependence_gives_each_period_less_say() {
        // Excesses that carry over (a drift).
        let mut drifting = Signs::estimating();
        let mut steady = Signs::estimating();
        let mut uniform = crate::analysis::test_uniforms(20_261_202);
        for i in 0..60 {
            // A slow swing around the band's edge: beyond for half a minute at a time.
            let excess = (f64::from(i) / 6.0).sin();
            drifting.innovation(excess, 0.0);
            drifting.add(excess > 0.0);
            // A steady excess with noise of its own (a fixed pseudo-random sequence): a
            // regression, not a drift.
            let noisy = 1.0 + 0.5 * uniform();
            steady.innovation(noisy, 0.0);
            steady.add(noisy > 0.0);
        }
        assert!(drifting.effective_share() < 0.2, "{drifting:?}");
        assert!(steady.effective_share() > 0.4, "{steady:?}");
        assert!(steady.shows((400.0_f64).ln()), "{}", steady.log_evidence());
        assert!(
            !drifting.shows((400.0_f64).ln()),
            "{}",
            drifting.log_evidence()
        );
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
            even.add(10, 100, 0.1, false, None);
            worse.add(30, 120, 0.1, false, None);
        }
        assert!(even.log_evidence() < 0.0, "{}", even.log_evidence());
        assert!(worse.shows((1e4_f64).ln()), "{}", worse.log_evidence());
        // Fewer errors than the share is evidence of a decrease, not of an increase.
        let mut fewer = Counts::default();
        for _ in 0..5 {
            fewer.add(0, 200, 0.1, true, None);
        }
        assert!(fewer.log_evidence() > 5.0, "{}", fewer.log_evidence());
    }

    #[test]
    fn counts_that_spread_more_than_poisson_s_count_for_less() {
        // The canary's share of the errors swinging from 30 % to 0 at a 10 % share of the
        // requests: its residuals spread ~20 times Poisson's.
        let mut swinging = Counts::default();
        for _ in 0..10 {
            swinging.add(30, 100, 0.1, false, None);
            swinging.add(0, 100, 0.1, false, None);
        }
        assert!(
            swinging.dispersion(None, 9.0) > 10.0,
            "{}",
            swinging.dispersion(None, 9.0)
        );
        assert!(swinging.log_evidence() < 1.0, "{}", swinging.log_evidence());
        // Poisson-like counts are tempered by little more than the margin of a short series:
        // 10 of 100 in each period.
        let mut even = Counts::default();
        for _ in 0..20 {
            even.add(10, 100, 0.1, false, None);
        }
        assert!(
            even.dispersion(None, 9.0) < 2.5,
            "{}",
            even.dispersion(None, 9.0)
        );
        // The plan's autocorrelation overrides the estimate.
        assert!(swinging.dispersion(Some(0.9), 9.0) > 5.0 * swinging.dispersion(Some(0.0), 9.0));
    }

    #[test]
    fn a_drift_of_the_error_rates_weighs_more_at_a_larger_share() {
        // The canary's error rate 1.5 times the baseline's, then 1/1.5, in turns of three
        // periods (a drift, no regression), at a 5 % share with 400 errors a period.
        let mut drifting = Counts::default();
        let at_five = 0.05 * 0.95 * 400.0;
        for period in 0..30 {
            let canary = if (period / 3) % 2 == 0 { 30 } else { 14 };
            drifting.add(canary, 400, 0.05, false, None);
        }
        let small = drifting.dispersion(None, at_five);
        assert!(small > 2.0, "the drift shows at 5 %: {small}");
        // The same drift at a 50 % share: ten times the errors the canary is expected to have,
        // ten times the drift's part of their spread.
        let large = drifting.dispersion(None, 0.5 * 0.5 * 4_000.0);
        assert!(
            large > 5.0 * small,
            "{large} at 50 % against {small} at 5 %"
        );
        // Poisson counts have no drift to scale: a larger share is tempered no more.
        let mut even = Counts::default();
        for period in 0..30 {
            even.add(20 + period % 2, 400, 0.05, false, None);
        }
        let (here, there) = (
            even.dispersion(None, at_five),
            even.dispersion(None, 1_000.0),
        );
        assert!((here - there).abs() < 1e-9, "{here} vs {there}");
    }

    #[test]
    fn a_period_says_no_more_than_a_period_can() {
        let most = (1.0 + STAKE * (PERIOD_RATIO_CAP - 1.0)).ln();
        // A burst on the canary: 150 of 160 errors at a 5 % share of the requests.
        let mut burst = Counts::default();
        burst.add(150, 160, 0.05, false, None);
        assert!(
            (burst.log_evidence() - most).abs() < 1e-9,
            "{}",
            burst.log_evidence()
        );
        // A burst on the baseline leaves every bet at least 1 − STAKE of its wealth, so a
        // regression after it is still caught.
        let mut other = Counts::default();
        other.add(1, 400, 0.05, false, None);
        for log_wealth in &other.log_ratios {
            assert!(*log_wealth >= (1.0 - STAKE).ln() - 1e-12, "{log_wealth}");
        }
        for _ in 0..8 {
            other.add(40, 100, 0.05, false, None);
        }
        assert!(other.shows((400.0_f64).ln()), "{}", other.log_evidence());
    }

    #[test]
    fn a_period_without_errors_or_without_a_share_says_nothing() {
        let mut counts = Counts::default();
        counts.add(0, 0, 0.5, false, None);
        counts.add(3, 3, 0.0, false, None);
        counts.add(3, 3, 1.0, false, None);
        assert_eq!(counts, Counts::default());
    }
}
