//! Invoking a team's own Lambda functions (the plan's `hooks`): one synchronous `Invoke`,
//! bounded in time, the answer kept as bytes for the caller to judge.

use std::time::Duration;

use async_trait::async_trait;
use aws_config::SdkConfig;
use aws_sdk_lambda as lambda;
use aws_smithy_runtime_api::client::result::SdkError;
use aws_smithy_types::timeout::TimeoutConfig;

use crate::error::AwsError;

/// How an invocation ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Invocation {
    /// The function returned this payload.
    Answered(Vec<u8>),
    /// The function raised (Lambda's `FunctionError`); the payload is its error document.
    Raised(Vec<u8>),
    /// No answer within the time allowed.
    TimedOut,
}

#[async_trait]
pub trait FunctionInvoker: Send + Sync {
    /// Invokes the function (`RequestResponse`) with `payload`, waiting at most `timeout`.
    async fn invoke(
        &self,
        function_arn: &str,
        payload: &[u8],
        timeout: Duration,
    ) -> Result<Invocation, AwsError>;
}

/// `FunctionInvoker` on the real Lambda client, in the function's own region.
pub struct SdkFunctions {
    config: SdkConfig,
}

impl SdkFunctions {
    pub fn new(config: &SdkConfig) -> Self {
        SdkFunctions {
            config: config.clone(),
        }
    }
}

#[async_trait]
impl FunctionInvoker for SdkFunctions {
    async fn invoke(
        &self,
        function_arn: &str,
        payload: &[u8],
        timeout: Duration,
    ) -> Result<Invocation, AwsError> {
        let mut builder = lambda::config::Builder::from(&self.config)
            .timeout_config(TimeoutConfig::builder().operation_timeout(timeout).build());
        // The region is the ARN's fourth field; the plan validated the ARN.
        if let Some(region) = function_arn.split(':').nth(3) {
            builder = builder.region(lambda::config::Region::new(region.to_owned()));
        }
        // A hook that does not answer in time fails; the SDK must not retry it.
        builder = builder.retry_config(aws_smithy_types::retry::RetryConfig::disabled());
        let client = lambda::Client::from_conf(builder.build());
        match client
            .invoke()
            .function_name(function_arn)
            .payload(aws_smithy_types::Blob::new(payload.to_vec()))
            .send()
            .await
        {
            Ok(out) => {
                let answer = out
                    .payload()
                    .map(|b| b.as_ref().to_vec())
                    .unwrap_or_default();
                Ok(match out.function_error() {
                    Some(_) => Invocation::Raised(answer),
                    None => Invocation::Answered(answer),
                })
            }
            Err(SdkError::TimeoutError(_)) => Ok(Invocation::TimedOut),
            Err(e) => Err(AwsError::from_sdk("Invoke", e)),
        }
    }
}
