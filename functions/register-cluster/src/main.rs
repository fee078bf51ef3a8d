//! Lambda entry point: read the management-cluster access mode and build the AWS clients
//! once (no network call), then serve invocations.

use canary_aws::{load_sdk_config, SdkEks};
use canary_kube::{ManagementAccess, SdkAccess};
use canary_lambda::{logging, serve};
use register_cluster::{handle, Deps};

#[tokio::main]
async fn main() -> Result<(), lambda_runtime::Error> {
    logging::init();
    let access = ManagementAccess::from_env(|name| std::env::var(name).ok())?;
    let config = load_sdk_config();
    let aws = SdkAccess::new(&config)?;
    let cluster_accounts = SdkEks::new(&config);
    let deps = Deps {
        access: &access,
        aws: aws.deps(),
        cluster_accounts: &cluster_accounts,
        access_entries: &cluster_accounts,
        cluster_health: &cluster_accounts,
    };
    serve(|input| handle(&deps, input)).await
}
