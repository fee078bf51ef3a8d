//! `start`, `watch`, `approve`, `reject`, `abort`, `list`: one execution of the rollout state
//! machine at a time.

use std::path::Path;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use aws_config::SdkConfig;
use aws_smithy_types::date_time::Format;
use aws_smithy_types::DateTime;
use canary_core::{RolloutPlan, TargetWeights};
use serde_json::json;

use crate::args::StateMachineArgs;
use crate::error::CliError;
use crate::history::{self, EventKind, HistoryEvent, TaskToken};
use crate::locate::{self, region_of};
use crate::plan_commands::{duration_text, validated};
use crate::printer::Printer;
use crate::progress::{Tracker, Update};
use crate::traffic::Traffic;
use crate::view::{status_line, target_label, weights_text};
use canary_aws::executions::execution_arn;
use canary_aws::SdkExecutions;

/// How often the live view reads the history: well under Step Functions' GetExecutionHistory
/// rate (a refill of 5 calls a second per account).
const POLL: Duration = Duration::from_secs(2);
/// A reason a person gives is kept in the execution's cause; Step Functions allows 32,768
/// characters there, cluster-canary's state budget much less.
const MAX_REASON_CHARS: usize = 1000;

pub fn now() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64())
}

pub fn who(by: Option<&str>) -> String {
    by.map(str::to_owned)
        .or_else(|| std::env::var("USER").ok())
        .unwrap_or_else(|| "cluster-canary".to_owned())
}

/// An execution name: `<cluster>-<UTC time>`, within Step Functions' 80 characters.
pub fn execution_name(cluster: &str, at: f64) -> String {
    let time = DateTime::from_secs(at as i64)
        .fmt(Format::DateTime)
        .unwrap_or_default()
        .replace([':', '-'], "");
    let cluster: String = cluster.chars().take(80 - 1 - time.len()).collect();
    format!("{cluster}-{time}")
}

/// Step Functions' rule for execution names: 1–80 of letters, digits, `-` and `_`.
pub fn check_execution_name(name: &str) -> Result<(), CliError> {
    let ok = !name.is_empty()
        && name.len() <= 80
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
    if ok {
        Ok(())
    } else {
        Err(CliError::Invalid(format!(
            "--name `{name}`: an execution name is 1 to 80 letters, digits, `-` or `_`"
        )))
    }
}

pub async fn start(
    config: &SdkConfig,
    file: &Path,
    name: Option<&str>,
    machine: &StateMachineArgs,
    printer: &mut Printer,
) -> Result<String, CliError> {
    let (raw, valid) = validated(file)?;
    let name = match name {
        Some(name) => name.to_owned(),
        None => execution_name(&valid.plan.cluster.name, now()),
    };
    check_execution_name(&name)?;
    let machine = locate::state_machine(config, machine).await?;
    let sfn = SdkExecutions::in_region(config, region_of(&machine));
    // StartExecution answers a name that is RUNNING with the same input as a success, starting
    // nothing: say so instead of `started:`.
    // (Any other answer, a missing execution included, is StartExecution's to give.)
    if let Ok(existing) = sfn.describe(&execution_arn(&machine, &name)).await {
        if existing.running() {
            return Err(CliError::Invalid(format!(
                "a rollout named `{name}` is already running ({}): nothing new started; \
                 follow it with `cluster-canary watch {name}`",
                existing.arn
            )));
        }
    }
    let arn = sfn.start(&machine, &name, &raw.to_string()).await?;
    printer.say(
        &format!("started: {arn}"),
        json!({"type": "started", "executionArn": arn}),
    );
    Ok(arn)
}

/// Follows the execution to its end; true when it promoted (SUCCEEDED).
pub async fn watch(
    config: &SdkConfig,
    execution_arn: &str,
    printer: &mut Printer,
) -> Result<bool, CliError> {
    let sfn = SdkExecutions::in_region(config, region_of(execution_arn));
    let traffic = Traffic::new(config)?;
    let mut tracker = Tracker::new(execution_arn);
    let mut plan: Option<RolloutPlan> = None;
    let mut seen = 0;
    let mut last_weights: Option<Vec<TargetWeights>> = None;
    let mut last_weights_read = Instant::now() - Duration::from_secs(60);
    // Whether the history's end was said: a look may read it while the status still says
    // RUNNING (the status is read first), and the next look must not say the outcome again.
    let mut ended = false;
    loop {
        // Status first, history second: the history read then includes the final events.
        let execution = sfn.describe(execution_arn).await?;
        let events = sfn.events(execution_arn).await?;
        if plan.is_none() {
            plan = history::plan(&events).and_then(|p| RolloutPlan::parse(p).ok().map(|v| v.plan));
        }
        // Only the newest step of what is new is read back from AWS: older ones in a replay or
        // a catch-up would show today's weights, not that step's.
        let newest_step = events[seen.min(events.len())..]
            .iter()
            .rposition(
                |e| matches!(&e.kind, EventKind::StateExited { name, .. } if name == "SetWeights"),
            )
            .map(|i| i + seen);
        for (i, event) in events.iter().enumerate().skip(seen) {
            let Some(mut update) = tracker.feed(event) else {
                continue;
            };
            if let (Update::Step { read_back, .. }, Some(plan)) = (&mut update, &plan) {
                if execution.running() && Some(i) == newest_step {
                    *read_back = traffic.weights(plan).await.ok();
                }
            }
            ended |= matches!(update, Update::Ended { .. });
            printer.update(&update);
        }
        seen = events.len();
        // The status may say the end a moment before the history has its last events.
        let settled = execution
            .stopped
            .is_some_and(|stopped| now() - stopped > 5.0);
        if !execution.running() && (ended || settled) {
            if !ended {
                let given = |text: &Option<String>| text.clone().filter(|t| !t.is_empty());
                printer.update(&Update::Ended {
                    status: execution.status.clone(),
                    error: given(&execution.error),
                    cause: given(&execution.cause),
                });
            }
            if let Some(plan) = &plan {
                match traffic.weights(plan).await {
                    Ok(weights) => printer.say(
                        &format!("weights now: {}", weights_text(&weights)),
                        json!({"type": "weightsNow", "weights": weights}),
                    ),
                    Err(why) => printer.text(&format!("weights now: cannot read: {why}")),
                }
                if without_its_own_rollback(&execution) {
                    let events = sfn.events(execution_arn).await?;
                    safety_nets_turn(config, execution_arn, &events, plan, &traffic, printer).await;
                }
            }
            printer.finish();
            return Ok(execution.status == "SUCCEEDED");
        }
        if printer.output == crate::view::Output::Terminal {
            if let Some(plan) = &plan {
                if last_weights_read.elapsed() > Duration::from_secs(10) {
                    last_weights = traffic.weights(plan).await.ok();
                    last_weights_read = Instant::now();
                }
            }
            printer.status(&status_line(
                tracker.status(),
                now(),
                last_weights.as_deref(),
            ));
        }
        // Each look reads the whole history, a page per 1,000 events: a long rollout (approvals
        // waiting for days) is looked at less often, keeping under half a call a second.
        let pages = u32::try_from(events.len() / 1000 + 1).unwrap_or(u32::MAX);
        tokio::time::sleep(POLL.saturating_mul(pages)).await;
    }
}

/// How long the live view, once an execution ended without its own rollback, looks for the
/// safety net's restore (it comes within seconds when its rule is enabled).
const SAFETY_NET_LOOK: Duration = Duration::from_secs(15);

/// Stopped, timed out, or failed with an error no Catch handles (`States.*`): the state
/// machine ran no rollback; the safety net is to.
fn without_its_own_rollback(execution: &canary_aws::executions::Execution) -> bool {
    match execution.status.as_str() {
        "ABORTED" | "TIMED_OUT" => true,
        "FAILED" => execution
            .error
            .as_deref()
            .is_some_and(|e| e.starts_with("States.")),
        _ => false,
    }
}

/// After such an end: what the traffic is, said only once read back. At the baseline within
/// [`SAFETY_NET_LOOK`] is the safety net's restore; otherwise it says so, whether the SafetyNet
/// rule is enabled, and the ways on.
async fn safety_nets_turn(
    config: &SdkConfig,
    execution_arn: &str,
    events: &[HistoryEvent],
    plan: &RolloutPlan,
    traffic: &Traffic,
    printer: &mut Printer,
) {
    let Some(baseline) = history::baseline(events).filter(|_| history::set_a_step(events)) else {
        return; // nothing had moved
    };
    let deadline = Instant::now() + SAFETY_NET_LOOK;
    let mut found = traffic.weights(plan).await;
    while found.as_ref().is_ok_and(|w| *w != baseline) && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_secs(1)).await;
        found = traffic.weights(plan).await;
    }
    if found.as_ref().is_ok_and(|w| *w == baseline) {
        printer.say(
            &format!("baseline restored: {}", weights_text(&baseline)),
            json!({"type": "restored", "weights": baseline}),
        );
        return;
    }
    let found = found.map_or_else(|why| why, |w| weights_text(&w));
    let rule = safety_net_rule_trouble(config, execution_arn).await;
    printer.say(
        &format!(
            "not at the baseline ({}) {} s after the end: found {found}. {}\n  \
             `cluster-canary abort {execution_arn}` waits for the safety net; \
             `cluster-canary restore {execution_arn}` puts back what this rollout moved",
            weights_text(&baseline),
            SAFETY_NET_LOOK.as_secs(),
            rule.as_deref().unwrap_or(
                "The safety net's rule is enabled: its restore may still come (a delivery can be \
                 late), or it left a target someone else changed as they left it"
            )
        ),
        json!({"type": "notRestored", "weights": found, "baseline": baseline, "safetyNetRule": rule}),
    );
}

/// What is wrong with the rule that sends the rollout state machine's abnormal ends to the
/// safety net, in words for a person; `None` when one is enabled.
async fn safety_net_rule_trouble(config: &SdkConfig, execution_arn: &str) -> Option<String> {
    use canary_aws::{RuleState, SdkEvents};
    let machine = canary_aws::state_machine_of(execution_arn)?;
    let mut regional = config.to_builder();
    if let Some(region) = region_of(execution_arn) {
        regional = regional.region(aws_config::Region::new(region.to_owned()));
    }
    let rules = match SdkEvents::new(&regional.build())
        .rules_for_ends_of(&machine)
        .await
    {
        Ok(rules) => rules,
        Err(e) => return Some(format!("The stack's SafetyNet rule could not be read: {e}")),
    };
    if rules.iter().any(|(_, state)| *state == RuleState::Enabled) {
        return None;
    }
    let sweep = "nothing restores a stopped rollout but the stack's sweep (every 5 minutes, \
                 for what a rollout left where it was) or a person";
    Some(match rules.first() {
        Some((name, _)) => format!(
            "The stack's SafetyNet rule {name} is DISABLED: {sweep}. Enable it: aws events \
             enable-rule --name {name}"
        ),
        None => format!(
            "No rule sends {machine}'s ends to the safety net (the stack's SafetyNet rule is \
             deleted): {sweep}. Deploy the stack again"
        ),
    })
}

/// Writes the execution's report page (`report.rs`): its history, and the compared metrics'
/// series from CloudWatch over the execution's span (from one comparison window before it).
pub async fn report(
    config: &SdkConfig,
    execution_arn: &str,
    out: Option<&Path>,
    printer: &mut Printer,
) -> Result<(), CliError> {
    let sfn = SdkExecutions::in_region(config, region_of(execution_arn));
    let execution = sfn.describe(execution_arn).await?;
    let events = sfn.events(execution_arn).await?;
    let timeline = crate::report::timeline(execution_arn, &events, &execution.status);
    let plan = history::plan(&events).and_then(|p| RolloutPlan::parse(p).ok().map(|v| v.plan));
    let compared = match plan {
        Some(plan) => {
            let lookback = plan
                .analysis
                .as_ref()
                .and_then(|a| a.compare.as_ref())
                .map_or(0, |c| u64::try_from(c.lookback_seconds).unwrap_or(0));
            let at = |seconds: f64| UNIX_EPOCH + Duration::from_secs_f64(seconds.max(0.0));
            let start = at(execution.started) - Duration::from_secs(lookback);
            let end = at(execution.stopped.unwrap_or_else(now) + 1.0);
            // The metrics are where the rollout read them: the stack's region.
            let regional = locate::in_region(config, region_of(execution_arn));
            let clients = canary_rollout::clients::CheckClients::from_config(
                &regional,
                &canary_rollout::clients::process_env,
            );
            canary_rollout::signals::compared_series(&clients.signals(), &plan, start, end)
                .await
                .map_err(|e| match e {
                    canary_rollout::AnalysisError::Aws(e) => CliError::Aws(e),
                    e => CliError::Invalid(format!("reading the compared metrics: {e}")),
                })?
        }
        None => Vec::new(),
    };
    let page = crate::report::render(&timeline, &compared);
    let path = match out {
        Some(path) => path.to_path_buf(),
        None => format!("{}.html", execution.name).into(),
    };
    std::fs::write(&path, page).map_err(|e| {
        CliError::Invalid(format!(
            "cannot write the report to {}: {e}",
            path.display()
        ))
    })?;
    printer.say(
        &format!("report written: {}", path.display()),
        json!({"type": "report", "path": path.display().to_string()}),
    );
    Ok(())
}

/// `approve` (reason `None`) or `reject`.
pub async fn answer(
    config: &SdkConfig,
    execution_arn: &str,
    rejection: Option<&str>,
    by: Option<&str>,
    printer: &mut Printer,
) -> Result<(), CliError> {
    check_reason(rejection)?;
    let sfn = SdkExecutions::in_region(config, region_of(execution_arn));
    let execution = sfn.describe(execution_arn).await?;
    if !execution.running() {
        return Err(CliError::NotFound(format!(
            "{execution_arn} is {}: nothing waits for an approval",
            execution.status
        )));
    }
    let events = sfn.events(execution_arn).await?;
    let Some(pending) = history::pending_approval(&events) else {
        let at = history::current_step(&events)
            .map(|s| format!(" (at step {}/{}, {}%)", s.number, s.count, s.weight))
            .unwrap_or_default();
        return Err(CliError::NotFound(format!(
            "{execution_arn} is running{at} but is not waiting for an approval"
        )));
    };
    let by = who(by);
    let step = pending.step;
    let (said, then) =
        match send_answer(&sfn, &pending.token, rejection, &by, "ApprovalRejected").await? {
            Answer::Approved => ("approved", "it goes on"),
            Answer::Rejected => ("rejected", "it restores the baseline"),
        };
    printer.say(
        &format!(
            "{said} step {}/{} ({}%) of {execution_arn}: {then}",
            step.number, step.count, step.weight
        ),
        json!({"type": said, "executionArn": execution_arn, "step": step, "by": by}),
    );
    Ok(())
}

/// A rejection's reason becomes the execution's cause: 1 to [`MAX_REASON_CHARS`] characters.
pub fn check_reason(rejection: Option<&str>) -> Result<(), CliError> {
    match rejection {
        Some(reason) if reason.chars().count() > MAX_REASON_CHARS || reason.trim().is_empty() => {
            Err(CliError::Invalid(format!(
                "--reason must say why in 1 to {MAX_REASON_CHARS} characters (it becomes the execution's cause)"
            )))
        }
        _ => Ok(()),
    }
}

/// A person's answer to a task that waits for one.
pub enum Answer {
    Approved,
    Rejected,
}

/// Sends the answer on `token`: SendTaskSuccess with who approved, or SendTaskFailure with
/// `error` and who rejected and why.
pub async fn send_answer(
    sfn: &SdkExecutions,
    token: &TaskToken,
    rejection: Option<&str>,
    by: &str,
    error: &str,
) -> Result<Answer, CliError> {
    match rejection {
        None => {
            sfn.send_task_success(&token.0, &json!({ "approvedBy": by }).to_string())
                .await?;
            Ok(Answer::Approved)
        }
        Some(reason) => {
            sfn.send_task_failure(&token.0, error, &format!("rejected by {by}: {reason}"))
                .await?;
            Ok(Answer::Rejected)
        }
    }
}

/// Stops the execution and waits until its targets are back at the baseline Prepare read.
pub async fn abort(
    config: &SdkConfig,
    execution_arn: &str,
    reason: &str,
    timeout: Duration,
    printer: &mut Printer,
) -> Result<(), CliError> {
    let sfn = SdkExecutions::in_region(config, region_of(execution_arn));
    let execution = sfn.describe(execution_arn).await?;
    match execution.status.as_str() {
        "RUNNING" => {
            sfn.stop(execution_arn, &format!("{reason} (by {})", who(None)))
                .await?;
            printer.say(
                &format!("stopped {execution_arn}; waiting for the safety net to restore the baseline"),
                json!({"type": "stopped", "executionArn": execution_arn}),
            );
        }
        "SUCCEEDED" => {
            return Err(CliError::NotFound(format!(
                "{execution_arn} already promoted the canary: abort cannot undo a promotion. \
                 To move traffic back, start a rollout towards the old cluster"
            )))
        }
        status => printer.say(
            &format!("{execution_arn} already ended {status}; checking the safety net restored the baseline"),
            json!({"type": "alreadyEnded", "executionArn": execution_arn, "status": status}),
        ),
    }
    wait_for_baseline(config, &sfn, execution_arn, timeout, printer).await
}

/// Waits, up to `timeout`, until the targets of the ended `execution_arn` read the baseline its
/// Prepare recorded: its safety net restored them. One that never began a step moved nothing,
/// and its safety net writes nothing (weights set since are left as they are): no wait.
pub async fn wait_for_baseline(
    config: &SdkConfig,
    sfn: &SdkExecutions,
    execution_arn: &str,
    timeout: Duration,
    printer: &mut Printer,
) -> Result<(), CliError> {
    let events = sfn.events(execution_arn).await?;
    let Some((baseline, plan)) = recorded(&events, execution_arn, printer)? else {
        return Ok(());
    };
    if !history::set_a_step(&events) {
        printer.say(
            "it never set a step (no traffic moved): nothing for the safety net to restore",
            json!({"type": "nothingToRestore"}),
        );
        return Ok(());
    }
    let traffic = Traffic::new(config)?;
    let deadline = Instant::now() + timeout;
    let mut rule_said = false;
    loop {
        let now_weights = traffic.weights(&plan).await;
        if now_weights.as_ref().is_ok_and(|w| *w == baseline) {
            printer.say(
                &format!("baseline restored: {}", weights_text(&baseline)),
                json!({"type": "restored", "weights": baseline}),
            );
            return Ok(());
        }
        // Not back at the first look: is there a safety net to wait for? Said once, at once.
        if !rule_said {
            rule_said = true;
            if let Some(trouble) = safety_net_rule_trouble(config, execution_arn).await {
                printer.say(
                    &trouble,
                    json!({"type": "safetyNetRuleOff", "reason": trouble}),
                );
            }
        }
        if Instant::now() > deadline {
            let found = match now_weights {
                Ok(weights) => weights_text(&weights),
                Err(why) => why,
            };
            let rule = safety_net_rule_trouble(config, execution_arn).await;
            return Err(CliError::TimedOut(format!(
                "the baseline is not back after {}: found {found}, expected {}.\n{} Restore by hand:\n  \
                 cluster-canary restore {execution_arn}",
                duration_text(timeout.as_secs()),
                weights_text(&baseline),
                rule.unwrap_or_else(|| "The safety net leaves a rollout alone that ended settled (a \
                     foreign change it refused to overwrite), and its delivery may be late."
                    .to_owned()),
            )));
        }
        tokio::time::sleep(POLL).await;
    }
}

/// What `restore` says of a rollout that never moved traffic (Prepare had not finished, or no
/// step was set), in one wording.
const NOTHING_TO_RESTORE: &str =
    "this rollout never set a step (no traffic moved): nothing to restore";

/// The baseline Prepare recorded and the plan, from the execution's history; `None` (and it
/// says so) when Prepare had not finished: no traffic had moved.
fn recorded(
    events: &[HistoryEvent],
    execution_arn: &str,
    printer: &mut Printer,
) -> Result<Option<(Vec<TargetWeights>, RolloutPlan)>, CliError> {
    let Some(baseline) = history::baseline(events) else {
        printer.say(NOTHING_TO_RESTORE, json!({"type": "nothingToRestore"}));
        return Ok(None);
    };
    let plan = history::plan(events)
        .and_then(|p| RolloutPlan::parse(p).ok())
        .ok_or_else(|| {
            CliError::Invalid(format!("{execution_arn}: its input is not a valid plan"))
        })?
        .plan;
    Ok(Some((baseline, plan)))
}

/// Why a person's restore of `execution` would undo more than that rollout moved: its own
/// promotion, or a newer rollout of the same targets. `None` when it would not.
fn undoes_more(
    execution: &canary_aws::executions::Execution,
    newer: &[canary_rollout::prepare::RolloutOnTargets],
) -> Option<String> {
    let named = |rollouts: Vec<String>| {
        canary_core::limits::join_bounded(&rollouts, "; ", 5, canary_core::limits::MAX_REASON_BYTES)
    };
    let (running, ended): (Vec<_>, Vec<_>) = newer.iter().partition(|n| n.status == "RUNNING");
    // What to do about the newer ones: a running rollout restores its own baseline when it
    // is stopped (restore refuses a running one); an ended one can be restored itself.
    let mut advice = Vec::new();
    if !running.is_empty() {
        advice.push(format!(
            "a running one restores its own baseline when stopped (`cluster-canary abort {}`)",
            running[0].execution_arn
        ));
    }
    if !ended.is_empty() {
        advice.push(format!(
            "restore the newest ended one instead (`cluster-canary restore {}`)",
            ended[0].execution_arn
        ));
    }
    let newer_text = format!(
        "a newer rollout of the same targets ran or runs since {}: {}. Its baseline would \
         overwrite that rollout's weights (or its promotion); {}",
        execution.arn,
        named(newer.iter().map(ToString::to_string).collect()),
        advice.join("; ")
    );
    if execution.status == "SUCCEEDED" {
        let besides = match newer.is_empty() {
            true => String::new(),
            false => format!(". Besides, {newer_text}"),
        };
        return Some(format!(
            "{} promoted the canary: its baseline would put all traffic back on the old \
             cluster, which may be detached (retire) or gone. To go back, start a rollout \
             towards the old cluster (a plan with the stable and canary sides swapped){besides}",
            execution.arn
        ));
    }
    (!newer.is_empty()).then_some(newer_text)
}

/// Writes an ended execution's recorded baseline to every target of its plan, after showing
/// it beside what is there now and asking (unless `yes`); reads back; says what it overwrote.
///
/// Only what that rollout moved and left away from its baseline: a rollout that never set a
/// step has nothing to restore; a promoted one, or one a newer rollout of the same targets
/// followed, is refused (naming why) unless `force`.
pub async fn restore(
    config: &SdkConfig,
    execution_arn: &str,
    yes: bool,
    force: bool,
    printer: &mut Printer,
) -> Result<(), CliError> {
    let sfn = SdkExecutions::in_region(config, region_of(execution_arn));
    let execution = sfn.describe(execution_arn).await?;
    if execution.running() {
        return Err(CliError::Invalid(format!(
            "{execution_arn} is still running: it restores the baseline itself on a failure; \
             stop it with `cluster-canary abort {execution_arn}`"
        )));
    }
    let events = sfn.events(execution_arn).await?;
    let Some((baseline, plan)) = recorded(&events, execution_arn, printer)? else {
        return Ok(());
    };
    if !history::set_a_step(&events) {
        printer.say(NOTHING_TO_RESTORE, json!({"type": "nothingToRestore"}));
        return Ok(());
    }
    // As the safety net: a newer rollout of the same targets counts if it may have moved
    // traffic (it runs, or it set a step); one that ended before its first step (refused at
    // Prepare, stopped while it waited) has no weights to overwrite, and is only named.
    let mut newer = Vec::new();
    for other in canary_rollout::prepare::newer_rollouts(&sfn, execution_arn, &plan).await? {
        if canary_rollout::prepare::may_have_moved(&sfn, &other).await? {
            newer.push(other);
        } else {
            printer.say(
                &format!("a newer rollout of the same targets moved nothing (it ended before its first step): {other}"),
                json!({"type": "newerMovedNothing", "executionArn": other.execution_arn}),
            );
        }
    }
    if let Some(why) = undoes_more(&execution, &newer) {
        if !force {
            return Err(CliError::Refused(format!(
                "{why}. Nothing was written; `--force` restores this baseline anyway"
            )));
        }
        printer.say(
            &format!("warning (--force): {why}"),
            json!({"type": "forced", "why": why}),
        );
    }
    let traffic = Traffic::new(config)?;
    let now = traffic.weights(&plan).await;
    let now_text = match &now {
        Ok(weights) => weights_text(weights),
        Err(why) => why.clone(),
    };
    printer.say(
        &format!(
            "{execution_arn} ended {}.\n  baseline: {}\n  now:      {now_text}",
            execution.status,
            weights_text(&baseline)
        ),
        json!({"type": "restorePlan", "executionArn": execution_arn, "status": execution.status,
               "baseline": baseline, "now": now.as_ref().ok()}),
    );
    if now.as_ref().is_ok_and(|w| *w == baseline) {
        printer.say(
            "already at the baseline: nothing written",
            json!({"type": "restored", "weights": baseline, "overwrote": []}),
        );
        return close_test_traffic(&traffic.apis(), &plan, execution_arn, printer).await;
    }
    // A controller that owns a weight puts its own back after this restore as after any
    // other write: say so before anything is written (the restore still goes ahead).
    let apis = traffic.apis();
    for router in canary_rollout::traffic::routers(&apis, &plan) {
        let claims = router.controllers().await?;
        if !claims.is_empty() {
            let described = canary_rollout::traffic::describe_claims(&claims);
            printer.say(
                &format!(
                    "warning: {}: {described}, which puts its own weights back: change them where \
                     it reads them (the Ingress's annotations) too, or this restore will be undone",
                    router.label(),
                ),
                json!({"type": "ownedByController", "target": router.key(), "controller": described}),
            );
        }
    }
    if !yes && !confirmed("write the baseline to every target? [y/N] ")? {
        return Err(CliError::Invalid(
            "nothing written (answer y, or pass --yes)".to_owned(),
        ));
    }
    // Compared with the baseline itself: every target found elsewhere is reported as
    // overwritten, with what it was. A person's restore records no rollback metrics.
    let restored =
        canary_rollout::restore::restore(&apis, &plan, &baseline, Some(&baseline), None).await?;
    for overwritten in &restored.unexpected {
        printer.say(
            &format!(
                "overwrote {}: it was {}",
                target_label(&overwritten.target),
                overwritten.found
            ),
            json!({"type": "overwrote", "target": overwritten.target, "found": overwritten.found}),
        );
    }
    printer.say(
        &format!(
            "baseline restored, read back: {}",
            weights_text(&restored.weights)
        ),
        json!({"type": "restored", "weights": restored.weights}),
    );
    close_test_traffic(&apis, &plan, execution_arn, printer).await
}

/// The ended rollout's test-traffic rules (its plan's `testTraffic`) go with its weights.
async fn close_test_traffic(
    apis: &canary_rollout::Apis<'_>,
    plan: &canary_core::RolloutPlan,
    execution_arn: &str,
    printer: &mut Printer,
) -> Result<(), CliError> {
    let deleted = canary_rollout::test_traffic::close(apis.test_rules, plan, execution_arn).await?;
    if !deleted.is_empty() {
        printer.say(
            &format!("deleted its test-traffic rules: {}", deleted.join(", ")),
            json!({"type": "testRulesDeleted", "rules": deleted}),
        );
    }
    Ok(())
}

/// Asks on the terminal; without one there is nobody to answer, so no.
fn confirmed(question: &str) -> Result<bool, CliError> {
    use std::io::{BufRead, IsTerminal, Write};
    if !std::io::stdin().is_terminal() {
        return Err(CliError::Invalid(
            "nothing written: not asked on a terminal; pass --yes to restore without asking"
                .to_owned(),
        ));
    }
    eprint!("{question}");
    let _ = std::io::stderr().flush();
    let mut answer = String::new();
    std::io::stdin()
        .lock()
        .read_line(&mut answer)
        .map_err(|e| CliError::Invalid(format!("cannot read the answer: {e}")))?;
    Ok(matches!(answer.trim(), "y" | "Y" | "yes"))
}

/// Running and recent rollouts, newest first.
pub async fn list(
    config: &SdkConfig,
    machine: &StateMachineArgs,
    limit: usize,
    printer: &mut Printer,
) -> Result<(), CliError> {
    let machine = locate::state_machine(config, machine).await?;
    let sfn = SdkExecutions::in_region(config, region_of(&machine));
    let mut rows = vec![["NAME", "CLUSTER", "STATUS", "STEP", "OUTCOME", "AGE"]
        .map(str::to_owned)
        .to_vec()];
    for arn in sfn.list(&machine, false, limit).await? {
        let execution = sfn.describe(&arn).await?;
        let plan: serde_json::Value = execution
            .input
            .as_deref()
            .and_then(|i| serde_json::from_str(i).ok())
            .unwrap_or_default();
        let cluster = format!(
            "{}/{}",
            plan["cluster"]["region"].as_str().unwrap_or("?"),
            plan["cluster"]["name"].as_str().unwrap_or("?")
        );
        // The step a running rollout is at needs its history; a finished one says its outcome.
        let (step, frozen) = if execution.running() {
            let events = sfn.events(&arn).await?;
            (history::current_step(&events), history::frozen(&events))
        } else {
            (None, None)
        };
        let step_text = step.map_or_else(
            || "-".to_owned(),
            |s| format!("{}/{} {}%", s.number, s.count, s.weight),
        );
        let outcome = match (execution.status.as_str(), &execution.error) {
            ("RUNNING", _) => frozen.as_deref().map_or_else(
                || "-".to_owned(),
                |held| crate::progress::short_reason(&format!("frozen {held}")),
            ),
            ("SUCCEEDED", _) => "promoted".to_owned(),
            (_, Some(error)) => error.clone(),
            (status, None) => status.to_lowercase(),
        };
        let age = duration_text((now() - execution.started).max(0.0) as u64);
        printer.json(
            json!({"executionArn": arn, "name": execution.name, "cluster": cluster,
                            "status": execution.status, "step": step, "outcome": outcome,
                            "frozen": frozen, "startedAt": execution.started}),
        );
        let status = match &frozen {
            Some(_) => format!("{} (frozen)", execution.status),
            None => execution.status,
        };
        rows.push(vec![
            execution.name,
            cluster,
            status,
            step_text,
            outcome,
            age,
        ]);
    }
    if rows.len() == 1 {
        printer.text(&format!("no rollouts yet on {machine}"));
    } else {
        printer.text(&crate::plan_commands::table(&rows));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use canary_aws::executions::Execution;

    fn execution(status: &str) -> Execution {
        Execution {
            arn: "arn:aws:states:us-east-1:123456789012:execution:rollout:old".to_owned(),
            name: "old".to_owned(),
            status: status.to_owned(),
            input: None,
            output: None,
            started: 1.0,
            stopped: Some(2.0),
            error: None,
            cause: None,
        }
    }

    #[test]
    fn a_restore_never_undoes_a_promotion_or_a_newer_rollout() {
        assert_eq!(undoes_more(&execution("FAILED"), &[]), None);
        let promoted = undoes_more(&execution("SUCCEEDED"), &[]).expect("refused");
        assert!(promoted.contains("promoted the canary"), "{promoted}");
        assert!(
            promoted.contains("start a rollout towards the old cluster"),
            "{promoted}"
        );
        let rollout = |name: &str, status: &str| canary_rollout::prepare::RolloutOnTargets {
            execution_arn: format!(
                "arn:aws:states:us-east-1:123456789012:execution:rollout:{name}"
            ),
            status: status.to_owned(),
            target: "listener/x".to_owned(),
        };
        let newer = vec![rollout("new", "RUNNING"); 7];
        let why = undoes_more(&execution("ABORTED"), &newer).expect("refused");
        assert!(
            why.contains("a newer rollout of the same targets ran or runs since"),
            "{why}"
        );
        assert!(why.contains("… and 2 more"), "bounded: {why}");
        assert!(
            why.contains("a running one restores its own baseline when stopped (`cluster-canary abort arn:aws:states:us-east-1:123456789012:execution:rollout:new`)"),
            "{why}"
        );
        assert!(!why.contains("restore the newest ended one"), "{why}");
        // Promoted, with a newer rollout running and one ended since: both named, and what to
        // do about each.
        let both = [rollout("running", "RUNNING"), rollout("ended", "FAILED")];
        let why = undoes_more(&execution("SUCCEEDED"), &both).expect("refused");
        assert!(why.contains("promoted the canary"), "{why}");
        assert!(
            why.contains("rollout:running (RUNNING, shifts listener/x)"),
            "{why}"
        );
        assert!(
            why.contains("`cluster-canary restore arn:aws:states:us-east-1:123456789012:execution:rollout:ended`"),
            "{why}"
        );
    }
}
