use aws_config::retry::RetryConfig;
use aws_config::{BehaviorVersion, ConfigLoader, SdkConfig};
use aws_smithy_http_client::tls::{rustls_provider::CryptoMode, Provider};
use aws_smithy_http_client::Builder as HttpClientBuilder;

/// Attempts per AWS call, the first included. The SDK's standard retry strategy retries
/// throttling (`Throttling`, Route 53's `PriorRequestNotComplete`, ...), transient errors and
/// 5xx with exponential backoff and full jitter; we only raise the attempt count because a
/// rollout step that gives up on a throttle costs a Step Functions retry or a rollback.
const MAX_ATTEMPTS: u32 = 5;

/// The shared SDK configuration: region and credentials from the environment (Lambda's role),
/// `AWS_ENDPOINT_URL` honoured (tests point it at the emulator). Makes no network call.
pub async fn load_sdk_config() -> SdkConfig {
    sdk_config_loader().load().await
}

/// The loader behind [`load_sdk_config`], for callers (tests) that set endpoint and
/// credentials explicitly instead of through the environment.
pub fn sdk_config_loader() -> ConfigLoader {
    // rustls on ring rather than the SDK's default aws-lc-rs: the same TLS as the SDK's default
    // client (hyper 1, rustls 0.23, the system roots), the crypto provider kube uses too, and
    // about 1 MB less per zipped function (docs/size-and-startup.md).
    let https = HttpClientBuilder::new()
        .tls_provider(Provider::Rustls(CryptoMode::Ring))
        .build_https();
    aws_config::defaults(BehaviorVersion::latest())
        .http_client(https)
        .retry_config(RetryConfig::standard().with_max_attempts(MAX_ATTEMPTS))
}
