//! The test-traffic stage (the plan's `testTraffic`): before the first production weight, only
//! test requests reach the new cluster, and they are judged.
//!
//! - [`open`] (shift-weights): for each `alb` target, a listener rule of the rollout's own that
//!   forwards the requests matching the plan's conditions to the canary target group alone,
//!   at a priority ahead of every other rule (or the plan's), tagged with the execution; for
//!   each `route53` target, a look that the new cluster's own record points at the same load
//!   balancer as the canary record. It refuses, creating nothing, a condition an existing rule
//!   already matches and a priority that is taken. Run again (a retry after a timeout) it finds
//!   its own rule rather than adding a second.
//! - [`look`] (evaluate-alarms, every check interval): the stage's Synthetics canaries (a
//!   stopped one started; a failed run fails the stage; each must pass a run started within
//!   the stage by its end) and alarms (one in ALARM fails it).
//! - [`close`] (every ending: promotion, a rollback's restore, the safety net, the sweep, the
//!   CLI's `restore`): deletes every rule of the plan's listeners tagged with the execution.
//!   Idempotent: a rule already gone is not an error.

use std::collections::{BTreeMap, BTreeSet};

use canary_aws::synthetics::is_running;
use canary_aws::{AlarmStateValue, AwsErrorKind, CloudWatchApi, SyntheticsApi, TestRuleApi};
use canary_core::limits::{join_bounded, truncate, MAX_REASON_BYTES};
use canary_core::targets::route53_name;
use canary_core::test_traffic::{
    choose_priority, TestTrafficSection, DEFAULT_MIN_TEST_REQUESTS, EXECUTION_TAG,
};
use canary_core::{RolloutPlan, TrafficTarget};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use tracing::{info, warn};

use std::time::{Duration, UNIX_EPOCH};

use crate::error::{AnalysisError, ShiftError};
use crate::signals::target_groups::{GroupMetric, MeasuredGroup};
use crate::traffic::{locate, Apis};

/// What [`open`] made: the rules to delete at the end, and where test requests go.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct OpenedStage {
    pub rules: Vec<TestRule>,
    pub addresses: Vec<TestAddress>,
    /// When the stage began, in seconds since the epoch: a canary's run counts from then.
    pub opened_at: f64,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TestRule {
    /// The traffic target's key.
    pub target: String,
    pub rule_arn: String,
    pub priority: i64,
}

/// Where a test request goes, and what it carries.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TestAddress {
    pub target: String,
    pub url: String,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub headers: BTreeMap<String, String>,
}

impl TestAddress {
    /// `https://green.example.com/ (x-canary: green)`.
    pub fn described(&self) -> String {
        if self.headers.is_empty() {
            return self.url.clone();
        }
        let headers: Vec<String> = self
            .headers
            .iter()
            .map(|(k, v)| format!("{k}: {v}"))
            .collect();
        format!("{} ({})", self.url, headers.join(", "))
    }
}

fn stage_of(plan: &RolloutPlan) -> Result<&TestTrafficSection, ShiftError> {
    plan.test_traffic
        .as_ref()
        .ok_or_else(|| ShiftError::InvalidInput("the plan has no testTraffic section".to_owned()))
}

/// What the stage will be on each target, read and checked, nothing made: the rule of each ALB
/// target (its listener's rules read), the address of every target. `open` makes it; the CLI's
/// `plan check` says it.
pub struct Preview<'p> {
    pub addresses: Vec<TestAddress>,
    pub rules: Vec<PlannedOn<'p>>,
}

/// The rule the stage will have on one ALB target.
pub struct PlannedOn<'p> {
    pub key: String,
    pub label: String,
    pub target: &'p canary_core::AlbTarget,
    pub planned: PlannedRule,
}

/// Every target checked before anything is made: a refusal makes nothing.
pub async fn preview<'p>(
    apis: &Apis<'_>,
    plan: &'p RolloutPlan,
    execution_arn: &str,
) -> Result<Preview<'p>, ShiftError> {
    let stage = stage_of(plan)?;
    let mut preview = Preview {
        addresses: Vec::new(),
        rules: Vec::new(),
    };
    for located in locate(&plan.traffic_targets) {
        let path = located.label.clone();
        match located.target {
            // Two targets on one listener (its default action and one of its rules): one test
            // rule serves both, forwarding to the first one's canary target group.
            TrafficTarget::Alb(alb)
                if preview
                    .rules
                    .iter()
                    .any(|r| r.target.listener_arn == alb.listener_arn) => {}
            TrafficTarget::Alb(alb) => {
                let planned = plan_rule(apis.test_rules, stage, &alb.listener_arn, execution_arn)
                    .await
                    .map_err(|e| e.at(&path))?;
                let address = apis
                    .test_rules
                    .address(&alb.listener_arn)
                    .await
                    .map_err(|e| ShiftError::aws(&path, e))?;
                preview
                    .addresses
                    .push(address_of(&located.key(), stage, &address));
                preview.rules.push(PlannedOn {
                    key: located.key(),
                    label: path,
                    target: alb,
                    planned,
                });
            }
            TrafficTarget::Route53(r53) => {
                let name = stage.record_name.as_deref().unwrap_or_default();
                check_own_record(apis, r53, name)
                    .await
                    .map_err(|e| e.at(&path))?;
                preview.addresses.push(TestAddress {
                    target: located.key(),
                    url: format!("https://{}/", name.trim_end_matches('.')),
                    headers: BTreeMap::new(),
                });
            }
            // Refused by the plan's validation.
            other => {
                return Err(ShiftError::InvalidInput(format!(
                    "{path}: a {} target has no test-traffic stage",
                    other.kind().name()
                )))
            }
        }
    }
    Ok(preview)
}

pub async fn open(
    apis: &Apis<'_>,
    plan: &RolloutPlan,
    execution_arn: &str,
    now: f64,
) -> Result<OpenedStage, ShiftError> {
    let stage = stage_of(plan)?;
    let preview = preview(apis, plan, execution_arn).await?;
    let mut opened = OpenedStage {
        rules: Vec::new(),
        addresses: preview.addresses,
        opened_at: now,
    };
    for PlannedOn {
        key,
        label,
        target,
        planned,
    } in preview.rules
    {
        let priority = planned.priority();
        let rule_arn = match planned {
            PlannedRule::Ours { rule_arn, .. } => rule_arn,
            PlannedRule::Create { priority } => {
                let tags = BTreeMap::from([(EXECUTION_TAG.to_owned(), execution_arn.to_owned())]);
                let conditions = stage.conditions.clone().unwrap_or_default();
                apis.test_rules
                    .create_rule(
                        &target.listener_arn,
                        priority,
                        &conditions,
                        &target.canary_target_group_arn,
                        &tags,
                    )
                    .await
                    .map_err(|e| ShiftError::aws(&label, e))?
            }
        };
        info!(target = %key, rule_arn, priority, "test traffic: rule in place");
        opened.rules.push(TestRule {
            target: key,
            rule_arn,
            priority,
        });
    }
    Ok(opened)
}

/// What [`open`] will do on one listener.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PlannedRule {
    /// This execution's rule is there already (a retried open).
    Ours {
        rule_arn: String,
        priority: i64,
    },
    Create {
        priority: i64,
    },
}

impl PlannedRule {
    pub fn priority(&self) -> i64 {
        match self {
            PlannedRule::Ours { priority, .. } | PlannedRule::Create { priority } => *priority,
        }
    }
}

/// A refusal before anything is created, with where.
pub struct Refusal(ShiftError);

impl Refusal {
    fn at(self, path: &str) -> ShiftError {
        match self.0 {
            ShiftError::Aws { source, .. } => ShiftError::aws(path, source),
            ShiftError::TargetMisconfigured { message, .. } => ShiftError::TargetMisconfigured {
                path: path.to_owned(),
                message,
            },
            other => other,
        }
    }
}

impl From<canary_aws::AwsError> for Refusal {
    fn from(e: canary_aws::AwsError) -> Self {
        Refusal(ShiftError::aws("", e))
    }
}

fn misconfigured(message: String) -> Refusal {
    Refusal(ShiftError::TargetMisconfigured {
        path: String::new(),
        message,
    })
}

/// The rule the stage will use on `listener_arn` (the `plan check` reads it too): refuses a
/// rule of someone else's that already matches the test requests, and a taken priority.
pub async fn plan_rule(
    rules_api: &dyn TestRuleApi,
    stage: &TestTrafficSection,
    listener_arn: &str,
    execution_arn: &str,
) -> Result<PlannedRule, Refusal> {
    let rules = rules_api.rules(listener_arn).await?;
    let arns: Vec<String> = rules.iter().map(|r| r.arn.clone()).collect();
    let tags = rules_api.rule_tags(&arns).await?;
    let tag_of = |arn: &str| tags.get(arn).and_then(|t| t.get(EXECUTION_TAG)).cloned();
    if let Some(ours) = rules
        .iter()
        .find(|r| tag_of(&r.arn).as_deref() == Some(execution_arn))
    {
        return Ok(PlannedRule::Ours {
            rule_arn: ours.arn.clone(),
            priority: ours.priority,
        });
    }
    let conditions = stage.conditions.clone().unwrap_or_default();
    if let Some(clash) = rules
        .iter()
        .find(|r| conditions.already_matched_by(&r.conditions))
    {
        let by = tag_of(&clash.arn)
            .map(|e| format!(" (the test rule of {e}, still running or left behind)"))
            .unwrap_or_default();
        return Err(misconfigured(format!(
            "the listener's rule {} at priority {}{by} already matches the test requests: \
             choose other testTraffic.conditions, or remove that rule",
            clash.arn, clash.priority
        )));
    }
    let taken: Vec<i64> = rules.iter().map(|r| r.priority).collect();
    let priority = choose_priority(stage.priority, &taken).map_err(misconfigured)?;
    Ok(PlannedRule::Create { priority })
}

fn address_of(
    target: &str,
    stage: &TestTrafficSection,
    listener: &canary_aws::ListenerAddress,
) -> TestAddress {
    let conditions = stage.conditions.clone().unwrap_or_default();
    let scheme = listener.protocol.to_ascii_lowercase();
    // A host name without wildcards is the address a tester calls; else the load balancer's.
    let host = conditions
        .host_header
        .iter()
        .find(|h| !h.contains(['*', '?']))
        .cloned()
        .unwrap_or_else(|| listener.dns_name.clone());
    let default_port = if scheme == "https" { 443 } else { 80 };
    let port = if listener.port == default_port {
        String::new()
    } else {
        format!(":{}", listener.port)
    };
    let query: Vec<String> = conditions
        .query_string
        .iter()
        .filter(|q| !q.value.contains(['*', '?']))
        .map(|q| match &q.key {
            Some(key) => format!("{key}={}", q.value),
            None => format!("canary={}", q.value),
        })
        .collect();
    let query = if query.is_empty() {
        String::new()
    } else {
        format!("?{}", query.join("&"))
    };
    let headers = conditions
        .http_header
        .iter()
        .filter_map(|h| Some((h.name.clone(), h.values.first()?.clone())))
        .collect();
    TestAddress {
        target: target.to_owned(),
        url: format!("{scheme}://{host}{port}/{query}"),
        headers,
    }
}

/// The new cluster's own record must point where the canary record points.
async fn check_own_record(
    apis: &Apis<'_>,
    target: &canary_core::Route53Target,
    name: &str,
) -> Result<(), Refusal> {
    let records = apis.route53.records(target).await?;
    let canary = records
        .iter()
        .find(|r| r.set_identifier.as_deref() == Some(target.canary_set_identifier.as_str()))
        .and_then(|r| r.alias_target.clone())
        .ok_or_else(|| {
            misconfigured(format!(
                "the canary record `{}` is not an alias of a load balancer: its test address \
                 cannot be checked",
                target.canary_set_identifier
            ))
        })?;
    let own = apis
        .route53
        .named_records(
            &target.hosted_zone_id,
            &route53_name(name),
            target.record_type.as_str(),
        )
        .await?;
    let same = |dns: &str| {
        dns.trim_end_matches('.')
            .eq_ignore_ascii_case(canary.trim_end_matches('.'))
    };
    if own
        .iter()
        .any(|r| r.alias_target.as_deref().is_some_and(same))
    {
        return Ok(());
    }
    let found: Vec<String> = own
        .iter()
        .map(|r| {
            r.alias_target
                .clone()
                .unwrap_or_else(|| "(not an alias)".to_owned())
        })
        .collect();
    Err(misconfigured(format!(
        "testTraffic.recordName `{name}` does not resolve to the new cluster's load balancer \
         `{canary}` (the canary record's alias){}",
        if found.is_empty() {
            ": there is no such record".to_owned()
        } else {
            format!(": it points at {}", found.join(", "))
        }
    )))
}

/// Deletes every rule of the plan's listeners tagged with `execution_arn`; returns their ARNs.
pub async fn close(
    rules_api: &dyn TestRuleApi,
    plan: &RolloutPlan,
    execution_arn: &str,
) -> Result<Vec<String>, ShiftError> {
    if plan.test_traffic.is_none() {
        return Ok(Vec::new());
    }
    let listeners: BTreeSet<&str> = plan
        .traffic_targets
        .iter()
        .filter_map(TrafficTarget::as_alb)
        .map(|alb| alb.listener_arn.as_str())
        .collect();
    let mut deleted = Vec::new();
    for listener in listeners {
        let aws = |e| ShiftError::aws(listener, e);
        let rules = match rules_api.rules(listener).await {
            Ok(rules) => rules,
            // A listener deleted since takes its rules with it.
            Err(e) if e.kind == AwsErrorKind::NotFound => continue,
            Err(e) => return Err(aws(e)),
        };
        let arns: Vec<String> = rules.into_iter().map(|r| r.arn).collect();
        let tags = rules_api.rule_tags(&arns).await.map_err(aws)?;
        for (arn, of_rule) in tags {
            if of_rule.get(EXECUTION_TAG).map(String::as_str) != Some(execution_arn) {
                continue;
            }
            match rules_api.delete_rule(&arn).await {
                Ok(()) => {}
                Err(e) if e.kind == AwsErrorKind::NotFound => {}
                Err(e) => return Err(aws(e)),
            }
            info!(execution_arn, rule_arn = %arn, "test traffic: rule deleted");
            deleted.push(arn);
        }
    }
    Ok(deleted)
}

/// [`close`] after a rollback's restore: the weights are back, the test rule goes too. Its
/// deletion failing does not fail the rollback (the rule sends only test requests): it is
/// logged, and the safety net, which hears of every failed end, and the sweep delete it again.
pub async fn close_after_restore(
    rules_api: &dyn TestRuleApi,
    plan: &RolloutPlan,
    execution_arn: &str,
) {
    if let Err(e) = close(rules_api, plan, execution_arn).await {
        warn!(execution_arn, error = %e, "test traffic: rule not deleted at the restore; the safety net deletes it");
    }
}

/// The requests and 5xx of the ALB targets' canary target groups since the stage began (the
/// load balancer's per-minute sums, from the minute it began: before it, the groups had none).
async fn canary_requests(
    cloudwatch: &dyn CloudWatchApi,
    plan: &RolloutPlan,
    since: f64,
    now: f64,
) -> Result<(f64, f64), AnalysisError> {
    let mut queries = Vec::new();
    let mut seen = BTreeSet::new();
    for alb in plan
        .traffic_targets
        .iter()
        .filter_map(TrafficTarget::as_alb)
    {
        if !seen.insert(alb.canary_target_group_arn.as_str()) {
            continue;
        }
        let Some(group) = MeasuredGroup::alb(&alb.listener_arn, &alb.canary_target_group_arn)
        else {
            continue;
        };
        let i = queries.len() / 2;
        queries.push(group.query(format!("r{i}"), GroupMetric::Requests, "Sum".to_owned(), 60));
        queries.push(group.query(
            format!("e{i}"),
            GroupMetric::Errors5xx,
            "Sum".to_owned(),
            60,
        ));
    }
    let at = |seconds: f64| UNIX_EPOCH + Duration::from_secs_f64(seconds.max(0.0));
    let series = cloudwatch
        .metric_data(&queries, at(since - 60.0), at(now + 1.0))
        .await?;
    let total = |prefix: char| -> f64 {
        series
            .iter()
            .filter(|(id, _)| id.starts_with(prefix))
            .flat_map(|(_, s)| s.points.iter().map(|(_, v)| v))
            // From +0: an empty f64 sum is -0, which would read "-0 test requests".
            .fold(0.0, |sum, v| sum + v)
    };
    Ok((total('r'), total('e')))
}

/// One look at the stage.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct StageLook {
    /// `true` once the stage's time is up and every canary passed a run within it.
    pub passed: bool,
    /// Seconds since the stage began.
    pub elapsed_seconds: i64,
    /// What the look saw, for `watch` and the log (bounded).
    pub summary: String,
    /// How long until the next look: the stage's check interval, or less to its end.
    pub wait_seconds: i64,
}

/// What [`close`] deleted.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ClosedStage {
    pub deleted: Vec<String>,
}

/// Judges the stage at `now`; a failure is [`AnalysisError::TestTrafficFailed`] naming the
/// run or alarm and the test addresses.
pub async fn look(
    synthetics: &dyn SyntheticsApi,
    cloudwatch: &dyn CloudWatchApi,
    plan: &RolloutPlan,
    opened: &OpenedStage,
    now: f64,
) -> Result<StageLook, AnalysisError> {
    let stage = plan.test_traffic.as_ref().ok_or_else(|| {
        AnalysisError::InvalidInput("the plan has no testTraffic section".to_owned())
    })?;
    let region = plan.cluster.region.as_str();
    let at = || {
        let addresses: Vec<String> = opened
            .addresses
            .iter()
            .map(TestAddress::described)
            .collect();
        join_bounded(&addresses, "; ", 3, MAX_REASON_BYTES / 2)
    };
    let fail = |why: String| {
        // The why (a run's StateReason, Synthetics' words) at most half, so that the cause
        // always names the test address too.
        Err(AnalysisError::TestTrafficFailed(truncate(
            &format!(
                "{}; test address {}",
                truncate(&why, MAX_REASON_BYTES / 2),
                at()
            ),
            MAX_REASON_BYTES,
        )))
    };
    let elapsed = (now - opened.opened_at).max(0.0) as i64;
    if !stage.alarms.is_empty() {
        let alarms = cloudwatch.alarms_by_names(&stage.alarms).await?;
        if let Some(missing) = stage
            .alarms
            .iter()
            .find(|n| !alarms.iter().any(|a| &a.name == *n))
        {
            return Err(AnalysisError::AlarmNotFound {
                path: "testTraffic.alarms".to_owned(),
                message: format!("no alarm named `{missing}`"),
            });
        }
        if let Some(firing) = alarms.iter().find(|a| a.state == AlarmStateValue::Alarm) {
            return fail(format!(
                "alarm {} is in ALARM: {}",
                firing.name, firing.reason
            ));
        }
    }
    let done = elapsed >= stage.bake_seconds;
    if let Some(max) = stage.max_error_rate_percent {
        let (requests, errors) = canary_requests(cloudwatch, plan, opened.opened_at, now).await?;
        let min = stage.min_requests.unwrap_or(DEFAULT_MIN_TEST_REQUESTS) as f64;
        let rate = if requests > 0.0 {
            errors * 100.0 / requests
        } else {
            0.0
        };
        if requests >= min && rate > max {
            return fail(format!(
                "the canary target groups answered {rate:.1} % of their {requests} test requests \
                 with 5xx (maxErrorRatePercent {max})"
            ));
        }
        if done && requests < min {
            return fail(format!(
                "only {requests} test requests reached the canary target groups within the \
                 stage's {} s (minRequests {min}): the stage tested nothing",
                stage.bake_seconds
            ));
        }
    }
    let mut waiting = Vec::new();
    for name in &stage.synthetics_canaries {
        let state = synthetics.canary_state(region, name).await.map_err(|e| {
            if e.kind == AwsErrorKind::NotFound {
                AnalysisError::InvalidInput(format!(
                    "testTraffic.syntheticsCanaries: no canary named `{name}` in {region}"
                ))
            } else {
                AnalysisError::Aws(e)
            }
        })?;
        let runs = synthetics.runs(region, name).await?;
        let within: Vec<_> = runs
            .iter()
            .filter(|r| r.started.is_some_and(|s| s >= opened.opened_at.floor()))
            .collect();
        if let Some(failed) = within.iter().find(|r| r.failed()) {
            return fail(format!(
                "Synthetics canary {name}: a run FAILED ({})",
                failed.reason.as_deref().unwrap_or("no reason given")
            ));
        }
        if !within.iter().any(|r| r.passed()) {
            waiting.push(name.clone());
            if !is_running(&state) {
                warn!(canary = %name, state, "test traffic: starting a canary that was not running");
                synthetics.start_canary(region, name).await.or_else(|e| {
                    // Started by someone else between the read and the start.
                    if e.code.as_deref() == Some("ConflictException") {
                        Ok(())
                    } else {
                        Err(e)
                    }
                })?;
            }
        }
    }
    if done && !waiting.is_empty() {
        return fail(format!(
            "no passed run of the Synthetics canaries {} within the stage's {} s",
            waiting.join(", "),
            stage.bake_seconds
        ));
    }
    let summary = if waiting.is_empty() {
        format!("{elapsed} of {} s, every check passing", stage.bake_seconds)
    } else {
        format!(
            "{elapsed} of {} s, waiting for a run of {}",
            stage.bake_seconds,
            join_bounded(&waiting, ", ", 5, MAX_REASON_BYTES / 2)
        )
    };
    let interval = stage.check_interval(plan.bake.check_interval_seconds);
    Ok(StageLook {
        passed: done,
        elapsed_seconds: elapsed,
        summary,
        wait_seconds: interval.min(stage.bake_seconds - elapsed).max(1),
    })
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;

    use async_trait::async_trait;
    use canary_aws::{AwsError, ListenerAddress, ListenerRule};
    use canary_core::test_traffic::{RuleCondition, TestConditions};
    use serde_json::json;

    use super::*;

    const LISTENER: &str =
        "arn:aws:elasticloadbalancing:us-east-1:123456789012:listener/app/web/50dc6c495c0c9188/f2f7dc8efc522ab2";
    const ME: &str = "arn:aws:states:us-east-1:123456789012:execution:cc-rollout:me";

    /// A listener's rules, with their tags; deletions recorded.
    #[derive(Default)]
    struct Rules {
        rules: Mutex<Vec<(ListenerRule, BTreeMap<String, String>)>>,
        deleted: Mutex<Vec<String>>,
    }

    impl Rules {
        fn with(self, priority: i64, header: &str, execution: Option<&str>) -> Self {
            let tags = execution
                .map(|e| BTreeMap::from([(EXECUTION_TAG.to_owned(), e.to_owned())]))
                .unwrap_or_default();
            let rule = ListenerRule {
                arn: format!("{LISTENER}/rule-{priority}"),
                priority,
                conditions: vec![RuleCondition {
                    field: "http-header".to_owned(),
                    header_name: Some("x-canary".to_owned()),
                    values: vec![header.to_owned()],
                }],
            };
            self.rules.lock().unwrap().push((rule, tags));
            self
        }
    }

    #[async_trait]
    impl TestRuleApi for Rules {
        async fn rules(&self, _: &str) -> Result<Vec<ListenerRule>, AwsError> {
            Ok(self
                .rules
                .lock()
                .unwrap()
                .iter()
                .map(|(r, _)| r.clone())
                .collect())
        }
        async fn address(&self, _: &str) -> Result<ListenerAddress, AwsError> {
            Ok(ListenerAddress {
                protocol: "HTTPS".to_owned(),
                port: 8443,
                dns_name: "web-1.us-east-1.elb.amazonaws.com".to_owned(),
            })
        }
        async fn create_rule(
            &self,
            _: &str,
            priority: i64,
            _: &TestConditions,
            _: &str,
            tags: &BTreeMap<String, String>,
        ) -> Result<String, AwsError> {
            let arn = format!("{LISTENER}/rule-{priority}");
            let rule = ListenerRule {
                arn: arn.clone(),
                priority,
                conditions: vec![],
            };
            self.rules.lock().unwrap().push((rule, tags.clone()));
            Ok(arn)
        }
        async fn delete_rule(&self, arn: &str) -> Result<(), AwsError> {
            self.deleted.lock().unwrap().push(arn.to_owned());
            let mut rules = self.rules.lock().unwrap();
            let before = rules.len();
            rules.retain(|(r, _)| r.arn != arn);
            if rules.len() == before {
                return Err(AwsError::new(
                    AwsErrorKind::NotFound,
                    "DeleteRule",
                    "gone".to_owned(),
                ));
            }
            Ok(())
        }
        async fn rule_tags(
            &self,
            arns: &[String],
        ) -> Result<BTreeMap<String, BTreeMap<String, String>>, AwsError> {
            Ok(self
                .rules
                .lock()
                .unwrap()
                .iter()
                .filter(|(r, _)| arns.contains(&r.arn))
                .map(|(r, t)| (r.arn.clone(), t.clone()))
                .collect())
        }
    }

    fn plan(priority: Option<i64>) -> RolloutPlan {
        let mut stage = json!({
            "conditions": {"httpHeader": {"name": "x-canary", "values": ["green"]}},
            "bakeSeconds": 60,
            "syntheticsCanaries": ["green-smoke"],
        });
        if let Some(p) = priority {
            stage["priority"] = json!(p);
        }
        RolloutPlan::parse(json!({
            "cluster": {"name": "green", "region": "us-east-1"},
            "trafficTargets": [{"alb": {
                "listenerArn": LISTENER,
                "stableTargetGroupArn": "arn:aws:elasticloadbalancing:us-east-1:123456789012:targetgroup/blue/73e2d6bc24d8a067",
                "canaryTargetGroupArn": "arn:aws:elasticloadbalancing:us-east-1:123456789012:targetgroup/green/73e2d6bc24d8a068",
            }}],
            "steps": [{"weight": 100}],
            "bake": {"seconds": 60, "checkIntervalSeconds": 10},
            "testTraffic": stage,
        }))
        .expect("a valid plan")
        .plan
    }

    #[tokio::test]
    async fn open_goes_ahead_of_every_rule_and_a_retry_finds_its_own() {
        let rules = Rules::default().with(20, "blue", None);
        let apis = Apis {
            test_rules: &rules,
            ..Apis::fake()
        };
        let opened = open(&apis, &plan(None), ME, 100.0).await.expect("opened");
        assert_eq!(opened.rules[0].priority, 19);
        assert_eq!(opened.opened_at, 100.0);
        let [address] = opened.addresses.as_slice() else {
            panic!("one address: {opened:?}")
        };
        assert_eq!(
            address.url,
            "https://web-1.us-east-1.elb.amazonaws.com:8443/"
        );
        assert_eq!(
            address.described(),
            format!("{} (x-canary: green)", address.url)
        );
        let again = open(&apis, &plan(None), ME, 200.0).await.expect("reopened");
        assert_eq!(again.rules, opened.rules, "no second rule");
        assert_eq!(rules.rules.lock().unwrap().len(), 2);
    }

    #[tokio::test]
    async fn two_targets_on_one_listener_get_one_rule() {
        let rules = Rules::default();
        let apis = Apis {
            test_rules: &rules,
            ..Apis::fake()
        };
        let mut plan = plan(None);
        let TrafficTarget::Alb(first) = plan.traffic_targets[0].clone() else {
            panic!("an alb target")
        };
        let mut second = first.clone();
        second.rule_arn = Some(format!("{LISTENER}/rule-of-the-api"));
        plan.traffic_targets.push(TrafficTarget::Alb(second));
        let opened = open(&apis, &plan, ME, 0.0).await.expect("opened");
        assert_eq!(opened.rules.len(), 1);
        assert_eq!(rules.rules.lock().unwrap().len(), 1);
    }

    #[tokio::test]
    async fn a_clash_or_a_taken_priority_creates_nothing() {
        let rules = Rules::default().with(5, "green", None);
        let apis = Apis {
            test_rules: &rules,
            ..Apis::fake()
        };
        let clash = open(&apis, &plan(None), ME, 0.0).await.unwrap_err();
        assert!(
            clash
                .to_string()
                .contains("at priority 5 already matches the test requests"),
            "{clash}"
        );
        let rules = Rules::default().with(5, "blue", None);
        let apis = Apis {
            test_rules: &rules,
            ..Apis::fake()
        };
        let taken = open(&apis, &plan(Some(5)), ME, 0.0).await.unwrap_err();
        assert!(taken.to_string().contains("priority 5 is taken"), "{taken}");
        assert_eq!(rules.rules.lock().unwrap().len(), 1, "nothing created");
    }

    #[tokio::test]
    async fn close_deletes_only_the_executions_rules_and_again_finds_none() {
        let other = "arn:aws:states:us-east-1:123456789012:execution:cc-rollout:other";
        let rules = Rules::default()
            .with(3, "green", Some(ME))
            .with(4, "blue", Some(other))
            .with(9, "x", None);
        let deleted = close(&rules, &plan(None), ME).await.expect("closed");
        assert_eq!(deleted, vec![format!("{LISTENER}/rule-3")]);
        assert_eq!(rules.rules.lock().unwrap().len(), 2);
        assert!(close(&rules, &plan(None), ME)
            .await
            .expect("again")
            .is_empty());
        let mut without = plan(None);
        without.test_traffic = None;
        assert!(close(&canary_aws::fakes::Unused, &without, ME)
            .await
            .expect("no stage")
            .is_empty());
    }
}
