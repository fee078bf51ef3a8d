//! The listener rules of a test-traffic stage (an ALB's): the rules a listener has, where its
//! load balancer answers, and creating and deleting a tagged rule that forwards to one target
//! group.

use std::collections::BTreeMap;

use async_trait::async_trait;
use aws_sdk_elasticloadbalancingv2 as elbv2;
use canary_core::test_traffic::{RuleCondition, TestConditions};
use elbv2::types::{
    Action, ActionTypeEnum, HostHeaderConditionConfig, HttpHeaderConditionConfig,
    QueryStringConditionConfig, QueryStringKeyValuePair, Tag,
};

use crate::alb::SdkAlb;
use crate::error::{AwsError, AwsErrorKind};

/// One rule of a listener (not its default action).
#[derive(Debug, Clone, PartialEq)]
pub struct ListenerRule {
    pub arn: String,
    pub priority: i64,
    pub conditions: Vec<RuleCondition>,
}

/// Where a listener answers: `https://<dns name>:443`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListenerAddress {
    pub protocol: String,
    pub port: i32,
    pub dns_name: String,
}

#[async_trait]
pub trait TestRuleApi: Send + Sync {
    /// Every rule of the listener but its default; `NotFound` if there is no such listener.
    async fn rules(&self, listener_arn: &str) -> Result<Vec<ListenerRule>, AwsError>;
    /// The listener's protocol and port, and its load balancer's DNS name.
    async fn address(&self, listener_arn: &str) -> Result<ListenerAddress, AwsError>;
    /// Creates a rule forwarding requests that match `conditions` to `target_group_arn` alone,
    /// with `tags`. Returns its ARN.
    async fn create_rule(
        &self,
        listener_arn: &str,
        priority: i64,
        conditions: &TestConditions,
        target_group_arn: &str,
        tags: &BTreeMap<String, String>,
    ) -> Result<String, AwsError>;
    /// Deletes a rule; `NotFound` if it is gone already.
    async fn delete_rule(&self, rule_arn: &str) -> Result<(), AwsError>;
    /// The tags of each rule (`DescribeTags`, 20 a call).
    async fn rule_tags(
        &self,
        rule_arns: &[String],
    ) -> Result<BTreeMap<String, BTreeMap<String, String>>, AwsError>;
}

/// The Region of an ELB ARN (its fourth field); the plan validated the ARN.
fn region_of(arn: &str) -> Option<&str> {
    arn.split(':').nth(3)
}

fn condition_of(condition: &elbv2::types::RuleCondition) -> RuleCondition {
    let field = condition.field().unwrap_or_default().to_owned();
    let (header_name, values) = if let Some(header) = condition.http_header_config() {
        (
            header.http_header_name().map(str::to_owned),
            header.values().to_vec(),
        )
    } else if let Some(hosts) = condition.host_header_config() {
        (None, hosts.values().to_vec())
    } else if let Some(query) = condition.query_string_config() {
        let pairs = query
            .values()
            .iter()
            .map(|p| {
                format!(
                    "{}={}",
                    p.key().unwrap_or_default(),
                    p.value().unwrap_or_default()
                )
            })
            .collect();
        (None, pairs)
    } else {
        (None, condition.values().to_vec())
    };
    RuleCondition {
        field,
        header_name,
        values,
    }
}

fn conditions_of(conditions: &TestConditions) -> Vec<elbv2::types::RuleCondition> {
    let mut out = Vec::new();
    if let Some(header) = &conditions.http_header {
        out.push(
            elbv2::types::RuleCondition::builder()
                .field("http-header")
                .http_header_config(
                    HttpHeaderConditionConfig::builder()
                        .http_header_name(&header.name)
                        .set_values(Some(header.values.clone()))
                        .build(),
                )
                .build(),
        );
    }
    if !conditions.host_header.is_empty() {
        out.push(
            elbv2::types::RuleCondition::builder()
                .field("host-header")
                .host_header_config(
                    HostHeaderConditionConfig::builder()
                        .set_values(Some(conditions.host_header.clone()))
                        .build(),
                )
                .build(),
        );
    }
    if !conditions.query_string.is_empty() {
        let pairs = conditions
            .query_string
            .iter()
            .map(|q| {
                QueryStringKeyValuePair::builder()
                    .set_key(q.key.clone())
                    .value(&q.value)
                    .build()
            })
            .collect();
        out.push(
            elbv2::types::RuleCondition::builder()
                .field("query-string")
                .query_string_config(
                    QueryStringConditionConfig::builder()
                        .set_values(Some(pairs))
                        .build(),
                )
                .build(),
        );
    }
    out
}

#[async_trait]
impl TestRuleApi for SdkAlb {
    async fn rules(&self, listener_arn: &str) -> Result<Vec<ListenerRule>, AwsError> {
        let client = self.client(region_of(listener_arn));
        let mut rules = Vec::new();
        let mut marker = None;
        loop {
            let page = client
                .describe_rules()
                .listener_arn(listener_arn)
                .set_marker(marker)
                .send()
                .await
                .map_err(|e| AwsError::from_sdk("DescribeRules", e))?;
            for rule in page.rules() {
                if rule.is_default() == Some(true) {
                    continue;
                }
                let priority = rule.priority().and_then(|p| p.parse().ok());
                let (Some(arn), Some(priority)) = (rule.rule_arn(), priority) else {
                    continue;
                };
                rules.push(ListenerRule {
                    arn: arn.to_owned(),
                    priority,
                    conditions: rule.conditions().iter().map(condition_of).collect(),
                });
            }
            marker = page.next_marker().map(str::to_owned);
            if marker.is_none() {
                return Ok(rules);
            }
        }
    }

    async fn address(&self, listener_arn: &str) -> Result<ListenerAddress, AwsError> {
        let client = self.client(region_of(listener_arn));
        let listeners = client
            .describe_listeners()
            .listener_arns(listener_arn)
            .send()
            .await
            .map_err(|e| AwsError::from_sdk("DescribeListeners", e))?;
        let not_found =
            |what: String| AwsError::new(AwsErrorKind::NotFound, "DescribeListeners", what);
        let listener = listeners
            .listeners()
            .first()
            .ok_or_else(|| not_found(format!("listener {listener_arn} not found")))?;
        let lb_arn = listener
            .load_balancer_arn()
            .ok_or_else(|| not_found(format!("listener {listener_arn} has no load balancer")))?;
        let balancers = client
            .describe_load_balancers()
            .load_balancer_arns(lb_arn)
            .send()
            .await
            .map_err(|e| AwsError::from_sdk("DescribeLoadBalancers", e))?;
        let dns_name = balancers
            .load_balancers()
            .first()
            .and_then(|lb| lb.dns_name())
            .ok_or_else(|| not_found(format!("load balancer {lb_arn} has no DNS name")))?;
        Ok(ListenerAddress {
            protocol: listener
                .protocol()
                .map_or("HTTP", |p| p.as_str())
                .to_owned(),
            port: listener.port().unwrap_or(80),
            dns_name: dns_name.to_owned(),
        })
    }

    async fn create_rule(
        &self,
        listener_arn: &str,
        priority: i64,
        conditions: &TestConditions,
        target_group_arn: &str,
        tags: &BTreeMap<String, String>,
    ) -> Result<String, AwsError> {
        let client = self.client(region_of(listener_arn));
        let forward = Action::builder()
            .r#type(ActionTypeEnum::Forward)
            .target_group_arn(target_group_arn)
            .build();
        let tags = tags
            .iter()
            .map(|(k, v)| Tag::builder().key(k).value(v).build())
            .collect::<Vec<_>>();
        let priority = i32::try_from(priority).map_err(|_| {
            AwsError::new(
                AwsErrorKind::Rejected,
                "CreateRule",
                format!("priority {priority} is out of range"),
            )
        })?;
        let created = client
            .create_rule()
            .listener_arn(listener_arn)
            .priority(priority)
            .set_conditions(Some(conditions_of(conditions)))
            .actions(forward)
            .set_tags(Some(tags))
            .send()
            .await
            .map_err(|e| AwsError::from_sdk("CreateRule", e))?;
        created
            .rules()
            .first()
            .and_then(|r| r.rule_arn())
            .map(str::to_owned)
            .ok_or_else(|| {
                AwsError::new(
                    AwsErrorKind::Rejected,
                    "CreateRule",
                    "ELB answered without the rule it created".to_owned(),
                )
            })
    }

    async fn delete_rule(&self, rule_arn: &str) -> Result<(), AwsError> {
        self.client(region_of(rule_arn))
            .delete_rule()
            .rule_arn(rule_arn)
            .send()
            .await
            .map(drop)
            .map_err(|e| AwsError::from_sdk("DeleteRule", e))
    }

    async fn rule_tags(
        &self,
        rule_arns: &[String],
    ) -> Result<BTreeMap<String, BTreeMap<String, String>>, AwsError> {
        let mut tags = BTreeMap::new();
        for chunk in rule_arns.chunks(20) {
            let Some(first) = chunk.first() else {
                continue;
            };
            let described = self
                .client(region_of(first))
                .describe_tags()
                .set_resource_arns(Some(chunk.to_vec()))
                .send()
                .await
                .map_err(|e| AwsError::from_sdk("DescribeTags", e))?;
            for description in described.tag_descriptions() {
                let Some(arn) = description.resource_arn() else {
                    continue;
                };
                let of_rule = description
                    .tags()
                    .iter()
                    .filter_map(|t| {
                        Some((
                            t.key()?.to_owned(),
                            t.value().unwrap_or_default().to_owned(),
                        ))
                    })
                    .collect();
                tags.insert(arn.to_owned(), of_rule);
            }
        }
        Ok(tags)
    }
}
