//! Lambda entry point: build the clients once (no network call), then serve invocations.

use canary_aws::{load_sdk_config, SdkEvents, SdkExecutions};
use canary_lambda::{logging, serve};
use canary_rollout::clients::{process_env, TrafficClients};
use canary_rollout::sweep::SweepApis;
use shift_weights::handle;

#[tokio::main]
async fn main() -> Result<(), lambda_runtime::Error> {
    logging::init();
    let config = load_sdk_config();
    let clients = TrafficClients::from_config(&config, &process_env)?;
    let apis = clients.apis();
    let (executions, events) = (SdkExecutions::new(&config), SdkEvents::new(&config));
    let sweeping = SweepApis {
        ended: &executions,
        events: &events,
        rules: &events,
    };
    serve(|input| handle(&apis, &sweeping, input)).await
}
