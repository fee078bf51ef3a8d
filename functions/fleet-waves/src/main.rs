//! Lambda entry point: read the configuration and build the AWS clients once (no network
//! call), then serve the fleet state machine's steps.

use canary_aws::load_sdk_config;
use canary_lambda::{logging, serve};
use fleet_waves::{handle, FleetConfig, SdkFleetApis};

#[tokio::main]
async fn main() -> Result<(), lambda_runtime::Error> {
    logging::init();
    let config = FleetConfig::from_env(|name| std::env::var(name).ok())?;
    let apis = SdkFleetApis::new(&load_sdk_config());
    serve(|input| handle(&apis, &config, input)).await
}
