//! Lambda entry point: build the clients once (no network call), then serve invocations.

use canary_aws::route53::InSyncWait;
use canary_aws::{load_sdk_config, SdkAlb, SdkExecutions, SdkRoute53};
use lambda_runtime::{service_fn, Diagnostic, LambdaEvent};
use serde_json::Value;
use shift_weights::{handle, Apis};

#[tokio::main]
async fn main() -> Result<(), lambda_runtime::Error> {
    canary_aws::logging::init();
    let config = load_sdk_config().await;
    let (alb, route53, executions) = (
        SdkAlb::new(&config),
        SdkRoute53::new(&config, InSyncWait::default()),
        SdkExecutions::new(&config),
    );
    let apis = Apis {
        alb: &alb,
        route53: &route53,
        executions: &executions,
    };
    let apis = &apis;
    lambda_runtime::run(service_fn(move |event: LambdaEvent<Value>| async move {
        handle(apis, event.payload).await.map_err(|e| {
            tracing::error!(error_name = e.name().as_str(), error = %e, "invocation failed");
            Diagnostic::from(e)
        })
    }))
    .await
}
