//! Instant rollback (`canary_core::alarm_watch`): [`register`] the watch a bake or approval
//! wait keeps while its task waits, and [`on_alarm_state_change`]: fail the task of every
//! running rollout the alarm's event concerns.

use std::time::UNIX_EPOCH;

use canary_aws::{
    health_region_path, AlarmWatchStore, CloudWatchApi, EventPublisher, ExecutionsApi, TaskFailer,
};
use canary_core::alarm_watch::{
    unwatched_reason, AlarmStateChange, AlarmWatch, Concern, WatchDuring, WatchedStep,
    CHECK_FAILED, CRITICAL_CHECK_FAILED, MAX_TASK_TOKEN_BYTES, WATCH_GRACE_SECONDS,
};
use canary_core::analysis::{CheckOutcome, CheckVerdict};
use canary_core::health::HealthEvent;
use canary_core::limits::{
    join_bounded, truncate, MAX_ERROR_MESSAGE_BYTES, MAX_SUMMARY_BYTES, MAX_VERDICT_REASONS,
};
use canary_core::metrics::{cluster_dimension, Point};
use canary_core::state::WATCH_UNAVAILABLE_STATES;
use canary_core::{NamedError, RolloutPlan};
use serde::Serialize;
use serde_json::json;
use tracing::{info, warn};

use crate::error::AnalysisError;
use crate::metrics::{self, emit_metrics, utc_time};
use crate::signals::{alarm_outcomes, HealthReads};

/// What a waiting task registered.
#[derive(Debug, Serialize, PartialEq, Eq, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Registered {
    pub watching: bool,
    /// Why not, when not.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<&'static str>,
    /// A watched alarm already failed the check as the watch began: the task was failed at once.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub failed_at_once: bool,
}

/// The APIs a watch's registration uses.
pub struct WatchApis<'a> {
    pub store: &'a dyn AlarmWatchStore,
    pub cloudwatch: &'a dyn CloudWatchApi,
    pub tasks: &'a dyn TaskFailer,
    /// The AWS Health records, read as a watch begins (`awsHealth.onOpenIssue: rollBack`).
    pub health: Option<HealthReads<'a>>,
}

/// The detail-type of the event that says a rollout's instant rollback is off.
pub const INSTANT_ROLLBACK_OFF: &str = "Instant Rollback Off";

/// The watch could not be registered (`error`): its task fails, and the state machine goes on
/// with the polling checks alone (`AlarmWatchUnavailable`), which is all the function's log
/// said before. Said once per rollout, at the first such failure (the execution's history has
/// no watch-unavailable state yet): the metric `AlarmWatchUnavailableAlarm` pages on, and the
/// `Instant Rollback Off` event. Best effort: a history or an event that cannot be had is logged.
pub async fn say_unavailable(
    executions: &dyn ExecutionsApi,
    events: &dyn EventPublisher,
    plan: &RolloutPlan,
    execution_arn: &str,
    error: &AnalysisError,
) {
    match executions.history(execution_arn).await {
        Ok(history)
            if history
                .states
                .iter()
                .any(|state| WATCH_UNAVAILABLE_STATES.contains(&state.name.as_str())) =>
        {
            return
        }
        Ok(_) => {}
        Err(e) => {
            warn!(%execution_arn, error = %e, "could not read whether the watch's failure was said already")
        }
    }
    warn!(%execution_arn, error = %error, "alarm watch unavailable: instant rollback is off, the polling checks alone roll back");
    metrics::alarm_watch_unavailable(plan);
    let detail = json!({
        "executionArn": execution_arn,
        "cluster": {"name": plan.cluster.name, "region": plan.cluster.region},
        "error": error.name().as_str(),
        "cause": truncate(&error.to_string(), MAX_ERROR_MESSAGE_BYTES),
    });
    events.put_or_log(INSTANT_ROLLBACK_OFF, &detail).await;
}

/// Where and when a waiting task registers its watch.
pub struct WaitingTask<'a> {
    pub execution_arn: &'a str,
    pub task_token: &'a str,
    /// `$$.Execution.StartTime`.
    pub execution_start: &'a str,
    pub during: WatchDuring,
    pub step: WatchedStep,
    /// Epoch seconds.
    pub now: i64,
}

/// Puts the execution's watch (replacing its last), unless neither the plan's alarms can decide
/// a check alone nor the plan rolls back on AWS Health issues; the task then simply waits for
/// the other branch to end it. (`rollBack` acts on an open issue at once whatever
/// `failureLimit`: it is not a statistic of the checks.) Then reads the watched alarms and
/// AWS Health records once: an alarm that went to ALARM, or an issue that opened, between the
/// last wait and this one (while the weights were set, or the hooks ran) sent its event when no
/// watch was there, so the task is failed now rather than at the first check.
pub async fn register(
    apis: &WatchApis<'_>,
    plan: &RolloutPlan,
    task: WaitingTask<'_>,
) -> Result<Registered, AnalysisError> {
    let store = apis.store;
    if task.task_token.is_empty() || task.task_token.len() > MAX_TASK_TOKEN_BYTES {
        return Err(AnalysisError::InvalidInput(format!(
            "taskToken must be 1 to {MAX_TASK_TOKEN_BYTES} bytes (watchAlarms runs as a \
             .waitForTaskToken task), got {}",
            task.task_token.len()
        )));
    }
    let since = epoch_seconds(task.execution_start).ok_or_else(|| {
        AnalysisError::InvalidInput(format!(
            "executionStart `{}` is not an RFC 3339 UTC time ($$.Execution.StartTime)",
            truncate(task.execution_start, 64)
        ))
    })?;
    let health_regions = if plan.rolls_back_on_health_issues() {
        plan.regions()
    } else {
        Vec::new()
    };
    let unwatched = unwatched_reason(plan.analysis.as_ref());
    if let (Some(reason), true) = (unwatched, health_regions.is_empty()) {
        info!(execution_arn = %task.execution_arn, reason, "no alarm watch");
        return Ok(Registered {
            watching: false,
            reason: Some(reason),
            failed_at_once: false,
        });
    }
    // Without alarms that decide alone, the watch is the AWS Health issues' only.
    let alarms = match unwatched {
        None => plan
            .analysis
            .as_ref()
            .and_then(|a| a.alarms.as_ref())
            .cloned()
            .unwrap_or_default(),
        Some(_) => Default::default(),
    };
    let watch = AlarmWatch {
        execution_arn: task.execution_arn.to_owned(),
        cluster: cluster_dimension(&plan.cluster.region, &plan.cluster.name),
        task_token: task.task_token.to_owned(),
        names: alarms.names.clone(),
        prefixes: alarms.prefixes.clone(),
        critical: alarms.critical.clone(),
        health_regions,
        since,
        expires_at: task
            .now
            .saturating_add(task.step.seconds(task.during))
            .saturating_add(WATCH_GRACE_SECONDS),
    };
    store.put(&watch).await?;
    info!(
        execution_arn = %task.execution_arn,
        during = ?task.during,
        names = watch.names.len(),
        prefixes = watch.prefixes.len(),
        "watching alarms: a state change to ALARM fails this wait at once"
    );
    let failing: Vec<CheckOutcome> = if unwatched.is_none() {
        alarm_outcomes(apis.cloudwatch, &alarms)
            .await?
            .into_iter()
            .filter(|o| o.verdict == CheckVerdict::Fail)
            .collect()
    } else {
        Vec::new()
    };
    let error = if failing.iter().any(|o| o.critical) {
        CRITICAL_CHECK_FAILED
    } else {
        CHECK_FAILED
    };
    let mut failing: Vec<String> = failing.into_iter().map(|o| o.reason).collect();
    if let Some(health) = apis.health {
        for region in &watch.health_regions {
            let path = health_region_path(health.path, region);
            match health.api.health_records(&path).await {
                Ok(records) => failing.extend(
                    records
                        .iter()
                        .filter(|e| e.holds())
                        .map(HealthEvent::reason_line),
                ),
                // The watch stands (an unreadable record must not turn instant rollback off for
                // the alarms too); every check reads the records again.
                Err(e) => warn!(execution_arn = %task.execution_arn, %path, error = %e,
                                "the AWS Health records could not be read as the watch began"),
            }
        }
    }
    let mut failed_at_once = false;
    if !failing.is_empty() {
        const FOUND: &str = " (found as the alarm watch began)";
        let reasons = join_bounded(
            &failing,
            "; ",
            MAX_VERDICT_REASONS,
            MAX_SUMMARY_BYTES - FOUND.len(),
        );
        let cause = format!("{reasons}{FOUND}");
        failed_at_once = apis.tasks.fail_task(task.task_token, error, &cause).await?;
        if failed_at_once {
            count_failed_check(&watch.cluster);
        }
        store.remove(&watch).await?;
        warn!(execution_arn = %task.execution_arn, %cause,
              "a watched alarm is already in ALARM (or an AWS Health issue open): the wait fails at once");
    }
    Ok(Registered {
        watching: true,
        reason: None,
        failed_at_once,
    })
}

/// Epoch seconds (whole, rounded down) of an RFC 3339 UTC time.
fn epoch_seconds(text: &str) -> Option<i64> {
    let at = utc_time(text)?.duration_since(UNIX_EPOCH).ok()?;
    i64::try_from(at.as_secs()).ok()
}

/// The failed check an alarm stood for, in the rollout's metrics (the polling check that did
/// not run would have counted it).
fn count_failed_check(cluster: &str) {
    emit_metrics(Point::check_result(cluster, false, true));
}

/// What one alarm event did.
#[derive(Debug, Default, Serialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct Reaction {
    pub alarm: String,
    /// Executions whose waiting task this event failed.
    pub failed: Vec<String>,
    /// Executions that watch the alarm but were not waiting any more (a duplicate or late
    /// event, or a bake that just ended): nothing to do.
    pub no_longer_waiting: Vec<String>,
    /// Watches read for this alarm (its name's and the prefix watches) that are not for it:
    /// no other watch is read.
    pub unrelated: usize,
}

/// Fails the waiting task of every rollout `event` concerns with `CheckFailed` (or
/// `CriticalCheckFailed`, for an alarm the plan marks critical), and drops
/// watches that are over. Idempotent: a task fails once; later events find it gone.
pub async fn on_alarm_state_change(
    store: &dyn AlarmWatchStore,
    tasks: &dyn TaskFailer,
    event: &AlarmStateChange,
    now: i64,
) -> Result<Reaction, AnalysisError> {
    let invalid = |e: String| {
        AnalysisError::InvalidInput(format!("not a CloudWatch alarm state change: {e}"))
    };
    event.validate().map_err(invalid)?;
    let changed_at = epoch_seconds(&event.time).ok_or_else(|| {
        invalid(format!(
            "time `{}` is not a UTC time like 2026-11-23T20:00:00Z",
            truncate(&event.time, 64)
        ))
    })?;
    let mut reaction = Reaction {
        alarm: event.alarm_name.clone(),
        ..Reaction::default()
    };
    let cause = event.cause();
    for watch in store.candidates(&event.alarm_name).await? {
        match watch.concerns(event, changed_at, now) {
            Concern::NotWatched => reaction.unrelated += 1,
            Concern::BeforeRollout => {
                info!(execution_arn = %watch.execution_arn, alarm = %event.alarm_name,
                      time = %event.time, "the alarm changed state before this rollout started");
            }
            Concern::Stale => store.remove(&watch).await?,
            Concern::Fails => {
                let failed = tasks
                    .fail_task(
                        &watch.task_token,
                        watch.error_for(&event.alarm_name),
                        &cause,
                    )
                    .await?;
                store.remove(&watch).await?;
                if failed {
                    count_failed_check(&watch.cluster);
                    warn!(execution_arn = %watch.execution_arn, alarm = %event.alarm_name,
                          "alarm went to ALARM: the rollout's wait failed, it rolls back now");
                    reaction.failed.push(watch.execution_arn);
                } else {
                    info!(execution_arn = %watch.execution_arn, alarm = %event.alarm_name,
                          "alarm event for a rollout no longer waiting: nothing to do");
                    reaction.no_longer_waiting.push(watch.execution_arn);
                }
            }
        }
    }
    Ok(reaction)
}

/// What one AWS Health event did to the rollouts' waits.
#[derive(Debug, Default, Serialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct HealthReaction {
    /// Executions whose waiting task the open issue failed (`awsHealth.onOpenIssue: rollBack`).
    pub failed: Vec<String>,
    /// Executions that watch the Region but were not waiting any more.
    pub no_longer_waiting: Vec<String>,
}

/// Fails the waiting task of every rollout that rolls back on an open AWS Health issue in the
/// event's Region, with `CheckFailed` and the issue as the cause. A closed issue, or one of a
/// service rollouts do not depend on, fails nothing. Idempotent, as for alarms.
pub async fn on_health_event(
    store: &dyn AlarmWatchStore,
    tasks: &dyn TaskFailer,
    event: &HealthEvent,
    now: i64,
) -> Result<HealthReaction, AnalysisError> {
    let mut reaction = HealthReaction::default();
    if !event.holds() {
        return Ok(reaction);
    }
    let cause = truncate(
        &format!(
            "{} (its AWS Health event, before the next check)",
            event.reason_line()
        ),
        MAX_SUMMARY_BYTES,
    );
    for watch in store.watching_region(&event.region).await? {
        match watch.concerns_health(&event.region, now) {
            Concern::Fails => {
                let failed = tasks
                    .fail_task(&watch.task_token, CHECK_FAILED, &cause)
                    .await?;
                store.remove(&watch).await?;
                if failed {
                    count_failed_check(&watch.cluster);
                    warn!(execution_arn = %watch.execution_arn, region = %event.region,
                          "an open AWS Health issue in the rollout's Region: its wait failed, it rolls back now");
                    reaction.failed.push(watch.execution_arn);
                } else {
                    reaction.no_longer_waiting.push(watch.execution_arn);
                }
            }
            Concern::Stale => store.remove(&watch).await?,
            Concern::NotWatched | Concern::BeforeRollout => {}
        }
    }
    Ok(reaction)
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;

    use async_trait::async_trait;
    use canary_aws::fakes::FakeCloudWatch;
    use canary_aws::{AlarmStateValue, AwsError};

    use super::*;

    #[derive(Default)]
    struct Store(Mutex<Vec<AlarmWatch>>);

    #[async_trait]
    impl AlarmWatchStore for Store {
        async fn put(&self, watch: &AlarmWatch) -> Result<(), AwsError> {
            let mut all = self.0.lock().unwrap();
            all.retain(|w| w.execution_arn != watch.execution_arn);
            all.push(watch.clone());
            Ok(())
        }
        /// As the table answers: the watches stored under the alarm's name key or the
        /// prefixes key, nothing else.
        async fn candidates(&self, alarm_name: &str) -> Result<Vec<AlarmWatch>, AwsError> {
            let keys = [
                canary_core::alarm_watch::name_key(alarm_name),
                canary_core::alarm_watch::PREFIXES_KEY.to_owned(),
            ];
            Ok(self
                .0
                .lock()
                .unwrap()
                .iter()
                .filter(|w| w.lookup_keys().iter().any(|k| keys.contains(k)))
                .cloned()
                .collect())
        }
        async fn watching_region(&self, region: &str) -> Result<Vec<AlarmWatch>, AwsError> {
            let key = canary_core::alarm_watch::health_key(region);
            Ok(self
                .0
                .lock()
                .unwrap()
                .iter()
                .filter(|w| w.lookup_keys().contains(&key))
                .cloned()
                .collect())
        }
        async fn remove(&self, watch: &AlarmWatch) -> Result<(), AwsError> {
            self.0.lock().unwrap().retain(|w| {
                !(w.execution_arn == watch.execution_arn && w.task_token == watch.task_token)
            });
            Ok(())
        }
    }

    /// Step Functions: a token answers once.
    #[derive(Default)]
    struct Tasks(Mutex<Vec<(String, String, String)>>);

    #[async_trait]
    impl TaskFailer for Tasks {
        async fn fail_task(&self, token: &str, error: &str, cause: &str) -> Result<bool, AwsError> {
            let mut failed = self.0.lock().unwrap();
            if failed.iter().any(|(t, _, _)| t == token) {
                return Ok(false);
            }
            failed.push((token.to_owned(), error.to_owned(), cause.to_owned()));
            Ok(true)
        }
    }

    #[derive(Default)]
    struct Env {
        store: Store,
        alarms: FakeCloudWatch,
        tasks: Tasks,
    }

    impl Env {
        fn apis(&self) -> WatchApis<'_> {
            WatchApis {
                store: &self.store,
                cloudwatch: &self.alarms,
                tasks: &self.tasks,
                health: None,
            }
        }
    }

    const ARN: &str = "arn:aws:states:us-east-1:123456789012:execution:cc-rollout:";

    fn plan(analysis: serde_json::Value) -> RolloutPlan {
        let mut plan = serde_json::json!({
            "cluster": {"name": "green", "region": "us-east-1"},
            "trafficTargets": [{"alb": {
                "listenerArn": "arn:aws:elasticloadbalancing:us-east-1:123456789012:listener/app/web/1/2",
                "stableTargetGroupArn": "arn:aws:elasticloadbalancing:us-east-1:123456789012:targetgroup/blue/1",
                "canaryTargetGroupArn": "arn:aws:elasticloadbalancing:us-east-1:123456789012:targetgroup/green/1"}}],
            "steps": [{"weight": 100}],
            "bake": {"seconds": 180, "checkIntervalSeconds": 60},
        });
        plan["analysis"] = analysis;
        RolloutPlan::parse(plan).unwrap().plan
    }

    fn task<'a>(name: &'a str, arn: &'a str) -> WaitingTask<'a> {
        WaitingTask {
            execution_arn: arn,
            task_token: name,
            execution_start: "2026-11-23T20:00:00.000Z",
            during: WatchDuring::Bake,
            step: WatchedStep {
                checks: 3,
                check_interval_seconds: 60,
                approval_timeout_seconds: 0,
            },
            now: 1_000,
        }
    }

    /// Registers a watch of the alarm `api-5xx` for execution `<ARN>a` with `token-a`; its ARN.
    async fn watching_5xx(env: &Env) -> String {
        let a = format!("{ARN}a");
        let p = plan(serde_json::json!({"alarms": {"names": ["api-5xx"]}}));
        register(&env.apis(), &p, task("token-a", &a))
            .await
            .unwrap();
        a
    }

    fn alarm(name: &str) -> AlarmStateChange {
        AlarmStateChange {
            alarm_name: name.to_owned(),
            state: "ALARM".to_owned(),
            reason: "Threshold Crossed".to_owned(),
            time: "2026-11-23T20:05:00Z".to_owned(),
            account: "123456789012".to_owned(),
            region: "us-east-1".to_owned(),
        }
    }

    /// AWS Health's records, one Region's each (`health_region_path`).
    struct Records(Vec<(String, HealthEvent)>);

    #[async_trait]
    impl canary_aws::FreezeApi for Records {
        async fn calendar_state(&self, _: &str) -> Result<canary_aws::CalendarReading, AwsError> {
            unreachable!("no calendar in these tests")
        }
        async fn switch(&self, _: &str) -> Result<canary_core::freeze::FreezeSwitch, AwsError> {
            unreachable!("no switch in these tests")
        }
        async fn health_records(&self, path: &str) -> Result<Vec<HealthEvent>, AwsError> {
            if path.starts_with("/unreadable/") {
                return Err(AwsError::new(
                    canary_aws::AwsErrorKind::Transient,
                    "GetParametersByPath",
                    "throttled",
                ));
            }
            Ok(self
                .0
                .iter()
                .filter(|(at, _)| at == path)
                .map(|(_, e)| e.clone())
                .collect())
        }
    }

    #[tokio::test]
    async fn a_plan_that_rolls_back_on_health_issues_is_watched_for_them_and_fails_on_one_found_open(
    ) {
        let env = Env::default();
        let open = HealthEvent::parse(&serde_json::json!({
            "eventArn": "arn:aws:health:us-east-1::event/EKS/X/X_2", "service": "EKS",
            "eventTypeCode": "AWS_EKS_OPERATIONAL_ISSUE", "statusCode": "open",
            "eventRegion": "us-east-1", "startTime": "Fri, 27 Nov 2026 06:02:51 GMT"}))
        .unwrap();
        let records = Records(vec![("/cc/health/us-east-1".to_owned(), open)]);
        let quiet = Records(Vec::new());
        // failureLimit 2: the alarms cannot decide alone, an open issue can.
        let mut rolls_back =
            plan(serde_json::json!({"alarms": {"names": ["api-5xx"]}, "failureLimit": 2}));
        rolls_back.aws_health = Some(canary_core::plan::AwsHealthSection {
            on_open_issue: canary_core::plan::OnOpenIssue::RollBack,
        });
        let apis = |records| WatchApis {
            health: Some(HealthReads {
                api: records,
                path: "/cc/health",
            }),
            ..env.apis()
        };
        let watched = register(
            &apis(&quiet),
            &rolls_back,
            task("token-q", &format!("{ARN}q")),
        )
        .await
        .unwrap();
        assert_eq!((watched.watching, watched.failed_at_once), (true, false));
        let stored = env.store.0.lock().unwrap().clone();
        assert!(
            stored.iter().all(|w| w.names.is_empty()),
            "the alarms are the checks' to count"
        );
        let found = register(
            &apis(&records),
            &rolls_back,
            task("token-f", &format!("{ARN}f")),
        )
        .await
        .unwrap();
        assert!(found.failed_at_once);
        // Records it cannot read: the watch stands, the checks will read them again.
        let unreadable = WatchApis {
            health: Some(HealthReads {
                api: &quiet,
                path: "/unreadable",
            }),
            ..env.apis()
        };
        let stood = register(
            &unreadable,
            &rolls_back,
            task("token-u", &format!("{ARN}u")),
        )
        .await
        .unwrap();
        assert_eq!((stood.watching, stood.failed_at_once), (true, false));
        let failed = env.tasks.0.lock().unwrap().clone();
        assert_eq!(failed[0].0, "token-f");
        assert!(
            failed[0]
                .2
                .starts_with("AWS Health: an open EKS issue in us-east-1")
                && failed[0].2.ends_with("(found as the alarm watch began)"),
            "{}",
            failed[0].2
        );
    }

    #[tokio::test]
    async fn an_open_health_issue_fails_only_the_rollouts_that_roll_back_in_its_region() {
        let env = Env::default();
        let (a, b) = (format!("{ARN}a"), format!("{ARN}b"));
        let mut rolls_back = plan(serde_json::json!({"alarms": {"names": ["api-5xx"]}}));
        rolls_back.aws_health = Some(canary_core::plan::AwsHealthSection {
            on_open_issue: canary_core::plan::OnOpenIssue::RollBack,
        });
        let holds = plan(serde_json::json!({"alarms": {"names": ["api-5xx"]}}));
        register(&env.apis(), &rolls_back, task("token-a", &a))
            .await
            .unwrap();
        register(&env.apis(), &holds, task("token-b", &b))
            .await
            .unwrap();
        let issue = |region: &str, status: &str| {
            HealthEvent::parse(&serde_json::json!({
                "eventArn": format!("arn:aws:health:{region}::event/EKS/X/X_1"), "service": "EKS",
                "eventTypeCode": "AWS_EKS_OPERATIONAL_ISSUE", "statusCode": status,
                "eventRegion": region, "startTime": "Fri, 27 Nov 2026 06:02:51 GMT"}))
            .unwrap()
        };
        let (store, tasks) = (&env.store, &env.tasks);
        let elsewhere = on_health_event(store, tasks, &issue("eu-west-1", "open"), 1_000).await;
        assert_eq!(elsewhere.unwrap(), HealthReaction::default());
        let closed = on_health_event(store, tasks, &issue("us-east-1", "closed"), 1_000).await;
        assert_eq!(closed.unwrap(), HealthReaction::default());
        let open = on_health_event(store, tasks, &issue("us-east-1", "open"), 1_000)
            .await
            .unwrap();
        assert_eq!(
            open.failed,
            [a],
            "the rollout that holds is left to its freeze"
        );
        let failed = env.tasks.0.lock().unwrap().clone();
        assert_eq!(failed.len(), 1);
        assert_eq!(
            (failed[0].0.as_str(), failed[0].1.as_str()),
            ("token-a", CHECK_FAILED)
        );
        assert!(failed[0]
            .2
            .starts_with("AWS Health: an open EKS issue in us-east-1"));
        let again = on_health_event(store, tasks, &issue("us-east-1", "open"), 1_000).await;
        assert_eq!(
            again.unwrap(),
            HealthReaction::default(),
            "its watch is gone"
        );
    }

    #[tokio::test]
    async fn only_the_rollout_watching_the_alarm_fails_and_only_once() {
        let env = Env::default();
        let (store, tasks) = (&env.store, &env.tasks);
        let (a, b) = (format!("{ARN}a"), format!("{ARN}b"));
        let watching_5xx = plan(serde_json::json!({"alarms": {"names": ["api-5xx"]}}));
        let watching_latency = plan(serde_json::json!({"alarms": {"prefixes": ["latency-"]}}));
        register(&env.apis(), &watching_5xx, task("token-a", &a))
            .await
            .unwrap();
        register(&env.apis(), &watching_latency, task("token-b", &b))
            .await
            .unwrap();

        let reaction = on_alarm_state_change(store, tasks, &alarm("api-5xx"), 1_100)
            .await
            .unwrap();
        assert_eq!(reaction.failed, std::slice::from_ref(&a));
        assert_eq!(reaction.unrelated, 1);
        let failed = tasks.0.lock().unwrap().clone();
        assert_eq!(failed.len(), 1);
        assert_eq!(
            (failed[0].0.as_str(), failed[0].1.as_str()),
            ("token-a", "CheckFailed")
        );
        assert!(failed[0].2.starts_with("alarm api-5xx went to ALARM"));

        // The same event again (EventBridge delivers at least once): the watch is gone.
        let again = on_alarm_state_change(store, tasks, &alarm("api-5xx"), 1_101)
            .await
            .unwrap();
        assert!(again.failed.is_empty());
        assert_eq!(tasks.0.lock().unwrap().len(), 1);
    }

    #[tokio::test]
    async fn a_task_no_longer_waiting_is_reported_and_its_watch_dropped() {
        let env = Env::default();
        let (store, tasks) = (&env.store, &env.tasks);
        let a = watching_5xx(&env).await;
        tasks
            .fail_task("token-a", "CheckFailed", "by the polling check")
            .await
            .unwrap();
        let reaction = on_alarm_state_change(store, tasks, &alarm("api-5xx"), 1_100)
            .await
            .unwrap();
        assert_eq!(reaction.no_longer_waiting, [a]);
        assert!(store.0.lock().unwrap().is_empty());
    }

    #[tokio::test]
    async fn a_stale_watch_is_dropped_without_failing_anything() {
        let env = Env::default();
        let (store, tasks) = (&env.store, &env.tasks);
        watching_5xx(&env).await;
        let after = 1_000 + 180 + WATCH_GRACE_SECONDS + 1;
        let reaction = on_alarm_state_change(store, tasks, &alarm("api-5xx"), after)
            .await
            .unwrap();
        assert!(reaction.failed.is_empty());
        assert!(tasks.0.lock().unwrap().is_empty());
        assert!(store.0.lock().unwrap().is_empty());
    }

    #[tokio::test]
    async fn a_change_before_the_rollout_started_fails_nothing() {
        let env = Env::default();
        let a = format!("{ARN}a");
        let p = plan(serde_json::json!({"alarms": {"names": ["api-5xx"]}}));
        // Step Functions writes `…Z`; emulators `…+00:00`: the same instant either way.
        for start in [
            "2026-11-23T20:00:00.000Z",
            "2026-11-23T20:00:00.000000+00:00",
        ] {
            let started = WaitingTask {
                execution_start: start,
                ..task("token-a", &a)
            };
            register(&env.apis(), &p, started).await.unwrap();
            let earlier = AlarmStateChange {
                time: "2026-11-23T19:59:59Z".to_owned(),
                ..alarm("api-5xx")
            };
            let reaction = on_alarm_state_change(&env.store, &env.tasks, &earlier, 1_100)
                .await
                .unwrap();
            assert!(
                reaction.failed.is_empty() && reaction.unrelated == 0,
                "{start}"
            );
        }
        assert!(env.tasks.0.lock().unwrap().is_empty());
        assert_eq!(env.store.0.lock().unwrap().len(), 1, "the watch stays");
    }

    #[tokio::test]
    async fn plans_the_event_cannot_decide_alone_register_nothing() {
        let env = Env::default();
        let store = &env.store;
        let a = format!("{ARN}a");
        let counted = plan(serde_json::json!({"alarms": {"names": ["x"]}, "failureLimit": 3}));
        let registered = register(&env.apis(), &counted, task("token-a", &a))
            .await
            .unwrap();
        assert!(!registered.watching);
        assert!(store.0.lock().unwrap().is_empty());
    }

    #[tokio::test]
    async fn an_alarm_already_in_alarm_as_the_watch_begins_fails_the_wait_at_once() {
        let env = Env::default();
        let a = format!("{ARN}a");
        env.alarms.set("web-green-5xx", AlarmStateValue::Alarm);
        env.alarms.set("web-green-latency", AlarmStateValue::Ok);
        let p = plan(serde_json::json!({"alarms": {"prefixes": ["web-green-"]}}));
        let registered = register(&env.apis(), &p, task("token-a", &a))
            .await
            .unwrap();
        assert!(registered.watching && registered.failed_at_once);
        let failed = env.tasks.0.lock().unwrap().clone();
        assert_eq!(failed.len(), 1);
        assert_eq!(failed[0].1, CHECK_FAILED);
        assert!(
            failed[0].2.starts_with("alarm web-green-5xx is ALARM")
                && failed[0].2.ends_with("(found as the alarm watch began)"),
            "{}",
            failed[0].2
        );
        assert!(env.store.0.lock().unwrap().is_empty(), "its watch is done");
        assert!(failed[0].2.len() <= MAX_SUMMARY_BYTES);

        // All OK: the watch stays and nothing fails.
        env.alarms.set("web-green-5xx", AlarmStateValue::Ok);
        let b = format!("{ARN}b");
        let quiet = register(&env.apis(), &p, task("token-b", &b))
            .await
            .unwrap();
        assert!(quiet.watching && !quiet.failed_at_once);
        assert_eq!(env.tasks.0.lock().unwrap().len(), 1);
        assert_eq!(env.store.0.lock().unwrap().len(), 1);
    }

    #[tokio::test]
    async fn a_critical_alarm_fails_the_wait_with_the_error_that_skips_a_gradual_rollback() {
        let env = Env::default();
        let (a, b) = (format!("{ARN}a"), format!("{ARN}b"));
        let p = plan(
            serde_json::json!({"alarms": {"prefixes": ["web-green-"], "critical": ["web-green-5xx"]}}),
        );
        env.alarms.set("web-green-latency", AlarmStateValue::Ok);
        env.alarms.set("web-green-5xx", AlarmStateValue::Ok);
        register(&env.apis(), &p, task("token-a", &a))
            .await
            .unwrap();
        for (name, at) in [("web-green-latency", 1_100), ("web-green-5xx", 1_101)] {
            on_alarm_state_change(&env.store, &env.tasks, &alarm(name), at)
                .await
                .unwrap();
            register(&env.apis(), &p, task("token-b", &b))
                .await
                .unwrap();
        }
        let errors: Vec<String> = env
            .tasks
            .0
            .lock()
            .unwrap()
            .iter()
            .map(|f| f.1.clone())
            .collect();
        assert_eq!(errors, [CHECK_FAILED, CRITICAL_CHECK_FAILED]);

        // Already in ALARM as a watch begins: the same.
        env.alarms.set("web-green-5xx", AlarmStateValue::Alarm);
        let c = format!("{ARN}c");
        let registered = register(&env.apis(), &p, task("token-c", &c))
            .await
            .unwrap();
        assert!(registered.failed_at_once);
        assert_eq!(env.tasks.0.lock().unwrap()[2].1, CRITICAL_CHECK_FAILED);
    }

    #[tokio::test]
    async fn the_cause_stays_bounded_with_the_most_alarms_in_alarm() {
        let env = Env::default();
        for i in 0..canary_core::limits::MAX_ALARMS {
            env.alarms.set(
                &format!("web-green-{i:03}-{}", "x".repeat(240)),
                AlarmStateValue::Alarm,
            );
        }
        let p = plan(serde_json::json!({"alarms": {"prefixes": ["web-green-"]}}));
        let a = format!("{ARN}a");
        register(&env.apis(), &p, task("token-a", &a))
            .await
            .unwrap();
        let cause = env.tasks.0.lock().unwrap()[0].2.clone();
        assert!(cause.len() <= MAX_SUMMARY_BYTES, "{}", cause.len());
        assert!(
            cause.ends_with("(found as the alarm watch began)"),
            "{cause}"
        );
        assert!(cause.contains("… and 195 more"), "{cause}");
    }

    #[tokio::test]
    async fn bad_tokens_and_events_are_refused_and_change_nothing() {
        let env = Env::default();
        let (store, tasks) = (&env.store, &env.tasks);
        let a = format!("{ARN}a");
        let p = plan(serde_json::json!({"alarms": {"names": ["api-5xx"]}}));
        let empty = register(&env.apis(), &p, task("", &a)).await.unwrap_err();
        assert!(empty.to_string().contains("taskToken"), "{empty}");
        let long = "t".repeat(MAX_TASK_TOKEN_BYTES + 1);
        assert!(register(&env.apis(), &p, task(&long, &a)).await.is_err());
        let unstarted = WaitingTask {
            execution_start: "when it began",
            ..task("token-a", &a)
        };
        let refused = register(&env.apis(), &p, unstarted).await.unwrap_err();
        assert!(
            refused
                .to_string()
                .contains("executionStart `when it began` is not"),
            "{refused}"
        );
        assert!(store.0.lock().unwrap().is_empty());

        register(&env.apis(), &p, task("token-a", &a))
            .await
            .unwrap();
        let bad = AlarmStateChange {
            time: "not a time".to_owned(),
            ..alarm("api-5xx")
        };
        let refused = on_alarm_state_change(store, tasks, &bad, 1_100)
            .await
            .unwrap_err();
        assert!(
            refused.to_string().contains(
                "not a CloudWatch alarm state change: time `not a time` is not a UTC time"
            ),
            "{refused}"
        );
        assert!(tasks.0.lock().unwrap().is_empty());
        assert_eq!(store.0.lock().unwrap().len(), 1);
    }
}
