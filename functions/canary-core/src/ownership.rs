//! Who else writes a traffic target's weights. A controller that reconciles a listener or rule
//! (the AWS Load Balancer Controller, ACK's ELBv2 controller) puts its own weights back on its
//! next reconcile, undoing a step — or a rollback — with nothing watching. They tag what they
//! create; these are the tags, read before anything moves.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::validate::Errors;

/// What the AWS Load Balancer Controller tags its listeners and rules with (Ingress, Service and
/// Gateway API resources).
const LOAD_BALANCER_CONTROLLER_PREFIXES: [&str; 4] = [
    "elbv2.k8s.aws/",
    "ingress.k8s.aws/",
    "service.k8s.aws/",
    "gateway.k8s.aws.alb/",
];
/// What ACK's controllers tag the resources they manage with.
const ACK_PREFIX: &str = "services.k8s.aws/";

/// A plan's word on a target a controller owns: go ahead anyway, for a reason people can read.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct OwnerCheck {
    /// Shift the weights even though a controller's tags are on the target, because of this
    /// (e.g. "the Ingress group was deleted; the controller no longer reconciles this ALB").
    /// Shown in the Prepare notes and `cluster-canary plan check`.
    pub ignore: String,
}

impl OwnerCheck {
    pub(crate) fn validate(&self, path: &str, errors: &mut Errors) {
        let reason = self.ignore.trim();
        if reason.is_empty() || self.ignore.len() > 500 {
            errors.push(
                format!("{path}.owner.ignore"),
                "give the reason the controller will not put its weights back (1 to 500 characters)",
            );
        }
    }
}

/// The controller whose tags are on a resource, and what the tags say of its owner.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ControllerOwner {
    pub controller: &'static str,
    /// e.g. "cluster blue, stack shop/web, resource 443".
    pub owner: String,
}

/// The controller that manages a listener or rule with these tags, if any.
pub fn alb_controller(tags: &BTreeMap<String, String>) -> Option<ControllerOwner> {
    let has = |prefix: &str| tags.keys().any(|k| k.starts_with(prefix));
    let describe = |keys: &[(&str, &str)]| {
        let said: Vec<String> = keys
            .iter()
            .filter_map(|(key, what)| tags.get(*key).map(|v| format!("{what} {v}")))
            .collect();
        match said.is_empty() {
            true => {
                let names: Vec<&str> = tags.keys().map(String::as_str).take(3).collect();
                format!("tags {}", names.join(", "))
            }
            false => said.join(", "),
        }
    };
    if LOAD_BALANCER_CONTROLLER_PREFIXES.iter().any(|p| has(p)) {
        return Some(ControllerOwner {
            controller: "the AWS Load Balancer Controller",
            owner: describe(&[
                ("elbv2.k8s.aws/cluster", "cluster"),
                ("ingress.k8s.aws/stack", "stack"),
                ("service.k8s.aws/stack", "stack"),
                ("ingress.k8s.aws/resource", "resource"),
                ("service.k8s.aws/resource", "resource"),
            ]),
        });
    }
    if has(ACK_PREFIX) {
        return Some(ControllerOwner {
            controller: "ACK's ELBv2 controller",
            owner: describe(&[
                ("services.k8s.aws/namespace", "namespace"),
                ("services.k8s.aws/controller-version", "controller"),
            ]),
        });
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tags(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect()
    }

    #[test]
    fn the_controllers_are_known_by_their_tags() {
        let lbc = alb_controller(&tags(&[
            ("elbv2.k8s.aws/cluster", "blue"),
            ("ingress.k8s.aws/stack", "shop/web"),
            ("ingress.k8s.aws/resource", "443:1"),
        ]))
        .unwrap();
        assert_eq!(lbc.controller, "the AWS Load Balancer Controller");
        assert_eq!(lbc.owner, "cluster blue, stack shop/web, resource 443:1");
        let gateway = alb_controller(&tags(&[("gateway.k8s.aws.alb/stack", "x")])).unwrap();
        assert_eq!(gateway.owner, "tags gateway.k8s.aws.alb/stack");
        let ack = alb_controller(&tags(&[("services.k8s.aws/namespace", "infra")])).unwrap();
        assert_eq!(ack.controller, "ACK's ELBv2 controller");
        assert_eq!(ack.owner, "namespace infra");
        assert_eq!(
            alb_controller(&tags(&[("team", "shop"), ("env", "prod")])),
            None
        );
    }

    #[test]
    fn ignoring_the_owner_takes_a_reason() {
        let mut errors = Errors::default();
        OwnerCheck { ignore: " ".into() }.validate("trafficTargets[0].alb", &mut errors);
        assert_eq!(errors.paths(), ["trafficTargets[0].alb.owner.ignore"]);
    }
}
