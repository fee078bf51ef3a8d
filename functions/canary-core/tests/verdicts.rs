//! The verdict rules, as tables: how signals combine into a check's verdict, how failures are
//! counted against the limit, the inconclusive and no-evidence policies, thresholds at and
//! beyond their edges, and the built-in ALB checks with their comparison to stable.

use canary_core::analysis::{
    decide, judge_alb, judge_threshold, reduce, AlbChecks, AnalysisSection, BakeProgress,
    CheckOutcome,
    CheckVerdict::{self, *},
    Decision, InconclusivePolicy, MetricCheck, NoEvidencePolicy, Reduce, TargetGroupTraffic,
};

fn outcome(verdict: CheckVerdict) -> CheckOutcome {
    CheckOutcome::new(verdict, format!("{verdict:?}"))
}

fn analysis(
    limit: i64,
    inconclusive: InconclusivePolicy,
    no_evidence: NoEvidencePolicy,
) -> AnalysisSection {
    AnalysisSection {
        failure_limit: Some(limit),
        inconclusive,
        no_evidence,
        ..AnalysisSection::default()
    }
}

fn progress(consecutive_failures: u32, passes: u32, last_check: bool) -> BakeProgress {
    BakeProgress {
        consecutive_failures,
        passes,
        check: if last_check { 10 } else { 3 },
        checks: 10,
        ..BakeProgress::default()
    }
}

#[test]
fn an_unjudged_check_is_not_counted_and_its_reason_is_bounded() {
    let long = format!("unjudged: analysis.prometheus: {}", "x".repeat(10_000));
    let decision = Decision::unjudged(progress(1, 2, false), 1_700_000_000, long);
    assert_eq!(decision.verdict, Inconclusive);
    assert!(!decision.rollback);
    assert_eq!(
        (decision.check, decision.passes),
        (2, 2),
        "the bake takes one more check"
    );
    assert_eq!(decision.unjudged_since, 1_700_000_000);
    assert_eq!(decision.reasons.len(), 1);
    assert!(decision.reasons[0].len() <= canary_core::limits::MAX_LINE_BYTES);
    assert!(decision.summary.len() <= canary_core::limits::MAX_SUMMARY_BYTES);
    assert!(decision.reasons[0].starts_with("unjudged: analysis.prometheus: x"));
}

#[test]
fn signals_combine_worst_first() {
    let a = AnalysisSection::default();
    let cases: &[(&[CheckVerdict], CheckVerdict)] = &[
        (&[Pass, Pass], Pass),
        (&[Pass, Fail], Fail),
        (&[Inconclusive, Fail], Fail),
        (&[Pass, Inconclusive], Inconclusive),
        (&[Pass, Ignored], Pass),
        (&[Ignored], Inconclusive),
        (&[], Inconclusive),
    ];
    for (signals, expected) in cases {
        let outcomes: Vec<_> = signals.iter().map(|v| outcome(*v)).collect();
        let d = decide(Some(&a), &outcomes, progress(0, 0, false));
        assert_eq!(d.verdict, *expected, "{signals:?}");
    }
}

#[test]
fn failure_limit_counts_consecutive_failures() {
    let ignore = InconclusivePolicy::Ignore;
    let pass_no_evidence = NoEvidencePolicy::Pass;
    // (limit, failures so far, this check, expected count after, expected rollback)
    let cases = [
        (1, 0, Fail, 1, true),
        (3, 0, Fail, 1, false),
        (3, 1, Fail, 2, false),
        (3, 2, Fail, 3, true),
        (3, 2, Pass, 0, false),
        (3, 2, Inconclusive, 2, false),
    ];
    for (limit, before, verdict, after, rollback) in cases {
        let d = decide(
            Some(&analysis(limit, ignore, pass_no_evidence)),
            &[outcome(verdict)],
            progress(before, 0, false),
        );
        assert_eq!(
            (d.consecutive_failures, d.rollback),
            (after, rollback),
            "limit {limit}, {before} + {verdict:?}"
        );
    }
}

#[test]
fn inconclusive_can_count_as_failure() {
    let a = analysis(
        2,
        InconclusivePolicy::CountAsFailure,
        NoEvidencePolicy::Pass,
    );
    let d = decide(Some(&a), &[outcome(Inconclusive)], progress(1, 0, false));
    assert_eq!(
        (d.verdict, d.consecutive_failures, d.rollback),
        (Inconclusive, 2, true)
    );
    assert!(
        d.reasons
            .last()
            .unwrap()
            .contains("reached the failure limit of 2"),
        "{:?}",
        d.reasons
    );
}

#[test]
fn a_bake_without_a_passing_check_never_promotes_by_default() {
    let a = AnalysisSection::default();
    let d = decide(Some(&a), &[outcome(Inconclusive)], progress(0, 0, true));
    assert!(d.rollback);
    assert!(d
        .reasons
        .last()
        .unwrap()
        .contains("no evidence, no promotion"));
    // One pass anywhere in the bake is evidence.
    assert!(!decide(Some(&a), &[outcome(Inconclusive)], progress(0, 1, true)).rollback);
    assert!(!decide(Some(&a), &[outcome(Pass)], progress(0, 0, true)).rollback);
    // Not the last check: keep baking.
    assert!(!decide(Some(&a), &[outcome(Inconclusive)], progress(0, 0, false)).rollback);
    // Configured to pass on no evidence.
    let lenient = analysis(1, InconclusivePolicy::Ignore, NoEvidencePolicy::Pass);
    assert!(
        !decide(
            Some(&lenient),
            &[outcome(Inconclusive)],
            progress(0, 0, true)
        )
        .rollback
    );
}

#[test]
fn passes_are_counted_and_a_pass_resets_failures() {
    let a = analysis(3, InconclusivePolicy::Ignore, NoEvidencePolicy::Fail);
    let d = decide(Some(&a), &[outcome(Pass)], progress(2, 4, false));
    assert_eq!((d.passes, d.consecutive_failures), (5, 0));
}

#[test]
fn without_analysis_a_check_passes_on_time_alone() {
    let d = decide(None, &[], progress(0, 0, true));
    assert_eq!((d.verdict, d.rollback), (Pass, false));
    assert!(d.reasons[0].contains("no analysis configured"));
}

fn threshold(min: Option<f64>, max: Option<f64>) -> MetricCheck {
    MetricCheck {
        name: "latency".into(),
        namespace: "Shop".into(),
        metric_name: "Latency".into(),
        dimensions: Default::default(),
        stat: "p99".into(),
        period_seconds: 60,
        lookback_seconds: 300,
        reduce: Reduce::Max,
        min,
        max,
    }
}

#[test]
fn thresholds_at_and_beyond_their_edges() {
    let cases = [
        (threshold(None, Some(0.5)), Some(0.5), Pass),
        (threshold(None, Some(0.5)), Some(0.500_001), Fail),
        (threshold(Some(10.0), None), Some(10.0), Pass),
        (threshold(Some(10.0), None), Some(9.99), Fail),
        (threshold(Some(1.0), Some(2.0)), Some(1.5), Pass),
        (threshold(Some(1.0), Some(2.0)), None, Inconclusive),
    ];
    for (check, value, expected) in cases {
        let o = judge_threshold(&check, value);
        assert_eq!(
            o.verdict, expected,
            "{value:?} against {:?}/{:?}: {}",
            check.min, check.max, o.reason
        );
    }
    assert_eq!(
        judge_threshold(&threshold(None, Some(0.5)), Some(0.8)).reason,
        "latency is 0.8 > max 0.5"
    );
    assert_eq!(
        judge_threshold(&threshold(None, Some(0.5)), None).reason,
        "no datapoints for latency in the last 300 s"
    );
}

#[test]
fn reductions() {
    let values = [3.0, 1.0, 2.0];
    assert_eq!(reduce(&values, Reduce::Latest), Some(2.0));
    assert_eq!(reduce(&values, Reduce::Average), Some(2.0));
    assert_eq!(reduce(&values, Reduce::Max), Some(3.0));
    assert_eq!(reduce(&values, Reduce::Min), Some(1.0));
    assert_eq!(reduce(&values, Reduce::Sum), Some(6.0));
    assert_eq!(reduce(&[], Reduce::Max), None);
}

fn alb_checks() -> AlbChecks {
    serde_json::from_value(serde_json::json!({})).expect("every field has a default")
}

fn traffic(requests: f64, errors_5xx: f64, latency: Option<f64>) -> TargetGroupTraffic {
    TargetGroupTraffic {
        requests,
        errors_5xx,
        latency_seconds: latency,
    }
}

fn verdicts(outcomes: &[CheckOutcome]) -> Vec<CheckVerdict> {
    outcomes.iter().map(|o| o.verdict).collect()
}

#[test]
fn canary_error_rate_against_an_absolute_limit() {
    let checks = AlbChecks {
        max_error_rate_percent: Some(1.0),
        ..alb_checks()
    };
    let stable = traffic(1000.0, 0.0, None);
    let cases = [
        (traffic(1000.0, 10.0, None), Pass), // exactly 1 %
        (traffic(1000.0, 32.0, None), Fail), // 3.2 %
        (traffic(0.0, 0.0, None), Inconclusive),
    ];
    for (canary, expected) in cases {
        let o = judge_alb(&checks, "web", canary, stable);
        assert_eq!(verdicts(&o), [expected], "{o:?}");
    }
    let o = judge_alb(&checks, "web", traffic(1000.0, 32.0, None), stable);
    assert_eq!(o[0].reason, "web: canary 5xx rate 3.20 % > max 1 %");
}

#[test]
fn too_little_canary_traffic_is_inconclusive() {
    let checks = AlbChecks {
        max_error_rate_percent: Some(1.0),
        min_requests: 100,
        ..alb_checks()
    };
    let o = judge_alb(
        &checks,
        "web",
        traffic(99.0, 50.0, None),
        traffic(1000.0, 0.0, None),
    );
    assert_eq!(verdicts(&o), [Inconclusive]);
    assert!(
        o[0].reason.contains("fewer than the 100 needed"),
        "{}",
        o[0].reason
    );
}

#[test]
fn canary_error_rate_relative_to_stable() {
    let checks = AlbChecks {
        max_error_rate_vs_stable: Some(2.0),
        ..alb_checks()
    };
    let cases = [
        (
            traffic(1000.0, 20.0, None),
            traffic(1000.0, 10.0, None),
            Pass,
        ), // 2 % vs 1 % x 2
        (
            traffic(1000.0, 21.0, None),
            traffic(1000.0, 10.0, None),
            Fail,
        ), // 2.1 % vs 1 % x 2
        (
            traffic(10000.0, 5.0, None),
            traffic(1000.0, 0.0, None),
            Pass,
        ), // 0.05 %: noise
        (traffic(1000.0, 5.0, None), traffic(1000.0, 0.0, None), Fail), // 0.5 % vs 0 %
        (
            traffic(1000.0, 5.0, None),
            traffic(0.0, 0.0, None),
            Inconclusive,
        ),
    ];
    for (canary, stable, expected) in cases {
        let o = judge_alb(&checks, "web", canary, stable);
        assert_eq!(verdicts(&o), [expected], "{o:?}");
    }
}

#[test]
fn canary_latency_absolute_and_relative() {
    let checks = AlbChecks {
        max_latency_seconds: Some(0.5),
        max_latency_vs_stable: Some(1.5),
        ..alb_checks()
    };
    let cases = [
        (Some(0.3), Some(0.25), vec![Pass, Pass]),
        (Some(0.45), Some(0.25), vec![Pass, Fail]), // worse than stable x 1.5
        (Some(0.6), Some(0.5), vec![Fail, Pass]),
        (Some(0.3), None, vec![Pass, Inconclusive]),
        (None, Some(0.3), vec![Inconclusive]),
    ];
    for (canary, stable, expected) in cases {
        let o = judge_alb(
            &checks,
            "web",
            traffic(100.0, 0.0, canary),
            traffic(100.0, 0.0, stable),
        );
        assert_eq!(verdicts(&o), expected, "{canary:?} vs {stable:?}: {o:?}");
    }
    let o = judge_alb(
        &checks,
        "web",
        traffic(100.0, 0.0, Some(0.45)),
        traffic(100.0, 0.0, Some(0.25)),
    );
    assert_eq!(
        o[1].reason,
        "web: canary p99 latency 0.450 s > stable 0.250 s x 1.5"
    );
}

#[test]
fn a_verdict_over_hundreds_of_signals_stays_bounded_and_puts_failures_first() {
    use canary_core::limits::{MAX_LINE_BYTES, MAX_SUMMARY_BYTES, MAX_VERDICT_REASONS};
    // 400 alarms, every one with CloudWatch's long reason text, one of them in ALARM.
    let long = "Threshold Crossed: 5 out of the last 5 datapoints were less than the threshold. "
        .repeat(20);
    let mut outcomes: Vec<CheckOutcome> = (0..400)
        .map(|i| CheckOutcome::new(Pass, format!("alarm slo-{i} is OK: {long}")))
        .collect();
    outcomes[321] = CheckOutcome::new(Fail, format!("alarm slo-321 is ALARM: {long}"));
    let d = decide(
        Some(&AnalysisSection::default()),
        &outcomes,
        progress(0, 0, false),
    );
    assert_eq!((d.verdict, d.rollback), (Fail, true));
    assert_eq!((d.counts.fail, d.counts.pass), (1, 399));
    assert!(
        d.reasons[0].starts_with("alarm slo-321 is ALARM"),
        "{:?}",
        d.reasons[0]
    );
    assert!(d.reasons.iter().all(|r| r.len() <= MAX_LINE_BYTES));
    assert_eq!(
        d.reasons.len(),
        MAX_VERDICT_REASONS + 2,
        "the listed, the count of the rest, the decision"
    );
    assert!(d.reasons[MAX_VERDICT_REASONS].starts_with("… and 395 more signal(s)"));
    assert!(d.summary.len() <= MAX_SUMMARY_BYTES);
    let serialized = serde_json::to_string(&d).unwrap();
    assert!(
        serialized.len() < 2 * MAX_SUMMARY_BYTES + 512,
        "{}",
        serialized.len()
    );
}

#[test]
fn an_unjudged_check_neither_passes_nor_counts_toward_the_bake() {
    let last = progress(0, 2, true);
    let decision = Decision::unjudged(last, 1_700_000_000, "prometheus unreachable".into());
    assert_eq!(decision.verdict, Inconclusive);
    assert!(!decision.rollback);
    assert_eq!(
        decision.check, 9,
        "the state machine adds one: the last check again"
    );
    assert_eq!((decision.passes, decision.consecutive_failures), (2, 0));
    assert_eq!(decision.unjudged_since, 1_700_000_000);
    let judged = decide(Some(&AnalysisSection::default()), &[], last);
    assert_eq!(judged.unjudged_since, 0);
}

#[test]
fn the_unjudged_bound_defaults_to_three_check_intervals_and_at_least_30_seconds() {
    let mut a = AnalysisSection::default();
    assert_eq!(a.max_unjudged_seconds(60), 180);
    assert_eq!(a.max_unjudged_seconds(2), 30);
    a.max_unjudged_seconds = Some(45);
    assert_eq!(a.max_unjudged_seconds(60), 45);
}

#[test]
fn an_unsure_bake_that_asks_waits_for_a_person_before_the_next_step_only() {
    use canary_core::analysis::{decide_asking, ComparisonSays};
    let (asking, quiet) = (
        ComparisonSays {
            asks: true,
            ..ComparisonSays::default()
        },
        ComparisonSays::default(),
    );
    let a = analysis(2, InconclusivePolicy::Ignore, NoEvidencePolicy::Fail);
    let at_step = |step: u32, last_check: bool| BakeProgress {
        step,
        steps: 3,
        ..progress(0, 0, last_check)
    };
    let unsure = [outcome(Inconclusive), outcome(Pass)];
    // The bake's last check, unsure, before another step: ask, not the no-evidence rollback.
    let asked = decide_asking(Some(&a), &unsure, at_step(1, true), asking);
    assert!((asked.ask, asked.rollback) == (true, false), "{asked:?}");
    assert!(
        asked.summary.contains("a person approves the next step"),
        "{asked:?}"
    );
    // Not the bake's end, not asking, or the last step (nothing to ask before): as `hold`.
    assert!(!decide_asking(Some(&a), &unsure, at_step(1, false), asking).ask);
    let unasked = decide_asking(Some(&a), &unsure, at_step(1, true), quiet);
    assert!(
        (unasked.ask, unasked.rollback) == (false, true),
        "no evidence: {unasked:?}"
    );
    let last = decide_asking(Some(&a), &unsure, at_step(3, true), asking);
    assert!(
        (last.ask, last.rollback) == (false, true),
        "no evidence: {last:?}"
    );
    // A failure is never asked about.
    let failing = [outcome(Fail), outcome(Inconclusive)];
    assert!(!decide_asking(Some(&a), &failing, at_step(1, true), asking).ask);
}

#[test]
fn a_rollback_is_critical_only_when_a_critical_signal_failed() {
    let strict = analysis(1, InconclusivePolicy::Ignore, NoEvidencePolicy::Pass);
    let critical_fail = outcome(Fail).critical(true);
    let decide_on = |outcomes: &[CheckOutcome], analysis: &AnalysisSection| {
        let d = decide(Some(analysis), outcomes, progress(0, 0, false));
        (d.rollback, d.critical)
    };
    assert_eq!(
        decide_on(std::slice::from_ref(&critical_fail), &strict),
        (true, true)
    );
    assert_eq!(decide_on(&[outcome(Fail)], &strict), (true, false));
    // A critical alarm that passes does not make another signal's failure critical.
    assert_eq!(
        decide_on(&[outcome(Fail), outcome(Pass).critical(true)], &strict),
        (true, false)
    );
    // Not rolling back yet (the failure limit is 2): nothing is critical.
    let lenient = analysis(2, InconclusivePolicy::Ignore, NoEvidencePolicy::Pass);
    assert_eq!(decide_on(&[critical_fail], &lenient), (false, false));
}

#[test]
fn a_regression_shown_never_ends_a_bake_in_a_pass_whatever_passed_before() {
    use canary_core::analysis::{decide_asking, ComparisonSays};
    let a = analysis(1, InconclusivePolicy::Ignore, NoEvidencePolicy::Pass);
    let shown = ComparisonSays {
        asks: false,
        regression_shown: true,
        leaning: false,
    };
    // Two checks passed, then the comparison showed a regression: Marginal, held (inconclusive).
    let held = [outcome(Inconclusive), outcome(Pass)];
    let mid_bake = decide_asking(Some(&a), &held, progress(0, 2, false), shown);
    assert!(
        !mid_bake.rollback,
        "held until the bake's end: {mid_bake:?}"
    );
    let end = decide_asking(Some(&a), &held, progress(0, 2, true), shown);
    assert!(end.rollback, "{end:?}");
    assert!(
        end.summary.contains("has shown a regression"),
        "{}",
        end.summary
    );
    // Even with noEvidence: pass and a check that passed: no BakePassed.
    let passing = decide_asking(Some(&a), &[outcome(Pass)], progress(0, 2, true), shown);
    assert!(passing.rollback, "{passing:?}");
    // With `ask` before another step, a person decides instead.
    let asked = decide_asking(
        Some(&a),
        &held,
        BakeProgress {
            step: 1,
            steps: 3,
            ..progress(0, 2, true)
        },
        ComparisonSays {
            asks: true,
            ..shown
        },
    );
    assert!((asked.ask, asked.rollback) == (true, false), "{asked:?}");
}

/// 3 checks 60 s apart, extended by at most 120 s: two checks more.
fn extendable() -> AnalysisSection {
    AnalysisSection {
        extend_bake_seconds: Some(120),
        ..analysis(1, InconclusivePolicy::Ignore, NoEvidencePolicy::Fail)
    }
}

/// Check `check` of [`extendable`]'s 3, `extra_checks` past the bake's end.
fn bake_at(check: u32, extra_checks: u32) -> BakeProgress {
    BakeProgress {
        check,
        checks: 3,
        check_interval_seconds: 60,
        extra_checks,
        ..BakeProgress::default()
    }
}

#[test]
fn a_bake_short_of_data_goes_on_up_to_the_plans_bound_then_ends_without_evidence() {
    use canary_core::analysis::{decide_asking, ComparisonSays};
    let (a, at) = (extendable(), bake_at);
    let unsure = [outcome(Inconclusive)];
    let quiet = ComparisonSays::default();
    let first = decide_asking(Some(&a), &unsure, at(3, 0), quiet);
    assert!(!first.rollback, "{first:?}");
    assert_eq!(
        (first.check, first.extra_checks),
        (2, 1),
        "the bake's end is checked again"
    );
    assert!(
        first.summary.contains("check 1 of the 2"),
        "{}",
        first.summary
    );
    let second = decide_asking(Some(&a), &unsure, at(3, 1), quiet);
    assert_eq!(
        (second.rollback, second.check, second.extra_checks),
        (false, 2, 2)
    );
    let out_of_room = decide_asking(Some(&a), &unsure, at(3, 2), quiet);
    assert!(out_of_room.rollback, "{out_of_room:?}");
    assert!(
        out_of_room.summary.contains("2 check(s) past its end"),
        "{}",
        out_of_room.summary
    );
    // A check that passes in the extension ends the bake as any pass.
    let passed = decide_asking(Some(&a), &[outcome(Pass)], at(3, 1), quiet);
    assert_eq!(
        (passed.rollback, passed.check, passed.passes),
        (false, 3, 1)
    );
    // A failure, or a regression shown, is never extended.
    assert!(decide_asking(Some(&a), &[outcome(Fail)], at(3, 0), quiet).rollback);
    let shown = ComparisonSays {
        asks: false,
        regression_shown: true,
        leaning: false,
    };
    assert!(decide_asking(Some(&a), &unsure, at(3, 0), shown).rollback);
    // Without extendBakeSeconds and without a comparison, no extension: as before.
    let plain = analysis(1, InconclusivePolicy::Ignore, NoEvidencePolicy::Fail);
    assert!(decide_asking(Some(&plain), &unsure, at(3, 0), quiet).rollback);
}

#[test]
fn a_bake_whose_comparison_leans_to_a_regression_goes_on_before_it_passes() {
    use canary_core::analysis::{decide_asking, ComparisonSays};
    // Seed 19674: 8 of 8 periods beyond the band, evidence 28 of the 1000 a regression needs,
    // at the last check of the step before 100 %, where nothing is compared: it passed.
    let a = extendable();
    let at = |check: u32, extra_checks: u32| BakeProgress {
        step: 1,
        steps: 2,
        ..bake_at(check, extra_checks)
    };
    let leaning = ComparisonSays {
        leaning: true,
        ..ComparisonSays::default()
    };
    let passing = [outcome(Pass)];
    let first = decide_asking(Some(&a), &passing, at(3, 0), leaning);
    assert_eq!(
        (first.rollback, first.check, first.extra_checks),
        (false, 2, 1),
        "the bake's end is checked again: {first:?}"
    );
    assert!(
        first.summary.contains("leans to a regression"),
        "{}",
        first.summary
    );
    // Not mid-bake, not before a step that is compared too, and never past the plan's bound:
    // then it passes as before (no rollback).
    assert_eq!(
        decide_asking(Some(&a), &passing, at(2, 0), leaning).check,
        2
    );
    let compared_next = BakeProgress {
        steps: 3,
        ..at(3, 0)
    };
    assert_eq!(
        decide_asking(Some(&a), &passing, compared_next, leaning).check,
        3
    );
    let spent = decide_asking(Some(&a), &passing, at(3, 2), leaning);
    assert_eq!((spent.rollback, spent.check), (false, 3), "{spent:?}");
    // A failure is a failure.
    assert!(decide_asking(Some(&a), &[outcome(Fail)], at(3, 0), leaning).rollback);
}
