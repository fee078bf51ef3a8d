//! The fleet's waves: explicit cell lists, or sizes that take the cells no wave names in the
//! fleet's order, spread across regions unless the plan says otherwise.

use std::collections::{BTreeMap, BTreeSet};

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::{check_concurrency, FleetPlan, ResolvedWave, DEFAULT_CONCURRENT_CELLS, MAX_WAVES};
use crate::plan::ValidPlan;
use crate::validate::Errors;

/// One wave: its cells by name, or its size.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Wave {
    /// The wave's cells, by name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cells: Option<Vec<String>>,
    /// How much of the fleet has moved when this wave ends: a number of cells (`1`) or a share
    /// of the fleet (`"25%"`, rounded up), counting the waves before it. The wave takes the
    /// cells no wave names, in the fleet's `order`. The last wave's size is the whole fleet.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub size: Option<WaveSize>,
    /// Cells started at once in this wave (1–100; default: the fleet's `maxConcurrentCells`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_concurrent_cells: Option<u32>,
}

/// A number of cells, or a share of the fleet such as `"25%"`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum WaveSize {
    Cells(u32),
    Share(String),
}

/// How the cells that no wave names are ordered into the `size` waves.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum Order {
    /// One cell of each region in turn (regions in the order their first cell is listed), so a
    /// wave spans as many regions as it can and a region's trouble shows early.
    #[default]
    SpreadRegions,
    /// As `cells` lists them.
    Listed,
}

/// Each wave's cells; every cell in exactly one wave.
pub(super) fn resolve(
    fleet: &FleetPlan,
    plans: &[ValidPlan],
    errors: &mut Errors,
) -> Vec<ResolvedWave> {
    let cells = &fleet.cells;
    let index: BTreeMap<&str, usize> = cells
        .iter()
        .enumerate()
        .map(|(i, c)| (c.name.as_str(), i))
        .collect();
    if fleet.waves.is_empty() {
        errors.push("waves", "at least one wave is required");
        return Vec::new();
    }
    if fleet.waves.len() > MAX_WAVES {
        errors.push(
            "waves",
            format!("at most {MAX_WAVES} waves, got {}", fleet.waves.len()),
        );
        return Vec::new();
    }
    // Explicit waves first: which cells they take.
    let mut taken: BTreeMap<usize, usize> = BTreeMap::new();
    let mut explicit: Vec<Option<Vec<usize>>> = Vec::with_capacity(fleet.waves.len());
    for (w, wave) in fleet.waves.iter().enumerate() {
        if let Some(max) = wave.max_concurrent_cells {
            check_concurrency(&format!("waves[{w}].maxConcurrentCells"), max, errors);
        }
        match (&wave.cells, &wave.size) {
            (Some(names), None) => {
                if names.is_empty() {
                    errors.push(
                        format!("waves[{w}].cells"),
                        "a wave needs at least one cell",
                    );
                }
                let mut members = Vec::with_capacity(names.len());
                for (c, name) in names.iter().enumerate() {
                    match index.get(name.as_str()) {
                        None => errors.push(
                            format!("waves[{w}].cells[{c}]"),
                            format!("`{name}` is not one of the fleet's cells"),
                        ),
                        Some(&i) => match taken.insert(i, w) {
                            Some(first) => errors.push(
                                format!("waves[{w}].cells[{c}]"),
                                format!("cell `{name}` is already in waves[{first}]"),
                            ),
                            None => members.push(i),
                        },
                    }
                }
                explicit.push(Some(members));
            }
            (None, Some(_)) => explicit.push(None),
            _ => {
                errors.push(
                    format!("waves[{w}]"),
                    "needs exactly one of `cells` (names) or `size` (a number of cells or a share such as \"25%\")",
                );
                explicit.push(Some(Vec::new()));
            }
        }
    }
    // The rest, in the fleet's order, for the size waves.
    let rest: Vec<usize> = ordered(fleet, plans)
        .into_iter()
        .filter(|i| !taken.contains_key(i))
        .collect();
    let mut rest = rest.into_iter();
    let total = cells.len();
    let mut moved = 0usize;
    let mut previous_target = 0usize;
    let mut waves = Vec::with_capacity(fleet.waves.len());
    for (w, (wave, members)) in fleet.waves.iter().zip(explicit).enumerate() {
        let members = match members {
            Some(members) => members,
            None => {
                let Some(target) = wave
                    .size
                    .as_ref()
                    .and_then(|size| size_target(size, total, &format!("waves[{w}].size"), errors))
                else {
                    continue;
                };
                if target <= previous_target.max(moved) {
                    errors.push(
                        format!("waves[{w}].size"),
                        format!(
                            "comes to {target} of {total} cells moved, but {} are moved before this wave: sizes count the whole fleet and must grow",
                            previous_target.max(moved)
                        ),
                    );
                    continue;
                }
                previous_target = target;
                let members: Vec<usize> = rest.by_ref().take(target - moved).collect();
                if members.is_empty() {
                    errors.push(
                        format!("waves[{w}].size"),
                        "leaves this wave no cell: every cell is in an earlier wave or named by one",
                    );
                    continue;
                }
                members
            }
        };
        moved += members.len();
        waves.push(ResolvedWave {
            cells: members,
            max_concurrent_cells: wave
                .max_concurrent_cells
                .or(fleet.max_concurrent_cells)
                .unwrap_or(DEFAULT_CONCURRENT_CELLS),
        });
    }
    let left: BTreeSet<&str> = (0..total)
        .filter(|i| !waves.iter().any(|w| w.cells.contains(i)))
        .map(|i| cells[i].name.as_str())
        .collect();
    if !left.is_empty() && errors.0.is_empty() {
        errors.push(
            "waves",
            format!(
                "leave out cells {}: name them in a wave, or end with a wave of size \"100%\"",
                left.into_iter()
                    .map(|n| format!("`{n}`"))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        );
    }
    waves
}

/// How many cells of `total` have moved when a wave of this size ends.
fn size_target(size: &WaveSize, total: usize, path: &str, errors: &mut Errors) -> Option<usize> {
    match size {
        WaveSize::Cells(0) => {
            errors.push(path, "a wave moves at least one cell");
            None
        }
        WaveSize::Cells(n) => Some((*n as usize).min(total)),
        WaveSize::Share(text) => {
            let percent = text
                .strip_suffix('%')
                .and_then(|n| n.parse::<u32>().ok())
                .filter(|p| (1..=100).contains(p));
            match percent {
                Some(p) => Some((p as usize * total).div_ceil(100)),
                None => {
                    errors.push(
                        path,
                        format!("`{text}` is not a share such as \"25%\" (1% to 100%)"),
                    );
                    None
                }
            }
        }
    }
}

/// The cells in the fleet's order.
fn ordered(fleet: &FleetPlan, plans: &[ValidPlan]) -> Vec<usize> {
    let all: Vec<usize> = (0..fleet.cells.len()).collect();
    if fleet.order == Order::Listed || plans.len() != fleet.cells.len() {
        return all;
    }
    let mut regions: Vec<(&str, Vec<usize>)> = Vec::new();
    for i in all {
        let region = plans[i].plan.cluster.region.as_str();
        match regions.iter_mut().find(|(r, _)| *r == region) {
            Some((_, members)) => members.push(i),
            None => regions.push((region, vec![i])),
        }
    }
    let longest = regions.iter().map(|(_, m)| m.len()).max().unwrap_or(0);
    (0..longest)
        .flat_map(|round| {
            regions
                .iter()
                .filter_map(move |(_, m)| m.get(round).copied())
        })
        .collect()
}
