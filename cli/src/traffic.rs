//! Reading a plan's traffic weights from AWS, with the traffic routers the rollout uses.

use aws_config::SdkConfig;
use canary_aws::SdkRoute53;
use canary_core::{RolloutPlan, TargetWeights};
use canary_rollout::clients::{process_env, TrafficClients};
use canary_rollout::traffic::{observe, routers, Observed};
use canary_rollout::Apis;

use crate::error::CliError;

/// The rollout's traffic clients, as shift-weights builds them. With `MANAGEMENT_ACCESS` (and
/// `MANAGEMENT_CLUSTER_NAME` or `MANAGEMENT_SECRET_ID`) set as the stack gives them to the
/// functions, `plan check` looks at GitOps targets' Secrets and `restore` writes their
/// annotations.
pub struct Traffic {
    clients: TrafficClients,
}

impl Traffic {
    pub fn new(config: &SdkConfig) -> Result<Self, CliError> {
        let clients =
            TrafficClients::from_config(config, &process_env).map_err(CliError::Invalid)?;
        Ok(Traffic { clients })
    }

    /// Step Functions calls go to `region` (a state machine's); the others where each
    /// target's ARN says.
    pub fn for_region(config: &SdkConfig, region: Option<&str>) -> Result<Self, CliError> {
        match region {
            Some(region) => Traffic::new(
                &config
                    .to_builder()
                    .region(aws_config::Region::new(region.to_owned()))
                    .build(),
            ),
            None => Traffic::new(config),
        }
    }

    /// Route 53 as the CLI reads it beyond the routers (a zone's TXT records).
    pub fn route53(&self) -> &SdkRoute53 {
        self.clients.route53()
    }

    pub fn apis(&self) -> Apis<'_> {
        self.clients.apis()
    }

    /// The weights of every target of `plan` as AWS holds them now, in plan order; a target
    /// that can no longer be read as a stable/canary pair is an error saying how.
    pub async fn weights(&self, plan: &RolloutPlan) -> Result<Vec<TargetWeights>, String> {
        let apis = self.apis();
        let mut weights = Vec::new();
        for router in routers(&apis, plan) {
            match observe(router.as_ref()).await.map_err(|e| e.to_string())? {
                Observed::Pair(pair) => weights.push(TargetWeights::new(router.key(), pair)),
                Observed::Reshaped(why) => return Err(format!("{}: {why}", router.label())),
            }
        }
        Ok(weights)
    }
}
