//! The cluster readiness gate (plan `clusterReadiness`), passed before traffic moves: what EKS
//! already knows about the new cluster. Its cluster insights (`ListInsights`,
//! `DescribeInsight`: checks EKS runs itself, such as deprecated APIs still being called or a
//! version skew between the control plane and the nodes, the very things a cluster replacement
//! is for) and the health of its add-ons (`DescribeAddon`): a degraded CoreDNS fails half the
//! name lookups on the cluster, which the apps' own signals show late or never.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::gate_timing::{GateTiming, ResolvedTiming};
use crate::limits::{join_bounded, truncate, MAX_LINE_BYTES, MAX_REASON_BYTES};
use crate::validate::Errors;

/// Most add-ons a plan may name (a cluster has a handful; EKS offers a few dozen).
pub const MAX_NAMED_ADDONS: usize = 50;
/// Most insights and add-ons one look reads: each is a request, within the function's time.
pub const MAX_INSIGHTS_READ: usize = 100;
pub const MAX_ADDONS_READ: usize = 50;
/// Most blocking insights described (for their recommendation) in one look.
pub const MAX_INSIGHTS_DESCRIBED: usize = 5;

/// Before the first non-zero weight: no cluster insight of the new cluster in ERROR (nor in
/// WARNING, unless the plan allows warnings), and every add-on (or each one the plan names,
/// which must be installed) ACTIVE. Looked at until `timeoutSeconds`; during the bake, every
/// check looks at the add-ons again.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ClusterReadinessGate {
    /// Insights in WARNING pass (ERROR never does). Default false: a warning holds the
    /// rollout too.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub allow_insight_warnings: bool,
    /// The add-ons that must be ACTIVE, each installed (`coredns`, `vpc-cni`, ...). Default:
    /// every add-on the cluster has.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub addons: Option<Vec<String>>,
    /// How long to wait for the cluster to be ready before failing without moving traffic.
    /// Default 600.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1, max = 3600))]
    pub timeout_seconds: Option<i64>,
    /// How often to look. Default 15 (or `timeoutSeconds / 60` if longer), at most
    /// `timeoutSeconds`, and at most 60 looks in all.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1, max = 3600))]
    pub interval_seconds: Option<i64>,
}

/// How the state machine polls the gate.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ResolvedReadiness {
    pub interval_seconds: u32,
    /// Looks after the first one.
    pub max_polls: u32,
}

impl ClusterReadinessGate {
    const DEFAULT_TIMEOUT_SECONDS: i64 = 600;

    fn timing(&self) -> GateTiming<'static> {
        GateTiming {
            section: "clusterReadiness",
            timeout_seconds: self.timeout_seconds,
            interval_seconds: self.interval_seconds,
            default_timeout_seconds: Self::DEFAULT_TIMEOUT_SECONDS,
        }
    }

    pub(crate) fn validate(&self, errors: &mut Errors) {
        self.timing().validate(errors);
        let Some(addons) = &self.addons else {
            return;
        };
        if addons.is_empty() || addons.len() > MAX_NAMED_ADDONS {
            errors.push(
                "clusterReadiness.addons",
                format!(
                    "must name 1 to {MAX_NAMED_ADDONS} add-ons, got {}; leave it out to require \
                     every add-on the cluster has",
                    addons.len()
                ),
            );
        }
        for (i, name) in addons.iter().enumerate() {
            if !is_addon_name(name) {
                errors.push(
                    format!("clusterReadiness.addons[{i}]"),
                    format!(
                        "`{}` is not an EKS add-on name (letters, digits, `-` and `_`, starting \
                         with a letter or digit, at most 100 characters)",
                        truncate(name, 120)
                    ),
                );
            } else if addons[..i].contains(name) {
                errors.push(
                    format!("clusterReadiness.addons[{i}]"),
                    format!("`{name}` is named twice"),
                );
            }
        }
    }

    /// Defaults filled in. Only meaningful for a gate that passed validation.
    pub fn resolve(&self) -> ResolvedReadiness {
        let ResolvedTiming {
            interval_seconds,
            max_polls,
        } = self.timing().resolve();
        ResolvedReadiness {
            interval_seconds,
            max_polls,
        }
    }
}

/// EKS's add-on names: `^[0-9A-Za-z][A-Za-z0-9-_]*`, at most 100 characters.
fn is_addon_name(name: &str) -> bool {
    let mut chars = name.chars();
    name.len() <= 100
        && chars.next().is_some_and(|c| c.is_ascii_alphanumeric())
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
}

/// One cluster insight as `ListInsights` summarizes it, and its recommendation once described.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Insight {
    pub id: String,
    pub name: String,
    /// `UPGRADE_READINESS`, `MISCONFIGURATION`, ...
    pub category: String,
    /// `PASSING`, `WARNING`, `ERROR` or `UNKNOWN`.
    pub status: String,
    pub reason: Option<String>,
    /// `DescribeInsight`'s, read only for an insight that holds the rollout.
    pub recommendation: Option<String>,
}

impl Insight {
    /// Whether it holds the rollout: ERROR, or WARNING unless the plan allows warnings. An
    /// insight EKS has not concluded (UNKNOWN) does not.
    pub fn holds(&self, gate: &ClusterReadinessGate) -> bool {
        self.status == "ERROR" || (self.status == "WARNING" && !gate.allow_insight_warnings)
    }

    fn said(&self) -> String {
        let mut line = format!(
            "insight \"{}\" ({}) is {}",
            self.name, self.category, self.status
        );
        for part in [&self.reason, &self.recommendation].into_iter().flatten() {
            if !part.is_empty() {
                line.push_str(&format!(": {part}"));
            }
        }
        truncate(&line, MAX_LINE_BYTES)
    }
}

/// One health issue of an add-on (`health.issues[]`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AddonIssue {
    /// `InsufficientNumberOfReplicas`, `ConfigurationConflict`, ...
    pub code: String,
    pub message: Option<String>,
    pub resource_ids: Vec<String>,
}

/// An add-on as `DescribeAddon` answers it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Addon {
    pub name: String,
    /// `ACTIVE`, `CREATING`, `DEGRADED`, `CREATE_FAILED`, `UPDATE_FAILED`, ...
    pub status: String,
    pub issues: Vec<AddonIssue>,
}

impl Addon {
    fn said(&self) -> String {
        let issues: Vec<String> = self
            .issues
            .iter()
            .map(|issue| {
                let mut text = issue.code.clone();
                let detail: Vec<String> = issue
                    .message
                    .iter()
                    .cloned()
                    .chain(issue.resource_ids.first().cloned())
                    .collect();
                if !detail.is_empty() {
                    text.push_str(&format!(" ({})", detail.join("; ")));
                }
                text
            })
            .collect();
        let mut line = format!("add-on {} is {}", self.name, self.status);
        if !issues.is_empty() {
            line.push_str(&format!(": {}", issues.join(", ")));
        }
        truncate(&line, MAX_LINE_BYTES)
    }
}

/// What EKS said of the cluster in one look: its insights, and each add-on the gate requires
/// (`None`: named by the plan, not installed).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ClusterHealthReading {
    pub insights: Vec<Insight>,
    pub addons: Vec<(String, Option<Addon>)>,
}

/// Why the cluster is not ready, one line per problem (insights first), or nothing.
pub fn readiness_problems(
    gate: &ClusterReadinessGate,
    reading: &ClusterHealthReading,
) -> Vec<String> {
    let insights = reading
        .insights
        .iter()
        .filter(|i| i.holds(gate))
        .map(Insight::said);
    insights.chain(addon_problems(reading)).collect()
}

/// The add-ons of a reading that are not ACTIVE (or not installed): what a bake's check fails on.
pub fn addon_problems(reading: &ClusterHealthReading) -> Vec<String> {
    reading
        .addons
        .iter()
        .filter_map(|(name, addon)| match addon {
            None => Some(format!(
                "add-on {name} is not installed on the cluster (clusterReadiness.addons names it)"
            )),
            Some(addon) if addon.status != "ACTIVE" => Some(addon.said()),
            Some(_) => None,
        })
        .collect()
}

/// The gate's reason for people: every problem, bounded.
pub fn readiness_reason(problems: &[String]) -> String {
    if problems.is_empty() {
        return "no cluster insight holds the rollout and every add-on is ACTIVE".to_owned();
    }
    join_bounded(problems, "; ", 5, MAX_REASON_BYTES)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn insight(name: &str, status: &str) -> Insight {
        Insight {
            id: format!("id-{name}"),
            name: name.to_owned(),
            category: "UPGRADE_READINESS".to_owned(),
            status: status.to_owned(),
            reason: Some(format!("{name} reason")),
            recommendation: None,
        }
    }

    fn addon(name: &str, status: &str) -> Addon {
        Addon {
            name: name.to_owned(),
            status: status.to_owned(),
            issues: Vec::new(),
        }
    }

    #[test]
    fn errors_hold_warnings_hold_unless_allowed_and_unknown_never() {
        let reading = ClusterHealthReading {
            insights: vec![
                insight("Deprecated APIs", "ERROR"),
                insight("Kubelet skew", "WARNING"),
                insight("Fresh", "UNKNOWN"),
                insight("Fine", "PASSING"),
            ],
            addons: Vec::new(),
        };
        let strict = ClusterReadinessGate::default();
        assert_eq!(
            readiness_problems(&strict, &reading),
            [
                "insight \"Deprecated APIs\" (UPGRADE_READINESS) is ERROR: Deprecated APIs reason",
                "insight \"Kubelet skew\" (UPGRADE_READINESS) is WARNING: Kubelet skew reason"
            ]
        );
        let lenient = ClusterReadinessGate {
            allow_insight_warnings: true,
            ..Default::default()
        };
        assert_eq!(readiness_problems(&lenient, &reading).len(), 1);
    }

    #[test]
    fn an_add_on_not_active_or_not_installed_holds_with_its_issues() {
        let mut coredns = addon("coredns", "DEGRADED");
        coredns.issues.push(AddonIssue {
            code: "InsufficientNumberOfReplicas".to_owned(),
            message: Some("not enough replicas".to_owned()),
            resource_ids: vec!["kube-system/coredns".to_owned()],
        });
        let reading = ClusterHealthReading {
            insights: vec![insight("Fine", "PASSING")],
            addons: vec![
                ("coredns".to_owned(), Some(coredns)),
                ("vpc-cni".to_owned(), Some(addon("vpc-cni", "ACTIVE"))),
                ("aws-ebs-csi-driver".to_owned(), None),
            ],
        };
        let problems = readiness_problems(&ClusterReadinessGate::default(), &reading);
        assert_eq!(
            problems,
            [
                "add-on coredns is DEGRADED: InsufficientNumberOfReplicas (not enough replicas; \
                 kube-system/coredns)",
                "add-on aws-ebs-csi-driver is not installed on the cluster (clusterReadiness.addons \
                 names it)"
            ]
        );
        assert_eq!(addon_problems(&reading), problems);
        assert!(readiness_reason(&problems).starts_with("add-on coredns is DEGRADED"));
        assert!(readiness_reason(&[]).contains("every add-on is ACTIVE"));
    }

    #[test]
    fn validation_names_each_bad_field() {
        let mut errors = Errors::default();
        ClusterReadinessGate {
            addons: Some(vec!["coredns".into(), "-bad".into(), "coredns".into()]),
            timeout_seconds: Some(7200),
            ..Default::default()
        }
        .validate(&mut errors);
        assert_eq!(
            errors.paths(),
            [
                "clusterReadiness.timeoutSeconds",
                "clusterReadiness.addons[1]",
                "clusterReadiness.addons[2]"
            ]
        );
        let mut errors = Errors::default();
        ClusterReadinessGate {
            addons: Some(Vec::new()),
            ..Default::default()
        }
        .validate(&mut errors);
        assert_eq!(errors.paths(), ["clusterReadiness.addons"]);
        let resolved = ClusterReadinessGate::default().resolve();
        assert_eq!((resolved.interval_seconds, resolved.max_polls), (15, 40));
    }
}
