//! EKS: what a cluster looks like once it can be registered.

use std::collections::{BTreeMap, HashMap};

use async_trait::async_trait;
use aws_config::SdkConfig;
use aws_credential_types::provider::SharedCredentialsProvider;
use aws_sdk_eks as eks;

use aws_smithy_runtime_api::client::result::SdkError;
use aws_smithy_types::error::metadata::ProvideErrorMetadata;

use canary_core::cluster_readiness::{
    Addon, AddonIssue, ClusterHealthReading, ClusterReadinessGate, Insight, MAX_ADDONS_READ,
    MAX_INSIGHTS_DESCRIBED, MAX_INSIGHTS_READ,
};

use crate::assumed_role::AssumedRole;
use crate::error::{AwsError, AwsErrorKind, HasStatus};

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClusterInfo {
    pub name: String,
    pub arn: String,
    /// `CREATING`, `ACTIVE`, `FAILED`, ... as EKS says it.
    pub status: String,
    /// The API server URL. EKS gives it only once the cluster is ACTIVE.
    pub endpoint: Option<String>,
    /// Base64 of the PEM CA bundle, as EKS gives it (Argo CD's `caData` wants exactly this).
    pub ca_data: Option<String>,
}

/// What a cluster's status means for a rollout: the one place it is judged (register-cluster
/// and the CLI's `plan check` both ask here).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ClusterReadiness {
    Active,
    /// `FAILED` or `DELETING`: it will never serve traffic.
    Failed,
    /// `CREATING`, `PENDING`, `UPDATING`: worth waiting for.
    NotYet,
}

impl ClusterInfo {
    pub fn readiness(&self) -> ClusterReadiness {
        match self.status.as_str() {
            "ACTIVE" => ClusterReadiness::Active,
            "FAILED" | "DELETING" => ClusterReadiness::Failed,
            _ => ClusterReadiness::NotYet,
        }
    }
}

#[async_trait]
pub trait EksApi: Send + Sync {
    /// The cluster `name` in `region` (the configured region when `None`). `NotFound` for a
    /// cluster that does not exist.
    async fn describe_cluster(
        &self,
        region: Option<&str>,
        name: &str,
    ) -> Result<ClusterInfo, AwsError>;
}

/// EKS access entries of a cluster: who may reach its Kubernetes API through IAM.
#[async_trait]
pub trait AccessEntries: Send + Sync {
    /// The entry's tags, or `None` when `principal` has no entry on the cluster.
    async fn access_entry(
        &self,
        region: &str,
        cluster: &str,
        principal: &str,
    ) -> Result<Option<BTreeMap<String, String>>, AwsError>;
    /// Creates the entry with `tags`; `false` when one exists already (nothing changed).
    async fn create_access_entry(
        &self,
        region: &str,
        cluster: &str,
        principal: &str,
        tags: &BTreeMap<String, String>,
    ) -> Result<bool, AwsError>;
    /// Associates an access policy at cluster scope (again: no change).
    async fn associate_access_policy(
        &self,
        region: &str,
        cluster: &str,
        principal: &str,
        policy_arn: &str,
    ) -> Result<(), AwsError>;
    /// `false` when there was no entry.
    async fn delete_access_entry(
        &self,
        region: &str,
        cluster: &str,
        principal: &str,
    ) -> Result<bool, AwsError>;
}

/// EKS in the account of a cluster created in another account (the plan's `cluster.roleArn`).
#[async_trait]
pub trait ClusterAccounts: Send + Sync {
    /// EKS as `role_arn`, in a session named `session_name` (what CloudTrail shows there).
    /// Builds a client only: a role that cannot be assumed fails the first call, as an
    /// access-denied [`AwsError`].
    async fn eks_as(&self, role_arn: &str, session_name: &str) -> Box<dyn ClusterEksApi>;
}

/// A cluster's add-ons, as EKS reports their health: what the cluster readiness gate and every
/// bake's check read (a trait of its own: what a check links is only this).
#[async_trait]
pub trait AddonHealth: Send + Sync {
    /// The names of the cluster's add-ons (at most [`MAX_ADDONS_READ`]).
    async fn addon_names(&self, region: &str, cluster: &str) -> Result<Vec<String>, AwsError>;
    /// An add-on of the cluster; `None` when the cluster does not have it.
    async fn addon(
        &self,
        region: &str,
        cluster: &str,
        name: &str,
    ) -> Result<Option<Addon>, AwsError>;
}

/// EKS's cluster insights of a cluster.
#[async_trait]
pub trait ClusterInsights: Send + Sync {
    /// The cluster's insights, as ListInsights summarizes them (every category; at most
    /// [`MAX_INSIGHTS_READ`]).
    async fn insights(&self, region: &str, cluster: &str) -> Result<Vec<Insight>, AwsError>;
    /// An insight's recommendation (DescribeInsight).
    async fn recommendation(
        &self,
        region: &str,
        cluster: &str,
        insight_id: &str,
    ) -> Result<Option<String>, AwsError>;
}

/// What EKS knows of a cluster's health: its cluster insights and its add-ons (the cluster
/// readiness gate, `canary_core::cluster_readiness`).
pub trait ClusterHealth: AddonHealth + ClusterInsights {}

impl<T: AddonHealth + ClusterInsights> ClusterHealth for T {}

/// Each add-on the gate requires (the plan's, or every one the cluster has), as EKS reports it.
pub async fn read_addons(
    api: &dyn AddonHealth,
    region: &str,
    cluster: &str,
    gate: &ClusterReadinessGate,
) -> Result<Vec<(String, Option<Addon>)>, AwsError> {
    let names = match &gate.addons {
        Some(named) => named.clone(),
        None => api.addon_names(region, cluster).await?,
    };
    let mut addons = Vec::with_capacity(names.len());
    for name in names {
        let addon = api.addon(region, cluster, &name).await?;
        addons.push((name, addon));
    }
    Ok(addons)
}

/// The gate's look: the cluster's insights (with the recommendation of each that holds the
/// rollout, the first few) and the add-ons it requires.
pub async fn read_cluster_health(
    api: &dyn ClusterHealth,
    region: &str,
    cluster: &str,
    gate: &ClusterReadinessGate,
) -> Result<ClusterHealthReading, AwsError> {
    let mut insights = api.insights(region, cluster).await?;
    for insight in insights
        .iter_mut()
        .filter(|i| i.holds(gate))
        .take(MAX_INSIGHTS_DESCRIBED)
    {
        insight.recommendation = api.recommendation(region, cluster, &insight.id).await?;
    }
    let addons = read_addons(api, region, cluster, gate).await?;
    Ok(ClusterHealthReading { insights, addons })
}

/// Everything register-cluster asks of the new cluster's EKS.
pub trait ClusterEksApi: EksApi + AccessEntries + ClusterHealth {}

impl<T: EksApi + AccessEntries + ClusterHealth> ClusterEksApi for T {}

pub struct SdkEks {
    config: SdkConfig,
}

impl SdkEks {
    pub fn new(config: &SdkConfig) -> Self {
        SdkEks {
            config: config.clone(),
        }
    }

    /// A client for `region`. Building one makes no network call.
    fn client(&self, region: Option<&str>) -> eks::Client {
        let mut builder = eks::config::Builder::from(&self.config);
        if let Some(region) = region {
            builder = builder.region(eks::config::Region::new(region.to_owned()));
        }
        eks::Client::from_conf(builder.build())
    }
}

#[async_trait]
impl ClusterAccounts for SdkEks {
    async fn eks_as(&self, role_arn: &str, session_name: &str) -> Box<dyn ClusterEksApi> {
        let provider = AssumedRole::new(&self.config, role_arn, session_name);
        let config = self
            .config
            .to_builder()
            .credentials_provider(SharedCredentialsProvider::new(provider))
            .build();
        Box::new(SdkEks::new(&config))
    }
}

const NOT_FOUND: &str = "ResourceNotFoundException";
const IN_USE: &str = "ResourceInUseException";

/// An access-entry call whose refusal with error `code` means its work is already done (or
/// has nothing to do): `otherwise`; its success: `done` of the output; anything else: the
/// classified error.
fn done_unless<O, T, E, R>(
    result: Result<O, SdkError<E, R>>,
    operation: &'static str,
    code: &str,
    done: impl FnOnce(O) -> T,
    otherwise: T,
) -> Result<T, AwsError>
where
    E: ProvideErrorMetadata + std::error::Error + Send + Sync + 'static,
    R: std::fmt::Debug + HasStatus + 'static,
{
    match result {
        Ok(out) => Ok(done(out)),
        Err(e) if e.as_service_error().and_then(|s| s.code()) == Some(code) => Ok(otherwise),
        Err(e) => Err(AwsError::from_sdk(operation, e)),
    }
}

#[async_trait]
impl AccessEntries for SdkEks {
    async fn access_entry(
        &self,
        region: &str,
        cluster: &str,
        principal: &str,
    ) -> Result<Option<BTreeMap<String, String>>, AwsError> {
        let found = self
            .client(Some(region))
            .describe_access_entry()
            .cluster_name(cluster)
            .principal_arn(principal)
            .send()
            .await;
        let tags = |out: eks::operation::describe_access_entry::DescribeAccessEntryOutput| {
            out.access_entry()
                .and_then(|entry| entry.tags())
                .map(|tags| tags.iter().map(|(k, v)| (k.clone(), v.clone())).collect())
                .unwrap_or_default()
        };
        done_unless(
            found,
            "DescribeAccessEntry",
            NOT_FOUND,
            |out| Some(tags(out)),
            None,
        )
    }

    async fn create_access_entry(
        &self,
        region: &str,
        cluster: &str,
        principal: &str,
        tags: &BTreeMap<String, String>,
    ) -> Result<bool, AwsError> {
        let tags: HashMap<String, String> = tags.clone().into_iter().collect();
        let created = self
            .client(Some(region))
            .create_access_entry()
            .cluster_name(cluster)
            .principal_arn(principal)
            .set_tags(Some(tags))
            .send()
            .await;
        done_unless(created, "CreateAccessEntry", IN_USE, |_| true, false)
    }

    async fn associate_access_policy(
        &self,
        region: &str,
        cluster: &str,
        principal: &str,
        policy_arn: &str,
    ) -> Result<(), AwsError> {
        let scope = eks::types::AccessScope::builder()
            .r#type(eks::types::AccessScopeType::Cluster)
            .build();
        self.client(Some(region))
            .associate_access_policy()
            .cluster_name(cluster)
            .principal_arn(principal)
            .policy_arn(policy_arn)
            .access_scope(scope)
            .send()
            .await
            .map(drop)
            .map_err(|e| AwsError::from_sdk("AssociateAccessPolicy", e))
    }

    async fn delete_access_entry(
        &self,
        region: &str,
        cluster: &str,
        principal: &str,
    ) -> Result<bool, AwsError> {
        let deleted = self
            .client(Some(region))
            .delete_access_entry()
            .cluster_name(cluster)
            .principal_arn(principal)
            .send()
            .await;
        done_unless(deleted, "DeleteAccessEntry", NOT_FOUND, |_| true, false)
    }
}

#[async_trait]
impl EksApi for SdkEks {
    async fn describe_cluster(
        &self,
        region: Option<&str>,
        name: &str,
    ) -> Result<ClusterInfo, AwsError> {
        let out = self
            .client(region)
            .describe_cluster()
            .name(name)
            .send()
            .await
            .map_err(|e| match e.as_service_error() {
                Some(service) if service.is_resource_not_found_exception() => AwsError::new(
                    AwsErrorKind::NotFound,
                    "DescribeCluster",
                    format!("no EKS cluster named {name}"),
                ),
                _ => AwsError::from_sdk("DescribeCluster", e),
            })?;
        let cluster = out.cluster().ok_or_else(|| {
            AwsError::new(
                AwsErrorKind::NotFound,
                "DescribeCluster",
                format!("no EKS cluster named {name}"),
            )
        })?;
        Ok(ClusterInfo {
            name: cluster.name().unwrap_or(name).to_owned(),
            arn: cluster.arn().unwrap_or_default().to_owned(),
            status: cluster
                .status()
                .map(|s| s.as_str().to_owned())
                .unwrap_or_default(),
            endpoint: cluster.endpoint().map(str::to_owned),
            ca_data: cluster
                .certificate_authority()
                .and_then(|ca| ca.data())
                .map(str::to_owned),
        })
    }
}

/// EKS's answer for a cluster, insight or add-on that does not exist, as `NotFound`.
fn not_found_or<E, R>(operation: &'static str, what: String, e: SdkError<E, R>) -> AwsError
where
    E: ProvideErrorMetadata + std::error::Error + Send + Sync + 'static,
    R: std::fmt::Debug + HasStatus + 'static,
{
    if e.as_service_error().and_then(|s| s.code()) == Some(NOT_FOUND) {
        AwsError::new(AwsErrorKind::NotFound, operation, what)
    } else {
        AwsError::from_sdk(operation, e)
    }
}

#[async_trait]
impl ClusterInsights for SdkEks {
    async fn insights(&self, region: &str, cluster: &str) -> Result<Vec<Insight>, AwsError> {
        let client = self.client(Some(region));
        let mut found = Vec::new();
        let mut token = None;
        loop {
            let page = client
                .list_insights()
                .cluster_name(cluster)
                .set_next_token(token)
                .send()
                .await
                .map_err(|e| {
                    not_found_or("ListInsights", format!("no EKS cluster named {cluster}"), e)
                })?;
            found.extend(page.insights().iter().map(|i| {
                Insight {
                    id: i.id().unwrap_or_default().to_owned(),
                    name: i.name().unwrap_or_default().to_owned(),
                    category: i
                        .category()
                        .map(|c| c.as_str().to_owned())
                        .unwrap_or_default(),
                    status: i
                        .insight_status()
                        .and_then(|s| s.status())
                        .map(|s| s.as_str().to_owned())
                        .unwrap_or_else(|| "UNKNOWN".to_owned()),
                    reason: i
                        .insight_status()
                        .and_then(|s| s.reason())
                        .map(str::to_owned),
                    recommendation: None,
                }
            }));
            token = page.next_token().map(str::to_owned);
            if token.is_none() || found.len() >= MAX_INSIGHTS_READ {
                found.truncate(MAX_INSIGHTS_READ);
                return Ok(found);
            }
        }
    }

    async fn recommendation(
        &self,
        region: &str,
        cluster: &str,
        insight_id: &str,
    ) -> Result<Option<String>, AwsError> {
        let out = self
            .client(Some(region))
            .describe_insight()
            .cluster_name(cluster)
            .id(insight_id)
            .send()
            .await
            .map_err(|e| {
                not_found_or(
                    "DescribeInsight",
                    format!("no insight {insight_id} of EKS cluster {cluster}"),
                    e,
                )
            })?;
        Ok(out
            .insight()
            .and_then(|i| i.recommendation())
            .filter(|r| !r.is_empty())
            .map(str::to_owned))
    }
}

#[async_trait]
impl AddonHealth for SdkEks {
    async fn addon_names(&self, region: &str, cluster: &str) -> Result<Vec<String>, AwsError> {
        let client = self.client(Some(region));
        let mut names = Vec::new();
        let mut token = None;
        loop {
            let page = client
                .list_addons()
                .cluster_name(cluster)
                .set_next_token(token)
                .send()
                .await
                .map_err(|e| {
                    not_found_or("ListAddons", format!("no EKS cluster named {cluster}"), e)
                })?;
            names.extend(page.addons().iter().cloned());
            token = page.next_token().map(str::to_owned);
            if token.is_none() || names.len() >= MAX_ADDONS_READ {
                names.truncate(MAX_ADDONS_READ);
                return Ok(names);
            }
        }
    }

    async fn addon(
        &self,
        region: &str,
        cluster: &str,
        name: &str,
    ) -> Result<Option<Addon>, AwsError> {
        let out = match self
            .client(Some(region))
            .describe_addon()
            .cluster_name(cluster)
            .addon_name(name)
            .send()
            .await
        {
            Ok(out) => out,
            // EKS names no add-on in the code, only in the text: a cluster that does not exist
            // is the same error (its name was read just before, by the gate's describe).
            Err(e) if e.as_service_error().and_then(|s| s.code()) == Some(NOT_FOUND) => {
                return Ok(None)
            }
            Err(e) => return Err(AwsError::from_sdk("DescribeAddon", e)),
        };
        Ok(out.addon().map(|a| Addon {
            name: a.addon_name().unwrap_or(name).to_owned(),
            status: a
                .status()
                .map(|s| s.as_str().to_owned())
                .unwrap_or_default(),
            issues: a
                .health()
                .map(|h| h.issues())
                .unwrap_or_default()
                .iter()
                .map(|issue| AddonIssue {
                    code: issue
                        .code()
                        .map(|c| c.as_str().to_owned())
                        .unwrap_or_default(),
                    message: issue.message().map(str::to_owned),
                    resource_ids: issue.resource_ids().to_vec(),
                })
                .collect(),
        }))
    }
}
