//! Step Functions executions: refusing a second rollout on the same traffic, reading a
//! finished execution's history for the safety net, starting executions.

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
    /// The states the execution entered and exited, in order, and how it failed.
    async fn history(&self, execution_arn: &str) -> Result<ExecutionHistory, AwsError>;
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ExecutionHistory {
    pub states: Vec<StateEvent>,
    /// The error of the `ExecutionFailed` event (`States.Runtime`, `CheckFailed`, ...), if any.
    pub failure_error: Option<String>,
}

/// A state entered (no output) or exited (with its output).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StateEvent {
    pub name: String,
    pub exited: bool,
    pub output: Option<String>,
}

#[async_trait]
pub trait ExecutionStarter: Send + Sync {
    /// Starts an execution by name. A name already used (a duplicate delivery of the same
    /// event) is `Started::AlreadyExists`, not an error.
    async fn start_execution(
        &self,
        state_machine_arn: &str,
        name: &str,
        input: &str,
    ) -> Result<Started, AwsError>;
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Started {
    New { execution_arn: String },
    AlreadyExists { execution_arn: String },
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

    async fn history(&self, execution_arn: &str) -> Result<ExecutionHistory, AwsError> {
        let mut history = ExecutionHistory::default();
        let mut pages = self
            .client
            .get_execution_history()
            .execution_arn(execution_arn)
            .max_results(1000)
            .into_paginator()
            .send();
        while let Some(page) = pages.next().await {
            let page = page.map_err(|e| AwsError::from_sdk("GetExecutionHistory", e))?;
            for event in page.events() {
                if let Some(entered) = event.state_entered_event_details() {
                    history.states.push(StateEvent {
                        name: entered.name().to_owned(),
                        exited: false,
                        output: None,
                    });
                } else if let Some(exited) = event.state_exited_event_details() {
                    history.states.push(StateEvent {
                        name: exited.name().to_owned(),
                        exited: true,
                        output: exited.output().map(str::to_owned),
                    });
                } else if let Some(failed) = event.execution_failed_event_details() {
                    history.failure_error = failed.error().map(str::to_owned);
                }
            }
        }
        Ok(history)
    }
}

#[async_trait]
impl ExecutionStarter for SdkExecutions {
    async fn start_execution(
        &self,
        state_machine_arn: &str,
        name: &str,
        input: &str,
    ) -> Result<Started, AwsError> {
        // Execution ARNs are the state machine's with `:execution:` and the name.
        let execution_arn = format!(
            "{}:{name}",
            state_machine_arn.replacen(":stateMachine:", ":execution:", 1)
        );
        // StartExecution answers a repeated name with the same input as a success while the
        // first run is RUNNING (and with ExecutionAlreadyExists once it ended), so only a
        // lookup first tells a duplicate delivery from a new start.
        match self
            .client
            .describe_execution()
            .execution_arn(&execution_arn)
            .send()
            .await
        {
            Ok(_) => return Ok(Started::AlreadyExists { execution_arn }),
            Err(e)
                if e.as_service_error()
                    .is_some_and(|s| s.is_execution_does_not_exist()) => {}
            Err(e) => return Err(AwsError::from_sdk("DescribeExecution", e)),
        }
        match self
            .client
            .start_execution()
            .state_machine_arn(state_machine_arn)
            .name(name)
            .input(input)
            .send()
            .await
        {
            Ok(out) => Ok(Started::New {
                execution_arn: out.execution_arn().to_owned(),
            }),
            // A concurrent delivery of the same event started it between our lookup and now.
            Err(e)
                if e.as_service_error()
                    .is_some_and(|s| s.is_execution_already_exists()) =>
            {
                Ok(Started::AlreadyExists { execution_arn })
            }
            Err(e) => Err(AwsError::from_sdk("StartExecution", e)),
        }
    }
}
