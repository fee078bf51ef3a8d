//! Lambda entry point: build the clients once (no network call), then serve.

use canary_aws::{lambda, load_sdk_config, logging, SdkCloudWatch, SdkFunctions};
use evaluate_alarms::{handle, Apis};

#[tokio::main]
async fn main() -> Result<(), lambda_runtime::Error> {
    logging::init();
    let config = load_sdk_config().await;
    let (cloudwatch, functions) = (SdkCloudWatch::new(&config), SdkFunctions::new(&config));
    let apis = Apis {
        cloudwatch: &cloudwatch,
        functions: &functions,
    };
    lambda::serve(|input| handle(&apis, input)).await
}
