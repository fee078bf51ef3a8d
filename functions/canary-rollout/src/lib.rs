//! The rollout's logic, whatever runs it (the Lambda functions, the operator CLI):
//! - traffic: one [`traffic::TrafficRouter`] per kind of traffic target, and the operations
//!   written once over it: [`prepare`], [`set`] (set and verify, compare-and-set),
//!   [`restore`], a gradual rollback's [`step_back`], [`retire`] (detach), [`target_health`],
//!   the [`safety_net`] and its [`sweep`];
//! - signals: one [`signals::SignalSource`] per provider, and the checks over them
//!   ([`analysis`]: validate at Prepare, evaluate at every check); the plan's [`hooks`];
//!   the [`alarm_watch`] that fails a bake the moment a watched alarm fires.
//!
//! Everything runs against the traits of `canary-aws`, so it is tested with fakes and, over
//! the wire, against the emulator. No Lambda runtime here: see `canary-lambda`.

pub mod alarm_watch;
pub mod analysis;
pub mod clients;
pub mod error;
pub mod hooks;
pub mod metrics;
pub mod outputs;
pub mod prepare;
pub mod restore;
pub mod retire;
pub mod safety_net;
pub mod set;
pub mod signals;
pub mod step_back;
pub mod sweep;
pub mod target_health;
pub mod test_traffic;
pub mod traffic;

pub use error::{AnalysisError, ShiftError};
pub use traffic::Apis;
