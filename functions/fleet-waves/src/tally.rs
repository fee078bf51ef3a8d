//! The fleet's running tally, kept in its state between waves: what each wave did, which
//! cells failed and why (the first [`MAX_NAMED_FAILURES`], the rest counted), and whether the
//! fleet halts. Bounded: at most [`MAX_TALLY_BYTES`] whatever the fleet's size.

use canary_aws::executions::Execution;
use canary_aws::{AlarmState, AlarmStateValue, WentToAlarm};
use canary_core::fleet::{ValidFleet, MAX_NAMED_FAILURES, MAX_TALLY_BYTES};
use canary_core::limits::{join_bounded, truncate};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::HALT_ERROR;

/// A failed cell's cause, cut to this.
const MAX_FAILURE_CAUSE_BYTES: usize = 400;
/// The halt message (the fleet's `FleetHalted` cause).
const MAX_MESSAGE_BYTES: usize = 4 * 1024;

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Tally {
    /// Waves done.
    pub wave: usize,
    pub waves: usize,
    pub cells: usize,
    pub failure_budget: u32,
    pub promoted: u32,
    pub failed: u32,
    /// Cells the fleet stopped when it halted (`onHalt: abortRunning`).
    pub stopped: u32,
    /// Cells a wave did not start because the budget was spent.
    pub not_started: u32,
    /// The first failed cells, with why.
    #[serde(default)]
    pub failures: Vec<Failure>,
    pub halt: bool,
    /// Why the fleet halts, naming each failed cell; empty while it goes on.
    #[serde(default)]
    pub message: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Failure {
    pub cell: String,
    pub wave: usize,
    pub execution: String,
    pub status: String,
    pub error: String,
    pub cause: String,
}

/// A promoted cell's rollback after the halt. Kept small in the fleet's state (a thousand of
/// them fit): `restored`, or the cell's execution name and the error that kept it promoted
/// (`<name>: <error>`; its cause is in shift-weights' log).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RolledBackCell {
    pub restored: bool,
    #[serde(default)]
    pub kept: Option<String>,
}

/// One Map iteration's result: the cell and what became of it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CellResult {
    pub cell: String,
    pub status: CellStatus,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum CellStatus {
    Promoted,
    /// Its execution ended otherwise: `judge` reads how.
    NotPromoted,
    NotStarted,
}

impl Tally {
    pub fn start(fleet: &ValidFleet) -> Tally {
        Tally {
            waves: fleet.waves.len(),
            cells: fleet.fleet.cells.len(),
            failure_budget: fleet.fleet.failure_budget,
            ..Tally::default()
        }
    }

    /// The wave's results into the tally. `described`: the execution of each cell that was not
    /// promoted, by cell (none: it never started).
    pub fn judge(
        mut self,
        fleet: &ValidFleet,
        results: &[CellResult],
        described: &[(String, Option<Execution>)],
    ) -> Tally {
        self.wave += 1;
        for result in results {
            match result.status {
                CellStatus::Promoted => self.promoted += 1,
                CellStatus::NotStarted => self.not_started += 1,
                CellStatus::NotPromoted => {
                    let execution = described
                        .iter()
                        .find(|(cell, _)| *cell == result.cell)
                        .and_then(|(_, e)| e.as_ref());
                    match execution {
                        Some(e) if e.error.as_deref() == Some(HALT_ERROR) => self.stopped += 1,
                        _ => {
                            self.failed += 1;
                            if self.failures.len() < MAX_NAMED_FAILURES {
                                self.failures
                                    .push(failure(&result.cell, self.wave, execution));
                            }
                        }
                    }
                }
            }
        }
        if self.failed > self.failure_budget || self.not_started > 0 {
            self.halt = true;
            self.message = self.halt_message(
                fleet,
                &format!(
                    "{} failed, more than the failure budget of {}",
                    cells(self.failed as usize),
                    self.failure_budget
                ),
            );
        }
        self.bounded()
    }

    /// After the soak: an alarm of the fleet's in ALARM (or missing) halts it, and so does a
    /// promoted cell's new cluster burning its SLOs' budget (`burns`, the slow pair's reasons).
    pub fn after_soak(
        mut self,
        fleet: &ValidFleet,
        alarms: &[AlarmState],
        went_to_alarm: &[WentToAlarm],
        burns: &[String],
    ) -> Tally {
        let Some(soak) = &fleet.fleet.soak else {
            return self;
        };
        let mut problems = burns.to_vec();
        for name in &soak.alarms {
            match alarms.iter().find(|a| &a.name == name) {
                None => problems.push(format!("alarm {name} does not exist")),
                Some(alarm) if in_alarm(alarm) => problems.push(format!(
                    "alarm {name} is in ALARM ({})",
                    truncate(&alarm.reason, 200)
                )),
                // Back to OK by the soak's end, but it fired while the wave's cells soaked.
                Some(_) => {
                    if let Some(went) = went_to_alarm.iter().find(|w| &w.name == name) {
                        problems.push(format!(
                            "alarm {name} went to ALARM during the soak, at {} ({})",
                            went.at,
                            truncate(&went.reason, 200)
                        ));
                    }
                }
            }
        }
        if !problems.is_empty() {
            self.halt = true;
            let why = format!(
                "the soak after wave {} failed: {}",
                self.wave,
                join_bounded(&problems, "; ", MAX_NAMED_FAILURES, 1024)
            );
            self.message = self.halt_message(fleet, &why);
        }
        self.bounded()
    }

    /// The promoted cells rolled back after the halt (`rollbackPromotedOnHalt`), into the
    /// halt's message: how many went back, and each that did not, with why; or, when the
    /// rollback failed as a whole (`failure`), that every promoted cell stays promoted.
    pub fn rolled_back(mut self, results: &[RolledBackCell], failure: Option<&Value>) -> Tally {
        let note = match failure {
            Some(failure) => format!(
                ". Promoted cells NOT rolled back (rollbackPromotedOnHalt failed: {}: {}): they stay promoted; `cluster-canary restore --force` undoes one",
                failure["Error"].as_str().unwrap_or("unknown"),
                truncate(failure["Cause"].as_str().unwrap_or(""), 300)
            ),
            None => {
                let back = results.iter().filter(|r| r.restored).count();
                let kept: Vec<String> = results
                    .iter()
                    .filter(|r| !r.restored)
                    .map(|r| truncate(r.kept.as_deref().unwrap_or("a cell"), 200))
                    .collect();
                let mut note = format!(
                    ". Promoted cells rolled back to their baselines (rollbackPromotedOnHalt): {back} of {}",
                    results.len()
                );
                if !kept.is_empty() {
                    note.push_str(&format!(
                        "; NOT rolled back: {}",
                        join_bounded(&kept, "; ", MAX_NAMED_FAILURES, 1024)
                    ));
                }
                note
            }
        };
        self.message = truncate(&format!("{}{note}", self.message), MAX_MESSAGE_BYTES);
        self.bounded()
    }

    /// A wave not approved (rejected, or timed out): the fleet halts before it.
    pub fn halted_before_wave(mut self, fleet: &ValidFleet, why: &str) -> Tally {
        self.halt = true;
        self.message = self.halt_message(fleet, &truncate(why, 1024));
        self.bounded()
    }

    fn halt_message(&self, fleet: &ValidFleet, why: &str) -> String {
        let named: Vec<String> = self
            .failures
            .iter()
            .map(|f| {
                format!(
                    "{} (wave {}, {} {}: {})",
                    f.cell,
                    f.wave,
                    f.status,
                    f.error,
                    truncate(&f.cause, 200)
                )
            })
            .collect();
        let cells = if named.is_empty() {
            String::new()
        } else {
            let more = self.failed as usize - named.len().min(self.failed as usize);
            let more = if more > 0 {
                format!(" and {more} more")
            } else {
                String::new()
            };
            format!("; failed cells: {}{more}", named.join("; "))
        };
        truncate(
            &format!(
                "fleet {} halted after wave {} of {}: {why}{cells}. Promoted: {}, failed: {}, stopped by the halt: {}, not started: {}",
                fleet.fleet.name,
                self.wave,
                self.waves,
                self.promoted,
                self.failed,
                self.stopped,
                self.not_started + self.never_reached(fleet),
            ),
            MAX_MESSAGE_BYTES,
        )
    }

    /// Cells of the waves after this one.
    fn never_reached(&self, fleet: &ValidFleet) -> u32 {
        fleet
            .waves
            .iter()
            .skip(self.wave)
            .map(|w| w.cells.len() as u32)
            .sum()
    }

    /// Never past [`MAX_TALLY_BYTES`]: failures are dropped from the end (they stay counted).
    fn bounded(mut self) -> Tally {
        while serde_json::to_vec(&self).map_or(0, |b| b.len()) > MAX_TALLY_BYTES
            && self.failures.pop().is_some()
        {}
        self
    }
}

/// Whether an alarm's state halts the fleet.
fn in_alarm(alarm: &AlarmState) -> bool {
    alarm.state == AlarmStateValue::Alarm
}

/// `1 cell`, `2 cells`.
pub(crate) fn cells(n: usize) -> String {
    format!("{n} cell{}", if n == 1 { "" } else { "s" })
}

fn failure(cell: &str, wave: usize, execution: Option<&Execution>) -> Failure {
    match execution {
        Some(e) => Failure {
            cell: cell.to_owned(),
            wave,
            execution: e.arn.clone(),
            status: e.status.clone(),
            error: truncate(e.error.as_deref().unwrap_or("none"), 128),
            cause: truncate(e.cause.as_deref().unwrap_or(""), MAX_FAILURE_CAUSE_BYTES),
        },
        None => Failure {
            cell: cell.to_owned(),
            wave,
            execution: String::new(),
            status: "UNKNOWN".to_owned(),
            error: "NotStarted".to_owned(),
            cause: "its execution could not be started or found".to_owned(),
        },
    }
}
