//! Lambda entry point: build the clients once (no network call), then serve.

use canary_aws::{load_sdk_config, SdkCloudWatch, SdkFunctions};
use canary_lambda::{logging, serve};
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
    serve(|input| handle(&apis, input)).await
}
