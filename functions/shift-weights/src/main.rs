//! Lambda entry point: build the clients once (no network call), then serve invocations.

use canary_aws::route53::InSyncWait;
use canary_aws::{load_sdk_config, SdkAlb, SdkExecutions, SdkRoute53};
use canary_lambda::{logging, serve};
use shift_weights::{handle, Apis};

#[tokio::main]
async fn main() -> Result<(), lambda_runtime::Error> {
    logging::init();
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
    serve(|input| handle(&apis, input)).await
}
