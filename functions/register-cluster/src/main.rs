//! Lambda entry point: read the management-cluster access mode and build the AWS clients
//! once (no network call), then serve invocations.

use aws_config::Region;
use canary_aws::{lambda, load_sdk_config, logging, SdkEks, SdkSecrets};
use canary_kube::{AccessDeps, ManagementAccess};
use register_cluster::{handle, Deps};

#[tokio::main]
async fn main() -> Result<(), lambda_runtime::Error> {
    logging::init();
    let access = ManagementAccess::from_env(|name| std::env::var(name).ok())?;
    let config = load_sdk_config().await;
    let region = config.region().map(Region::to_string).unwrap_or_default();
    let credentials = config
        .credentials_provider()
        .ok_or("no AWS credentials provider configured")?;
    let (eks, secrets) = (SdkEks::new(&config), SdkSecrets::new(&config));
    let deps = Deps {
        access: &access,
        aws: AccessDeps {
            eks: &eks,
            secrets: &secrets,
            credentials: &credentials,
            region: &region,
        },
    };
    lambda::serve(|input| handle(&deps, input)).await
}
