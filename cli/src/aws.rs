//! The CloudFormation call the CLI makes to find the stack's state machines and bucket (its
//! Step Functions calls go through `canary_aws::SdkExecutions`).

use aws_config::SdkConfig;
use aws_sdk_cloudformation as cloudformation;
use canary_aws::AwsError;

use crate::error::CliError;

/// The value of output `key` of CloudFormation stack `stack`. `instead` is how a person names
/// the value without the stack (`--state-machine ARN or CLUSTER_CANARY_STATE_MACHINE`), said
/// when the stack cannot tell.
pub async fn stack_output(
    config: &SdkConfig,
    stack: &str,
    key: &str,
    instead: &str,
) -> Result<String, CliError> {
    let found = described_stack(config, stack, key, instead).await?;
    found
        .outputs()
        .iter()
        .find(|o| o.output_key() == Some(key))
        .and_then(|o| o.output_value())
        .map(str::to_owned)
        .ok_or_else(|| {
            CliError::NotFound(format!(
                "stack `{stack}` has no output {key}: is it a cluster-canary stack (one deployed \
                 before {key} existed needs `sam deploy` again)? Or name it with {instead}"
            ))
        })
}

/// The value a stack was deployed with for its parameter `key` (`None`: it has no such
/// parameter).
pub async fn stack_parameter(
    config: &SdkConfig,
    stack: &str,
    key: &str,
) -> Result<Option<String>, CliError> {
    let found = described_stack(config, stack, key, "--stack NAME").await?;
    Ok(found
        .parameters()
        .iter()
        .find(|p| p.parameter_key() == Some(key))
        .and_then(|p| p.parameter_value())
        .map(str::to_owned))
}

async fn described_stack(
    config: &SdkConfig,
    stack: &str,
    key: &str,
    instead: &str,
) -> Result<cloudformation::types::Stack, CliError> {
    let client = cloudformation::Client::new(config);
    let out = client
        .describe_stacks()
        .stack_name(stack)
        .send()
        .await
        .map_err(|e| {
            let error = AwsError::from_sdk("DescribeStacks", e);
            let region = config
                .region()
                .map_or_else(|| "the configured region".to_owned(), ToString::to_string);
            // CloudFormation says a missing stack with ValidationError "... does not exist".
            let missing = error.code.as_deref() == Some("ValidationError")
                && error.message.contains("does not exist");
            let cause = if missing {
                "it does not exist there; deploy it with `sam deploy`, or name it".to_owned()
            } else {
                format!("{error}; or name it")
            };
            CliError::NotFound(format!(
                "cannot read {key} from stack `{stack}` in {region}: {cause}: --stack NAME, {instead}"
            ))
        })?;
    out.stacks().first().cloned().ok_or_else(|| {
        CliError::NotFound(format!(
            "cannot read {key}: DescribeStacks gave no stack `{stack}`; name it with {instead}"
        ))
    })
}
