use serde_json::json;

use super::*;

fn checks(metrics: serde_json::Value) -> CompareChecks {
    serde_json::from_value(json!({"minSamples": 10, "metrics": metrics})).expect("a section")
}

fn latency(extra: serde_json::Value) -> ComparedMetric {
    let mut metric = json!({"name": "latency", "alb": "latency"});
    if let (Some(metric), Some(extra)) = (metric.as_object_mut(), extra.as_object()) {
        metric.extend(extra.clone());
    }
    serde_json::from_value(metric).expect("a metric")
}

/// 30 samples around `center`, spread ±5 %, the same spread for every center.
fn samples(center: f64) -> Vec<f64> {
    (0..30)
        .map(|i| center * (0.95 + 0.1 * f64::from(i * 7 % 30) / 30.0))
        .collect()
}

#[test]
fn a_latency_regression_under_any_threshold_is_high() {
    let section = checks(json!([]));
    let judged = judge_metric(
        &section,
        &latency(json!({})),
        &samples(0.18),
        &samples(0.12),
    );
    assert_eq!(judged.result, MetricResult::High, "{judged:?}");
    let ratio = judged.ratio.expect("a ratio");
    assert!((ratio - 1.5).abs() < 0.05, "{ratio}");
}

#[test]
fn the_same_distribution_passes_and_an_allowed_increase_is_tolerated() {
    let section = checks(json!([]));
    let same = judge_metric(
        &section,
        &latency(json!({})),
        &samples(0.12),
        &samples(0.12),
    );
    assert_eq!(same.result, MetricResult::Pass, "{same:?}");
    let tolerated = latency(json!({"allowedIncrease": 1.2}));
    let ten_percent = judge_metric(&section, &tolerated, &samples(0.132), &samples(0.12));
    assert_eq!(ten_percent.result, MetricResult::Pass, "{ten_percent:?}");
    let strict = judge_metric(
        &section,
        &latency(json!({})),
        &samples(0.132),
        &samples(0.12),
    );
    assert_eq!(strict.result, MetricResult::High, "{strict:?}");
}

#[test]
fn direction_decides_which_change_is_bad() {
    let section = checks(json!([]));
    let lower = (samples(0.06), samples(0.12));
    let judge = |direction: &str| {
        judge_metric(
            &section,
            &latency(json!({"direction": direction})),
            &lower.0,
            &lower.1,
        )
        .result
    };
    assert_eq!(judge("increase"), MetricResult::Pass);
    assert_eq!(judge("decrease"), MetricResult::Low);
    assert_eq!(judge("either"), MetricResult::Low);
}

#[test]
fn too_few_samples_on_either_side_is_no_data_and_never_a_pass() {
    let section = checks(json!([]));
    let few = &samples(0.12)[..9];
    for (canary, baseline) in [
        (few, &samples(0.12)[..]),
        (&samples(0.12)[..], few),
        (&[][..], &[][..]),
    ] {
        let judged = judge_metric(&section, &latency(json!({})), canary, baseline);
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
fn a_zero_baseline_with_a_higher_canary_is_an_infinite_ratio() {
    let section = checks(json!([]));
    let zeros = vec![0.0; 30];
    let errors: Vec<f64> = (0..30).map(|i| f64::from(i % 3)).collect();
    let judged = judge_metric(&section, &latency(json!({})), &errors, &zeros);
    assert_eq!(judged.result, MetricResult::High, "{judged:?}");
    let both_zero = judge_metric(&section, &latency(json!({})), &zeros, &zeros);
    assert_eq!(both_zero.result, MetricResult::Pass, "{both_zero:?}");
}

fn judgement(name: &str, result: MetricResult, weight: f64, critical: bool) -> MetricJudgement {
    MetricJudgement {
        name: name.to_owned(),
        result,
        canary_samples: 30,
        baseline_samples: 30,
        canary_median: Some(1.0),
        baseline_median: Some(1.0),
        comparison: None,
        ratio: None,
        critical,
        weight,
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
fn a_reason_names_both_medians_the_ratio_the_interval_and_the_samples() {
    let section = checks(json!([]));
    let judged = judge_metric(
        &section,
        &latency(json!({})),
        &samples(0.18),
        &samples(0.12),
    );
    let outcomes = judge_comparison(&section, &[judged]).outcomes;
    let reason = &outcomes[0].reason;
    assert_eq!(outcomes[0].verdict, CheckVerdict::Fail);
    for part in [
        "compare latency: High (check Fail at score 0)",
        "canary median 0.17",
        "vs baseline 0.11",
        "(x1.5",
        "shift +0.05",
        "p 3.02e-11",
        "30 vs 30 samples",
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
    let section = checks(json!([]));
    let peers: Vec<f64> = [0.10, 0.11, 0.095, 0.105]
        .iter()
        .flat_map(|m| samples(*m))
        .collect();
    let (_, outlier) =
        judge_against_peers(&section, &latency(json!({})), &samples(0.16), &peers, 4);
    assert_eq!(outlier.verdict, CheckVerdict::Fail);
    assert!(
        outlier.reason.starts_with(
            "peers latency: High, an outlier among 4 promoted peer(s): canary median 0.1"
        ),
        "{}",
        outlier.reason
    );
    assert!(
        outlier.reason.contains("vs peers 0.10"),
        "{}",
        outlier.reason
    );
    let (_, typical) =
        judge_against_peers(&section, &latency(json!({})), &samples(0.10), &peers, 4);
    assert_eq!(typical.verdict, CheckVerdict::Pass, "{}", typical.reason);
    let (_, unknown) = judge_against_peers(&section, &latency(json!({})), &samples(0.16), &[], 4);
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
