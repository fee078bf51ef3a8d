//! The `fleet-waves` Lambda: the steps of the fleet state machine (statemachine/fleet.asl.json)
//! that need more than the States Language. Each operation reads the fleet plan from its
//! input (it travels in the fleet's state: the plan itself, or for a large one the reference to
//! where it is stored, read again from S3) and is otherwise stateless: what the fleet's cells
//! did is read from Step Functions, by the names the fleet gives its child executions.
//!
//! - the fleet plan itself, with no `op` (the fleet's first state sends the execution's input
//!   as it came), or the reference to its stored plan: validate it; the plan (or the reference
//!   with the fields the state machine reads) and the first tally.
//! - `wave`: the next wave's cells and how many run at once.
//! - `freeze`: whether a change freeze holds the next wave (no cell of it starts), and for how
//!   long it has; held past the bound, the fleet halts.
//! - `admit`: may this cell start (the failure budget is not spent)? Its child's name and plan
//!   (with its promoted peers, when it compares with them: `peers.rs`).
//! - `halt`: after a cell failed, with `onHalt: abortRunning` and the budget spent, stop the
//!   fleet's running cells (each one's safety net restores its baseline).
//! - `judge`: a wave's results into the tally; whether the fleet halts, and why.
//! - `soak`: after the soak, the fleet's alarms (one in ALARM halts the fleet) and the slow burn
//!   of the cells the wave promoted against their plans' SLOs (`soak_burn`).
//! - `awaitApproval`: a wave waits for a person (the task token stays in the history).
//! - `notApproved`: a wave rejected, or its approval timed out: the fleet halts.
//! - `promoted`: a halted fleet with `rollbackPromotedOnHalt`: the executions of the cells it
//!   promoted (shift-weights `rollBackPromotion` undoes each).
//! - `rolledBack`: what undoing them did, into the halt's message.
//! - `stopCells` (from the template's FleetSafetyNet rule, when a fleet execution ends
//!   ABORTED, FAILED or TIMED_OUT): stop its running cells.

mod peers;
mod sdk;
mod soak_burn;
mod tally;

use async_trait::async_trait;
use canary_aws::executions::execution_arn;
use canary_aws::executions::Execution;
use canary_aws::{
    load_fleet_plan, read_budgets, utc_time, AlarmState, AwsError, CloudWatchApi, EventPublisher,
    FleetPlanError, FleetPlanStore, FreezeApi, Freezes, Listed, PrometheusApi, SloAccounts,
    StackFreeze, WentToAlarm,
};
use canary_core::error_budget::hold_reasons;
pub use canary_core::fleet::{child_name, child_suffix};
use canary_core::fleet::{OnHalt, StoredPlan, ValidFleet};
use canary_core::freeze::{hold, FreezeGate, FreezeSection};
use canary_core::input::parse_input;
use canary_core::limits::{truncate, MAX_ERROR_MESSAGE_BYTES};
use canary_core::{ErrorName, NamedError};
use canary_rollout::signals::{remaining_budget_metrics, remaining_budgets};
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use std::collections::BTreeSet;
use std::time::SystemTime;
use tracing::{info, warn};

pub use sdk::SdkFleetApis;
pub use tally::{CellResult, CellStatus, Failure, RolledBackCell, Tally};

/// The error a fleet stops its cells with; `judge` tells them from failed ones by it.
pub const HALT_ERROR: &str = "FleetHalted";
/// The detail-types of the events the function puts itself (the state machine puts the others).
pub const CELL_FAILED: &str = "Cell Failed";
pub const FLEET_STOPPED: &str = "Fleet Stopped";
/// The error the fleet's safety net stops the cells of a stopped fleet with.
pub const STOPPED_ERROR: &str = "FleetStopped";

#[derive(Debug, thiserror::Error)]
pub enum FleetError {
    #[error("invalid input: {0}")]
    InvalidInput(String),
    #[error("invalid fleet plan: {}", .0.listed())]
    InvalidPlan(canary_core::PlanErrors),
    #[error("{0}")]
    Aws(#[from] AwsError),
}

impl NamedError for FleetError {
    fn name(&self) -> ErrorName {
        match self {
            FleetError::InvalidInput(_) => ErrorName::InvalidInput,
            FleetError::InvalidPlan(_) => ErrorName::InvalidPlan,
            FleetError::Aws(e) => e.error_name(),
        }
    }
}

/// What the fleet reads and does in AWS, the events the function puts itself (`Cell Failed`,
/// `Fleet Stopped`) and the stored plans of large fleets.
#[async_trait]
pub trait FleetApis: EventPublisher + FleetPlanStore + FreezeApi + Send + Sync {
    /// The state machine's executions started at or after `since` (seconds since the epoch),
    /// newest first; only those with `status` when given.
    async fn started_since(
        &self,
        state_machine_arn: &str,
        since: f64,
        status: Option<&str>,
    ) -> Result<Vec<Listed>, AwsError>;
    async fn describe(&self, execution_arn: &str) -> Result<Execution, AwsError>;
    async fn stop(&self, execution_arn: &str, error: &str, cause: &str) -> Result<(), AwsError>;
    async fn alarms(&self, names: &[String]) -> Result<Vec<AlarmState>, AwsError>;
    /// Each change of these alarms to ALARM since `since`.
    async fn went_to_alarm(
        &self,
        names: &[String],
        since: SystemTime,
    ) -> Result<Vec<WentToAlarm>, AwsError>;
    /// The cells' plans' SLOs (`errorBudget`).
    fn slos(&self) -> &dyn SloAccounts;
    /// What the cells' plans' remaining-budget queries are asked of (`errorBudget.prometheus`,
    /// `errorBudget.cloudwatch`): the stack's clients, as each cell's own gate asks them.
    fn prometheus(&self) -> &dyn PrometheusApi;
    fn metrics(&self) -> &dyn CloudWatchApi;
}

#[derive(Debug, Clone)]
pub struct FleetConfig {
    /// The rollout state machine every cell runs on.
    pub rollout_state_machine_arn: String,
    /// The stack's change freezes (`FREEZE_PARAMETER`, `CHANGE_CALENDARS`).
    pub freeze: StackFreeze,
}

impl FleetConfig {
    /// From `ROLLOUT_STATE_MACHINE_ARN`, and the freezes' `FREEZE_PARAMETER` and
    /// `CHANGE_CALENDARS`.
    pub fn from_env(get: impl Fn(&str) -> Option<String>) -> Result<Self, String> {
        let rollout_state_machine_arn = get("ROLLOUT_STATE_MACHINE_ARN")
            .filter(|v| !v.is_empty())
            .ok_or("ROLLOUT_STATE_MACHINE_ARN is not set")?;
        Ok(FleetConfig {
            rollout_state_machine_arn,
            freeze: StackFreeze::from_env(&get),
        })
    }
}

#[derive(Debug, Deserialize)]
#[serde(tag = "op", rename_all = "camelCase", rename_all_fields = "camelCase")]
enum Request {
    Wave {
        fleet: Value,
        tally: Tally,
    },
    Freeze {
        fleet: Value,
        tally: Tally,
        /// The wave about to start, 1-based.
        wave: usize,
        /// Since when a freeze holds it (the last answer's `since`; 0 at first).
        #[serde(default)]
        since: u64,
        fleet_execution: String,
    },
    Admit {
        fleet: Value,
        cell: String,
        fleet_execution: String,
        #[serde(flatten)]
        wave: WaveSoFar,
    },
    Halt {
        fleet: Value,
        cell: String,
        fleet_execution: String,
        #[serde(flatten)]
        wave: WaveSoFar,
    },
    Judge {
        fleet: Value,
        tally: Tally,
        results: Vec<CellResult>,
        fleet_execution: String,
    },
    Soak {
        fleet: Value,
        tally: Tally,
        /// When the soak began (`$$.State.EnteredTime` of `StartSoak`): an alarm that went to
        /// ALARM since then halts the fleet, even if it is back to OK now.
        #[serde(default)]
        soak_started: Option<String>,
        /// The fleet's execution (`$$.Execution.Id`): its promoted cells' slow burn is judged.
        /// An execution started before the state machine passed it has none: not judged.
        #[serde(default)]
        fleet_execution: Option<String>,
    },
    StopCells {
        fleet_execution: String,
        status: String,
    },
    AwaitApproval {
        fleet_execution: String,
        wave: usize,
    },
    NotApproved {
        fleet: Value,
        tally: Tally,
        wave: usize,
        failure: ApprovalFailure,
    },
    Promoted {
        fleet_execution: String,
    },
    RolledBack {
        tally: Tally,
        results: Vec<RolledBackCell>,
        /// Listing or rolling back the promoted cells failed as a whole: `{Error, Cause}`.
        #[serde(default)]
        failure: Option<Value>,
    },
}

/// The wave a cell belongs to, as its Map iteration knows it: the fleet's failures before the
/// wave (its tally) and when the wave started.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct WaveSoFar {
    /// 1-based.
    wave: usize,
    /// Seconds since the epoch, by the clock of `wave`'s answer.
    wave_started: f64,
    failed_before: u32,
}

/// How a wave's approval ended without one: Step Functions' error and cause.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "PascalCase")]
struct ApprovalFailure {
    error: String,
    #[serde(default)]
    cause: String,
}

/// The next wave, as the fleet's Map reads it.
#[derive(Debug, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct NextWave {
    /// 1-based.
    pub number: usize,
    pub cells: Vec<Value>,
    pub max_concurrency: u32,
    /// The wave waits for a person before it starts, at most this long (0: it does not wait).
    pub approval_timeout_seconds: u32,
    /// Seconds since the epoch: the wave's cells start after this.
    pub started_at: f64,
}

/// Whether a cell starts, and as what.
#[derive(Debug, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Admission {
    pub cell: String,
    pub start: bool,
    /// The child execution's name.
    pub name: String,
    /// The cell's rollout plan (the child's input) when it starts; null otherwise (the state
    /// machine's ResultSelector reads the field either way).
    pub plan: Option<Value>,
    pub reason: String,
}

/// What the fleet's first state gets back: the plan as the execution was given it (valid; for a
/// stored plan, its reference), and the first tally.
#[derive(Debug, Serialize)]
pub struct Planned {
    pub fleet: Value,
    pub tally: Tally,
}

pub async fn handle(
    apis: &dyn FleetApis,
    config: &FleetConfig,
    input: Value,
) -> Result<Value, FleetError> {
    // The fleet's first state sends the execution's input as it came, the fleet plan with no
    // `op`: wrapping it would grow an input that may already be at Step Functions' 256 KiB,
    // and a state over it ends the fleet States.DataLimitExceeded, which nothing catches,
    // instead of refusing the plan.
    if input.get("op").is_none() {
        let fleet = valid(apis, input.clone()).await?;
        let tally = Tally::start(&fleet);
        // A stored plan travels as its reference, with the fields the state machine reads.
        let in_state = match StoredPlan::from_input(&input) {
            Some(Ok(stored)) => stored.in_state(&fleet.fleet),
            _ => input,
        };
        return to_value(Planned {
            fleet: in_state,
            tally,
        });
    }
    let request: Request = parse_input(input).map_err(FleetError::InvalidInput)?;
    match request {
        Request::Wave { fleet, tally } => {
            to_value(next_wave(&valid(apis, fleet).await?, &tally, now())?)
        }
        Request::Freeze {
            fleet,
            tally,
            wave,
            since,
            fleet_execution,
        } => {
            let fleet = valid(apis, fleet).await?;
            to_value(wave_freeze(apis, config, &fleet, tally, wave, since, &fleet_execution).await)
        }
        Request::Admit {
            fleet,
            cell,
            fleet_execution,
            wave,
        } => to_value(
            admit(
                apis,
                config,
                &valid(apis, fleet).await?,
                &cell,
                &fleet_execution,
                &wave,
            )
            .await?,
        ),
        Request::Halt {
            fleet,
            cell,
            fleet_execution,
            wave,
        } => Ok(halt(
            apis,
            config,
            &valid(apis, fleet).await?,
            &cell,
            &fleet_execution,
            &wave,
        )
        .await?),
        Request::Judge {
            fleet,
            tally,
            results,
            fleet_execution,
        } => to_value(
            judge(
                apis,
                config,
                &valid(apis, fleet).await?,
                tally,
                &results,
                &fleet_execution,
            )
            .await?,
        ),
        Request::Soak {
            fleet,
            tally,
            soak_started,
            fleet_execution,
        } => {
            let fleet = valid(apis, fleet).await?;
            let (alarms, went) = match (&fleet.fleet.soak, &soak_started) {
                (Some(soak), started) if !soak.alarms.is_empty() => {
                    let went = match started {
                        Some(text) => {
                            let since = utc_time(text).ok_or_else(|| {
                                FleetError::InvalidInput(format!(
                                    "soakStarted `{text}` is not an RFC 3339 UTC time ($$.State.EnteredTime)"
                                ))
                            })?;
                            apis.went_to_alarm(&soak.alarms, since).await?
                        }
                        None => Vec::new(),
                    };
                    (apis.alarms(&soak.alarms).await?, went)
                }
                _ => (Vec::new(), Vec::new()),
            };
            let burns = match &fleet_execution {
                Some(execution) => {
                    soak_burn::slow_burns(apis, config, &fleet, tally.wave, execution).await?
                }
                None => Vec::new(),
            };
            to_value(tally.after_soak(&fleet, &alarms, &went, &burns))
        }
        Request::StopCells {
            fleet_execution,
            status,
        } => stop_cells_of_ended_fleet(apis, config, &fleet_execution, &status).await,
        Request::AwaitApproval {
            fleet_execution,
            wave,
        } => {
            // The token is in this task's parameters in the history, never in a log.
            info!(fleet_execution = %fleet_execution, wave, "wave waits for a person: cluster-canary fleet approve");
            Ok(json!({}))
        }
        Request::NotApproved {
            fleet,
            tally,
            wave,
            failure,
        } => {
            let fleet = valid(apis, fleet).await?;
            let why = if failure.error == "States.Timeout" {
                format!("nobody approved wave {wave} in time")
            } else {
                format!(
                    "wave {wave} was rejected ({}: {})",
                    failure.error, failure.cause
                )
            };
            to_value(tally.halted_before_wave(&fleet, &why))
        }
        Request::Promoted { fleet_execution } => promoted(apis, config, &fleet_execution).await,
        Request::RolledBack {
            tally,
            results,
            failure,
        } => to_value(tally.rolled_back(&results, failure.as_ref())),
    }
}

/// The detail-type of the event a wave a change freeze holds is named in.
pub const WAVE_FROZEN: &str = "Wave Frozen";

/// What the gate before a wave answers: the freeze's hold, and the tally (halted when the
/// freeze held the wave past its bound).
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct WaveFreeze {
    #[serde(flatten)]
    pub gate: FreezeGate,
    pub tally: Tally,
}

/// Whether a change freeze holds wave `wave`: the stack's freezes, the calendars of the
/// wave's cells' plans, and their error budgets that are spent: Application Signals SLOs,
/// Prometheus and CloudWatch remaining budgets (each read once for the wave, however many cells
/// name it). The bound is the longest of the cells' plans' (`freeze.maxFrozenSeconds`),
/// looked at no more than 100 times in it (nor more often than the cells check), so a long
/// freeze adds at most 100 looks to the fleet's history per wave.
async fn wave_freeze(
    apis: &dyn FleetApis,
    config: &FleetConfig,
    fleet: &ValidFleet,
    tally: Tally,
    wave: usize,
    since: u64,
    fleet_execution: &str,
) -> WaveFreeze {
    let plans: Vec<&canary_core::plan::ValidPlan> = fleet
        .waves
        .get(wave.saturating_sub(1))
        .map(|w| w.cells.iter().filter_map(|i| fleet.plans.get(*i)).collect())
        .unwrap_or_default();
    let mut calendars: Vec<String> = plans
        .iter()
        .filter_map(|p| p.plan.freeze.as_ref())
        .flat_map(|f| f.calendars.iter().cloned())
        .collect();
    calendars.sort();
    calendars.dedup();
    let section = FreezeSection {
        calendars,
        max_frozen_seconds: None,
    };
    let freezes = Freezes {
        api: apis,
        stack: &config.freeze,
    };
    // An open AWS Health issue is a Region's: the wave is not held for it, each cell in that
    // Region holds at its own rollout's gate (the others go on).
    let mut reading = freezes.read(Some(&section), &[]).await;
    // An SLO is its Region's; a remaining-budget query is the stack's clients' (and a Prometheus
    // one its endpoint's): each read once for the wave.
    let (mut slos_read, mut remaining_read) = (BTreeSet::new(), BTreeSet::new());
    for plan in &plans {
        let Some(budget) = &plan.plan.error_budget else {
            continue;
        };
        let now = SystemTime::now();
        let region = &plan.plan.cluster.region;
        let mut slos = Vec::new();
        if slos_read.insert(serde_json::to_string(&(region, budget)).unwrap_or_default()) {
            slos = read_budgets(apis.slos(), budget, region, now).await;
        }
        let endpoint = plan.plan.analysis.as_ref().map(|a| &a.prometheus);
        if remaining_read.insert(serde_json::to_string(&(budget, endpoint)).unwrap_or_default()) {
            slos.extend(remaining_budgets(apis.prometheus(), &plan.plan, now).await);
            slos.extend(remaining_budget_metrics(apis.metrics(), &plan.plan, now).await);
        }
        for reason in hold_reasons(budget, &slos) {
            if !reading.budgets.contains(&reason) {
                reading.budgets.push(reason);
            }
        }
    }
    let bound = plans
        .iter()
        .map(|p| p.frozen_bound_seconds())
        .max()
        .unwrap_or(canary_core::freeze::DEFAULT_MAX_FROZEN_SECONDS);
    let interval = plans
        .iter()
        .map(|p| p.plan.gate_interval_seconds())
        .min()
        .unwrap_or(60);
    let held = hold(&reading, since, now() as u64, bound);
    let gate = FreezeGate::of(held, (bound / 100).max(interval));
    if gate.frozen && since == 0 && !gate.too_long {
        let detail = json!({
            "fleetExecutionArn": fleet_execution,
            "fleet": fleet.fleet.name,
            "wave": wave,
            "reason": gate.reason,
        });
        info!(wave, reason = %gate.reason, "a change freeze or the error budget holds the fleet's next wave");
        apis.put_or_log(WAVE_FROZEN, &detail).await;
    }
    let tally = if gate.too_long {
        tally.halted_before_wave(
            fleet,
            &format!("wave {wave} did not start: {}", gate.reason),
        )
    } else {
        tally
    };
    WaveFreeze { gate, tally }
}

/// The wave's results into the tally: each cell not promoted is described (stopped by the
/// fleet's halt, or failed, and why); its CellsPromoted/CellsFailed points emitted.
async fn judge(
    apis: &dyn FleetApis,
    config: &FleetConfig,
    fleet: &ValidFleet,
    tally: Tally,
    results: &[CellResult],
    fleet_execution: &str,
) -> Result<Tally, FleetError> {
    let suffix = child_suffix(fleet_execution);
    let mut described = Vec::new();
    for result in results
        .iter()
        .filter(|r| r.status == CellStatus::NotPromoted)
    {
        let arn = execution_arn(
            &config.rollout_state_machine_arn,
            &child_name(&result.cell, &suffix),
        );
        let execution = match apis.describe(&arn).await {
            Ok(execution) => Some(execution),
            // The child never started (StartExecution refused): a failed cell too.
            Err(e) if e.kind == canary_aws::AwsErrorKind::NotFound => None,
            Err(e) => return Err(e.into()),
        };
        described.push((result.cell.clone(), execution));
    }
    let (promoted, failed) = (tally.promoted, tally.failed);
    let judged = tally.judge(fleet, results, &described);
    canary_core::metrics::emit(canary_core::metrics::Point::wave_cells(
        &fleet.fleet.name,
        judged.promoted - promoted,
        judged.failed - failed,
    ));
    info!(fleet = %fleet.fleet.name, wave = judged.wave, promoted = judged.promoted,
          failed = judged.failed, halt = judged.halt, "wave judged");
    Ok(judged)
}

/// The fleet's promoted cells: their execution names and the ARNs' shared prefix (names, not
/// ARNs: a thousand fit the fleet's state).
async fn promoted(
    apis: &dyn FleetApis,
    config: &FleetConfig,
    fleet_execution: &str,
) -> Result<Value, FleetError> {
    let started = apis.describe(fleet_execution).await?.started;
    let prefix = execution_arn(&config.rollout_state_machine_arn, "");
    let names: Vec<String> = children(apis, config, fleet_execution, started, Some("SUCCEEDED"))
        .await?
        .into_iter()
        .filter_map(|e| e.arn.strip_prefix(&prefix).map(str::to_owned))
        .collect();
    Ok(json!({ "prefix": prefix, "names": names }))
}

/// The fleet plan in a step's input: the plan, or the stored plan its reference names.
async fn valid(apis: &dyn FleetApis, fleet: Value) -> Result<ValidFleet, FleetError> {
    load_fleet_plan(fleet, apis).await.map_err(|e| match e {
        FleetPlanError::Invalid(errors) => FleetError::InvalidPlan(errors),
        FleetPlanError::Aws(e) => FleetError::Aws(e),
    })
}

fn to_value(value: impl Serialize) -> Result<Value, FleetError> {
    serde_json::to_value(value).map_err(|e| FleetError::InvalidInput(e.to_string()))
}

fn now() -> f64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64())
}

fn next_wave(fleet: &ValidFleet, tally: &Tally, now: f64) -> Result<NextWave, FleetError> {
    let wave = fleet.waves.get(tally.wave).ok_or_else(|| {
        FleetError::InvalidInput(format!(
            "the fleet has {} waves; there is no wave {}",
            fleet.waves.len(),
            tally.wave + 1
        ))
    })?;
    Ok(NextWave {
        number: tally.wave + 1,
        cells: wave
            .cells
            .iter()
            .map(|&i| json!({ "cell": fleet.fleet.cells[i].name }))
            .collect(),
        max_concurrency: wave.max_concurrent_cells,
        approval_timeout_seconds: fleet.approval_before(tally.wave + 1).unwrap_or(0),
        started_at: now,
    })
}

/// How long before its wave's start (by the Lambda's clock) a cell's execution may have started
/// by Step Functions' clock: the listing goes back this far; the wave's cell names make the
/// count exact.
const CLOCK_MARGIN_SECONDS: f64 = 300.0;

/// The fleet's child executions (`status` only, when given) started since `since`.
async fn children(
    apis: &dyn FleetApis,
    config: &FleetConfig,
    fleet_execution: &str,
    since: f64,
    status: Option<&str>,
) -> Result<Vec<Listed>, AwsError> {
    let suffix = format!("-{}", child_suffix(fleet_execution));
    Ok(apis
        .started_since(&config.rollout_state_machine_arn, since, status)
        .await?
        .into_iter()
        .filter(|e| e.arn.ends_with(&suffix))
        .collect())
}

/// The executions of this wave's cells with `status`: one filtered listing, which stops at
/// the wave's start (a fleet of 1,000 cells lists no more than its running wave).
async fn wave_children(
    apis: &dyn FleetApis,
    config: &FleetConfig,
    fleet: &ValidFleet,
    fleet_execution: &str,
    wave: &WaveSoFar,
    status: &str,
) -> Result<Vec<Listed>, AwsError> {
    let suffix = child_suffix(fleet_execution);
    let names: Vec<String> = fleet
        .waves
        .get(wave.wave.saturating_sub(1))
        .map(|w| {
            w.cells
                .iter()
                .map(|&i| format!(":{}", child_name(&fleet.fleet.cells[i].name, &suffix)))
                .collect()
        })
        .unwrap_or_default();
    let since = wave.wave_started - CLOCK_MARGIN_SECONDS;
    Ok(children(apis, config, fleet_execution, since, Some(status))
        .await?
        .into_iter()
        .filter(|e| names.iter().any(|n| e.arn.ends_with(n.as_str())))
        .collect())
}

/// The fleet's failed cells so far: its tally's, and this wave's that ended FAILED (a rollback
/// or a failure before traffic). This wave's timed-out or stopped cells are counted by the
/// wave's judge.
async fn failed_so_far(
    apis: &dyn FleetApis,
    config: &FleetConfig,
    fleet: &ValidFleet,
    fleet_execution: &str,
    wave: &WaveSoFar,
) -> Result<usize, AwsError> {
    let this_wave = wave_children(apis, config, fleet, fleet_execution, wave, "FAILED").await?;
    Ok(wave.failed_before as usize + this_wave.len())
}

async fn admit(
    apis: &dyn FleetApis,
    config: &FleetConfig,
    fleet: &ValidFleet,
    cell: &str,
    fleet_execution: &str,
    wave: &WaveSoFar,
) -> Result<Admission, FleetError> {
    let index = fleet
        .cell(cell)
        .ok_or_else(|| FleetError::InvalidInput(format!("`{cell}` is not a cell of the fleet")))?;
    let name = child_name(cell, &child_suffix(fleet_execution));
    let failed = failed_so_far(apis, config, fleet, fleet_execution, wave).await?;
    let budget = fleet.fleet.failure_budget as usize;
    let admission = if failed > budget {
        Admission {
            cell: cell.to_owned(),
            start: false,
            name,
            plan: None,
            reason: format!(
                "not started: {} failed, more than the failure budget of {budget}",
                tally::cells(failed)
            ),
        }
    } else {
        Admission {
            cell: cell.to_owned(),
            start: true,
            name,
            plan: Some(to_value(
                peers::plan_with_peers(apis, config, fleet, index, fleet_execution, wave).await?,
            )?),
            reason: format!(
                "{} failed so far, within the failure budget of {budget}",
                tally::cells(failed)
            ),
        }
    };
    info!(fleet = %fleet.fleet.name, cell, start = admission.start, reason = %admission.reason, "cell admission");
    Ok(admission)
}

async fn halt(
    apis: &dyn FleetApis,
    config: &FleetConfig,
    fleet: &ValidFleet,
    cell: &str,
    fleet_execution: &str,
    wave: &WaveSoFar,
) -> Result<Value, FleetError> {
    say_cell_failed(apis, config, fleet, cell, fleet_execution, wave).await;
    let budget = fleet.fleet.failure_budget as usize;
    if fleet.fleet.on_halt != OnHalt::AbortRunning {
        return Ok(json!({ "stopped": 0 }));
    }
    let failed = failed_so_far(apis, config, fleet, fleet_execution, wave).await?;
    if failed <= budget {
        return Ok(json!({ "stopped": 0 }));
    }
    let cause = format!(
        "fleet {} halted: cell {cell} failed and {} failed, more than the failure budget of {budget} (onHalt: abortRunning)",
        fleet.fleet.name,
        tally::cells(failed)
    );
    let running = wave_children(apis, config, fleet, fleet_execution, wave, "RUNNING").await?;
    let stopped = stop_running(apis, &running, HALT_ERROR, &cause).await?;
    info!(fleet = %fleet.fleet.name, cell, stopped, "fleet halted: running cells stopped");
    Ok(json!({ "stopped": stopped }))
}

/// `Cell Failed`, for a cell of the wave that ended without promotion: its wave, its rollout's
/// execution (none when it never started), how that ended and why. Not for a cell the fleet
/// stopped itself (a halt's `FleetHalted`, the fleet's end's `FleetStopped`): the fleet's own
/// events say that. Best effort: a failure to look or to put the event is logged.
async fn say_cell_failed(
    apis: &dyn FleetApis,
    config: &FleetConfig,
    fleet: &ValidFleet,
    cell: &str,
    fleet_execution: &str,
    wave: &WaveSoFar,
) {
    let child = execution_arn(
        &config.rollout_state_machine_arn,
        &child_name(cell, &child_suffix(fleet_execution)),
    );
    let (execution, status, error, cause) = match apis.describe(&child).await {
        Ok(ended) => {
            if matches!(ended.error.as_deref(), Some(HALT_ERROR | STOPPED_ERROR)) {
                return;
            }
            let cause = ended.cause.map(|c| truncate(&c, MAX_ERROR_MESSAGE_BYTES));
            (Some(ended.arn), ended.status, ended.error, cause)
        }
        Err(e) if e.kind == canary_aws::AwsErrorKind::NotFound => (
            None,
            "NOT_STARTED".to_owned(),
            None,
            Some("its rollout could not be started (the fleet's history says why)".to_owned()),
        ),
        Err(e) => {
            warn!(cell, error = %e, "could not describe the failed cell's rollout for its event");
            return;
        }
    };
    let detail = json!({
        "fleetExecutionArn": fleet_execution,
        "fleet": fleet.fleet.name,
        "cell": cell,
        "wave": wave.wave,
        "execution": execution,
        "status": status,
        "error": error,
        "cause": cause,
    });
    apis.put_or_log(CELL_FAILED, &detail).await;
}

async fn stop_running(
    apis: &dyn FleetApis,
    children: &[Listed],
    error: &str,
    cause: &str,
) -> Result<usize, AwsError> {
    let mut stopped = 0;
    for child in children.iter().filter(|c| c.status == "RUNNING") {
        match apis.stop(&child.arn, error, cause).await {
            Ok(()) => stopped += 1,
            // It ended between the listing and the stop: nothing left to stop.
            Err(e) if e.kind == canary_aws::AwsErrorKind::NotFound => {}
            Err(e) => return Err(e),
        }
    }
    Ok(stopped)
}

/// The fleet's safety net: a fleet execution that ended ABORTED, FAILED or TIMED_OUT leaves
/// none of its cells running (on AWS, stopping the parent of a `.sync` child makes a best
/// effort to stop it; this does not depend on it).
async fn stop_cells_of_ended_fleet(
    apis: &dyn FleetApis,
    config: &FleetConfig,
    arn: &str,
    status: &str,
) -> Result<Value, FleetError> {
    if !matches!(status, "ABORTED" | "FAILED" | "TIMED_OUT") {
        return Ok(json!({ "fleetExecution": arn, "status": status, "stopped": 0 }));
    }
    let fleet = apis.describe(arn).await?;
    let running = children(apis, config, arn, fleet.started, Some("RUNNING")).await?;
    let cause = format!("the fleet execution {arn} ended {status}: its cells are stopped, each one's safety net restores its baseline");
    let stopped = stop_running(apis, &running, STOPPED_ERROR, &cause).await?;
    info!(
        fleet_execution = arn,
        status, stopped, "fleet ended: running cells stopped"
    );
    // A fleet that halted said so itself (`Fleet Halted`); one stopped by a person, timed out
    // or failed otherwise ends here, and says it.
    if fleet.error.as_deref() != Some(HALT_ERROR) {
        let name = fleet
            .input
            .as_deref()
            .and_then(|input| serde_json::from_str::<Value>(input).ok())
            .and_then(|plan| plan.get("name").and_then(Value::as_str).map(str::to_owned));
        let detail = json!({
            "fleetExecutionArn": arn,
            "fleet": name,
            "status": status,
            "error": fleet.error,
            "cause": fleet.cause.map(|c| truncate(&c, MAX_ERROR_MESSAGE_BYTES)),
            "cellsStopped": stopped,
        });
        apis.put_or_log(FLEET_STOPPED, &detail).await;
    }
    Ok(json!({ "fleetExecution": arn, "status": status, "stopped": stopped }))
}

#[cfg(test)]
mod tests;
