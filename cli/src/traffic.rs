//! Reading a plan's traffic weights from AWS, with the traffic routers the rollout uses.

use aws_config::SdkConfig;
use canary_aws::route53::InSyncWait;
use canary_aws::{SdkAlb, SdkExecutions, SdkRoute53};
use canary_core::{RolloutPlan, TargetWeights};
use canary_rollout::traffic::{observe, routers, Observed};
use canary_rollout::Apis;

pub struct Traffic {
    alb: SdkAlb,
    route53: SdkRoute53,
    executions: SdkExecutions,
}

impl Traffic {
    pub fn new(config: &SdkConfig) -> Self {
        Traffic {
            alb: SdkAlb::new(config),
            route53: SdkRoute53::new(config, InSyncWait::default()),
            executions: SdkExecutions::new(config),
        }
    }

    /// Step Functions calls go to `region` (a state machine's); the others where each
    /// target's ARN says.
    pub fn for_region(config: &SdkConfig, region: Option<&str>) -> Self {
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

    pub fn apis(&self) -> Apis<'_> {
        Apis {
            alb: &self.alb,
            route53: &self.route53,
            executions: &self.executions,
            argocd: None,
        }
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
