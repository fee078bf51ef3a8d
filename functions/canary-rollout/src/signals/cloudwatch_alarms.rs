//! CloudWatch alarms (plan `analysis.alarms`): metric and composite alarms by name or name
//! prefix. An alarm in ALARM fails the check; INSUFFICIENT_DATA is judged by the plan's
//! `insufficientData` policy; an alarm that disappeared is inconclusive.

use std::collections::{BTreeMap, BTreeSet};
use std::time::SystemTime;

use async_trait::async_trait;
use canary_aws::{AlarmState, AlarmStateValue, CloudWatchApi};
use canary_core::analysis::{AlarmChecks, CheckOutcome, CheckVerdict, InsufficientDataPolicy};
use canary_core::limits::MAX_ALARMS;

use super::{Collected, SignalSource, Validated};
use crate::error::AnalysisError;

pub(super) struct CloudWatchAlarms<'a> {
    pub api: &'a dyn CloudWatchApi,
    pub checks: &'a AlarmChecks,
}

#[async_trait]
impl SignalSource for CloudWatchAlarms<'_> {
    /// Every named alarm exists, every prefix matches one, and together at most
    /// [`MAX_ALARMS`].
    async fn validate(&self, _now: SystemTime) -> Result<Validated, AnalysisError> {
        let (cloudwatch, alarms) = (self.api, self.checks);
        let mut watched = BTreeSet::new();
        let found = cloudwatch.alarms_by_names(&alarms.names).await?;
        for (i, name) in alarms.names.iter().enumerate() {
            if !found.iter().any(|a| &a.name == name) {
                return Err(AnalysisError::AlarmNotFound {
                    path: format!("analysis.alarms.names[{i}]"),
                    message: format!("there is no metric or composite alarm named `{name}`"),
                });
            }
        }
        watched.extend(found.into_iter().map(|a| a.name));
        for (i, prefix) in alarms.prefixes.iter().enumerate() {
            let matched = cloudwatch.alarms_by_prefix(prefix).await?;
            if matched.is_empty() {
                return Err(AnalysisError::AlarmNotFound {
                    path: format!("analysis.alarms.prefixes[{i}]"),
                    message: format!("no metric or composite alarm name starts with `{prefix}`"),
                });
            }
            watched.extend(matched.into_iter().map(|a| a.name));
        }
        if watched.len() > MAX_ALARMS {
            return Err(AnalysisError::TooManyAlarms {
                path: "analysis.alarms".to_owned(),
                message: format!(
                    "the names and prefixes match {} alarms, more than the limit of {MAX_ALARMS}; \
                     use narrower prefixes or a composite alarm",
                    watched.len()
                ),
            });
        }
        Ok(Validated {
            alarms: watched.into_iter().collect(),
            ..Validated::default()
        })
    }

    async fn collect(&self, _now: SystemTime, _cluster: &str) -> Result<Collected, AnalysisError> {
        Ok(Collected {
            outcomes: alarm_outcomes(self.api, self.checks).await?,
            ..Collected::default()
        })
    }
}

/// One outcome per watched alarm (and per name or prefix that matches nothing any more).
pub(crate) async fn alarm_outcomes(
    cloudwatch: &dyn CloudWatchApi,
    checks: &AlarmChecks,
) -> Result<Vec<CheckOutcome>, AnalysisError> {
    let mut outcomes = Vec::new();
    let mut alarms: BTreeMap<String, AlarmState> = BTreeMap::new();
    let by_name = cloudwatch.alarms_by_names(&checks.names).await?;
    for name in &checks.names {
        if !by_name.iter().any(|a| &a.name == name) {
            outcomes.push(CheckOutcome::new(
                CheckVerdict::Inconclusive,
                format!("alarm {name} no longer exists"),
            ));
        }
    }
    alarms.extend(by_name.into_iter().map(|a| (a.name.clone(), a)));
    for prefix in &checks.prefixes {
        let matched = cloudwatch.alarms_by_prefix(prefix).await?;
        if matched.is_empty() {
            outcomes.push(CheckOutcome::new(
                CheckVerdict::Inconclusive,
                format!("no alarm name starts with {prefix} any more"),
            ));
        }
        alarms.extend(matched.into_iter().map(|a| (a.name.clone(), a)));
    }
    outcomes.extend(
        alarms.values().map(|a| {
            alarm_outcome(a, checks.insufficient_data).critical(checks.is_critical(&a.name))
        }),
    );
    Ok(outcomes)
}

pub fn alarm_outcome(alarm: &AlarmState, insufficient: InsufficientDataPolicy) -> CheckOutcome {
    let kind = if alarm.composite {
        "composite alarm"
    } else {
        "alarm"
    };
    let since = alarm
        .since
        .as_deref()
        .map(|s| format!(" since {s}"))
        .unwrap_or_default();
    let (verdict, state) = match alarm.state {
        AlarmStateValue::Ok => (CheckVerdict::Pass, "OK"),
        AlarmStateValue::Alarm => (CheckVerdict::Fail, "ALARM"),
        AlarmStateValue::InsufficientData => (
            match insufficient {
                InsufficientDataPolicy::Inconclusive => CheckVerdict::Inconclusive,
                InsufficientDataPolicy::Fail => CheckVerdict::Fail,
                InsufficientDataPolicy::Ignore => CheckVerdict::Ignored,
            },
            "INSUFFICIENT_DATA",
        ),
    };
    let reason = if alarm.reason.is_empty() {
        String::new()
    } else {
        format!(": {}", alarm.reason)
    };
    CheckOutcome::new(
        verdict,
        format!("{kind} {} is {state}{since}{reason}", alarm.name),
    )
}
