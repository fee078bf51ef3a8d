//! The new cluster's EKS add-ons (plan `clusterReadiness`), at every check of a bake as at the
//! gate before traffic: an add-on that is not ACTIVE (CoreDNS DEGRADED: half the name lookups
//! on the cluster fail) fails the check, naming it and its health issues. The gate's insights
//! are not read again: EKS refreshes them daily, not within a bake.

use std::time::SystemTime;

use async_trait::async_trait;
use canary_aws::{read_addons, AddonHealth};
use canary_core::analysis::{CheckOutcome, CheckVerdict};
use canary_core::cluster_readiness::{addon_problems, ClusterHealthReading, ClusterReadinessGate};
use canary_core::plan::ClusterRef;

use super::{Collected, SignalSource, Validated};
use crate::error::AnalysisError;

pub(super) struct EksAddons<'a> {
    pub api: &'a dyn AddonHealth,
    pub gate: &'a ClusterReadinessGate,
    pub cluster: &'a ClusterRef,
}

impl EksAddons<'_> {
    async fn read(&self) -> Result<Vec<CheckOutcome>, AnalysisError> {
        let (region, name) = (&self.cluster.region, &self.cluster.name);
        let addons = read_addons(self.api, region, name, self.gate).await?;
        let reading = ClusterHealthReading {
            insights: Vec::new(),
            addons,
        };
        let mut outcomes: Vec<CheckOutcome> = addon_problems(&reading)
            .into_iter()
            .map(|problem| CheckOutcome::new(CheckVerdict::Fail, problem))
            .collect();
        if outcomes.is_empty() && !reading.addons.is_empty() {
            let names: Vec<&str> = reading.addons.iter().map(|(n, _)| n.as_str()).collect();
            outcomes.push(CheckOutcome::new(
                CheckVerdict::Pass,
                format!("EKS add-ons ACTIVE: {}", names.join(", ")),
            ));
        }
        Ok(outcomes)
    }
}

#[async_trait]
impl SignalSource for EksAddons<'_> {
    /// The add-ons can be read (the role may, the cluster is this account's); what they say
    /// now is for `plan check` (the gate judges it before traffic).
    async fn validate(&self, _now: SystemTime) -> Result<Validated, AnalysisError> {
        let current = self
            .read()
            .await?
            .into_iter()
            .map(|outcome| outcome.reason)
            .collect();
        Ok(Validated {
            current,
            ..Validated::default()
        })
    }

    async fn collect(&self, _now: SystemTime, _cluster: &str) -> Result<Collected, AnalysisError> {
        Ok(Collected {
            outcomes: self.read().await?,
            ..Collected::default()
        })
    }
}
