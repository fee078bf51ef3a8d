//! A cell's peers (`analysis.compare.peers`): when the fleet starts a cell whose plan compares
//! it with its peers, the cells already promoted in `scope` (its wave, or the fleet), in the
//! cell's region and account, go into its plan, with where each one's canary metrics are
//! (docs/fleets.md, "A cell against its peers").

use canary_core::analysis::compare::{Peer, PeerScope, PeerTargetGroup, MAX_PEERS};
use canary_core::fleet::{child_name, child_suffix, ValidFleet};
use canary_core::RolloutPlan;

use crate::{children, wave_children, FleetApis, FleetConfig, FleetError, WaveSoFar};

/// Cell `index`'s plan as the fleet starts it: its peers filled in when it compares with them.
pub(crate) async fn plan_with_peers(
    apis: &dyn FleetApis,
    config: &FleetConfig,
    fleet: &ValidFleet,
    index: usize,
    fleet_execution: &str,
    wave: &WaveSoFar,
) -> Result<RolloutPlan, FleetError> {
    let plan = fleet.plans[index].plan.clone();
    let Some(scope) = peers_of(&plan).map(|p| p.scope) else {
        return Ok(plan);
    };
    let promoted = match scope {
        PeerScope::Wave => {
            wave_children(apis, config, fleet, fleet_execution, wave, "SUCCEEDED").await?
        }
        PeerScope::Fleet => {
            let started = apis.describe(fleet_execution).await?.started;
            children(apis, config, fleet_execution, started, Some("SUCCEEDED")).await?
        }
    };
    let suffix = child_suffix(fleet_execution);
    let cell = &fleet.plans[index].plan;
    let peers: Vec<Peer> = fleet
        .fleet
        .cells
        .iter()
        .enumerate()
        .filter(|(i, _)| *i != index)
        .filter(|(_, peer)| {
            let name = format!(":{}", child_name(&peer.name, &suffix));
            promoted.iter().any(|e| e.arn.ends_with(&name))
        })
        .filter(|(i, _)| {
            // CloudWatch answers for one account and region: the cell's.
            let peer = &fleet.plans[*i].plan.cluster;
            peer.region == cell.cluster.region && peer.role_arn == cell.cluster.role_arn
        })
        .take(MAX_PEERS)
        .map(|(i, peer)| describe_peer(&peer.name, cell, &fleet.plans[i].plan))
        .collect();
    let mut peers = peers;
    // The cell's plan stays one Prepare accepts — within a plan's size budget, its comparison's
    // queries within one GetMetricData call — however many peers there are: the last give way.
    loop {
        let mut candidate = plan.clone();
        if let Some(slot) = candidate
            .analysis
            .as_mut()
            .and_then(|a| a.compare.as_mut())
            .and_then(|c| c.peers.as_mut())
        {
            slot.cells = peers.clone();
        }
        let accepted = serde_json::to_value(&candidate)
            .ok()
            .is_some_and(|value| RolloutPlan::parse(value).is_ok());
        if accepted || peers.is_empty() {
            return Ok(candidate);
        }
        peers.pop();
    }
}

fn peers_of(plan: &RolloutPlan) -> Option<&canary_core::analysis::compare::PeerComparison> {
    plan.analysis.as_ref()?.compare.as_ref()?.peers.as_ref()
}

/// Where a promoted peer's canary metrics are: its ALB targets' canary target groups, and for
/// each of the cell's sided CloudWatch, Prometheus and Datadog metrics the peer's canary value
/// of the same metric (its side dimension's value, its `{{cluster}}`).
fn describe_peer(name: &str, cell: &RolloutPlan, peer: &RolloutPlan) -> Peer {
    let alb = peer
        .traffic_targets
        .iter()
        .filter_map(|t| t.as_alb())
        .map(|a| PeerTargetGroup {
            listener_arn: a.listener_arn.clone(),
            canary_target_group_arn: a.canary_target_group_arn.clone(),
        })
        .collect();
    let peer_metrics = peer
        .analysis
        .as_ref()
        .and_then(|a| a.compare.as_ref())
        .map(|c| c.metrics.as_slice())
        .unwrap_or_default();
    let sides = cell
        .analysis
        .as_ref()
        .and_then(|a| a.compare.as_ref())
        .map(|c| c.metrics.as_slice())
        .unwrap_or_default()
        .iter()
        .filter_map(|m| {
            let theirs = peer_metrics.iter().find(|p| p.name == m.name)?;
            let query = theirs.prometheus.as_ref().or(theirs.datadog.as_ref());
            let value = match (&theirs.cloudwatch, query) {
                (Some(sided), _) => sided.canary.clone(),
                (None, Some(query)) => query.canary_value(&peer.cluster).to_owned(),
                (None, None) => return None,
            };
            Some((m.name.clone(), value))
        })
        .collect();
    Peer {
        name: name.to_owned(),
        alb,
        sides,
    }
}
