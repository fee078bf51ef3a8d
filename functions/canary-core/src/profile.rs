//! Building a rollout plan for a new cluster from a named profile and the cluster's tags.
//!
//! A profile is a plan without `cluster` (deployment configuration, the same for every
//! cluster of a fleet). The cluster's own tags say what only it knows: its target group or
//! Route 53 set identifier, the stable side it replaces, extra Argo CD labels.

use std::collections::BTreeMap;

use serde_json::{Map, Value};

use crate::plan::{RolloutPlan, ValidPlan};
use crate::targets::CLUSTER_TAGS;
use crate::validate::{PlanError, PlanErrors};

/// Opt-in: the name of the profile to roll the cluster out with.
pub const PROFILE_TAG: &str = "cluster-canary/profile";
/// `cluster-canary/argocd-label/<label key>` = value adds a label to the Argo CD cluster Secret.
pub const ARGOCD_LABEL_TAG_PREFIX: &str = "cluster-canary/argocd-label/";

fn error(path: &str, message: impl Into<String>) -> PlanErrors {
    PlanErrors(vec![PlanError {
        path: path.to_owned(),
        message: message.into(),
    }])
}

/// A profile-only field: the role, by name, that cluster-canary assumes in the account of a
/// cluster created in another account (`cluster.roleArn` of the plan).
pub const CLUSTER_ROLE_NAME_KEY: &str = "clusterRoleName";

/// Where a cluster was created, as its event says.
pub struct Origin<'a> {
    pub cluster: &'a str,
    pub region: &'a str,
    /// `arn:<partition>:eks:<region>:<account>:cluster/<name>`.
    pub cluster_arn: &'a str,
    /// The account cluster-canary runs in.
    pub own_account: &'a str,
}

/// The plan for the cluster of `origin`, from `profile` and the cluster's `tags`, validated
/// exactly like a plan given by hand. A cluster in another account gets `cluster.roleArn`: the
/// profile's `clusterRoleName` in that account.
pub fn plan_from_profile(
    profile: &Value,
    origin: &Origin<'_>,
    tags: &BTreeMap<String, String>,
) -> Result<ValidPlan, PlanErrors> {
    let Some(template) = profile.as_object() else {
        return Err(error(
            "profile",
            "must be a JSON object (a plan without `cluster`)",
        ));
    };
    if template.contains_key("cluster") {
        return Err(error(
            "profile.cluster",
            "is taken from the event; a profile may not set it",
        ));
    }
    let mut plan: Map<String, Value> = template.clone();
    let role_name = plan.remove(CLUSTER_ROLE_NAME_KEY);
    let mut cluster = serde_json::json!({"name": origin.cluster, "region": origin.region});
    let account = crate::arn::account_of(origin.cluster_arn).unwrap_or(origin.own_account);
    if account != origin.own_account {
        let Some(role_name) = role_name.as_ref().and_then(Value::as_str) else {
            return Err(error(
                &format!("profile.{CLUSTER_ROLE_NAME_KEY}"),
                format!(
                    "the cluster is in account {account}, not {}: name the role to assume there \
                     (and let that account forward its EKS events here: infra/cluster-account.yaml)",
                    origin.own_account
                ),
            ));
        };
        let partition = origin.cluster_arn.split(':').nth(1).unwrap_or("aws");
        cluster["roleArn"] =
            Value::String(format!("arn:{partition}:iam::{account}:role/{role_name}"));
    }
    plan.insert("cluster".to_owned(), cluster);

    // Every field neither the profile nor a tag supplies, all at once, each with the tag that
    // would (a plain parse would stop at the first missing field).
    let mut missing = Vec::new();
    if let Some(targets) = plan.get_mut("trafficTargets").and_then(Value::as_array_mut) {
        for (i, target) in targets.iter_mut().enumerate() {
            for (tag, kind, field) in CLUSTER_TAGS {
                let Some(fields) = target.get_mut(kind).and_then(Value::as_object_mut) else {
                    continue;
                };
                match tags.get(tag) {
                    Some(value) => {
                        fields.insert(field.to_owned(), Value::String(value.clone()));
                    }
                    None if !fields.contains_key(field) => missing.push(PlanError {
                        path: format!("trafficTargets[{i}].{kind}.{field}"),
                        message: format!(
                            "missing: set it in the profile, or tag the cluster with `{tag}`"
                        ),
                    }),
                    None => {}
                }
            }
        }
    }
    if !missing.is_empty() {
        return Err(PlanErrors(missing));
    }

    let labels: Map<String, Value> = tags
        .iter()
        .filter_map(|(k, v)| {
            Some((
                k.strip_prefix(ARGOCD_LABEL_TAG_PREFIX)?.to_owned(),
                Value::String(v.clone()),
            ))
        })
        .collect();
    if !labels.is_empty() {
        let argocd = plan
            .entry("argocd")
            .or_insert_with(|| Value::Object(Map::new()));
        let Some(argocd) = argocd.as_object_mut() else {
            return Err(error("argocd", "must be an object"));
        };
        let existing = argocd
            .entry("labels")
            .or_insert_with(|| Value::Object(Map::new()));
        let Some(existing) = existing.as_object_mut() else {
            return Err(error("argocd.labels", "must be an object"));
        };
        existing.extend(labels);
    }
    RolloutPlan::parse(Value::Object(plan))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::TrafficTarget;
    use serde_json::json;

    const LISTENER: &str =
        "arn:aws:elasticloadbalancing:us-east-1:123456789012:listener/app/web/50dc6c495c0c9188/f2f7dc8efc522ab2";
    const BLUE: &str =
        "arn:aws:elasticloadbalancing:us-east-1:123456789012:targetgroup/blue/73e2d6bc24d8a067";
    const GREEN: &str =
        "arn:aws:elasticloadbalancing:us-east-1:123456789012:targetgroup/green/4b7c9a1e2f3d5a68";

    fn profile() -> Value {
        json!({
            "trafficTargets": [
                {"alb": {"listenerArn": LISTENER, "stableTargetGroupArn": BLUE}},
                {"route53": {"hostedZoneId": "Z1", "recordName": "app.example.com", "recordType": "A",
                             "stableSetIdentifier": "blue"}}
            ],
            "steps": [{"weight": 50}, {"weight": 100}],
            "bake": {"seconds": 60, "checkIntervalSeconds": 10},
            "argocd": {"labels": {"fleet": "web"}}
        })
    }

    const HERE: Origin<'static> = Origin {
        cluster: "green",
        region: "us-east-1",
        cluster_arn: "arn:aws:eks:us-east-1:123456789012:cluster/green",
        own_account: "123456789012",
    };

    fn tags(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect()
    }

    #[test]
    fn tags_fill_the_cluster_specific_fields() {
        let valid = plan_from_profile(
            &profile(),
            &HERE,
            &tags(&[
                (PROFILE_TAG, "web"),
                ("cluster-canary/canary-target-group", GREEN),
                ("cluster-canary/canary-set-identifier", "green"),
                ("cluster-canary/argocd-label/env", "prod"),
            ]),
        )
        .expect("valid plan");
        let plan = valid.plan;
        assert_eq!(
            (plan.cluster.name.as_str(), plan.cluster.region.as_str()),
            ("green", "us-east-1")
        );
        let TrafficTarget::Alb(alb) = &plan.traffic_targets[0] else {
            panic!()
        };
        assert_eq!(alb.canary_target_group_arn, GREEN);
        let TrafficTarget::Route53(r53) = &plan.traffic_targets[1] else {
            panic!()
        };
        assert_eq!(r53.canary_set_identifier, "green");
        let labels = &plan.argocd.expect("argocd").labels;
        assert_eq!(labels.get("fleet").map(String::as_str), Some("web"));
        assert_eq!(labels.get("env").map(String::as_str), Some("prod"));
    }

    #[test]
    fn missing_tags_make_an_invalid_plan_with_paths() {
        let errors =
            plan_from_profile(&profile(), &HERE, &tags(&[(PROFILE_TAG, "web")])).unwrap_err();
        assert_eq!(
            errors.to_string(),
            "invalid rollout plan: trafficTargets[0].alb.canaryTargetGroupArn: missing: set it in the profile, \
             or tag the cluster with `cluster-canary/canary-target-group`; \
             trafficTargets[1].route53.canarySetIdentifier: missing: set it in the profile, \
             or tag the cluster with `cluster-canary/canary-set-identifier`"
        );
    }

    #[test]
    fn a_profile_may_not_set_the_cluster() {
        let mut p = profile();
        p["cluster"] = json!({"name": "x", "region": "us-east-1"});
        let errors = plan_from_profile(&p, &HERE, &BTreeMap::new()).unwrap_err();
        assert_eq!(errors.0[0].path, "profile.cluster");
        let errors = plan_from_profile(&json!([]), &HERE, &BTreeMap::new()).unwrap_err();
        assert_eq!(errors.0[0].path, "profile");
    }

    #[test]
    fn a_cluster_in_another_account_gets_the_profile_s_role_there() {
        let elsewhere = Origin {
            cluster_arn: "arn:aws:eks:us-east-1:111122223333:cluster/green",
            ..HERE
        };
        let mut with_role = profile();
        with_role[CLUSTER_ROLE_NAME_KEY] = json!("cluster-canary-access");
        let cluster_tags = tags(&[
            ("cluster-canary/canary-target-group", GREEN),
            ("cluster-canary/canary-set-identifier", "green"),
        ]);
        let plan = plan_from_profile(&with_role, &elsewhere, &cluster_tags)
            .expect("valid")
            .plan;
        assert_eq!(
            plan.cluster.role_arn.as_deref(),
            Some("arn:aws:iam::111122223333:role/cluster-canary-access")
        );
        let here = plan_from_profile(&with_role, &HERE, &cluster_tags)
            .expect("valid")
            .plan;
        assert_eq!(here.cluster.role_arn, None, "no role to assume at home");

        let errors = plan_from_profile(&profile(), &elsewhere, &cluster_tags).unwrap_err();
        assert_eq!(errors.0[0].path, "profile.clusterRoleName");
        assert!(
            errors.0[0].message.contains("account 111122223333"),
            "{errors}"
        );
    }
}
