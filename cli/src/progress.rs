//! Following a rollout: history events in, what a person wants to know out. Pure, so the
//! live view and a replay of a finished execution say the same things, and the words are
//! tested without a network (see `view` for how they are printed).

use canary_core::state::{
    ExecutionState, Prepared, PREPARE_STATE, SET_STATE, STEP_BACK_STATE, WATCH_UNAVAILABLE_STATES,
};
use canary_core::{ErrorName, TargetWeights};
use canary_rollout::test_traffic::TestAddress;
use serde::Serialize;
use serde_json::Value;

use crate::history::{
    step_of_cursor, EventKind, HistoryEvent, StepRef, APPROVED_AT, NOT_APPROVED_AT,
};

/// One thing that happened in a rollout, in the order it happened.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "type", rename_all = "camelCase")]
pub enum Update {
    #[serde(rename_all = "camelCase")]
    Started {
        execution_arn: String,
        cluster: String,
    },
    #[serde(rename_all = "camelCase")]
    Prepared {
        steps: Vec<u8>,
        baseline: Vec<TargetWeights>,
    },
    Cluster {
        name: String,
        status: String,
    },
    #[serde(rename_all = "camelCase")]
    Registered {
        secret_name: String,
        outcome: String,
    },
    Apps {
        ready: bool,
        reason: String,
    },
    #[serde(rename_all = "camelCase")]
    TargetHealth {
        ready: bool,
        reason: String,
    },
    #[serde(rename_all = "camelCase")]
    ClusterReadiness {
        ready: bool,
        reason: String,
    },
    /// The test-traffic stage's rules are in place: where test requests go.
    TestTrafficOpened {
        addresses: Vec<String>,
    },
    /// One look at the test-traffic stage.
    TestTrafficLook {
        passed: bool,
        summary: String,
    },
    #[serde(rename_all = "camelCase")]
    ApprovalRequested {
        execution_arn: String,
        step: StepRef,
        timeout_seconds: Option<i64>,
        on_timeout: Option<String>,
    },
    ApprovalAnswered {
        approved: bool,
    },
    /// Traffic set for a step. `weights` are what shift-weights wrote and read back; the live
    /// view adds what AWS holds when it prints the line (`readBack`).
    #[serde(rename_all = "camelCase")]
    Step {
        step: StepRef,
        weights: Vec<TargetWeights>,
        #[serde(skip_serializing_if = "Option::is_none")]
        read_back: Option<Vec<TargetWeights>>,
    },
    /// A check of a step's bake (or while an approval waits).
    #[serde(rename_all = "camelCase")]
    Check {
        number: u64,
        of: u64,
        verdict: String,
        /// The first reason, short: an alarm's name and state, not CloudWatch's full text.
        reason: String,
        /// How many more signals the verdict weighed.
        more_signals: u64,
        /// Every reason the verdict carries (bounded by evaluate-alarms).
        summary: String,
        /// A change freeze holds the step at this check (its bake would have ended): why.
        #[serde(skip_serializing_if = "Option::is_none")]
        frozen: Option<String>,
        /// The same check, held again by the freeze: only the hold is news.
        #[serde(skip_serializing_if = "std::ops::Not::not")]
        held_again: bool,
    },
    /// A change freeze holds the rollout before its first step (`FreezeGate`): why.
    Frozen {
        reason: String,
    },
    Promoted,
    /// An attempt to set a step failed with an error the state machine retries (AWS busy or
    /// throttling, a change not applied yet): said at each attempt, since traffic may be
    /// half-moved meanwhile.
    StepRetrying {
        error: String,
        cause: String,
    },
    /// A state failed; `state` is where, `error` its name.
    Failed {
        state: String,
        error: String,
        cause: String,
    },
    Restored {
        weights: Vec<TargetWeights>,
    },
    /// A gradual rollback's step back (`StepBack`): taken (`weights` read back), or not, and why
    /// (the next step is the baseline; the old cluster is not healthy; `LookBeforeStepBack`
    /// found a critical alarm in ALARM or one of the old cluster's alarms not OK).
    #[serde(rename_all = "camelCase")]
    StepBack {
        stepped_back: bool,
        weights: Vec<TargetWeights>,
        reason: String,
    },
    /// An attempt of the rollback's restore failed (said at its first failure; the state
    /// machine keeps retrying): traffic is not back at the baseline.
    RestoreFailing {
        error: String,
        cause: String,
    },
    /// The restore failed for good (its retries are spent, or it was refused): traffic may
    /// not be at the baseline, and a person must restore it.
    RestoreFailed {
        error: String,
        cause: String,
    },
    /// After a foreign change: the targets still where the rollout left them put back to the
    /// baseline (`weights`); `left` names those someone else changed, left as found.
    RestoredUnchanged {
        weights: Vec<TargetWeights>,
        left: String,
    },
    /// A bake's (or an approval's) alarm watch could not be registered: alarms are read only by
    /// the polling checks, not the instant they fire. Said once per rollout; `reason` is the
    /// watch task's error when the history gives it.
    AlarmWatchUnavailable {
        reason: String,
    },
    /// The look after the rollback's settle period found the baseline undone and put it back.
    RollbackReverted {
        found: String,
        weights: Vec<TargetWeights>,
    },
    /// The execution ended. `status`: SUCCEEDED, FAILED, ABORTED or TIMED_OUT.
    Ended {
        status: String,
        #[serde(skip_serializing_if = "Option::is_none")]
        error: Option<String>,
        #[serde(skip_serializing_if = "Option::is_none")]
        cause: Option<String>,
    },
}

/// Where a running rollout is, for a status line.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Status {
    pub phase: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub step: Option<StepRef>,
    /// When the next check runs (seconds since the Unix epoch), while baking.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_check_at: Option<f64>,
    /// When the state the rollout is in began (seconds since the Unix epoch): a long one (a
    /// step waiting for an accelerator to deploy) says how long it has been.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub in_state_since: Option<f64>,
    pub awaiting_approval: bool,
}

/// Feeds on history events, one at a time, in order.
#[derive(Debug, Default)]
pub struct Tracker {
    execution_arn: String,
    status: Status,
    /// What running out of time does to the approval of the current step.
    on_approval_timeout: Option<String>,
    /// The failure last reported: the states after it carry it on to the end.
    last_failure: Option<(String, String)>,
    /// The state entered last, and whether this rollback's failing restore was said.
    current_state: String,
    restore_failing_said: bool,
    /// The last failed task attempt (error, cause), and the alarm watch's, once its task ended.
    last_task_failure: Option<(String, Value)>,
    watch_failure: Option<(String, Value)>,
    watch_unavailable_said: bool,
    /// The last check a freeze held (step weight, check number): a look that holds it again
    /// says only the hold.
    last_held_check: Option<(u64, u64)>,
}

/// What a rollout is doing while it is in the state `name`, for the states that begin a phase.
pub fn phase_of(name: &str) -> Option<&'static str> {
    Some(match name {
        "Admit" | "Init" | "PrepareTraffic" => "preparing",
        "DescribeCluster" | "WaitForCluster" => "waiting for the cluster",
        "RegisterCluster" => "registering in Argo CD",
        "AppsStatus" | "WaitForApps" => "waiting for Argo CD apps",
        "TargetHealth" | "WaitForTargets" => "waiting for healthy targets",
        "OpenTestTraffic" | "RunTestTrafficHooks" | "LookAtTestTraffic" | "WaitOnTestTraffic" => {
            "test traffic only (no user request reaches the new cluster)"
        }
        "ClusterReadiness" | "WaitForClusterReadiness" => {
            "waiting for EKS to say the cluster is ready"
        }
        "FreezeGate" | "WaitWhileFrozen" => {
            "at the gate before traffic (change freezes, error budget)"
        }
        "SetWeights" => "shifting traffic",
        "BakeWait" | "Evaluate" => "baking",
        "Restore" | "RestoreRetried" => "rolling back",
        "LookBeforeStepBack" | "StepBack" | "HoldStepBack" => "rolling back gradually",
        "RestoreUnchanged" => "restoring what no one else changed",
        "SettleAfterRestore" | "LookAfterRestore" => "watching the restored baseline",
        "VerifyPromotion" => "promoting",
        "DetachStableTargetGroups" | "RetireOldCluster" => "retiring the old cluster",
        _ => return None,
    })
}

/// Where a failure was found, in words: the state that caught it carries a failure it names
/// (an outcome, a refusal), or the phase of the state that failed; a state name only as the
/// last resort.
pub fn failed_where(state: &str) -> String {
    let said = match state {
        "AdmitRefused" => "refused before it started",
        "DescribeFrozenTooLong" | "BakeFrozenTooLong" | "FrozenTooLongOutcome" => {
            "held by a change freeze or the error budget for too long"
        }
        "ClusterFailedOutcome" => "the new cluster failed",
        "ClusterNotActiveOutcome" => "the new cluster never became active",
        "AppsNotReadyOutcome" => "Argo CD's apps never became ready",
        "TargetsNotHealthyOutcome" => "the canary targets never became healthy",
        "ClusterNotHealthyOutcome" => "EKS never said the cluster was ready",
        "FailedBeforeTrafficOutcome" => "before any traffic moved",
        "CloseFailedTestTraffic" => {
            "in the test-traffic stage, before any user request reached the new cluster"
        }
        "StoppedByForeignChangeOutcome" => "the weights were changed outside this rollout",
        "MovedUnderCheckOutcome" => "the weights moved under a check",
        "MovedUnderStepBackOutcome" => "the weights moved under a step back",
        "ChangedBeforePromotionOutcome" => "the weights changed before promotion",
        "RetireFailedOutcome" => "retiring the old cluster",
        "RollbackFailedOutcome" => "rolling back",
        _ => {
            return phase_of(state).map_or_else(|| format!("at {state}"), |p| format!("while {p}"))
        }
    };
    said.to_owned()
}

/// The alarm watch's tasks, and the states their failure leads to.
const WATCH_TASKS: [&str; 2] = ["WatchAlarms", "WatchAlarmsWhileWaiting"];

/// The restores: an attempt of theirs that fails is said at once (they retry for minutes).
const RESTORE_STATES: [&str; 4] = [
    "Restore",
    "RestoreRetried",
    "RestoreUnchanged",
    "LookAfterRestore",
];

/// States whose output carries a failure that is reported elsewhere, or is the rollback's own.
const FAILURE_REPORTED_BY: [&str; 23] = [
    "DescribeCheckFailure",
    "GradualRollback?",
    "LookBeforeStepBack",
    "StepBackAllowed?",
    "StepBack",
    "SteppedBack?",
    "NotifySteppedBack",
    "HoldStepBack",
    "NotifyRollbackFailing",
    "RestoreRetried",
    "RestoreUnchanged",
    "DescribeTaskFailure",
    "DescribeApprovalFailure",
    "ApprovalTimeoutFails",
    "Restore",
    "LookAfterRestore",
    "FailureDetail?",
    "ReadFailureDetail",
    "EndWithErrorMessage",
    "EndWithDetail",
    // Carries the failure described for the outcome line, which says it.
    "RolledBackBy?",
    "AwaitApproval",
    "Bake",
];

impl Tracker {
    pub fn new(execution_arn: &str) -> Self {
        Tracker {
            execution_arn: execution_arn.to_owned(),
            status: Status {
                phase: "starting".to_owned(),
                ..Status::default()
            },
            on_approval_timeout: None,
            last_failure: None,
            current_state: String::new(),
            restore_failing_said: false,
            last_task_failure: None,
            watch_failure: None,
            watch_unavailable_said: false,
            last_held_check: None,
        }
    }

    pub fn status(&self) -> &Status {
        &self.status
    }

    /// What `event` tells a person, if anything.
    pub fn feed(&mut self, event: &HistoryEvent) -> Option<Update> {
        match &event.kind {
            EventKind::ExecutionStarted { input } => {
                let plan: Value = input
                    .as_deref()
                    .and_then(|text| serde_json::from_str(text).ok())
                    .unwrap_or_default();
                let cluster = &plan["cluster"];
                Some(Update::Started {
                    execution_arn: self.execution_arn.clone(),
                    cluster: format!(
                        "{}/{}",
                        cluster["region"]
                            .as_str()
                            .unwrap_or("(the state machine's region)"),
                        cluster["name"].as_str().unwrap_or("?")
                    ),
                })
            }
            EventKind::StateExited { name, output } => {
                if WATCH_TASKS.contains(&name.as_str()) {
                    // A watch task's attempt that failed just before it ended is why it ended.
                    self.watch_failure = self.last_task_failure.take();
                }
                let state: Value = output
                    .as_deref()
                    .and_then(|text| serde_json::from_str(text).ok())
                    .unwrap_or_default();
                self.exited(name, &state)
            }
            EventKind::TaskScheduled {
                timeout_seconds, ..
            } => {
                let pending = crate::history::pending_approval(std::slice::from_ref(event))?;
                self.status.awaiting_approval = true;
                self.status.phase = "waiting for approval".to_owned();
                Some(Update::ApprovalRequested {
                    execution_arn: self.execution_arn.clone(),
                    step: pending.step,
                    timeout_seconds: *timeout_seconds,
                    on_timeout: self.on_approval_timeout.clone(),
                })
            }
            EventKind::StateEntered { name, .. }
                if self.status.awaiting_approval
                    && (name == APPROVED_AT || NOT_APPROVED_AT.contains(&name.as_str())) =>
            {
                self.status.awaiting_approval = false;
                self.entered(name, None, event.timestamp);
                Some(Update::ApprovalAnswered {
                    approved: name == APPROVED_AT,
                })
            }
            EventKind::StateEntered { name, input }
                if WATCH_UNAVAILABLE_STATES.contains(&name.as_str())
                    && !self.watch_unavailable_said =>
            {
                self.entered(name, input.as_deref(), event.timestamp);
                self.watch_unavailable_said = true;
                let reason = self
                    .watch_failure
                    .take()
                    .map(|(error, cause)| format!("{error}: {}", cause_text(&cause)))
                    .unwrap_or_default();
                Some(Update::AlarmWatchUnavailable { reason })
            }
            EventKind::StateEntered { name, input } => {
                self.entered(name, input.as_deref(), event.timestamp);
                None
            }
            EventKind::TaskFailed { error, cause } => {
                let error = error.clone().unwrap_or_default();
                let cause = Value::String(cause.clone().unwrap_or_default());
                self.last_task_failure = Some((error.clone(), cause.clone()));
                if RESTORE_STATES.contains(&self.current_state.as_str()) {
                    return self.restore_failing(&error, &cause);
                }
                // A look or a step back that fails is caught into the restore (only the Lambda
                // service's own errors are tried again): say why the steps back end here.
                let stepping_back = matches!(
                    self.current_state.as_str(),
                    "LookBeforeStepBack" | STEP_BACK_STATE
                );
                if self.current_state == SET_STATE && retried(&error) {
                    self.status.phase = "shifting traffic, retrying".to_owned();
                    return Some(Update::StepRetrying {
                        error,
                        cause: cause_text(&cause),
                    });
                }
                if stepping_back && !error.starts_with("Lambda.") {
                    return Some(Update::StepBack {
                        stepped_back: false,
                        weights: Vec::new(),
                        reason: format!(
                            "{} failed ({error}: {}): straight to the baseline",
                            self.current_state,
                            cause_text(&cause)
                        ),
                    });
                }
                None
            }
            EventKind::ExecutionEnded {
                status,
                error,
                cause,
            } => {
                self.status = Status {
                    phase: status.to_lowercase(),
                    step: self.status.step,
                    ..Status::default()
                };
                let given = |text: &Option<String>| text.clone().filter(|t| !t.is_empty());
                Some(Update::Ended {
                    status: status.clone(),
                    error: given(error),
                    cause: given(cause).map(|c| cause_text(&Value::String(c))),
                })
            }
            _ => None,
        }
    }

    /// A restore's attempt failed: said once per rollback (the state machine retries).
    fn restore_failing(&mut self, error: &str, cause: &Value) -> Option<Update> {
        self.status.phase = "rollback failing, retrying".to_owned();
        if std::mem::replace(&mut self.restore_failing_said, true) {
            return None;
        }
        Some(Update::RestoreFailing {
            error: error.to_owned(),
            cause: cause_text(cause),
        })
    }

    /// A restore state's exit that is not a restore done: its first attempt failed
    /// (`restoreFailing`, retried next), or it failed for good (`restoreFailure`); `None` for
    /// any other exit, and what to say otherwise. The rollback's own cause, written before the
    /// restore ran, is then not said by the states after: it would read as if traffic were
    /// back.
    fn restore_ended(&mut self, name: &str, state: &Value) -> Option<Option<Update>> {
        let failure = &state["failure"];
        let ended = |key: &str| state[key].is_object() && !state["restored"].is_object();
        if name == "Restore" && ended("restoreFailing") {
            let failing = &state["restoreFailing"];
            return Some(self.restore_failing(&text(&failing["Error"]), &failing["Cause"]));
        }
        let failed = &state["restoreFailure"];
        let done_for_good = match name {
            "Restore" | "RestoreRetried" => ended("restoreFailure"),
            _ => failed.is_object(),
        };
        if !done_for_good {
            return None;
        }
        if failure.is_object() {
            self.last_failure = Some((text(&failure["Error"]), cause_text(&failure["Cause"])));
        }
        Some(Some(Update::RestoreFailed {
            error: text(&failed["Error"]),
            cause: cause_text(&failed["Cause"]),
        }))
    }

    fn entered(&mut self, name: &str, input: Option<&str>, at: f64) {
        self.current_state = name.to_owned();
        self.status.in_state_since = Some(at);
        if name == "Restore" {
            self.restore_failing_said = false;
        }
        if let Some(phase) = phase_of(name) {
            self.status.phase = phase.to_owned();
        }
        self.maybe_next_check(name, input, at);
    }

    /// A bake's wait (or the watch's while an approval waits) says when the next check runs.
    fn maybe_next_check(&mut self, name: &str, input: Option<&str>, at: f64) {
        if !matches!(name, "BakeWait" | "WatchWait") {
            return;
        }
        let state: Value = input
            .and_then(|text| serde_json::from_str(text).ok())
            .unwrap_or_default();
        self.status.next_check_at = state["cursor"]["step"]["checkIntervalSeconds"]
            .as_f64()
            .map(|seconds| at + seconds);
    }

    fn exited(&mut self, name: &str, state: &Value) -> Option<Update> {
        let failure = &state["failure"];
        if RESTORE_STATES.contains(&name) {
            if let Some(said) = self.restore_ended(name, state) {
                return said;
            }
        }
        if failure.is_object() && !FAILURE_REPORTED_BY.contains(&name) {
            let seen = (text(&failure["Error"]), cause_text(&failure["Cause"]));
            if self.last_failure.as_ref() == Some(&seen) {
                return None;
            }
            self.last_failure = Some(seen.clone());
            return Some(Update::Failed {
                state: name.to_owned(),
                error: seen.0,
                cause: seen.1,
            });
        }
        let typed =
            || -> ExecutionState { serde_json::from_value(state.clone()).unwrap_or_default() };
        let weights = |value: &Value| -> Vec<TargetWeights> {
            serde_json::from_value(value.clone()).unwrap_or_default()
        };
        match name {
            PREPARE_STATE => {
                let prepared = typed().prepared.unwrap_or(Prepared {
                    baseline: Vec::new(),
                    steps: Vec::new(),
                });
                Some(Update::Prepared {
                    steps: prepared.steps.iter().map(|s| s.weight).collect(),
                    baseline: prepared.baseline,
                })
            }
            "DescribeCluster" => Some(Update::Cluster {
                name: text(&state["plan"]["cluster"]["name"]),
                status: text(&state["cluster"]["status"]),
            }),
            "RegisterCluster" => Some(Update::Registered {
                secret_name: text(&state["registration"]["secretName"]),
                outcome: text(&state["registration"]["outcome"]),
            }),
            "AppsStatus" => Some(Update::Apps {
                ready: state["apps"]["ready"] == true,
                reason: text(&state["apps"]["reason"]),
            }),
            "TargetHealth" => Some(Update::TargetHealth {
                ready: state["targetHealth"]["ready"] == true,
                reason: text(&state["targetHealth"]["reason"]),
            }),
            "ClusterReadiness" => Some(Update::ClusterReadiness {
                ready: state["readiness"]["ready"] == true,
                reason: text(&state["readiness"]["reason"]),
            }),
            "OpenTestTraffic" => {
                let addresses: Vec<TestAddress> =
                    serde_json::from_value(state["testTraffic"]["addresses"].clone())
                        .unwrap_or_default();
                Some(Update::TestTrafficOpened {
                    addresses: addresses.iter().map(TestAddress::described).collect(),
                })
            }
            "LookAtTestTraffic" => Some(Update::TestTrafficLook {
                passed: state["testTrafficLook"]["passed"] == true,
                summary: text(&state["testTrafficLook"]["summary"]),
            }),
            "StepSetup" => {
                self.status.step = step_of_cursor(&state["cursor"]);
                self.on_approval_timeout = state["cursor"]["step"]["onApprovalTimeout"]
                    .as_str()
                    .map(str::to_owned);
                None
            }
            SET_STATE => Some(Update::Step {
                step: step_of_cursor(&state["cursor"])?,
                weights: typed().last_set.map(|l| l.weights).unwrap_or_default(),
                read_back: None,
            }),
            "Evaluate" | "WatchEvaluate" => {
                self.status.next_check_at = None;
                let bake = &state["bake"];
                let counts = &bake["counts"];
                let signals: u64 = ["pass", "fail", "inconclusive", "ignored"]
                    .iter()
                    .filter_map(|k| counts[*k].as_u64())
                    .sum();
                let summary = text(&bake["summary"]);
                let since = bake["frozenSince"].as_u64().unwrap_or(0);
                let frozen = (since > 0)
                    .then(|| crate::history::freeze_reason(&summary))
                    .flatten()
                    .map(|reason| crate::history::held_since(since, &reason));
                // Evaluate leaves the next check's number.
                let number = bake["check"].as_u64().unwrap_or(1).saturating_sub(1);
                let this_check = (
                    state["cursor"]["step"]["weight"].as_u64().unwrap_or(0),
                    number,
                );
                let held_again = frozen.is_some() && self.last_held_check == Some(this_check);
                self.last_held_check = frozen.is_some().then_some(this_check);
                if let Some(reason) = &frozen {
                    self.status.phase =
                        format!("baking, held by {}", crate::history::holder(reason));
                }
                Some(Update::Check {
                    number,
                    of: state["cursor"]["step"]["checks"].as_u64().unwrap_or(0),
                    verdict: text(&bake["verdict"]),
                    reason: short_reason(summary.split("; ").next().unwrap_or_default()),
                    more_signals: signals.saturating_sub(1),
                    summary,
                    frozen,
                    held_again,
                })
            }
            // Each look of the gate is said, as each check is: its `held N s` advances.
            "FreezeGate" if state["freeze"]["frozen"] == true => {
                let since = state["freeze"]["since"].as_u64().unwrap_or(0);
                Some(Update::Frozen {
                    reason: crate::history::held_since(since, &text(&state["freeze"]["reason"])),
                })
            }
            "LookBeforeStepBack" if state["stepBackLook"]["go"] == false => {
                Some(Update::StepBack {
                    stepped_back: false,
                    weights: typed().last_set.map(|l| l.weights).unwrap_or_default(),
                    reason: text(&state["stepBackLook"]["reason"]),
                })
            }
            STEP_BACK_STATE => Some(Update::StepBack {
                stepped_back: state["lastSet"]["steppedBack"] == true,
                weights: typed().last_set.map(|l| l.weights).unwrap_or_default(),
                reason: text(&state["lastSet"]["reason"]),
            }),
            "VerifyPromotion" => Some(Update::Promoted),
            "Restore" | "RestoreRetried" => Some(Update::Restored {
                weights: weights(&state["restored"]["weights"]),
            }),
            "RestoreUnchanged" => Some(Update::RestoredUnchanged {
                weights: weights(&state["restored"]["weights"]),
                left: text(&state["restored"]["note"])
                    .trim_start_matches(". ")
                    .to_owned(),
            }),
            "LookAfterRestore" if state["lookedAgain"]["reverted"] == true => {
                Some(Update::RollbackReverted {
                    found: text(&state["lookedAgain"]["found"]),
                    weights: weights(&state["lookedAgain"]["weights"]),
                })
            }
            _ => None,
        }
    }
}

/// Whether the state machine retries a task that failed with `error` (one of the product's
/// retryable names; the Lambda service's own errors are retried too, but say nothing).
fn retried(error: &str) -> bool {
    ErrorName::named(error).is_some_and(ErrorName::is_retryable)
}

/// A failure's cause for people: a Lambda function's error arrives as its JSON
/// (`{"errorType", "errorMessage"}`); the message is what says why.
fn cause_text(cause: &Value) -> String {
    let cause = text(cause);
    serde_json::from_str::<Value>(&cause)
        .ok()
        .and_then(|json| json["errorMessage"].as_str().map(str::to_owned))
        .unwrap_or(cause)
}

fn text(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        Value::Null => String::new(),
        other => other.to_string(),
    }
}

/// A signal's reason in a few words: an alarm's name, state and since when, without
/// CloudWatch's full text; anything else cut to 100 characters.
pub fn short_reason(reason: &str) -> String {
    let reason = if reason.starts_with("alarm ") || reason.starts_with("composite alarm ") {
        reason.split(": ").next().unwrap_or(reason)
    } else {
        reason
    };
    if reason.chars().count() <= 100 {
        reason.to_owned()
    } else {
        let cut: String = reason.chars().take(99).collect();
        format!("{cut}…")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(kind: EventKind) -> HistoryEvent {
        HistoryEvent {
            timestamp: 0.0,
            kind,
        }
    }

    fn scheduled(operation: &str) -> HistoryEvent {
        let payload = serde_json::json!({"operation": operation, "taskToken": "T",
                                         "step": {"number": 2, "count": 2, "weight": 100}});
        at(EventKind::TaskScheduled {
            resource: "invoke.waitForTaskToken".to_owned(),
            parameters: serde_json::json!({"Payload": payload}).to_string(),
            timeout_seconds: Some(600),
        })
    }

    fn entered(name: &str) -> HistoryEvent {
        at(EventKind::StateEntered {
            name: name.to_owned(),
            input: None,
        })
    }

    #[test]
    fn an_approval_is_answered_by_its_own_branch_not_by_the_alarm_watch_beside_it() {
        let mut tracker = Tracker::new("arn");
        assert!(matches!(
            tracker.feed(&scheduled("awaitApproval")),
            Some(Update::ApprovalRequested { .. })
        ));
        assert_eq!(tracker.feed(&scheduled("watchAlarms")), None);
        // The watch's branch ends (it could not register): the approval still waits.
        assert_eq!(
            tracker.feed(&entered("AlarmWatchUnavailableWhileWaiting")),
            Some(Update::AlarmWatchUnavailable {
                reason: String::new()
            })
        );
        assert!(tracker.status().awaiting_approval);
        assert_eq!(
            tracker.feed(&entered("BoundRejection")),
            Some(Update::ApprovalAnswered { approved: false })
        );
        assert!(!tracker.status().awaiting_approval);

        let mut approved = Tracker::new("arn");
        approved.feed(&scheduled("awaitApproval"));
        assert_eq!(
            approved.feed(&entered("Approved")),
            Some(Update::ApprovalAnswered { approved: true })
        );
    }

    #[test]
    fn a_step_attempt_the_state_machine_retries_is_said_at_once_and_a_lambda_blip_is_not() {
        let mut tracker = Tracker::new("arn");
        let failed = |error: &str, cause: &str| {
            at(EventKind::TaskFailed {
                error: Some(error.to_owned()),
                cause: Some(cause.to_owned()),
            })
        };
        assert!(tracker.feed(&entered(SET_STATE)).is_none());
        assert!(tracker
            .feed(&failed("Lambda.ServiceException", "try again"))
            .is_none());
        let cause = serde_json::json!({"errorType": "AwsTransient",
            "errorMessage": "trafficTargets[0]: DescribeAccelerator: still IN_PROGRESS"})
        .to_string();
        assert_eq!(
            tracker.feed(&failed("AwsTransient", &cause)),
            Some(Update::StepRetrying {
                error: "AwsTransient".to_owned(),
                cause: "trafficTargets[0]: DescribeAccelerator: still IN_PROGRESS".to_owned(),
            })
        );
        assert_eq!(tracker.status().phase, "shifting traffic, retrying");
        assert!(
            tracker
                .feed(&failed("StepNotInEffect", "not in effect"))
                .is_none(),
            "not retried: said as the step's failure when SetWeights exits"
        );
    }

    #[test]
    fn a_step_back_that_fails_is_said_with_its_message_and_a_lambda_blip_is_not() {
        let mut tracker = Tracker::new("arn");
        let enter = |name: &str| {
            at(EventKind::StateEntered {
                name: name.to_owned(),
                input: None,
            })
        };
        let failed = |error: &str, cause: &str| {
            at(EventKind::TaskFailed {
                error: Some(error.to_owned()),
                cause: Some(cause.to_owned()),
            })
        };
        assert!(tracker.feed(&enter("StepBack")).is_none());
        assert!(tracker
            .feed(&failed("Lambda.ServiceException", "try again"))
            .is_none());
        let cause = serde_json::json!({"errorType": "WeightsChangedExternally",
            "errorMessage": "trafficTargets[0]: found stable 80 / canary 20"})
        .to_string();
        match tracker.feed(&failed("WeightsChangedExternally", &cause)) {
            Some(Update::StepBack {
                stepped_back: false,
                reason,
                ..
            }) => assert_eq!(
                reason,
                "StepBack failed (WeightsChangedExternally: trafficTargets[0]: found stable 80 / \
                 canary 20): straight to the baseline"
            ),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn a_check_a_freeze_holds_again_says_only_the_hold() {
        let evaluated = |check: u64| {
            at(EventKind::StateExited {
                name: "Evaluate".to_owned(),
                output: Some(
                    serde_json::json!({
                        "cursor": {"step": {"weight": 50, "checks": 3}},
                        "bake": {"check": check, "verdict": "pass", "frozenSince": 1_700_000_000u64,
                                 "summary": "alarm web-5xx is OK; frozen: the freeze switch is on"},
                    })
                    .to_string(),
                ),
            })
        };
        let held_again = |update: Option<Update>| match update {
            Some(Update::Check {
                held_again,
                frozen: Some(_),
                ..
            }) => held_again,
            other => panic!("{other:?}"),
        };
        let mut tracker = Tracker::new("arn");
        assert!(
            !held_again(tracker.feed(&evaluated(3))),
            "the first hold: the whole check"
        );
        assert!(
            held_again(tracker.feed(&evaluated(3))),
            "the same check held again"
        );
        assert!(held_again(tracker.feed(&evaluated(3))));
        assert!(!held_again(tracker.feed(&evaluated(4))), "another check");
    }

    #[test]
    fn a_foreign_change_is_reported_once_then_what_was_put_back_and_what_was_left() {
        let exited = |name: &str, output: Value| {
            at(EventKind::StateExited {
                name: name.to_owned(),
                output: Some(output.to_string()),
            })
        };
        let failure = serde_json::json!({"Error": "WeightsChangedExternally", "Cause": "listener: found 70/30"});
        let mut tracker = Tracker::new("arn");
        assert!(matches!(
            tracker.feed(&exited(
                "MovedUnderCheckOutcome",
                serde_json::json!({"failure": failure})
            )),
            Some(Update::Failed { .. })
        ));
        let restored = serde_json::json!({"failure": failure, "restored": {
            "weights": [{"target": "record", "stable": 100, "canary": 0}],
            "note": ". It left as found weights changed outside this rollout: listener was 70/30"}});
        let Some(Update::RestoredUnchanged { weights, left }) =
            tracker.feed(&exited("RestoreUnchanged", restored))
        else {
            panic!("the restore of what was not changed")
        };
        assert_eq!(weights[0].target, "record");
        assert_eq!(
            left,
            "It left as found weights changed outside this rollout: listener was 70/30"
        );
    }
    #[test]
    fn a_failing_restore_is_said_at_its_first_failed_attempt_and_never_called_restored() {
        let exited = |name: &str, output: Value| {
            at(EventKind::StateExited {
                name: name.to_owned(),
                output: Some(output.to_string()),
            })
        };
        let failed_attempt = || {
            at(EventKind::TaskFailed {
                error: Some("AccessDenied".to_owned()),
                cause: Some(
                    r#"{"errorType":"AccessDenied","errorMessage":"elasticloadbalancing:ModifyListener on listener/app/web refused"}"#
                        .to_owned(),
                ),
            })
        };
        let failure = serde_json::json!({"Error": "CheckFailed",
            "Cause": "Canary check failed at step 2 of 3 (50% of traffic on the new cluster); traffic restored to the baseline. alarm web-5xx"});
        let mut tracker = Tracker::new("arn");
        tracker.feed(&entered("Restore"));
        assert_eq!(
            tracker.feed(&failed_attempt()),
            Some(Update::RestoreFailing {
                error: "AccessDenied".to_owned(),
                cause: "elasticloadbalancing:ModifyListener on listener/app/web refused".to_owned()
            })
        );
        assert_eq!(tracker.status().phase, "rollback failing, retrying");
        assert_eq!(
            tracker.feed(&failed_attempt()),
            None,
            "said once, not at every retry"
        );
        let failing = serde_json::json!({"failure": failure, "restoreFailing": {
            "Error": "AccessDenied", "Cause": "ModifyListener refused"}});
        assert_eq!(
            tracker.feed(&exited("Restore", failing.clone())),
            None,
            "the first attempt's failure was said already"
        );
        tracker.feed(&entered("RestoreRetried"));
        assert_eq!(tracker.feed(&failed_attempt()), None);
        let mut caught = failing;
        caught["restoreFailure"] =
            serde_json::json!({"Error": "AccessDenied", "Cause": "ModifyListener refused"});
        assert_eq!(
            tracker.feed(&exited("RestoreRetried", caught.clone())),
            Some(Update::RestoreFailed {
                error: "AccessDenied".to_owned(),
                cause: "ModifyListener refused".to_owned()
            })
        );
        tracker.feed(&entered("RollbackFailedOutcome"));
        assert_eq!(
            tracker.feed(&exited("RollbackFailedOutcome", caught)),
            None,
            "the check's cause, written before the restore ran, is not said after it failed"
        );

        // The retried restore passes: the baseline is back, and said so.
        let mut recovered = Tracker::new("arn");
        recovered.feed(&entered("Restore"));
        let passed = serde_json::json!({"restoreFailing": {"Error": "ThrottlingException", "Cause": "slow down"},
            "restored": {"weights": [{"target": "l", "stable": 100, "canary": 0}], "note": ""}});
        assert!(matches!(
            recovered.feed(&exited(
                "Restore",
                serde_json::json!({"restoreFailing": passed["restoreFailing"]})
            )),
            Some(Update::RestoreFailing { .. })
        ));
        assert!(matches!(
            recovered.feed(&exited("RestoreRetried", passed)),
            Some(Update::Restored { weights }) if weights.len() == 1
        ));
    }
    #[test]
    fn an_alarm_watch_that_could_not_be_registered_is_said_once_with_its_error() {
        let mut tracker = Tracker::new("arn");
        tracker.feed(&entered("WatchAlarms"));
        tracker.feed(&at(EventKind::TaskFailed {
            error: Some("AwsAccessDenied".to_owned()),
            cause: Some(
                r#"{"errorType":"AwsAccessDenied","errorMessage":"dynamodb:PutItem on table/watch refused"}"#
                    .to_owned(),
            ),
        }));
        tracker.feed(&at(EventKind::StateExited {
            name: "WatchAlarms".to_owned(),
            output: None,
        }));
        assert_eq!(
            tracker.feed(&entered("AlarmWatchUnavailable")),
            Some(Update::AlarmWatchUnavailable {
                reason: "AwsAccessDenied: dynamodb:PutItem on table/watch refused".to_owned()
            })
        );
        assert_eq!(
            tracker.feed(&entered("AlarmWatchUnavailable")),
            None,
            "once per rollout, not at every step"
        );
    }
}
