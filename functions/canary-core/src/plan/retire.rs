//! The plan's `retire` section: after promotion, finish the old cluster's part.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::{is_eks_cluster_name, ClusterRef, RolloutPlan};
use crate::arn;
use crate::validate::Errors;

#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Retire {
    /// Remove the stable target group (at weight 0 after promotion) from every ALB target's
    /// forward action, in one compare-and-set write each.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub detach_stable_target_groups: bool,
    /// The old cluster, named in the Old Cluster Retired event for a team's own automation
    /// (cluster-canary deletes nothing in AWS).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub old_cluster: Option<ClusterRef>,
    /// The old cluster's Argo CD cluster Secret, in `argocd.namespace`: deleted if
    /// cluster-canary created it, or whoever did with `evenIfNotOurs`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub argocd_secret: Option<String>,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub even_if_not_ours: bool,
}

impl RolloutPlan {
    pub(super) fn validate_retire(&self, retire: &Retire, errors: &mut Errors) {
        if retire.detach_stable_target_groups
            && !self.traffic_targets.iter().any(|t| t.as_alb().is_some())
        {
            errors.push(
                "retire.detachStableTargetGroups",
                "the plan has no ALB target to detach a stable target group from",
            );
        }
        if let Some(old) = &retire.old_cluster {
            if !is_eks_cluster_name(&old.name) {
                errors.push(
                    "retire.oldCluster.name",
                    format!("`{}` is not an EKS cluster name", old.name),
                );
            }
            if !arn::is_region(&old.region) {
                errors.push(
                    "retire.oldCluster.region",
                    format!("`{}` is not an AWS region such as `us-east-1`", old.region),
                );
            }
            if old == &self.cluster {
                errors.push(
                    "retire.oldCluster",
                    "is the new cluster itself: name the cluster the rollout replaces",
                );
            }
        }
        match &retire.argocd_secret {
            Some(name) if !crate::argocd::is_dns_subdomain(name) => errors.push(
                "retire.argocdSecret",
                format!("`{name}` is not a Kubernetes Secret name (a DNS subdomain)"),
            ),
            None if retire.even_if_not_ours => errors.push(
                "retire.evenIfNotOurs",
                "needs `argocdSecret`: the Secret it allows to delete",
            ),
            _ => {}
        }
    }
}
