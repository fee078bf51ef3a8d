//! [`FleetApis`] over the AWS SDK: Step Functions for the cells, CloudWatch for the soak.

use async_trait::async_trait;
use canary_aws::executions::Execution;
use canary_aws::{
    AlarmState, AwsError, CloudWatchApi, Listed, SdkCloudWatch, SdkConfig, SdkExecutions,
};

use crate::FleetApis;

pub struct SdkFleetApis {
    executions: SdkExecutions,
    cloudwatch: SdkCloudWatch,
}

impl SdkFleetApis {
    pub fn new(config: &SdkConfig) -> Self {
        SdkFleetApis {
            executions: SdkExecutions::new(config),
            cloudwatch: SdkCloudWatch::new(config),
        }
    }
}

#[async_trait]
impl FleetApis for SdkFleetApis {
    async fn started_since(
        &self,
        state_machine_arn: &str,
        since: f64,
        status: Option<&str>,
    ) -> Result<Vec<Listed>, AwsError> {
        self.executions
            .started_since(state_machine_arn, since, status)
            .await
    }

    async fn describe(&self, execution_arn: &str) -> Result<Execution, AwsError> {
        self.executions.describe(execution_arn).await
    }

    async fn stop(&self, execution_arn: &str, error: &str, cause: &str) -> Result<(), AwsError> {
        self.executions.stop_as(execution_arn, error, cause).await
    }

    async fn alarms(&self, names: &[String]) -> Result<Vec<AlarmState>, AwsError> {
        self.cloudwatch.alarms_by_names(names).await
    }
}
