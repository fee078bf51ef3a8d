//! Who else writes a traffic target's weights. A controller that reconciles a listener or rule
//! (the AWS Load Balancer Controller, ACK's ELBv2 controller) or a weighted record (ExternalDNS)
//! puts its own weights back on its next reconcile, undoing a step — or a rollback — with
//! nothing watching. They mark what they own — tags on listeners and rules, TXT registry records
//! beside records — and these are the marks, read before anything moves.

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

/// A plan's word on who owns a target: go ahead anyway (for a reason people can read), and, for
/// Route 53, where ExternalDNS keeps its TXT registry records if not at its default names.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct OwnerCheck {
    /// Shift the weights even though a controller owns the target, because of this (e.g. "the
    /// Ingress group was deleted; the controller no longer reconciles this ALB"). Shown in the
    /// Prepare notes and `cluster-canary plan check`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ignore: Option<String>,
    /// Route 53: ExternalDNS's `--txt-prefix`, when it runs with one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub txt_prefix: Option<String>,
    /// Route 53: ExternalDNS's `--txt-suffix`, when it runs with one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub txt_suffix: Option<String>,
}

impl OwnerCheck {
    pub(crate) fn validate(&self, path: &str, route53: bool, errors: &mut Errors) {
        if let Some(reason) = &self.ignore {
            if reason.trim().is_empty() || reason.len() > 500 {
                errors.push(
                    format!("{path}.owner.ignore"),
                    "give the reason the controller will not put its weights back (1 to 500 characters)",
                );
            }
        }
        match route53 {
            true if self.txt_prefix.is_some() && self.txt_suffix.is_some() => errors.push(
                format!("{path}.owner"),
                "ExternalDNS takes --txt-prefix or --txt-suffix, not both",
            ),
            false if self.txt_prefix.is_some() || self.txt_suffix.is_some() => errors.push(
                format!("{path}.owner"),
                "txtPrefix and txtSuffix are ExternalDNS's, for route53 targets",
            ),
            false if self.ignore.is_none() => errors.push(
                format!("{path}.owner.ignore"),
                "give the reason to shift this target although a controller owns it",
            ),
            _ => {}
        }
        for (field, affix) in [
            ("txtPrefix", &self.txt_prefix),
            ("txtSuffix", &self.txt_suffix),
        ] {
            if affix.as_ref().is_some_and(|a| a.is_empty() || a.len() > 63) {
                errors.push(
                    format!("{path}.owner.{field}"),
                    "must be 1 to 63 characters",
                );
            }
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

/// What a controller's `tags` say of its owner: each of `keys` it has, as `<what> <value>`
/// (`cluster blue, stack shop/web`), or the first three tag names when it has none of them.
fn owner_of(tags: &BTreeMap<String, String>, keys: &[(&str, &str)]) -> String {
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
}

/// The controller that manages a listener or rule with these tags, if any.
pub fn alb_controller(tags: &BTreeMap<String, String>) -> Option<ControllerOwner> {
    let has = |prefix: &str| tags.keys().any(|k| k.starts_with(prefix));
    let describe = |keys: &[(&str, &str)]| owner_of(tags, keys);
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

/// What the AWS Gateway API Controller (aws-application-networking-k8s) tags the VPC Lattice
/// services, listeners and rules of an HTTPRoute with; `ManagedBy` is
/// `<account>/<cluster>/<vpc>`.
const GATEWAY_API_CONTROLLER_PREFIX: &str = "application-networking.k8s.aws/";

/// The controller that manages a VPC Lattice service, listener or rule with these tags, if any:
/// the AWS Gateway API Controller puts an HTTPRoute's `backendRefs` weights back, ACK its
/// resource's.
pub fn lattice_controller(tags: &BTreeMap<String, String>) -> Option<ControllerOwner> {
    let has = |prefix: &str| tags.keys().any(|k| k.starts_with(prefix));
    if has(GATEWAY_API_CONTROLLER_PREFIX) {
        return Some(ControllerOwner {
            controller: "the AWS Gateway API Controller",
            owner: owner_of(
                tags,
                &[
                    ("application-networking.k8s.aws/ManagedBy", "managed by"),
                    (
                        "application-networking.k8s.aws/RouteNamespace",
                        "route namespace",
                    ),
                    ("application-networking.k8s.aws/RouteName", "route"),
                ],
            ),
        });
    }
    if has(ACK_PREFIX) {
        return Some(ControllerOwner {
            controller: "ACK's VPC Lattice controller",
            owner: owner_of(tags, &[("services.k8s.aws/namespace", "namespace")]),
        });
    }
    None
}

/// The names ExternalDNS's TXT registry may give the ownership record of the record `fqdn` of
/// type `record_type` (`registry/mapper`): the type on the first label (`a-app.example.com.`;
/// an A alias record's may still be the older `cname-`), and the legacy name without the type;
/// a prefix before the first label, a suffix after it, `%{record_type}` in either standing for
/// the type.
pub fn external_dns_txt_names(
    fqdn: &str,
    record_type: &str,
    prefix: Option<&str>,
    suffix: Option<&str>,
) -> Vec<String> {
    let fqdn = fqdn.trim_end_matches('.').to_ascii_lowercase();
    let (first, rest) = match fqdn.split_once('.') {
        Some((first, rest)) => (first, Some(rest)),
        None => (fqdn.as_str(), None),
    };
    let name = |kind: Option<&str>| {
        let affix = |a: Option<&str>| {
            let a = a.unwrap_or_default();
            a.replace("%{record_type}", kind.unwrap_or_default())
        };
        let in_affix = [prefix, suffix]
            .iter()
            .flatten()
            .any(|a| a.contains("%{record_type}"));
        let label = match (kind, in_affix) {
            (Some(kind), false) => format!("{kind}-{first}"),
            _ => first.to_owned(),
        };
        let head = format!("{}{label}{}", affix(prefix), affix(suffix));
        match rest {
            Some(rest) => format!("{head}.{rest}."),
            None => format!("{head}."),
        }
    };
    let kind = record_type.to_ascii_lowercase();
    let mut names = vec![name(Some(&kind))];
    if kind == "a" {
        names.push(name(Some("cname")));
    }
    names.push(name(None));
    names.dedup();
    names
}

/// A TXT record set of a zone, as a zone-wide listing gives it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NamedTxt {
    /// As Route 53 lists it: lower case, with the trailing dot.
    pub name: String,
    pub set_identifier: Option<String>,
    pub values: Vec<String>,
}

/// What `plan check` says of the ExternalDNS registry records it cannot use for the record
/// `fqdn` with set identifiers `sets`, where it looked at `looked_at` (the names of
/// [`external_dns_txt_names`]):
/// - with no `txtPrefix`/`txtSuffix` in the plan (`affixed` false), registry records of those
///   sets at other names that carry the record's first label: ExternalDNS may run with an
///   affix the plan does not give, so its claim was not seen;
/// - registry-shaped values at the names looked at (a TXT record of those sets there) that do
///   not read as a registry value: ExternalDNS's encrypted registry (`--txt-encrypt-enabled`),
///   whose owner cannot be seen.
pub fn registry_warnings(
    fqdn: &str,
    sets: &[&str],
    looked_at: &[String],
    affixed: bool,
    zone: &[NamedTxt],
) -> Vec<String> {
    let first = fqdn
        .trim_end_matches('.')
        .split('.')
        .next()
        .unwrap_or_default()
        .to_ascii_lowercase();
    let ours = |txt: &NamedTxt| {
        txt.set_identifier
            .as_deref()
            .is_none_or(|id| sets.contains(&id))
    };
    let registry = |txt: &NamedTxt| txt.values.iter().any(|v| external_dns_owner(v).is_some());
    let mut elsewhere = Vec::new();
    let mut unreadable = Vec::new();
    for txt in zone.iter().filter(|t| ours(t)) {
        let here = looked_at.iter().any(|n| n.eq_ignore_ascii_case(&txt.name));
        // ExternalDNS's registry record of a weighted record carries its set identifier: a
        // TXT record without one there (a domain verification, SPF) is someone else's.
        if here && !registry(txt) && txt.set_identifier.is_some() {
            unreadable.push(txt.name.clone());
        } else if !here && !affixed && registry(txt) && txt.name.contains(first.as_str()) {
            elsewhere.push(match &txt.set_identifier {
                Some(id) => format!("{} (set {id})", txt.name),
                None => txt.name.clone(),
            });
        }
    }
    let mut warnings = Vec::new();
    if !elsewhere.is_empty() {
        warnings.push(format!(
            "ExternalDNS registry records of this record's sets are at {}, where this plan does \
             not look: if ExternalDNS runs with --txt-prefix or --txt-suffix, give it as \
             owner.txtPrefix/txtSuffix, or its claim on the record is not seen",
            elsewhere.join(", ")
        ));
    }
    if !unreadable.is_empty() {
        unreadable.dedup();
        warnings.push(format!(
            "TXT records at {} cannot be read as ExternalDNS registry records (ExternalDNS's \
             --txt-encrypt-enabled?): whether ExternalDNS owns the record cannot be seen",
            unreadable.join(", ")
        ));
    }
    warnings
}

/// What an ExternalDNS TXT registry value says (`"heritage=external-dns,external-dns/owner=…,
/// external-dns/resource=…"`), if it is one.
pub fn external_dns_owner(value: &str) -> Option<ControllerOwner> {
    let value = value.trim().trim_matches('"');
    let fields: BTreeMap<&str, &str> = value
        .split(',')
        .filter_map(|pair| pair.split_once('='))
        .collect();
    if fields.get("heritage") != Some(&"external-dns") {
        return None;
    }
    let said: Vec<String> = [
        ("external-dns/owner", "owner"),
        ("external-dns/resource", "resource"),
    ]
    .iter()
    .filter_map(|(key, what)| fields.get(key).map(|v| format!("{what} {v}")))
    .collect();
    Some(ControllerOwner {
        controller: "ExternalDNS",
        owner: match said.is_empty() {
            true => "a TXT registry record".to_owned(),
            false => said.join(", "),
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn registry_records_plan_check_cannot_use_are_said() {
        let looked_at = external_dns_txt_names("app.example.com.", "A", None, None);
        let txt = |name: &str, set: Option<&str>, value: &str| NamedTxt {
            name: name.to_owned(),
            set_identifier: set.map(str::to_owned),
            values: vec![value.to_owned()],
        };
        let registry = "\"heritage=external-dns,external-dns/owner=blue-cluster\"";
        let zone = [
            txt("edns-cname-app.example.com.", Some("blue"), registry),
            txt("edns-cname-app.example.com.", Some("purple"), registry),
            txt(
                "cname-app.example.com.",
                Some("green"),
                "\"h8XlwQ1ZtqKqm3H2Vb5sYw==\"",
            ),
            txt("cname-other.example.com.", Some("blue"), registry),
            txt("a-app.example.com.", Some("blue"), registry),
        ];
        let warnings = registry_warnings(
            "app.example.com.",
            &["blue", "green"],
            &looked_at,
            false,
            &zone,
        );
        assert_eq!(warnings.len(), 2, "{warnings:?}");
        assert!(
            warnings[0].starts_with(
                "ExternalDNS registry records of this record's sets are at edns-cname-app.example.com. (set blue), where this plan does not look"
            ),
            "{warnings:?}"
        );
        assert!(
            warnings[1].starts_with(
                "TXT records at cname-app.example.com. cannot be read as ExternalDNS registry records"
            ),
            "{warnings:?}"
        );
        let affixed = registry_warnings(
            "app.example.com.",
            &["blue", "green"],
            &looked_at,
            true,
            &zone,
        );
        assert_eq!(affixed.len(), 1, "an affix given: only the unreadable one");
        let verification = [txt(
            "cname-app.example.com.",
            None,
            "\"google-site-verification=abc\"",
        )];
        assert!(
            registry_warnings(
                "app.example.com.",
                &["blue", "green"],
                &looked_at,
                true,
                &verification
            )
            .is_empty(),
            "a TXT record with no set identifier is not a registry record"
        );
        assert!(registry_warnings(
            "app.example.com.",
            &["blue", "green"],
            &looked_at,
            false,
            &zone[3..]
        )
        .is_empty());
    }

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
        let paths = |check: OwnerCheck, route53: bool| {
            let mut errors = Errors::default();
            check.validate("t", route53, &mut errors);
            errors
                .paths()
                .iter()
                .map(|p| p.to_string())
                .collect::<Vec<_>>()
        };
        let ignore = |r: &str| OwnerCheck {
            ignore: Some(r.into()),
            ..OwnerCheck::default()
        };
        assert_eq!(paths(ignore(" "), false), ["t.owner.ignore"]);
        assert!(paths(ignore("the Ingress is gone"), false).is_empty());
        assert_eq!(paths(OwnerCheck::default(), false), ["t.owner.ignore"]);
        let prefix = OwnerCheck {
            txt_prefix: Some("p-".into()),
            ..OwnerCheck::default()
        };
        assert!(paths(prefix.clone(), true).is_empty());
        assert_eq!(paths(prefix.clone(), false), ["t.owner"]);
        let both = OwnerCheck {
            txt_suffix: Some("-s".into()),
            ..prefix
        };
        assert_eq!(paths(both, true), ["t.owner"]);
    }

    #[test]
    fn external_dns_registry_names_and_values() {
        assert_eq!(
            external_dns_txt_names("App.Example.com.", "A", None, None),
            [
                "a-app.example.com.",
                "cname-app.example.com.",
                "app.example.com."
            ]
        );
        assert_eq!(
            external_dns_txt_names("www.example.com", "CNAME", Some("p-"), None),
            ["p-cname-www.example.com.", "p-www.example.com."]
        );
        assert_eq!(
            external_dns_txt_names("www.ex.com", "CNAME", None, Some("-.%{record_type}")),
            ["www-.cname.ex.com.", "www-..ex.com."]
        );
        assert_eq!(
            external_dns_txt_names("ex.com", "CNAME", Some("%{record_type}-abc-."), None),
            ["cname-abc-.ex.com.", "-abc-.ex.com."]
        );
        let owner = external_dns_owner(
            "\"heritage=external-dns,external-dns/owner=green-cluster,external-dns/resource=ingress/shop/web\"",
        )
        .unwrap();
        assert_eq!(owner.controller, "ExternalDNS");
        assert_eq!(
            owner.owner,
            "owner green-cluster, resource ingress/shop/web"
        );
        assert_eq!(
            external_dns_owner("\"v=spf1 include:_spf.example.com ~all\""),
            None
        );
    }
}
