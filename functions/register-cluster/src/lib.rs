//! The `register-cluster` Lambda. Operations, each given the rollout `plan`:
//! - `describe`: the new cluster's status and ARN, in the plan's region (the state machine
//!   polls this until ACTIVE; its own `DescribeCluster` SDK step could only ask its region).
//! - `register`: DescribeCluster the new cluster (not ACTIVE yet: `ClusterNotReady`, retried
//!   by the state machine) and server-side apply its Argo CD cluster Secret.
//! - `appsStatus`: the Argo CD Applications whose destination is the cluster, and whether
//!   they are ready (enough of them, all Synced and Healthy).
//! - `clusterReadiness`: the plan's cluster readiness gate: whether EKS's cluster insights and
//!   the cluster's add-ons let traffic move, and why not (`canary_core::cluster_readiness`).
//! - `deregister`: delete the Secret if cluster-canary created it for this cluster (by ARN).
//! - `retire`: after promotion, delete the old cluster's Secret the plan names
//!   (`retire.argocdSecret`) if cluster-canary created it or the plan says `evenIfNotOurs`,
//!   and describe the old cluster (`retire.oldCluster`) for the Old Cluster Retired event.

use std::collections::BTreeMap;

use canary_aws::{
    read_cluster_health, AccessEntries, AwsError, AwsErrorKind, ClusterAccounts, ClusterEksApi,
    ClusterHealth, ClusterInfo, ClusterReadiness, EksApi,
};
use canary_core::argocd::{ArgoCdSection, MAX_APPS_POLLS};
use canary_core::cluster_readiness::{readiness_problems, readiness_reason};
use canary_core::input::parse_input;
use canary_core::metrics::{self, Point};
use canary_core::plan::ClusterRef;
use canary_core::{ErrorName, NamedError, PlanErrors, RolloutPlan};
use canary_kube::registration::Registration;
use canary_kube::{
    apps_status, argocd_server, connect, deregister, desired_secret, register, retire_secret,
    secret_labels, AccessDeps, AppsQuery, KubeArgoCd, KubeError, ManagementAccess,
    RegistrationError,
};
use schemars::{schema_for, JsonSchema, Schema};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use tracing::info;

#[derive(Debug, thiserror::Error)]
pub enum RegisterError {
    #[error("invalid input: {0}")]
    InvalidInput(String),
    #[error("{0}")]
    InvalidPlan(#[from] PlanErrors),
    #[error("EKS cluster {name} is {status}, not ACTIVE yet")]
    ClusterNotReady { name: String, status: String },
    #[error("EKS cluster {name} is {status}: it will not become ACTIVE")]
    ClusterFailed { name: String, status: String },
    #[error("no EKS cluster named {name} in {region}")]
    ClusterNotFound { name: String, region: String },
    #[error("{0}")]
    Registration(#[from] RegistrationError),
    #[error("{0}")]
    Kube(#[from] KubeError),
    #[error("{0}")]
    Aws(#[from] AwsError),
}

impl NamedError for RegisterError {
    fn name(&self) -> ErrorName {
        match self {
            RegisterError::InvalidInput(_) => ErrorName::InvalidInput,
            RegisterError::InvalidPlan(_) => ErrorName::InvalidPlan,
            RegisterError::ClusterNotReady { .. } => ErrorName::ClusterNotReady,
            RegisterError::ClusterFailed { .. } => ErrorName::ClusterFailed,
            RegisterError::ClusterNotFound { .. } => ErrorName::ClusterNotFound,
            RegisterError::Registration(e) => e.name(),
            RegisterError::Kube(e) => e.error_name(),
            RegisterError::Aws(e) => e.error_name(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::AppsWait;

    #[test]
    fn apps_polls_span_the_timeout() {
        assert_eq!(
            AppsWait::for_timeout(1800),
            AppsWait {
                interval_seconds: 30,
                max_polls: 60
            }
        );
        assert_eq!(
            AppsWait::for_timeout(60),
            AppsWait {
                interval_seconds: 5,
                max_polls: 12
            }
        );
        assert_eq!(
            AppsWait::for_timeout(200),
            AppsWait {
                interval_seconds: 10,
                max_polls: 20
            }
        );
        assert_eq!(
            AppsWait::for_timeout(86_400),
            AppsWait {
                interval_seconds: 720,
                max_polls: 120
            }
        );
    }
}

#[derive(Debug, Deserialize)]
#[serde(tag = "operation", rename_all = "camelCase", deny_unknown_fields)]
enum Request {
    /// `executionName` (here and below): the role session's name for a cluster in another
    /// account (`cluster.roleArn`), so its CloudTrail shows which rollout asked.
    #[serde(rename_all = "camelCase")]
    Describe {
        plan: Value,
        #[serde(default)]
        execution_name: Option<String>,
    },
    #[serde(rename_all = "camelCase")]
    Register {
        plan: Value,
        #[serde(default)]
        execution_name: Option<String>,
    },
    #[serde(rename_all = "camelCase")]
    AppsStatus {
        plan: Value,
        /// The previous poll's `stablePolls` (0 before the first).
        #[serde(default)]
        stable_polls: u32,
        #[serde(default)]
        execution_name: Option<String>,
    },
    #[serde(rename_all = "camelCase")]
    ClusterReadiness {
        plan: Value,
        #[serde(default)]
        execution_name: Option<String>,
    },
    /// `clusterArn` when the cluster may be gone already; otherwise it is described.
    #[serde(rename_all = "camelCase")]
    Deregister {
        plan: Value,
        #[serde(default)]
        cluster_arn: Option<String>,
        #[serde(default)]
        execution_name: Option<String>,
    },
    Retire {
        plan: Value,
    },
}

/// The JSON schema of each operation's output the state machine calls, by operation name: its
/// contract with the state machine (`tests/contract.rs` checks every path the definition reads
/// against them; `schema/outputs/register-cluster.json` holds them).
pub fn output_schemas() -> BTreeMap<&'static str, Schema> {
    BTreeMap::from([
        ("describe", schema_for!(DescribeOutput)),
        ("register", schema_for!(RegisterOutput)),
        (
            "appsStatus",
            schema_for!(canary_kube::registration::AppsStatus),
        ),
        ("clusterReadiness", schema_for!(ReadinessOutput)),
        ("retire", schema_for!(RetireOutput)),
    ])
}

/// One look of the cluster readiness gate, and how the state machine polls it.
#[derive(Debug, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
struct ReadinessOutput {
    ready: bool,
    /// What holds the rollout, every problem in a line each (bounded); or that nothing does.
    reason: String,
    interval_seconds: u32,
    max_polls: u32,
}

#[derive(Debug, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
struct DescribeOutput {
    /// `CREATING`, `ACTIVE`, `FAILED`, ... as EKS says it; [`NOT_CREATED`] for a cluster EKS
    /// does not know yet, when the plan waits for its creation.
    status: String,
    /// Null while the cluster does not exist.
    arn: Option<String>,
}

/// The status `describe` answers for a cluster that does not exist yet, when the plan says it
/// may not (`cluster.waitForCreation`): the state machine waits for it as for `CREATING`.
const NOT_CREATED: &str = "NOT CREATED";

#[derive(Debug, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
struct RegisterOutput {
    #[serde(flatten)]
    registration: Registration,
    apps_wait: AppsWait,
    /// The access entry registration gave Argo CD's role on the cluster, if the plan asks.
    #[serde(skip_serializing_if = "Option::is_none")]
    access_entry: Option<AccessEntryOutcome>,
}

/// The tag on the access entries registration creates: deregistration deletes only these.
pub const ACCESS_ENTRY_TAG: (&str, &str) = ("cluster-canary/managed-by", "cluster-canary");

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum AccessEntryOutcome {
    /// Created now, with its access policy.
    Created,
    /// Created by an earlier registration: its access policy associated again (no change).
    Ours,
    /// Someone else's: left as it is, its access policies included.
    Foreign,
}

fn tagged_ours(tags: &BTreeMap<String, String>) -> bool {
    tags.get(ACCESS_ENTRY_TAG.0).map(String::as_str) == Some(ACCESS_ENTRY_TAG.1)
}

/// Gives `principal` an access entry on the cluster with the plan's access policy, unless
/// someone else made one.
async fn ensure_access_entry(
    entries: &dyn AccessEntries,
    cluster: &ClusterRef,
    principal: &str,
    policy_arn: &str,
) -> Result<AccessEntryOutcome, RegisterError> {
    let (region, name) = (cluster.region.as_str(), cluster.name.as_str());
    let mut outcome = match entries.access_entry(region, name, principal).await? {
        Some(tags) if tagged_ours(&tags) => AccessEntryOutcome::Ours,
        Some(_) => return Ok(AccessEntryOutcome::Foreign),
        None => AccessEntryOutcome::Created,
    };
    if outcome == AccessEntryOutcome::Created {
        let tags = BTreeMap::from([(ACCESS_ENTRY_TAG.0.to_owned(), ACCESS_ENTRY_TAG.1.to_owned())]);
        if !entries
            .create_access_entry(region, name, principal, &tags)
            .await?
        {
            // Created meanwhile (a retried registration): whose is it?
            match entries.access_entry(region, name, principal).await? {
                Some(tags) if tagged_ours(&tags) => outcome = AccessEntryOutcome::Ours,
                _ => return Ok(AccessEntryOutcome::Foreign),
            }
        }
    }
    entries
        .associate_access_policy(region, name, principal, policy_arn)
        .await?;
    info!(principal, ?outcome, "access entry on the new cluster");
    Ok(outcome)
}

/// How the state machine polls for the apps: `max_polls` polls `interval_seconds` apart span
/// the plan's `appsTimeoutSeconds`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AppsWait {
    pub interval_seconds: i64,
    pub max_polls: i64,
}

impl AppsWait {
    /// Polls every 30 s, or more often for a short timeout (about 20 polls, at least 5 s apart),
    /// or less often for a long one: at most [`MAX_APPS_POLLS`] polls (history budget).
    pub fn for_timeout(timeout_seconds: i64) -> Self {
        let interval_seconds = (timeout_seconds / 20)
            .clamp(5, 30)
            .max((timeout_seconds + MAX_APPS_POLLS - 1) / MAX_APPS_POLLS);
        AppsWait {
            interval_seconds,
            max_polls: (timeout_seconds + interval_seconds - 1) / interval_seconds,
        }
    }
}

/// What the function needs from outside.
pub struct Deps<'a> {
    pub access: &'a ManagementAccess,
    pub aws: AccessDeps<'a>,
    /// EKS in other accounts, for plans with `cluster.roleArn`.
    pub cluster_accounts: &'a dyn ClusterAccounts,
    /// Access entries of new clusters in this account.
    pub access_entries: &'a dyn AccessEntries,
    /// Insights and add-ons of new clusters in this account.
    pub cluster_health: &'a dyn ClusterHealth,
}

/// EKS where the plan's cluster lives: this account's, or that of `cluster.roleArn`.
enum ClusterEks<'d> {
    Here {
        eks: &'d dyn EksApi,
        entries: &'d dyn AccessEntries,
        health: &'d dyn ClusterHealth,
    },
    Assumed(Box<dyn ClusterEksApi>),
}

impl ClusterEks<'_> {
    fn api(&self) -> &dyn EksApi {
        match self {
            ClusterEks::Here { eks, .. } => *eks,
            ClusterEks::Assumed(eks) => eks.as_ref(),
        }
    }

    fn entries(&self) -> &dyn AccessEntries {
        match self {
            ClusterEks::Here { entries, .. } => *entries,
            ClusterEks::Assumed(eks) => eks.as_ref(),
        }
    }

    fn health(&self) -> &dyn ClusterHealth {
        match self {
            ClusterEks::Here { health, .. } => *health,
            ClusterEks::Assumed(eks) => eks.as_ref(),
        }
    }
}

async fn cluster_eks<'d>(
    deps: &'d Deps<'_>,
    plan: &RolloutPlan,
    execution_name: Option<&str>,
) -> ClusterEks<'d> {
    match &plan.cluster.role_arn {
        None => ClusterEks::Here {
            eks: deps.aws.eks,
            entries: deps.access_entries,
            health: deps.cluster_health,
        },
        Some(role) => ClusterEks::Assumed(
            deps.cluster_accounts
                .eks_as(role, &session_name(execution_name))
                .await,
        ),
    }
}

/// An STS role session name (2 to 64 of letters, digits and `+=,.@_-`) from the execution's
/// name, which allows all but 16 of those 80 characters.
fn session_name(execution_name: Option<&str>) -> String {
    let name: String = execution_name
        .unwrap_or_default()
        .chars()
        .filter(|c| c.is_ascii_alphanumeric() || "+=,.@_-".contains(*c))
        .take(64)
        .collect();
    if name.len() < 2 {
        "cluster-canary".to_owned()
    } else {
        name
    }
}

pub async fn handle(deps: &Deps<'_>, input: Value) -> Result<Value, RegisterError> {
    let output = match parse_input::<Request>(input).map_err(RegisterError::InvalidInput)? {
        Request::Describe {
            plan,
            execution_name,
        } => {
            let plan = RolloutPlan::parse(plan)?.plan;
            let eks = cluster_eks(deps, &plan, execution_name.as_deref()).await;
            let described = match describe(eks.api(), &plan).await {
                Ok(cluster) => DescribeOutput {
                    status: cluster.status,
                    arn: Some(cluster.arn),
                },
                Err(RegisterError::ClusterNotFound { .. }) if plan.cluster.wait_for_creation => {
                    DescribeOutput {
                        status: NOT_CREATED.to_owned(),
                        arn: None,
                    }
                }
                Err(e) => return Err(e),
            };
            serde_json::to_value(described)
        }
        Request::Register {
            plan,
            execution_name,
        } => {
            let plan = RolloutPlan::parse(plan)?.plan;
            let argocd = plan.argocd.clone().unwrap_or_default();
            let eks = cluster_eks(deps, &plan, execution_name.as_deref()).await;
            let (cluster, server, ca_data) = active_cluster(eks.api(), &plan).await?;
            let access_entry = match argocd.access_entry_principal() {
                Some(principal) => Some(
                    ensure_access_entry(
                        eks.entries(),
                        &plan.cluster,
                        principal,
                        argocd.access_policy_arn(),
                    )
                    .await?,
                ),
                None => None,
            };
            let desired = desired_secret(&cluster, &server, &ca_data, &argocd);
            let api = argocd_api(deps, &argocd).await?;
            let registration = register(&api, argocd.namespace(), &desired).await?;
            serde_json::to_value(RegisterOutput {
                registration,
                apps_wait: AppsWait::for_timeout(argocd.apps_timeout_seconds()),
                access_entry,
            })
        }
        Request::AppsStatus {
            plan,
            stable_polls,
            execution_name,
        } => {
            let plan = RolloutPlan::parse(plan)?.plan;
            let argocd = plan.argocd.clone().unwrap_or_default();
            let eks = cluster_eks(deps, &plan, execution_name.as_deref()).await;
            let (cluster, endpoint, _) = active_cluster(eks.api(), &plan).await?;
            let api = argocd_api(deps, &argocd).await?;
            // Applications name the cluster by the Secret's `server`: the ARN for the EKS
            // Capability for Argo CD.
            let server = argocd_server(&cluster, &endpoint, &argocd);
            let query = AppsQuery {
                server: &server,
                cluster_name: &cluster.name,
                secret_labels: &secret_labels(&argocd),
                argocd: &argocd,
                stable_polls,
            };
            serde_json::to_value(apps_status(&api, &query).await?)
        }
        Request::ClusterReadiness {
            plan,
            execution_name,
        } => {
            let plan = RolloutPlan::parse(plan)?.plan;
            let Some(gate) = &plan.cluster_readiness else {
                return Err(RegisterError::InvalidInput(
                    "clusterReadiness: the plan has no clusterReadiness gate".to_owned(),
                ));
            };
            let eks = cluster_eks(deps, &plan, execution_name.as_deref()).await;
            let (region, name) = (&plan.cluster.region, &plan.cluster.name);
            let reading = read_cluster_health(eks.health(), region, name, gate).await?;
            let problems = readiness_problems(gate, &reading);
            let timing = gate.resolve();
            info!(cluster = %name, ready = problems.is_empty(), problems = problems.len(), "cluster readiness");
            if !problems.is_empty() {
                metrics::emit([Point::gate_hold(
                    &metrics::cluster_dimension(region, name),
                    "clusterReadiness",
                )]);
            }
            serde_json::to_value(ReadinessOutput {
                ready: problems.is_empty(),
                reason: readiness_reason(&problems),
                interval_seconds: timing.interval_seconds,
                max_polls: timing.max_polls,
            })
        }
        Request::Deregister {
            plan,
            cluster_arn,
            execution_name,
        } => {
            let plan = RolloutPlan::parse(plan)?.plan;
            let argocd = plan.argocd.clone().unwrap_or_default();
            let eks = cluster_eks(deps, &plan, execution_name.as_deref()).await;
            let cluster_arn = match cluster_arn {
                Some(arn) => arn,
                None => describe(eks.api(), &plan).await?.arn,
            };
            // Only an entry registration created; none at all once the cluster is gone.
            if let Some(principal) = argocd.access_entry_principal() {
                let (region, name) = (&plan.cluster.region, &plan.cluster.name);
                if let Some(tags) = eks.entries().access_entry(region, name, principal).await? {
                    if tagged_ours(&tags) {
                        eks.entries()
                            .delete_access_entry(region, name, principal)
                            .await?;
                    }
                }
            }
            let api = argocd_api(deps, &argocd).await?;
            serde_json::to_value(
                deregister(&api, argocd.namespace(), &cluster_arn, &plan.cluster.name).await?,
            )
        }
        Request::Retire { plan } => {
            serde_json::to_value(retire(deps, RolloutPlan::parse(plan)?.plan).await?)
        }
    };
    output.map_err(|e| RegisterError::InvalidInput(format!("output not serializable: {e}")))
}

async fn argocd_api(deps: &Deps<'_>, argocd: &ArgoCdSection) -> Result<KubeArgoCd, RegisterError> {
    let client = connect(deps.access, &deps.aws).await?;
    Ok(KubeArgoCd::new(client, argocd.namespace()))
}

/// The plan's cluster, in the plan's region.
async fn describe(eks: &dyn EksApi, plan: &RolloutPlan) -> Result<ClusterInfo, RegisterError> {
    let (name, region) = (&plan.cluster.name, &plan.cluster.region);
    match eks.describe_cluster(Some(region), name).await {
        Ok(cluster) => Ok(cluster),
        Err(e) if e.kind == AwsErrorKind::NotFound => Err(RegisterError::ClusterNotFound {
            name: name.clone(),
            region: region.clone(),
        }),
        Err(e) => Err(e.into()),
    }
}

/// What retiring the old cluster did in Argo CD, for the Old Cluster Retired event.
#[derive(Debug, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
struct RetireOutput {
    /// The plan's `retire.oldCluster` with its ARN (null when EKS no longer knows it).
    old_cluster: Option<Value>,
    /// The Secret deleted (or found gone), when the plan names one.
    secret: Option<Registration>,
}

/// After promotion: delete the old cluster's Secret if the plan names one, and describe the old
/// cluster if it names one. Neither named: nothing to do.
async fn retire(deps: &Deps<'_>, plan: RolloutPlan) -> Result<RetireOutput, RegisterError> {
    let argocd = plan.argocd.clone().unwrap_or_default();
    let retire = plan.retire.clone().unwrap_or_default();
    let secret = match &retire.argocd_secret {
        Some(name) => {
            let api = argocd_api(deps, &argocd).await?;
            Some(retire_secret(&api, argocd.namespace(), name, retire.even_if_not_ours).await?)
        }
        None => None,
    };
    let old_cluster = match &retire.old_cluster {
        Some(old) => {
            let arn = match deps
                .aws
                .eks
                .describe_cluster(Some(&old.region), &old.name)
                .await
            {
                Ok(cluster) => Some(cluster.arn),
                Err(e) if e.kind == AwsErrorKind::NotFound => None,
                Err(e) => return Err(e.into()),
            };
            Some(serde_json::json!({"name": old.name, "region": old.region, "arn": arn}))
        }
        None => None,
    };
    Ok(RetireOutput {
        old_cluster,
        secret,
    })
}

/// The plan's cluster, its endpoint and CA, if it is ACTIVE.
async fn active_cluster(
    eks: &dyn EksApi,
    plan: &RolloutPlan,
) -> Result<(ClusterInfo, String, String), RegisterError> {
    let name = &plan.cluster.name;
    let cluster = describe(eks, plan).await?;
    let status = cluster.status.clone();
    match (cluster.readiness(), &cluster.endpoint, &cluster.ca_data) {
        (ClusterReadiness::Active, Some(server), Some(ca)) => {
            let (server, ca) = (server.clone(), ca.clone());
            Ok((cluster, server, ca))
        }
        (ClusterReadiness::Failed, _, _) => Err(RegisterError::ClusterFailed {
            name: name.clone(),
            status,
        }),
        // CREATING, PENDING, UPDATING, or ACTIVE before EKS shows the endpoint.
        _ => Err(RegisterError::ClusterNotReady {
            name: name.clone(),
            status,
        }),
    }
}
