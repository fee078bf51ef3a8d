//! The soak's slow burn (`errorBudget` of the cells' plans): at the soak's end, each cell the
//! wave promoted whose plan judges the new cluster against its SLOs (the fast burn on) is judged
//! on the SRE workbook's slow pair, 6× over 6 h and 30 min (the long window no longer than the
//! soak): its new cluster's own bad requests, from its ALB target groups, over each request-based
//! SLO's goal. Burning at the rate in both windows halts the fleet, as an alarm of the soak does.
//! A burn too slow for a rollout's bake to show is what a soak is long enough to see.
//!
//! A wave may hold hundreds of cells and the function has two minutes: each SLO is read once per
//! Region however many cells name it, and the cells' metrics a few at a time.

use std::collections::btree_map::Entry;
use std::collections::BTreeMap;
use std::time::SystemTime;

use canary_aws::read_budgets;
use canary_core::analysis::CheckVerdict;
use canary_core::error_budget::{rollout_budgets, SloReading};
use canary_core::fleet::{child_name, child_suffix, ValidFleet};
use canary_core::plan::ValidPlan;
use canary_rollout::error::AnalysisError;
use canary_rollout::signals::burn_outcomes;
use futures_util::stream::{self, StreamExt, TryStreamExt};
use tracing::warn;

use crate::{children, FleetApis, FleetConfig, FleetError};

/// GetMetricData calls in flight at once (CloudWatch allows 50 a second by default).
const CONCURRENT_READS: usize = 8;

/// Why the wave's promoted cells burn their budget, one line each in the wave's order (empty:
/// none does).
pub(crate) async fn slow_burns(
    apis: &dyn FleetApis,
    config: &FleetConfig,
    fleet: &ValidFleet,
    wave: usize,
    fleet_execution: &str,
) -> Result<Vec<String>, FleetError> {
    let soak_seconds = fleet
        .fleet
        .soak
        .as_ref()
        .map_or(0, |s| u64::from(s.seconds));
    let judged: Vec<usize> =
        fleet
            .waves
            .get(wave.saturating_sub(1))
            .map(|w| w.cells.clone())
            .unwrap_or_default()
            .into_iter()
            .filter(|&i| {
                fleet.plans[i].plan.error_budget.as_ref().is_some_and(|b| {
                    !b.slos.is_empty() && b.slow_burn_windows(soak_seconds).is_some()
                })
            })
            .collect();
    if judged.is_empty() {
        return Ok(Vec::new());
    }
    // Each cell's child is named for the fleet's execution: one listing finds the promoted ones.
    let started = apis.describe(fleet_execution).await?.started;
    let promoted = children(apis, config, fleet_execution, started, Some("SUCCEEDED")).await?;
    let suffix = child_suffix(fleet_execution);
    let promoted: Vec<usize> = judged
        .into_iter()
        .filter(|&i| {
            let child = format!(":{}", child_name(&fleet.fleet.cells[i].name, &suffix));
            promoted.iter().any(|e| e.arn.ends_with(&child))
        })
        .collect();
    let now = SystemTime::now();
    let mut readings: BTreeMap<String, Vec<SloReading>> = BTreeMap::new();
    for &i in &promoted {
        let plan = &fleet.plans[i].plan;
        if let Some(section) = &plan.error_budget {
            if let Entry::Vacant(slot) = readings.entry(reading_key(&fleet.plans[i])) {
                let read = read_budgets(apis.slos(), section, &plan.cluster.region, now).await;
                // Not judged, and said: the soak's alarms still stand.
                for reading in &read {
                    if let SloReading::Unread { slo, error } = reading {
                        warn!(%slo, %error, "SLO not read: the soak's slow burn is not judged on it");
                    }
                }
                slot.insert(read);
            }
        }
    }
    let readings = &readings;
    let burns: Vec<Vec<String>> = stream::iter(promoted)
        .map(|i| async move {
            let plan = &fleet.plans[i].plan;
            let (Some(section), Some(slos)) = (
                &plan.error_budget,
                readings.get(&reading_key(&fleet.plans[i])),
            ) else {
                return Ok(Vec::new());
            };
            let Some(windows) = section.slow_burn_windows(soak_seconds) else {
                return Ok(Vec::new());
            };
            let budgets = rollout_budgets(section, slos);
            let outcomes = burn_outcomes(apis.metrics(), plan, budgets, windows, now)
                .await
                .map_err(|e| match e {
                    AnalysisError::Aws(e) => FleetError::Aws(e),
                    other => FleetError::InvalidInput(other.to_string()),
                })?;
            let name = &fleet.fleet.cells[i].name;
            Ok::<_, FleetError>(
                outcomes
                    .into_iter()
                    .filter(|o| o.verdict == CheckVerdict::Fail)
                    .map(|o| format!("cell {name}: {}", o.reason))
                    .collect(),
            )
        })
        .buffered(CONCURRENT_READS)
        .try_collect()
        .await?;
    Ok(burns.concat())
}

/// What one read of a cell's SLOs answers for: its Region and `errorBudget`.
fn reading_key(plan: &ValidPlan) -> String {
    serde_json::to_string(&(&plan.plan.cluster.region, &plan.plan.error_budget)).unwrap_or_default()
}
