//! CloudWatch: alarm states (metric and composite) and metric datapoints.

use std::collections::BTreeMap;
use std::time::SystemTime;

use async_trait::async_trait;
use aws_config::SdkConfig;
use aws_sdk_cloudwatch as cloudwatch;
use aws_smithy_types::date_time::{DateTime, Format};
use cloudwatch::types::{
    AlarmType, Dimension, HistoryItemType, Metric, MetricDataQuery, MetricStat, ScanBy, StateValue,
};

use crate::error::{AwsError, AwsErrorKind};

/// DescribeAlarms takes at most 100 names per call.
const ALARM_NAMES_PER_CALL: usize = 100;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AlarmStateValue {
    Ok,
    Alarm,
    InsufficientData,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AlarmState {
    pub name: String,
    pub composite: bool,
    pub state: AlarmStateValue,
    pub reason: String,
    /// When the alarm entered its state, RFC 3339.
    pub since: Option<String>,
}

/// One `MetricStat` query.
#[derive(Debug, Clone, PartialEq)]
pub struct MetricQuery {
    /// Unique in the call; `[a-z][a-zA-Z0-9_]*`.
    pub id: String,
    pub namespace: String,
    pub metric_name: String,
    pub dimensions: BTreeMap<String, String>,
    pub stat: String,
    pub period_seconds: i32,
}

/// A query's datapoints, oldest first, as (epoch seconds, value).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct MetricSeries {
    pub points: Vec<(i64, f64)>,
}

#[async_trait]
pub trait CloudWatchApi: Send + Sync {
    /// The alarms with these names, metric and composite; names that do not exist are absent.
    async fn alarms_by_names(&self, names: &[String]) -> Result<Vec<AlarmState>, AwsError>;
    /// Every alarm whose name starts with `prefix`, metric and composite.
    async fn alarms_by_prefix(&self, prefix: &str) -> Result<Vec<AlarmState>, AwsError>;
    /// All queries in one GetMetricData request (following its pages), keyed by query id.
    async fn metric_data(
        &self,
        queries: &[MetricQuery],
        start: SystemTime,
        end: SystemTime,
    ) -> Result<BTreeMap<String, MetricSeries>, AwsError>;
}

pub struct SdkCloudWatch {
    client: cloudwatch::Client,
}

/// An alarm's change to ALARM, as its history keeps it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WentToAlarm {
    pub name: String,
    /// RFC 3339.
    pub at: String,
    pub reason: String,
}

impl SdkCloudWatch {
    pub fn new(config: &SdkConfig) -> Self {
        SdkCloudWatch {
            client: cloudwatch::Client::new(config),
        }
    }

    /// Each change of the alarm `name` to ALARM at or after `since`, newest first,
    /// from DescribeAlarmHistory's state updates: an alarm that went to ALARM and back while
    /// nobody looked (a soak) is there, where DescribeAlarms shows only its state now.
    pub async fn went_to_alarm(
        &self,
        name: &str,
        since: SystemTime,
    ) -> Result<Vec<WentToAlarm>, AwsError> {
        let mut pages = self
            .client
            .describe_alarm_history()
            .alarm_name(name)
            .history_item_type(HistoryItemType::StateUpdate)
            .start_date(DateTime::from(since))
            .end_date(DateTime::from(SystemTime::now()))
            .into_paginator()
            .send();
        let mut found = Vec::new();
        while let Some(page) = pages.next().await {
            let page = page.map_err(|e| AwsError::from_sdk("DescribeAlarmHistory", e))?;
            for item in page.alarm_history_items() {
                // `HistoryData`: {"oldState": {...}, "newState": {"stateValue", "stateReason"}}.
                let data: serde_json::Value = item
                    .history_data()
                    .and_then(|d| serde_json::from_str(d).ok())
                    .unwrap_or_default();
                if data["newState"]["stateValue"] == "ALARM" {
                    found.push(WentToAlarm {
                        name: name.to_owned(),
                        at: item
                            .timestamp()
                            .and_then(|t| t.fmt(Format::DateTime).ok())
                            .unwrap_or_default(),
                        reason: data["newState"]["stateReason"]
                            .as_str()
                            .unwrap_or_default()
                            .to_owned(),
                    });
                }
            }
        }
        Ok(found)
    }

    /// One DescribeAlarms listing, all pages. `AlarmTypes` must name both kinds: without it
    /// DescribeAlarms returns metric alarms only.
    async fn describe(
        &self,
        names: Option<Vec<String>>,
        prefix: Option<&str>,
    ) -> Result<Vec<AlarmState>, AwsError> {
        let mut pages = self
            .client
            .describe_alarms()
            .set_alarm_names(names)
            .set_alarm_name_prefix(prefix.map(str::to_owned))
            .alarm_types(AlarmType::MetricAlarm)
            .alarm_types(AlarmType::CompositeAlarm)
            .into_paginator()
            .send();
        let mut alarms = Vec::new();
        while let Some(page) = pages.next().await {
            let page = page.map_err(|e| AwsError::from_sdk("DescribeAlarms", e))?;
            for alarm in page.metric_alarms() {
                alarms.push(alarm_state(
                    alarm.alarm_name(),
                    false,
                    alarm.state_value(),
                    alarm.state_reason(),
                    alarm.state_updated_timestamp(),
                ));
            }
            for alarm in page.composite_alarms() {
                alarms.push(alarm_state(
                    alarm.alarm_name(),
                    true,
                    alarm.state_value(),
                    alarm.state_reason(),
                    alarm.state_updated_timestamp(),
                ));
            }
        }
        Ok(alarms)
    }
}

fn alarm_state(
    name: Option<&str>,
    composite: bool,
    state: Option<&StateValue>,
    reason: Option<&str>,
    since: Option<&DateTime>,
) -> AlarmState {
    AlarmState {
        name: name.unwrap_or_default().to_owned(),
        composite,
        state: match state {
            Some(StateValue::Ok) => AlarmStateValue::Ok,
            Some(StateValue::Alarm) => AlarmStateValue::Alarm,
            // An unknown or missing state is no evidence either way.
            _ => AlarmStateValue::InsufficientData,
        },
        reason: reason.unwrap_or_default().to_owned(),
        since: since.and_then(|t| t.fmt(Format::DateTime).ok()),
    }
}

fn to_sdk_query(query: &MetricQuery) -> MetricDataQuery {
    let metric = Metric::builder()
        .namespace(&query.namespace)
        .metric_name(&query.metric_name)
        .set_dimensions(Some(
            query
                .dimensions
                .iter()
                .map(|(name, value)| Dimension::builder().name(name).value(value).build())
                .collect(),
        ))
        .build();
    MetricDataQuery::builder()
        .id(&query.id)
        .metric_stat(
            MetricStat::builder()
                .metric(metric)
                .period(query.period_seconds)
                .stat(&query.stat)
                .build(),
        )
        .return_data(true)
        .build()
}

#[async_trait]
impl CloudWatchApi for SdkCloudWatch {
    async fn alarms_by_names(&self, names: &[String]) -> Result<Vec<AlarmState>, AwsError> {
        let mut alarms = Vec::new();
        for batch in names.chunks(ALARM_NAMES_PER_CALL) {
            alarms.extend(self.describe(Some(batch.to_vec()), None).await?);
        }
        Ok(alarms)
    }

    async fn alarms_by_prefix(&self, prefix: &str) -> Result<Vec<AlarmState>, AwsError> {
        self.describe(None, Some(prefix)).await
    }

    async fn metric_data(
        &self,
        queries: &[MetricQuery],
        start: SystemTime,
        end: SystemTime,
    ) -> Result<BTreeMap<String, MetricSeries>, AwsError> {
        let mut series: BTreeMap<String, MetricSeries> = queries
            .iter()
            .map(|q| (q.id.clone(), MetricSeries::default()))
            .collect();
        if queries.is_empty() {
            return Ok(series);
        }
        let mut pages = self
            .client
            .get_metric_data()
            .set_metric_data_queries(Some(queries.iter().map(to_sdk_query).collect()))
            .start_time(DateTime::from(start))
            .end_time(DateTime::from(end))
            .scan_by(ScanBy::TimestampAscending)
            .into_paginator()
            .send();
        while let Some(page) = pages.next().await {
            let page = page.map_err(|e| AwsError::from_sdk("GetMetricData", e))?;
            for result in page.metric_data_results() {
                let id = result.id().unwrap_or_default();
                let Some(entry) = series.get_mut(id) else {
                    return Err(AwsError::new(
                        AwsErrorKind::Rejected,
                        "GetMetricData",
                        format!("answer for unknown query id {id}"),
                    ));
                };
                entry.points.extend(
                    result
                        .timestamps()
                        .iter()
                        .map(DateTime::secs)
                        .zip(result.values().iter().copied()),
                );
            }
        }
        for s in series.values_mut() {
            s.points.sort_by_key(|(t, _)| *t);
        }
        Ok(series)
    }
}
