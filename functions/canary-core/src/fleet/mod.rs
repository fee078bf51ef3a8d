//! The fleet plan: many cells, each a rollout of its own, moved in waves with one failure
//! budget and one stop for the whole fleet (docs/fleets.md). [`FleetPlan::parse`] is the only
//! way in: like a rollout plan, it rejects unknown fields and reports every problem at once,
//! each at its JSON path (`cells[3].values.steps[1].weight`, `waves[1].cells[0]`), and every
//! cell's rollout plan is validated as Prepare validates a rollout's.
//!
//! A cell is a whole rollout plan (`plan`), or the plan's `template` with the cell's own
//! fields merged over it (`values`, a JSON merge patch, RFC 7396: objects merge field by field,
//! anything else the cell gives replaces the template's, `null` removes it), so a cell gives only
//! what differs: `{"cluster": {"name": "web-use1-a-v134"}}` over the template's `cluster`.
//!
//! A plan travels in the fleet execution's state up to [`MAX_FLEET_PLAN_BYTES`]; a larger one
//! (up to [`MAX_STORED_FLEET_PLAN_BYTES`]) is stored in S3 and given by reference
//! ([`StoredPlan`]).

mod stored;
mod waves;

use std::collections::{BTreeMap, HashMap};

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::plan::{RolloutPlan, ValidPlan};
use crate::validate::{Errors, PlanError, PlanErrors};

pub use stored::{must_be_stored, StoredPlan, MAX_STORED_FLEET_PLAN_BYTES, STORED_PLAN_FIELD};
pub use waves::{Order, Wave, WaveSize};

/// A fleet plan's size as compact JSON. The plan travels in the fleet execution's state for
/// the whole fleet, beside the running tally (at most [`MAX_TALLY_BYTES`]) and one wave's cell
/// list and results (at most [`MAX_FLEET_CELLS`] × (44 + [`MAX_CELL_RESULT_BYTES`]) bytes):
/// 96 + 16 + 113 KiB, under Step Functions' 256 KiB (docs/architecture.md, "Fleets at scale");
/// each of a wave's child workflows gets the plan and its cell's name. A larger plan is stored
/// ([`StoredPlan`]): the state then carries its reference and the few fields the state machine
/// reads.
pub const MAX_FLEET_PLAN_BYTES: usize = 96 * 1024;
/// Cells in one fleet.
pub const MAX_FLEET_CELLS: usize = 1000;
/// Waves in one fleet.
pub const MAX_WAVES: usize = 50;
/// One Map iteration's result in the fleet state (`{"cell": <32>, "status": "notPromoted"}`).
pub const MAX_CELL_RESULT_BYTES: usize = 72;
/// The fleet's running tally, with the failed cells it names.
pub const MAX_TALLY_BYTES: usize = 16 * 1024;
/// Failed cells named one by one in the tally and the `FleetHalted` cause; beyond, counted.
pub const MAX_NAMED_FAILURES: usize = 10;
/// Cells started at once in a wave. The Distributed Map that runs a wave could run 10,000;
/// each running cell is a rollout making its own Step Functions and Lambda calls, and 100 keeps
/// a wave's start (100 StartExecution calls) and its running cells well within an account's
/// Step Functions quotas (docs/architecture.md, "Fleets at scale").
pub const MAX_CONCURRENT_CELLS: u32 = 100;
/// Cells started at once unless the wave or the fleet says otherwise.
pub const DEFAULT_CONCURRENT_CELLS: u32 = 10;
/// A soak between waves.
pub const MAX_SOAK_SECONDS: u32 = 86_400;
/// Alarms a soak reads.
pub const MAX_SOAK_ALARMS: usize = 100;
/// A cell name: it ends up in the child execution's name (80 characters at most, with the
/// fleet's 11-character suffix) and in events.
pub const MAX_CELL_NAME: usize = 32;

/// Many cells, each a rollout from its old cluster to its new one, in waves.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[schemars(title = "cluster-canary fleet plan")]
pub struct FleetPlan {
    /// Optional reference to this schema, for editors. Ignored.
    #[serde(rename = "$schema", default, skip_serializing_if = "Option::is_none")]
    pub schema: Option<String>,
    /// The fleet's name (1–32 lowercase letters, digits, `-`), e.g. `web-eks-1-34`.
    pub name: String,
    /// Rollout plan fields every cell given by `values` starts from (any rollout plan field).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "Option<Map<String, Value>>")]
    pub template: Option<Map<String, Value>>,
    /// The cells: each one rollout, from the clusters that serve its traffic to its new cluster.
    pub cells: Vec<Cell>,
    /// In order: each wave starts when the one before it ended (and soaked).
    pub waves: Vec<Wave>,
    /// Cells started at once in a wave unless the wave says otherwise (1–100, default 10).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_concurrent_cells: Option<u32>,
    /// How many cells may fail before the fleet halts (default 0: the first failure halts it).
    #[serde(default, deserialize_with = "whole_cells")]
    pub failure_budget: u32,
    /// After each wave but the last: wait, then read these alarms; one in ALARM halts the fleet.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub soak: Option<Soak>,
    /// How cells that no wave names explicitly are ordered into the `size` waves.
    #[serde(default)]
    pub order: Order,
    /// What happens to the cells still running when the fleet halts.
    #[serde(default)]
    pub on_halt: OnHalt,
    /// Waves that wait for a person's approval before they start.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub approval: Option<FleetApproval>,
    /// When the fleet halts, also put the cells it promoted back at their baselines (each
    /// target still at its promotion; one changed since is left and reported). Default false:
    /// promoted cells stay promoted. Not with cells that retire their old cluster.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub rollback_promoted_on_halt: bool,
}

/// A person between waves: `cluster-canary fleet approve` (or `reject`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct FleetApproval {
    /// The waves (numbered from 1) that wait for an approval before they start.
    pub before_waves: Vec<usize>,
    /// How long a wave waits for an answer before the fleet halts (60–86400, default 86400).
    #[serde(default = "default_approval_timeout")]
    pub timeout_seconds: u32,
}

/// A count of cells, said as such when it is anything else (`"50%"`, `1.5`, `-1`): serde's own
/// message (`expected u32`) tells a person nothing about the fleet.
fn whole_cells<'de, D: serde::Deserializer<'de>>(deserializer: D) -> Result<u32, D::Error> {
    let value = Value::deserialize(deserializer)?;
    value
        .as_u64()
        .and_then(|n| u32::try_from(n).ok())
        .ok_or_else(|| {
            serde::de::Error::custom(format!(
                "must be a whole number of cells (0 up to one fewer than the fleet's cells), got {value}; a share \
                 of the fleet such as \"50%\" is not supported"
            ))
        })
}

fn default_approval_timeout() -> u32 {
    MAX_APPROVAL_SECONDS
}

/// The longest a wave waits for a person: as long as a rollout's step may.
pub const MAX_APPROVAL_SECONDS: u32 = crate::limits::MAX_APPROVAL_TIMEOUT_SECONDS as u32;

/// One cell: its name and its rollout plan.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Cell {
    /// The cell's name (1–32 lowercase letters, digits, `-`), e.g. `use1-a`.
    pub name: String,
    /// The cell's whole rollout plan.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "Option<RolloutPlan>")]
    pub plan: Option<Value>,
    /// The cell's fields merged over the fleet's `template` (JSON merge patch, RFC 7396:
    /// objects merge field by field; arrays and values replace the template's; `null` removes).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "Option<Map<String, Value>>")]
    pub values: Option<Map<String, Value>>,
}

/// The soak between waves.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Soak {
    /// How long to wait after a wave ends before the next one starts (0–86400).
    pub seconds: u32,
    /// CloudWatch alarms (names, in the fleet's region; composite alarms too) read at the end
    /// of the soak, with their history since it began: one in ALARM, or one that went to ALARM
    /// during the soak, halts the fleet.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub alarms: Vec<String>,
}

/// What a halt does to the cells still running.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum OnHalt {
    /// Let them finish (each promotes or rolls back on its own); start no new cell.
    #[default]
    FinishRunning,
    /// Stop them: each one's safety net puts its baseline back.
    AbortRunning,
}

/// A fleet plan that passed [`FleetPlan::parse`]: its cells' plans and its waves resolved.
#[derive(Debug, Clone, PartialEq)]
pub struct ValidFleet {
    pub fleet: FleetPlan,
    /// Each cell's rollout plan, in the order of `cells`.
    pub plans: Vec<ValidPlan>,
    /// Each wave's cells (indices into `cells`) and how many run at once.
    pub waves: Vec<ResolvedWave>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResolvedWave {
    pub cells: Vec<usize>,
    pub max_concurrent_cells: u32,
}

impl ValidFleet {
    /// Whether wave `number` (from 1) waits for a person, and how long.
    pub fn approval_before(&self, number: usize) -> Option<u32> {
        self.fleet
            .approval
            .as_ref()
            .filter(|a| a.before_waves.contains(&number))
            .map(|a| a.timeout_seconds)
    }

    /// The cell's index by name.
    pub fn cell(&self, name: &str) -> Option<usize> {
        self.fleet.cells.iter().position(|c| c.name == name)
    }
}

impl FleetPlan {
    /// Deserializes and validates a fleet plan, every cell's rollout plan with it. Errors name
    /// fields by JSON path.
    ///
    /// This is a plan given inline, in the fleet execution's input: at most
    /// [`MAX_FLEET_PLAN_BYTES`].
    pub fn parse(value: Value) -> Result<ValidFleet, PlanErrors> {
        Self::parse_within(
            value,
            MAX_FLEET_PLAN_BYTES,
            "for a plan in the fleet execution's input (it travels in the fleet's state, capped \
             at 256 KiB): move what the cells share into `template`, or start it with \
             `cluster-canary fleet start`, which stores a larger plan in the stack's FleetPlanBucket",
        )
    }

    /// As [`FleetPlan::parse`], for a plan that is stored ([`StoredPlan`]) when it is too large
    /// for the fleet's state: at most [`MAX_STORED_FLEET_PLAN_BYTES`].
    pub fn parse_storable(value: Value) -> Result<ValidFleet, PlanErrors> {
        Self::parse_within(
            value,
            MAX_STORED_FLEET_PLAN_BYTES,
            "of a stored fleet plan: move what the cells share into `template`, or split the fleet",
        )
    }

    /// The plan, refused before it is read when it is over `cap` bytes (`advice` says why the
    /// cap and what to do).
    fn parse_within(value: Value, cap: usize, advice: &str) -> Result<ValidFleet, PlanErrors> {
        let size = compact_size(&value);
        if size > cap {
            return Err(one_error(
                "fleet",
                format!(
                    "is {size} bytes as compact JSON, more than the limit of {cap} bytes {advice}"
                ),
            ));
        }
        if !value.is_object() {
            return Err(one_error("fleet", "must be a JSON object".to_owned()));
        }
        let fleet: FleetPlan = serde_path_to_error::deserialize(value).map_err(|e| {
            let path = e.path().to_string();
            one_error(
                if path == "." { "fleet" } else { &path },
                e.into_inner().to_string(),
            )
        })?;
        let mut errors = Errors::default();
        fleet.validate_names(&mut errors);
        let plans = fleet.cell_plans(&mut errors);
        if plans.len() == fleet.cells.len() {
            check_distinct_traffic(&fleet, &plans, &mut errors);
            check_rollback_on_halt(&fleet, &plans, &mut errors);
        }
        // Without cells there is nothing for the waves to take: `cells` says so alone.
        let waves = match fleet.cells.is_empty() {
            true => Vec::new(),
            false => waves::resolve(&fleet, &plans, &mut errors),
        };
        if errors.0.is_empty() {
            Ok(ValidFleet {
                fleet,
                plans,
                waves,
            })
        } else {
            Err(PlanErrors(errors.0))
        }
    }

    fn validate_names(&self, errors: &mut Errors) {
        if !is_cell_name(&self.name) {
            errors.push(
                "name",
                format!(
                    "`{}` is not a fleet name (1–{MAX_CELL_NAME} lowercase letters, digits or '-', \
                     starting and ending with a letter or digit)",
                    self.name
                ),
            );
        }
        if self.cells.is_empty() {
            errors.push("cells", "at least one cell is required");
        } else if self.cells.len() > MAX_FLEET_CELLS {
            errors.push(
                "cells",
                format!("at most {MAX_FLEET_CELLS} cells, got {}", self.cells.len()),
            );
        }
        let mut seen: HashMap<&str, usize> = HashMap::new();
        for (i, cell) in self.cells.iter().enumerate() {
            if !is_cell_name(&cell.name) {
                errors.push(
                    format!("cells[{i}].name"),
                    format!(
                        "`{}` is not a cell name (1–{MAX_CELL_NAME} lowercase letters, digits or '-', \
                         starting and ending with a letter or digit)",
                        cell.name
                    ),
                );
            }
            if let Some(first) = seen.insert(&cell.name, i) {
                errors.push(
                    format!("cells[{i}].name"),
                    format!("`{}` is already the name of cells[{first}]", cell.name),
                );
            }
        }
        // A budget of every cell would never halt: a fleet whose every cell failed would
        // complete, promoting none.
        if !self.cells.is_empty() && self.failure_budget as usize >= self.cells.len() {
            errors.push(
                "failureBudget",
                format!(
                    "is {} but the fleet has {} cells: at most {} (with a budget of every cell, \
                     a fleet whose every cell failed would complete)",
                    self.failure_budget,
                    self.cells.len(),
                    self.cells.len() - 1
                ),
            );
        }
        if let Some(max) = self.max_concurrent_cells {
            check_concurrency("maxConcurrentCells", max, errors);
        }
        if let Some(approval) = &self.approval {
            let waves = self.waves.len();
            let mut seen = Vec::new();
            for (i, wave) in approval.before_waves.iter().enumerate() {
                if !(1..=waves).contains(wave) {
                    errors.push(
                        format!("approval.beforeWaves[{i}]"),
                        format!("the fleet has waves 1 to {waves}, not {wave}"),
                    );
                } else if seen.contains(wave) {
                    errors.push(
                        format!("approval.beforeWaves[{i}]"),
                        format!("wave {wave} is named twice"),
                    );
                }
                seen.push(*wave);
            }
            if !(60..=MAX_APPROVAL_SECONDS).contains(&approval.timeout_seconds) {
                errors.push(
                    "approval.timeoutSeconds",
                    format!(
                        "must be from 60 to {MAX_APPROVAL_SECONDS}, got {}",
                        approval.timeout_seconds
                    ),
                );
            }
        }
        if let Some(soak) = &self.soak {
            if soak.seconds > MAX_SOAK_SECONDS {
                errors.push(
                    "soak.seconds",
                    format!("at most {MAX_SOAK_SECONDS}, got {}", soak.seconds),
                );
            }
            if soak.alarms.len() > MAX_SOAK_ALARMS {
                errors.push(
                    "soak.alarms",
                    format!(
                        "at most {MAX_SOAK_ALARMS} alarms, got {}",
                        soak.alarms.len()
                    ),
                );
            }
            for (i, alarm) in soak.alarms.iter().enumerate() {
                if alarm.is_empty() || alarm.len() > 255 {
                    errors.push(
                        format!("soak.alarms[{i}]"),
                        "an alarm name is 1–255 characters",
                    );
                }
            }
        }
    }

    /// Every cell's rollout plan, validated; empty where any cell's is invalid.
    fn cell_plans(&self, errors: &mut Errors) -> Vec<ValidPlan> {
        let mut plans = Vec::with_capacity(self.cells.len());
        for (i, cell) in self.cells.iter().enumerate() {
            let (source, value) = match (&cell.plan, &cell.values) {
                (Some(plan), None) => ("plan", plan.clone()),
                (None, Some(values)) => match &self.template {
                    Some(template) => ("values", over(template, values)),
                    None => {
                        errors.push(
                            format!("cells[{i}].values"),
                            "needs the fleet's `template` to fill in (or give the whole `plan`)",
                        );
                        continue;
                    }
                },
                _ => {
                    errors.push(
                        format!("cells[{i}]"),
                        "needs exactly one of `plan` (a whole rollout plan) or `values` (fields over `template`)",
                    );
                    continue;
                }
            };
            // A fleet is often started before its cells' clusters are created: they are waited
            // for as for CREATING, not refused at once. Set before the plan is checked, so its
            // size cap counts it.
            let mut value = value;
            if let Some(cluster) = value.get_mut("cluster").and_then(Value::as_object_mut) {
                cluster.insert("waitForCreation".to_owned(), Value::Bool(true));
            }
            match RolloutPlan::parse(value) {
                Ok(plan) => plans.push(plan),
                Err(PlanErrors(problems)) => {
                    for problem in problems {
                        let message = match &cell.values {
                            Some(values) => said_of_a_null(values, &problem.path, problem.message),
                            None => problem.message,
                        };
                        let path = if problem.path == "plan" {
                            format!("cells[{i}].{source}")
                        } else {
                            format!("cells[{i}].{source}.{}", problem.path)
                        };
                        errors.push(path, message);
                    }
                }
            }
        }
        plans
    }
}

/// The cell's rollout plan: `values` merged over the `template` (RFC 7396).
fn over(template: &Map<String, Value>, values: &Map<String, Value>) -> Value {
    let mut plan = Value::Object(template.clone());
    json_patch::merge(&mut plan, &Value::Object(values.clone()));
    plan
}

/// A field the plan lacks because the cell's `values` set it to `null` (which, in a merge patch,
/// deletes it from the template) is said to be that, not only "missing".
fn said_of_a_null(values: &Map<String, Value>, path: &str, message: String) -> String {
    let Some(field) = message
        .strip_prefix("missing field `")
        .and_then(|rest| rest.strip_suffix('`'))
    else {
        return message;
    };
    // `plan` is the root; deeper paths are object keys (an index, `[2]`, is a list the cell
    // replaces whole, so no `null` of the cell's can be inside it).
    let mut at = Some(values);
    if path != "plan" {
        for key in path.split('.') {
            at = at
                .and_then(|object| object.get(key))
                .and_then(Value::as_object);
        }
    }
    match at.and_then(|object| object.get(field)) {
        Some(Value::Null) => format!(
            "{message}: the cell's `null` removed the template's `{field}` (in `values`, a \
             `null` deletes a field; leave it out to keep the template's)"
        ),
        _ => message,
    }
}

/// A plan's size as compact JSON (what Step Functions counts).
pub fn compact_size(value: &Value) -> usize {
    serde_json::to_vec(value).map_or(usize::MAX, |bytes| bytes.len())
}

/// Two cells must not move the same traffic, nor bring in the same cluster: their rollouts
/// would refuse each other at Prepare, or undo each other.
fn check_distinct_traffic(fleet: &FleetPlan, plans: &[ValidPlan], errors: &mut Errors) {
    let mut targets: BTreeMap<String, usize> = BTreeMap::new();
    let mut clusters: BTreeMap<(Option<String>, String, String), usize> = BTreeMap::new();
    for (i, plan) in plans.iter().enumerate() {
        let cluster = &plan.plan.cluster;
        let identity = (
            cluster
                .role_arn
                .as_deref()
                .and_then(crate::arn::account_of)
                .map(str::to_owned),
            cluster.region.clone(),
            cluster.name.clone(),
        );
        if let Some(first) = clusters.insert(identity, i) {
            errors.push(
                format!("cells[{i}]"),
                format!(
                    "brings in cluster {} ({}), as cell `{}` does",
                    cluster.name, cluster.region, fleet.cells[first].name
                ),
            );
        }
        for target in &plan.plan.traffic_targets {
            if let Some(first) = targets.insert(target.key(), i).filter(|first| *first != i) {
                errors.push(
                    format!("cells[{i}]"),
                    format!(
                        "shifts the same traffic as cell `{}` ({})",
                        fleet.cells[first].name,
                        target.key()
                    ),
                );
            }
        }
    }
}

/// A promotion can be undone only while the old cluster still serves: a cell that retires it
/// (detaches its target groups, deregisters it) cannot go back.
fn check_rollback_on_halt(fleet: &FleetPlan, plans: &[ValidPlan], errors: &mut Errors) {
    if !fleet.rollback_promoted_on_halt {
        return;
    }
    let retiring: Vec<&str> = fleet
        .cells
        .iter()
        .zip(plans)
        .filter(|(_, plan)| plan.plan.retire.is_some())
        .map(|(cell, _)| cell.name.as_str())
        .collect();
    if !retiring.is_empty() {
        errors.push(
            "rollbackPromotedOnHalt",
            format!(
                "cells {} retire their old cluster after promotion: a halt could not send their traffic back; drop `retire` or this",
                retiring.iter().map(|c| format!("`{c}`")).collect::<Vec<_>>().join(", ")
            ),
        );
    }
}

fn check_concurrency(path: &str, max: u32, errors: &mut Errors) {
    if !(1..=MAX_CONCURRENT_CELLS).contains(&max) {
        errors.push(
            path,
            format!("must be from 1 to {MAX_CONCURRENT_CELLS}, got {max}"),
        );
    }
}

fn one_error(path: &str, message: String) -> PlanErrors {
    PlanErrors(vec![PlanError {
        path: path.to_owned(),
        message,
    }])
}

/// `<10 hex of sha256(fleet execution ARN)>`: what every child execution of one fleet run ends
/// with, so the fleet (and the CLI) find a run's cells by name alone.
pub fn child_suffix(fleet_execution_arn: &str) -> String {
    use sha2::{Digest, Sha256};
    Sha256::digest(fleet_execution_arn.as_bytes())
        .iter()
        .take(5)
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// `<cell>-<suffix>`: at most 32 + 11 characters, within Step Functions' 80.
pub fn child_name(cell: &str, suffix: &str) -> String {
    format!("{cell}-{suffix}")
}

/// Lowercase letters, digits and `-`, starting and ending with a letter or digit.
pub fn is_cell_name(name: &str) -> bool {
    let edges_ok =
        |c: Option<char>| c.is_some_and(|c| c.is_ascii_lowercase() || c.is_ascii_digit());
    (1..=MAX_CELL_NAME).contains(&name.len())
        && name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
        && edges_ok(name.chars().next())
        && edges_ok(name.chars().last())
}

#[cfg(test)]
mod tests;
