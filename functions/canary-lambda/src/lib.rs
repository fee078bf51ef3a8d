//! The Lambda side every function shares: serve invocations, and report a failure with its
//! stable error name as Lambda's `errorType` (the runtime's default is the Rust type name,
//! which a state machine's `ErrorEquals` cannot sensibly match); JSON logs (`logging`).
//! Only the functions' `main.rs` use this crate: the libraries and the operator CLI never
//! link the Lambda runtime.

pub mod logging;

use std::future::Future;

use canary_core::limits::{truncate, MAX_ERROR_MESSAGE_BYTES};
use canary_core::NamedError;
use lambda_runtime::{service_fn, Diagnostic, LambdaEvent};
use serde_json::Value;

/// The message is cut at [`MAX_ERROR_MESSAGE_BYTES`]: Step Functions puts it in the `Cause`
/// a `Catch` adds to the execution's state, which is capped (see `canary_core::limits`).
pub fn diagnostic(error: &impl NamedError) -> Diagnostic {
    Diagnostic {
        error_type: error.name().as_str().to_owned(),
        error_message: truncate(&error.to_string(), MAX_ERROR_MESSAGE_BYTES),
    }
}

/// Runs `handler` for every invocation until the runtime stops.
pub async fn serve<F, Fut, E>(handler: F) -> Result<(), lambda_runtime::Error>
where
    F: Fn(Value) -> Fut,
    Fut: Future<Output = Result<Value, E>>,
    E: NamedError,
{
    let handler = &handler;
    lambda_runtime::run(service_fn(move |event: LambdaEvent<Value>| async move {
        handler(event.payload).await.map_err(|e| {
            tracing::error!(error_name = e.name().as_str(), error = %e, "invocation failed");
            diagnostic(&e)
        })
    }))
    .await
}
