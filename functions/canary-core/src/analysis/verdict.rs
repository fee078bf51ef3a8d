//! The verdict of one check: given what every signal said, decide pass / fail /
//! inconclusive, count consecutive failures, and say whether the rollout must roll back.
//! Pure: the rollout's signal sources feed it. It sits above the plan's sections (it reads
//! their policies); what a single signal says is [`super::outcome`], below them.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::outcome::{judge_limits, CheckOutcome, CheckVerdict};
use super::section::{AnalysisSection, InconclusivePolicy, MetricCheck, NoEvidencePolicy, Reduce};
use crate::limits;

/// Where the bake stands before this check.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct BakeProgress {
    /// Failing checks in a row so far.
    #[serde(default)]
    pub consecutive_failures: u32,
    /// Passing checks so far in this step's bake.
    #[serde(default)]
    pub passes: u32,
    /// The number of this check in the step's bake, from 1.
    #[serde(default)]
    pub check: u32,
    /// How many checks the step's bake has (the resolved step's `checks`).
    #[serde(default)]
    pub checks: u32,
    /// When the checks began to go unjudged (a metrics provider unreachable), epoch seconds;
    /// 0 while they are judged.
    #[serde(default)]
    pub unjudged_since: u64,
    /// The step's `checkIntervalSeconds`, for the default `analysis.maxUnjudgedSeconds`.
    #[serde(default)]
    pub check_interval_seconds: u32,
    /// The step's number, from 1, and how many steps the rollout has: a person can be asked
    /// before a next step only (0: unknown, never asked).
    #[serde(default)]
    pub step: u32,
    #[serde(default)]
    pub steps: u32,
    /// Since when a change freeze holds the step at the end of its bake (epoch seconds); 0
    /// while none does.
    #[serde(default)]
    pub frozen_since: u64,
    /// Checks the step's bake has run past its end for want of data
    /// (`analysis.extendBakeSeconds`); 0 before.
    #[serde(default)]
    pub extra_checks: u32,
}

impl BakeProgress {
    /// This check ends the step's bake.
    pub fn last_check(&self) -> bool {
        self.checks > 0 && self.check >= self.checks
    }

    /// A step follows this one: a person can be asked before it.
    pub fn next_step_follows(&self) -> bool {
        self.step > 0 && self.step < self.steps
    }

    /// The next step is the last (100 %), where the baseline serves nothing and nothing is
    /// compared: this step's bake is the comparison's last word.
    pub fn last_compared_step(&self) -> bool {
        self.step > 0 && self.step + 1 == self.steps
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Decision {
    /// This check's verdict: `fail` if any signal failed, else `inconclusive` if any was
    /// inconclusive (or none counted), else `pass`.
    pub verdict: CheckVerdict,
    /// Roll back now.
    pub rollback: bool,
    /// The check this verdict is for (`progress.check`): the state machine counts from it.
    pub check: u32,
    pub consecutive_failures: u32,
    pub passes: u32,
    /// How many signals gave each verdict in this check.
    pub counts: VerdictCounts,
    /// Why, one line per signal, failing ones first, then inconclusive, then passing: at most
    /// [`limits::MAX_VERDICT_REASONS`] and "… and N more" (every signal is in the function's
    /// log); then the decision's own reason when it rolls back.
    pub reasons: Vec<String>,
    /// The reasons in one bounded line, for an execution's failure cause.
    pub summary: String,
    /// Since when the checks go unjudged (epoch seconds), carried to the next check; 0 once a
    /// check is judged.
    pub unjudged_since: u64,
    /// The comparison was unsure and its plan says `ask`: if this check ends the step's bake
    /// (and it is not the last step's), a person approves the next step first.
    #[serde(default)]
    pub ask: bool,
    /// Since when a change freeze holds the step (epoch seconds), carried to the next check;
    /// 0 when none does (see `crate::freeze`).
    #[serde(default)]
    pub frozen_since: u64,
    /// It rolls back and a signal the plan marks critical failed: straight to the baseline,
    /// even with `rollback.gradual`.
    #[serde(default)]
    pub critical: bool,
    /// It rolls back because a change freeze held the step past the plan's bound
    /// (`freeze.maxFrozenSeconds`), not because a check failed: the execution ends
    /// `FrozenTooLong`, in its own words.
    #[serde(default)]
    pub frozen_too_long: bool,
    /// The comparison's evidence after this check, as the text the state carries to the next
    /// check and across steps (`super::compare::Evidence`; empty without a comparison).
    #[serde(default)]
    pub evidence: String,
    /// Checks the bake has run past its end for want of data, carried to the next check: this
    /// check held the bake's end (`check` stays, so the bake takes one more) when it is more
    /// than `progress.extra_checks`.
    #[serde(default)]
    pub extra_checks: u32,
}

/// What the comparison (`analysis.compare`) adds to a check's decision.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ComparisonSays {
    /// It is unsure and the plan says `ask`.
    pub asks: bool,
    /// A compared metric has shown a regression (High or Low) in the rollout: whatever passed
    /// before, no bake ends in a pass while it stands.
    pub regression_shown: bool,
    /// A compared metric leans to a regression, not shown yet
    /// ([`super::compare::Evidence::leans_to_a_regression`]): a bake's end waits for more.
    pub leaning: bool,
}

impl Decision {
    /// The decision carrying `evidence` on.
    pub fn with_evidence(self, evidence: &super::compare::Evidence) -> Self {
        Decision {
            evidence: evidence.to_text(),
            ..self
        }
    }

    /// A check its signals could not judge (a metrics provider unreachable): neither a pass
    /// nor a failure, and not counted among the bake's checks (`check` stays where it was, so
    /// the bake takes one more), so a bake never passes on checks that saw nothing.
    pub fn unjudged(progress: BakeProgress, since: u64, reason: String) -> Self {
        Decision {
            verdict: CheckVerdict::Inconclusive,
            rollback: false,
            check: progress.check.saturating_sub(1),
            consecutive_failures: progress.consecutive_failures,
            passes: progress.passes,
            counts: VerdictCounts::default(),
            summary: limits::truncate(&reason, limits::MAX_SUMMARY_BYTES),
            // A provider's error text is in it: bounded like every signal's reason.
            reasons: vec![limits::truncate(&reason, limits::MAX_LINE_BYTES)],
            unjudged_since: since,
            ask: false,
            frozen_since: progress.frozen_since,
            critical: false,
            frozen_too_long: false,
            evidence: String::new(),
            extra_checks: progress.extra_checks,
        }
    }
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct VerdictCounts {
    pub pass: u32,
    pub fail: u32,
    pub inconclusive: u32,
    pub ignored: u32,
}

impl VerdictCounts {
    fn of(outcomes: &[CheckOutcome]) -> Self {
        let mut counts = VerdictCounts::default();
        for outcome in outcomes {
            *match outcome.verdict {
                CheckVerdict::Pass => &mut counts.pass,
                CheckVerdict::Fail => &mut counts.fail,
                CheckVerdict::Inconclusive => &mut counts.inconclusive,
                CheckVerdict::Ignored => &mut counts.ignored,
            } += 1;
        }
        counts
    }
}

/// The signals' reasons as a verdict carries them: failing first, bounded (see [`Decision::reasons`]).
fn bounded_reasons(outcomes: &[CheckOutcome]) -> Vec<String> {
    let rank = |v: CheckVerdict| match v {
        CheckVerdict::Fail => 0,
        CheckVerdict::Inconclusive => 1,
        CheckVerdict::Pass => 2,
        CheckVerdict::Ignored => 3,
    };
    let mut ordered: Vec<&CheckOutcome> = outcomes.iter().collect();
    ordered.sort_by_key(|o| rank(o.verdict)); // stable: signals keep their order within a verdict
    let mut reasons: Vec<String> = ordered
        .iter()
        .take(limits::MAX_VERDICT_REASONS)
        .map(|o| limits::truncate(&o.reason, limits::MAX_LINE_BYTES))
        .collect();
    if ordered.len() > limits::MAX_VERDICT_REASONS {
        reasons.push(format!(
            "… and {} more signal(s) (every one is in the function's log)",
            ordered.len() - limits::MAX_VERDICT_REASONS
        ));
    }
    reasons
}

fn summary_of(reasons: &[String]) -> String {
    limits::truncate(&reasons.join("; "), limits::MAX_SUMMARY_BYTES)
}

/// Judges one check from its signals' outcomes.
pub fn decide(
    analysis: Option<&AnalysisSection>,
    outcomes: &[CheckOutcome],
    progress: BakeProgress,
) -> Decision {
    decide_asking(analysis, outcomes, progress, ComparisonSays::default())
}

/// [`decide`], with what the comparison says. At the check that ends a step's bake:
/// - a regression the comparison has shown never ends in a pass: the rollout asks a person
///   before the next step when the comparison asks (`ask`), else rolls back;
/// - a bake short of data (no passing check, the last one inconclusive) bakes on, a check at a
///   time, up to the plan's `analysis.extendBakeSeconds`, before `noEvidence` applies;
/// - so does the bake of the step before 100 % (where the baseline serves nothing and nothing
///   is compared) whose comparison leans to a regression not shown yet, whatever passed: a few
///   more periods decide it. Only there: each extension is more checks for a healthy canary's
///   evidence to cross its threshold by chance;
/// - an unsure check that asks (the comparison's `ask`), before another step, asks for an
///   approval of the next step instead of promoting (or, without a passing check, rolling
///   back for no evidence).
///
/// A failure is never asked about.
pub fn decide_asking(
    analysis: Option<&AnalysisSection>,
    outcomes: &[CheckOutcome],
    progress: BakeProgress,
    comparison: ComparisonSays,
) -> Decision {
    let counts = VerdictCounts::of(outcomes);
    let mut reasons = bounded_reasons(outcomes);
    let Some(analysis) = analysis else {
        reasons.push("no analysis configured: the step passes on time alone".to_owned());
        return Decision {
            verdict: CheckVerdict::Pass,
            rollback: false,
            check: progress.check,
            consecutive_failures: 0,
            passes: progress.passes + 1,
            counts,
            summary: summary_of(&reasons),
            reasons,
            unjudged_since: 0,
            ask: false,
            frozen_since: 0,
            critical: false,
            frozen_too_long: false,
            evidence: String::new(),
            extra_checks: progress.extra_checks,
        };
    };
    let verdict = if counts.fail > 0 {
        CheckVerdict::Fail
    } else if counts.inconclusive > 0 {
        CheckVerdict::Inconclusive
    } else if counts.pass > 0 {
        CheckVerdict::Pass
    } else {
        reasons.push("no signal counted in this check".to_owned());
        CheckVerdict::Inconclusive
    };

    let counts_as_failure = verdict == CheckVerdict::Fail
        || (verdict == CheckVerdict::Inconclusive
            && analysis.inconclusive == InconclusivePolicy::CountAsFailure);
    let consecutive_failures = match verdict {
        CheckVerdict::Pass => 0,
        _ if counts_as_failure => progress.consecutive_failures.saturating_add(1),
        _ => progress.consecutive_failures,
    };
    let passes = progress.passes + u32::from(verdict == CheckVerdict::Pass);
    let limit = analysis.failure_limit();
    let ends = progress.last_check();
    let asks = comparison.asks
        && verdict == CheckVerdict::Inconclusive
        && ends
        && progress.next_step_follows();
    let room = analysis.extra_checks(
        progress
            .checks
            .saturating_mul(progress.check_interval_seconds),
        progress.check_interval_seconds,
    );
    let short_of_data = ends
        && passes == 0
        && verdict == CheckVerdict::Inconclusive
        && !comparison.regression_shown
        && progress.extra_checks < room;
    let leaning = ends
        && progress.last_compared_step()
        && comparison.leaning
        && !comparison.regression_shown
        && verdict != CheckVerdict::Fail
        && progress.extra_checks < room;
    let mut rollback = false;
    let mut extra_checks = progress.extra_checks;
    let mut check = progress.check;
    if consecutive_failures >= limit {
        rollback = true;
        reasons.push(format!(
            "{consecutive_failures} failing check(s) in a row reached the failure limit of {limit}"
        ));
    } else if ends && comparison.regression_shown && !asks {
        rollback = true;
        reasons.push(
            "the comparison has shown a regression: the step's bake ends without a pass, whatever passed before it"
                .to_owned(),
        );
    } else if short_of_data || leaning {
        // Not counted, like an unjudged check: the bake's end is checked again.
        check = progress.check.saturating_sub(1);
        extra_checks += 1;
        let why = match short_of_data {
            true => "no check has passed yet for want of data",
            false => "the comparison leans to a regression it has not shown yet",
        };
        reasons.push(format!(
            "{why}: the bake goes on, check {extra_checks} of the {room} analysis.extendBakeSeconds allows"
        ));
    } else if asks {
        reasons.push(
            "the step's bake ended unsure and the comparison asks: a person approves the next step (cluster-canary approve or reject)"
                .to_owned(),
        );
    } else if ends && passes == 0 && analysis.no_evidence == NoEvidencePolicy::Fail {
        rollback = true;
        reasons.push(match extra_checks {
            0 => "the step's bake ended without a single passing check: no evidence, no promotion"
                .to_owned(),
            n => format!(
                "the step's bake ended without a single passing check, {n} check(s) past its end for want of data: no evidence, no promotion"
            ),
        });
    }
    Decision {
        verdict,
        rollback,
        check,
        consecutive_failures,
        passes,
        counts,
        summary: summary_of(&reasons),
        reasons,
        unjudged_since: 0,
        ask: asks && !rollback && !short_of_data,
        frozen_since: 0,
        critical: rollback
            && outcomes
                .iter()
                .any(|o| o.critical && o.verdict == CheckVerdict::Fail),
        frozen_too_long: false,
        evidence: String::new(),
        extra_checks,
    }
}

/// One value from a metric's datapoints (in time order, oldest first).
pub fn reduce(values: &[f64], how: Reduce) -> Option<f64> {
    let last = values.last().copied()?;
    Some(match how {
        Reduce::Latest => last,
        Reduce::Average => sum(values) / values.len() as f64,
        Reduce::Max => values.iter().copied().fold(f64::NEG_INFINITY, f64::max),
        Reduce::Min => values.iter().copied().fold(f64::INFINITY, f64::min),
        Reduce::Sum => sum(values),
    })
}

/// The sum, 0 for none. (`Iterator::sum` of no floats is -0.0, which prints as "-0".)
pub fn sum(values: &[f64]) -> f64 {
    values.iter().fold(0.0, |total, v| total + v)
}

/// Compares a value with a metric check's limits.
pub fn judge_threshold(check: &MetricCheck, value: Option<f64>) -> CheckOutcome {
    let name = &check.name;
    match value {
        Some(value) => judge_limits(name, value, check.min, check.max),
        None => CheckOutcome::new(
            CheckVerdict::Inconclusive,
            format!(
                "no datapoints for {name} in the last {} s",
                check.lookback_seconds
            ),
        ),
    }
}
