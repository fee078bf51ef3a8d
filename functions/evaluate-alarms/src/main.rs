//! Lambda entry point: build the clients once (no network call), then serve.

use canary_aws::read_only::{NoExecutions, ReadOnlyAlb, ReadOnlyRoute53};
use canary_aws::route53::InSyncWait;
use canary_aws::{
    load_sdk_config, AlarmWatchStore, HttpDatadog, HttpPrometheus, SdkAlarmWatches, SdkAlb,
    SdkCloudWatch, SdkExecutions, SdkFunctions, SdkRoute53,
};
use canary_lambda::{logging, serve};
use evaluate_alarms::{handle, Apis, TrafficApis};

#[tokio::main]
async fn main() -> Result<(), lambda_runtime::Error> {
    logging::init();
    let config = load_sdk_config();
    let (cloudwatch, functions) = (SdkCloudWatch::new(&config), SdkFunctions::new(&config));
    let watches = std::env::var("ALARM_WATCH_TABLE")
        .ok()
        .map(|table| SdkAlarmWatches::new(&config, table));
    let executions = SdkExecutions::new(&config);
    let prometheus = HttpPrometheus::new(&config);
    let datadog = HttpDatadog::from_env(&config);
    // Reads only: see canary_aws::read_only for why the clients are wrapped.
    let (alb, route53) = (
        ReadOnlyAlb(SdkAlb::new(&config)),
        ReadOnlyRoute53(SdkRoute53::new(&config, InSyncWait::default())),
    );
    let apis = Apis {
        traffic: TrafficApis {
            alb: &alb,
            route53: &route53,
            executions: &NoExecutions,
            argocd: None,
        },
        cloudwatch: &cloudwatch,
        prometheus: &prometheus,
        datadog: &datadog,
        functions: &functions,
        watches: watches.as_ref().map(|w| w as &dyn AlarmWatchStore),
        tasks: &executions,
    };
    serve(|input| handle(&apis, input)).await
}
