//! `plan apex-records`: the Route 53 shape where cluster-canary owns the weights beside
//! ExternalDNS (docs/traffic/route53.md, "Who owns the weights"). The service's name (the
//! plan's `recordName`, the "apex") gets two weighted alias records cluster-canary owns, the
//! stable's and the canary's set identifier, each an alias of a per-cluster name that cluster's
//! ExternalDNS manages (`blue.app.example.com`, `green.app.example.com`). ExternalDNS never
//! touches the apex records (no TXT registry record of its is beside them), so nothing puts
//! the weights back.
//!
//! What exists is kept (a record of the set identifier already aliasing the named name); a new
//! stable record starts at weight 100 and a new canary record at 0, the baseline a rollout
//! starts from. Refused, with nothing written: an apex ExternalDNS owns, a per-cluster name
//! not in the zone yet (Route 53 refuses an alias to a name that does not exist), a record of
//! the set identifier that aliases something else, a simple (unweighted) record at the apex,
//! weighted records of other set identifiers, and ExternalDNS registry records of any set.

use std::collections::BTreeMap;

use aws_config::SdkConfig;
use canary_aws::{NewWeightedRecord, Route53Api, SdkRoute53, WeightedRecord};
use canary_core::targets::route53_name;
use canary_core::{Route53Target, TrafficTarget};
use canary_rollout::traffic::{describe_claims, external_dns_claims_any_set};
use serde_json::json;

use crate::error::CliError;
use crate::plan_commands::validated;
use crate::printer::Printer;

/// A record at the apex: created, or already there.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ApexRecord {
    Create(NewWeightedRecord),
    Keep {
        set_identifier: String,
        points_to: String,
        weight: Option<u16>,
    },
}

/// `SET=NAME` pairs (`--point blue=blue.app.example.com`): set identifier -> the per-cluster
/// name, as Route 53 lists names (lower case, with the trailing dot).
pub fn parse_points(points: &[String]) -> Result<BTreeMap<String, String>, CliError> {
    let mut parsed = BTreeMap::new();
    for point in points {
        let (set, name) = point
            .split_once('=')
            .filter(|(set, name)| !set.is_empty() && !name.is_empty())
            .ok_or_else(|| {
                CliError::Invalid(format!(
                    "--point {point}: expected SET_IDENTIFIER=NAME, e.g. --point green=green.app.example.com"
                ))
            })?;
        if parsed.insert(set.to_owned(), route53_name(name)).is_some() {
            return Err(CliError::Invalid(format!(
                "--point names set identifier {set} twice"
            )));
        }
    }
    Ok(parsed)
}

/// What to do at one target's apex, from what the zone holds there (`existing`, the apex's
/// records of the target's type) and whether each per-cluster name exists (`present`).
/// Pure: every refusal says what to do.
pub fn decide(
    target: &Route53Target,
    points: &BTreeMap<String, String>,
    existing: &[WeightedRecord],
    present: impl Fn(&str) -> bool,
) -> Result<Vec<ApexRecord>, String> {
    let apex = target.fqdn();
    if !matches!(target.record_type.as_str(), "A" | "AAAA") {
        return Err(format!(
            "recordType {} cannot be an alias: apex records are weighted alias records (A or AAAA)",
            target.record_type.as_str()
        ));
    }
    if existing.iter().any(|r| r.set_identifier.is_none()) {
        return Err(format!(
            "{apex} has a simple {} record: weighted records cannot sit beside it; delete it (or \
             move it to a per-cluster name) first",
            target.record_type.as_str()
        ));
    }
    let ours = [&target.stable_set_identifier, &target.canary_set_identifier];
    let others: Vec<&str> = existing
        .iter()
        .filter_map(|r| r.set_identifier.as_ref())
        .filter(|id| !ours.contains(id))
        .map(String::as_str)
        .collect();
    if !others.is_empty() {
        return Err(format!(
            "{apex} already has weighted {} records of other set identifiers ({}): records for \
             {} and {} beside them would take a share of the traffic at once; move them to \
             per-cluster names first, or use the plan's set identifiers for them",
            target.record_type.as_str(),
            others.join(", "),
            target.stable_set_identifier,
            target.canary_set_identifier
        ));
    }
    let sides = [
        (&target.stable_set_identifier, 100),
        (&target.canary_set_identifier, 0),
    ];
    let mut records = Vec::new();
    for (set_identifier, initial_weight) in sides {
        let points_to = points.get(set_identifier).ok_or_else(|| {
            format!(
                "no --point for set identifier {set_identifier} (e.g. --point \
                 {set_identifier}={set_identifier}.{apex})"
            )
        })?;
        if *points_to == apex {
            return Err(format!(
                "--point {set_identifier}={points_to} is the apex itself: point at the name that \
                 cluster's ExternalDNS manages"
            ));
        }
        let found = existing
            .iter()
            .find(|r| r.set_identifier.as_deref() == Some(set_identifier.as_str()));
        match found {
            Some(record) => {
                let aliases = record.alias_target.as_deref().map(route53_name);
                if aliases.as_deref() != Some(points_to.as_str()) {
                    return Err(format!(
                        "{apex} record `{set_identifier}` exists and points at {}, not {points_to}: \
                         change it by hand, or --point at what it aliases",
                        aliases.as_deref().unwrap_or("records of its own (not an alias)")
                    ));
                }
                records.push(ApexRecord::Keep {
                    set_identifier: set_identifier.clone(),
                    points_to: points_to.clone(),
                    weight: record.weight,
                });
            }
            None if !present(points_to) => {
                return Err(format!(
                    "{points_to} has no {} record in zone {} yet: deploy the Ingress (or Service) \
                     with that hostname in the cluster of set `{set_identifier}` so its ExternalDNS \
                     creates it, then run this again",
                    target.record_type.as_str(),
                    target.hosted_zone_id
                ))
            }
            None => records.push(ApexRecord::Create(NewWeightedRecord {
                set_identifier: set_identifier.clone(),
                weight: initial_weight,
                points_to: points_to.clone(),
            })),
        }
    }
    Ok(records)
}

/// `plan apex-records`: for every Route 53 target of the plan, create (or, with `dry_run`,
/// show) its weighted alias records. True when every target has (or would have) its records.
pub async fn apex_records(
    config: &SdkConfig,
    file: &std::path::Path,
    points: &[String],
    dry_run: bool,
    printer: &mut Printer,
) -> Result<bool, CliError> {
    let (_, valid) = validated(file)?;
    let points = parse_points(points)?;
    let route53 = SdkRoute53::new(config, canary_aws::PollWait::ROUTE53_IN_SYNC);
    let targets: Vec<(usize, &Route53Target)> = valid
        .plan
        .traffic_targets
        .iter()
        .enumerate()
        .filter_map(|(i, t)| match t {
            TrafficTarget::Route53(r53) => Some((i, r53)),
            _ => None,
        })
        .collect();
    if targets.is_empty() {
        return Err(CliError::Invalid(format!(
            "{}: the plan has no route53 traffic target",
            file.display()
        )));
    }
    // Everything is decided before anything is written: one refusal writes nothing.
    let mut decided = Vec::new();
    for (i, target) in targets {
        let label = format!("trafficTargets[{i}] (route53:{})", target.fqdn());
        let records = plan_target(&route53, target, &points)
            .await
            .map_err(|why| CliError::Invalid(format!("{label}: {why}; nothing was written")))?;
        decided.push((label, target, records));
    }
    for (label, target, records) in &decided {
        let apex = target.fqdn();
        let kind = target.record_type.as_str();
        let mut create = Vec::new();
        for record in records {
            match record {
                ApexRecord::Create(new) => {
                    printer.say(
                        &format!(
                            "{label}: {} {apex} {kind} `{}` weight {} -> alias of {}",
                            if dry_run { "would create" } else { "creating" },
                            new.set_identifier,
                            new.weight,
                            new.points_to
                        ),
                        json!({"target": label, "action": "create", "setIdentifier": new.set_identifier,
                               "weight": new.weight, "aliasOf": new.points_to, "dryRun": dry_run}),
                    );
                    create.push(new.clone());
                }
                ApexRecord::Keep {
                    set_identifier,
                    points_to,
                    weight,
                } => printer.say(
                    &format!(
                        "{label}: keeping {apex} {kind} `{set_identifier}` (weight {}, alias of {points_to})",
                        weight.map_or("none".to_owned(), |w| w.to_string())
                    ),
                    json!({"target": label, "action": "keep", "setIdentifier": set_identifier,
                           "weight": weight, "aliasOf": points_to}),
                ),
            }
        }
        if !dry_run && !create.is_empty() {
            route53
                .create_weighted(&target.hosted_zone_id, &apex, kind, &create)
                .await?;
        }
    }
    if dry_run {
        printer.text("dry run: nothing was written");
    }
    Ok(true)
}

/// Reads what one target's decision needs: ExternalDNS's claim on the apex, the apex's
/// records, and whether each per-cluster name exists.
async fn plan_target(
    route53: &SdkRoute53,
    target: &Route53Target,
    points: &BTreeMap<String, String>,
) -> Result<Vec<ApexRecord>, String> {
    let claims = external_dns_claims_any_set(route53, target)
        .await
        .map_err(|e| e.to_string())?;
    if !claims.is_empty() {
        return Err(format!(
            "{}: the apex must be a name no ExternalDNS manages, under any set identifier \
             (docs/shapes/route53-apex.md)",
            describe_claims(&claims)
        ));
    }
    let kind = target.record_type.as_str();
    let zone = &target.hosted_zone_id;
    let existing = route53
        .named_records(zone, &target.fqdn(), kind)
        .await
        .map_err(|e| e.to_string())?;
    let mut present = BTreeMap::new();
    for name in points.values() {
        let records = route53
            .named_records(zone, name, kind)
            .await
            .map_err(|e| e.to_string())?;
        present.insert(name.clone(), !records.is_empty());
    }
    decide(target, points, &existing, |name| {
        present.get(name).copied().unwrap_or(false)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn target(record_type: &str) -> Route53Target {
        serde_json::from_value(json!({
            "hostedZoneId": "Z1", "recordName": "app.example.com", "recordType": record_type,
            "stableSetIdentifier": "blue", "canarySetIdentifier": "green",
        }))
        .expect("a target")
    }

    fn points() -> BTreeMap<String, String> {
        parse_points(&[
            "blue=Blue.App.example.com".to_owned(),
            "green=green.app.example.com.".to_owned(),
        ])
        .expect("points")
    }

    fn alias(set: &str, of: &str, weight: u16) -> WeightedRecord {
        WeightedRecord {
            set_identifier: Some(set.to_owned()),
            weight: Some(weight),
            ttl: None,
            alias_target: Some(of.to_owned()),
            health_check_id: None,
        }
    }

    #[test]
    fn missing_records_are_created_at_the_baseline_and_existing_ones_kept() {
        let existing = [alias("blue", "blue.app.example.com", 80)];
        let decided = decide(&target("A"), &points(), &existing, |_| true).expect("decided");
        assert_eq!(
            decided,
            [
                ApexRecord::Keep {
                    set_identifier: "blue".into(),
                    points_to: "blue.app.example.com.".into(),
                    weight: Some(80),
                },
                ApexRecord::Create(NewWeightedRecord {
                    set_identifier: "green".into(),
                    weight: 0,
                    points_to: "green.app.example.com.".into(),
                }),
            ]
        );
        let fresh = decide(&target("A"), &points(), &[], |_| true).expect("decided");
        assert!(matches!(&fresh[0], ApexRecord::Create(r) if r.weight == 100));
    }

    #[test]
    fn every_refusal_says_what_to_do() {
        let refused = |existing: &[WeightedRecord], present: bool, kind: &str| {
            decide(&target(kind), &points(), existing, |_| present).expect_err("refused")
        };
        assert!(refused(&[], false, "A")
            .contains("blue.app.example.com. has no A record in zone Z1 yet: deploy the Ingress"));
        assert!(refused(&[alias("green", "elsewhere.example.com.", 0)], true, "A")
            .contains("record `green` exists and points at elsewhere.example.com., not green.app.example.com."));
        let simple = WeightedRecord {
            set_identifier: None,
            weight: None,
            ttl: Some(60),
            alias_target: None,
            health_check_id: None,
        };
        assert!(refused(&[simple], true, "A").contains("has a simple A record"));
        assert!(refused(&[], true, "CNAME").contains("cannot be an alias"));
        let beside = [
            alias("blue-cluster", "blue.app.example.com", 100),
            alias("green-cluster", "green.app.example.com", 0),
        ];
        assert!(refused(&beside, true, "A").contains(
            "app.example.com. already has weighted A records of other set identifiers \
             (blue-cluster, green-cluster)"
        ));
        let one_point = parse_points(&["blue=blue.app.example.com".to_owned()]).unwrap();
        assert!(decide(&target("A"), &one_point, &[], |_| true)
            .expect_err("no green")
            .contains("no --point for set identifier green"));
        let apex = parse_points(&[
            "blue=app.example.com".to_owned(),
            "green=green.app.example.com".to_owned(),
        ])
        .unwrap();
        assert!(decide(&target("A"), &apex, &[], |_| true)
            .expect_err("the apex")
            .contains("is the apex itself"));
    }

    #[test]
    fn points_are_set_identifier_and_name() {
        assert!(parse_points(&["blue".to_owned()]).is_err());
        assert!(parse_points(&["=x".to_owned()]).is_err());
        assert!(parse_points(&[
            "blue=a.example.com".to_owned(),
            "blue=b.example.com".to_owned()
        ])
        .is_err());
    }
}
