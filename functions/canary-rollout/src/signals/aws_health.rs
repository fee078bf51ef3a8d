//! AWS Health's open issues in the rollout's Regions, for a plan that rolls back on them
//! (`awsHealth.onOpenIssue: rollBack`): each one fails the check, so the rollout rolls back at
//! the next check even when the issue's event did not reach the bake's watch (a plan without
//! one, a lost event). A plan that holds on them is held by its freeze reading instead.

use std::time::SystemTime;

use async_trait::async_trait;
use canary_aws::health_region_path;
use canary_core::analysis::{CheckOutcome, CheckVerdict};
use canary_core::health::HealthEvent;

use super::{Collected, HealthReads, SignalSource, Validated};
use crate::error::AnalysisError;

pub(super) struct AwsHealthIssues<'a> {
    pub reads: HealthReads<'a>,
    pub regions: Vec<String>,
}

#[async_trait]
impl SignalSource for AwsHealthIssues<'_> {
    /// Nothing to refuse: no record is no issue.
    async fn validate(&self, _now: SystemTime) -> Result<Validated, AnalysisError> {
        Ok(Validated::default())
    }

    async fn collect(&self, _now: SystemTime, _cluster: &str) -> Result<Collected, AnalysisError> {
        let mut outcomes = Vec::new();
        for region in &self.regions {
            let path = health_region_path(self.reads.path, region);
            outcomes.extend(
                self.reads
                    .api
                    .health_records(&path)
                    .await?
                    .iter()
                    .filter(|e| e.holds())
                    .map(|e| CheckOutcome::new(CheckVerdict::Fail, HealthEvent::reason_line(e))),
            );
        }
        if outcomes.is_empty() {
            outcomes.push(CheckOutcome::new(
                CheckVerdict::Pass,
                format!("AWS Health: no open issue in {}", self.regions.join(", ")),
            ));
        }
        Ok(Collected {
            outcomes,
            ..Collected::default()
        })
    }
}
