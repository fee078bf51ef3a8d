use aws_config::environment::EnvironmentVariableCredentialsProvider;
use aws_config::retry::RetryConfig;
use aws_config::{BehaviorVersion, ConfigLoader, Region, SdkConfig};
use aws_credential_types::provider::SharedCredentialsProvider;
use aws_smithy_async::rt::sleep::default_async_sleep;
use aws_smithy_async::time::SharedTimeSource;
use aws_smithy_http_client::tls::{rustls_provider::CryptoMode, Provider};
use aws_smithy_http_client::Builder as HttpClientBuilder;
use aws_smithy_runtime_api::client::http::SharedHttpClient;

/// Attempts per AWS call, the first included. The SDK's standard retry strategy retries
/// throttling (`Throttling`, Route 53's `PriorRequestNotComplete`, ...), transient errors and
/// 5xx with exponential backoff and full jitter; we only raise the attempt count because a
/// rollout step that gives up on a throttle costs a Step Functions retry or a rollback.
const MAX_ATTEMPTS: u32 = 5;

/// The functions' SDK configuration, from what Lambda puts in their environment: the region
/// (`AWS_REGION`), the role's credentials (`AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY`,
/// `AWS_SESSION_TOKEN`), and `AWS_ENDPOINT_URL` when set (the tests point it at the emulator).
/// Makes no network call.
///
/// Not aws-config's default loader: its credential and region chains (profiles, IMDS, ECS,
/// web identity), which a function never takes, were 0.2 MB of every package
/// (docs/size-and-startup.md). People's tools (the CLI) and tests use [`sdk_config_loader`].
pub fn load_sdk_config() -> SdkConfig {
    load_sdk_config_from(|name| std::env::var(name).ok())
}

fn load_sdk_config_from(env: impl Fn(&str) -> Option<String>) -> SdkConfig {
    let set = |name: &str| env(name).filter(|value| !value.is_empty());
    let mut config = SdkConfig::builder()
        .behavior_version(BehaviorVersion::latest())
        .credentials_provider(SharedCredentialsProvider::new(
            EnvironmentVariableCredentialsProvider::new(),
        ))
        .http_client(https())
        .retry_config(RetryConfig::standard().with_max_attempts(MAX_ATTEMPTS))
        .time_source(SharedTimeSource::default());
    config.set_sleep_impl(default_async_sleep());
    if let Some(region) = set("AWS_REGION").or_else(|| set("AWS_DEFAULT_REGION")) {
        config.set_region(Some(Region::new(region)));
    }
    if let Some(url) = set("AWS_ENDPOINT_URL") {
        config.set_endpoint_url(Some(url));
    }
    config.build()
}

/// aws-config's loader with the functions' HTTPS client and retries, for callers that need
/// its chains (a person's profiles and SSO in the CLI) or set endpoint and credentials
/// explicitly (tests).
pub fn sdk_config_loader() -> ConfigLoader {
    aws_config::defaults(BehaviorVersion::latest())
        .http_client(https())
        .retry_config(RetryConfig::standard().with_max_attempts(MAX_ATTEMPTS))
}

/// rustls on ring rather than the SDK's default aws-lc-rs: the same TLS as the SDK's default
/// client (hyper 1, rustls 0.23, the system roots), the crypto provider kube uses too, and
/// about 1 MB less per zipped function (docs/size-and-startup.md).
fn https() -> SharedHttpClient {
    HttpClientBuilder::new()
        .tls_provider(Provider::Rustls(CryptoMode::Ring))
        .build_https()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(pairs: &'static [(&str, &str)]) -> SdkConfig {
        load_sdk_config_from(|name| {
            pairs
                .iter()
                .find(|(key, _)| *key == name)
                .map(|(_, value)| (*value).to_owned())
        })
    }

    #[test]
    fn the_region_and_endpoint_come_from_the_environment() {
        let lambda = config(&[
            ("AWS_REGION", "eu-west-1"),
            ("AWS_DEFAULT_REGION", "us-east-1"),
        ]);
        assert_eq!(lambda.region().map(|r| r.as_ref()), Some("eu-west-1"));
        assert_eq!(lambda.endpoint_url(), None);
        assert!(lambda.credentials_provider().is_some());
        assert!(lambda.sleep_impl().is_some(), "retries need a sleep");

        let tests = config(&[
            ("AWS_REGION", ""),
            ("AWS_DEFAULT_REGION", "us-east-1"),
            ("AWS_ENDPOINT_URL", "http://127.0.0.1:5000"),
        ]);
        assert_eq!(tests.region().map(|r| r.as_ref()), Some("us-east-1"));
        assert_eq!(tests.endpoint_url(), Some("http://127.0.0.1:5000"));

        assert_eq!(config(&[]).region(), None);
    }
}
