//! Instant rollback (`canary_core::alarm_watch`): [`register`] the watch a bake or approval
//! wait keeps while its task waits, and [`on_alarm_state_change`]: fail the task of every
//! running rollout the alarm's event concerns.

use canary_aws::{AlarmWatchStore, TaskFailer};
use canary_core::alarm_watch::{
    unwatched_reason, AlarmStateChange, AlarmWatch, Concern, WatchDuring, WatchedStep,
    CHECK_FAILED, MAX_TASK_TOKEN_BYTES, WATCH_GRACE_SECONDS,
};
use canary_core::RolloutPlan;
use serde::Serialize;
use tracing::{info, warn};

use crate::error::AnalysisError;

/// What a waiting task registered.
#[derive(Debug, Serialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct Registered {
    pub watching: bool,
    /// Why not, when not.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<&'static str>,
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

/// Puts the execution's watch (replacing its last), unless the plan's alarms cannot decide a
/// check alone; the task then simply waits for the other branch to end it.
pub async fn register(
    store: &dyn AlarmWatchStore,
    plan: &RolloutPlan,
    task: WaitingTask<'_>,
) -> Result<Registered, AnalysisError> {
    if task.task_token.is_empty() || task.task_token.len() > MAX_TASK_TOKEN_BYTES {
        return Err(AnalysisError::InvalidInput(format!(
            "taskToken must be 1 to {MAX_TASK_TOKEN_BYTES} bytes (watchAlarms runs as a \
             .waitForTaskToken task), got {}",
            task.task_token.len()
        )));
    }
    if let Some(reason) = unwatched_reason(plan.analysis.as_ref()) {
        info!(execution_arn = %task.execution_arn, reason, "no alarm watch");
        return Ok(Registered {
            watching: false,
            reason: Some(reason),
        });
    }
    let alarms = plan
        .analysis
        .as_ref()
        .and_then(|a| a.alarms.as_ref())
        .cloned()
        .unwrap_or_default();
    let watch = AlarmWatch {
        execution_arn: task.execution_arn.to_owned(),
        task_token: task.task_token.to_owned(),
        names: alarms.names,
        prefixes: alarms.prefixes,
        since: task.execution_start.to_owned(),
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
    Ok(Registered {
        watching: true,
        reason: None,
    })
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
    /// Watches in the table this alarm is not for.
    pub unrelated: usize,
}

/// Fails the waiting task of every rollout `event` concerns with `CheckFailed`, and drops
/// watches that are over. Idempotent: a task fails once; later events find it gone.
pub async fn on_alarm_state_change(
    store: &dyn AlarmWatchStore,
    tasks: &dyn TaskFailer,
    event: &AlarmStateChange,
    now: i64,
) -> Result<Reaction, AnalysisError> {
    event.validate().map_err(|e| {
        AnalysisError::InvalidInput(format!("not a CloudWatch alarm state change: {e}"))
    })?;
    let mut reaction = Reaction {
        alarm: event.alarm_name.clone(),
        ..Reaction::default()
    };
    let cause = event.cause();
    for watch in store.all().await? {
        match watch.concerns(event, now) {
            Concern::NotWatched => reaction.unrelated += 1,
            Concern::BeforeRollout => {
                info!(execution_arn = %watch.execution_arn, alarm = %event.alarm_name,
                      time = %event.time, "the alarm changed state before this rollout started");
            }
            Concern::Stale => {
                store
                    .remove(&watch.execution_arn, &watch.task_token)
                    .await?
            }
            Concern::Fails => {
                let failed = tasks
                    .fail_task(&watch.task_token, CHECK_FAILED, &cause)
                    .await?;
                store
                    .remove(&watch.execution_arn, &watch.task_token)
                    .await?;
                if failed {
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

#[cfg(test)]
mod tests {
    use std::sync::Mutex;

    use async_trait::async_trait;
    use canary_aws::AwsError;

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
        async fn all(&self) -> Result<Vec<AlarmWatch>, AwsError> {
            Ok(self.0.lock().unwrap().clone())
        }
        async fn remove(&self, execution_arn: &str, task_token: &str) -> Result<(), AwsError> {
            self.0
                .lock()
                .unwrap()
                .retain(|w| !(w.execution_arn == execution_arn && w.task_token == task_token));
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

    #[tokio::test]
    async fn only_the_rollout_watching_the_alarm_fails_and_only_once() {
        let (store, tasks) = (Store::default(), Tasks::default());
        let (a, b) = (format!("{ARN}a"), format!("{ARN}b"));
        let watching_5xx = plan(serde_json::json!({"alarms": {"names": ["api-5xx"]}}));
        let watching_latency = plan(serde_json::json!({"alarms": {"prefixes": ["latency-"]}}));
        register(&store, &watching_5xx, task("token-a", &a))
            .await
            .unwrap();
        register(&store, &watching_latency, task("token-b", &b))
            .await
            .unwrap();

        let reaction = on_alarm_state_change(&store, &tasks, &alarm("api-5xx"), 1_100)
            .await
            .unwrap();
        assert_eq!(reaction.failed, [a.clone()]);
        assert_eq!(reaction.unrelated, 1);
        let failed = tasks.0.lock().unwrap().clone();
        assert_eq!(failed.len(), 1);
        assert_eq!(
            (failed[0].0.as_str(), failed[0].1.as_str()),
            ("token-a", "CheckFailed")
        );
        assert!(failed[0].2.starts_with("alarm api-5xx went to ALARM"));

        // The same event again (EventBridge delivers at least once): the watch is gone.
        let again = on_alarm_state_change(&store, &tasks, &alarm("api-5xx"), 1_101)
            .await
            .unwrap();
        assert!(again.failed.is_empty());
        assert_eq!(tasks.0.lock().unwrap().len(), 1);
    }

    #[tokio::test]
    async fn a_task_no_longer_waiting_is_reported_and_its_watch_dropped() {
        let (store, tasks) = (Store::default(), Tasks::default());
        let a = format!("{ARN}a");
        let p = plan(serde_json::json!({"alarms": {"names": ["api-5xx"]}}));
        register(&store, &p, task("token-a", &a)).await.unwrap();
        tasks
            .fail_task("token-a", "CheckFailed", "by the polling check")
            .await
            .unwrap();
        let reaction = on_alarm_state_change(&store, &tasks, &alarm("api-5xx"), 1_100)
            .await
            .unwrap();
        assert_eq!(reaction.no_longer_waiting, [a]);
        assert!(store.0.lock().unwrap().is_empty());
    }

    #[tokio::test]
    async fn a_stale_watch_is_dropped_without_failing_anything() {
        let (store, tasks) = (Store::default(), Tasks::default());
        let a = format!("{ARN}a");
        let p = plan(serde_json::json!({"alarms": {"names": ["api-5xx"]}}));
        register(&store, &p, task("token-a", &a)).await.unwrap();
        let after = 1_000 + 180 + WATCH_GRACE_SECONDS + 1;
        let reaction = on_alarm_state_change(&store, &tasks, &alarm("api-5xx"), after)
            .await
            .unwrap();
        assert!(reaction.failed.is_empty());
        assert!(tasks.0.lock().unwrap().is_empty());
        assert!(store.0.lock().unwrap().is_empty());
    }

    #[tokio::test]
    async fn plans_the_event_cannot_decide_alone_register_nothing() {
        let store = Store::default();
        let a = format!("{ARN}a");
        let counted = plan(serde_json::json!({"alarms": {"names": ["x"]}, "failureLimit": 3}));
        let registered = register(&store, &counted, task("token-a", &a))
            .await
            .unwrap();
        assert!(!registered.watching);
        assert!(store.0.lock().unwrap().is_empty());
    }

    #[tokio::test]
    async fn bad_tokens_and_events_are_refused_and_change_nothing() {
        let (store, tasks) = (Store::default(), Tasks::default());
        let a = format!("{ARN}a");
        let p = plan(serde_json::json!({"alarms": {"names": ["api-5xx"]}}));
        let empty = register(&store, &p, task("", &a)).await.unwrap_err();
        assert!(empty.to_string().contains("taskToken"), "{empty}");
        let long = "t".repeat(MAX_TASK_TOKEN_BYTES + 1);
        assert!(register(&store, &p, task(&long, &a)).await.is_err());
        assert!(store.0.lock().unwrap().is_empty());

        register(&store, &p, task("token-a", &a)).await.unwrap();
        let bad = AlarmStateChange {
            time: "not a time".to_owned(),
            ..alarm("api-5xx")
        };
        let refused = on_alarm_state_change(&store, &tasks, &bad, 1_100)
            .await
            .unwrap_err();
        assert!(refused
            .to_string()
            .contains("not a CloudWatch alarm state change"));
        assert!(tasks.0.lock().unwrap().is_empty());
        assert_eq!(store.0.lock().unwrap().len(), 1);
    }
}
