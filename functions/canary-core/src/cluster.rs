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
}
