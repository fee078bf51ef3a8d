//! The Step Functions and CloudFormation calls the CLI makes, on the real SDK clients, with
//! the answers turned into the model types of `history` (no SDK type leaves this module).

use aws_config::SdkConfig;
use aws_sdk_cloudformation as cloudformation;
use aws_sdk_sfn as sfn;
use aws_sdk_sfn::types::ExecutionStatus;
use aws_smithy_types::DateTime;
use canary_aws::executions::{history_events, HistoryEvent};
use canary_aws::AwsError;

use crate::error::CliError;
use crate::history::TaskToken;

/// An execution as `DescribeExecution` reports it.
#[derive(Debug, Clone)]
pub struct Execution {
    pub arn: String,
    pub name: String,
    pub status: String,
    pub input: Option<String>,
    /// Seconds since the Unix epoch.
    pub started: f64,
    pub stopped: Option<f64>,
    pub error: Option<String>,
    pub cause: Option<String>,
}

impl Execution {
    pub fn running(&self) -> bool {
        self.status == "RUNNING"
    }
}

pub struct StepFunctions {
    client: sfn::Client,
}

fn seconds(time: &DateTime) -> f64 {
    time.as_secs_f64()
}

impl StepFunctions {
    /// A client for `region` (an execution's or state machine's ARN says which), else the
    /// configured region.
    pub fn new(config: &SdkConfig, region: Option<&str>) -> Self {
        let mut builder = sfn::config::Builder::from(config);
        if let Some(region) = region {
            builder = builder.region(aws_config::Region::new(region.to_owned()));
        }
        StepFunctions {
            client: sfn::Client::from_conf(builder.build()),
        }
    }

    pub async fn describe(&self, execution_arn: &str) -> Result<Execution, CliError> {
        let out = self
            .client
            .describe_execution()
            .execution_arn(execution_arn)
            .send()
            .await
            .map_err(|e| CliError::Aws(AwsError::from_sdk("DescribeExecution", e)))?;
        Ok(Execution {
            arn: out.execution_arn().to_owned(),
            name: out.name().unwrap_or_default().to_owned(),
            status: out.status().as_str().to_owned(),
            input: out.input().map(str::to_owned),
            started: seconds(out.start_date()),
            stopped: out.stop_date().map(seconds),
            error: out.error().map(str::to_owned),
            cause: out.cause().map(str::to_owned),
        })
    }

    /// The whole history, oldest first.
    pub async fn history(&self, execution_arn: &str) -> Result<Vec<HistoryEvent>, CliError> {
        Ok(history_events(&self.client, execution_arn).await?)
    }

    /// The most recent executions of a state machine, newest first, at most `limit`;
    /// only the running ones with `running_only`.
    pub async fn list(
        &self,
        state_machine_arn: &str,
        running_only: bool,
        limit: usize,
    ) -> Result<Vec<String>, CliError> {
        let mut request = self
            .client
            .list_executions()
            .state_machine_arn(state_machine_arn);
        if running_only {
            request = request.status_filter(ExecutionStatus::Running);
        }
        let mut arns = Vec::new();
        let mut pages = request.into_paginator().send();
        while let Some(page) = pages.next().await {
            let page = page.map_err(|e| CliError::Aws(AwsError::from_sdk("ListExecutions", e)))?;
            arns.extend(
                page.executions()
                    .iter()
                    .map(|e| e.execution_arn().to_owned()),
            );
            if arns.len() >= limit {
                break;
            }
        }
        arns.truncate(limit);
        Ok(arns)
    }

    pub async fn start(
        &self,
        state_machine_arn: &str,
        name: &str,
        input: &str,
    ) -> Result<String, CliError> {
        let out = self
            .client
            .start_execution()
            .state_machine_arn(state_machine_arn)
            .name(name)
            .input(input)
            .send()
            .await
            .map_err(|e| CliError::Aws(AwsError::from_sdk("StartExecution", e)))?;
        Ok(out.execution_arn().to_owned())
    }

    pub async fn stop(&self, execution_arn: &str, cause: &str) -> Result<(), CliError> {
        self.client
            .stop_execution()
            .execution_arn(execution_arn)
            .error("Aborted")
            .cause(cause)
            .send()
            .await
            .map_err(|e| CliError::Aws(AwsError::from_sdk("StopExecution", e)))?;
        Ok(())
    }

    pub async fn approve(&self, token: &TaskToken, output: &str) -> Result<(), CliError> {
        self.client
            .send_task_success()
            .task_token(&token.0)
            .output(output)
            .send()
            .await
            .map_err(|e| CliError::Aws(AwsError::from_sdk("SendTaskSuccess", e)))?;
        Ok(())
    }

    pub async fn reject(&self, token: &TaskToken, cause: &str) -> Result<(), CliError> {
        self.client
            .send_task_failure()
            .task_token(&token.0)
            .error("ApprovalRejected")
            .cause(cause)
            .send()
            .await
            .map_err(|e| CliError::Aws(AwsError::from_sdk("SendTaskFailure", e)))?;
        Ok(())
    }
}

/// The value of output `key` of CloudFormation stack `stack`.
pub async fn stack_output(config: &SdkConfig, stack: &str, key: &str) -> Result<String, CliError> {
    let client = cloudformation::Client::new(config);
    let out = client
        .describe_stacks()
        .stack_name(stack)
        .send()
        .await
        .map_err(|e| {
            let error = AwsError::from_sdk("DescribeStacks", e);
            let region = config
                .region()
                .map_or_else(|| "the configured region".to_owned(), ToString::to_string);
            CliError::NotFound(format!(
                "cannot read the state machine from stack `{stack}` in {region} ({error}); deploy it with \
                 `sam deploy`, or name it: --stack NAME, --state-machine ARN or CLUSTER_CANARY_STATE_MACHINE"
            ))
        })?;
    out.stacks()
        .first()
        .and_then(|s| {
            s.outputs()
                .iter()
                .find(|o| o.output_key() == Some(key))
                .and_then(|o| o.output_value())
        })
        .map(str::to_owned)
        .ok_or_else(|| {
            CliError::NotFound(format!(
                "stack `{stack}` has no output {key}: is it a cluster-canary stack? Name the state machine with --state-machine ARN"
            ))
        })
}
