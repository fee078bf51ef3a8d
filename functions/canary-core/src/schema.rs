//! The JSON Schema of the rollout plan, generated from the Rust types. The checked-in copy at
//! `schema/rollout-plan.schema.json` is kept equal to this by a test; regenerate it with
//! `UPDATE_SCHEMA=1 cargo test -p canary-core --test schema`.

use crate::plan::RolloutPlan;

pub fn rollout_plan_schema() -> serde_json::Value {
    let mut schema = schemars::schema_for!(RolloutPlan).to_value();
    if let Some(object) = schema.as_object_mut() {
        object.insert(
            "$id".to_owned(),
            "https://cluster-canary.dev/schema/rollout-plan.schema.json".into(),
        );
    }
    schema
}

/// The JSON Schema of the fleet plan (`schema/fleet-plan.schema.json`, kept equal by the same
/// test).
pub fn fleet_plan_schema() -> serde_json::Value {
    let mut schema = schemars::schema_for!(crate::fleet::FleetPlan).to_value();
    if let Some(object) = schema.as_object_mut() {
        object.insert(
            "$id".to_owned(),
            "https://cluster-canary.dev/schema/fleet-plan.schema.json".into(),
        );
    }
    schema
}

/// What the Python sandbox and end-to-end tests share with the Rust code: the limits, the
/// state names and paths read from an execution (see [`crate::state`]), the metric names and
/// the error names. The checked-in copy at `schema/contract.json` is kept equal to this by a
/// test (regenerate as above); the Python side reads it instead of parsing Rust source.
pub fn contract() -> serde_json::Value {
    use strum::VariantArray;

    use crate::limits::*;
    use crate::state;

    serde_json::json!({
        "limits": {
            "stateBudgetBytes": STATE_BUDGET_BYTES,
            "maxPlanBytes": MAX_PLAN_BYTES,
            "maxAlarms": MAX_ALARMS,
            "maxSteps": MAX_STEPS,
            "maxTargets": MAX_TARGETS,
            "maxTotalChecks": MAX_TOTAL_CHECKS,
            "maxReasonBytes": MAX_REASON_BYTES,
            "maxSummaryBytes": MAX_SUMMARY_BYTES,
            "maxErrorMessageBytes": MAX_ERROR_MESSAGE_BYTES,
            "maxCauseBytes": MAX_CAUSE_BYTES,
            "maxExecutionSeconds": max_execution_seconds(),
        },
        "states": {
            "prepare": state::PREPARE_STATE,
            "setWeights": state::SET_STATE,
            "baselinePointer": state::BASELINE_POINTER,
            "lastSetPointer": state::LAST_SET_POINTER,
            "settledEnds": state::SETTLED_ENDS.iter().map(|(name, _)| *name).collect::<Vec<_>>(),
            "foreignEnds": state::FOREIGN_ENDS.iter().map(|(name, _)| *name).collect::<Vec<_>>(),
        },
        "metrics": {
            "namespace": crate::metrics::NAMESPACE,
            "names": crate::metrics::Metric::VARIANTS.iter().map(|m| m.name()).collect::<Vec<_>>(),
        },
        "errorNames": crate::ErrorName::VARIANTS.iter().map(|n| n.as_str()).collect::<Vec<_>>(),
    })
}

/// `docs/errors.md`: every error name, whether the state machine retries it, and what it
/// means (its doc comment). Kept current by a test (regenerate as above).
pub fn errors_page() -> String {
    use strum::VariantArray;

    let mut page = String::from(
        "# Errors\n\n\
         Every failure a cluster-canary function reports carries one of these names as its Lambda \
         `errorType`; the state machine's `Retry` and `Catch` match on them, and an execution's \
         `failure.Error` is one of them (or a `States.*` error of Step Functions itself). \
         Renaming one breaks deployed state machines.\n\n\
         Generated from `ErrorName` in `functions/canary-core/src/error_name.rs`; do not edit by \
         hand (`UPDATE_SCHEMA=1 cargo test -p canary-core --test schema`).\n\n\
         | name | retried | meaning |\n|---|---|---|\n",
    );
    for name in crate::ErrorName::VARIANTS {
        let meaning = name
            .meaning()
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ");
        let retried = if name.is_retryable() { "yes" } else { "no" };
        page.push_str(&format!("| `{name}` | {retried} | {meaning} |\n"));
    }
    page.push_str(PLATFORM_ERRORS);
    page
}

/// The names an execution can fail with that are not cluster-canary's own: Lambda's and Step
/// Functions'. Each task catches them as it catches the product's, so a rollout still rolls
/// back; the name says where to look.
const PLATFORM_ERRORS: &str = "\n## Errors of the platform\n\n\
    An execution can also end with an error that Lambda or Step Functions names. Every task \
    catches these as it catches the names above (a rollout rolls back first); they say where \
    to look.\n\n\
    | name | retried | meaning |\n|---|---|---|\n\
    | `Lambda.ServiceException`, `Lambda.AWSLambdaException`, `Lambda.SdkClientException`, \
    `Lambda.TooManyRequestsException` | yes | Lambda itself failed, throttled, or gave no \
    answer: tried again (6 times at most tasks; the restores keep trying), then caught. |\n\
    | `Sandbox.Timedout` | no | The function ran past its Lambda timeout (template.yaml): \
    its log says what it waited for. |\n\
    | `Lambda.Unknown` | no | The function's runtime crashed (out of memory, say): its log \
    says why. |\n\
    | `States.Timeout` | no | The execution ran past its `TimeoutSeconds` (the rollout's \
    own bound): it ran no rollback of its own; the safety net restores the baseline. |\n\
    | `States.Runtime`, `States.DataLimitExceeded` | no | Step Functions could not go on (a \
    path missing, a state over 256 KiB): no Catch handles these, the execution ends at once, \
    and the safety net restores the baseline. |\n";
