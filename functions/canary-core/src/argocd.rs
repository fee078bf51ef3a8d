//! The plan's `argocd` section: how the new cluster is registered in Argo CD and when its
//! apps count as ready.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::limits::MAX_APPS_TIMEOUT_SECONDS;
use crate::validate::Errors;

/// Labels this project sets itself; a plan may not set them.
pub const SECRET_TYPE_LABEL: &str = "argocd.argoproj.io/secret-type";
pub const MANAGED_BY_LABEL: &str = "app.kubernetes.io/managed-by";
pub const MANAGED_BY_VALUE: &str = "cluster-canary";
/// Most times the state machine asks for the apps' status: each is about eleven history
/// events, and a long timeout is polled less often rather than more times.
pub const MAX_APPS_POLLS: i64 = 120;

/// How Argo CD runs, which decides the cluster Secret's shape.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum ArgoCdMode {
    /// Argo CD installed in a cluster: `server` is the API endpoint, `config` says how to
    /// reach it (awsAuthConfig, the CA).
    #[default]
    SelfManaged,
    /// The EKS Capability for Argo CD: `server` is the cluster's ARN and there is no `config`;
    /// the capability reaches the cluster through an EKS access entry for its role.
    EksCapability,
}

/// The EKS access policy an access entry gets when the plan does not say.
pub const DEFAULT_ACCESS_POLICY: &str =
    "arn:aws:eks::aws:cluster-access-policy/AmazonEKSClusterAdminPolicy";

#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ArgoCdSection {
    /// `self-managed` (default) or `eks-capability`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mode: Option<ArgoCdMode>,
    /// `eks-capability`: the capability's IAM role. Registration gives it an access entry on
    /// the new cluster (and deregistration removes the entry if registration created it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub capability_role_arn: Option<String>,
    /// `self-managed` with `roleArn`: also give that role an access entry on the new cluster.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub create_access_entry: Option<bool>,
    /// The EKS access policy associated with that access entry, at cluster scope. Default
    /// AmazonEKSClusterAdminPolicy.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub access_policy_arn: Option<String>,
    /// Argo CD's namespace in the management cluster. Default `argocd`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    /// Labels on the cluster Secret, for ApplicationSet cluster generators to select on.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub labels: BTreeMap<String, String>,
    /// Restrict the cluster to an Argo CD project.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub project: Option<String>,
    /// Restrict Argo CD to these namespaces of the cluster.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub namespaces: Vec<String>,
    /// With `namespaces`: whether Argo CD may also manage cluster-scoped resources.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cluster_resources: Option<bool>,
    /// The role Argo CD assumes to reach the cluster (`awsAuthConfig.roleARN`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub role_arn: Option<String>,
    /// Traffic moves only once at least this many Applications target the cluster and all are
    /// Synced and Healthy. Default 1.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0, max = 1000))]
    pub min_apps: Option<i64>,
    /// Consecutive apps polls that must find everything ready before traffic moves: an app
    /// that flaps between Healthy and Progressing does not pass on one lucky look. Default 2.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1, max = 10))]
    pub stable_checks: Option<i64>,
    /// Ask Argo CD to refresh Applications on the cluster that are not Synced and Healthy yet
    /// (the `argocd.argoproj.io/refresh: normal` annotation, at most once per poll). Needs
    /// `patch` on Applications (infra/kubernetes/argocd-rbac-refresh.yaml). Default false.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub refresh_stale_apps: Option<bool>,
    /// How long to wait for the apps before failing (without having moved traffic). Default 1800.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 60, max = 86400))]
    pub apps_timeout_seconds: Option<i64>,
}

impl ArgoCdSection {
    pub fn namespace(&self) -> &str {
        self.namespace.as_deref().unwrap_or("argocd")
    }

    pub fn mode(&self) -> ArgoCdMode {
        self.mode.unwrap_or_default()
    }

    /// The role that gets an access entry on the new cluster, if registration creates one.
    pub fn access_entry_principal(&self) -> Option<&str> {
        match self.mode() {
            ArgoCdMode::EksCapability => self.capability_role_arn.as_deref(),
            ArgoCdMode::SelfManaged if self.create_access_entry == Some(true) => {
                self.role_arn.as_deref()
            }
            ArgoCdMode::SelfManaged => None,
        }
    }

    pub fn access_policy_arn(&self) -> &str {
        self.access_policy_arn
            .as_deref()
            .unwrap_or(DEFAULT_ACCESS_POLICY)
    }

    pub fn min_apps(&self) -> usize {
        self.min_apps
            .and_then(|n| usize::try_from(n).ok())
            .unwrap_or(1)
    }

    pub fn stable_checks(&self) -> u32 {
        self.stable_checks
            .and_then(|n| u32::try_from(n).ok())
            .unwrap_or(2)
    }

    pub fn refresh_stale_apps(&self) -> bool {
        self.refresh_stale_apps.unwrap_or(false)
    }

    pub fn apps_timeout_seconds(&self) -> i64 {
        self.apps_timeout_seconds.unwrap_or(1800)
    }

    pub(crate) fn validate(&self, errors: &mut Errors) {
        if let Some(ns) = &self.namespace {
            if !is_dns_label(ns) {
                errors.push(
                    "argocd.namespace",
                    format!("`{ns}` is not a Kubernetes namespace name"),
                );
            }
        }
        for (key, value) in &self.labels {
            let path = format!("argocd.labels.{key}");
            if key == SECRET_TYPE_LABEL || key == MANAGED_BY_LABEL {
                errors.push(path, "is set by cluster-canary itself");
            } else if !is_label_key(key) {
                errors.push(path, format!("`{key}` is not a Kubernetes label key"));
            } else if !is_label_value(value) {
                errors.push(
                    path,
                    format!("`{value}` is not a Kubernetes label value (at most 63 letters, digits, '-', '_', '.')"),
                );
            }
        }
        for (i, ns) in self.namespaces.iter().enumerate() {
            if !is_dns_label(ns) {
                errors.push(
                    format!("argocd.namespaces[{i}]"),
                    format!("`{ns}` is not a namespace name"),
                );
            }
        }
        if self.cluster_resources.is_some() && self.namespaces.is_empty() {
            errors.push(
                "argocd.clusterResources",
                "only has a meaning together with `namespaces`",
            );
        }
        if let Some(role) = &self.role_arn {
            if !crate::arn::is_iam_role_arn(role) {
                errors.push(
                    "argocd.roleArn",
                    format!("`{role}` is not an IAM role ARN such as arn:aws:iam::123456789012:role/argocd-deployer"),
                );
            }
        }
        let capability = self.mode() == ArgoCdMode::EksCapability;
        match (&self.capability_role_arn, capability) {
            (None, true) => errors.push(
                "argocd.capabilityRoleArn",
                "is required with mode eks-capability: the role the capability reaches clusters as",
            ),
            (Some(_), false) => errors.push(
                "argocd.capabilityRoleArn",
                "only has a meaning with mode eks-capability",
            ),
            (Some(role), true) if !crate::arn::is_iam_role_arn(role) => errors.push(
                "argocd.capabilityRoleArn",
                format!("`{role}` is not an IAM role ARN"),
            ),
            _ => {}
        }
        if capability && self.role_arn.is_some() {
            errors.push(
                "argocd.roleArn",
                "has no meaning with mode eks-capability (its Secret has no config)",
            );
        }
        if self.create_access_entry == Some(true) && (capability || self.role_arn.is_none()) {
            errors.push(
                "argocd.createAccessEntry",
                "needs mode self-managed and a roleArn to give the access entry to",
            );
        }
        if let Some(policy) = &self.access_policy_arn {
            let valid = policy.starts_with("arn:aws")
                && policy.contains(":eks::aws:cluster-access-policy/")
                && !policy.ends_with('/');
            if !valid {
                errors.push(
                    "argocd.accessPolicyArn",
                    format!("`{policy}` is not an EKS access policy ARN such as {DEFAULT_ACCESS_POLICY}"),
                );
            } else if self.access_entry_principal().is_none() {
                errors.push(
                    "argocd.accessPolicyArn",
                    "only has a meaning when registration creates an access entry",
                );
            }
        }
        if let Some(n) = self.min_apps.filter(|n| !(0..=1000).contains(n)) {
            errors.push("argocd.minApps", format!("must be from 0 to 1000, got {n}"));
        }
        if let Some(n) = self.stable_checks.filter(|n| !(1..=10).contains(n)) {
            errors.push(
                "argocd.stableChecks",
                format!("must be from 1 to 10, got {n}"),
            );
        }
        if let Some(t) = self
            .apps_timeout_seconds
            .filter(|t| !(60..=MAX_APPS_TIMEOUT_SECONDS).contains(t))
        {
            errors.push(
                "argocd.appsTimeoutSeconds",
                format!("must be from 60 to {MAX_APPS_TIMEOUT_SECONDS} seconds, got {t}"),
            );
        }
    }
}

/// Annotation on the Secret holding the ARN of the cluster it registers: ownership and
/// deregistration compare it, so same-named clusters in two regions or accounts never touch
/// each other's Secret.
pub const CLUSTER_ARN_ANNOTATION: &str = "cluster-canary/cluster-arn";

/// The Secret's name for a cluster: `cluster-canary-`, the cluster name made DNS-1123 (lower
/// case, `_` as `-`, no trailing `-`), then `-` and 10 hex digits of the SHA-256 of the
/// cluster ARN. Valid for every EKS name (1–100 letters, digits, `-`, `_`, ending in any of
/// them), at most 126 characters, and different for clusters of the same name in another
/// region or account.
pub fn secret_name(cluster_arn: &str, cluster_name: &str) -> String {
    let readable = cluster_name.to_ascii_lowercase().replace('_', "-");
    let digest = Sha256::digest(cluster_arn.as_bytes());
    let hex: String = digest.iter().take(5).map(|b| format!("{b:02x}")).collect();
    format!("cluster-canary-{}-{hex}", readable.trim_end_matches('-'))
}

/// A Kubernetes object name that is a DNS-1123 subdomain, as the API server requires of a
/// Secret's name: at most 253 characters, dot-separated parts of lower-case letters, digits
/// and `-`, each starting and ending with a letter or digit.
pub fn is_dns_subdomain(s: &str) -> bool {
    s.len() <= 253
        && s.split('.').all(|part| {
            !part.is_empty()
                && part
                    .bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
                && !part.starts_with('-')
                && !part.ends_with('-')
        })
}

fn is_dns_label(s: &str) -> bool {
    (1..=63).contains(&s.len())
        && s.bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && !s.starts_with('-')
        && !s.ends_with('-')
}

fn is_label_name(s: &str) -> bool {
    (1..=63).contains(&s.len())
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_' || b == b'.')
        && s.starts_with(|c: char| c.is_ascii_alphanumeric())
        && s.ends_with(|c: char| c.is_ascii_alphanumeric())
}

pub(crate) fn is_label_key(key: &str) -> bool {
    match key.split_once('/') {
        Some((prefix, name)) => {
            prefix.len() <= 253
                && !prefix.is_empty()
                && prefix.split('.').all(is_dns_label)
                && is_label_name(name)
        }
        None => is_label_name(key),
    }
}

fn is_label_value(value: &str) -> bool {
    value.is_empty() || is_label_name(value)
}

#[cfg(test)]
mod tests {
    use super::*;

    const GREEN_US: &str = "arn:aws:eks:us-east-1:123456789012:cluster/Web_Green-";
    const GREEN_EU: &str = "arn:aws:eks:eu-west-1:123456789012:cluster/Web_Green-";

    #[test]
    fn secret_names_are_kubernetes_names_unique_per_arn() {
        let us = secret_name(GREEN_US, "Web_Green-");
        assert!(us.starts_with("cluster-canary-web-green-"), "{us}");
        assert_eq!(us.len(), "cluster-canary-web-green-".len() + 10);
        assert!(is_dns_subdomain(&us), "{us}");
        assert_ne!(us, secret_name(GREEN_EU, "Web_Green-"));
        assert_eq!(us, secret_name(GREEN_US, "Web_Green-"), "stable");
    }

    proptest::proptest! {
        #[test]
        fn every_eks_name_maps_to_a_valid_secret_name(
            name in "[A-Za-z0-9][A-Za-z0-9_-]{0,99}",
            region in "(us-east-1|eu-west-1|ap-northeast-1)",
            account in "[0-9]{12}",
        ) {
            let arn = format!("arn:aws:eks:{region}:{account}:cluster/{name}");
            let secret = secret_name(&arn, &name);
            proptest::prop_assert!(is_dns_subdomain(&secret), "{}", secret);
            proptest::prop_assert!(secret.len() <= 126);
            let elsewhere = format!("arn:aws:eks:{region}:{account}:cluster/{name}x");
            proptest::prop_assert_ne!(secret, secret_name(&elsewhere, &name));
        }
    }

    #[test]
    fn dns_subdomain_syntax() {
        for ok in ["a", "cluster-canary-web-1a2b", "a.b-c", &"a".repeat(253)] {
            assert!(is_dns_subdomain(ok), "{ok}");
        }
        for bad in ["", "A", "a_b", "a-", "-a", "a..b", &"a".repeat(254)] {
            assert!(!is_dns_subdomain(bad), "{bad}");
        }
    }

    #[test]
    fn label_syntax() {
        for ok in ["env", "example.com/tier", "a.b-c_d"] {
            assert!(is_label_key(ok), "{ok}");
        }
        for bad in ["", "-env", "Example.com/tier", "a/b/c", "x/"] {
            assert!(!is_label_key(bad), "{bad}");
        }
        assert!(is_label_value(""));
        assert!(!is_label_value("has space"));
    }
}
