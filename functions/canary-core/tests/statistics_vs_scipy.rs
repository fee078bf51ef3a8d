//! canary-core's Mann–Whitney U test and Hodges–Lehmann shift against scipy's on the cases of
//! `fixtures/scipy_cases.json` (written by `scripts/scipy_cases.py` with the pinned scipy;
//! tests/e2e/test_statistics_against_scipy.py fails when the fixture is not what scipy says).

use canary_core::analysis::statistics::compare;
use serde::Deserialize;

#[derive(Deserialize)]
struct Case {
    name: String,
    canary: Vec<f64>,
    baseline: Vec<f64>,
    u: Option<f64>,
    p: Option<f64>,
    shift: Option<f64>,
}

fn close(ours: f64, theirs: f64) -> bool {
    (ours - theirs).abs() <= 1e-9 + 1e-7 * theirs.abs()
}

#[test]
fn every_case_agrees_with_scipy() {
    let cases: Vec<Case> =
        serde_json::from_str(include_str!("fixtures/scipy_cases.json")).expect("the fixture");
    assert!(cases.len() >= 50, "{} cases", cases.len());
    for case in &cases {
        let ours = compare(&case.canary, &case.baseline, 0.95);
        match (ours, case.u, case.p, case.shift) {
            (None, None, None, None) => {}
            (Some(ours), Some(u), Some(p), Some(shift)) => {
                assert_eq!(ours.u_canary, u, "{}: U", case.name);
                assert!(
                    close(ours.p_value, p),
                    "{}: p {} vs scipy {p}",
                    case.name,
                    ours.p_value
                );
                assert!(
                    close(ours.shift, shift),
                    "{}: shift {} vs numpy {shift}",
                    case.name,
                    ours.shift
                );
                assert!(
                    ours.lower <= ours.shift && ours.shift <= ours.upper,
                    "{}: {ours:?}",
                    case.name
                );
            }
            (ours, ..) => panic!(
                "{}: ours {ours:?}, scipy u {:?} p {:?}",
                case.name, case.u, case.p
            ),
        }
    }
}
