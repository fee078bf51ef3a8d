//! The Lambda side every function shares: serve invocations, and report a failure with its
//! stable error name as Lambda's `errorType` (the runtime's default is the Rust type name,
//! which a state machine's `ErrorEquals` cannot sensibly match).

use std::future::Future;

use canary_core::NamedError;
use lambda_runtime::{service_fn, Diagnostic, LambdaEvent};
use serde_json::Value;

pub fn diagnostic(error: &impl NamedError) -> Diagnostic {
    Diagnostic {
        error_type: error.name().as_str().to_owned(),
        error_message: error.to_string(),
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
