//! Lambda entry point: read the configuration and build the AWS clients once (no network
//! call), then serve EventBridge events.

use canary_aws::{load_sdk_config, SdkDeliveryLedger, SdkEvents, SdkExecutions, SdkFleetPlans};
use canary_kube::{ManagementAccess, SdkAccess};
use canary_lambda::{logging, serve};
use cluster_created::{handle, Deps, IntakeConfig};

#[tokio::main]
async fn main() -> Result<(), lambda_runtime::Error> {
    logging::init();
    let env = |name: &str| std::env::var(name).ok();
    let config = IntakeConfig::from_env(env)?;
    let access = ManagementAccess::from_env(env)?;
    let sdk = load_sdk_config();
    let (executions, aws) = (SdkExecutions::new(&sdk), SdkAccess::new(&sdk)?);
    let events = SdkEvents::new(&sdk);
    let plans = SdkFleetPlans::new(&sdk);
    let deliveries = SdkDeliveryLedger::new(&sdk, &config.deliveries_bucket);
    let deps = Deps {
        executions: &executions,
        fleets: &executions,
        plans: &plans,
        access: &access,
        aws: aws.deps(),
        events: &events,
        deliveries: &deliveries,
    };
    serve(|event| handle(&deps, &config, event)).await
}
