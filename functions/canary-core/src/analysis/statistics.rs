//! The comparison check's statistics: the Mann–Whitney U test of canary samples against
//! baseline samples, and the Hodges–Lehmann estimate of the shift between them with its
//! confidence interval. Written once here without IO; the normal distribution is statrs's.
//!
//! The p-value is the one scipy's `mannwhitneyu(canary, baseline, alternative="two-sided")`
//! gives with its default `method="auto"`: the exact distribution of U when a side has at most
//! 8 samples and no value is tied, otherwise the normal approximation with the tie correction
//! and the continuity correction. `tests/statistics_vs_scipy.rs` checks both against scipy on
//! generated samples (ties, equal samples, all zeros, an empty side, 1 vs 1,000).

use statrs::distribution::{ContinuousCDF, Normal};

/// Most samples a side may bring: the Hodges–Lehmann estimate sorts every pairwise difference
/// (at most 2,000 × 2,000 = 4 million of them, 32 MiB, well inside a Lambda's memory).
pub const MAX_SAMPLES_PER_SIDE: usize = 2_000;

/// The result of comparing the canary's samples with the baseline's.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Comparison {
    /// U of the canary: how many (canary, baseline) pairs have the canary higher, ties half.
    pub u_canary: f64,
    /// Two-sided p-value of "both sides come from the same distribution".
    pub p_value: f64,
    /// The Hodges–Lehmann estimate of the canary's shift over the baseline: the median of every
    /// difference canary − baseline.
    pub shift: f64,
    /// The confidence interval of the shift at the requested level (`lower <= shift <= upper`).
    pub lower: f64,
    pub upper: f64,
}

/// Compares two non-empty samples of finite values; `None` when a side is empty, over
/// [`MAX_SAMPLES_PER_SIDE`], or holds a value that is not finite. `confidence` is the level of
/// the shift's interval, in (0, 1).
pub fn compare(canary: &[f64], baseline: &[f64], confidence: f64) -> Option<Comparison> {
    let usable = |side: &[f64]| {
        !side.is_empty() && side.len() <= MAX_SAMPLES_PER_SIDE && side.iter().all(|v| v.is_finite())
    };
    if !(usable(canary) && usable(baseline) && confidence > 0.0 && confidence < 1.0) {
        return None;
    }
    let (u_canary, p_value) = mann_whitney(canary, baseline);
    let (shift, lower, upper) = hodges_lehmann(canary, baseline, confidence);
    Some(Comparison {
        u_canary,
        p_value,
        shift,
        lower,
        upper,
    })
}

/// The median of a sample (the mean of the middle two for an even count); `None` when empty.
pub fn median(values: &[f64]) -> Option<f64> {
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    median_of_sorted(&sorted)
}

fn median_of_sorted(sorted: &[f64]) -> Option<f64> {
    let n = sorted.len();
    match n {
        0 => None,
        _ if n % 2 == 1 => Some(sorted[n / 2]),
        _ => Some((sorted[n / 2 - 1] + sorted[n / 2]) / 2.0),
    }
}

/// U of `x` and the two-sided p-value, as scipy's `method="auto"` computes them.
fn mann_whitney(x: &[f64], y: &[f64]) -> (f64, f64) {
    let (n1, n2) = (x.len() as f64, y.len() as f64);
    let ranked = average_ranks(x, y);
    let rank_sum_x: f64 = ranked.ranks[..x.len()].iter().sum();
    let u1 = rank_sum_x - n1 * (n1 + 1.0) / 2.0;
    let u2 = n1 * n2 - u1;
    // Two-sided: the larger U's upper tail, doubled.
    let u = u1.max(u2);
    let exact = (x.len() <= 8 || y.len() <= 8) && !ranked.tied;
    let upper_tail = if exact {
        exact_upper_tail(u, x.len(), y.len())
    } else {
        normal_upper_tail(u, n1, n2, ranked.tie_term)
    };
    (u1, (2.0 * upper_tail).clamp(0.0, 1.0))
}

struct Ranked {
    /// The rank of each value, `x` first then `y`; tied values share their average rank.
    ranks: Vec<f64>,
    /// Σ (t³ − t) over the groups of t tied values.
    tie_term: f64,
    tied: bool,
}

fn average_ranks(x: &[f64], y: &[f64]) -> Ranked {
    let values: Vec<f64> = x.iter().chain(y).copied().collect();
    let mut order: Vec<usize> = (0..values.len()).collect();
    order.sort_by(|a, b| values[*a].total_cmp(&values[*b]));
    let mut ranks = vec![0.0; values.len()];
    let (mut tie_term, mut tied) = (0.0, false);
    let mut start = 0;
    while start < order.len() {
        let mut end = start + 1;
        while end < order.len() && values[order[end]] == values[order[start]] {
            end += 1;
        }
        // Positions start..end hold ranks start+1..=end: their average.
        let rank = (start + 1 + end) as f64 / 2.0;
        for &index in &order[start..end] {
            ranks[index] = rank;
        }
        let t = (end - start) as f64;
        if t > 1.0 {
            tied = true;
            tie_term += t * t * t - t;
        }
        start = end;
    }
    Ranked {
        ranks,
        tie_term,
        tied,
    }
}

/// P(U >= u) under the normal approximation, with the tie and continuity corrections.
fn normal_upper_tail(u: f64, n1: f64, n2: f64, tie_term: f64) -> f64 {
    let n = n1 + n2;
    let mean = n1 * n2 / 2.0;
    let variance = n1 * n2 / 12.0 * ((n + 1.0) - tie_term / (n * (n - 1.0)));
    let numerator = u - mean - 0.5;
    if variance <= 0.0 || !variance.is_finite() {
        // Every value equal: nothing tells the sides apart (scipy's z is -inf here: p = 1).
        return if numerator > 0.0 { 0.0 } else { 1.0 };
    }
    let z = numerator / variance.sqrt();
    1.0 - standard_normal().cdf(z)
}

/// P(U >= u) from U's exact distribution without ties. The arrangements of the two sides
/// giving each U are the coefficients of the Gaussian binomial
/// Π_{i=1..small} (1 − q^{large+i}) / (1 − q^i), built one factor at a time (a division by
/// 1 − q^i is a running sum; coefficient s needs only those below it, so cutting at the
/// largest U loses nothing).
fn exact_upper_tail(u: f64, n1: usize, n2: usize) -> f64 {
    let (small, large) = (n1.min(n2), n1.max(n2));
    let max_u = small * large;
    let mut counts = vec![0.0f64; max_u + 1];
    counts[0] = 1.0;
    for i in 1..=small {
        let step = large + i;
        for s in (step..=max_u).rev() {
            counts[s] -= counts[s - step];
        }
        for s in i..=max_u {
            counts[s] += counts[s - i];
        }
    }
    let total: f64 = counts.iter().sum();
    // U values are whole numbers without ties.
    let from = u.ceil().max(0.0) as usize;
    let tail: f64 = counts.iter().skip(from).sum();
    tail / total
}

/// The Hodges–Lehmann estimate of the shift x − y and its confidence interval (the
/// distribution-free interval from the sorted pairwise differences, its rank from the normal
/// approximation of U).
fn hodges_lehmann(x: &[f64], y: &[f64], confidence: f64) -> (f64, f64, f64) {
    let mut differences: Vec<f64> = Vec::with_capacity(x.len() * y.len());
    for a in x {
        for b in y {
            differences.push(a - b);
        }
    }
    differences.sort_by(f64::total_cmp);
    let count = differences.len();
    let shift = median_of_sorted(&differences).unwrap_or(0.0);
    let (n1, n2) = (x.len() as f64, y.len() as f64);
    let z = standard_normal().inverse_cdf(1.0 - (1.0 - confidence) / 2.0);
    let spread = (n1 * n2 * (n1 + n2 + 1.0) / 12.0).sqrt();
    // The k-th smallest and k-th largest differences bound the interval (k from 1).
    let k = (n1 * n2 / 2.0 - z * spread).floor().max(0.0) as usize;
    let lower = differences[k.min(count - 1)];
    let upper = differences[count - 1 - k.min(count - 1)];
    (shift, lower.min(shift), upper.max(shift))
}

fn standard_normal() -> Normal {
    // Mean 0 and standard deviation 1 are valid parameters: this cannot fail.
    Normal::standard()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_median_of_odd_and_even_counts() {
        assert_eq!(median(&[3.0, 1.0, 2.0]), Some(2.0));
        assert_eq!(median(&[4.0, 1.0, 3.0, 2.0]), Some(2.5));
        assert_eq!(median(&[]), None);
    }

    #[test]
    fn a_side_with_nothing_to_compare_gives_no_comparison() {
        assert_eq!(compare(&[], &[1.0], 0.95), None);
        assert_eq!(compare(&[1.0], &[], 0.95), None);
        assert_eq!(compare(&[f64::NAN], &[1.0], 0.95), None);
        assert_eq!(compare(&[1.0], &[1.0], 1.0), None);
        let too_many = vec![1.0; MAX_SAMPLES_PER_SIDE + 1];
        assert_eq!(compare(&too_many, &[1.0], 0.95), None);
    }

    #[test]
    fn equal_samples_are_not_told_apart() {
        let c = compare(&[0.0; 20], &[0.0; 20], 0.95).expect("a comparison");
        assert_eq!((c.p_value, c.shift, c.lower, c.upper), (1.0, 0.0, 0.0, 0.0));
    }

    #[test]
    fn a_clear_shift_is_found_with_its_size() {
        let baseline: Vec<f64> = (0..30).map(|i| 100.0 + f64::from(i % 7)).collect();
        let canary: Vec<f64> = baseline.iter().map(|v| v + 50.0).collect();
        let c = compare(&canary, &baseline, 0.95).expect("a comparison");
        assert!(c.p_value < 1e-6, "{c:?}");
        assert_eq!(c.shift, 50.0);
        assert!(c.lower <= 50.0 && c.upper >= 50.0, "{c:?}");
    }

    #[test]
    fn the_exact_distribution_of_small_samples() {
        // n1 = n2 = 3 without ties: 20 arrangements, U = 9 only when every canary value is
        // higher: P(U >= 9) = 1/20, two-sided 0.1.
        let c = compare(&[4.0, 5.0, 6.0], &[1.0, 2.0, 3.0], 0.95).expect("a comparison");
        assert_eq!(c.u_canary, 9.0);
        assert!((c.p_value - 0.1).abs() < 1e-12, "{c:?}");
    }
}
