//! Restoring the baseline of an execution that was stopped by hand or timed out. Step
//! Functions runs no Catch for those, so an EventBridge rule on the state machine's
//! "Execution Status Change" (ABORTED, TIMED_OUT) invokes this instead. Everything it needs
//! is in the execution itself: the plan is its input, the baseline is what the
//! `PrepareTraffic` state left, the last weights are what the last `SetWeights` state left.

use canary_core::TargetWeights;
use serde_json::Value;
use tracing::{info, warn};

use crate::error::ShiftError;
use crate::request::RestoreAbortedOutput;
use crate::restore::restore;
use crate::traffic::Apis;

/// State names and result paths of `statemachine/rollout.asl.json` this relies on; a test
/// checks the definition still has them.
pub const PREPARE_STATE: &str = "PrepareTraffic";
pub const BASELINE_POINTER: &str = "/prepared/baseline";
pub const SET_STATE: &str = "SetWeights";
pub const LAST_SET_POINTER: &str = "/lastSet/weights";

fn weights_at(output: Option<&str>, pointer: &str) -> Option<Vec<TargetWeights>> {
    let output: Value = serde_json::from_str(output?).ok()?;
    serde_json::from_value(output.pointer(pointer)?.clone()).ok()
}

pub async fn restore_aborted(
    apis: &Apis<'_>,
    execution_arn: &str,
    status: Option<&str>,
) -> Result<RestoreAbortedOutput, ShiftError> {
    let aws = |e| ShiftError::aws("executionArn", e);
    let plan = apis
        .executions
        .execution_input(execution_arn)
        .await
        .map_err(aws)?;
    let exits = apis
        .executions
        .state_exits(execution_arn)
        .await
        .map_err(aws)?;
    let baseline = exits
        .iter()
        .filter(|e| e.name == PREPARE_STATE)
        .find_map(|e| weights_at(e.output.as_deref(), BASELINE_POINTER));
    let Some(baseline) = baseline else {
        info!(
            execution_arn,
            ?status,
            "stopped before Prepare ended: no traffic had moved"
        );
        return Ok(RestoreAbortedOutput {
            execution_arn: execution_arn.to_owned(),
            restored: false,
            reason: "the execution ended before Prepare finished: no traffic had moved".to_owned(),
            restore: None,
        });
    };
    let expected = exits
        .iter()
        .rev()
        .filter(|e| e.name == SET_STATE)
        .find_map(|e| weights_at(e.output.as_deref(), LAST_SET_POINTER));
    let plan: Value = plan
        .as_deref()
        .and_then(|text| serde_json::from_str(text).ok())
        .ok_or_else(|| {
            ShiftError::InvalidInput(format!(
                "execution {execution_arn} has no JSON input (plan)"
            ))
        })?;
    warn!(
        execution_arn,
        ?status,
        "restoring the baseline of an execution that ended without its own rollback"
    );
    let restored = restore(apis, plan, &baseline, expected.as_deref()).await?;
    Ok(RestoreAbortedOutput {
        execution_arn: execution_arn.to_owned(),
        restored: true,
        reason: format!(
            "execution ended {}: traffic restored to the baseline",
            status.unwrap_or("without its own rollback")
        ),
        restore: Some(restored),
    })
}
