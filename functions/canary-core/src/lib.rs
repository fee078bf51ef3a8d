//! The pure core of cluster-canary: the rollout plan and its validation, the weight
//! arithmetic, traffic-target identities and the stable error names the state machine
//! retries and catches on. Nothing here talks to AWS.

pub mod analysis;
pub mod appsets;
pub mod argocd;
pub mod arn;
pub mod error_name;
pub mod gates;
pub mod input;
pub mod limits;
pub mod metrics;
pub mod plan;
pub mod profile;
pub mod schema;
pub mod weights;

pub use error_name::{ErrorName, NamedError};
pub use plan::{
    AlbTarget, PlanError, PlanErrors, ResolvedStep, RolloutPlan, Route53Target, TrafficTarget,
};
pub use weights::{TargetWeights, WeightPair};
