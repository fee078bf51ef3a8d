//! The plan's `testTraffic` section: a stage before the first production weight in which only
//! test requests reach the new cluster (ECS blue/green's TEST_TRAFFIC_SHIFT, GKE's header-only
//! stage). For an `alb` target the rollout adds a listener rule of its own that forwards the
//! requests matching the plan's conditions to the canary target group alone; for a `route53`
//! target the new cluster's own record (the per-cluster name ExternalDNS writes) is the test
//! address. The stage is judged by CloudWatch Synthetics canaries and alarms for `bakeSeconds`
//! before any user request is weighted to the new cluster.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::targets::{route53_name, TrafficTarget};
use crate::validate::Errors;

/// How many condition values one ALB rule may hold (each header value, host name and query
/// pair counts one), as ELB refuses more.
pub const MAX_CONDITION_VALUES: usize = 5;
/// The highest priority of an ALB listener rule.
pub const MAX_RULE_PRIORITY: i64 = 50_000;
/// Most Synthetics canaries, and most alarms, one stage names: each is read at every look, and
/// their names travel in the execution's state.
pub const MAX_STAGE_JUDGES: usize = 10;
/// The longest stage: a day.
pub const MAX_STAGE_SECONDS: i64 = 86_400;
/// The tag key a test rule carries: the execution that owns it. Every ending deletes the rules
/// tagged with its execution; IAM lets the stack create and delete only rules so tagged.
pub const EXECUTION_TAG: &str = "cluster-canary:execution";
/// The tag key whose value is the stack's name, on every test rule: the condition of the
/// stack's `CreateRule` and `DeleteRule` permissions.
pub const STACK_TAG: &str = "cluster-canary:stack";

/// A stage of test requests before any user request reaches the new cluster.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct TestTrafficSection {
    /// What a test request carries, for `alb` targets: the conditions of the listener rule
    /// that sends it to the new cluster alone.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub conditions: Option<TestConditions>,
    /// The rule's priority (1–50000). Without it, the lowest free priority below every rule
    /// of the listener, so that no other rule answers a test request first.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1, max = 50000))]
    pub priority: Option<i64>,
    /// For `route53` targets: the new cluster's own record name (the per-cluster name
    /// ExternalDNS writes), which must point at the same load balancer as the canary record.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub record_name: Option<String>,
    /// How long test traffic is judged before the first production step.
    #[schemars(range(min = 1, max = 86400))]
    pub bake_seconds: i64,
    /// How often the stage is looked at. Default: the plan's `bake.checkIntervalSeconds`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1, max = 3600))]
    pub check_interval_seconds: Option<i64>,
    /// CloudWatch Synthetics canaries (by name, in the new cluster's Region) that call the test
    /// address: a stopped one is started; one failed run fails the stage; each must have
    /// passed a run started within the stage by its end.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub synthetics_canaries: Vec<String>,
    /// CloudWatch alarms (by name, in the new cluster's Region) on the canary target group:
    /// all its requests are test requests in this stage. One in ALARM fails the stage.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub alarms: Vec<String>,
    /// The canary target groups' own 5xx, read from the load balancer's metrics (all their
    /// requests are test requests in this stage): more than this share of the stage's requests
    /// fails it, and so do fewer than `minRequests` by its end (the stage tested nothing).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_error_rate_percent: Option<f64>,
    /// How many test requests the canary target groups must have answered by the stage's end
    /// for `maxErrorRatePercent`. Default 10.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_requests: Option<i64>,
}

/// `minRequests` when the plan gives none.
pub const DEFAULT_MIN_TEST_REQUESTS: i64 = 10;

/// The conditions of the test rule: every one given must match (ELB's AND); within one, any
/// value matches.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct TestConditions {
    /// A request header and the values that send it to the new cluster (`x-canary: green`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub http_header: Option<HeaderCondition>,
    /// Host names that send a request to the new cluster (`green.app.example.com`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub host_header: Vec<String>,
    /// Query string pairs that send a request to the new cluster (`?canary=green`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub query_string: Vec<QueryPair>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct HeaderCondition {
    pub name: String,
    pub values: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct QueryPair {
    /// Without a key, the value matches any parameter's value.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key: Option<String>,
    pub value: String,
}

impl TestConditions {
    /// How many condition values the rule holds.
    pub fn values(&self) -> usize {
        self.http_header.as_ref().map_or(0, |h| h.values.len())
            + self.host_header.len()
            + self.query_string.len()
    }
}

impl TestTrafficSection {
    pub fn check_interval(&self, plan_interval: i64) -> i64 {
        self.check_interval_seconds.unwrap_or(plan_interval).max(1)
    }

    pub(crate) fn validate(&self, targets: &[TrafficTarget], errors: &mut Errors) {
        let path = "testTraffic";
        let mut has_alb = false;
        for (i, target) in targets.iter().enumerate() {
            match target {
                TrafficTarget::Alb(_) => has_alb = true,
                TrafficTarget::Route53(r53) => match &self.record_name {
                    None => errors.push(
                        format!("{path}.recordName"),
                        format!(
                            "is the test address of trafficTargets[{i}] (route53): give the new \
                             cluster's own record name, the one ExternalDNS writes for it"
                        ),
                    ),
                    Some(name) if route53_name(name) == route53_name(&r53.record_name) => errors
                        .push(
                            format!("{path}.recordName"),
                            format!(
                                "`{name}` is the weighted record users resolve: the test address \
                                 must be the new cluster's own name"
                            ),
                        ),
                    Some(_) => {}
                },
                other => errors.push(
                    format!("trafficTargets[{i}]"),
                    format!(
                        "is a {} target: a test-traffic stage is built for alb targets (a \
                         listener rule of its own) and route53 targets (the new cluster's own \
                         record) only; remove testTraffic or this target",
                        other.kind().name()
                    ),
                ),
            }
        }
        if let Some(name) = self.record_name.as_deref() {
            if !crate::argocd::is_dns_subdomain(&name.trim_end_matches('.').to_ascii_lowercase()) {
                errors.push(
                    format!("{path}.recordName"),
                    format!("`{name}` is not a DNS name"),
                );
            }
        }
        match (&self.conditions, has_alb) {
            (None, true) => errors.push(
                format!("{path}.conditions"),
                "is what a test request carries to the new cluster behind an alb target: give \
                 an httpHeader, a hostHeader or a queryString",
            ),
            (Some(conditions), _) => conditions.validate(&format!("{path}.conditions"), errors),
            (None, false) => {}
        }
        if let Some(priority) = self.priority {
            if !(1..=MAX_RULE_PRIORITY).contains(&priority) {
                errors.push(
                    format!("{path}.priority"),
                    format!("must be from 1 to {MAX_RULE_PRIORITY}, got {priority}"),
                );
            }
        }
        if !(1..=MAX_STAGE_SECONDS).contains(&self.bake_seconds) {
            errors.push(
                format!("{path}.bakeSeconds"),
                format!(
                    "must be from 1 to {MAX_STAGE_SECONDS} seconds, got {}",
                    self.bake_seconds
                ),
            );
        }
        if let Some(interval) = self.check_interval_seconds {
            if !(1..=3600).contains(&interval) {
                errors.push(
                    format!("{path}.checkIntervalSeconds"),
                    format!("must be from 1 to 3600 seconds, got {interval}"),
                );
            }
        }
        let judged_by_rate = self.max_error_rate_percent.is_some() && has_alb;
        if self.synthetics_canaries.is_empty() && self.alarms.is_empty() && !judged_by_rate {
            errors.push(
                path,
                "judges test traffic by syntheticsCanaries, alarms or (alb targets) \
                 maxErrorRatePercent: give at least one (a stage nobody judges would pass whatever \
                 the new cluster answers)",
            );
        }
        if let Some(rate) = self.max_error_rate_percent {
            if !(0.0..=100.0).contains(&rate) {
                errors.push(
                    format!("{path}.maxErrorRatePercent"),
                    format!("must be a percentage from 0 to 100, got {rate}"),
                );
            }
            if !has_alb {
                errors.push(
                    format!("{path}.maxErrorRatePercent"),
                    "reads the canary target groups of alb targets: the plan has none",
                );
            }
        }
        if let Some(min) = self.min_requests {
            if !(1..=1_000_000).contains(&min) {
                errors.push(
                    format!("{path}.minRequests"),
                    format!("must be from 1 to 1000000, got {min}"),
                );
            }
            if self.max_error_rate_percent.is_none() {
                errors.push(
                    format!("{path}.minRequests"),
                    "is the least the error rate is read over: give maxErrorRatePercent too",
                );
            }
        }
        for (field, names) in [
            ("syntheticsCanaries", &self.synthetics_canaries),
            ("alarms", &self.alarms),
        ] {
            if names.len() > MAX_STAGE_JUDGES {
                errors.push(
                    format!("{path}.{field}"),
                    format!("at most {MAX_STAGE_JUDGES}, got {}", names.len()),
                );
            }
        }
        for (i, name) in self.synthetics_canaries.iter().enumerate() {
            if !is_canary_name(name) {
                errors.push(
                    format!("{path}.syntheticsCanaries[{i}]"),
                    format!(
                        "`{name}` is not a Synthetics canary name (1–255 lowercase letters, \
                         digits, '-' or '_')"
                    ),
                );
            }
        }
        for (i, name) in self.alarms.iter().enumerate() {
            if name.is_empty() || name.len() > 255 {
                errors.push(
                    format!("{path}.alarms[{i}]"),
                    "must be an alarm name of 1–255 characters",
                );
            }
        }
    }
}

impl TestConditions {
    fn validate(&self, path: &str, errors: &mut Errors) {
        let values = self.values();
        if values == 0 {
            errors.push(
                path,
                "give an httpHeader, a hostHeader or a queryString: a rule without conditions \
                 would send every request to the new cluster",
            );
        } else if values > MAX_CONDITION_VALUES {
            errors.push(
                path,
                format!(
                    "hold {values} values; an ALB rule holds at most {MAX_CONDITION_VALUES} \
                     (each header value, host name and query pair counts one)"
                ),
            );
        }
        if let Some(header) = &self.http_header {
            if !is_header_name(&header.name) {
                errors.push(
                    format!("{path}.httpHeader.name"),
                    format!(
                        "`{}` is not an HTTP header name ELB accepts (1–40 characters of \
                         RFC 7230's token)",
                        header.name
                    ),
                );
            } else if ["host", "x-forwarded-for"]
                .contains(&header.name.to_ascii_lowercase().as_str())
            {
                errors.push(
                    format!("{path}.httpHeader.name"),
                    "is not a header an ALB matches on: use hostHeader for the host",
                );
            }
            if header.values.is_empty() {
                errors.push(
                    format!("{path}.httpHeader.values"),
                    "give at least one value",
                );
            }
            for (i, value) in header.values.iter().enumerate() {
                check_value(&format!("{path}.httpHeader.values[{i}]"), value, errors);
            }
        }
        for (i, host) in self.host_header.iter().enumerate() {
            let ok = !host.is_empty()
                && host.len() <= 128
                && host
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || "-.*?".contains(c));
            if !ok {
                errors.push(
                    format!("{path}.hostHeader[{i}]"),
                    format!(
                        "`{host}` is not a host name ELB matches (1–128 of letters, digits, '-', \
                         '.', and the wildcards '*' and '?')"
                    ),
                );
            }
        }
        for (i, pair) in self.query_string.iter().enumerate() {
            if let Some(key) = &pair.key {
                check_value(&format!("{path}.queryString[{i}].key"), key, errors);
            }
            check_value(
                &format!("{path}.queryString[{i}].value"),
                &pair.value,
                errors,
            );
        }
    }
}

/// One condition of a rule already on the listener, as ELB describes it: its field
/// (`http-header`, `host-header`, `query-string`, `path-pattern`…), the header's name for an
/// `http-header`, and its values (a query pair as `key=value`, or `=value` without a key).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RuleCondition {
    pub field: String,
    pub header_name: Option<String>,
    pub values: Vec<String>,
}

impl TestConditions {
    /// The rule's conditions in [`RuleCondition`]'s form.
    pub fn as_rule_conditions(&self) -> Vec<RuleCondition> {
        let mut conditions = Vec::new();
        if let Some(header) = &self.http_header {
            conditions.push(RuleCondition {
                field: "http-header".to_owned(),
                header_name: Some(header.name.clone()),
                values: header.values.clone(),
            });
        }
        if !self.host_header.is_empty() {
            conditions.push(RuleCondition {
                field: "host-header".to_owned(),
                header_name: None,
                values: self.host_header.clone(),
            });
        }
        if !self.query_string.is_empty() {
            conditions.push(RuleCondition {
                field: "query-string".to_owned(),
                header_name: None,
                values: self
                    .query_string
                    .iter()
                    .map(|q| format!("{}={}", q.key.as_deref().unwrap_or_default(), q.value))
                    .collect(),
            });
        }
        conditions
    }

    /// Whether a rule with `existing` conditions already matches what a test request carries:
    /// each of its conditions is on a field the test rule names (the same header), with a value
    /// in common. Such a rule routes the test requests somewhere already: a second rule for them
    /// would be a race of priorities, so the stage refuses it.
    pub fn already_matched_by(&self, existing: &[RuleCondition]) -> bool {
        let ours = self.as_rule_conditions();
        !existing.is_empty()
            && existing.iter().all(|theirs| {
                ours.iter().any(|mine| {
                    mine.field == theirs.field
                        && same_header(mine.header_name.as_deref(), theirs.header_name.as_deref())
                        && mine
                            .values
                            .iter()
                            .any(|v| theirs.values.iter().any(|t| t.eq_ignore_ascii_case(v)))
                })
            })
    }
}

fn same_header(a: Option<&str>, b: Option<&str>) -> bool {
    match (a, b) {
        (Some(a), Some(b)) => a.eq_ignore_ascii_case(b),
        (None, None) => true,
        _ => false,
    }
}

/// The priority the test rule takes on a listener whose rules have `taken` priorities: the
/// plan's, if free; else the lowest free one below every rule, so that no other rule answers a
/// test request first. `Err` says why none fits.
pub fn choose_priority(wanted: Option<i64>, taken: &[i64]) -> Result<i64, String> {
    match wanted {
        Some(p) if taken.contains(&p) => Err(format!(
            "priority {p} is taken by another rule of the listener: give a free one in \
             testTraffic.priority, or leave it out to take the lowest free one"
        )),
        Some(p) => Ok(p),
        None => match taken.iter().min() {
            None => Ok(1),
            Some(1) => Err(
                "the listener has a rule at priority 1, so no priority is free \
                 ahead of every rule: give testTraffic.priority (a rule ahead of it may then \
                 answer some test requests)"
                    .to_owned(),
            ),
            Some(lowest) => Ok(lowest - 1),
        },
    }
}

fn check_value(path: &str, value: &str, errors: &mut Errors) {
    if value.is_empty() || value.len() > 128 {
        errors.push(
            path,
            "must be 1–128 characters (ELB's bound on a condition value)",
        );
    }
}

/// RFC 7230's `token`, at most 40 characters (ELB's bound on a header name).
pub fn is_header_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 40
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "!#$%&'*+-.^_`|~".contains(c))
}

fn is_canary_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 255
        && name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-' || c == '_')
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::RolloutPlan;

    fn plan_with(test_traffic: serde_json::Value, target: serde_json::Value) -> serde_json::Value {
        json!({
            "cluster": {"name": "green", "region": "us-east-1"},
            "trafficTargets": [target],
            "steps": [{"weight": 10}, {"weight": 100}],
            "bake": {"seconds": 60, "checkIntervalSeconds": 10},
            "testTraffic": test_traffic,
        })
    }

    fn alb() -> serde_json::Value {
        json!({"alb": {
            "listenerArn": "arn:aws:elasticloadbalancing:us-east-1:123456789012:listener/app/web/50dc6c495c0c9188/f2f7dc8efc522ab2",
            "stableTargetGroupArn": "arn:aws:elasticloadbalancing:us-east-1:123456789012:targetgroup/blue/73e2d6bc24d8a067",
            "canaryTargetGroupArn": "arn:aws:elasticloadbalancing:us-east-1:123456789012:targetgroup/green/73e2d6bc24d8a068",
        }})
    }

    fn errors_of(plan: serde_json::Value) -> Vec<String> {
        match RolloutPlan::parse(plan) {
            Ok(_) => vec![],
            Err(errors) => errors.0.iter().map(|e| e.to_string()).collect(),
        }
    }

    #[test]
    fn a_header_stage_judged_by_a_canary_is_a_plan() {
        let plan = plan_with(
            json!({
                "conditions": {"httpHeader": {"name": "x-canary", "values": ["green"]}},
                "bakeSeconds": 300,
                "syntheticsCanaries": ["green-smoke"],
            }),
            alb(),
        );
        assert_eq!(errors_of(plan), Vec::<String>::new());
    }

    #[test]
    fn every_bad_field_is_named_at_once() {
        let plan = plan_with(
            json!({
                "conditions": {
                    "httpHeader": {"name": "x canary", "values": ["a", "b", "c"]},
                    "hostHeader": ["green.example.com", "bad/host"],
                    "queryString": [{"value": ""}],
                },
                "priority": 50001,
                "bakeSeconds": 0,
                "syntheticsCanaries": ["Green"],
            }),
            alb(),
        );
        let errors = errors_of(plan);
        for needle in [
            "testTraffic.conditions: hold 6 values",
            "testTraffic.conditions.httpHeader.name: `x canary`",
            "testTraffic.conditions.hostHeader[1]",
            "testTraffic.conditions.queryString[0].value",
            "testTraffic.priority: must be from 1 to 50000, got 50001",
            "testTraffic.bakeSeconds",
            "testTraffic.syntheticsCanaries[0]: `Green`",
        ] {
            assert!(
                errors.iter().any(|e| e.starts_with(needle)),
                "{needle} not in {errors:#?}"
            );
        }
    }

    #[test]
    fn a_stage_without_conditions_or_judges_is_refused() {
        let errors = errors_of(plan_with(json!({"bakeSeconds": 60}), alb()));
        assert!(errors
            .iter()
            .any(|e| e.starts_with("testTraffic.conditions: is what")));
        assert!(errors.iter().any(|e| e.starts_with("testTraffic: judges")));
        let rate_alone = errors_of(plan_with(
            json!({"conditions": {"hostHeader": ["green.example.com"]}, "bakeSeconds": 60,
                   "maxErrorRatePercent": 101, "minRequests": 0}),
            alb(),
        ));
        assert_eq!(
            rate_alone,
            [
                "testTraffic.maxErrorRatePercent: must be a percentage from 0 to 100, got 101",
                "testTraffic.minRequests: must be from 1 to 1000000, got 0"
            ]
        );
        let empty = errors_of(plan_with(
            json!({"conditions": {}, "bakeSeconds": 60, "alarms": ["green-5xx"]}),
            alb(),
        ));
        assert!(
            empty
                .iter()
                .any(|e| e.contains("a rule without conditions would send every request")),
            "{empty:#?}"
        );
    }

    fn header(name: &str, values: &[&str]) -> RuleCondition {
        RuleCondition {
            field: "http-header".to_owned(),
            header_name: Some(name.to_owned()),
            values: values.iter().map(|v| (*v).to_owned()).collect(),
        }
    }

    #[test]
    fn an_existing_rule_on_the_same_header_value_already_matches_test_requests() {
        let ours = TestConditions {
            http_header: Some(HeaderCondition {
                name: "X-Canary".to_owned(),
                values: vec!["green".to_owned()],
            }),
            ..TestConditions::default()
        };
        assert!(ours.already_matched_by(&[header("x-canary", &["blue", "GREEN"])]));
        assert!(!ours.already_matched_by(&[header("x-canary", &["blue"])]));
        assert!(!ours.already_matched_by(&[header("x-other", &["green"])]));
        // A rule that also asks for a path matches only some test requests: not refused.
        let path = RuleCondition {
            field: "path-pattern".to_owned(),
            header_name: None,
            values: vec!["/api/*".to_owned()],
        };
        assert!(!ours.already_matched_by(&[header("x-canary", &["green"]), path]));
        assert!(!ours.already_matched_by(&[]));
    }

    #[test]
    fn the_priority_is_the_plans_if_free_else_below_every_rule() {
        assert_eq!(choose_priority(None, &[]), Ok(1));
        assert_eq!(choose_priority(None, &[10, 5, 200]), Ok(4));
        assert!(choose_priority(None, &[1, 7])
            .unwrap_err()
            .contains("testTraffic.priority"));
        assert_eq!(choose_priority(Some(7), &[1, 5]), Ok(7));
        assert!(choose_priority(Some(5), &[1, 5])
            .unwrap_err()
            .contains("priority 5 is taken"));
    }

    #[test]
    fn route53_needs_the_clusters_own_name_and_other_kinds_are_refused() {
        let route53 = json!({"route53": {
            "hostedZoneId": "Z1", "recordName": "api.example.com", "recordType": "A",
            "stableSetIdentifier": "blue", "canarySetIdentifier": "green",
        }});
        let stage = json!({"bakeSeconds": 60, "syntheticsCanaries": ["green-smoke"]});
        let missing = errors_of(plan_with(stage.clone(), route53.clone()));
        assert!(missing
            .iter()
            .any(|e| e.starts_with("testTraffic.recordName: is the test address")));
        let mut same = stage.clone();
        same["recordName"] = json!("api.example.com.");
        assert!(errors_of(plan_with(same, route53.clone()))
            .iter()
            .any(|e| e.contains("is the weighted record users resolve")));
        let mut own = stage.clone();
        own["recordName"] = json!("green.api.example.com");
        assert_eq!(errors_of(plan_with(own, route53)), Vec::<String>::new());

        let nlb = json!({"nlb": {
            "listenerArn": "arn:aws:elasticloadbalancing:us-east-1:123456789012:listener/net/web/50dc6c495c0c9188/f2f7dc8efc522ab2",
            "stableTargetGroupArn": "arn:aws:elasticloadbalancing:us-east-1:123456789012:targetgroup/blue/73e2d6bc24d8a067",
            "canaryTargetGroupArn": "arn:aws:elasticloadbalancing:us-east-1:123456789012:targetgroup/green/73e2d6bc24d8a068",
        }});
        let refused = errors_of(plan_with(stage, nlb));
        assert!(
            refused
                .iter()
                .any(|e| e.starts_with("trafficTargets[0]: is a nlb target: a test-traffic stage")),
            "{refused:#?}"
        );
    }
}
