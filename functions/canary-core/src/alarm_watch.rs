//! Instant rollback: which running rollout a CloudWatch alarm's state change fails.
//!
//! While a step bakes (or waits for an approval) the rollout keeps one [`AlarmWatch`]: the
//! alarms its plan watches and the task token of a `.waitForTaskToken` task that waits beside
//! the polling checks. CloudWatch tells EventBridge the instant an alarm changes state; the
//! template's `AlarmStateChange` rule hands that [`AlarmStateChange`] to evaluate-alarms, which
//! fails the task of every watch it [`concerns`](AlarmWatch::concerns) with `CheckFailed` and
//! the [`cause`](AlarmStateChange::cause): the bake ends through the state machine's normal
//! failure path at once, not at the next check. Pure: the store and Step Functions are behind
//! traits in canary-aws.

use serde::Deserialize;

use crate::analysis::{AlarmChecks, AnalysisSection};
use crate::limits::{truncate, MAX_LINE_BYTES, MAX_SUMMARY_BYTES};

/// The error a failing check ends a bake or approval wait with (the state machine's own
/// `CheckFailed` Fail states use it too): an alarm event fails the waiting task with it.
pub const CHECK_FAILED: &str = "CheckFailed";
/// The error a failing check ends a bake with when an alarm the plan marks critical failed it
/// (`analysis.alarms.critical`): the rollback goes straight to the baseline, never gradually.
pub const CRITICAL_CHECK_FAILED: &str = "CriticalCheckFailed";
/// Longest task token Step Functions issues (`SendTaskFailure` takes at most 1,024).
pub const MAX_TASK_TOKEN_BYTES: usize = 1024;
/// How long a watch outlives the bake or approval wait it was registered for: Evaluate's
/// retries (up to about 5 minutes) and slow hooks can stretch a bake past checks × interval.
/// A watch past its time is stale and ignored; the next watch of the execution replaces it.
pub const WATCH_GRACE_SECONDS: i64 = 15 * 60;

/// The alarms one running rollout watches now, and the task its alarm events fail.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AlarmWatch {
    pub execution_arn: String,
    /// The rollout's cluster as the metrics name it (`region/name`): the failed check is
    /// counted for it.
    pub cluster: String,
    /// Fails the waiting task. Never logged nor returned.
    pub task_token: String,
    pub names: Vec<String>,
    pub prefixes: Vec<String>,
    /// The alarms of `names`/`prefixes` the plan marks critical: their event fails the task
    /// with [`CRITICAL_CHECK_FAILED`].
    pub critical: Vec<String>,
    /// The Regions whose open AWS Health issue fails the wait (`awsHealth.onOpenIssue:
    /// rollBack`): each a lookup key of its own (`crate::health`).
    pub health_regions: Vec<String>,
    /// The execution's start (`$$.Execution.StartTime`), epoch seconds: an alarm that changed
    /// state before it is not this rollout's to act on.
    pub since: i64,
    /// Epoch seconds after which the watch is stale.
    pub expires_at: i64,
}

/// The store's lookup key of the watches that name an alarm exactly.
pub fn name_key(alarm_name: &str) -> String {
    format!("name#{alarm_name}")
}

/// The store's lookup key of every watch with prefixes: an alarm event reads them all (a
/// bounded read: one per running rollout that watches by prefix).
pub const PREFIXES_KEY: &str = "prefixes";

/// The store's lookup key of the watches an open AWS Health issue in `region` fails.
pub fn health_key(region: &str) -> String {
    format!("health#{region}")
}

impl AlarmWatch {
    /// The error that fails this watch's task for `alarm`.
    pub fn error_for(&self, alarm: &str) -> &'static str {
        if self.critical.iter().any(|name| name == alarm) {
            CRITICAL_CHECK_FAILED
        } else {
            CHECK_FAILED
        }
    }

    /// The keys the watch is stored under, one copy each: every exact name's, and the
    /// prefixes' if it has any. An alarm event reads its name's key and the prefixes' key,
    /// never the whole store.
    pub fn lookup_keys(&self) -> Vec<String> {
        let mut keys: Vec<String> = self.names.iter().map(|n| name_key(n)).collect();
        keys.sort();
        keys.dedup();
        if !self.prefixes.is_empty() {
            keys.push(PREFIXES_KEY.to_owned());
        }
        keys.extend(self.health_regions.iter().map(|r| health_key(r)));
        keys
    }

    /// Whether an open AWS Health issue (in `region`, at `now`) fails this watch's wait. By
    /// Region alone, not account and Region as an alarm: a public issue concerns every account
    /// there, and an account-specific one reaches only the bus of the account it concerns, the
    /// stack's, whose load balancers and records the rollout shifts (the stack forwards no
    /// other account's AWS Health events).
    pub fn concerns_health(&self, region: &str, now: i64) -> Concern {
        if !self.health_regions.iter().any(|r| r == region) {
            Concern::NotWatched
        } else if now > self.expires_at {
            Concern::Stale
        } else {
            Concern::Fails
        }
    }
}

/// What a waiting task is waiting through, and so how long its watch can be needed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum WatchDuring {
    /// A step's bake: `checks` checks `checkIntervalSeconds` apart.
    Bake,
    /// The wait for a person's approval: `approvalTimeoutSeconds`.
    Approval,
}

/// The resolved step a watch is registered in (the state machine's `$.cursor.step`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct WatchedStep {
    pub checks: i64,
    pub check_interval_seconds: i64,
    #[serde(default)]
    pub approval_timeout_seconds: i64,
}

impl WatchedStep {
    /// How long the wait can last, without the grace.
    pub fn seconds(&self, during: WatchDuring) -> i64 {
        match during {
            WatchDuring::Bake => self
                .checks
                .max(0)
                .saturating_mul(self.check_interval_seconds.max(0)),
            WatchDuring::Approval => self.approval_timeout_seconds.max(0),
        }
    }
}

/// Why a plan gets no watch: its bakes are judged by the polling checks alone.
pub fn unwatched_reason(analysis: Option<&AnalysisSection>) -> Option<&'static str> {
    let Some(analysis) = analysis else {
        return Some("the plan has no analysis section");
    };
    let Some(alarms) = &analysis.alarms else {
        return Some("the plan watches no alarms");
    };
    if alarms.names.is_empty() && alarms.prefixes.is_empty() {
        return Some("the plan watches no alarms");
    }
    // One alarm in ALARM is one failing check; only where one failing check rolls back can
    // the event alone decide. Above that, the checks count the failures in a row.
    if analysis.failure_limit() > 1 {
        return Some("failureLimit is above 1: the polling checks count failures in a row");
    }
    None
}

/// A `CloudWatch Alarm State Change` event, as the template's rule passes it on.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct AlarmStateChange {
    pub alarm_name: String,
    /// `ALARM`, `OK` or `INSUFFICIENT_DATA`: the rule passes only `ALARM`.
    pub state: String,
    #[serde(default)]
    pub reason: String,
    /// The event's time (RFC 3339 UTC, `2026-11-23T20:00:00Z`), read where it is used.
    pub time: String,
    pub account: String,
    pub region: String,
}

impl AlarmStateChange {
    /// Refuses an event no CloudWatch alarm change could produce, saying what is wrong (its
    /// time is checked where it is parsed).
    pub fn validate(&self) -> Result<(), String> {
        if self.alarm_name.is_empty() {
            return Err("alarmName is empty".to_owned());
        }
        if self.account.len() != 12 || !self.account.bytes().all(|b| b.is_ascii_digit()) {
            return Err(format!(
                "account `{}` is not a 12-digit AWS account id",
                truncate(&self.account, 64)
            ));
        }
        if !crate::arn::is_region(&self.region) {
            return Err(format!(
                "region `{}` is not an AWS region",
                truncate(&self.region, 64)
            ));
        }
        Ok(())
    }

    /// The check failure's cause: a sentence, bounded like a check's summary.
    pub fn cause(&self) -> String {
        let reason = if self.reason.is_empty() {
            String::new()
        } else {
            format!(": {}", truncate(&self.reason, MAX_LINE_BYTES))
        };
        truncate(
            &format!(
                "alarm {} went to ALARM at {} (its state change event, before the next check){reason}",
                self.alarm_name, self.time
            ),
            MAX_SUMMARY_BYTES,
        )
    }
}

/// What one watch makes of one event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Concern {
    /// Fail the watch's task with `CheckFailed`.
    Fails,
    /// Not this watch's alarm (or not an ALARM): nothing to do.
    NotWatched,
    /// The watch's wait is over; the watch may be removed.
    Stale,
    /// The alarm is watched but changed state before the rollout started.
    BeforeRollout,
}

impl AlarmWatch {
    /// Whether `event`, which happened at `changed_at`, fails this watch's bake at `now` (both
    /// epoch seconds). An alarm is this rollout's when it is in the execution's account and
    /// region and its name is named or starts with a prefix. The alarm's state now does not
    /// matter: an alarm that flapped back to OK before its event arrived did fire.
    pub fn concerns(&self, event: &AlarmStateChange, changed_at: i64, now: i64) -> Concern {
        if event.state != "ALARM" {
            return Concern::NotWatched;
        }
        let mut arn = self.execution_arn.split(':');
        let (region, account) = (arn.nth(3), arn.next());
        if region != Some(event.region.as_str()) || account != Some(event.account.as_str()) {
            return Concern::NotWatched;
        }
        let name = event.alarm_name.as_str();
        let watched = self.names.iter().any(|n| n == name)
            || self.prefixes.iter().any(|p| name.starts_with(p.as_str()));
        if !watched {
            return Concern::NotWatched;
        }
        if now > self.expires_at {
            return Concern::Stale;
        }
        if changed_at < self.since {
            return Concern::BeforeRollout;
        }
        Concern::Fails
    }
}

/// Where two rollouts' alarm watches overlap: one alarm whose change rolls back both (a name
/// both watch, a prefix that matches the other's name, or two prefixes one of which starts the
/// other). Each line names the other rollout's side first, then this plan's.
pub fn overlaps(theirs: &AlarmChecks, ours: &AlarmChecks) -> Vec<String> {
    let mut found = Vec::new();
    for name in theirs.names.iter().filter(|n| ours.names.contains(n)) {
        found.push(format!("alarm `{name}`, which this plan watches too"));
    }
    for prefix in &theirs.prefixes {
        for own in &ours.prefixes {
            if prefix.starts_with(own.as_str()) || own.starts_with(prefix.as_str()) {
                found.push(format!(
                    "prefix `{prefix}`, which overlaps this plan's prefix `{own}`"
                ));
            }
        }
        for own in ours.names.iter().filter(|n| n.starts_with(prefix.as_str())) {
            found.push(format!(
                "prefix `{prefix}`, which matches this plan's alarm `{own}`"
            ));
        }
    }
    for name in &theirs.names {
        for own in ours
            .prefixes
            .iter()
            .filter(|p| name.starts_with(p.as_str()))
        {
            found.push(format!(
                "alarm `{name}`, which this plan's prefix `{own}` matches"
            ));
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    fn checks(names: &[&str], prefixes: &[&str]) -> AlarmChecks {
        AlarmChecks {
            names: names.iter().map(|n| n.to_string()).collect(),
            prefixes: prefixes.iter().map(|p| p.to_string()).collect(),
            ..AlarmChecks::default()
        }
    }

    #[test]
    fn a_watch_is_stored_under_each_name_and_once_for_its_prefixes() {
        let watch = AlarmWatch {
            execution_arn: "arn".into(),
            cluster: "us-east-1/green".into(),
            task_token: "t".into(),
            names: vec!["b".into(), "a".into(), "a".into()],
            prefixes: vec!["web-".into(), "api-".into()],
            critical: vec![],
            health_regions: vec!["us-east-1".into(), "global".into()],
            since: 0,
            expires_at: 0,
        };
        assert_eq!(
            watch.lookup_keys(),
            [
                "name#a",
                "name#b",
                "prefixes",
                "health#us-east-1",
                "health#global"
            ]
        );
        assert_eq!(watch.concerns_health("global", 0), Concern::Fails);
        assert_eq!(watch.concerns_health("eu-west-1", 0), Concern::NotWatched);
        assert_eq!(watch.concerns_health("us-east-1", 1), Concern::Stale);
        let names_only = AlarmWatch {
            prefixes: Vec::new(),
            health_regions: Vec::new(),
            ..watch
        };
        assert_eq!(names_only.lookup_keys(), ["name#a", "name#b"]);
    }

    #[test]
    fn overlapping_watches_are_found_whichever_side_is_wider() {
        let ours = checks(&["web-green-5xx", "shared-slo"], &["web-green-eu-"]);
        assert_eq!(
            overlaps(&checks(&[], &["web-green-"]), &ours),
            [
                "prefix `web-green-`, which overlaps this plan's prefix `web-green-eu-`",
                "prefix `web-green-`, which matches this plan's alarm `web-green-5xx`",
            ]
        );
        assert_eq!(
            overlaps(&checks(&["web-green-eu-latency", "shared-slo"], &[]), &ours),
            [
                "alarm `shared-slo`, which this plan watches too",
                "alarm `web-green-eu-latency`, which this plan's prefix `web-green-eu-` matches",
            ]
        );
        assert!(overlaps(&checks(&["web-blue-5xx"], &["web-blue-"]), &ours).is_empty());
    }

    /// 2026-11-23T20:00:00Z, the execution's start; the events are a minute later.
    const SINCE: i64 = 1_795_464_000;
    const CHANGED: i64 = SINCE + 60;
    const EXECUTION: &str = "arn:aws:states:us-east-1:123456789012:execution:cc-rollout:green";

    fn watch() -> AlarmWatch {
        AlarmWatch {
            execution_arn: EXECUTION.to_owned(),
            cluster: "us-east-1/green".to_owned(),
            task_token: "token".to_owned(),
            names: vec!["api-5xx".to_owned()],
            prefixes: vec!["web-green-".to_owned()],
            critical: vec![],
            health_regions: vec![],
            since: SINCE,
            expires_at: CHANGED + 600,
        }
    }

    fn event(name: &str) -> AlarmStateChange {
        AlarmStateChange {
            alarm_name: name.to_owned(),
            state: "ALARM".to_owned(),
            reason: "Threshold Crossed".to_owned(),
            time: "2026-11-23T20:01:00Z".to_owned(),
            account: "123456789012".to_owned(),
            region: "us-east-1".to_owned(),
        }
    }

    /// What the watch makes of `event` a second after it happened.
    fn concern(event: &AlarmStateChange) -> Concern {
        watch().concerns(event, CHANGED, CHANGED + 1)
    }

    #[test]
    fn a_named_or_prefixed_alarm_fails_the_watch() {
        assert_eq!(concern(&event("api-5xx")), Concern::Fails);
        assert_eq!(concern(&event("web-green-latency")), Concern::Fails);
    }

    #[test]
    fn other_alarms_accounts_regions_and_states_are_not_watched() {
        assert_eq!(concern(&event("api-5xx-2")), Concern::NotWatched);
        assert_eq!(concern(&event("web-blue-5xx")), Concern::NotWatched);
        let elsewhere = AlarmStateChange {
            account: "210987654321".to_owned(),
            ..event("api-5xx")
        };
        assert_eq!(concern(&elsewhere), Concern::NotWatched);
        let other_region = AlarmStateChange {
            region: "eu-west-1".to_owned(),
            ..event("api-5xx")
        };
        assert_eq!(concern(&other_region), Concern::NotWatched);
        let ok = AlarmStateChange {
            state: "OK".to_owned(),
            ..event("api-5xx")
        };
        assert_eq!(concern(&ok), Concern::NotWatched);
    }

    #[test]
    fn a_watch_past_its_time_is_stale_and_an_older_change_is_not_this_rollouts() {
        let w = watch();
        let alarm = event("api-5xx");
        assert_eq!(
            w.concerns(&alarm, CHANGED, w.expires_at + 1),
            Concern::Stale
        );
        assert_eq!(
            w.concerns(&alarm, SINCE - 1, CHANGED),
            Concern::BeforeRollout
        );
        assert_eq!(w.concerns(&alarm, SINCE, CHANGED), Concern::Fails);
    }

    #[test]
    fn events_no_alarm_could_produce_are_refused_with_what_is_wrong() {
        assert!(event("api-5xx").validate().is_ok());
        let cases = [
            (
                AlarmStateChange {
                    alarm_name: String::new(),
                    ..event("x")
                },
                "alarmName is empty",
            ),
            (
                AlarmStateChange {
                    account: "12345".to_owned(),
                    ..event("x")
                },
                "12-digit",
            ),
            (
                AlarmStateChange {
                    region: "moon-1".to_owned(),
                    ..event("x")
                },
                "not an AWS region",
            ),
        ];
        for (bad, expected) in cases {
            let message = bad.validate().unwrap_err();
            assert!(message.contains(expected), "{message}");
        }
    }

    #[test]
    fn the_cause_is_one_bounded_sentence() {
        let cause = event("api-5xx").cause();
        assert_eq!(
            cause,
            "alarm api-5xx went to ALARM at 2026-11-23T20:01:00Z (its state change event, \
             before the next check): Threshold Crossed"
        );
        let long = AlarmStateChange {
            alarm_name: "a".repeat(255),
            reason: "r".repeat(10_000),
            ..event("x")
        };
        assert!(long.cause().len() <= MAX_SUMMARY_BYTES);
    }

    #[test]
    fn a_watch_lasts_the_wait_it_is_for() {
        let step = WatchedStep {
            checks: 3,
            check_interval_seconds: 60,
            approval_timeout_seconds: 600,
        };
        assert_eq!(step.seconds(WatchDuring::Bake), 180);
        assert_eq!(step.seconds(WatchDuring::Approval), 600);
    }

    #[test]
    fn only_plans_where_one_alarm_rolls_back_are_watched() {
        let parse = |v: serde_json::Value| serde_json::from_value::<AnalysisSection>(v).unwrap();
        let watched = parse(serde_json::json!({"alarms": {"prefixes": ["web-"]}}));
        assert_eq!(unwatched_reason(Some(&watched)), None);
        let counted = parse(serde_json::json!({"alarms": {"names": ["a"]}, "failureLimit": 2}));
        assert!(unwatched_reason(Some(&counted))
            .unwrap()
            .contains("failureLimit"));
        let metrics_only = parse(serde_json::json!({}));
        assert!(unwatched_reason(Some(&metrics_only)).is_some());
        assert!(unwatched_reason(None).is_some());
    }
}
