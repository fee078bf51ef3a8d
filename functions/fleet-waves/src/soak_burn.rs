//! The soak's slow burn (`errorBudget` of the cells' plans): at the soak's end, each cell the
//! wave promoted whose plan judges the new cluster against its SLOs (the fast burn on) is judged
//! on the SRE workbook's slow pair, 6× over 6 h and 30 min (the long window no longer than the
//! soak): its new cluster's own bad requests, from its ALB target groups, over each request-based
//! SLO's goal. Burning at the rate in both windows halts the fleet, as an alarm of the soak does.
//! A burn too slow for a rollout's bake to show is what a soak is long enough to see.

use std::time::SystemTime;

use canary_aws::read_budgets;
use canary_core::analysis::CheckVerdict;
use canary_core::error_budget::rollout_budgets;
use canary_core::fleet::{child_name, child_suffix, ValidFleet};
use canary_rollout::error::AnalysisError;
use canary_rollout::signals::burn_outcomes;

use crate::{children, FleetApis, FleetConfig, FleetError};

/// Why the wave's promoted cells burn their budget, one line each (empty: none does).
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
    let judged: Vec<usize> = fleet
        .waves
        .get(wave.saturating_sub(1))
        .map(|w| w.cells.clone())
        .unwrap_or_default()
        .into_iter()
        .filter(|&i| {
            let plan = &fleet.plans[i].plan;
            plan.error_budget
                .as_ref()
                .is_some_and(|b| !b.slos.is_empty() && b.slow_burn_windows(soak_seconds).is_some())
        })
        .collect();
    if judged.is_empty() {
        return Ok(Vec::new());
    }
    // Each cell's child is named for the fleet's execution: one listing finds the promoted ones.
    let started = apis.describe(fleet_execution).await?.started;
    let promoted = children(apis, config, fleet_execution, started, Some("SUCCEEDED")).await?;
    let suffix = child_suffix(fleet_execution);
    let mut burns = Vec::new();
    for i in judged {
        let name = &fleet.fleet.cells[i].name;
        let child = format!(":{}", child_name(name, &suffix));
        if !promoted.iter().any(|e| e.arn.ends_with(&child)) {
            continue;
        }
        let plan = &fleet.plans[i].plan;
        let Some(section) = &plan.error_budget else {
            continue;
        };
        let Some(windows) = section.slow_burn_windows(soak_seconds) else {
            continue;
        };
        let now = SystemTime::now();
        let readings = read_budgets(apis.slos(), section, &plan.cluster.region, now).await;
        let budgets = rollout_budgets(section, &readings);
        let outcomes = burn_outcomes(apis.metrics(), plan, budgets, windows, now)
            .await
            .map_err(|e| match e {
                AnalysisError::Aws(e) => FleetError::Aws(e),
                other => FleetError::InvalidInput(other.to_string()),
            })?;
        burns.extend(
            outcomes
                .into_iter()
                .filter(|o| o.verdict == CheckVerdict::Fail)
                .map(|o| format!("cell {name}: {}", o.reason)),
        );
    }
    Ok(burns)
}
