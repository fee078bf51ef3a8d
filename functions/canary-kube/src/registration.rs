//! Register a cluster in Argo CD, report its apps, deregister it: the decisions, over the
//! `ArgoCdApi` trait.

use std::collections::BTreeMap;

use crate::appsets::{selects_cluster, ClusterParams};
use canary_aws::ClusterInfo;
use canary_core::argocd::{
    secret_name, ArgoCdMode, ArgoCdSection, CLUSTER_ARN_ANNOTATION, MANAGED_BY_LABEL,
    MANAGED_BY_VALUE, SECRET_TYPE_LABEL,
};
use canary_core::limits::{join_bounded, MAX_REASON_BYTES};
use canary_core::{ErrorName, NamedError};
use schemars::JsonSchema;
use serde::Serialize;
use serde_json::json;
use tracing::{info, warn};

use crate::argocd::{AppStatus, ArgoCdApi, ClusterSecret};
use crate::error::{KubeError, KubeErrorKind};

#[derive(Debug, thiserror::Error)]
pub enum RegistrationError {
    #[error("Secret {namespace}/{name} {why}; it was left untouched")]
    SecretNotOwned {
        namespace: String,
        name: String,
        why: String,
    },
    #[error(
        "Secret {namespace}/{other} already registers server {server} in Argo CD; a second Secret for the same \
         server makes Argo CD pick one at random. Remove one of them"
    )]
    DuplicateServer {
        namespace: String,
        other: String,
        server: String,
    },
    #[error("{0}")]
    Kube(#[from] KubeError),
}

impl NamedError for RegistrationError {
    fn name(&self) -> ErrorName {
        match self {
            RegistrationError::SecretNotOwned { .. } => ErrorName::SecretNotOwned,
            RegistrationError::DuplicateServer { .. } => ErrorName::DuplicateClusterServer,
            RegistrationError::Kube(e) => e.error_name(),
        }
    }
}

/// The Argo CD cluster Secret for `cluster`, as Argo CD's `SecretToCluster` reads it.
/// The labels of the cluster Secret: the plan's, and the two cluster-canary sets itself.
pub fn secret_labels(argocd: &ArgoCdSection) -> BTreeMap<String, String> {
    let mut labels: BTreeMap<String, String> = argocd.labels.clone();
    labels.insert(SECRET_TYPE_LABEL.to_owned(), "cluster".to_owned());
    labels.insert(MANAGED_BY_LABEL.to_owned(), MANAGED_BY_VALUE.to_owned());
    labels
}

/// The `server` Argo CD knows the cluster by: its API endpoint, or with the EKS Capability
/// for Argo CD its ARN (Applications' `destination.server` is the same).
pub fn argocd_server(cluster: &ClusterInfo, endpoint: &str, argocd: &ArgoCdSection) -> String {
    match argocd.mode() {
        ArgoCdMode::EksCapability => cluster.arn.clone(),
        // Argo CD trims a trailing slash too; EKS endpoints have none, but be exact.
        ArgoCdMode::SelfManaged => endpoint.trim_end_matches('/').to_owned(),
    }
}

/// The cluster Secret. Self-managed Argo CD gets `config` (awsAuthConfig and the CA); the EKS
/// Capability for Argo CD gets none: it reaches the cluster through its access entry.
pub fn desired_secret(
    cluster: &ClusterInfo,
    endpoint: &str,
    ca_data: &str,
    argocd: &ArgoCdSection,
) -> ClusterSecret {
    let labels = secret_labels(argocd);
    let mut data = BTreeMap::from([
        ("name".to_owned(), cluster.name.clone()),
        (
            "server".to_owned(),
            argocd_server(cluster, endpoint, argocd),
        ),
    ]);
    if argocd.mode() == ArgoCdMode::SelfManaged {
        let mut aws_auth = json!({"clusterName": cluster.name});
        if let Some(role) = &argocd.role_arn {
            aws_auth["roleARN"] = json!(role);
        }
        let config = json!({
            "awsAuthConfig": aws_auth,
            "tlsClientConfig": {"insecure": false, "caData": ca_data},
        });
        data.insert("config".to_owned(), config.to_string());
    }
    if let Some(project) = &argocd.project {
        data.insert("project".to_owned(), project.clone());
    }
    if !argocd.namespaces.is_empty() {
        data.insert("namespaces".to_owned(), argocd.namespaces.join(","));
    }
    if let Some(cluster_resources) = argocd.cluster_resources {
        data.insert("clusterResources".to_owned(), cluster_resources.to_string());
    }
    ClusterSecret {
        name: secret_name(&cluster.arn, &cluster.name),
        uid: None,
        labels,
        annotations: BTreeMap::from([(CLUSTER_ARN_ANNOTATION.to_owned(), cluster.arn.clone())]),
        data,
        annotation_owners: BTreeMap::new(),
    }
}

fn ours(secret: &ClusterSecret) -> bool {
    secret.labels.get(MANAGED_BY_LABEL).map(String::as_str) == Some(MANAGED_BY_VALUE)
}

fn cluster_arn(secret: &ClusterSecret) -> Option<&str> {
    secret
        .annotations
        .get(CLUSTER_ARN_ANNOTATION)
        .map(String::as_str)
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum Outcome {
    Created,
    Updated,
    Unchanged,
    Deleted,
    Absent,
}

impl Outcome {
    pub fn as_str(self) -> &'static str {
        match self {
            Outcome::Created => "created",
            Outcome::Updated => "updated",
            Outcome::Unchanged => "unchanged",
            Outcome::Deleted => "deleted",
            Outcome::Absent => "absent",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Registration {
    pub namespace: String,
    pub secret_name: String,
    pub server: String,
    pub outcome: Outcome,
}

pub async fn register(
    api: &dyn ArgoCdApi,
    namespace: &str,
    desired: &ClusterSecret,
) -> Result<Registration, RegistrationError> {
    let existing = api.get_secret(&desired.name).await?;
    if let Some(existing) = &existing {
        let why = if !ours(existing) {
            Some(format!("exists and was not created by cluster-canary (no {MANAGED_BY_LABEL}={MANAGED_BY_VALUE} label)"))
        } else if cluster_arn(existing) != cluster_arn(desired) {
            Some(format!(
                "belongs to cluster {}",
                cluster_arn(existing).unwrap_or("(no cluster ARN annotation)")
            ))
        } else {
            None
        };
        if let Some(why) = why {
            return Err(RegistrationError::SecretNotOwned {
                namespace: namespace.to_owned(),
                name: desired.name.clone(),
                why,
            });
        }
    }
    let server = desired.data.get("server").cloned().unwrap_or_default();
    let same_server = api.cluster_secrets().await?.into_iter().find(|other| {
        other.name != desired.name
            && other.data.get("server").map(|s| s.trim_end_matches('/')) == Some(server.as_str())
    });
    if let Some(other) = same_server {
        return Err(RegistrationError::DuplicateServer {
            namespace: namespace.to_owned(),
            other: other.name,
            server,
        });
    }
    let outcome = match &existing {
        None => Outcome::Created,
        // The ARN annotation is equal already (ownership above); other annotations are not
        // ours, nor are labels someone else added (Argo CD's cluster-info labelling, a
        // person's): a re-apply would leave them as they are.
        Some(e)
            if desired
                .labels
                .iter()
                .all(|(k, v)| e.labels.get(k) == Some(v))
                && e.data == desired.data =>
        {
            Outcome::Unchanged
        }
        Some(_) => Outcome::Updated,
    };
    if outcome != Outcome::Unchanged {
        api.apply_secret(desired).await?;
    }
    info!(secret = %desired.name, %namespace, %server, outcome = outcome.as_str(), "cluster registered in Argo CD");
    Ok(Registration {
        namespace: namespace.to_owned(),
        secret_name: desired.name.clone(),
        server,
        outcome,
    })
}

/// Deletes the cluster's Secret if cluster-canary created it for this cluster (same ARN).
/// Already gone is success.
pub async fn deregister(
    api: &dyn ArgoCdApi,
    namespace: &str,
    cluster_arn_to_remove: &str,
    cluster_name: &str,
) -> Result<Registration, RegistrationError> {
    let name = secret_name(cluster_arn_to_remove, cluster_name);
    let outcome = match api.get_secret(&name).await? {
        None => Outcome::Absent,
        Some(existing)
            if !ours(&existing) || cluster_arn(&existing) != Some(cluster_arn_to_remove) =>
        {
            return Err(RegistrationError::SecretNotOwned {
                namespace: namespace.to_owned(),
                name,
                why: format!(
                    "was not created by cluster-canary for cluster {cluster_arn_to_remove}"
                ),
            })
        }
        Some(existing) => delete(api, &existing).await?,
    };
    info!(secret = %name, %namespace, outcome = outcome.as_str(), "cluster deregistered from Argo CD");
    Ok(Registration {
        namespace: namespace.to_owned(),
        secret_name: name,
        server: String::new(),
        outcome,
    })
}

/// `Deleted`, or `Absent` when someone else deleted it first. Only the Secret that was read
/// (its uid): one re-created in between is a conflict, and stays.
async fn delete(api: &dyn ArgoCdApi, read: &ClusterSecret) -> Result<Outcome, RegistrationError> {
    Ok(
        if api.delete_secret(&read.name, read.uid.as_deref()).await? {
            Outcome::Deleted
        } else {
            Outcome::Absent
        },
    )
}

/// Deletes the old cluster's Argo CD cluster Secret named by the plan (`retire.argocdSecret`)
/// after promotion: only an Argo CD cluster Secret, and only one cluster-canary created unless
/// `even_if_not_ours`. Already gone is success.
pub async fn retire_secret(
    api: &dyn ArgoCdApi,
    namespace: &str,
    name: &str,
    even_if_not_ours: bool,
) -> Result<Registration, RegistrationError> {
    let refuse = |why: &str| RegistrationError::SecretNotOwned {
        namespace: namespace.to_owned(),
        name: name.to_owned(),
        why: why.to_owned(),
    };
    let outcome = match api.get_secret(name).await? {
        None => Outcome::Absent,
        Some(existing)
            if existing.labels.get(SECRET_TYPE_LABEL).map(String::as_str) != Some("cluster") =>
        {
            return Err(refuse("is not an Argo CD cluster Secret"))
        }
        Some(existing) if !ours(&existing) && !even_if_not_ours => {
            return Err(refuse(
                "was not created by cluster-canary (retire.evenIfNotOurs deletes it anyway)",
            ))
        }
        Some(existing) => delete(api, &existing).await?,
    };
    info!(secret = %name, %namespace, outcome = outcome.as_str(), "old cluster deregistered from Argo CD");
    Ok(Registration {
        namespace: namespace.to_owned(),
        secret_name: name.to_owned(),
        server: String::new(),
        outcome,
    })
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AppReport {
    pub name: String,
    pub sync: String,
    pub health: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AppsStatus {
    /// Ready now and for `stableChecks` polls in a row: every ApplicationSet that selects the
    /// cluster has generated its Applications, at least `min_apps` target the cluster, and all
    /// of those are Synced and Healthy.
    pub ready: bool,
    pub min_apps: usize,
    /// How many Applications target the cluster.
    pub app_count: usize,
    /// The ApplicationSets whose cluster generators select the new Secret's labels.
    pub application_sets: Vec<String>,
    /// Consecutive polls, this one included, that found everything ready; the next poll
    /// passes it back.
    pub stable_polls: u32,
    /// The first [`MAX_LISTED_APPS`] Applications, those not ready first (all are in the log).
    pub apps: Vec<AppReport>,
    /// One bounded line for people and the execution's cause.
    pub reason: String,
}

/// Most Applications an apps status lists: it goes into the execution's state.
pub const MAX_LISTED_APPS: usize = 20;

/// What the apps wait knows of the cluster and the plan.
pub struct AppsQuery<'a> {
    /// The cluster's API server URL (an Application's `destination.server`).
    pub server: &'a str,
    /// Its registered name (an Application's `destination.name`).
    pub cluster_name: &'a str,
    /// The labels of its cluster Secret, which ApplicationSet cluster generators select on.
    pub secret_labels: &'a BTreeMap<String, String>,
    pub argocd: &'a ArgoCdSection,
    /// `stablePolls` of the previous poll (0 for the first).
    pub stable_polls: u32,
}

/// The Applications whose destination is the cluster (by `server` or by registered `name`,
/// the way `argocd app list --cluster` matches them), and the ApplicationSets expected to
/// generate some: ready when each of those has, all are Synced and Healthy, there are at least
/// `minApps`, and it has been so for `stableChecks` polls. With `refreshStaleApps`, each app
/// not ready yet is asked to refresh.
pub async fn apps_status(
    api: &dyn ArgoCdApi,
    query: &AppsQuery<'_>,
) -> Result<AppsStatus, RegistrationError> {
    let server = query.server.trim_end_matches('/');
    let targets_cluster = |app: &AppStatus| {
        app.destination_server
            .as_deref()
            .map(|s| s.trim_end_matches('/'))
            == Some(server)
            || app.destination_name.as_deref() == Some(query.cluster_name)
    };
    let ours: Vec<AppStatus> = api
        .applications()
        .await?
        .into_iter()
        .filter(targets_cluster)
        .collect();
    let mut expected = Vec::new();
    let mut unreadable = Vec::new();
    // Without the ApplicationSet CRD (404) or the permission to list it (403), readiness falls
    // back to `minApps` and the health of what targets the cluster, and the reason says so.
    let (sets, sets_note) = match api.application_sets().await {
        Ok(sets) => (sets, String::new()),
        Err(e) if matches!(e.kind, KubeErrorKind::Permission | KubeErrorKind::NotFound) => (
            Vec::new(),
            format!(
                " (ApplicationSets not read: {}; only minApps counts)",
                e.message
            ),
        ),
        Err(e) => return Err(e.into()),
    };
    let cluster = ClusterParams {
        name: query.cluster_name,
        server,
        labels: query.secret_labels,
    };
    for set in sets {
        match selects_cluster(&set.spec, &cluster) {
            Ok(true) => expected.push(set.name),
            Ok(false) => {}
            // Argo CD cannot use that generator either: it generates nothing from the set, for
            // any cluster, so it cannot hold this one back. Said, not waited for.
            Err(why) => {
                warn!(application_set = %set.name, %why, "ApplicationSet ignored: Argo CD would refuse its selector");
                unreadable.push(format!("ApplicationSet {}: {why}", set.name));
            }
        }
    }
    let missing: Vec<&String> = expected
        .iter()
        .filter(|set| {
            !ours
                .iter()
                .any(|app| app.application_set.as_ref() == Some(*set))
        })
        .collect();
    let mut apps: Vec<AppReport> = ours
        .into_iter()
        .map(|app| AppReport {
            name: app.name,
            sync: app.sync.unwrap_or_else(|| "Unknown".to_owned()),
            health: app.health.unwrap_or_else(|| "Unknown".to_owned()),
        })
        .collect();
    let is_ready = |a: &AppReport| a.sync == "Synced" && a.health == "Healthy";
    apps.sort_by_key(is_ready); // stable: not ready first, otherwise in the API's order
    let not_ready: Vec<String> = apps
        .iter()
        .filter(|a| !is_ready(a))
        .map(|a| format!("{} is {}/{}", a.name, a.sync, a.health))
        .collect();
    if query.argocd.refresh_stale_apps() {
        // At most the listed ones per poll: a patch each, within the function's timeout.
        for app in apps.iter().filter(|a| !is_ready(a)).take(MAX_LISTED_APPS) {
            api.request_refresh(&app.name).await?;
        }
    }
    let app_count = apps.len();
    let min_apps = query.argocd.min_apps();
    let bounded =
        |items: &[String]| join_bounded(items, ", ", MAX_LISTED_APPS, MAX_REASON_BYTES / 3);
    let mut problems = Vec::new();
    if !missing.is_empty() {
        let names: Vec<String> = missing.iter().map(|s| s.to_string()).collect();
        problems.push(format!(
            "no Application for the cluster yet from ApplicationSet {}",
            bounded(&names)
        ));
    }
    if app_count < min_apps {
        problems.push(format!(
            "{app_count} of at least {min_apps} Applications target the cluster"
        ));
    }
    if !not_ready.is_empty() {
        problems.push(format!("not ready: {}", bounded(&not_ready)));
    }
    let stable_polls = if problems.is_empty() {
        query.stable_polls.saturating_add(1)
    } else {
        0
    };
    let stable_checks = query.argocd.stable_checks();
    let from_sets = if expected.is_empty() {
        String::new()
    } else {
        format!(" (from ApplicationSets {})", bounded(&expected))
    };
    let sets_note = if unreadable.is_empty() {
        sets_note
    } else {
        format!(
            "{sets_note} (ignored, Argo CD generates nothing from it: {})",
            bounded(&unreadable)
        )
    };
    let (ready, reason) = if !problems.is_empty() {
        (false, problems.join("; ") + &sets_note)
    } else if stable_polls < stable_checks {
        (
            false,
            format!(
                "all {app_count} Applications are Synced and Healthy{from_sets}{sets_note}; {stable_polls} of {stable_checks} looks in a row"
            ),
        )
    } else {
        (
            true,
            format!("all {app_count} Applications are Synced and Healthy{from_sets}{sets_note}"),
        )
    };
    info!(app_count, ready, stable_polls, not_ready = %not_ready.join(", "), "apps status");
    apps.truncate(MAX_LISTED_APPS);
    Ok(AppsStatus {
        ready,
        min_apps,
        app_count,
        application_sets: expected.into_iter().take(MAX_LISTED_APPS).collect(),
        stable_polls,
        apps,
        reason: canary_core::limits::truncate(&reason, MAX_REASON_BYTES),
    })
}
