//! The `shift-weights` Lambda: prepare / set / verify / restore the traffic weights of a
//! rollout, the target health gate, detaching the old cluster after promotion, and the safety net for executions that ended without their own rollback.
//! `main.rs` only wires the AWS clients; everything here runs against the traits in
//! `canary-aws`, so it is tested with fakes and, over the wire, against the emulator.

pub mod error;
pub mod metrics;
pub mod prepare;
pub mod request;
pub mod restore;
pub mod retire;
pub mod safety_net;
pub mod set;
pub mod target_health;
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
            cause,
            failed_at,
        } => {
            let why = restore::Rollback {
                cause: cause.unwrap_or_else(|| "Restore".to_owned()),
                failed_at,
            };
            to_json(restore::restore(apis, plan, &baseline, expected.as_deref(), &why).await?)
        }
        Request::Detach { plan, expected } => to_json(retire::detach(apis, plan, &expected).await?),
        Request::TargetHealth { plan } => to_json(target_health::target_health(apis, plan).await?),
        Request::Verify { plan, expected } => to_json(set::verify(apis, plan, &expected).await?),
        Request::SafetyNet {
            execution_arn,
            status,
        } => to_json(safety_net::safety_net(apis, &execution_arn, status.as_deref()).await?),
    }
}

fn to_json(output: impl Serialize) -> Result<Value, ShiftError> {
    serde_json::to_value(output)
        .map_err(|e| ShiftError::InvalidInput(format!("output not serializable: {e}")))
}
