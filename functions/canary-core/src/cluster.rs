//! Which cluster a rollout brings in: an account (by `roleArn`, or this one), a region and a
//! name. Below the plan and its sections, which all name it.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ClusterRef {
    /// EKS cluster name.
    pub name: String,
    /// AWS region of the cluster, e.g. `eu-west-1`.
    pub region: String,
    /// A cluster in another account: the role the functions assume there (session name: the
    /// execution's name) to describe it. Its trust policy must trust this stack's function
    /// roles; see infra/cluster-account.yaml.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub role_arn: Option<String>,
    /// The cluster may not exist yet when the rollout starts (a fleet's cells are often
    /// created after the fleet started; a fleet sets this on each cell): one EKS does not know
    /// is waited for as one still `CREATING` (40 looks, 30 s apart), instead of ending the
    /// rollout `ClusterNotFound` at once.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub wait_for_creation: bool,
}
