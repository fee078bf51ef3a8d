//! canary-core's comparison evidence against the references on the cases of
//! `fixtures/savvi_cases.json` (written by `scripts/savvi_cases.py` with the pinned savvi and
//! scipy; tests/e2e/test_statistics_against_savvi.py fails when the fixture is not what they
//! say): the sign evidence against savvi's `Multinomial` odds, taken in a check at a time; the
//! error-count evidence against likelihood ratios from scipy's binomial distribution.

use canary_core::analysis::statistics::{Counts, Signs};
use serde::Deserialize;

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct SignsCase {
    name: String,
    checks: Vec<[u32; 2]>,
    periods: u32,
    beyond: u32,
    log_evidence: f64,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct CountsCase {
    name: String,
    periods: Vec<(u64, u64, f64, bool)>,
    log_evidence: f64,
}

#[derive(Deserialize)]
struct Fixture {
    signs: Vec<SignsCase>,
    counts: Vec<CountsCase>,
}

fn close(ours: f64, theirs: f64) -> bool {
    (ours - theirs).abs() <= 1e-9 + 1e-9 * theirs.abs()
}

fn fixture() -> Fixture {
    serde_json::from_str(include_str!("fixtures/savvi_cases.json")).expect("the fixture")
}

#[test]
fn the_sign_evidence_is_savvis_multinomial_odds() {
    let cases = fixture().signs;
    assert!(cases.len() >= 30, "{} cases", cases.len());
    for case in &cases {
        let mut signs = Signs::default();
        for [beyond, not_beyond] in &case.checks {
            for _ in 0..*beyond {
                signs.add(true);
            }
            for _ in 0..*not_beyond {
                signs.add(false);
            }
        }
        assert_eq!(
            (signs.periods, signs.beyond),
            (case.periods, case.beyond),
            "{}",
            case.name
        );
        assert!(
            close(signs.log_evidence(), case.log_evidence),
            "{}: {} vs savvi {}",
            case.name,
            signs.log_evidence(),
            case.log_evidence
        );
    }
}

#[test]
fn the_error_count_evidence_is_the_binomial_likelihood_ratios() {
    let cases = fixture().counts;
    assert!(cases.len() >= 30, "{} cases", cases.len());
    for case in &cases {
        let mut counts = Counts::default();
        for (canary, errors, share, lower) in &case.periods {
            counts.add(*canary, *errors, *share, *lower, None);
        }
        assert!(
            close(counts.log_evidence(), case.log_evidence),
            "{}: {} vs scipy {}",
            case.name,
            counts.log_evidence(),
            case.log_evidence
        );
    }
}
