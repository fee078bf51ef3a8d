use serde_json::json;

use super::*;
use crate::analysis::dependence as statistics_dependence;

fn checks(metrics: serde_json::Value) -> CompareChecks {
    serde_json::from_value(json!({"minSamples": 10, "metrics": metrics})).expect("a section")
}

/// 30 periods, one a minute, around `center` for the canary and `base` for the baseline,
/// spread ±5 % at random (a fixed sequence: the same for every center, another for each side),
/// each period independent of the last as noise is.
fn periods(center: f64, base: f64) -> Vec<Period> {
    let mut uniform = crate::analysis::test_uniforms(20_261_130);
    let mut spread = move || 0.95 + 0.1 * uniform();
    (0..30)
        .map(|i| Period {
            at: 60 * i64::from(i),
            observation: Observation::Value {
                canary: center * spread(),
                other: base * spread(),
            },
        })
        .collect()
}

/// One metric's judgement with no evidence before, at the plan's whole α.
fn judge(section: &CompareChecks, window: &[Period]) -> MetricJudgement {
    judge_metric(
        section,
        0,
        false,
        section.alpha(0, 1),
        &Evidence::default(),
        window,
    )
    .expect("a metric")
}

fn latency(extra: serde_json::Value) -> CompareChecks {
    let mut metric = json!({"name": "latency", "alb": "latency"});
    if let (Some(metric), Some(extra)) = (metric.as_object_mut(), extra.as_object()) {
        metric.extend(extra.clone());
    }
    checks(json!([metric]))
}

#[test]
fn a_latency_regression_under_any_threshold_is_high() {
    let judged = judge(&latency(json!({})), &periods(0.18, 0.12));
    assert_eq!(judged.result, MetricResult::High, "{judged:?}");
    let ratio = judged.canary_median.unwrap_or(0.0) / judged.baseline_median.unwrap_or(1.0);
    assert!((ratio - 1.5).abs() < 0.05, "{ratio}");
}

#[test]
fn the_same_distribution_passes_and_an_allowed_increase_is_tolerated() {
    let same = judge(&latency(json!({})), &periods(0.12, 0.12));
    assert_eq!(same.result, MetricResult::Pass, "{same:?}");
    let tolerated = judge(
        &latency(json!({"allowedIncrease": 1.2})),
        &periods(0.132, 0.12),
    );
    assert_eq!(tolerated.result, MetricResult::Pass, "{tolerated:?}");
    let strict = judge(&latency(json!({})), &periods(0.132, 0.12));
    assert_eq!(strict.result, MetricResult::High, "{strict:?}");
}

#[test]
fn direction_decides_which_change_is_bad() {
    let lower = periods(0.06, 0.12);
    let result = |direction: &str| judge(&latency(json!({"direction": direction})), &lower).result;
    assert_eq!(result("increase"), MetricResult::Pass);
    assert_eq!(result("decrease"), MetricResult::Low);
    assert_eq!(result("either"), MetricResult::Low);
}

#[test]
fn a_negative_metric_that_rises_is_high() {
    // −5 → −2: three higher, whatever the sign of the values (the band is on the magnitude).
    let rising = periods(-2.0, -5.0);
    assert_eq!(
        judge(&latency(json!({"direction": "either"})), &rising).result,
        MetricResult::High
    );
    assert_eq!(
        judge(&latency(json!({})), &rising).result,
        MetricResult::High
    );
    let tolerated = judge(
        &latency(json!({"allowedIncrease": 1.5})),
        &periods(-4.5, -5.0),
    );
    assert_eq!(tolerated.result, MetricResult::Pass, "{tolerated:?}");
}

#[test]
fn too_few_periods_is_no_data_and_never_a_pass() {
    let section = latency(json!({}));
    let full = periods(0.12, 0.12);
    let without_baseline: Vec<Period> = full
        .iter()
        .map(|p| Period {
            observation: Observation::Value {
                canary: 0.12,
                other: f64::NAN,
            },
            ..*p
        })
        .collect();
    for window in [&full[..9], &without_baseline[..], &[][..]] {
        let judged = judge(&section, window);
        assert_eq!(judged.result, MetricResult::NoData);
        let verdict = judge_comparison(&section, &[judged]);
        let (result, outcomes) = (verdict.result, verdict.outcomes);
        assert_eq!(result, CompareResult::Inconclusive);
        assert_eq!(outcomes[0].verdict, CheckVerdict::Inconclusive, "held");
        assert!(
            outcomes[0].reason.contains("fewer than minSamples 10"),
            "{}",
            outcomes[0].reason
        );
    }
}

#[test]
fn evidence_accumulates_across_checks_and_counts_each_period_once() {
    let section = latency(json!({}));
    let alpha = section.alpha(0, 1);
    let window = periods(0.18, 0.12);
    // Ten checks, each reading a 12-period window that slides by one period.
    let mut evidence = Evidence::default();
    let mut results = Vec::new();
    for check in 0..10 {
        let seen = &window[check..check + 12];
        let judged = judge_metric(&section, 0, false, alpha, &evidence, seen).expect("judged");
        results.push(judged.result);
        evidence = Evidence(vec![judged.evidence]);
    }
    let Some(Sequence::Signs(signs)) = &evidence.0[0].increase else {
        panic!("signs: {evidence:?}");
    };
    assert_eq!(signs.periods, 21, "12 periods, then one new one per check");
    assert_eq!(evidence.0[0].through, Some(60 * 20));
    // The same check again (a retry) takes nothing new in.
    let again = judge_metric(&section, 0, false, alpha, &evidence, &window[9..21]).expect("judged");
    assert_eq!(again.evidence, evidence.0[0]);
    assert!(
        results.iter().all(|r| *r == MetricResult::High),
        "{results:?}"
    );
}

#[test]
fn a_regression_once_shown_stays_shown() {
    let section = latency(json!({}));
    let alpha = section.alpha(0, 1);
    let shown = judge_metric(
        &section,
        0,
        false,
        alpha,
        &Evidence::default(),
        &periods(0.18, 0.12),
    )
    .expect("judged");
    assert_eq!(shown.result, MetricResult::High);
    let later: Vec<Period> = periods(0.12, 0.12)
        .into_iter()
        .map(|p| Period {
            at: p.at + 3600,
            ..p
        })
        .collect();
    let evidence = Evidence(vec![shown.evidence]);
    let judged = judge_metric(&section, 0, false, alpha, &evidence, &later).expect("judged");
    assert_eq!(judged.result, MetricResult::High);
}

fn errors(canary: (f64, f64), other: (f64, f64), count: i64) -> Vec<Period> {
    (0..count)
        .map(|i| Period {
            at: 60 * i,
            observation: Observation::Counts {
                canary_errors: canary.0,
                canary_requests: canary.1,
                other_errors: other.0,
                other_requests: other.1,
            },
        })
        .collect()
}

#[test]
fn error_counts_are_judged_by_their_share_of_the_requests() {
    let section = checks(json!([{"name": "5xx", "alb": "errorRate"}]));
    // 10 % of the traffic: 1 error in 100 requests against 9 in 900 is the same rate.
    let same = judge(&section, &errors((1.0, 100.0), (9.0, 900.0), 12));
    assert_eq!(same.result, MetricResult::Pass, "{same:?}");
    // Twice the rate, 30 minutes long: High.
    let twice = judge(&section, &errors((2.0, 100.0), (9.0, 900.0), 30));
    assert_eq!(twice.result, MetricResult::High, "{twice:?}");
    assert_eq!(twice.canary_median, Some(2.0));
    assert_eq!(twice.baseline_median, Some(1.0));
    // A period without requests on a side says nothing.
    let idle = judge(&section, &errors((0.0, 0.0), (9.0, 900.0), 12));
    assert_eq!(idle.result, MetricResult::NoData);
    // No errors at all on either side: nothing beyond the band, a pass with enough periods.
    let clean = judge(&section, &errors((0.0, 100.0), (0.0, 900.0), 12));
    assert_eq!(clean.result, MetricResult::Pass);
}

#[test]
fn alpha_is_shared_by_weight_and_runs() {
    let section = checks(json!([
        {"name": "a", "alb": "latency", "weight": 3},
        {"name": "b", "alb": "latency"},
    ]));
    let alpha = 1.0 - section.confidence;
    assert!((section.alpha(0, 1) - alpha * 0.75).abs() < 1e-12);
    assert!((section.alpha(1, 2) - alpha * 0.125).abs() < 1e-12);
    let with_peers: CompareChecks = serde_json::from_value(json!({
        "metrics": [{"name": "a", "alb": "latency"}], "peers": {"cells": []}}))
    .expect("a section");
    assert!(
        (with_peers.alpha(0, 1) - 0.005).abs() < 1e-12,
        "half for the peers"
    );
}

/// The longest differences the state may carry: never past f64's range (`Deltas::add` keeps
/// them finite), kept to six significant digits.
fn worst_deltas() -> statistics_dependence::Deltas {
    statistics_dependence::Deltas {
        values: u32::MAX,
        squares: [-1.797_69e308; 2],
        recent: [-1.797_69e308; 2],
    }
}

#[test]
fn the_evidence_of_twenty_metrics_against_baseline_and_peers_fits_its_budget() {
    let worst = |kind: &str| {
        let sequence = |_: ()| match kind {
            "errorRate" | "slow" => Sequence::Counts(Counts {
                // Kept from −30 to 100.
                log_ratios: vec![-29.123_456; statistics::RATE_MULTIPLES.len()],
                residuals: worst_deltas(),
                poisson_sum: -1.797_69e308,
            }),
            _ => Sequence::Signs(Signs {
                periods: u32::MAX,
                beyond: u32::MAX,
                // The plan's autocorrelation (`last_excess`) or the estimate (`dependence`):
                // never both; the estimate is the longer.
                last_excess: None,
                dependence: Some(worst_deltas()),
                excess_sum: Some(-1.797_69e308),
            }),
        };
        Evidence(
            (0..MAX_COMPARED_METRICS * 2)
                .map(|i| MetricEvidence {
                    metric: i / 2,
                    peers: i % 2 == 1,
                    through: Some(i64::MAX),
                    increase: Some(sequence(())),
                    // Slow requests count an increase only.
                    decrease: (kind != "slow").then(|| sequence(())),
                    shown: Some(MetricResult::High),
                    bake_periods: MAX_SAMPLES_PER_SIDE as u32,
                    bake_step: crate::limits::MAX_STEPS as u32,
                    threshold: (kind == "slow").then_some(0.000_123),
                })
                .collect(),
        )
    };
    for kind in ["latency", "errorRate", "slow"] {
        let text = worst(kind).to_text();
        assert!(
            text.len() <= MAX_EVIDENCE_BYTES,
            "{kind}: {} bytes over {MAX_EVIDENCE_BYTES}",
            text.len()
        );
        let plan = twenty(kind);
        assert_eq!(Evidence::parse(&text, Some(&plan)), Ok(worst(kind)));
    }
    let over = format!("[{}]", " ".repeat(MAX_EVIDENCE_BYTES));
    assert!(Evidence::parse(&over, None)
        .unwrap_err()
        .contains("over the 24576"));
    assert!(Evidence::parse("{", None)
        .unwrap_err()
        .contains("not what a check writes"));
    assert_eq!(Evidence::parse("", None), Ok(Evidence::default()));
}

/// A plan comparing `MAX_COMPARED_METRICS` ALB metrics of one `kind` (`slow`: latency judged
/// by a `slowerThan` derived from the baseline).
fn twenty(kind: &str) -> CompareChecks {
    checks(json!((0..MAX_COMPARED_METRICS)
        .map(|i| match kind {
            "slow" => json!({"name": format!("m{i}"), "alb": "latency",
                             "slowerThan": {"baseline": "p99"}}),
            _ => json!({"name": format!("m{i}"), "alb": kind}),
        })
        .collect::<Vec<_>>()))
}

#[test]
fn evidence_no_check_of_the_plan_could_have_written_is_refused() {
    let plan = checks(json!([
        {"name": "latency", "alb": "latency"},
        {"name": "errors", "alb": "errorRate"}
    ]));
    let signs = |periods, beyond| json!({"signs": {"periods": periods, "beyond": beyond}});
    let counts = |bets: usize, log: f64| json!({"counts": {"logRatios": vec![log; bets]}});
    let entry = |metric: usize, increase: serde_json::Value| {
        json!([{"metric": metric, "peers": false, "increase": increase}]).to_string()
    };
    assert!(Evidence::parse(&entry(0, signs(5, 5)), Some(&plan)).is_ok());
    assert!(Evidence::parse(&entry(1, counts(6, -30.0)), Some(&plan)).is_ok());
    for (text, plan, said) in [
        (
            entry(0, signs(5, 6)),
            Some(&plan),
            "metric 0: 6 periods beyond the band of 5",
        ),
        (
            entry(2, signs(5, 1)),
            Some(&plan),
            "metric 2: the plan compares 2 metric(s)",
        ),
        (
            entry(0, signs(5, 1)),
            None,
            "metric 0: the plan compares 0 metric(s)",
        ),
        (
            entry(1, signs(5, 1)),
            Some(&plan),
            "metric 1: signs for a counted metric",
        ),
        (
            entry(0, counts(6, 0.0)),
            Some(&plan),
            "metric 0: counts for a valued metric",
        ),
        (
            entry(1, counts(5, 0.0)),
            Some(&plan),
            "metric 1: 5 bets' log wealth, not 6",
        ),
        (
            entry(1, counts(6, 101.0)),
            Some(&plan),
            "a log wealth of 101, outside -30 to 100",
        ),
    ] {
        let refused = Evidence::parse(&text, plan).expect_err(&text);
        assert!(refused.contains(said), "{text}: {refused}");
    }
}

fn judgement(name: &str, result: MetricResult, weight: f64, critical: bool) -> MetricJudgement {
    MetricJudgement {
        name: name.to_owned(),
        result,
        periods: 30,
        canary_median: Some(1.0),
        baseline_median: Some(1.0),
        log_evidence: 0.0,
        log_threshold: 100.0_f64.ln(),
        taken_in: "0 of 30 period(s) above the allowed band".to_owned(),
        critical,
        weight,
        evidence: MetricEvidence::new(
            0,
            false,
            &checks(json!([{"name": name, "alb": "latency"}])).metrics[0],
        ),
        without_baseline: false,
    }
}

#[test]
fn the_score_is_the_passing_weight_and_decides_the_check() {
    let section = checks(json!([]));
    let judge = |judgements: &[MetricJudgement]| {
        let verdict = judge_comparison(&section, judgements);
        (verdict.result, verdict.score.round())
    };
    use MetricResult::*;
    assert_eq!(
        judge(&[judgement("a", Pass, 1.0, false)]),
        (CompareResult::Pass, 100.0)
    );
    // 4 of 5 weight passes: 80, between marginal (75) and pass (95).
    assert_eq!(
        judge(&[
            judgement("a", Pass, 4.0, false),
            judgement("b", High, 1.0, false)
        ]),
        (CompareResult::Marginal, 80.0)
    );
    assert_eq!(
        judge(&[
            judgement("a", Pass, 1.0, false),
            judgement("b", Low, 1.0, false)
        ]),
        (CompareResult::Fail, 50.0)
    );
    // 19 of 20 pass: 95, a pass although one is High.
    assert_eq!(
        judge(&[
            judgement("a", Pass, 19.0, false),
            judgement("b", High, 1.0, false)
        ]),
        (CompareResult::Pass, 95.0)
    );
    // A critical metric fails the check whatever the score.
    assert_eq!(
        judge(&[
            judgement("a", Pass, 19.0, false),
            judgement("b", High, 1.0, true)
        ]),
        (CompareResult::Fail, 95.0)
    );
    // No data where the rest fails already: a failure, not an inconclusive check.
    assert_eq!(
        judge(&[
            judgement("a", High, 3.0, false),
            judgement("b", NoData, 1.0, false)
        ]),
        (CompareResult::Fail, 0.0)
    );
    assert_eq!(
        judge(&[
            judgement("a", Pass, 3.0, false),
            judgement("b", NoData, 1.0, false)
        ]),
        (CompareResult::Inconclusive, 75.0)
    );
    assert_eq!(judge(&[]), (CompareResult::Fail, 0.0));
}

#[test]
fn a_passing_metric_passes_and_the_others_carry_the_checks_verdict() {
    use MetricResult::*;
    let metrics = [
        judgement("a", Pass, 4.0, false),
        judgement("b", High, 1.0, false),
    ];
    let held = checks(json!([]));
    let outcomes = judge_comparison(&held, &metrics).outcomes;
    let verdicts: Vec<CheckVerdict> = outcomes.iter().map(|o| o.verdict).collect();
    assert_eq!(verdicts, [CheckVerdict::Pass, CheckVerdict::Inconclusive]);
    assert!(
        outcomes[1]
            .reason
            .starts_with("compare b: High (check Marginal at score 80, held)"),
        "{}",
        outcomes[1].reason
    );
    let failing: CompareChecks =
        serde_json::from_value(json!({"onMarginal": "fail", "metrics": []})).expect("a section");
    let outcomes = judge_comparison(&failing, &metrics).outcomes;
    assert_eq!(outcomes[1].verdict, CheckVerdict::Fail);
    assert!(
        outcomes[1].reason.contains("failed by the plan"),
        "{}",
        outcomes[1].reason
    );
    let asking: CompareChecks =
        serde_json::from_value(json!({"onMarginal": "ask", "metrics": []})).expect("a section");
    let verdict = judge_comparison(&asking, &metrics);
    assert!(verdict.asks);
    assert_eq!(verdict.outcomes[1].verdict, CheckVerdict::Inconclusive);
    assert!(!judge_comparison(&held, &metrics).asks);
}

#[test]
fn a_reason_names_both_medians_the_ratio_and_the_evidence() {
    let section = latency(json!({}));
    let judged = judge(&section, &periods(0.18, 0.12));
    let outcomes = judge_comparison(&section, &[judged]).outcomes;
    let reason = &outcomes[0].reason;
    assert_eq!(outcomes[0].verdict, CheckVerdict::Fail);
    for part in [
        "compare latency: High (check Fail at score 0)",
        "canary 0.18059",
        "vs baseline 0.12033",
        "(x1.5",
        "in the last 600 s (30 periods)",
        "30 of 30 period(s) above the allowed band since the comparison began",
        "evidence 3.46e7 of the 100 a regression needs",
    ] {
        assert!(reason.contains(part), "{part} not in {reason}");
    }
    assert!(
        reason.len() <= crate::limits::MAX_LINE_BYTES,
        "{} bytes: {reason}",
        reason.len()
    );
}

#[test]
fn a_comparison_over_one_calls_queries_is_refused() {
    let target = |i: usize| {
        crate::TrafficTarget::Alb(crate::AlbTarget {
            listener_arn: format!("arn:aws:elasticloadbalancing:us-east-1:123456789012:listener/app/web{i}/50dc6c495c0c9188/f2f7dc8efc522ab2"),
            rule_arn: None,
            stable_target_group_arn: format!("arn:aws:elasticloadbalancing:us-east-1:123456789012:targetgroup/blue{i}/73e2d6bc24d8a067"),
            canary_target_group_arn: format!("arn:aws:elasticloadbalancing:us-east-1:123456789012:targetgroup/green{i}/4b7c9a1e2f3d5a68"),
            owner: None,
        })
    };
    let metrics: Vec<serde_json::Value> = (0..MAX_COMPARED_METRICS)
        .map(|i| json!({"name": format!("errors {i}"), "alb": "errorRate"}))
        .collect();
    let section = checks(json!(metrics));
    let problems = |pairs: usize| {
        let targets: Vec<_> = (0..pairs).map(target).collect();
        let mut errors = crate::validate::Errors::default();
        let cluster = crate::cluster::ClusterRef {
            name: "green".to_owned(),
            region: "us-east-1".to_owned(),
            role_arn: None,
            wait_for_creation: false,
        };
        section.validate(&cluster, &targets, false, false, &mut errors);
        errors
            .0
            .iter()
            .map(|e| e.to_string())
            .collect::<Vec<_>>()
            .join("; ")
    };
    // 6 pairs: 20 × 4 × 6 = 480 queries, within one call; 7: 560.
    assert_eq!(problems(6), "");
    let refused = problems(7);
    assert!(
        refused.contains("analysis.compare.metrics") && refused.contains("560 queries per check"),
        "{refused}"
    );
}

#[test]
fn an_outlier_among_its_peers_fails_and_a_typical_cell_passes() {
    let section = latency(json!({}));
    let against_peers = |window: &[Period]| {
        let judged = judge_metric(
            &section,
            0,
            true,
            section.alpha(0, 1),
            &Evidence::default(),
            window,
        )
        .expect("judged");
        assert!(judged.evidence.peers);
        judge_against_peers(&section, &judged, 4)
    };
    let outlier = against_peers(&periods(0.16, 0.10));
    assert_eq!(outlier.verdict, CheckVerdict::Fail);
    assert!(
        outlier.reason.starts_with(
            "peers latency: High, an outlier among 4 promoted peer(s): canary 0.16053"
        ),
        "{}",
        outlier.reason
    );
    assert!(
        outlier.reason.contains("vs peers 0.10027"),
        "{}",
        outlier.reason
    );
    let typical = against_peers(&periods(0.10, 0.10));
    assert_eq!(typical.verdict, CheckVerdict::Pass, "{}", typical.reason);
    let unknown = against_peers(&[]);
    assert_eq!(
        unknown.verdict,
        CheckVerdict::Inconclusive,
        "{}",
        unknown.reason
    );
}

#[test]
fn too_few_peers_are_said_and_not_judged() {
    let peers = |cells: usize| -> PeerComparison {
        let cells: Vec<serde_json::Value> = (0..cells)
            .map(|i| json!({"name": format!("cell-{i}")}))
            .collect();
        serde_json::from_value(json!({"minPeers": 2, "cells": cells})).expect("peers")
    };
    let outcome = too_few_peers(&peers(1)).expect("too few");
    assert_eq!(outcome.verdict, CheckVerdict::Ignored);
    assert_eq!(
        outcome.reason,
        "peers: 1 promoted peer(s), fewer than minPeers 2: the canary is not judged against peers"
    );
    assert_eq!(too_few_peers(&peers(2)), None);
}

#[test]
fn evidence_leans_to_a_regression_from_ten_until_it_is_shown() {
    let plan = checks(json!([{"name": "latency", "alb": "latency"}]));
    let evidence = |periods: u32, beyond: u32, shown: bool| {
        let text = json!([{"metric": 0, "peers": false,
            "increase": {"signs": {"periods": periods, "beyond": beyond}},
            "shown": shown.then_some("high")}])
        .to_string();
        Evidence::parse(&text, Some(&plan)).unwrap_or_else(|e| panic!("{text}: {e}"))
    };
    let log_evidence = |e: &Evidence| e.0[0].increase.as_ref().map_or(0.0, Sequence::log_evidence);
    let even = evidence(12, 6, false);
    assert!(!even.leans_to_a_regression(), "{}", log_evidence(&even));
    let lean = evidence(12, 12, false);
    assert!(
        log_evidence(&lean) >= LEANING_EVIDENCE.ln(),
        "{}",
        log_evidence(&lean)
    );
    assert!(lean.leans_to_a_regression());
    assert!(
        !evidence(12, 12, true).leans_to_a_regression(),
        "shown: no longer a lean"
    );
}

#[test]
fn a_derived_threshold_is_refused_where_the_plan_derives_none_or_with_more_digits() {
    let derives =
        checks(json!([{"name": "slow", "alb": "latency", "slowerThan": {"baseline": "p99"}}]));
    let fixed = checks(json!([{"name": "slow", "alb": "latency", "slowerThan": 0.4}]));
    let mut evidence = Evidence::default();
    evidence.take_threshold(&derives, 0, 0.412);
    // Taken once: a later value does not move it.
    evidence.take_threshold(&derives, 0, 0.5);
    assert_eq!(evidence.threshold(0), Some(0.412));
    let text = evidence.to_text();
    assert_eq!(Evidence::parse(&text, Some(&derives)), Ok(evidence));
    assert!(Evidence::parse(&text, Some(&fixed))
        .unwrap_err()
        .contains("a derived slowerThan for a metric whose plan derives none"));
    let precise = text.replace("0.412", "0.41234");
    assert!(Evidence::parse(&precise, Some(&derives))
        .unwrap_err()
        .contains("a derived slowerThan of 0.41234"));
    assert_eq!(derived_threshold(0.412_345), Some(0.412));
    assert_eq!(derived_threshold(0.0), None);
    assert_eq!(derived_threshold(f64::NAN), None);
}
