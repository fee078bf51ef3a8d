//! Load balancer forward actions (an ALB's listener or rule, an NLB's listener): read the
//! target group weights of a listener's default action or of a rule, and write new weights in
//! one `ModifyListener`/`ModifyRule`.

use std::collections::{BTreeMap, HashMap};

use async_trait::async_trait;
use aws_config::SdkConfig;
use aws_sdk_elasticloadbalancingv2 as elbv2;
use canary_core::target_health::TargetState;
use canary_core::ForwardTarget;
use elbv2::types::{Action, ActionTypeEnum, ForwardActionConfig, TargetGroupTuple};

use crate::error::{AwsError, AwsErrorKind};

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TargetGroupWeight {
    pub arn: String,
    pub weight: u16,
}

impl TargetGroupWeight {
    /// The stable and the canary target group at `weights`.
    pub fn pair(stable: &str, canary: &str, weights: canary_core::WeightPair) -> [Self; 2] {
        [
            TargetGroupWeight {
                arn: stable.to_owned(),
                weight: weights.stable,
            },
            TargetGroupWeight {
                arn: canary.to_owned(),
                weight: weights.canary,
            },
        ]
    }
}

/// Target group stickiness of a forward action (`TargetGroupStickinessConfig`): while on,
/// a client keeps going to the target group it was sent to, whatever the weights say.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GroupStickiness {
    pub enabled: bool,
    pub duration_seconds: Option<i32>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct ForwardAction {
    pub target_groups: Vec<TargetGroupWeight>,
    pub group_stickiness: Option<GroupStickiness>,
    /// Every action of the listener or rule as read, so that a write changes the weights and
    /// nothing else without reading them again.
    pub actions: ListenerActions,
}

/// The actions of a listener's default action or of a rule, as ELB returned them.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ListenerActions(Vec<Action>);

impl ForwardAction {
    pub fn weight_of(&self, arn: &str) -> Option<u16> {
        self.target_groups
            .iter()
            .find(|tg| tg.arn == arn)
            .map(|tg| tg.weight)
    }
}

#[derive(Debug, Clone, PartialEq)]
pub enum ForwardRead {
    Forward(ForwardAction),
    /// The listener or rule does not forward (it redirects, or answers with a fixed response).
    NotForward {
        action_types: Vec<String>,
    },
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TargetGroupInfo {
    pub arn: String,
    /// `HTTP`, `TCP`, `UDP`…: an NLB's forward action takes target groups of one protocol.
    pub protocol: Option<String>,
    /// The target group attribute `stickiness.enabled`: sticky clients do not follow weights.
    pub stickiness_enabled: bool,
}

/// What a check reads of an ALB target. A function that only reads (evaluate-alarms) holds
/// the client as `dyn AlbReads`, whose vtable links none of the writes.
#[async_trait]
pub trait AlbReads: Send + Sync {
    /// The forward action of the rule, or of the listener's default actions.
    async fn read_forward(&self, target: &dyn ForwardTarget) -> Result<ForwardRead, AwsError>;
}

/// Everything a rollout does with an ALB target.
#[async_trait]
pub trait AlbApi: AlbReads {
    /// Replaces the forward action's target groups with `weights`, keeping everything else
    /// (other actions, group stickiness) as `current` read it, in one `ModifyRule`/
    /// `ModifyListener` call. `current` is the compare-and-set read: no second read.
    async fn write_forward(
        &self,
        target: &dyn ForwardTarget,
        current: &ForwardAction,
        weights: &[TargetGroupWeight],
    ) -> Result<(), AwsError>;
    /// Describes target groups; `NotFound` if any of them does not exist.
    async fn target_groups(
        &self,
        region: &str,
        arns: &[String],
    ) -> Result<Vec<TargetGroupInfo>, AwsError>;
    /// Every registered target of a target group with its health (`DescribeTargetHealth`).
    async fn target_health(&self, target_group_arn: &str) -> Result<Vec<TargetState>, AwsError>;
    /// The tags of a listener or rule (`DescribeTags`): who manages it.
    async fn tags(&self, region: &str, arn: &str) -> Result<BTreeMap<String, String>, AwsError>;
}

/// `AlbApi` on the real ELBv2 client, one client per region the plan names.
pub struct SdkAlb {
    config: SdkConfig,
}

impl SdkAlb {
    pub fn new(config: &SdkConfig) -> Self {
        SdkAlb {
            config: config.clone(),
        }
    }

    /// A client for the load balancer's region. Building one makes no network call.
    pub(crate) fn client(&self, region: Option<&str>) -> elbv2::Client {
        let mut builder = elbv2::config::Builder::from(&self.config);
        if let Some(region) = region {
            builder = builder.region(elbv2::config::Region::new(region.to_owned()));
        }
        elbv2::Client::from_conf(builder.build())
    }

    async fn read_actions(
        &self,
        client: &elbv2::Client,
        target: &dyn ForwardTarget,
    ) -> Result<Vec<Action>, AwsError> {
        match target.rule_arn() {
            Some(rule_arn) => {
                let out = client
                    .describe_rules()
                    .rule_arns(rule_arn)
                    .send()
                    .await
                    .map_err(|e| AwsError::from_sdk("DescribeRules", e))?;
                let rule = out.rules().first().ok_or_else(|| {
                    AwsError::new(
                        AwsErrorKind::NotFound,
                        "DescribeRules",
                        format!("rule {rule_arn} not found"),
                    )
                })?;
                Ok(rule.actions().to_vec())
            }
            None => {
                let out = client
                    .describe_listeners()
                    .listener_arns(target.listener_arn())
                    .send()
                    .await
                    .map_err(|e| AwsError::from_sdk("DescribeListeners", e))?;
                let listener = out.listeners().first().ok_or_else(|| {
                    AwsError::new(
                        AwsErrorKind::NotFound,
                        "DescribeListeners",
                        format!("listener {} not found", target.listener_arn()),
                    )
                })?;
                Ok(listener.default_actions().to_vec())
            }
        }
    }
}

fn forward_of(actions: &[Action]) -> Result<ForwardRead, AwsError> {
    let Some(forward) = actions
        .iter()
        .find(|a| a.r#type() == Some(&ActionTypeEnum::Forward))
    else {
        return Ok(ForwardRead::NotForward {
            action_types: actions
                .iter()
                .map(|a| a.r#type().map_or("unknown", |t| t.as_str()).to_owned())
                .collect(),
        });
    };
    let config = forward.forward_config();
    let tuples = config
        .map(ForwardActionConfig::target_groups)
        .unwrap_or_default();
    let target_groups = if tuples.is_empty() {
        // The single-target-group form (`TargetGroupArn` only) is a forward with weight 1.
        forward
            .target_group_arn()
            .map(|arn| {
                vec![TargetGroupWeight {
                    arn: arn.to_owned(),
                    weight: 1,
                }]
            })
            .unwrap_or_default()
    } else {
        tuples.iter().map(tuple_weight).collect::<Result<_, _>>()?
    };
    let group_stickiness = config
        .and_then(ForwardActionConfig::target_group_stickiness_config)
        .map(|s| GroupStickiness {
            enabled: s.enabled().unwrap_or(false),
            duration_seconds: s.duration_seconds(),
        });
    Ok(ForwardRead::Forward(ForwardAction {
        target_groups,
        group_stickiness,
        actions: ListenerActions(actions.to_vec()),
    }))
}

fn tuple_weight(tuple: &TargetGroupTuple) -> Result<TargetGroupWeight, AwsError> {
    let arn = tuple.target_group_arn().unwrap_or_default().to_owned();
    // ELB documents a missing weight as 1.
    let raw = tuple.weight().unwrap_or(1);
    let weight = u16::try_from(raw).map_err(|_| {
        AwsError::new(
            AwsErrorKind::Rejected,
            "DescribeListeners",
            format!("target group {arn} has weight {raw}, outside ELB's 0-999"),
        )
    })?;
    Ok(TargetGroupWeight { arn, weight })
}

/// `actions` with the forward action's target groups replaced by `weights`.
fn with_weights(actions: Vec<Action>, weights: &[TargetGroupWeight]) -> Vec<Action> {
    let tuples: Vec<TargetGroupTuple> = weights
        .iter()
        .map(|w| {
            TargetGroupTuple::builder()
                .target_group_arn(&w.arn)
                .weight(i32::from(w.weight))
                .build()
        })
        .collect();
    actions
        .into_iter()
        .map(|action| {
            if action.r#type() != Some(&ActionTypeEnum::Forward) {
                return action;
            }
            let stickiness = action
                .forward_config()
                .and_then(ForwardActionConfig::target_group_stickiness_config)
                .cloned();
            let config = ForwardActionConfig::builder()
                .set_target_groups(Some(tuples.clone()))
                .set_target_group_stickiness_config(stickiness)
                .build();
            // TargetGroupArn and a multi-group ForwardConfig may not both be given.
            let mut builder = Action::builder()
                .r#type(ActionTypeEnum::Forward)
                .forward_config(config);
            if let Some(order) = action.order() {
                builder = builder.order(order);
            }
            builder.build()
        })
        .collect()
}

#[async_trait]
impl AlbReads for SdkAlb {
    async fn read_forward(&self, target: &dyn ForwardTarget) -> Result<ForwardRead, AwsError> {
        let client = self.client(target.region());
        let actions = self.read_actions(&client, target).await?;
        forward_of(&actions)
    }
}

#[async_trait]
impl AlbApi for SdkAlb {
    async fn write_forward(
        &self,
        target: &dyn ForwardTarget,
        current: &ForwardAction,
        weights: &[TargetGroupWeight],
    ) -> Result<(), AwsError> {
        let client = self.client(target.region());
        let actions = with_weights(current.actions.0.clone(), weights);
        match target.rule_arn() {
            Some(rule_arn) => client
                .modify_rule()
                .rule_arn(rule_arn)
                .set_actions(Some(actions))
                .send()
                .await
                .map(drop)
                .map_err(|e| AwsError::from_sdk("ModifyRule", e)),
            None => client
                .modify_listener()
                .listener_arn(target.listener_arn())
                .set_default_actions(Some(actions))
                .send()
                .await
                .map(drop)
                .map_err(|e| AwsError::from_sdk("ModifyListener", e)),
        }
    }

    async fn tags(&self, region: &str, arn: &str) -> Result<BTreeMap<String, String>, AwsError> {
        let described = self
            .client(Some(region))
            .describe_tags()
            .resource_arns(arn)
            .send()
            .await
            .map_err(|e| AwsError::from_sdk("DescribeTags", e))?;
        Ok(described
            .tag_descriptions()
            .iter()
            .flat_map(|d| d.tags())
            .filter_map(|t| {
                Some((
                    t.key()?.to_owned(),
                    t.value().unwrap_or_default().to_owned(),
                ))
            })
            .collect())
    }

    async fn target_groups(
        &self,
        region: &str,
        arns: &[String],
    ) -> Result<Vec<TargetGroupInfo>, AwsError> {
        let client = self.client(Some(region));
        let described = client
            .describe_target_groups()
            .set_target_group_arns(Some(arns.to_vec()))
            .send()
            .await
            .map_err(|e| AwsError::from_sdk("DescribeTargetGroups", e))?;
        let found: HashMap<&str, Option<&str>> = described
            .target_groups()
            .iter()
            .filter_map(|tg| Some((tg.target_group_arn()?, tg.protocol().map(|p| p.as_str()))))
            .collect();
        if let Some(missing) = arns.iter().find(|arn| !found.contains_key(arn.as_str())) {
            return Err(AwsError::new(
                AwsErrorKind::NotFound,
                "DescribeTargetGroups",
                format!("target group {missing} not found"),
            ));
        }
        let mut infos = Vec::with_capacity(arns.len());
        for arn in arns {
            let attributes = client
                .describe_target_group_attributes()
                .target_group_arn(arn)
                .send()
                .await
                .map_err(|e| AwsError::from_sdk("DescribeTargetGroupAttributes", e))?;
            let by_key: HashMap<&str, &str> = attributes
                .attributes()
                .iter()
                .filter_map(|a| Some((a.key()?, a.value()?)))
                .collect();
            infos.push(TargetGroupInfo {
                arn: arn.clone(),
                protocol: found
                    .get(arn.as_str())
                    .copied()
                    .flatten()
                    .map(str::to_owned),
                stickiness_enabled: by_key.get("stickiness.enabled") == Some(&"true"),
            });
        }
        Ok(infos)
    }

    async fn target_health(&self, target_group_arn: &str) -> Result<Vec<TargetState>, AwsError> {
        // The region is the ARN's fourth field; the plan validated the ARN.
        let client = self.client(target_group_arn.split(':').nth(3));
        let out = client
            .describe_target_health()
            .target_group_arn(target_group_arn)
            .send()
            .await
            .map_err(|e| AwsError::from_sdk("DescribeTargetHealth", e))?;
        Ok(out
            .target_health_descriptions()
            .iter()
            .map(target_state)
            .collect())
    }
}

fn target_state(description: &elbv2::types::TargetHealthDescription) -> TargetState {
    let id = description
        .target()
        .and_then(|t| t.id())
        .unwrap_or("unknown");
    let target = match description.target().and_then(|t| t.port()) {
        Some(port) => format!("{id}:{port}"),
        None => id.to_owned(),
    };
    let health = description.target_health();
    TargetState {
        target,
        state: health
            .and_then(|h| h.state())
            .map_or("unknown", |s| s.as_str())
            .to_owned(),
        reason: health
            .and_then(|h| h.reason())
            .map(|r| r.as_str().to_owned()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use elbv2::types::TargetGroupStickinessConfig;

    fn forward(tuples: &[(&str, i32)], sticky: bool) -> Action {
        let config = ForwardActionConfig::builder()
            .set_target_groups(Some(
                tuples
                    .iter()
                    .map(|(arn, w)| {
                        TargetGroupTuple::builder()
                            .target_group_arn(*arn)
                            .weight(*w)
                            .build()
                    })
                    .collect(),
            ))
            .target_group_stickiness_config(
                TargetGroupStickinessConfig::builder()
                    .enabled(sticky)
                    .duration_seconds(300)
                    .build(),
            )
            .build();
        Action::builder()
            .r#type(ActionTypeEnum::Forward)
            .order(2)
            .forward_config(config)
            .build()
    }

    #[test]
    fn reads_weights_and_stickiness() {
        let read = forward_of(&[forward(&[("blue", 90), ("green", 10)], true)]).unwrap();
        let ForwardRead::Forward(action) = read else {
            panic!("not a forward")
        };
        assert_eq!(action.weight_of("blue"), Some(90));
        assert_eq!(action.weight_of("green"), Some(10));
        assert_eq!(
            action.group_stickiness,
            Some(GroupStickiness {
                enabled: true,
                duration_seconds: Some(300)
            })
        );
    }

    #[test]
    fn single_target_group_form_is_weight_one() {
        let action = Action::builder()
            .r#type(ActionTypeEnum::Forward)
            .target_group_arn("blue")
            .build();
        let ForwardRead::Forward(read) = forward_of(&[action]).unwrap() else {
            panic!()
        };
        assert_eq!(
            read.target_groups,
            [TargetGroupWeight {
                arn: "blue".into(),
                weight: 1
            }]
        );
    }

    #[test]
    fn non_forward_actions_are_reported_by_type() {
        let action = Action::builder()
            .r#type(ActionTypeEnum::FixedResponse)
            .build();
        assert_eq!(
            forward_of(&[action]).unwrap(),
            ForwardRead::NotForward {
                action_types: vec!["fixed-response".into()]
            }
        );
    }

    #[test]
    fn rewriting_keeps_order_stickiness_and_other_actions() {
        let auth = Action::builder()
            .r#type(ActionTypeEnum::AuthenticateOidc)
            .order(1)
            .build();
        let actions = vec![auth.clone(), forward(&[("blue", 100)], true)];
        let weights = [
            TargetGroupWeight {
                arn: "blue".into(),
                weight: 75,
            },
            TargetGroupWeight {
                arn: "green".into(),
                weight: 25,
            },
        ];
        let rewritten = with_weights(actions, &weights);
        assert_eq!(rewritten[0], auth);
        assert_eq!(rewritten[1].order(), Some(2));
        let ForwardRead::Forward(read) = forward_of(&rewritten).unwrap() else {
            panic!()
        };
        assert_eq!(read.target_groups, weights);
        assert_eq!(read.group_stickiness.map(|s| s.enabled), Some(true));
    }
}
