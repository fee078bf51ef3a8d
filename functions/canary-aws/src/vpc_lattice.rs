//! Amazon VPC Lattice listeners and rules: read the forward action of a listener's default
//! action (`GetListener`) or of a rule (`GetRule`), replace its weighted target groups
//! (`UpdateListener`/`UpdateRule`: the action is replaced whole), the health of a target
//! group's targets (`ListTargets`) and the tags of the service, listener and rule.
//!
//! Lattice answers target groups by ID whichever way they were named, and takes an ID or an ARN
//! everywhere: the target groups are compared by ID (`canary_core::targets::lattice_id`).

use std::collections::BTreeMap;

use async_trait::async_trait;
use aws_config::SdkConfig;
use aws_sdk_vpclattice as lattice;
use canary_core::target_health::TargetState;
use canary_core::{TargetKind, VpcLatticeTarget};
use lattice::types::{ForwardAction, RuleAction, WeightedTargetGroup};

use crate::alb::TargetGroupWeight;
use crate::error::{AwsError, AwsErrorKind};

/// What a listener's default action or a rule does, as read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LatticeAction {
    /// It forwards to these target groups with these weights (`TargetGroupWeight::arn` holds
    /// the target group's ID: Lattice answers IDs).
    Forward(Vec<TargetGroupWeight>),
    /// It answers a fixed response (its status code), or an action this client does not know.
    NotForward(String),
}

/// A listener's default action or a rule, as read: its ARN (the service's and listener's are
/// its prefixes) and its action.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LatticeRead {
    pub arn: String,
    pub action: LatticeAction,
}

/// What a check reads of a VPC Lattice target.
#[async_trait]
pub trait VpcLatticeReads: Send + Sync {
    /// `GetRule`, or `GetListener` for the listener's default action.
    async fn read_action(&self, target: &VpcLatticeTarget) -> Result<LatticeRead, AwsError>;
}

/// Everything a rollout does with a VPC Lattice target.
#[async_trait]
pub trait VpcLatticeApi: VpcLatticeReads {
    /// `UpdateRule`/`UpdateListener` with a forward action to `weights` (by target group ID):
    /// the action is replaced whole.
    async fn write_forward(
        &self,
        target: &VpcLatticeTarget,
        weights: &[TargetGroupWeight],
    ) -> Result<(), AwsError>;
    /// Every registered target of a target group with its status (`ListTargets`), lower case
    /// as ELB's (`healthy`, `unhealthy`, `initial`, `draining`, `unused`, `unavailable`).
    async fn target_health(
        &self,
        target: &VpcLatticeTarget,
        target_group: &str,
    ) -> Result<Vec<TargetState>, AwsError>;
    /// `ListTagsForResource` of a service, listener or rule ARN: who manages it.
    async fn tags(
        &self,
        target: &VpcLatticeTarget,
        arn: &str,
    ) -> Result<BTreeMap<String, String>, AwsError>;
}

/// The API on the real VPC Lattice client, in the Region of the target's ARNs (or the
/// configuration's).
pub struct SdkVpcLattice {
    config: SdkConfig,
}

impl SdkVpcLattice {
    pub fn new(config: &SdkConfig) -> Self {
        SdkVpcLattice {
            config: config.clone(),
        }
    }

    /// A client for the target's Region. Building one makes no network call.
    fn client(&self, target: &VpcLatticeTarget) -> lattice::Client {
        let mut builder = lattice::config::Builder::from(&self.config);
        if let Some(region) = target.region() {
            builder = builder.region(lattice::config::Region::new(region.to_owned()));
        }
        lattice::Client::from_conf(builder.build())
    }
}

fn action_of(action: Option<&RuleAction>) -> LatticeAction {
    match action {
        Some(RuleAction::Forward(forward)) => LatticeAction::Forward(
            forward
                .target_groups()
                .iter()
                .map(|group| TargetGroupWeight {
                    arn: canary_core::targets::lattice_id(group.target_group_identifier())
                        .to_owned(),
                    // 0-999; left out (a single target group's action may) it is read as 1.
                    weight: group
                        .weight()
                        .and_then(|w| u16::try_from(w).ok())
                        .unwrap_or(1),
                })
                .collect(),
        ),
        Some(RuleAction::FixedResponse(fixed)) => {
            LatticeAction::NotForward(format!("a fixed response {}", fixed.status_code()))
        }
        Some(_) => LatticeAction::NotForward("an action this client does not know".to_owned()),
        None => LatticeAction::NotForward("no action".to_owned()),
    }
}

/// The forward action of `weights`, for `operation` (its error names it).
fn forward_to(
    weights: &[TargetGroupWeight],
    operation: &'static str,
) -> Result<RuleAction, AwsError> {
    let groups = weights
        .iter()
        .map(|w| {
            WeightedTargetGroup::builder()
                .target_group_identifier(&w.arn)
                .weight(i32::from(w.weight))
                .build()
        })
        .collect::<Result<Vec<_>, _>>()
        .and_then(|groups| {
            ForwardAction::builder()
                .set_target_groups(Some(groups))
                .build()
        })
        .map_err(|e| AwsError::new(AwsErrorKind::Rejected, operation, e.to_string()))?;
    Ok(RuleAction::Forward(groups))
}

#[async_trait]
impl VpcLatticeReads for SdkVpcLattice {
    async fn read_action(&self, target: &VpcLatticeTarget) -> Result<LatticeRead, AwsError> {
        let client = self.client(target);
        match &target.rule_identifier {
            Some(rule) => {
                let out = client
                    .get_rule()
                    .service_identifier(&target.service_identifier)
                    .listener_identifier(&target.listener_identifier)
                    .rule_identifier(rule)
                    .send()
                    .await
                    .map_err(|e| AwsError::from_sdk("GetRule", e))?;
                Ok(LatticeRead {
                    arn: out.arn().unwrap_or_default().to_owned(),
                    action: action_of(out.action()),
                })
            }
            None => {
                let out = client
                    .get_listener()
                    .service_identifier(&target.service_identifier)
                    .listener_identifier(&target.listener_identifier)
                    .send()
                    .await
                    .map_err(|e| AwsError::from_sdk("GetListener", e))?;
                Ok(LatticeRead {
                    arn: out.arn().unwrap_or_default().to_owned(),
                    action: action_of(out.default_action()),
                })
            }
        }
    }
}

#[async_trait]
impl VpcLatticeApi for SdkVpcLattice {
    async fn write_forward(
        &self,
        target: &VpcLatticeTarget,
        weights: &[TargetGroupWeight],
    ) -> Result<(), AwsError> {
        let client = self.client(target);
        match &target.rule_identifier {
            Some(rule) => client
                .update_rule()
                .service_identifier(&target.service_identifier)
                .listener_identifier(&target.listener_identifier)
                .rule_identifier(rule)
                .action(forward_to(weights, "UpdateRule")?)
                .send()
                .await
                .map(drop)
                .map_err(|e| AwsError::from_sdk("UpdateRule", e)),
            None => client
                .update_listener()
                .service_identifier(&target.service_identifier)
                .listener_identifier(&target.listener_identifier)
                .default_action(forward_to(weights, "UpdateListener")?)
                .send()
                .await
                .map(drop)
                .map_err(|e| AwsError::from_sdk("UpdateListener", e)),
        }
    }

    async fn target_health(
        &self,
        target: &VpcLatticeTarget,
        target_group: &str,
    ) -> Result<Vec<TargetState>, AwsError> {
        let pages = self
            .client(target)
            .list_targets()
            .target_group_identifier(target_group)
            .into_paginator()
            .items()
            .send()
            .collect::<Result<Vec<_>, _>>()
            .await
            .map_err(|e| AwsError::from_sdk("ListTargets", e))?;
        Ok(pages
            .iter()
            .map(|t| TargetState {
                target: match t.port() {
                    Some(port) => format!("{}:{port}", t.id().unwrap_or_default()),
                    None => t.id().unwrap_or_default().to_owned(),
                },
                state: t
                    .status()
                    .map_or("unknown".to_owned(), |s| s.as_str().to_ascii_lowercase()),
                reason: t.reason_code().map(str::to_owned),
            })
            .collect())
    }

    async fn tags(
        &self,
        target: &VpcLatticeTarget,
        arn: &str,
    ) -> Result<BTreeMap<String, String>, AwsError> {
        let out = self
            .client(target)
            .list_tags_for_resource()
            .resource_arn(arn)
            .send()
            .await
            .map_err(|e| AwsError::from_sdk("ListTagsForResource", e))?;
        Ok(out
            .tags()
            .map(|tags| tags.iter().map(|(k, v)| (k.clone(), v.clone())).collect())
            .unwrap_or_default())
    }
}
