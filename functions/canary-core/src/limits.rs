//! The size budget of a rollout execution, and the caps that keep it.
//!
//! Step Functions caps an execution's state, its input and every task result at 256 KiB, and
//! a state or result over that ends the execution FAILED with `States.DataLimitExceeded`,
//! which no `Catch` (not even `States.ALL`) runs for. So nothing that grows with input may
//! reach the state unbounded. The state of `statemachine/rollout.asl.json` holds:
//!
//! | part of the state                              | bound                           |
//! | ---------------------------------------------- | ------------------------------- |
//! | `plan` (the input, kept once)                  | [`MAX_PLAN_BYTES`]              |
//! | `analysis` (counts only)                       | < 100 B                         |
//! | `prepared` (baseline, resolved steps)          | 10 targets, 20 steps: < 8 KiB   |
//! | `lastSet`, `restored` (weights, notes)         | 10 targets: < 4 KiB each        |
//! | `cluster`, `registration`, `apps`              | [`MAX_REASON_BYTES`] + < 1 KiB  |
//! | `verdict` (counts, bounded summary)            | [`MAX_SUMMARY_BYTES`] + < 200 B |
//! | `failure`, `restoreFailing`, `restoreFailure`  | [`MAX_CAUSE_BYTES`] each        |
//! | (error and cause)                              |                                 |
//! | an approver's rejection, caught                | 32,768 characters (AWS's cap), alone: the plan is left out until it is cut to [`MAX_REJECTION_CAUSE_BYTES`] |
//! | `evidence` (the comparison's, carried across steps as a bake's cause; inside a bake also `bake.evidence`) | [`MAX_EVIDENCE_BYTES`] each |
//! | `freeze` (the gate's last answer: its reason, and `budgets`, the rollout's share of each SLO of `errorBudget`) | [`MAX_SUMMARY_BYTES`] + [`crate::plan::MAX_SLOS`] × < 200 B |
//!
//! which adds up to well under [`STATE_BUDGET_BYTES`]. Task results (the raw Lambda
//! payloads, before `ResultSelector`) are bounded the same way: every function's output is a
//! fixed shape with bounded lists and texts, and an error message is cut at
//! [`MAX_ERROR_MESSAGE_BYTES`]. Full detail (every alarm's reason, every app) goes to the
//! function's log instead. The end-to-end tests report the largest state they saw and fail
//! above the budget.

/// Most steps a plan may have. Each step is one weight change plus a bake of checks in the
/// state machine; the cap keeps a rollout well inside Step Functions' 25,000 history events.
pub const MAX_STEPS: usize = 20;
/// Most traffic targets a plan may shift. Every change is one API call per target, made one
/// after the other, and must finish inside one Lambda invocation.
pub const MAX_TARGETS: usize = 10;
/// Most bake checks a whole rollout may run (sum over steps of bake / interval). At about ten
/// history events per check this leaves room under the 25,000-event limit for the rest.
pub const MAX_TOTAL_CHECKS: u64 = 2000;
/// Longest one change freeze may hold a rollout (`freeze.maxFrozenSeconds`): a week.
pub const MAX_FROZEN_SECONDS: i64 = 604_800;
/// Longest bake of one step: one day.
pub const MAX_BAKE_SECONDS: i64 = 86_400;
/// The state machine polls the new cluster's status this often, at most this many times
/// (EKS takes 10–15 minutes to create a cluster): `WaitForCluster` and `ClusterActive?`.
pub const CLUSTER_POLL_SECONDS: u64 = 30;
pub const MAX_CLUSTER_POLLS: u64 = 40;

/// Longest a gate before traffic (target health, cluster readiness) may wait: one hour.
pub const MAX_GATE_TIMEOUT_SECONDS: i64 = 3600;
/// Longest wait for the apps to become ready (`argocd.appsTimeoutSeconds`): one day.
pub const MAX_APPS_TIMEOUT_SECONDS: i64 = 86_400;
/// Longest a step may wait for its approval: one day.
pub const MAX_APPROVAL_TIMEOUT_SECONDS: i64 = 86_400;
/// The written budget for the largest execution state (and task result), in bytes: 7/16 of
/// Step Functions' 256 KiB, so a plan at every cap still leaves a wide margin. (It was 96 KiB
/// until the comparison's evidence carried each series' dependence and dispersion, and 104 KiB
/// until each error count's drift was scaled to its period: 2 × 4 KiB more each time.)
pub const STATE_BUDGET_BYTES: usize = 112 * 1024;
/// Most bytes of the comparison's evidence (`analysis::compare::Evidence`), which the state
/// carries from check to check and across a bake's end as a Fail state's cause (AWS allows
/// 32,768 characters): 20 error-rate metrics watching both directions, against the baseline
/// and the peers, at their largest values fit (a test builds them). (20 KiB until each error
/// count's drift was scaled to each period's count: one number more per sequence.)
pub const MAX_EVIDENCE_BYTES: usize = 24 * 1024;

/// Largest plan accepted, as compact JSON. Checked before anything else about the plan.
pub const MAX_PLAN_BYTES: usize = 32 * 1024;

/// Most alarms one rollout may watch (named ones plus prefix matches): refused at Prepare with
/// the number matched and the limit. (Metric queries are bounded by the plan itself: at most
/// `analysis::MAX_METRIC_CHECKS` thresholds plus the ALB checks of at most 10 targets.)
pub const MAX_ALARMS: usize = 200;

/// Most plan problems listed in an `InvalidPlan` message; the rest are counted.
pub const MAX_LISTED_ERRORS: usize = 10;
/// Longest single line for people (one plan problem, one check reason, one app).
pub const MAX_LINE_BYTES: usize = 300;
/// Most failing reasons a check's verdict carries; the rest are counted (all are logged).
pub const MAX_VERDICT_REASONS: usize = 5;
/// Longest verdict summary (the text a failed check puts in the execution's cause).
pub const MAX_SUMMARY_BYTES: usize = 2 * 1024;
/// Longest free-text reason a function returns into the state (apps status, safety net).
pub const MAX_REASON_BYTES: usize = 2 * 1024;
/// Longest error message a function reports (Lambda's `errorMessage`, which Step Functions
/// puts in the `Cause` a `Catch` adds to the state).
pub const MAX_ERROR_MESSAGE_BYTES: usize = 2 * 1024;
/// Longest rejection cause kept from an approver (`SendTaskFailure` allows 32,768 characters),
/// and the longest error name (it allows 256): cut where the answer enters the state.
pub const MAX_REJECTION_CAUSE_BYTES: usize = 1024;
pub const MAX_REJECTION_ERROR_BYTES: usize = 128;
/// Longest cause the state machine builds from an error message and its own words.
pub const MAX_CAUSE_BYTES: usize = MAX_ERROR_MESSAGE_BYTES + 1024;

/// How far back a cut looks for the end of a word.
const WORD_BOUNDARY_BYTES: usize = 24;

/// Cuts `text` to at most `max` bytes on a character boundary, ending with "…" when cut: at the
/// end of a word when one ends in the last few bytes (half a word reads as another word).
pub fn truncate(text: &str, max: usize) -> String {
    if text.len() <= max {
        return text.to_owned();
    }
    let ellipsis = "…";
    let mut end = max.saturating_sub(ellipsis.len());
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    let cut = &text[..end];
    let at_a_word_end = text[end..].starts_with(char::is_whitespace);
    let cut = match cut.rfind(char::is_whitespace) {
        Some(space) if !at_a_word_end && end - space <= WORD_BOUNDARY_BYTES => {
            cut[..space].trim_end()
        }
        _ => cut,
    };
    format!("{cut}{ellipsis}")
}

/// Joins at most `max_items` of `items` (each cut to [`MAX_LINE_BYTES`]) with `separator`,
/// then "… and N more" for the rest; the whole cut to `max_bytes`.
pub fn join_bounded<S: AsRef<str>>(
    items: &[S],
    separator: &str,
    max_items: usize,
    max_bytes: usize,
) -> String {
    let mut text = items
        .iter()
        .take(max_items)
        .map(|i| truncate(i.as_ref(), MAX_LINE_BYTES))
        .collect::<Vec<_>>()
        .join(separator);
    if items.len() > max_items {
        text.push_str(&format!(
            "{separator}… and {} more",
            items.len() - max_items
        ));
    }
    truncate(&text, max_bytes)
}

/// Most steps back one gradual rollback (`rollback.gradual`) takes, the baseline (0) included.
pub const MAX_STEPS_BACK: usize = 5;
/// The most a gradual rollback's holds may add to the way to the baseline (docs/operations.md,
/// the bound from an alarm to the baseline).
pub const MAX_STEP_BACK_HOLDS_SECONDS: i64 = 900;

/// The longest an execution can run within the plan's caps, in seconds: Prepare, the wait for
/// the cluster, registration, the apps wait, the gates before traffic, every step's approval
/// wait, hooks and bake at the longest, a rollback with all its retries, and retiring. The state machine's `TimeoutSeconds` is this (a test keeps
/// them equal), so a stuck execution times out into the safety net instead of living for a
/// year (Step Functions' own limit).
pub const fn max_execution_seconds() -> u64 {
    let prepare = 2 * 15 * 60; // two tasks, each with its Lambda retries
    let cluster_wait = MAX_CLUSTER_POLLS * CLUSTER_POLL_SECONDS + 15 * 60;
    let registration = 20 * 30 + 15 * 60; // ClusterNotReady retries, then the others
    let apps = MAX_APPS_TIMEOUT_SECONDS as u64 + 15 * 60;
    // The gates before traffic: target health and cluster readiness.
    let gates = 2 * (MAX_GATE_TIMEOUT_SECONDS as u64 + 15 * 60);
    let approvals = MAX_STEPS as u64 * MAX_APPROVAL_TIMEOUT_SECONDS as u64;
    // Hooks before traffic, after every step and after promotion: one task each, its attempts
    // up to the function's 300 s timeout.
    let hooks = (MAX_STEPS as u64 + 2) * 60 * 60;
    let retire = 2 * 15 * 60;
    let bakes = MAX_STEPS as u64 * (MAX_BAKE_SECONDS as u64 + 15 * 60);
    let rollback = 60 * 60;
    // A gradual rollback's holds, and its steps back (each a task of up to 5 minutes).
    let gradual = MAX_STEP_BACK_HOLDS_SECONDS as u64 + MAX_STEPS_BACK as u64 * 5 * 60;
    // A change freeze may hold the rollout before its first step and at every step's end.
    let freezes = (MAX_STEPS as u64 + 1) * MAX_FROZEN_SECONDS as u64;
    prepare
        + freezes
        + cluster_wait
        + registration
        + apps
        + gates
        + approvals
        + hooks
        + bakes
        + rollback
        + gradual
        + retire
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn truncate_keeps_short_text_and_cuts_on_a_char_boundary() {
        assert_eq!(truncate("abc", 3), "abc");
        assert_eq!(truncate("abcdef", 5), "ab…");
        let cut = truncate("ééééé", 6);
        assert!(cut.len() <= 6 && cut.ends_with('…'), "{cut}");
        assert_eq!(truncate("abcdef", 0), "…");
    }

    #[test]
    fn truncate_ends_at_a_word_when_one_ends_near_the_cut() {
        let text = "`cluster-canary fleet start` stores it before it starts";
        assert_eq!(
            truncate(text, 53),
            "`cluster-canary fleet start` stores it before it…"
        );
        assert_eq!(
            truncate(text, 51),
            "`cluster-canary fleet start` stores it before it…"
        );
        assert_eq!(
            truncate(text, 49),
            "`cluster-canary fleet start` stores it before…"
        );
        let one_long_word = "a ".to_owned() + &"x".repeat(60);
        assert_eq!(
            truncate(&one_long_word, 43).len(),
            43,
            "no word end near: cut inside it"
        );
    }

    #[test]
    fn join_bounded_counts_what_it_leaves_out() {
        let items: Vec<String> = (1..=12).map(|i| format!("problem {i}")).collect();
        let text = join_bounded(&items, "; ", 10, 10_000);
        assert!(text.starts_with("problem 1; problem 2"));
        assert!(text.ends_with("problem 10; … and 2 more"), "{text}");
        assert_eq!(
            join_bounded(&items[..2], "; ", 10, 10_000),
            "problem 1; problem 2"
        );
        let long = vec!["x".repeat(5000)];
        assert!(join_bounded(&long, "; ", 10, 10_000).len() <= MAX_LINE_BYTES);
        assert!(join_bounded(&items, "; ", 10, 20).len() <= 20);
    }

    #[test]
    fn the_budget_leaves_room_under_step_functions_limit() {
        const { assert!(STATE_BUDGET_BYTES < 256 * 1024 / 2) };
        let fixed_parts = MAX_PLAN_BYTES
            + 8 * 1024
            + 2 * 4 * 1024
            + MAX_REASON_BYTES
            + 1024
            + MAX_SUMMARY_BYTES
            + 200
            + 3 * MAX_CAUSE_BYTES
            + 2 * MAX_EVIDENCE_BYTES;
        assert!(fixed_parts < STATE_BUDGET_BYTES, "{fixed_parts}");
    }
}
