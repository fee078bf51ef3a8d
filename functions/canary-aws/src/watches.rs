//! The alarm watches (`canary_core::alarm_watch`): a running execution's watch is stored once
//! per lookup key (`watchKey`: `name#<alarm>` for each alarm it names, `prefixes` if it
//! watches prefixes; sort key `executionArn`), replaced by each bake and approval wait. An
//! alarm event reads two keys with a consistent Query each: its name's (only the watches
//! naming it) and `prefixes` (only the watches with prefixes), never the whole table: an alarm
//! no rollout names costs two small reads and no Step Functions call. `expiresAt` is the
//! table's TTL attribute, which DynamoDB deletes lazily: readers judge staleness themselves.
//! And [`TaskFailer`]: failing the task a watch waits on.

use std::collections::HashMap;

use async_trait::async_trait;
use aws_config::SdkConfig;
use aws_sdk_dynamodb as dynamodb;
use aws_sdk_dynamodb::types::{AttributeValue, PutRequest, WriteRequest};
use canary_core::alarm_watch::{health_key, name_key, AlarmWatch, PREFIXES_KEY};
use tracing::warn;

use crate::error::{AwsError, AwsErrorKind};
use crate::executions::SdkExecutions;

#[async_trait]
pub trait AlarmWatchStore: Send + Sync {
    /// Puts the execution's watch, replacing the one before.
    async fn put(&self, watch: &AlarmWatch) -> Result<(), AwsError>;
    /// The watches that may concern alarm `alarm_name`: those naming it, and those watching
    /// prefixes. Stale ones included; the caller judges.
    async fn candidates(&self, alarm_name: &str) -> Result<Vec<AlarmWatch>, AwsError>;
    /// Removes the watch if its execution still waits on its token (a newer one stays).
    async fn remove(&self, watch: &AlarmWatch) -> Result<(), AwsError>;
    /// The watches an open AWS Health issue in `region` may fail. Stale ones included.
    async fn watching_region(&self, region: &str) -> Result<Vec<AlarmWatch>, AwsError>;
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
        // Written since rollbacks may be gradual: a watch stored before has none.
        critical: list("critical").unwrap_or_default(),
        // Written since AWS Health issues may roll back: a watch stored before has none.
        health_regions: list("healthRegions").unwrap_or_default(),
        since: number("since")?,
        expires_at: number("expiresAt")?,
    })
}

/// BatchWriteItem takes at most 25 requests.
const BATCH: usize = 25;
/// Passes over the items DynamoDB leaves unprocessed (throttling) before giving up.
const BATCH_ATTEMPTS: u32 = 5;

impl SdkAlarmWatches {
    fn item(watch: &AlarmWatch, key: &str) -> HashMap<String, AttributeValue> {
        HashMap::from([
            ("watchKey".to_owned(), AttributeValue::S(key.to_owned())),
            (
                "executionArn".to_owned(),
                AttributeValue::S(watch.execution_arn.clone()),
            ),
            (
                "cluster".to_owned(),
                AttributeValue::S(watch.cluster.clone()),
            ),
            (
                "taskToken".to_owned(),
                AttributeValue::S(watch.task_token.clone()),
            ),
            ("names".to_owned(), strings(&watch.names)),
            ("prefixes".to_owned(), strings(&watch.prefixes)),
            ("critical".to_owned(), strings(&watch.critical)),
            ("healthRegions".to_owned(), strings(&watch.health_regions)),
            (
                "since".to_owned(),
                AttributeValue::N(watch.since.to_string()),
            ),
            (
                "expiresAt".to_owned(),
                AttributeValue::N(watch.expires_at.to_string()),
            ),
        ])
    }

    /// Every watch stored under `key` (a consistent Query, all pages).
    async fn under(&self, key: &str) -> Result<Vec<AlarmWatch>, AwsError> {
        let mut watches = Vec::new();
        let mut start: Option<HashMap<String, AttributeValue>> = None;
        loop {
            let page = self
                .client
                .query()
                .table_name(&self.table)
                .consistent_read(true)
                .key_condition_expression("watchKey = :key")
                .expression_attribute_values(":key", AttributeValue::S(key.to_owned()))
                .set_exclusive_start_key(start.take())
                .send()
                .await
                .map_err(|e| AwsError::from_sdk("Query", e))?;
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
}

#[async_trait]
impl AlarmWatchStore for SdkAlarmWatches {
    async fn put(&self, watch: &AlarmWatch) -> Result<(), AwsError> {
        let keys = watch.lookup_keys();
        for chunk in keys.chunks(BATCH) {
            let mut requests: Vec<WriteRequest> = chunk
                .iter()
                .map(|key| {
                    let put = PutRequest::builder()
                        .set_item(Some(Self::item(watch, key)))
                        .build()
                        .map_err(|e| {
                            AwsError::new(AwsErrorKind::Rejected, "BatchWriteItem", e.to_string())
                        })?;
                    Ok(WriteRequest::builder().put_request(put).build())
                })
                .collect::<Result<_, AwsError>>()?;
            let mut attempt = 0;
            while !requests.is_empty() {
                attempt += 1;
                if attempt > BATCH_ATTEMPTS {
                    return Err(AwsError::new(
                        AwsErrorKind::Transient,
                        "BatchWriteItem",
                        format!(
                            "{} alarm watch items still unprocessed after {BATCH_ATTEMPTS} passes",
                            requests.len()
                        ),
                    ));
                }
                let written = self
                    .client
                    .batch_write_item()
                    .request_items(&self.table, requests)
                    .send()
                    .await
                    .map_err(|e| AwsError::from_sdk("BatchWriteItem", e))?;
                // Throttled items come back unprocessed: write them again, after a pause.
                requests = written
                    .unprocessed_items()
                    .and_then(|left| left.get(&self.table))
                    .cloned()
                    .unwrap_or_default();
                if !requests.is_empty() {
                    tokio::time::sleep(std::time::Duration::from_millis(100 << attempt)).await;
                }
            }
        }
        Ok(())
    }

    async fn candidates(&self, alarm_name: &str) -> Result<Vec<AlarmWatch>, AwsError> {
        let mut watches = self.under(&name_key(alarm_name)).await?;
        for watch in self.under(PREFIXES_KEY).await? {
            // A watch naming the alarm and watching prefixes is read under both keys.
            if !watches.contains(&watch) {
                watches.push(watch);
            }
        }
        Ok(watches)
    }

    async fn watching_region(&self, region: &str) -> Result<Vec<AlarmWatch>, AwsError> {
        self.under(&health_key(region)).await
    }

    async fn remove(&self, watch: &AlarmWatch) -> Result<(), AwsError> {
        for key in watch.lookup_keys() {
            let removed = self
                .client
                .delete_item()
                .table_name(&self.table)
                .key("watchKey", AttributeValue::S(key))
                .key(
                    "executionArn",
                    AttributeValue::S(watch.execution_arn.clone()),
                )
                .condition_expression("taskToken = :token")
                .expression_attribute_values(":token", AttributeValue::S(watch.task_token.clone()))
                .send()
                .await;
            match removed {
                Ok(_) => {}
                // A newer watch of the same execution replaced it (or it is gone already).
                Err(e)
                    if e.as_service_error()
                        .is_some_and(|s| s.is_conditional_check_failed_exception()) => {}
                Err(e) => return Err(AwsError::from_sdk("DeleteItem", e)),
            }
        }
        Ok(())
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
