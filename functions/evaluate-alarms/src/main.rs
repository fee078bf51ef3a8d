//! Lambda entry point: build the CloudWatch client once (no network call), then serve.

use canary_aws::{lambda, load_sdk_config, logging, SdkCloudWatch};
use evaluate_alarms::handle;

#[tokio::main]
async fn main() -> Result<(), lambda_runtime::Error> {
    logging::init();
    let cloudwatch = SdkCloudWatch::new(&load_sdk_config().await);
    lambda::serve(|input| handle(&cloudwatch, input)).await
}
