//! The `evaluate-alarms` Lambda: what the state machine sends it ([`Request`]) and the
//! dispatch into `canary-rollout`, which holds the logic. Eleven operations:
//! - admitting the execution's input (the state machine's first state, `Admit`, before any
//!   traffic moves; the input is the plan as it came, with no `operation`): the stack's
//!   SafetyNet rule is enabled, the plan is valid and every signal source of it can be
//!   evaluated (alarms exist, CloudWatch accepts the metric queries).
//! - `evaluate` (every check interval of a bake): collect every source's outcomes, judge them
//!   with `canary_core::analysis::decide`, and say whether to roll back; unless it rolls back,
//!   look at where traffic is (every target still at the weights this rollout last set, or
//!   `WeightsChangedExternally`: a controller or a person moved it, and the verdict would be
//!   about traffic that is not where the rollout says).
//!   A check that ends the step's bake reads the change freezes first (and the plan's SLOs'
//!   error budgets): while one holds, the step is held (the check is not counted) until it lifts
//!   or the plan's bound runs out.
//! - `freezeGate` (before the first step): whether a change freeze or a spent error budget holds
//!   the rollout, and for how long it has (`canary_core::freeze`); the look that lets it go fixes
//!   the rollout's share of each SLO's budget (`canary_core::error_budget`).
//! - `hooks` (before traffic, after each step, before promotion): run the plan's hook
//!   functions at that point (see `canary_rollout::hooks`).
//! - `boundRejection`: an approver's rejection, cut before it reaches the state.
//! - `awaitApproval`: the task a step's approval waits on (`.waitForTaskToken`): it only says
//!   so in the log. The token stays in the execution's history, where the approver reads it.
//! - `watchAlarms`: the task a bake or an approval wait keeps waiting beside its checks
//!   (`.waitForTaskToken`): registers the execution's alarm watch.
//! - `alarmStateChange` (the template's `AlarmStateChange` rule, on an alarm going to ALARM):
//!   fails the watching task of every rollout that watches the alarm (`CheckFailed`, or
//!   `CriticalCheckFailed` for an alarm the plan marks critical), so the rollback starts at
//!   once. See `canary_rollout::alarm_watch`.
//! - `lookTestTraffic` (the test-traffic stage, every check interval): its Synthetics canaries'
//!   runs and its alarms (`canary_rollout::test_traffic::look`).
//! - `stepBackLook` (a gradual rollback, before each step back): the plan's critical alarms and
//!   the old cluster's own (`canary_rollout::step_back::look_at_alarms`).
//! - `healthEvent` (the template's `AwsHealthEvent` rule, on an AWS Health issue with EKS, ELB,
//!   EC2 or Route 53): records an open issue under the stack's `HEALTH_PARAMETER_PATH` and
//!   forgets a closed one; while it is open, every rollout in its Region is held as by a change
//!   freeze (`canary_core::health`), and the bake of every rollout that rolls back on it
//!   (`awsHealth.onOpenIssue: rollBack`) fails at once, as at an alarm's event.

use std::collections::BTreeMap;
use std::time::{SystemTime, UNIX_EPOCH};

use canary_aws::{
    check_slos, health_region_path, http_date, read_budgets, utc_time, AlarmWatchStore,
    EventPublisher, ExecutionsApi, Freezes, FunctionInvoker, HealthRecords, RuleState, RuleStates,
    SdkAlarmWatches, SdkConfig, SdkEvents, SdkExecutions, SdkFreeze, SdkFunctions, SdkSlos,
    SloAccounts, StackFreeze, SyntheticsApi, TaskFailer,
};
use canary_core::alarm_watch::{AlarmStateChange, WatchDuring, WatchedStep};
use canary_core::analysis::compare::Evidence;
use canary_core::analysis::{BakeProgress, Decision};
use canary_core::approval::Rejection;
use canary_core::error_budget::{hold_reasons, rollout_budgets, RolloutBudget, SloReading};
use canary_core::freeze::{hold, FreezeGate, FreezeReading};
use canary_core::health::{HealthEvent, RecordChange};
use canary_core::hooks::HookPoint;
use canary_core::input::parse_input;
use canary_core::limits::{truncate, MAX_REASON_BYTES};
use canary_core::plan::{least_seconds, ValidPlan};
use canary_core::{RolloutPlan, TargetWeights};
use canary_rollout::clients::{CheckClients, Env};
use canary_rollout::outputs::StepBackLook;
use canary_rollout::signals::{
    check_remaining_budget_metrics, check_remaining_budgets, remaining_budget_metrics,
    remaining_budgets, BudgetCarried, Carried, HealthReads, SignalApis,
};
use canary_rollout::test_traffic::{self, OpenedStage};
use canary_rollout::traffic::Reads;
use canary_rollout::{alarm_watch, hooks, set, step_back};
use schemars::{schema_for, JsonSchema, Schema};
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use tracing::{info, warn};

pub use canary_rollout::analysis::{evaluate, validate, AnalysisError, ValidateOutput};

#[derive(Debug, Deserialize)]
#[serde(tag = "operation", rename_all = "camelCase", deny_unknown_fields)]
pub enum Request {
    #[serde(rename_all = "camelCase")]
    Evaluate {
        plan: Value,
        #[serde(default)]
        progress: BakeProgress,
        /// The weights this rollout last set (`$.lastSet.weights`): unless its verdict rolls
        /// back, the check reads every target against them. The state machine always sends
        /// it; without it (tests of the signals alone) the check judges the signals only.
        #[serde(default)]
        expected: Option<Vec<TargetWeights>>,
        /// The rollout's execution, named in its `Rollout Frozen` event.
        #[serde(default)]
        execution_arn: Option<String>,
        /// The comparison's evidence so far (the last check's `evidence`, carried across steps
        /// as the text a bake's end gives; empty at first).
        #[serde(default)]
        evidence: String,
        /// The rollout's share of each SLO's budget, as the freeze gate let it go
        /// (`$.freeze.budgets`).
        #[serde(default)]
        budgets: Vec<RolloutBudget>,
        /// `$$.Execution.StartTime`: the new cluster's 5xx are counted against the rollout's
        /// share from then.
        #[serde(default)]
        started_at: Option<String>,
    },
    #[serde(rename_all = "camelCase")]
    FreezeGate {
        plan: Value,
        /// Since when the gate holds the rollout (its last answer's `since`; 0 at first).
        #[serde(default)]
        since: u64,
        execution_arn: String,
    },
    #[serde(rename_all = "camelCase")]
    AwaitApproval {
        /// Never logged nor returned: the approver reads it from the execution's history.
        task_token: String,
        execution_arn: String,
        step: Value,
    },
    /// An approval's rejection (`SendTaskFailure`'s error and cause, as the approval's `Catch`
    /// gives them), cut before it reaches the state: see `canary_core::approval::Rejection`.
    BoundRejection {
        rejection: Value,
    },
    #[serde(rename_all = "camelCase")]
    WatchAlarms {
        /// Never logged nor returned: it is stored for the alarm events to fail.
        task_token: String,
        execution_arn: String,
        /// `$$.Execution.StartTime`.
        execution_start: String,
        during: WatchDuring,
        plan: Value,
        step: WatchedStep,
    },
    AlarmStateChange {
        change: AlarmStateChange,
    },
    /// An AWS Health event's `detail`, as the rule passes it on.
    HealthEvent {
        detail: Value,
    },
    /// Before a gradual rollback's step back: the plan's critical alarms and the old
    /// cluster's own (`rollback.gradual.alarms`).
    StepBackLook {
        plan: Value,
    },
    /// One look at the test-traffic stage (`testTraffic`) that `openTestTraffic` opened: its
    /// Synthetics canaries' runs and its alarms (see `canary_rollout::test_traffic::look`).
    LookTestTraffic {
        plan: Value,
        opened: OpenedStage,
    },
    #[serde(rename_all = "camelCase")]
    Hooks {
        plan: Value,
        point: HookPoint,
        execution_arn: String,
        #[serde(default)]
        step: Option<Value>,
        weights: Value,
        /// The test-traffic stage's addresses (`$.testTraffic.addresses`), for its hooks.
        #[serde(default)]
        test_traffic: Option<Value>,
    },
}

/// The AWS APIs the function uses.
pub struct Apis<'a> {
    /// Where every check reads the targets' weights (reads only).
    pub reads: Reads<'a>,
    /// The providers the checks query.
    pub signals: SignalApis<'a>,
    pub functions: &'a dyn FunctionInvoker,
    /// The Synthetics canaries a test-traffic stage is judged by.
    pub synthetics: &'a dyn SyntheticsApi,
    /// The alarm watches' table (`ALARM_WATCH_TABLE`); `None` when it is not configured.
    pub watches: Option<&'a dyn AlarmWatchStore>,
    pub tasks: &'a dyn TaskFailer,
    /// The rollout's own history (was its watch's failure said already?).
    pub executions: &'a dyn ExecutionsApi,
    /// Where `Instant Rollback Off` and `Rollout Frozen` go.
    pub events: &'a dyn EventPublisher,
    /// The change freezes a rollout honours (AWS Health's open issues among them).
    pub freezes: Freezes<'a>,
    /// Where open AWS Health issues are recorded (`healthEvent`).
    pub health: &'a dyn HealthRecords,
    /// The plan's SLOs (`errorBudget`), in any Region, as the function's role or the plan's.
    pub slos: &'a dyn SloAccounts,
    /// The stack's SafetyNet rule (`SAFETY_NET_RULE`), which must be enabled for a rollout to
    /// start; `None` where the environment names none.
    pub safety_net: Option<SafetyNetRule<'a>>,
}

/// The rule that sends the rollout state machine's abnormal ends to the safety net.
pub struct SafetyNetRule<'a> {
    pub rules: &'a dyn RuleStates,
    pub name: &'a str,
}

/// The function's clients, built once from the SDK configuration and the environment (no
/// network call): a check's ([`CheckClients`]), the hooks' Lambda, the alarm watches' table
/// (`ALARM_WATCH_TABLE`) and Step Functions for failing a watching task.
pub struct Clients {
    checks: CheckClients,
    functions: SdkFunctions,
    watches: Option<SdkAlarmWatches>,
    tasks: SdkExecutions,
    events: SdkEvents,
    freeze: SdkFreeze,
    stack_freeze: StackFreeze,
    slos: SdkSlos,
    safety_net_rule: Option<String>,
}

impl Clients {
    pub fn from_config(config: &SdkConfig, env: Env<'_>) -> Self {
        Clients {
            checks: CheckClients::from_config(config, env),
            functions: SdkFunctions::new(config),
            watches: env("ALARM_WATCH_TABLE").map(|table| SdkAlarmWatches::new(config, table)),
            tasks: SdkExecutions::new(config),
            events: SdkEvents::new(config),
            freeze: SdkFreeze::new(config),
            stack_freeze: StackFreeze::from_env(env),
            slos: SdkSlos::new(config),
            safety_net_rule: env("SAFETY_NET_RULE").filter(|name| !name.is_empty()),
        }
    }

    pub fn apis(&self) -> Apis<'_> {
        Apis {
            reads: self.checks.reads(),
            signals: SignalApis {
                health: self
                    .stack_freeze
                    .health_path
                    .as_deref()
                    .map(|path| HealthReads {
                        api: &self.freeze,
                        path,
                    }),
                ..self.checks.signals()
            },
            functions: &self.functions,
            synthetics: self.checks.synthetics(),
            watches: self.watches.as_ref().map(|w| w as &dyn AlarmWatchStore),
            tasks: &self.tasks,
            executions: &self.tasks,
            events: &self.events,
            freezes: Freezes {
                api: &self.freeze,
                stack: &self.stack_freeze,
            },
            health: &self.freeze,
            slos: &self.slos,
            safety_net: self.safety_net_rule.as_deref().map(|name| SafetyNetRule {
                rules: &self.events,
                name,
            }),
        }
    }
}

impl Apis<'_> {
    fn watches(&self) -> Result<&dyn AlarmWatchStore, AnalysisError> {
        self.watches.ok_or_else(|| {
            AnalysisError::InvalidInput(
                "ALARM_WATCH_TABLE is not set: the function's environment names the DynamoDB \
                 table of alarm watches (template.yaml sets it to AlarmWatchTable)"
                    .to_owned(),
            )
        })
    }
}

/// What admitting the execution's input answers (`Admit`): the plan as it came, and how much
/// each check asks of the providers.
#[derive(Serialize, JsonSchema)]
pub struct Admitted {
    /// The plan, exactly as the execution was started with it (it is valid).
    pub plan: Value,
    pub analysis: AnalysisSize,
}

#[derive(Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AnalysisSize {
    /// How many alarms (names and prefix matches) the rollout watches.
    pub alarms: usize,
    /// Metric queries each check makes.
    pub metric_queries: usize,
}

/// What `awaitApproval` answers: the wait is the task's, not the function's.
#[derive(Serialize, JsonSchema)]
struct AwaitingApproval {
    waiting: bool,
}

/// The name [`output_schemas`] gives admitting the execution's input, which has no operation
/// field (see [`handle`]).
pub const ADMIT: &str = "admit";

/// The JSON schema of each operation's output the state machine calls, by operation name: its
/// contract with the state machine (`tests/contract.rs` checks every path the definition reads
/// against them; `schema/outputs/evaluate-alarms.json` holds them).
pub fn output_schemas() -> BTreeMap<&'static str, Schema> {
    BTreeMap::from([
        (ADMIT, schema_for!(Admitted)),
        ("evaluate", schema_for!(Decision)),
        ("freezeGate", schema_for!(FreezeGate)),
        ("awaitApproval", schema_for!(AwaitingApproval)),
        ("boundRejection", schema_for!(Rejection)),
        ("watchAlarms", schema_for!(alarm_watch::Registered)),
        ("hooks", schema_for!(hooks::HooksOutput)),
        ("stepBackLook", schema_for!(StepBackLook)),
        ("lookTestTraffic", schema_for!(test_traffic::StageLook)),
    ])
}

fn epoch_seconds(time: SystemTime) -> i64 {
    time.duration_since(UNIX_EPOCH)
        .map(|d| i64::try_from(d.as_secs()).unwrap_or(i64::MAX))
        .unwrap_or_default()
}

/// Runs one invocation. The plan is parsed and validated once, here.
pub async fn handle(apis: &Apis<'_>, input: Value) -> Result<Value, AnalysisError> {
    let signals = &apis.signals;
    // The state machine's first state sends the execution's input as it came, the plan with no
    // `operation`: wrapping it would grow an input that may already be at Step Functions' 256 KiB,
    // and a state over it ends the execution States.DataLimitExceeded, which nothing catches,
    // instead of refusing the plan.
    if input.get("operation").is_none() {
        let admitted = admit(apis, input).await?;
        return serialized(serde_json::to_value(admitted));
    }
    let output = match parse_input::<Request>(input).map_err(AnalysisError::InvalidInput)? {
        Request::Evaluate {
            plan,
            progress,
            expected,
            execution_arn,
            evidence,
            budgets,
            started_at,
        } => {
            let valid = RolloutPlan::parse(plan)?;
            let budget = budget_carried(&valid, budgets, started_at.as_deref())?;
            let carried = Carried {
                evidence: Evidence::parse(
                    &evidence,
                    valid
                        .plan
                        .analysis
                        .as_ref()
                        .and_then(|a| a.compare.as_ref()),
                )
                .map_err(AnalysisError::InvalidInput)?,
                runs: valid.comparison_runs(),
                step_weight: progress
                    .step
                    .checked_sub(1)
                    .and_then(|i| valid.steps.get(i as usize))
                    .map(|step| step.weight),
                step: progress.step,
                budget,
            };
            let now = SystemTime::now();
            let mut decision = evaluate(signals, &valid.plan, progress, &carried, now).await?;
            // The check that would end the step's bake (counted, not rolling back) moves the
            // rollout on: a change freeze holds it there.
            if !decision.rollback && decision.check == progress.check && progress.last_check() {
                let (reading, _) = hold_reading(apis, &valid.plan).await;
                let held = hold(
                    &reading,
                    progress.frozen_since,
                    epoch_seconds(now).unsigned_abs(),
                    valid.frozen_bound_seconds(),
                );
                decision = decision.with_freeze(progress, held);
                if decision.frozen_since > 0 {
                    canary_rollout::metrics::frozen_check(&valid.plan);
                    if progress.frozen_since == 0 {
                        let step = valid.steps.get(progress.step.saturating_sub(1) as usize).map(
                            |s| json!({"number": progress.step, "count": valid.steps.len(), "weight": s.weight}),
                        );
                        let execution = execution_arn.as_deref();
                        say_frozen(apis, &valid.plan, execution, step, &decision.summary).await;
                    }
                }
            }
            // A check that rolls back restores the baseline whatever the targets read (the
            // restore reports a foreign change it overwrites). Any other verdict is about
            // traffic that must be where the rollout set it: a target elsewhere is
            // WeightsChangedExternally, which stops the rollout as at SetWeights. Reads only.
            if let Some(expected) = expected.filter(|_| !decision.rollback) {
                set::verify(apis.reads, &valid, &expected).await?;
            }
            serde_json::to_value(decision)
        }
        Request::FreezeGate {
            plan,
            since,
            execution_arn,
        } => {
            let valid = RolloutPlan::parse(plan)?;
            let (reading, slos) = hold_reading(apis, &valid.plan).await;
            let now = epoch_seconds(SystemTime::now()).unsigned_abs();
            let held = hold(&reading, since, now, valid.frozen_bound_seconds());
            let mut gate = FreezeGate::of(held, valid.plan.gate_interval_seconds());
            if let (false, Some(section)) = (gate.frozen, &valid.plan.error_budget) {
                gate.budgets = rollout_budgets(section, &slos);
            }
            if gate.frozen {
                canary_rollout::metrics::frozen_check(&valid.plan);
                if since == 0 && !gate.too_long {
                    say_frozen(apis, &valid.plan, Some(&execution_arn), None, &gate.reason).await;
                }
            }
            info!(frozen = gate.frozen, too_long = gate.too_long, reason = %gate.reason, "freeze gate");
            serde_json::to_value(gate)
        }
        Request::AwaitApproval {
            task_token,
            execution_arn,
            step,
        } => {
            if task_token.is_empty() {
                return Err(AnalysisError::InvalidInput(
                    "taskToken is empty: awaitApproval runs as a .waitForTaskToken task".to_owned(),
                ));
            }
            info!(%execution_arn, %step, "waiting for a person to approve the step");
            serde_json::to_value(AwaitingApproval { waiting: true })
        }
        Request::WatchAlarms {
            task_token,
            execution_arn,
            execution_start,
            during,
            plan,
            step,
        } => {
            let plan = RolloutPlan::parse(plan)?.plan;
            let task = alarm_watch::WaitingTask {
                execution_arn: &execution_arn,
                task_token: &task_token,
                execution_start: &execution_start,
                during,
                step,
                now: epoch_seconds(SystemTime::now()),
            };
            let registered = async {
                let watch_apis = alarm_watch::WatchApis {
                    store: apis.watches()?,
                    cloudwatch: apis.signals.cloudwatch,
                    tasks: apis.tasks,
                    health: apis.signals.health,
                };
                alarm_watch::register(&watch_apis, &plan, task).await
            }
            .await;
            if let Err(e) = &registered {
                alarm_watch::say_unavailable(
                    apis.executions,
                    apis.events,
                    &plan,
                    &execution_arn,
                    e,
                )
                .await;
            }
            serde_json::to_value(registered?)
        }
        Request::AlarmStateChange { change } => {
            let now = epoch_seconds(SystemTime::now());
            let reaction =
                alarm_watch::on_alarm_state_change(apis.watches()?, apis.tasks, &change, now)
                    .await?;
            serde_json::to_value(reaction)
        }
        Request::HealthEvent { detail } => {
            // A malformed event is answered as handled and counted (`EventsRefused`): a
            // function error would have Lambda deliver it twice more, to the same refusal.
            let event = match HealthEvent::parse(&detail) {
                Ok(event) => event,
                Err(why) => {
                    // Bounded: the reason quotes what the event held.
                    let refused =
                        truncate(&format!("not an AWS Health event: {why}"), MAX_REASON_BYTES);
                    warn!(%refused, "AWS Health event refused");
                    canary_rollout::metrics::event_refused("aws.health");
                    return Ok(json!({"refused": refused}));
                }
            };
            let Some(path) = &apis.freezes.stack.health_path else {
                return Err(AnalysisError::InvalidInput(
                    "HEALTH_PARAMETER_PATH is not set: there is nowhere to record AWS Health \
                     issues"
                        .to_owned(),
                ));
            };
            // The Region's records (one read): this issue's, to order its updates by, and the
            // closed issues' whose time to be kept is over.
            let records = apis
                .freezes
                .api
                .health_records(&health_region_path(path, &event.region))
                .await?;
            let recorded = records.iter().find(|r| r.event_arn == event.event_arn);
            let change = event.record_change(recorded, http_date);
            let recorded = match change {
                RecordChange::Stale => {
                    "unchanged: its record holds a later update of the issue (delivered out of order)"
                }
                RecordChange::Record if event.holds() => {
                    apis.health.record_health_event(path, &event).await?;
                    "recorded: rollouts in its Region are held while it is open"
                }
                RecordChange::Record => {
                    apis.health.record_health_event(path, &event).await?;
                    "recorded closed: it holds nothing, and a late delivery of its open changes nothing"
                }
                RecordChange::Forget => {
                    apis.health.forget_health_event(path, &event).await?;
                    "forgotten (not an open issue of a service rollouts depend on)"
                }
            };
            for expired in records
                .iter()
                .filter(|r| r.event_arn != event.event_arn)
                .filter(|r| r.closed_and_expired(SystemTime::now(), http_date))
            {
                apis.health.forget_health_event(path, expired).await?;
            }
            info!(event = %event.event_arn, service = %event.service, region = %event.region, status = %event.status, recorded, "AWS Health event");
            // The rollouts that roll back on it: their bakes' watches fail at once (not for a
            // stale update: the issue it opened is closed).
            let now = epoch_seconds(SystemTime::now());
            let reaction = if change == RecordChange::Stale {
                alarm_watch::HealthReaction::default()
            } else {
                alarm_watch::on_health_event(apis.watches()?, apis.tasks, &event, now).await?
            };
            Ok(
                json!({"eventArn": event.event_arn, "region": event.region, "status": event.status,
                      "recorded": recorded, "failed": reaction.failed,
                      "noLongerWaiting": reaction.no_longer_waiting}),
            )
        }
        Request::BoundRejection { rejection } => {
            serde_json::to_value(Rejection::bounded(&rejection))
        }
        Request::StepBackLook { plan } => {
            let plan = RolloutPlan::parse(plan)?.plan;
            serde_json::to_value(step_back::look_at_alarms(signals.cloudwatch, &plan).await?)
        }
        Request::LookTestTraffic { plan, opened } => {
            let plan = RolloutPlan::parse(plan)?.plan;
            let now = SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .map_or(0.0, |d| d.as_secs_f64());
            let look = test_traffic::look(apis.synthetics, signals.cloudwatch, &plan, &opened, now)
                .await?;
            info!(passed = look.passed, summary = %look.summary, "test traffic looked at");
            if !look.passed {
                canary_rollout::metrics::gate_hold(&plan, "testTraffic");
            }
            serde_json::to_value(look)
        }
        Request::Hooks {
            plan,
            point,
            execution_arn,
            step,
            weights,
            test_traffic,
        } => {
            let plan = RolloutPlan::parse(plan)?.plan;
            let context = hooks::HookContext {
                execution_arn,
                step,
                weights,
                test_traffic,
            };
            serde_json::to_value(hooks::run_hooks(apis.functions, &plan, point, context).await?)
        }
    };
    serialized(output)
}

fn serialized(output: serde_json::Result<Value>) -> Result<Value, AnalysisError> {
    output.map_err(|e| AnalysisError::InvalidInput(format!("output not serializable: {e}")))
}

/// The detail-type of the event a rollout a change freeze begins to hold is named in.
pub const FROZEN: &str = "Rollout Frozen";

/// Puts `Rollout Frozen` when a freeze begins to hold a rollout: before its first step
/// (`step` None) or at the end of a step's bake (`{number, count, weight}`).
async fn say_frozen(
    apis: &Apis<'_>,
    plan: &RolloutPlan,
    execution_arn: Option<&str>,
    step: Option<Value>,
    reason: &str,
) {
    let detail = json!({
        "executionArn": execution_arn,
        "cluster": plan.cluster,
        "step": step,
        "reason": reason,
    });
    info!(%reason, "a change freeze or the error budget holds the rollout");
    apis.events.put_or_log(FROZEN, &detail).await;
}

/// What the checks count the new cluster's 5xx against: the shares the gate fixed, from the
/// execution's start (without it, as from a definition before error budgets, none).
fn budget_carried(
    valid: &ValidPlan,
    budgets: Vec<RolloutBudget>,
    started_at: Option<&str>,
) -> Result<BudgetCarried, AnalysisError> {
    let (Some(section), Some(started_at)) = (&valid.plan.error_budget, started_at) else {
        return Ok(BudgetCarried::default());
    };
    let since = utc_time(started_at).ok_or_else(|| {
        AnalysisError::InvalidInput(format!(
            "startedAt `{}` is not an RFC 3339 time ($$.Execution.StartTime)",
            truncate(started_at, 64)
        ))
    })?;
    let bake_seconds = least_seconds(&valid.steps);
    Ok(BudgetCarried {
        budgets,
        since: epoch_seconds(since),
        burn: section.burn_windows(bake_seconds),
    })
}

/// Why the rollout may not move forward now: the change freezes (AWS Health's open issues
/// among them) and the plan's SLOs whose error budget is spent (`canary_core::error_budget`);
/// and what the SLOs' reports said.
async fn hold_reading(apis: &Apis<'_>, plan: &RolloutPlan) -> (FreezeReading, Vec<SloReading>) {
    let mut reading = apis
        .freezes
        .read(plan.freeze.as_ref(), &plan.regions())
        .await;
    let Some(section) = &plan.error_budget else {
        return (reading, Vec::new());
    };
    let now = SystemTime::now();
    let mut slos = read_budgets(apis.slos, section, &plan.cluster.region, now).await;
    slos.extend(remaining_budgets(apis.signals.prometheus, plan, now).await);
    slos.extend(remaining_budget_metrics(apis.signals.cloudwatch, plan, now).await);
    reading.budgets.extend(hold_reasons(section, &slos));
    (reading, slos)
}

/// A rollout stopped, timed out or failed by an error no Catch handles restores its baseline
/// only through the SafetyNet rule: with the rule off, nothing starts.
async fn require_enabled(rule: &SafetyNetRule<'_>) -> Result<(), AnalysisError> {
    let state = rule.rules.rule_state(rule.name).await?;
    let what = match state {
        RuleState::Enabled => return Ok(()),
        RuleState::Disabled => "is DISABLED",
        RuleState::Missing => "does not exist",
    };
    Err(AnalysisError::SafetyNetDisabled(format!(
        "the stack's SafetyNet rule {name} {what}: a rollout stopped, timed out or failed \
         without its own rollback would keep its traffic where it stopped until the sweep found \
         it. Nothing started. Enable it (aws events enable-rule --name {name}, or deploy the \
         stack again) and start the rollout again",
        name = rule.name
    )))
}

/// The execution's input is a valid plan whose signal sources can all be evaluated, and whose
/// change freezes can be read.
async fn admit(apis: &Apis<'_>, input: Value) -> Result<Admitted, AnalysisError> {
    if let Some(rule) = &apis.safety_net {
        require_enabled(rule).await?;
    }
    let plan = RolloutPlan::parse(input.clone())?.plan;
    apis.freezes.check(plan.freeze.as_ref()).await?;
    if let Some(section) = &plan.error_budget {
        check_slos(apis.slos, section, &plan.cluster.region).await?;
        check_remaining_budgets(apis.signals.prometheus, &plan, SystemTime::now()).await?;
        check_remaining_budget_metrics(apis.signals.cloudwatch, &plan, SystemTime::now()).await?;
    }
    let checked = validate(&apis.signals, &plan).await?;
    Ok(Admitted {
        plan: input,
        analysis: AnalysisSize {
            alarms: checked.alarms.len(),
            metric_queries: checked.metric_queries,
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan_with_budget() -> ValidPlan {
        RolloutPlan::parse(json!({
            "cluster": {"name": "green", "region": "us-east-1"},
            "trafficTargets": [{"route53": {"hostedZoneId": "Z0123456789ABCDEFGHIJ", "recordName": "api.example.com",
                "recordType": "A", "stableSetIdentifier": "blue", "canarySetIdentifier": "green"}}],
            "steps": [{"weight": 50}, {"weight": 100}],
            "bake": {"seconds": 600, "checkIntervalSeconds": 60},
            "errorBudget": {"slos": ["checkout-availability"]}
        }))
        .expect("valid")
    }

    #[test]
    fn the_budgets_count_from_the_executions_start_and_a_start_that_is_no_time_is_refused() {
        let valid = plan_with_budget();
        let carried =
            budget_carried(&valid, Vec::new(), Some("2026-12-03T04:00:00.123Z")).expect("a time");
        assert_eq!(carried.since, 1_796_270_400);
        // Two bakes of ten minutes: the burn's long window is the rollout's twenty.
        let burn = carried.burn.expect("on by default");
        assert_eq!((burn.long_seconds, burn.short_seconds), (1_200, 100));
        let refused = budget_carried(&valid, Vec::new(), Some("yesterday")).expect_err("no time");
        assert!(
            refused
                .to_string()
                .contains("startedAt `yesterday` is not an RFC 3339 time"),
            "{refused}"
        );
        // A state machine that sends no start (a definition before error budgets): none.
        assert!(budget_carried(&valid, Vec::new(), None)
            .expect("none")
            .budgets
            .is_empty());
    }
}
