//! `fleet validate | check | start | watch | abort | list`: one execution of the fleet state
//! machine and its cells, each a child execution of the rollout state machine named
//! `<cell>-<suffix of the fleet execution>` (canary_core::fleet::child_name).

use std::collections::BTreeMap;
use std::path::Path;
use std::time::{Duration, Instant};

use aws_config::SdkConfig;
use canary_aws::executions::{EventKind, Execution, HistoryEvent};
use canary_aws::{
    load_fleet_plan, AlarmStateValue, CloudWatchApi, FleetPlanError, SdkCloudWatch, SdkExecutions,
    SdkFleetPlans,
};
use canary_core::fleet::{
    child_suffix, compact_size, must_be_stored, FleetPlan, StoredPlan, ValidFleet,
    MAX_FLEET_PLAN_BYTES,
};
use serde_json::{json, Value};

use crate::args::FleetMachineArgs;
use crate::error::CliError;
use crate::history;
use crate::locate::{self, in_region, region_of};
use crate::plan_commands::{check_plan, duration_text, read_plan, table};
use crate::printer::Printer;
use crate::progress::phase_of;
use crate::rollout_commands::{
    check_execution_name, check_reason, execution_name, now, send_answer, wait_for_baseline, who,
    Answer,
};
use canary_aws::executions::execution_arn;

/// As the rollout's live view: well under Step Functions' read rates.
const POLL: Duration = Duration::from_secs(2);

/// The plan in the file, valid as `fleet start` runs it: stored in S3 when it is too large for
/// the fleet's state.
fn validated(path: &Path) -> Result<(Value, ValidFleet), CliError> {
    let raw = read_plan(path)?;
    let valid = FleetPlan::parse_storable(raw.clone()).map_err(|errors| {
        let problems: Vec<String> = errors.0.iter().map(|e| format!("  {e}")).collect();
        CliError::Invalid(format!(
            "{}: invalid fleet plan:\n{}",
            path.display(),
            problems.join("\n")
        ))
    })?;
    Ok((raw, valid))
}

/// For a plan too large for the fleet's state, that `fleet start` stores it.
fn stored_text(raw: &Value) -> Option<String> {
    let size = compact_size(raw);
    must_be_stored(size).then(|| {
        format!(
            "{size} bytes as compact JSON, over the {MAX_FLEET_PLAN_BYTES} a fleet's state carries: \
             `fleet start` stores it in the stack's FleetPlanBucket and starts the fleet with its \
             reference"
        )
    })
}

/// A wave's cells named in the text output (`--output json` lists them all).
const CELLS_SHOWN_PER_WAVE: usize = 20;

/// Each wave's cells, with their regions: `wave 2 (2 at once): euw1-a (eu-west-1), ...`.
fn waves_text(valid: &ValidFleet) -> Vec<String> {
    valid
        .waves
        .iter()
        .enumerate()
        .map(|(w, wave)| {
            let mut cells: Vec<String> = wave
                .cells
                .iter()
                .take(CELLS_SHOWN_PER_WAVE)
                .map(|&i| {
                    format!(
                        "{} ({})",
                        valid.fleet.cells[i].name, valid.plans[i].plan.cluster.region
                    )
                })
                .collect();
            if wave.cells.len() > CELLS_SHOWN_PER_WAVE {
                cells.push(format!(
                    "… and {} more",
                    wave.cells.len() - CELLS_SHOWN_PER_WAVE
                ));
            }
            format!(
                "wave {} ({} at once): {}",
                w + 1,
                wave.max_concurrent_cells,
                cells.join(", ")
            )
        })
        .collect()
}

pub fn validate(files: &[std::path::PathBuf], printer: &mut Printer) -> bool {
    let mut ok = true;
    for file in files {
        match validated(file) {
            Ok((raw, valid)) => {
                printer.say(
                    &format!(
                        "{}: valid: fleet {}, {} cells in {} waves, failure budget {}",
                        file.display(),
                        valid.fleet.name,
                        valid.fleet.cells.len(),
                        valid.waves.len(),
                        valid.fleet.failure_budget
                    ),
                    json!({"file": file, "valid": true, "fleet": valid.fleet.name,
                           "waves": valid.waves.iter().map(|w| w.cells.iter()
                               .map(|&i| valid.fleet.cells[i].name.clone()).collect::<Vec<_>>())
                               .collect::<Vec<_>>()}),
                );
                if let Some(line) = stored_text(&raw) {
                    printer.text(&format!("  {line}"));
                }
                for line in waves_text(&valid) {
                    printer.text(&format!("  {line}"));
                }
            }
            Err(error) => {
                ok = false;
                printer.say(
                    &error.to_string(),
                    json!({"file": file, "valid": false, "errors": error.to_string()}),
                );
            }
        }
    }
    ok
}

/// How many cells `fleet check` checks at once: each check is a handful of reads (alarms,
/// listeners, records, the running rollouts), which the SDK retries when throttled; eight at
/// once stays within the read APIs' rates (ELBv2 and CloudWatch's Describe* about 10 a second,
/// ListExecutions 5 a second refilled) with the SDK's retries absorbing bursts.
const CELLS_CHECKED_AT_ONCE: usize = 8;
/// How many failing cells the closing line names (all of them are above, each with why).
const FAILED_CELLS_NAMED: usize = 20;

pub async fn check(
    config: &SdkConfig,
    file: &Path,
    machines: &FleetMachineArgs,
    printer: &mut Printer,
) -> Result<bool, CliError> {
    use futures::stream::{self, StreamExt, TryStreamExt};
    let (_, valid) = validated(file)?;
    let output = printer.output;
    // Checked concurrently, said in the plan's order.
    let checked: Vec<(bool, Printer)> = stream::iter(valid.fleet.cells.iter().zip(&valid.plans))
        .map(|(cell, plan)| async move {
            let mut said = Printer::buffered(output);
            said.say(
                &format!(
                    "cell {} ({}/{}):",
                    cell.name, plan.plan.cluster.region, plan.plan.cluster.name
                ),
                json!({"cell": cell.name}),
            );
            let ok = check_plan(config, plan, &machines.rollout, &mut said).await?;
            Ok::<_, CliError>((ok, said))
        })
        .buffered(CELLS_CHECKED_AT_ONCE)
        .try_collect()
        .await?;
    let mut failed = Vec::new();
    for ((ok, said), cell) in checked.into_iter().zip(&valid.fleet.cells) {
        said.write_into(printer);
        if !ok {
            failed.push(cell.name.clone());
        }
    }
    let mut ok = failed.is_empty();
    if let Some(soak) = valid.fleet.soak.as_ref().filter(|s| !s.alarms.is_empty()) {
        ok &= check_soak_alarms(config, machines, &soak.alarms, printer).await?;
    }
    let cells = valid.fleet.cells.len();
    let text = match (ok, failed.len()) {
        (true, _) => format!(
            "every cell of fleet {} passed its checks ({cells} cells)",
            valid.fleet.name
        ),
        (false, 0) => format!(
            "fleet {}: every one of its {cells} cells passed its checks; its soak did not (above)",
            valid.fleet.name
        ),
        (false, n) => format!(
            "fleet {}: {n} of {cells} cells failed a check (each above, with why): {}",
            valid.fleet.name,
            canary_core::limits::join_bounded(
                &failed,
                ", ",
                FAILED_CELLS_NAMED,
                canary_core::limits::MAX_REASON_BYTES
            )
        ),
    };
    printer.say(
        &text,
        json!({"check": "fleet", "ok": ok, "cells": cells, "failedCells": failed}),
    );
    Ok(ok)
}

/// The soak's alarms, as fleet-waves reads them after each wave (in the fleet state machine's
/// region): one that does not exist would cost a wave and then halt the fleet; one in ALARM
/// now would halt it at the first soak.
async fn check_soak_alarms(
    config: &SdkConfig,
    machines: &FleetMachineArgs,
    names: &[String],
    printer: &mut Printer,
) -> Result<bool, CliError> {
    // As `plan check` with concurrent rollouts: where the fleet would run is needed to check.
    let machine = match locate::fleet_state_machine(config, machines).await {
        Ok(machine) => machine,
        Err(error) => {
            printer.say(
                &format!("? soak alarms not checked: {error}"),
                json!({"check": "soakAlarm", "ok": null, "message": error.to_string()}),
            );
            return Ok(true);
        }
    };
    let found = SdkCloudWatch::new(&in_region(config, region_of(&machine)))
        .alarms_by_names(names)
        .await?;
    let region = region_of(&machine).unwrap_or("the fleet's region");
    let mut ok = true;
    for name in names {
        let (line, fine) = match found.iter().find(|alarm| &alarm.name == name) {
            None => (
                format!(
                    "✗ soak: no alarm named {name} in {region}: the first soak would halt the \
                     fleet (fleet-waves reads it there)"
                ),
                false,
            ),
            Some(alarm) if alarm.state == AlarmStateValue::Alarm => (
                format!(
                    "✗ soak: alarm {name} is in ALARM now: the first soak would halt the fleet"
                ),
                false,
            ),
            Some(alarm) => {
                let state = match alarm.state {
                    AlarmStateValue::Ok => "OK",
                    AlarmStateValue::InsufficientData => "INSUFFICIENT_DATA",
                    AlarmStateValue::Alarm => "ALARM",
                };
                (format!("✓ soak: alarm {name} exists ({state})"), true)
            }
        };
        ok &= fine;
        printer.say(
            &line,
            json!({"check": "soakAlarm", "ok": fine, "alarm": name}),
        );
    }
    Ok(ok)
}

pub async fn start(
    config: &SdkConfig,
    file: &Path,
    name: Option<&str>,
    machines: &FleetMachineArgs,
    printer: &mut Printer,
) -> Result<String, CliError> {
    let (raw, valid) = validated(file)?;
    let name = match name {
        Some(name) => name.to_owned(),
        None => execution_name(&valid.fleet.name, now()),
    };
    check_execution_name(&name)?;
    let machine = locate::fleet_state_machine(config, machines).await?;
    let sfn = SdkExecutions::in_region(config, region_of(&machine));
    if let Ok(existing) = sfn.describe(&execution_arn(&machine, &name)).await {
        if existing.running() {
            return Err(CliError::Invalid(format!(
                "a fleet named `{name}` is already running ({}): nothing new started; \
                 follow it with `cluster-canary fleet watch {name}`",
                existing.arn
            )));
        }
    }
    let input = if must_be_stored(compact_size(&raw)) {
        let bucket = locate::fleet_plan_bucket(config, machines).await?;
        let bytes = serde_json::to_vec(&raw)
            .map_err(|e| CliError::Invalid(format!("the fleet plan as JSON: {e}")))?;
        let stored = StoredPlan::of(&bucket, &valid.fleet.name, &bytes);
        SdkFleetPlans::new(&in_region(config, region_of(&machine)))
            .put_plan(&stored, bytes)
            .await?;
        printer.say(
            &format!("stored the fleet plan at {}", stored.uri()),
            json!({"type": "fleetPlanStored", "uri": stored.uri(), "sha256": stored.sha256}),
        );
        // With the fields the state machine reads: `fleet list` names a refused fleet by it.
        stored.in_state(&valid.fleet).to_string()
    } else {
        raw.to_string()
    };
    let arn = sfn.start(&machine, &name, &input).await?;
    printer.say(
        &format!("started fleet {}: {arn}", valid.fleet.name),
        json!({"type": "fleetStarted", "executionArn": arn}),
    );
    for line in waves_text(&valid) {
        printer.text(&format!("  {line}"));
    }
    Ok(arn)
}

/// One cell as the table shows it.
#[derive(Debug, Clone, PartialEq)]
pub struct CellRow {
    pub cell: String,
    /// The cell's wave; `None` when the plan cannot be read (a stored plan deleted or replaced).
    pub wave: Option<usize>,
    /// `region/name`; `None` when the plan cannot be read.
    pub cluster: Option<String>,
    /// `waiting` (not started yet), or its execution's status.
    pub status: String,
    pub step: Option<String>,
    /// `promoted`, the error it ended with, or nothing while it runs or waits.
    pub outcome: Option<String>,
}

impl CellRow {
    fn json(&self) -> Value {
        json!({"cell": self.cell, "wave": self.wave, "cluster": self.cluster,
               "status": self.status, "step": self.step, "outcome": self.outcome})
    }
}

/// The outcome of an ended execution, as `list` says it.
fn outcome(execution: &Execution) -> Option<String> {
    match (execution.status.as_str(), &execution.error) {
        ("RUNNING", _) => None,
        ("SUCCEEDED", _) => Some("promoted".to_owned()),
        (_, Some(error)) => Some(error.clone()),
        (status, None) => Some(status.to_lowercase()),
    }
}

/// The table's rows: every cell in wave order, with its child execution if it started (one
/// that did not is `waiting` while the fleet runs, `not started` once it ended).
pub fn rows(
    valid: &ValidFleet,
    children: &BTreeMap<String, (Execution, Option<String>)>,
    fleet_running: bool,
) -> Vec<CellRow> {
    let unstarted = if fleet_running {
        "waiting"
    } else {
        "not started"
    };
    let mut rows = Vec::new();
    for (w, wave) in valid.waves.iter().enumerate() {
        for &i in &wave.cells {
            let cell = &valid.fleet.cells[i].name;
            let cluster = &valid.plans[i].plan.cluster;
            let child = children.get(cell);
            rows.push(CellRow {
                cell: cell.clone(),
                wave: Some(w + 1),
                cluster: Some(format!("{}/{}", cluster.region, cluster.name)),
                status: child.map_or_else(|| unstarted.to_owned(), |(e, _)| e.status.clone()),
                step: child.and_then(|(_, step)| step.clone()),
                outcome: child.and_then(|(e, _)| outcome(e)),
            });
        }
    }
    rows
}

/// The table's rows without the plan: the cells that started, from their executions, by name
/// (waves and clusters unknown; cells that never started cannot be told).
pub fn rows_from_executions(
    children: &BTreeMap<String, (Execution, Option<String>)>,
) -> Vec<CellRow> {
    children
        .iter()
        .map(|(cell, (execution, step))| CellRow {
            cell: cell.clone(),
            wave: None,
            cluster: None,
            status: execution.status.clone(),
            step: step.clone(),
            outcome: outcome(execution),
        })
        .collect()
}

fn table_text(rows: &[CellRow]) -> String {
    let mut lines = vec![["CELL", "WAVE", "CLUSTER", "STATUS", "STEP", "OUTCOME"]
        .map(str::to_owned)
        .to_vec()];
    for row in rows {
        lines.push(vec![
            row.cell.clone(),
            row.wave.map_or_else(|| "?".to_owned(), |w| w.to_string()),
            row.cluster.clone().unwrap_or_else(|| "?".to_owned()),
            row.status.clone(),
            row.step.clone().unwrap_or_else(|| "-".to_owned()),
            row.outcome.clone().unwrap_or_else(|| "-".to_owned()),
        ]);
    }
    table(&lines)
}

/// Running cells whose step the table reads (one history each per poll): a wave of 100 at once
/// would otherwise spend Step Functions' GetExecutionHistory rate (20 a second).
const STEPS_READ: usize = 20;

/// The fleet's children, read for one look at the fleet: by cell (the child's execution name
/// without the fleet's suffix), each execution and (running) the step it is at. Read from the
/// executions alone, not the plan: a fleet whose stored plan was deleted or replaced can still
/// be watched and stopped. An ended child does not change: `ended` keeps its description between
/// looks, so a poll describes only the running ones.
async fn children(
    sfn: &SdkExecutions,
    rollout_machine: &str,
    fleet: &Execution,
    ended: &mut BTreeMap<String, Execution>,
) -> Result<BTreeMap<String, (Execution, Option<String>)>, CliError> {
    let suffix = format!("-{}", child_suffix(&fleet.arn));
    let listed = sfn
        .started_since(rollout_machine, fleet.started, None)
        .await?;
    let mut found = BTreeMap::new();
    let mut steps_read = 0;
    for child in &listed {
        let name = child.arn.rsplit(':').next().unwrap_or_default();
        let Some(cell) = name.strip_suffix(&suffix) else {
            continue;
        };
        if let Some(execution) = ended.get(&child.arn) {
            found.insert(cell.to_owned(), (execution.clone(), None));
            continue;
        }
        let execution = sfn.describe(&child.arn).await?;
        let step = if execution.running() && steps_read < STEPS_READ {
            steps_read += 1;
            let events = sfn.events(&child.arn).await?;
            history::current_step(&events)
                .map(|s| format!("{}/{} {}%", s.number, s.count, s.weight))
                .or_else(|| phase_before_traffic(&events))
        } else {
            None
        };
        if !execution.running() {
            ended.insert(child.arn.clone(), execution.clone());
        }
        found.insert(cell.to_owned(), (execution, step));
    }
    Ok(found)
}

/// What a running cell that has set no step yet is doing (`waiting for the cluster`, ...),
/// from the last state it entered.
fn phase_before_traffic(events: &[HistoryEvent]) -> Option<String> {
    events.iter().rev().find_map(|event| match &event.kind {
        EventKind::StateEntered { name, .. } => phase_of(name).map(str::to_owned),
        _ => None,
    })
}

/// The rollout state machine the fleet's cells run on: the stack's (or the one named).
async fn rollout_machine(
    config: &SdkConfig,
    machines: &FleetMachineArgs,
) -> Result<String, CliError> {
    locate::state_machine(config, &machines.rollout).await
}

/// The plan the fleet was started with (its input, or the stored plan it refers to), or what
/// keeps it from being read, in words: a stored plan deleted or replaced since the fleet
/// started, say. The fleet's executions do not need it: watch, abort and list go on without.
async fn plan_of(config: &SdkConfig, fleet: &Execution) -> Result<ValidFleet, String> {
    let input: Value = fleet
        .input
        .as_deref()
        .and_then(|i| serde_json::from_str(i).ok())
        .unwrap_or_default();
    let stored = StoredPlan::from_input(&input).and_then(Result::ok);
    let plans = SdkFleetPlans::new(&in_region(config, region_of(&fleet.arn)));
    load_fleet_plan(input, &plans)
        .await
        .map_err(|e| match (e, stored) {
            (FleetPlanError::Invalid(errors), Some(stored)) => format!(
                "its stored plan ({}) is missing or is not the one it started with: {errors}",
                stored.uri()
            ),
            (FleetPlanError::Invalid(errors), None) => {
                format!("its input is not a valid fleet plan: {errors}")
            }
            (FleetPlanError::Aws(e), _) => format!("its stored plan could not be read: {e}"),
        })
}

/// The fleet's name as its input gives it (beside a stored plan's reference too).
fn fleet_name(fleet: &Execution) -> String {
    fleet
        .input
        .as_deref()
        .and_then(|i| serde_json::from_str::<Value>(i).ok())
        .and_then(|input| input["name"].as_str().map(str::to_owned))
        .unwrap_or_else(|| "?".to_owned())
}

/// Follows the fleet to its end; true when it completed (SUCCEEDED).
pub async fn watch(
    config: &SdkConfig,
    fleet_arn: &str,
    machines: &FleetMachineArgs,
    printer: &mut Printer,
) -> Result<bool, CliError> {
    let sfn = SdkExecutions::in_region(config, region_of(fleet_arn));
    let rollout = rollout_machine(config, machines).await?;
    let rollouts = SdkExecutions::in_region(config, region_of(&rollout));
    let mut shown: Option<Vec<CellRow>> = None;
    let mut shown_wait: Option<u64> = None;
    let mut ended = BTreeMap::new();
    // Read once: a stored plan is pinned by its digest, an inline one is the input.
    let started = sfn.describe(fleet_arn).await?;
    let valid = plan_of(config, &started).await;
    let name = match &valid {
        Ok(valid) => valid.fleet.name.clone(),
        Err(problem) => {
            printer.say(
                &format!(
                    "fleet {}: {problem}. Its cells are read from their executions (waves, \
                     clusters and cells not started yet are unknown); the fleet itself fails \
                     at its next step",
                    fleet_name(&started)
                ),
                json!({"type": "planUnreadable", "executionArn": fleet_arn, "reason": problem}),
            );
            fleet_name(&started)
        }
    };
    loop {
        let fleet = sfn.describe(fleet_arn).await?;
        let found = children(&rollouts, &rollout, &fleet, &mut ended).await?;
        let rows = match &valid {
            Ok(valid) => rows(valid, &found, fleet.running()),
            Err(_) => rows_from_executions(&found),
        };
        if shown.as_ref() != Some(&rows) {
            printer.say(
                &format!(
                    "fleet {name} ({}), {}:\n{}",
                    fleet.name,
                    fleet.status,
                    table_text(&rows)
                ),
                json!({"type": "fleet", "executionArn": fleet.arn, "fleet": name,
                       "status": fleet.status, "cells": rows.iter().map(CellRow::json).collect::<Vec<_>>()}),
            );
            shown = Some(rows.clone());
        }
        if fleet.running() {
            let events = sfn.events(fleet_arn).await?;
            let waiting = history::pending_wave_approval(&events).map(|(_, wave)| wave);
            if waiting.is_some() && waiting != shown_wait {
                let wave = waiting.unwrap_or_default();
                printer.say(
                    &format!(
                        "wave {wave} waits for a person: cluster-canary fleet approve {} (or reject {} --reason WHY)",
                        fleet.name, fleet.name
                    ),
                    json!({"type": "waveApprovalRequested", "wave": wave}),
                );
            }
            shown_wait = waiting;
        }
        if !fleet.running() {
            let promoted = rows
                .iter()
                .filter(|r| r.outcome.as_deref() == Some("promoted"))
                .count();
            let text = match fleet.status.as_str() {
                "SUCCEEDED" => format!("fleet {name} completed: {promoted} of {} cells promoted", rows.len()),
                status => format!(
                    "fleet {name} ended {status}{}: {promoted} of {} cells promoted; every other cell is at its baseline or restoring it (`cluster-canary watch <cell execution>`)",
                    fleet.error.as_deref().map(|e| format!(" ({e}: {})", fleet.cause.as_deref().unwrap_or(""))).unwrap_or_default(),
                    rows.len()
                ),
            };
            printer.say(
                &text,
                json!({"type": "outcome", "status": fleet.status, "error": fleet.error, "cause": fleet.cause,
                       "promoted": promoted}),
            );
            return Ok(fleet.status == "SUCCEEDED");
        }
        tokio::time::sleep(POLL).await;
    }
}

/// Answers the wave approval the fleet waits for.
pub async fn answer(
    config: &SdkConfig,
    fleet_arn: &str,
    rejection: Option<&str>,
    by: Option<&str>,
    printer: &mut Printer,
) -> Result<(), CliError> {
    check_reason(rejection)?;
    let sfn = SdkExecutions::in_region(config, region_of(fleet_arn));
    let fleet = sfn.describe(fleet_arn).await?;
    if !fleet.running() {
        return Err(CliError::NotFound(format!(
            "{fleet_arn} is {}: no wave waits for an approval",
            fleet.status
        )));
    }
    let Some((token, wave)) = history::pending_wave_approval(&sfn.events(fleet_arn).await?) else {
        return Err(CliError::NotFound(format!(
            "{fleet_arn} is running but no wave waits for an approval"
        )));
    };
    let by = who(by);
    let (said, then) = match send_answer(&sfn, &token, rejection, &by, "WaveRejected").await? {
        Answer::Approved => ("approved", "its cells start"),
        Answer::Rejected => ("rejected", "the fleet halts before it"),
    };
    printer.say(
        &format!("{said} wave {wave} of {}: {then}", fleet.name),
        json!({"type": said, "executionArn": fleet_arn, "wave": wave, "by": by}),
    );
    Ok(())
}

/// Stops the fleet, then its running cells (what the FleetSafetyNet rule does too: doing it
/// here does not depend on the rule), and waits until they ended.
pub async fn abort(
    config: &SdkConfig,
    fleet_arn: &str,
    reason: &str,
    timeout: Duration,
    machines: &FleetMachineArgs,
    printer: &mut Printer,
) -> Result<(), CliError> {
    let sfn = SdkExecutions::in_region(config, region_of(fleet_arn));
    let rollout = rollout_machine(config, machines).await?;
    let rollouts = SdkExecutions::in_region(config, region_of(&rollout));
    let fleet = sfn.describe(fleet_arn).await?;
    if fleet.running() {
        sfn.stop_as(fleet_arn, "Aborted", reason).await?;
        printer.say(
            &format!("fleet {} stopped: no new cell starts", fleet.name),
            json!({"type": "fleetStopped", "executionArn": fleet_arn}),
        );
    } else {
        printer.say(
            &format!(
                "fleet {} already ended {}; stopping any cell still running",
                fleet.name, fleet.status
            ),
            json!({"type": "fleetEnded", "executionArn": fleet_arn, "status": fleet.status}),
        );
    }
    // The cells are the fleet's child executions: stopping them needs no plan (a stored plan
    // deleted or replaced since the fleet started changes nothing here).
    let deadline = Instant::now() + timeout;
    let mut stopped = Vec::new();
    let mut ended = BTreeMap::new();
    let stopped_cells = loop {
        let cells = children(&rollouts, &rollout, &fleet, &mut ended).await?;
        let running: Vec<(&String, &Execution)> = cells
            .iter()
            .filter(|(_, (e, _))| e.running())
            .map(|(cell, (e, _))| (cell, e))
            .collect();
        if running.is_empty() {
            // Stopped here, by the fleet's own safety net (it acts on the fleet's stop) or by a
            // person: each one's safety net restores its baseline.
            let aborted: Vec<(String, String)> = cells
                .into_iter()
                .filter(|(_, (e, _))| e.status == "ABORTED")
                .map(|(cell, (e, _))| (cell, e.arn))
                .collect();
            for (cell, arn) in &aborted {
                if !stopped.iter().any(|(name, _)| name == cell) {
                    printer.say(
                        &format!(
                            "cell {cell} already stopped ({arn}), by the fleet's safety net or a person: its safety net is to restore its baseline"
                        ),
                        json!({"type": "cellStopped", "cell": cell, "executionArn": arn, "by": "another"}),
                    );
                }
            }
            break aborted;
        }
        for (cell, execution) in running {
            if !stopped.iter().any(|(name, _)| name == cell) {
                let cause = format!("fleet {} aborted: {reason}", fleet.name);
                match rollouts
                    .stop_as(&execution.arn, "FleetStopped", &cause)
                    .await
                {
                    Ok(()) => {}
                    // It ended meanwhile.
                    Err(e) if e.kind == canary_aws::AwsErrorKind::NotFound => {}
                    Err(e) => return Err(e.into()),
                }
                printer.say(
                    &format!(
                        "cell {cell} stopped ({}): its safety net is to restore its baseline",
                        execution.arn
                    ),
                    json!({"type": "cellStopped", "cell": cell, "executionArn": execution.arn}),
                );
                stopped.push((cell.clone(), execution.arn.clone()));
            }
        }
        if Instant::now() > deadline {
            return Err(CliError::TimedOut(format!(
                "cells of fleet {} still running after {} s: see `cluster-canary fleet watch {}`",
                fleet.name,
                timeout.as_secs(),
                fleet.name
            )));
        }
        tokio::time::sleep(POLL).await;
    };
    // As `abort` of a rollout: back only once each stopped cell reads its baseline again.
    for (cell, arn) in &stopped_cells {
        printer.say(
            &format!("cell {cell}: waiting for its safety net to restore the baseline"),
            json!({"type": "cellRestoring", "cell": cell, "executionArn": arn}),
        );
        let left = deadline.saturating_duration_since(Instant::now());
        wait_for_baseline(config, &rollouts, arn, left, printer).await?;
    }
    let names: Vec<&String> = stopped_cells.iter().map(|(name, _)| name).collect();
    printer.say(
        &format!(
            "no cell of fleet {} is running; {} stopped, each back at its baseline",
            fleet.name,
            stopped_cells.len()
        ),
        json!({"type": "aborted", "executionArn": fleet_arn, "stopped": names}),
    );
    Ok(())
}

/// How the fleet's cells ended so far, from their executions (one listing): `promoted`
/// (SUCCEEDED), `failed` (FAILED or TIMED_OUT), `stopped` (ABORTED: by the halt, an abort or a
/// person), `running`.
async fn cell_counts(
    rollouts: &SdkExecutions,
    rollout_machine: &str,
    fleet: &Execution,
) -> Result<Value, CliError> {
    let suffix = format!("-{}", child_suffix(&fleet.arn));
    let mut counts = BTreeMap::from([
        ("promoted", 0),
        ("failed", 0),
        ("stopped", 0),
        ("running", 0),
    ]);
    for child in rollouts
        .started_since(rollout_machine, fleet.started, None)
        .await?
        .into_iter()
        .filter(|child| child.arn.ends_with(&suffix))
    {
        let key = match child.status.as_str() {
            "SUCCEEDED" => "promoted",
            "FAILED" | "TIMED_OUT" => "failed",
            "ABORTED" => "stopped",
            _ => "running",
        };
        *counts.entry(key).or_default() += 1;
    }
    Ok(json!(counts))
}

/// How many cells started, by the tally of their executions.
fn tally_started(tally: &Value) -> u64 {
    ["promoted", "failed", "stopped", "running"]
        .iter()
        .filter_map(|key| tally[*key].as_u64())
        .sum()
}

pub async fn list(
    config: &SdkConfig,
    machines: &FleetMachineArgs,
    limit: usize,
    printer: &mut Printer,
) -> Result<(), CliError> {
    let machine = locate::fleet_state_machine(config, machines).await?;
    let sfn = SdkExecutions::in_region(config, region_of(&machine));
    let rollout = rollout_machine(config, machines).await?;
    let rollouts = SdkExecutions::in_region(config, region_of(&rollout));
    let mut rows = vec![[
        "NAME", "FLEET", "STATUS", "CELLS", "PROMOTED", "FAILED", "STOPPED", "AGE",
    ]
    .map(str::to_owned)
    .to_vec()];
    for arn in sfn.list(&machine, false, limit).await? {
        let execution = sfn.describe(&arn).await?;
        let plan: Value = execution
            .input
            .as_deref()
            .and_then(|i| serde_json::from_str(i).ok())
            .unwrap_or_default();
        // A completed fleet's tally is its output; a running, halted or stopped one has none:
        // its cells' executions tell.
        let tally = match execution
            .output
            .as_deref()
            .and_then(|o| serde_json::from_str::<Value>(o).ok())
            .map(|o| o["tally"].clone())
        {
            Some(tally) => tally,
            None => cell_counts(&rollouts, &rollout, &execution).await?,
        };
        let count = |key: &str| {
            tally[key]
                .as_u64()
                .map_or_else(|| "-".to_owned(), |n| n.to_string())
        };
        let (fleet, cells) = match plan_of(config, &execution).await {
            Ok(valid) => (valid.fleet.name, valid.fleet.cells.len().to_string()),
            // A fleet refused at its first state, or whose stored plan is gone: what its input
            // says, and how many cells started (`?`: more may not have).
            Err(_) => (
                fleet_name(&execution),
                match plan["cells"].as_array() {
                    Some(cells) => cells.len().to_string(),
                    None => format!("{}?", tally_started(&tally)),
                },
            ),
        };
        let status = match &execution.error {
            Some(error) if !execution.running() => format!("{} ({error})", execution.status),
            _ => execution.status.clone(),
        };
        printer.json(
            json!({"executionArn": arn, "name": execution.name, "fleet": fleet,
                            "status": execution.status, "error": execution.error,
                            "cells": cells.parse::<u64>().ok(),
                            "tally": tally, "startedAt": execution.started}),
        );
        rows.push(vec![
            execution.name.clone(),
            fleet,
            status,
            cells.clone(),
            count("promoted"),
            count("failed"),
            count("stopped"),
            duration_text((now() - execution.started).max(0.0) as u64),
        ]);
    }
    if rows.len() == 1 {
        printer.text(&format!("no fleets yet on {machine}"));
    } else {
        printer.text(&table(&rows));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn example() -> ValidFleet {
        let text = include_str!("../../examples/fleets/web-fleet.json");
        FleetPlan::parse(serde_json::from_str(text).expect("JSON")).expect("valid")
    }

    fn execution(status: &str, error: Option<&str>) -> Execution {
        Execution {
            arn: "arn".to_owned(),
            name: "n".to_owned(),
            status: status.to_owned(),
            input: None,
            output: None,
            started: 0.0,
            stopped: None,
            error: error.map(str::to_owned),
            cause: None,
        }
    }

    #[test]
    fn the_table_lists_every_cell_in_wave_order_with_what_became_of_it() {
        let valid = example();
        let mut children = BTreeMap::new();
        children.insert("use1-a".to_owned(), (execution("SUCCEEDED", None), None));
        children.insert(
            "euw1-a".to_owned(),
            (execution("FAILED", Some("CheckFailed")), None),
        );
        children.insert(
            "use1-b".to_owned(),
            (execution("RUNNING", None), Some("1/3 10%".to_owned())),
        );
        let rows = rows(&valid, &children, true);
        let ended = super::rows(&valid, &children, false);
        assert_eq!(ended[5].status, "not started");
        assert_eq!(
            table_text(&rows),
            "CELL    WAVE  CLUSTER                    STATUS     STEP     OUTCOME\n\
             use1-a  1     us-east-1/web-use1-a-v134  SUCCEEDED  -        promoted\n\
             euw1-a  2     eu-west-1/web-euw1-a-v134  FAILED     -        CheckFailed\n\
             use1-b  2     us-east-1/web-use1-b-v134  RUNNING    1/3 10%  -\n\
             euw1-b  3     eu-west-1/web-euw1-b-v134  waiting    -        -\n\
             use1-c  3     us-east-1/web-use1-c-v134  waiting    -        -\n\
             euw1-c  3     eu-west-1/web-euw1-c-v134  waiting    -        -"
        );
    }

    #[test]
    fn validation_names_each_problem_by_its_path() {
        let dir = std::env::temp_dir().join(format!("cc-fleet-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("dir");
        let path = dir.join("fleet.json");
        let mut plan: Value =
            serde_json::from_str(include_str!("../../examples/fleets/web-fleet.json"))
                .expect("JSON");
        plan["failureBudget"] = json!(9);
        plan["waves"][0] = json!({"cells": ["nowhere"]});
        std::fs::write(&path, plan.to_string()).expect("write");
        let error = validated(&path).expect_err("invalid").to_string();
        assert!(error.contains("failureBudget: is 9"), "{error}");
        assert!(
            error.contains("waves[0].cells[0]: `nowhere` is not one of the fleet's cells"),
            "{error}"
        );
        std::fs::remove_dir_all(&dir).expect("clean up");
    }
}
