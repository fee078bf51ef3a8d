//! The `shift-weights` Lambda: prepare / set / restore the traffic weights of a rollout.
//! `main.rs` only wires the AWS clients; everything here runs against the traits in
//! `canary-aws`, so it is tested with fakes and, over the wire, against the emulator.

pub mod error;
pub mod prepare;
pub mod request;
pub mod restore;
pub mod safety_net;
pub mod set;
pub mod traffic;

use serde::Serialize;
use serde_json::Value;

pub use error::ShiftError;
pub use request::Request;
pub use traffic::Apis;

/// Runs one invocation.
pub async fn handle(apis: &Apis<'_>, input: Value) -> Result<Value, ShiftError> {
    match Request::parse(input)? {
        Request::Prepare { plan, execution } => {
            to_json(prepare::prepare(apis, plan, &execution).await?)
        }
        Request::Set {
            plan,
            canary_weight,
            expected,
        } => to_json(set::set(apis, plan, canary_weight, &expected).await?),
        Request::Restore {
            plan,
            baseline,
            expected,
        } => to_json(restore::restore(apis, plan, &baseline, expected.as_deref()).await?),
        Request::RestoreAborted {
            execution_arn,
            status,
        } => to_json(safety_net::restore_aborted(apis, &execution_arn, status.as_deref()).await?),
    }
}

fn to_json(output: impl Serialize) -> Result<Value, ShiftError> {
    serde_json::to_value(output)
        .map_err(|e| ShiftError::InvalidInput(format!("output not serializable: {e}")))
}
