//! How a rollout's updates read: one line per update for people (coloured on a terminal),
//! one JSON object per update for machines, and the status line a terminal redraws.

use anstyle::{AnsiColor, Style};
use canary_core::TargetWeights;

use crate::progress::{Status, Update};

/// How the CLI writes what it has to say.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Output {
    /// Plain lines (a pipe, a log, CI).
    Plain,
    /// Lines with colour, and a status line redrawn in place.
    Terminal,
    /// One JSON object per line.
    Json,
}

#[derive(Clone, Copy)]
enum Tone {
    Good,
    Bad,
    Waiting,
}

fn paint(output: Output, tone: Tone, text: &str) -> String {
    if output != Output::Terminal {
        return text.to_owned();
    }
    let colour = match tone {
        Tone::Good => AnsiColor::Green,
        Tone::Bad => AnsiColor::Red,
        Tone::Waiting => AnsiColor::Yellow,
    };
    let style = Style::new().fg_color(Some(colour.into())).bold();
    format!("{style}{text}{style:#}")
}

/// A target key for people: `listener 50dc6c495c0c9188`, `rule 9683b2d02a6cabee`,
/// `endpoint-group 0604e85fbedd` (a Global Accelerator's), `lattice rule-0123…` (a VPC Lattice
/// listener's or rule's ID), or the record name.
pub fn target_label(key: &str) -> String {
    if let Some(rest) = key.strip_prefix("route53:") {
        // route53:<zone>:<name>:<type>
        return rest.split(':').nth(1).unwrap_or(rest).to_owned();
    }
    let id = key.rsplit('/').next().unwrap_or(key);
    if key.starts_with("vpcLattice:") {
        return format!("lattice {id}");
    }
    if key.contains(":globalaccelerator:") && key.contains("/endpoint-group/") {
        format!("endpoint-group {id}")
    } else if key.contains(":listener-rule/") {
        format!("rule {id}")
    } else if key.contains(":listener/") {
        format!("listener {id}")
    } else {
        key.to_owned()
    }
}

/// `listener 50dc… stable 90 / canary 10, app.example.com. stable 90 / canary 10`
pub fn weights_text(weights: &[TargetWeights]) -> String {
    weights
        .iter()
        .map(|w| {
            format!(
                "{} stable {} / canary {}",
                target_label(&w.target),
                w.stable,
                w.canary
            )
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// The lines that say `update` (for JSON see [`json_line`]); `verbose`: a check's every reason.
pub fn lines(update: &Update, output: Output, verbose: bool) -> Vec<String> {
    let one = |line: String| vec![line];
    match update {
        Update::Started {
            execution_arn,
            cluster,
        } => one(format!("rollout of cluster {cluster}: {execution_arn}")),
        Update::Prepared { steps, baseline } => one(format!(
            "prepared: steps {}; baseline {}",
            steps
                .iter()
                .map(|w| format!("{w}%"))
                .collect::<Vec<_>>()
                .join(", "),
            weights_text(baseline)
        )),
        Update::Cluster { name, status } => one(format!("cluster {name} is {status}")),
        Update::Registered {
            secret_name,
            outcome,
        } => one(format!(
            "registered in Argo CD: Secret {secret_name} ({outcome})"
        )),
        Update::Apps { ready, reason } => one(if *ready {
            format!(
                "Argo CD apps {}: {reason}",
                paint(output, Tone::Good, "ready")
            )
        } else {
            format!(
                "Argo CD apps not ready: {}",
                reason.trim_start_matches("not ready: ")
            )
        }),
        Update::TargetHealth { ready, reason } => one(gate_look(
            output,
            "canary targets",
            (*ready).then_some("healthy"),
            "not healthy yet",
            reason,
        )),
        Update::ClusterReadiness { ready, reason } => one(gate_look(
            output,
            "cluster",
            (*ready).then_some("ready by EKS"),
            "not ready yet by EKS",
            reason,
        )),
        Update::TestTrafficOpened { addresses } => std::iter::once(
            "test traffic only: the new cluster gets only requests that carry the stage's conditions"
                .to_owned(),
        )
        .chain(addresses.iter().map(|a| format!("  test address: {a}")))
        .collect(),
        Update::TestTrafficLook { passed, summary } => one(gate_look(
            output,
            "test traffic",
            (*passed).then_some("passed"),
            "looked at",
            summary,
        )),
        Update::ApprovalRequested {
            execution_arn,
            step,
            timeout_seconds,
            on_timeout,
        } => vec![
            format!(
                "{} before step {}/{} ({}%); the checks go on meanwhile{}",
                paint(output, Tone::Waiting, "approval requested"),
                step.number,
                step.count,
                step.weight,
                match (timeout_seconds, on_timeout) {
                    (Some(seconds), Some(action)) =>
                        format!("; no answer in {seconds} s: {action}"),
                    (Some(seconds), None) => format!("; no answer in {seconds} s"),
                    _ => String::new(),
                }
            ),
            format!("  approve: cluster-canary approve {execution_arn}"),
            format!("  reject:  cluster-canary reject {execution_arn} --reason \"…\""),
        ],
        Update::ApprovalAnswered { approved } => one(if *approved {
            paint(output, Tone::Good, "approved")
        } else {
            paint(output, Tone::Bad, "not approved")
        }),
        Update::Step {
            step,
            weights,
            read_back,
        } => one(match read_back {
            Some(now) if now == weights => format!(
                "step {}/{}: {}% to the canary -- read back: {}",
                step.number,
                step.count,
                step.weight,
                weights_text(now)
            ),
            // Moved since it was set (an instant rollback, a foreign write): both, named.
            Some(now) => format!(
                "step {}/{}: {}% to the canary -- set: {}; now: {}",
                step.number,
                step.count,
                step.weight,
                weights_text(weights),
                weights_text(now)
            ),
            None => format!(
                "step {}/{}: {}% to the canary -- set: {}",
                step.number,
                step.count,
                step.weight,
                weights_text(weights)
            ),
        }),
        Update::Check {
            number,
            of,
            verdict,
            reason,
            more_signals,
            summary,
            frozen,
            held_again,
        } => {
            let held = |reason: &str| format!("  {}: {reason}", paint(output, Tone::Waiting, "held"));
            if let (true, Some(reason)) = (held_again, frozen) {
                return vec![held(reason)];
            }
            let tone = match verdict.as_str() {
                "pass" => Tone::Good,
                "fail" => Tone::Bad,
                _ => Tone::Waiting,
            };
            // A check while an approval waits has no count of checks (0).
            let of = if *of == 0 {
                String::new()
            } else {
                format!("/{of}")
            };
            let why = if verbose {
                summary.clone()
            } else {
                match more_signals {
                    0 => reason.clone(),
                    1 => format!("{reason} (+1 more signal)"),
                    n => format!("{reason} (+{n} more signals)"),
                }
            };
            let check = format!(
                "  check {number}{of}: {} -- {why}",
                paint(output, tone, verdict)
            );
            match frozen {
                Some(reason) => vec![check, held(reason)],
                None => vec![check],
            }
        }
        Update::Frozen { reason } => one(format!(
            "{} before the first step: {reason}",
            paint(
                output,
                Tone::Waiting,
                &format!("held by {}", crate::history::holder(reason))
            )
        )),
        Update::Promoted => one(format!(
            "{}: the canary takes all traffic",
            paint(output, Tone::Good, "promoted")
        )),
        Update::StepRetrying { error, cause } => one(format!(
            "{}: {error}: {cause}; the state machine tries again",
            paint(output, Tone::Waiting, "step not set yet")
        )),
        Update::Failed {
            state,
            error,
            cause,
        } => one(format!(
            "{} ({}): {error}: {cause}",
            paint(output, Tone::Bad, "failed"),
            crate::progress::failed_where(state)
        )),
        Update::Restored { weights } => {
            one(format!("restored the baseline: {}", weights_text(weights)))
        }
        Update::StepBack {
            stepped_back: true,
            weights,
            reason,
        } => one(format!(
            "{}: {reason}: {}",
            paint(output, Tone::Waiting, "stepped back"),
            weights_text(weights)
        )),
        Update::StepBack { reason, .. } => one(format!("no further step back: {reason}")),
        Update::RestoreFailing { error, cause } => one(format!(
            "{}: the restore could not put the baseline back ({error}: {cause}); traffic is NOT at \
             the baseline yet, and the state machine keeps retrying",
            paint(output, Tone::Bad, "ROLLBACK FAILING")
        )),
        Update::RestoreFailed { error, cause } => one(format!(
            "{}: the restore gave up ({error}: {cause}); traffic may not be at the baseline: restore \
             it by hand (`cluster-canary restore`)",
            paint(output, Tone::Bad, "ROLLBACK FAILED")
        )),
        Update::RestoredUnchanged { weights, left } => {
            let restored = match weights.is_empty() {
                true => "no target left where this rollout set it".to_owned(),
                false => format!("the baseline restored: {}", weights_text(weights)),
            };
            let left = match left.is_empty() {
                true => String::new(),
                false => format!(". {left}"),
            };
            one(format!("after the foreign change, {restored}{left}"))
        }
        Update::AlarmWatchUnavailable { reason } => one(format!(
            "{}: the alarm watch could not be registered{}; alarms are read only at each \
             polling check, not the instant they fire",
            paint(output, Tone::Bad, "INSTANT ROLLBACK OFF"),
            match reason.is_empty() {
                true => String::new(),
                false => format!(" ({reason})"),
            }
        )),
        Update::RollbackReverted { found, weights } => one(format!(
            "{}: after the rollback something put weights back ({found}); baseline put back: {}",
            paint(output, Tone::Bad, "ROLLBACK REVERTED"),
            weights_text(weights)
        )),
        Update::Ended {
            status,
            error,
            cause,
        } => one(match (status.as_str(), error) {
            ("SUCCEEDED", _) => format!("outcome: {}", paint(output, Tone::Good, "SUCCEEDED")),
            // No Catch runs when an execution is stopped or times out: the safety net is to act,
            // which only the weights read back afterwards can tell.
            ("ABORTED" | "TIMED_OUT", _) => format!(
                "outcome: {}{} -- it ran no rollback of its own: the safety net's to restore",
                paint(output, Tone::Bad, status),
                cause.as_deref().map(|c| format!(" ({c})")).unwrap_or_default()
            ),
            (_, Some(error)) => format!(
                "outcome: {} -- {error}: {}",
                paint(output, Tone::Bad, status),
                cause.as_deref().unwrap_or_default()
            ),
            _ => format!("outcome: {}", paint(output, Tone::Bad, status)),
        }),
    }
}

/// One update as a JSON line.
pub fn json_line(update: &Update) -> String {
    serde_json::to_string(update).unwrap_or_else(|e| format!(r#"{{"type":"error","error":"{e}"}}"#))
}

/// How long a state lasts before the status line says for how long.
const LONG_STATE_SECONDS: f64 = 10.0;

/// `⟳ baking · step 2/3 (50%) · next check in 8 s · listener … stable 50 / canary 50`
pub fn status_line(status: &Status, now: f64, weights: Option<&[TargetWeights]>) -> String {
    let mut parts = vec![status.phase.clone()];
    // A state that lasts (a task waiting on AWS) says for how long; a bake says its next check.
    if let (Some(since), None) = (status.in_state_since, status.next_check_at) {
        let seconds = now - since;
        if seconds >= LONG_STATE_SECONDS {
            parts.push(format!("for {seconds:.0} s"));
        }
    }
    if let Some(step) = status.step {
        parts.push(format!(
            "step {}/{} ({}%)",
            step.number, step.count, step.weight
        ));
    }
    if let Some(at) = status.next_check_at {
        parts.push(format!("next check in {:.0} s", (at - now).max(0.0)));
    }
    if status.awaiting_approval {
        parts.push("waiting for a person: cluster-canary approve|reject".to_owned());
    }
    if let Some(weights) = weights.filter(|w| !w.is_empty()) {
        parts.push(weights_text(weights));
    }
    format!("… {}", parts.join(" · "))
}

/// One look of a gate before traffic: `<subject> <passed, painted | not yet>: <why>`.
fn gate_look(
    output: Output,
    subject: &str,
    passed: Option<&str>,
    not_yet: &str,
    reason: &str,
) -> String {
    let said = match passed {
        Some(word) => paint(output, Tone::Good, word),
        None => not_yet.to_owned(),
    };
    format!(
        "{subject} {said}: {}",
        crate::progress::short_reason(reason)
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use canary_core::WeightPair;

    #[test]
    fn each_kind_of_target_is_named_by_its_short_id() {
        for (key, label) in [
            ("arn:aws:elasticloadbalancing:us-east-1:123456789012:listener/app/web/50dc/f2f7", "listener f2f7"),
            ("arn:aws:elasticloadbalancing:us-east-1:123456789012:listener/net/tcp/50dc/a1b2", "listener a1b2"),
            ("arn:aws:elasticloadbalancing:us-east-1:123456789012:listener-rule/app/web/50dc/f2f7/9683", "rule 9683"),
            (
                "arn:aws:globalaccelerator::123456789012:accelerator/f19d/listener/4ac0/endpoint-group/0604e85f",
                "endpoint-group 0604e85f",
            ),
            ("route53:Z1:app.example.com.:A", "app.example.com."),
            (
                "vpcLattice:svc-0123456789abcdef0/listener-0123456789abcdef0",
                "lattice listener-0123456789abcdef0",
            ),
            (
                "vpcLattice:svc-0123456789abcdef0/listener-0123456789abcdef0/rule-0123456789abcdef0",
                "lattice rule-0123456789abcdef0",
            ),
        ] {
            assert_eq!(target_label(key), label, "{key}");
        }
    }

    #[test]
    fn a_step_set_long_says_for_how_long_and_a_step_moved_since_says_both() {
        let status = Status {
            phase: "shifting traffic".to_owned(),
            in_state_since: Some(1000.0),
            ..Status::default()
        };
        assert_eq!(status_line(&status, 1004.0, None), "… shifting traffic");
        assert_eq!(
            status_line(&status, 1095.0, None),
            "… shifting traffic · for 95 s"
        );

        let pair = |stable, canary| {
            vec![TargetWeights::new(
                "route53:Z1:app.example.com.:A".to_owned(),
                WeightPair { stable, canary },
            )]
        };
        let step = Update::Step {
            step: crate::history::StepRef {
                number: 2,
                count: 3,
                weight: 50,
            },
            weights: pair(50, 50),
            read_back: Some(pair(100, 0)),
        };
        assert_eq!(
            lines(&step, Output::Plain, false),
            ["step 2/3: 50% to the canary -- set: app.example.com. stable 50 / canary 50; now: app.example.com. stable 100 / canary 0"]
        );
    }

    #[test]
    fn after_a_foreign_change_it_says_what_went_back_and_what_was_left() {
        let record = TargetWeights::new(
            "route53:Z1:app.example.com.:A".to_owned(),
            WeightPair {
                stable: 100,
                canary: 0,
            },
        );
        let left = "It left as found weights changed outside this rollout: listener was stable 70 / canary 30";
        let update = Update::RestoredUnchanged {
            weights: vec![record],
            left: left.to_owned(),
        };
        assert_eq!(
            lines(&update, Output::Plain, false),
            [format!(
                "after the foreign change, the baseline restored: app.example.com. stable 100 / canary 0. {left}"
            )]
        );
        let nothing = Update::RestoredUnchanged {
            weights: Vec::new(),
            left: left.to_owned(),
        };
        assert_eq!(
            lines(&nothing, Output::Plain, false),
            [format!(
                "after the foreign change, no target left where this rollout set it. {left}"
            )]
        );
    }
}
