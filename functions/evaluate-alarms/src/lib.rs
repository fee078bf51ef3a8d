//! The `evaluate-alarms` Lambda: the checks. Four operations:
//! - `validate` (at Prepare, before any traffic moves): every named alarm exists, every
//!   prefix matches an alarm, CloudWatch accepts the metric queries.
//! - `evaluate` (every check interval of a bake): read alarms and metrics, judge them with
//!   `canary_core::analysis::decide`, and say whether to roll back.
//! - `hooks` (before traffic, after each step, before promotion): run the plan's hook
//!   functions at that point (see `hooks`).
//! - `awaitApproval`: the task a step's approval waits on (`.waitForTaskToken`): it only says
//!   so in the log. The token stays in the execution's history, where the approver reads it.

pub mod error;
pub mod hooks;
pub mod queries;

use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use canary_aws::logging::emit_metrics;
use canary_aws::{AlarmState, AlarmStateValue, CloudWatchApi, FunctionInvoker};
use canary_core::analysis::{
    decide, judge_alb, judge_threshold, reduce, AlarmChecks, AnalysisSection, BakeProgress,
    CheckOutcome, CheckVerdict, InsufficientDataPolicy,
};
use canary_core::gates::HookPoint;
use canary_core::input::parse_input;
use canary_core::limits::MAX_ALARMS;
use canary_core::metrics::{cluster_dimension, Point};
use canary_core::RolloutPlan;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use tracing::info;

pub use error::AnalysisError;
use queries::{
    alb_pairs, plan_queries, traffic_of, values_in_lookback, PlannedQuery, Purpose, Side,
};

#[derive(Debug, Deserialize)]
#[serde(tag = "operation", rename_all = "camelCase", deny_unknown_fields)]
pub enum Request {
    Validate {
        plan: Value,
    },
    Evaluate {
        plan: Value,
        #[serde(default)]
        progress: BakeProgress,
    },
    #[serde(rename_all = "camelCase")]
    AwaitApproval {
        /// Never logged nor returned: the approver reads it from the execution's history.
        task_token: String,
        execution_arn: String,
        step: Value,
    },
    #[serde(rename_all = "camelCase")]
    Hooks {
        plan: Value,
        point: HookPoint,
        execution_arn: String,
        #[serde(default)]
        step: Option<Value>,
        weights: Value,
    },
}

/// The AWS APIs the function uses.
pub struct Apis<'a> {
    pub cloudwatch: &'a dyn CloudWatchApi,
    pub functions: &'a dyn FunctionInvoker,
}

#[derive(Debug, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct ValidateOutput {
    /// The alarms the rollout watches (names and prefix matches), at most
    /// [`MAX_ALARMS`]. The state machine keeps only their number.
    pub alarms: Vec<String>,
    /// Metric queries each check makes.
    pub metric_queries: usize,
}

pub async fn handle(apis: &Apis<'_>, input: Value) -> Result<Value, AnalysisError> {
    let cloudwatch = apis.cloudwatch;
    let output = match parse_input::<Request>(input).map_err(AnalysisError::InvalidInput)? {
        Request::Validate { plan } => serde_json::to_value(validate(cloudwatch, plan).await?),
        Request::Evaluate { plan, progress } => {
            serde_json::to_value(evaluate(cloudwatch, plan, progress, SystemTime::now()).await?)
        }
        Request::AwaitApproval {
            task_token,
            execution_arn,
            step,
        } => {
            if task_token.is_empty() {
                return Err(AnalysisError::InvalidInput(
                    "taskToken is empty: awaitApproval runs as a .waitForTaskToken task".to_owned(),
                ));
            }
            info!(%execution_arn, %step, "waiting for a person to approve the step");
            Ok(serde_json::json!({"waiting": true}))
        }
        Request::Hooks {
            plan,
            point,
            execution_arn,
            step,
            weights,
        } => {
            let context = hooks::HookContext {
                execution_arn,
                step,
                weights,
            };
            serde_json::to_value(hooks::run_hooks(apis.functions, plan, point, context).await?)
        }
    };
    output.map_err(|e| AnalysisError::InvalidInput(format!("output not serializable: {e}")))
}

pub async fn validate(
    cloudwatch: &dyn CloudWatchApi,
    plan: Value,
) -> Result<ValidateOutput, AnalysisError> {
    let plan = RolloutPlan::parse(plan)?.plan;
    let Some(analysis) = &plan.analysis else {
        return Ok(ValidateOutput {
            alarms: Vec::new(),
            metric_queries: 0,
        });
    };
    let mut watched = BTreeSet::new();
    if let Some(alarms) = &analysis.alarms {
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
    let planned = plan_queries(analysis, &alb_pairs(&plan.traffic_targets));
    let queries: Vec<_> = planned.iter().map(|p| p.query.clone()).collect();
    let now = SystemTime::now();
    let start = now - Duration::from_secs(longest_lookback(&planned));
    cloudwatch
        .metric_data(&queries, start, now)
        .await
        .map_err(|source| match source.kind {
            canary_aws::AwsErrorKind::Rejected => AnalysisError::QueriesRejected {
                path: "analysis".to_owned(),
                source,
            },
            _ => AnalysisError::Aws(source),
        })?;
    Ok(ValidateOutput {
        alarms: watched.into_iter().collect(),
        metric_queries: queries.len(),
    })
}

pub async fn evaluate(
    cloudwatch: &dyn CloudWatchApi,
    plan: Value,
    progress: BakeProgress,
    now: SystemTime,
) -> Result<canary_core::analysis::Decision, AnalysisError> {
    let plan = RolloutPlan::parse(plan)?.plan;
    let cluster = cluster_dimension(&plan.cluster.region, &plan.cluster.name);
    let Some(analysis) = &plan.analysis else {
        emit_metrics(Point::check_result(&cluster, true, false));
        return Ok(decide(None, &[], progress));
    };
    let mut outcomes = Vec::new();
    if let Some(alarms) = &analysis.alarms {
        outcomes.extend(alarm_outcomes(cloudwatch, alarms).await?);
    }
    let mut points = Vec::new();
    outcomes.extend(
        metric_outcomes(
            cloudwatch,
            analysis,
            &plan.traffic_targets,
            now,
            &cluster,
            &mut points,
        )
        .await?,
    );
    let decision = decide(Some(analysis), &outcomes, progress);
    points.extend(Point::check_result(
        &cluster,
        decision.verdict == CheckVerdict::Pass,
        decision.verdict == CheckVerdict::Fail,
    ));
    emit_metrics(points);
    // The verdict carries a bounded summary; every signal's reason goes to the log.
    for outcome in &outcomes {
        info!(verdict = ?outcome.verdict, reason = %outcome.reason, "signal");
    }
    info!(
        verdict = ?decision.verdict,
        rollback = decision.rollback,
        consecutive_failures = decision.consecutive_failures,
        summary = %decision.summary,
        "check evaluated"
    );
    Ok(decision)
}

async fn alarm_outcomes(
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
        alarms
            .values()
            .map(|a| alarm_outcome(a, checks.insufficient_data)),
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

fn longest_lookback(planned: &[PlannedQuery]) -> u64 {
    planned
        .iter()
        .map(|p| u64::try_from(p.lookback_seconds).unwrap_or(0))
        .max()
        .unwrap_or(0)
}

/// The outcomes of the metric thresholds and built-in ALB checks; the values they judged go
/// to `points` (the `MetricValue`, `ErrorRatePercent` and `LatencySeconds` metrics).
async fn metric_outcomes(
    cloudwatch: &dyn CloudWatchApi,
    analysis: &AnalysisSection,
    targets: &[canary_core::TrafficTarget],
    now: SystemTime,
    cluster: &str,
    points: &mut Vec<Point>,
) -> Result<Vec<CheckOutcome>, AnalysisError> {
    let pairs = alb_pairs(targets);
    let planned = plan_queries(analysis, &pairs);
    if planned.is_empty() {
        return Ok(Vec::new());
    }
    let queries: Vec<_> = planned.iter().map(|p| p.query.clone()).collect();
    let start = now - Duration::from_secs(longest_lookback(&planned));
    let series = cloudwatch.metric_data(&queries, start, now).await?;
    let now_epoch = now
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs() as i64)
        .unwrap_or_default();
    let values = |planned: &PlannedQuery| {
        values_in_lookback(
            series.get(&planned.query.id),
            planned.lookback_seconds,
            now_epoch,
        )
    };

    let mut outcomes = Vec::new();
    for p in &planned {
        if let Purpose::Threshold(i) = p.purpose {
            let check = &analysis.metrics[i];
            let value = reduce(&values(p), check.reduce);
            if let Some(value) = value {
                points.push(Point::metric_value(cluster, &check.name, value));
            }
            outcomes.push(judge_threshold(check, value));
        }
    }
    if let Some(alb) = &analysis.alb {
        for (index, pair) in pairs.iter().enumerate() {
            let side = |side: Side| {
                traffic_of(|metric| {
                    planned
                        .iter()
                        .find(|q| {
                            q.purpose
                                == Purpose::Alb {
                                    pair: index,
                                    side,
                                    metric,
                                }
                        })
                        .map(values)
                        .unwrap_or_default()
                })
            };
            let (canary, stable) = (side(Side::Canary), side(Side::Stable));
            for (name, traffic) in [("canary", &canary), ("stable", &stable)] {
                if let Some(rate) = traffic.error_rate_percent() {
                    points.push(Point::error_rate(cluster, &pair.label, name, rate));
                }
                if let Some(latency) = traffic.latency_seconds {
                    points.push(Point::latency(cluster, &pair.label, name, latency));
                }
            }
            outcomes.extend(judge_alb(alb, &pair.label, canary, stable));
        }
    }
    Ok(outcomes)
}
