//! Lambda entry point: read the configuration and build the AWS clients once (no network
//! call), then serve EventBridge events.

use aws_config::Region;
use canary_aws::{lambda, load_sdk_config, logging, SdkEks, SdkExecutions, SdkSecrets};
use canary_kube::{AccessDeps, ManagementAccess};
use cluster_created::{handle, Deps, IntakeConfig};

#[tokio::main]
async fn main() -> Result<(), lambda_runtime::Error> {
    logging::init();
    let env = |name: &str| std::env::var(name).ok();
    let config = IntakeConfig::from_env(env)?;
    let access = ManagementAccess::from_env(env)?;
    let sdk = load_sdk_config().await;
    let region = sdk.region().map(Region::to_string).unwrap_or_default();
    let credentials = sdk
        .credentials_provider()
        .ok_or("no AWS credentials provider configured")?;
    let (executions, eks, secrets) = (
        SdkExecutions::new(&sdk),
        SdkEks::new(&sdk),
        SdkSecrets::new(&sdk),
    );
    let deps = Deps {
        executions: &executions,
        access: &access,
        aws: AccessDeps {
            eks: &eks,
            secrets: &secrets,
            credentials: &credentials,
            region: &region,
        },
    };
    lambda::serve(|event| handle(&deps, &config, event)).await
}
