//! Step Functions executions, for refusing a second rollout on the same traffic.

use async_trait::async_trait;
use aws_config::SdkConfig;
use aws_sdk_sfn as sfn;

use crate::error::AwsError;

#[async_trait]
pub trait ExecutionsApi: Send + Sync {
    /// ARNs of the RUNNING executions of a state machine.
    async fn running_executions(&self, state_machine_arn: &str) -> Result<Vec<String>, AwsError>;
    /// The input an execution was started with.
    async fn execution_input(&self, execution_arn: &str) -> Result<Option<String>, AwsError>;
}

pub struct SdkExecutions {
    client: sfn::Client,
}

impl SdkExecutions {
    pub fn new(config: &SdkConfig) -> Self {
        SdkExecutions {
            client: sfn::Client::new(config),
        }
    }
}

#[async_trait]
impl ExecutionsApi for SdkExecutions {
    async fn running_executions(&self, state_machine_arn: &str) -> Result<Vec<String>, AwsError> {
        let mut arns = Vec::new();
        let mut pages = self
            .client
            .list_executions()
            .state_machine_arn(state_machine_arn)
            .status_filter(sfn::types::ExecutionStatus::Running)
            .into_paginator()
            .send();
        while let Some(page) = pages.next().await {
            let page = page.map_err(|e| AwsError::from_sdk("ListExecutions", e))?;
            arns.extend(
                page.executions()
                    .iter()
                    .map(|e| e.execution_arn().to_owned()),
            );
        }
        Ok(arns)
    }

    async fn execution_input(&self, execution_arn: &str) -> Result<Option<String>, AwsError> {
        let out = self
            .client
            .describe_execution()
            .execution_arn(execution_arn)
            .send()
            .await
            .map_err(|e| AwsError::from_sdk("DescribeExecution", e))?;
        Ok(out.input().map(str::to_owned))
    }
}
