//! Step Functions executions, the one adapter over `aws-sdk-sfn`: refusing a second rollout
//! on the same traffic, reading an execution's history (the safety net, the operator CLI),
//! starting executions (the intake, the CLI), and what the operator CLI does to one
//! (describe, list, stop, answer an approval).

use async_trait::async_trait;
use aws_config::SdkConfig;
use aws_sdk_sfn as sfn;
use aws_sdk_sfn::types::HistoryEventType;
use aws_smithy_types::DateTime;

use crate::error::AwsError;

/// A state machine's newest executions and the input each was started with: all the intake
/// reads. Its own trait so that a `dyn` of it links ListExecutions and DescribeExecution only,
/// not the history's deserializers (docs/size-and-startup.md).
#[async_trait]
pub trait ExecutionListing: Send + Sync {
    /// The input an execution was started with.
    async fn execution_input(&self, execution_arn: &str) -> Result<Option<String>, AwsError>;
    /// The state machine's `limit` newest executions (running or ended), newest first.
    async fn newest(&self, state_machine_arn: &str, limit: usize) -> Result<Vec<Listed>, AwsError>;
}

#[async_trait]
pub trait ExecutionsApi: ExecutionListing {
    /// ARNs of the RUNNING executions of a state machine.
    async fn running_executions(&self, state_machine_arn: &str) -> Result<Vec<String>, AwsError>;
    /// The states the execution entered and exited, in order, and how it failed.
    async fn history(&self, execution_arn: &str) -> Result<ExecutionHistory, AwsError>;
    /// The executions of the same state machine started after `execution_arn` (running or
    /// ended), newest first, among the state machine's `limit` newest.
    async fn started_after(
        &self,
        execution_arn: &str,
        limit: usize,
    ) -> Result<Vec<Listed>, AwsError>;
}

/// One history event, reduced to what cluster-canary reads of it (the safety net, the CLI).
#[derive(Debug, Clone, PartialEq)]
pub struct HistoryEvent {
    /// Seconds since the Unix epoch.
    pub timestamp: f64,
    pub kind: EventKind,
}

#[derive(Debug, Clone, PartialEq)]
pub enum EventKind {
    ExecutionStarted {
        input: Option<String>,
    },
    StateEntered {
        name: String,
        input: Option<String>,
    },
    StateExited {
        name: String,
        output: Option<String>,
    },
    TaskScheduled {
        resource: String,
        parameters: String,
        timeout_seconds: Option<i64>,
    },
    /// One attempt of a task failed (a Retry may try it again).
    TaskFailed {
        error: Option<String>,
        cause: Option<String>,
    },
    ExecutionEnded {
        status: String,
        error: Option<String>,
        cause: Option<String>,
    },
    Other,
}

/// Every event of an execution's history, oldest first.
async fn history_events(
    client: &sfn::Client,
    execution_arn: &str,
) -> Result<Vec<HistoryEvent>, AwsError> {
    let mut events = Vec::new();
    let mut pages = client
        .get_execution_history()
        .execution_arn(execution_arn)
        .max_results(1000)
        .into_paginator()
        .send();
    while let Some(page) = pages.next().await {
        let page = page.map_err(|e| AwsError::from_sdk("GetExecutionHistory", e))?;
        events.extend(page.events().iter().map(model_event));
    }
    Ok(events)
}

fn model_event(event: &sfn::types::HistoryEvent) -> HistoryEvent {
    // The three end events carry details of three SDK types with the same two fields.
    macro_rules! ended_with {
        ($status:literal, $details:ident) => {{
            let details = event.$details();
            ended(
                $status,
                details.and_then(|d| d.error()),
                details.and_then(|d| d.cause()),
            )
        }};
    }
    use HistoryEventType as T;
    let kind = match event.r#type() {
        T::ExecutionStarted => EventKind::ExecutionStarted {
            input: event
                .execution_started_event_details()
                .and_then(|d| d.input())
                .map(str::to_owned),
        },
        _ if event.state_entered_event_details().is_some() => {
            let details = event.state_entered_event_details();
            EventKind::StateEntered {
                name: details.map(|d| d.name().to_owned()).unwrap_or_default(),
                input: details.and_then(|d| d.input()).map(str::to_owned),
            }
        }
        _ if event.state_exited_event_details().is_some() => {
            let details = event.state_exited_event_details();
            EventKind::StateExited {
                name: details.map(|d| d.name().to_owned()).unwrap_or_default(),
                output: details.and_then(|d| d.output()).map(str::to_owned),
            }
        }
        T::TaskScheduled => {
            let details = event.task_scheduled_event_details();
            EventKind::TaskScheduled {
                resource: details.map(|d| d.resource().to_owned()).unwrap_or_default(),
                parameters: details
                    .map(|d| d.parameters().to_owned())
                    .unwrap_or_default(),
                timeout_seconds: details.and_then(|d| d.timeout_in_seconds()),
            }
        }
        T::TaskFailed => {
            let details = event.task_failed_event_details();
            EventKind::TaskFailed {
                error: details.and_then(|d| d.error()).map(str::to_owned),
                cause: details.and_then(|d| d.cause()).map(str::to_owned),
            }
        }
        T::ExecutionSucceeded => ended("SUCCEEDED", None, None),
        T::ExecutionFailed => ended_with!("FAILED", execution_failed_event_details),
        T::ExecutionAborted => ended_with!("ABORTED", execution_aborted_event_details),
        T::ExecutionTimedOut => ended_with!("TIMED_OUT", execution_timed_out_event_details),
        _ => EventKind::Other,
    };
    HistoryEvent {
        timestamp: event.timestamp().as_secs_f64(),
        kind,
    }
}

fn ended(status: &str, error: Option<&str>, cause: Option<&str>) -> EventKind {
    EventKind::ExecutionEnded {
        status: status.to_owned(),
        error: error.map(str::to_owned),
        cause: cause.map(str::to_owned),
    }
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ExecutionHistory {
    pub states: Vec<StateEvent>,
    /// The error of the `ExecutionFailed` event (`States.Runtime`, `CheckFailed`, ...), if any.
    pub failure_error: Option<String>,
    /// How it ended (`SUCCEEDED`, `FAILED`, ...), once it did.
    pub ended: Option<String>,
}

impl ExecutionHistory {
    /// The states and the failure, from the full history (moved, not copied: every state's
    /// input holds the plan, up to 256 KiB).
    pub fn from_events(events: Vec<HistoryEvent>) -> Self {
        let mut history = ExecutionHistory::default();
        for event in events {
            match event.kind {
                EventKind::StateEntered { name, input } => history.states.push(StateEvent {
                    name,
                    exited: false,
                    input,
                    output: None,
                }),
                EventKind::StateExited { name, output } => history.states.push(StateEvent {
                    name,
                    exited: true,
                    input: None,
                    output,
                }),
                EventKind::ExecutionEnded { status, error, .. } => {
                    if status == "FAILED" {
                        history.failure_error = error;
                    }
                    history.ended = Some(status);
                }
                _ => {}
            }
        }
        history
    }
}

/// A state entered (with its input) or exited (with its output).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StateEvent {
    pub name: String,
    pub exited: bool,
    pub input: Option<String>,
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

/// The ARN an execution named `name` of `state_machine_arn` has (or would have): the state
/// machine's with `:execution:` and the name.
pub fn execution_arn(state_machine_arn: &str, name: &str) -> String {
    format!(
        "{}:{name}",
        state_machine_arn.replacen(":stateMachine:", ":execution:", 1)
    )
}

pub struct SdkExecutions {
    client: sfn::Client,
}

/// An execution as `ListExecutions` lists it.
#[derive(Debug, Clone, PartialEq)]
pub struct Listed {
    pub arn: String,
    pub status: String,
    /// Seconds since the Unix epoch.
    pub started: f64,
    /// When it ended (seconds since the Unix epoch); `None` while it runs.
    pub stopped: Option<f64>,
}

impl Listed {
    fn from_item(e: &sfn::types::ExecutionListItem) -> Self {
        Listed {
            arn: e.execution_arn().to_owned(),
            status: e.status().as_str().to_owned(),
            started: e.start_date().as_secs_f64(),
            stopped: e.stop_date().map(DateTime::as_secs_f64),
        }
    }
}

/// The executions that ended: the safety net's sweep looks for those whose traffic was left
/// away from their baseline.
#[async_trait]
pub trait EndedExecutions: Send + Sync {
    /// The executions of `state_machine_arn` with `status` (`ABORTED`, `FAILED`, ...) that
    /// ended at or after `since` (seconds since the epoch), among the `limit` newest started
    /// with that status (ListExecutions lists by start, newest first).
    async fn ended_since(
        &self,
        state_machine_arn: &str,
        status: &str,
        since: f64,
        limit: usize,
    ) -> Result<Vec<Listed>, AwsError>;
}

/// The state machine an execution ARN belongs to (`…:execution:SM:NAME` → `…:stateMachine:SM`).
pub fn state_machine_of(execution_arn: &str) -> Option<String> {
    let (machine, _name) = execution_arn.rsplit_once(':')?;
    machine
        .contains(":execution:")
        .then(|| machine.replacen(":execution:", ":stateMachine:", 1))
}

/// An execution as `DescribeExecution` reports it.
#[derive(Debug, Clone)]
pub struct Execution {
    pub arn: String,
    pub name: String,
    pub status: String,
    pub input: Option<String>,
    /// A SUCCEEDED execution's output.
    pub output: Option<String>,
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

impl SdkExecutions {
    pub fn new(config: &SdkConfig) -> Self {
        Self::in_region(config, None)
    }

    /// A client for `region` (an execution's or state machine's ARN says which), else the
    /// configured region.
    pub fn in_region(config: &SdkConfig, region: Option<&str>) -> Self {
        let mut builder = sfn::config::Builder::from(config);
        if let Some(region) = region {
            builder = builder.region(aws_config::Region::new(region.to_owned()));
        }
        SdkExecutions {
            client: sfn::Client::from_conf(builder.build()),
        }
    }

    pub async fn describe(&self, execution_arn: &str) -> Result<Execution, AwsError> {
        let out = self
            .client
            .describe_execution()
            .execution_arn(execution_arn)
            .send()
            .await
            .map_err(|e| AwsError::from_sdk("DescribeExecution", e))?;
        Ok(Execution {
            arn: out.execution_arn().to_owned(),
            name: out.name().unwrap_or_default().to_owned(),
            status: out.status().as_str().to_owned(),
            input: out.input().map(str::to_owned),
            output: out.output().map(str::to_owned),
            started: out.start_date().as_secs_f64(),
            stopped: out.stop_date().map(DateTime::as_secs_f64),
            error: out.error().map(str::to_owned),
            cause: out.cause().map(str::to_owned),
        })
    }

    /// The whole history, oldest first.
    pub async fn events(&self, execution_arn: &str) -> Result<Vec<HistoryEvent>, AwsError> {
        history_events(&self.client, execution_arn).await
    }

    /// The most recent executions of a state machine, newest first, at most `limit`;
    /// only the running ones with `running_only`.
    pub async fn list(
        &self,
        state_machine_arn: &str,
        running_only: bool,
        limit: usize,
    ) -> Result<Vec<String>, AwsError> {
        Ok(self
            .listed(state_machine_arn, running_only, limit)
            .await?
            .into_iter()
            .map(|e| e.arn)
            .collect())
    }

    /// As [`Self::list`], with each execution's status and start.
    pub async fn listed(
        &self,
        state_machine_arn: &str,
        running_only: bool,
        limit: usize,
    ) -> Result<Vec<Listed>, AwsError> {
        let mut request = self
            .client
            .list_executions()
            .state_machine_arn(state_machine_arn);
        if running_only {
            request = request.status_filter(sfn::types::ExecutionStatus::Running);
        }
        let mut listed = Vec::new();
        let mut pages = request.into_paginator().send();
        while let Some(page) = pages.next().await {
            let page = page.map_err(|e| AwsError::from_sdk("ListExecutions", e))?;
            listed.extend(page.executions().iter().map(Listed::from_item));
            if listed.len() >= limit {
                break;
            }
        }
        listed.truncate(limit);
        Ok(listed)
    }

    /// The executions started at or after `since` (seconds since the epoch), newest first;
    /// only those with `status` (`RUNNING`, `FAILED`, ...) when given. Pages stop at the first
    /// older execution (ListExecutions lists newest first).
    pub async fn started_since(
        &self,
        state_machine_arn: &str,
        since: f64,
        status: Option<&str>,
    ) -> Result<Vec<Listed>, AwsError> {
        let mut request = self
            .client
            .list_executions()
            .state_machine_arn(state_machine_arn);
        if let Some(status) = status {
            request = request.status_filter(sfn::types::ExecutionStatus::from(status));
        }
        let mut listed = Vec::new();
        let mut pages = request.into_paginator().send();
        while let Some(page) = pages.next().await {
            let page = page.map_err(|e| AwsError::from_sdk("ListExecutions", e))?;
            let mut older = false;
            for e in page.executions() {
                let started = e.start_date().as_secs_f64();
                if started < since {
                    older = true;
                    continue;
                }
                listed.push(Listed::from_item(e));
            }
            if older {
                break;
            }
        }
        Ok(listed)
    }

    /// Starts an execution as a person asks for it: unlike [`ExecutionStarter`] (event
    /// deliveries, where a repeat is a duplicate), a name already taken is Step Functions'
    /// answer to report, not a success.
    pub async fn start(
        &self,
        state_machine_arn: &str,
        name: &str,
        input: &str,
    ) -> Result<String, AwsError> {
        let out = self
            .start_request(state_machine_arn, name, input)
            .send()
            .await
            .map_err(|e| AwsError::from_sdk("StartExecution", e))?;
        Ok(out.execution_arn().to_owned())
    }

    fn start_request(
        &self,
        state_machine_arn: &str,
        name: &str,
        input: &str,
    ) -> sfn::operation::start_execution::builders::StartExecutionFluentBuilder {
        self.client
            .start_execution()
            .state_machine_arn(state_machine_arn)
            .name(name)
            .input(input)
    }

    pub async fn stop(&self, execution_arn: &str, cause: &str) -> Result<(), AwsError> {
        self.stop_as(execution_arn, "Aborted", cause).await
    }

    /// Stops an execution with `error` as its error name (what the fleet's judge reads).
    pub async fn stop_as(
        &self,
        execution_arn: &str,
        error: &str,
        cause: &str,
    ) -> Result<(), AwsError> {
        self.client
            .stop_execution()
            .execution_arn(execution_arn)
            .error(error)
            .cause(cause)
            .send()
            .await
            .map_err(|e| AwsError::from_sdk("StopExecution", e))?;
        Ok(())
    }

    /// Answers a `.waitForTaskToken` task with success (an approval).
    pub async fn send_task_success(&self, task_token: &str, output: &str) -> Result<(), AwsError> {
        self.client
            .send_task_success()
            .task_token(task_token)
            .output(output)
            .send()
            .await
            .map_err(|e| AwsError::from_sdk("SendTaskSuccess", e))?;
        Ok(())
    }

    /// Fails a `.waitForTaskToken` task with `error` (a rejection).
    pub async fn send_task_failure(
        &self,
        task_token: &str,
        error: &str,
        cause: &str,
    ) -> Result<(), AwsError> {
        self.client
            .send_task_failure()
            .task_token(task_token)
            .error(error)
            .cause(cause)
            .send()
            .await
            .map_err(|e| AwsError::from_sdk("SendTaskFailure", e))?;
        Ok(())
    }
}

#[async_trait]
impl ExecutionListing for SdkExecutions {
    async fn execution_input(&self, execution_arn: &str) -> Result<Option<String>, AwsError> {
        Ok(self.describe(execution_arn).await?.input)
    }

    async fn newest(&self, state_machine_arn: &str, limit: usize) -> Result<Vec<Listed>, AwsError> {
        self.listed(state_machine_arn, false, limit).await
    }
}

#[async_trait]
impl ExecutionsApi for SdkExecutions {
    async fn running_executions(&self, state_machine_arn: &str) -> Result<Vec<String>, AwsError> {
        self.list(state_machine_arn, true, usize::MAX).await
    }

    async fn history(&self, execution_arn: &str) -> Result<ExecutionHistory, AwsError> {
        let events = self.events(execution_arn).await?;
        Ok(ExecutionHistory::from_events(events))
    }

    async fn started_after(
        &self,
        execution_arn: &str,
        limit: usize,
    ) -> Result<Vec<Listed>, AwsError> {
        let Some(machine) = state_machine_of(execution_arn) else {
            return Ok(Vec::new());
        };
        let own = self.describe(execution_arn).await?;
        Ok(self
            .listed(&machine, false, limit)
            .await?
            .into_iter()
            .filter(|other| other.arn != own.arn && other.started > own.started)
            .collect())
    }
}

#[async_trait]
impl EndedExecutions for SdkExecutions {
    async fn ended_since(
        &self,
        state_machine_arn: &str,
        status: &str,
        since: f64,
        limit: usize,
    ) -> Result<Vec<Listed>, AwsError> {
        let mut listed = Vec::new();
        let mut pages = self
            .client
            .list_executions()
            .state_machine_arn(state_machine_arn)
            .status_filter(sfn::types::ExecutionStatus::from(status))
            .max_results(i32::try_from(limit.min(1000)).unwrap_or(1000))
            .into_paginator()
            .send();
        let mut seen = 0;
        while let Some(page) = pages.next().await {
            let page = page.map_err(|e| AwsError::from_sdk("ListExecutions", e))?;
            for e in page.executions() {
                seen += 1;
                let item = Listed::from_item(e);
                if item.stopped.is_some_and(|stopped| stopped >= since) {
                    listed.push(item);
                }
            }
            if seen >= limit {
                break;
            }
        }
        Ok(listed)
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
        let execution_arn = execution_arn(state_machine_arn, name);
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
            .start_request(state_machine_arn, name, input)
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_executions_state_machine_is_read_off_its_arn() {
        let machine = "arn:aws:states:us-east-1:123456789012:stateMachine:rollout";
        let execution = execution_arn(machine, "green-1");
        assert_eq!(state_machine_of(&execution).as_deref(), Some(machine));
        assert_eq!(state_machine_of(machine), None);
    }
}
