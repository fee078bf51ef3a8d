//! Lambda entry point: build the clients once (no network call), then serve invocations.

use canary_aws::route53::InSyncWait;
use canary_aws::{load_sdk_config, SdkAlb, SdkExecutions, SdkRoute53};
use canary_kube::{ArgoCdConnect, Management, ManagementAccess, SdkAccess};
use canary_lambda::{logging, serve};
use shift_weights::{handle, Apis};

#[tokio::main]
async fn main() -> Result<(), lambda_runtime::Error> {
    logging::init();
    // The management cluster, for GitOps targets (`"via": "argocd"`); without
    // MANAGEMENT_ACCESS such a target is refused with a message saying so.
    let access = match std::env::var("MANAGEMENT_ACCESS") {
        Ok(_) => Some(ManagementAccess::from_env(|name| std::env::var(name).ok())?),
        Err(_) => None,
    };
    let config = load_sdk_config();
    let (alb, route53, executions) = (
        SdkAlb::new(&config),
        SdkRoute53::new(&config, InSyncWait::default()),
        SdkExecutions::new(&config),
    );
    let aws = SdkAccess::new(&config)?;
    let argocd = access.as_ref().map(|access| Management {
        access,
        aws: aws.deps(),
    });
    let apis = Apis {
        alb: &alb,
        route53: &route53,
        executions: &executions,
        argocd: argocd.as_ref().map(|m| m as &dyn ArgoCdConnect),
    };
    serve(|input| handle(&apis, input)).await
}
