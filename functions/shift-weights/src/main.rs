//! Lambda entry point: build the clients once (no network call), then serve invocations.

use canary_aws::load_sdk_config;
use canary_lambda::{logging, serve};
use canary_rollout::clients::{process_env, TrafficClients};
use shift_weights::handle;

#[tokio::main]
async fn main() -> Result<(), lambda_runtime::Error> {
    logging::init();
    let clients = TrafficClients::from_config(&load_sdk_config(), &process_env)?;
    let apis = clients.apis();
    serve(|input| handle(&apis, input)).await
}
