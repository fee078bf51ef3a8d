//! The alarm watches (`canary_core::alarm_watch`): one DynamoDB item per running execution
//! (key `executionArn`), replaced by each bake and approval wait, read whole by every alarm
//! event (a scan: the table holds one small item per rollout, so an alarm no rollout watches
//! costs one read and no Step Functions call). `expiresAt` is the table's TTL attribute, which
//! DynamoDB deletes lazily: readers judge staleness themselves.
//! And [`TaskFailer`]: failing the task a watch waits on.

use std::collections::HashMap;

use async_trait::async_trait;
use aws_config::SdkConfig;
use aws_sdk_dynamodb as dynamodb;
use aws_sdk_dynamodb::types::AttributeValue;
use canary_core::alarm_watch::AlarmWatch;
use tracing::warn;

use crate::error::AwsError;
use crate::executions::SdkExecutions;

#[async_trait]
pub trait AlarmWatchStore: Send + Sync {
    /// Puts the execution's watch, replacing the one before.
    async fn put(&self, watch: &AlarmWatch) -> Result<(), AwsError>;
    /// Every watch in the table, stale ones included.
    async fn all(&self) -> Result<Vec<AlarmWatch>, AwsError>;
    /// Removes the execution's watch if it still waits on `task_token` (a newer one stays).
    async fn remove(&self, execution_arn: &str, task_token: &str) -> Result<(), AwsError>;
}

#[async_trait]
pub trait TaskFailer: Send + Sync {
    /// Fails a waiting task. `Ok(false)`: it no longer waits (answered, timed out, or its
    /// execution ended), which for a duplicate or late event is the expected answer.
    async fn fail_task(&self, task_token: &str, error: &str, cause: &str)
        -> Result<bool, AwsError>;
}

pub struct SdkAlarmWatches {
    client: dynamodb::Client,
    table: String,
}

impl SdkAlarmWatches {
    pub fn new(config: &SdkConfig, table: impl Into<String>) -> Self {
        SdkAlarmWatches {
            client: dynamodb::Client::new(config),
            table: table.into(),
        }
    }
}

fn strings(values: &[String]) -> AttributeValue {
    AttributeValue::L(values.iter().cloned().map(AttributeValue::S).collect())
}

fn from_item(item: &HashMap<String, AttributeValue>) -> Option<AlarmWatch> {
    let text = |key: &str| item.get(key)?.as_s().ok().cloned();
    let number = |key: &str| item.get(key)?.as_n().ok()?.parse().ok();
    let list = |key: &str| -> Option<Vec<String>> {
        item.get(key)?
            .as_l()
            .ok()?
            .iter()
            .map(|v| v.as_s().ok().cloned())
            .collect()
    };
    Some(AlarmWatch {
        execution_arn: text("executionArn")?,
        cluster: text("cluster")?,
        task_token: text("taskToken")?,
        names: list("names")?,
        prefixes: list("prefixes")?,
        since: number("since")?,
        expires_at: number("expiresAt")?,
    })
}

#[async_trait]
impl AlarmWatchStore for SdkAlarmWatches {
    async fn put(&self, watch: &AlarmWatch) -> Result<(), AwsError> {
        self.client
            .put_item()
            .table_name(&self.table)
            .item(
                "executionArn",
                AttributeValue::S(watch.execution_arn.clone()),
            )
            .item("cluster", AttributeValue::S(watch.cluster.clone()))
            .item("taskToken", AttributeValue::S(watch.task_token.clone()))
            .item("names", strings(&watch.names))
            .item("prefixes", strings(&watch.prefixes))
            .item("since", AttributeValue::N(watch.since.to_string()))
            .item("expiresAt", AttributeValue::N(watch.expires_at.to_string()))
            .send()
            .await
            .map_err(|e| AwsError::from_sdk("PutItem", e))?;
        Ok(())
    }

    async fn all(&self) -> Result<Vec<AlarmWatch>, AwsError> {
        let mut watches = Vec::new();
        let mut start: Option<HashMap<String, AttributeValue>> = None;
        loop {
            let page = self
                .client
                .scan()
                .table_name(&self.table)
                .consistent_read(true)
                .set_exclusive_start_key(start.take())
                .send()
                .await
                .map_err(|e| AwsError::from_sdk("Scan", e))?;
            for item in page.items() {
                match from_item(item) {
                    Some(watch) => watches.push(watch),
                    None => warn!(
                        table = %self.table,
                        "an alarm watch item lacks a field or has the wrong type; skipped"
                    ),
                }
            }
            match page.last_evaluated_key() {
                Some(key) if !key.is_empty() => start = Some(key.clone()),
                _ => return Ok(watches),
            }
        }
    }

    async fn remove(&self, execution_arn: &str, task_token: &str) -> Result<(), AwsError> {
        let removed = self
            .client
            .delete_item()
            .table_name(&self.table)
            .key("executionArn", AttributeValue::S(execution_arn.to_owned()))
            .condition_expression("taskToken = :token")
            .expression_attribute_values(":token", AttributeValue::S(task_token.to_owned()))
            .send()
            .await;
        match removed {
            Ok(_) => Ok(()),
            // A newer watch of the same execution replaced it: that one stays.
            Err(e)
                if e.as_service_error()
                    .is_some_and(|s| s.is_conditional_check_failed_exception()) =>
            {
                Ok(())
            }
            Err(e) => Err(AwsError::from_sdk("DeleteItem", e)),
        }
    }
}

/// What Step Functions answers for a token whose task no longer waits.
const TASK_GONE_CODES: &[&str] = &["TaskDoesNotExist", "TaskTimedOut", "InvalidToken"];

#[async_trait]
impl TaskFailer for SdkExecutions {
    async fn fail_task(
        &self,
        task_token: &str,
        error: &str,
        cause: &str,
    ) -> Result<bool, AwsError> {
        match self.send_task_failure(task_token, error, cause).await {
            Ok(()) => Ok(true),
            Err(e)
                if e.code
                    .as_deref()
                    .is_some_and(|c| TASK_GONE_CODES.contains(&c)) =>
            {
                Ok(false)
            }
            Err(e) => Err(e),
        }
    }
}
