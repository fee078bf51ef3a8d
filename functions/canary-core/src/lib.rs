//! The pure core of cluster-canary: the rollout plan and its validation, the weight
//! arithmetic, traffic-target identities, the shape of the execution state and the stable
//! error names the state machine retries and catches on. Nothing here talks to AWS or
//! Kubernetes.
//!
//! Modules depend downward only: `limits` and `validate` are leaves; each plan section
//! (`targets`, `analysis`, `argocd`, `approval`, `hooks`, `target_health`) uses them; `plan`
//! puts the sections together; `profile` and `schema` build on `plan`.

pub mod alarm_watch;
pub mod analysis;
pub mod approval;
pub mod argocd;
pub mod arn;
pub mod cluster;
pub mod cluster_readiness;
pub mod error_budget;
pub mod error_name;
pub mod fleet;
pub mod freeze;
pub mod gate_timing;
pub mod health;
pub mod hooks;
pub mod input;
pub mod limits;
pub mod metrics;
pub mod ownership;
pub mod plan;
pub mod profile;
pub mod schema;
pub mod state;
pub mod target_health;
pub mod targets;
pub mod test_traffic;
pub mod validate;
pub mod weights;

pub use error_name::{ErrorName, NamedError};
pub use plan::{ResolvedStep, RolloutPlan};
pub use targets::{
    AcceleratorShift, AlbTarget, ForwardTarget, GlobalAcceleratorTarget, NlbTarget, Route53Target,
    TargetKind, TrafficTarget, VpcLatticeTarget,
};
pub use validate::{PlanError, PlanErrors};
pub use weights::{TargetWeights, WeightPair};
