//! Finding the rollout state machine and the execution a command is about.

use std::path::Path;

use aws_config::SdkConfig;

use crate::args::{FleetMachineArgs, FreezeArgs, StateMachineArgs};
use crate::aws::stack_output;
use crate::error::CliError;
use canary_aws::executions::execution_arn;
use canary_aws::SdkExecutions;

/// The stack name when neither `--stack` nor samconfig.toml says: the one the README deploys.
const DEFAULT_STACK: &str = "cluster-canary";
const STATE_MACHINE_OUTPUT: &str = "RolloutStateMachineArn";
const FLEET_STATE_MACHINE_OUTPUT: &str = "FleetStateMachineArn";
const FLEET_PLAN_BUCKET_OUTPUT: &str = "FleetPlanBucketName";
const FREEZE_PARAMETER_OUTPUT: &str = "FreezeParameterName";

/// `--state-machine`/`CLUSTER_CANARY_STATE_MACHINE`, else the stack's output.
pub async fn state_machine(
    config: &SdkConfig,
    args: &StateMachineArgs,
) -> Result<String, CliError> {
    match &args.state_machine {
        Some(arn) => checked_machine_arn(arn),
        None => {
            stack_output(
                config,
                &stack_name(args)?,
                STATE_MACHINE_OUTPUT,
                "--state-machine ARN or CLUSTER_CANARY_STATE_MACHINE",
            )
            .await
        }
    }
}

/// `--fleet-state-machine`/`CLUSTER_CANARY_FLEET_STATE_MACHINE`, else the same stack's output.
pub async fn fleet_state_machine(
    config: &SdkConfig,
    args: &FleetMachineArgs,
) -> Result<String, CliError> {
    match &args.fleet_state_machine {
        Some(arn) => checked_machine_arn(arn),
        None => {
            let stack = stack_name(&args.rollout)?;
            stack_output(
                config,
                &stack,
                FLEET_STATE_MACHINE_OUTPUT,
                "--fleet-state-machine ARN or CLUSTER_CANARY_FLEET_STATE_MACHINE",
            )
            .await
        }
    }
}

/// `--fleet-plan-bucket`/`CLUSTER_CANARY_FLEET_PLAN_BUCKET`, else the same stack's output.
pub async fn fleet_plan_bucket(
    config: &SdkConfig,
    args: &FleetMachineArgs,
) -> Result<String, CliError> {
    match &args.fleet_plan_bucket {
        Some(bucket) => Ok(bucket.clone()),
        None => {
            let stack = stack_name(&args.rollout)?;
            stack_output(
                config,
                &stack,
                FLEET_PLAN_BUCKET_OUTPUT,
                "--fleet-plan-bucket BUCKET or CLUSTER_CANARY_FLEET_PLAN_BUCKET",
            )
            .await
        }
    }
}

/// `--freeze-parameter`/`CLUSTER_CANARY_FREEZE_PARAMETER`, else the stack's output.
pub async fn freeze_parameter(config: &SdkConfig, args: &FreezeArgs) -> Result<String, CliError> {
    match &args.freeze_parameter {
        Some(name) => Ok(name.clone()),
        None => {
            stack_output(
                config,
                &stack_name(&args.state_machine)?,
                FREEZE_PARAMETER_OUTPUT,
                "--freeze-parameter NAME or CLUSTER_CANARY_FREEZE_PARAMETER",
            )
            .await
        }
    }
}

/// The Change Calendars every rollout of the stack honours (its `ChangeCalendars` parameter).
pub async fn stack_calendars(
    config: &SdkConfig,
    args: &FreezeArgs,
) -> Result<Vec<String>, CliError> {
    let stack = stack_name(&args.state_machine)?;
    let names = crate::aws::stack_parameter(config, &stack, "ChangeCalendars").await?;
    Ok(names
        .unwrap_or_default()
        .split(',')
        .map(str::trim)
        .filter(|name| !name.is_empty())
        .map(str::to_owned)
        .collect())
}

fn checked_machine_arn(arn: &str) -> Result<String, CliError> {
    if !arn.starts_with("arn:") || !arn.contains(":stateMachine:") {
        return Err(CliError::Invalid(format!(
            "`{arn}` is not a state machine ARN (arn:aws:states:REGION:ACCOUNT:stateMachine:NAME)"
        )));
    }
    Ok(arn.to_owned())
}

/// `--stack`, else samconfig.toml's stack_name here, else the README's.
fn stack_name(args: &StateMachineArgs) -> Result<String, CliError> {
    Ok(match &args.stack {
        Some(stack) => stack.clone(),
        None => samconfig_stack_name(Path::new("samconfig.toml"))?
            .unwrap_or_else(|| DEFAULT_STACK.to_owned()),
    })
}

/// `default.global.parameters.stack_name` of a samconfig.toml, if the file exists and says.
pub fn samconfig_stack_name(path: &Path) -> Result<Option<String>, CliError> {
    let Ok(text) = std::fs::read_to_string(path) else {
        return Ok(None);
    };
    let config: toml::Value = toml::from_str(&text)
        .map_err(|e| CliError::Invalid(format!("{}: not TOML: {e}", path.display())))?;
    Ok(config
        .get("default")
        .and_then(|c| c.get("global"))
        .and_then(|c| c.get("parameters"))
        .and_then(|c| c.get("stack_name"))
        .and_then(toml::Value::as_str)
        .map(str::to_owned))
}

/// The region in an ARN (`arn:aws:states:REGION:...`).
pub fn region_of(arn: &str) -> Option<&str> {
    arn.split(':').nth(3).filter(|r| !r.is_empty())
}

/// An execution named by ARN, or by name (of the state machine's executions), or, given
/// nothing, the one rollout running now.
pub async fn execution(
    config: &SdkConfig,
    given: Option<&str>,
    args: &StateMachineArgs,
) -> Result<String, CliError> {
    if let Some(arn) = given.filter(|g| g.starts_with("arn:")) {
        if !arn.contains(":execution:") || region_of(arn).is_none() {
            return Err(CliError::Invalid(format!(
                "`{arn}` is not an execution ARN (arn:aws:states:REGION:ACCOUNT:execution:STATE_MACHINE:NAME)"
            )));
        }
        return Ok(arn.to_owned());
    }
    let machine = state_machine(config, args).await?;
    execution_of(config, given, &machine, "rollout", "list").await
}

/// A fleet execution named by ARN or name, or, given nothing, the one fleet running now.
pub async fn fleet_execution(
    config: &SdkConfig,
    given: Option<&str>,
    args: &FleetMachineArgs,
) -> Result<String, CliError> {
    if let Some(arn) = given.filter(|g| g.starts_with("arn:")) {
        return execution(config, Some(arn), &args.rollout).await;
    }
    let machine = fleet_state_machine(config, args).await?;
    execution_of(config, given, &machine, "fleet", "fleet list").await
}

/// `given` (a name) of `machine`'s executions, or the one running.
async fn execution_of(
    config: &SdkConfig,
    given: Option<&str>,
    machine: &str,
    what: &str,
    list: &str,
) -> Result<String, CliError> {
    if let Some(name) = given {
        return Ok(execution_arn(machine, name));
    }
    let sfn = SdkExecutions::in_region(config, region_of(machine));
    let running = sfn.list(machine, true, 50).await?;
    match running.as_slice() {
        [one] => Ok(one.clone()),
        [] => Err(CliError::NotFound(format!(
            "no {what} is running on {machine}; name one (see `cluster-canary {list}`)"
        ))),
        several => Err(CliError::NotFound(format!(
            "{} {what}s are running; name one of them:\n  {}",
            several.len(),
            several.join("\n  ")
        ))),
    }
}

/// `config` in `region` (an execution's or a fleet's: its stack's bucket, alarms and metrics are
/// there).
pub fn in_region(config: &SdkConfig, region: Option<&str>) -> SdkConfig {
    let mut regional = config.to_builder();
    if let Some(region) = region {
        regional = regional.region(aws_config::Region::new(region.to_owned()));
    }
    regional.build()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_stack_name_comes_from_samconfig() {
        let dir = std::env::temp_dir().join(format!("cc-samconfig-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("temp dir");
        let path = dir.join("samconfig.toml");
        std::fs::write(
            &path,
            "version = 0.1\n[default.global.parameters]\nstack_name = \"canary-prod\"\n",
        )
        .expect("write");
        assert_eq!(
            samconfig_stack_name(&path).expect("reads"),
            Some("canary-prod".to_owned())
        );
        std::fs::write(&path, "version = 0.1\n").expect("write");
        assert_eq!(samconfig_stack_name(&path).expect("reads"), None);
        std::fs::write(&path, "[default\n").expect("write");
        let error = samconfig_stack_name(&path).expect_err("not TOML");
        assert!(error.to_string().contains("not TOML"), "{error}");
        assert_eq!(
            samconfig_stack_name(&dir.join("absent.toml")).expect("none"),
            None
        );
        std::fs::remove_dir_all(&dir).expect("clean up");
    }

    #[test]
    fn regions_come_from_arns() {
        assert_eq!(
            region_of("arn:aws:states:eu-west-1:123456789012:execution:m:n"),
            Some("eu-west-1")
        );
        assert_eq!(region_of("green"), None);
    }
}
