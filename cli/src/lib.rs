//! `cluster-canary`, the operator CLI: validate and dry-run plans, start a rollout, watch it,
//! approve or reject a waiting step, abort it, list rollouts. It reuses the functions' own
//! plan validation and AWS adapters, so what it checks is what Prepare checks.
//! `main.rs` only parses arguments and sets the exit code.

pub mod apex;
pub mod args;
pub mod aws;
pub mod error;
pub mod fleet_commands;
pub mod freeze_commands;
pub mod history;
pub mod locate;
pub mod plan_commands;
pub mod printer;
pub mod progress;
pub mod report;
pub mod rollout_commands;
pub mod traffic;
pub mod view;

use std::io::IsTerminal;
use std::time::Duration;

use aws_config::SdkConfig;

use args::{Cli, Command, FleetCommand, FreezeCommand, GlobalArgs, OutputFormat, PlanCommand};
use error::CliError;
use printer::Printer;
use view::Output;

/// The SDK's `app/<name>` in the User-Agent of the CLI's calls: CloudTrail (and the benchmark)
/// tell an operator's calls from the functions'.
const APP_NAME: &str = "cluster-canary-cli";

/// The SDK configuration: the standard chain, with the global flags on top.
pub async fn sdk_config(global: &GlobalArgs) -> SdkConfig {
    let mut loader = canary_aws::sdk_config_loader();
    if let Ok(name) = aws_config::AppName::new(APP_NAME) {
        loader = loader.app_name(name);
    }
    if let Some(profile) = &global.profile {
        loader = loader.profile_name(profile);
    }
    if let Some(region) = &global.region {
        loader = loader.region(aws_config::Region::new(region.clone()));
    }
    if let Some(url) = &global.endpoint_url {
        loader = loader.endpoint_url(url);
    }
    loader.load().await
}

/// Runs the command; `Ok(true)` is exit code 0.
pub async fn run(cli: Cli) -> Result<bool, CliError> {
    let output = match cli.global.output {
        OutputFormat::Json => Output::Json,
        OutputFormat::Text if std::io::stdout().is_terminal() => Output::Terminal,
        OutputFormat::Text => Output::Plain,
    };
    let mut printer = Printer::new(output);
    if let Command::Plan(PlanCommand::Validate { files, schema }) = &cli.command {
        if *schema {
            let text = serde_json::to_string_pretty(&canary_core::schema::rollout_plan_schema())
                .map_err(|e| CliError::Invalid(e.to_string()))?;
            println!("{text}");
            return Ok(true);
        }
        return Ok(plan_commands::validate(files, &mut printer));
    }
    if let Command::Fleet(FleetCommand::Validate { files, schema }) = &cli.command {
        if *schema {
            let text = serde_json::to_string_pretty(&canary_core::schema::fleet_plan_schema())
                .map_err(|e| CliError::Invalid(e.to_string()))?;
            println!("{text}");
            return Ok(true);
        }
        return Ok(fleet_commands::validate(files, &mut printer));
    }
    let config = sdk_config(&cli.global).await;
    let config = &config;
    match cli.command {
        Command::Plan(PlanCommand::Validate { .. }) => Ok(true),
        Command::Plan(PlanCommand::Check {
            file,
            state_machine,
        }) => plan_commands::check(config, &file, &state_machine, &mut printer).await,
        Command::Plan(PlanCommand::ApexRecords {
            file,
            points,
            dry_run,
        }) => apex::apex_records(config, &file, &points, dry_run, &mut printer).await,
        Command::Start {
            file,
            name,
            watch,
            verbose,
            state_machine,
        } => {
            printer.verbose = verbose;
            let arn = rollout_commands::start(
                config,
                &file,
                name.as_deref(),
                &state_machine,
                &mut printer,
            )
            .await?;
            if watch {
                rollout_commands::watch(config, &arn, &mut printer).await
            } else {
                Ok(true)
            }
        }
        Command::Watch {
            execution,
            verbose,
            state_machine,
        } => {
            printer.verbose = verbose;
            let arn = locate::execution(config, execution.as_deref(), &state_machine).await?;
            rollout_commands::watch(config, &arn, &mut printer).await
        }
        Command::Approve {
            execution,
            by,
            state_machine,
        } => {
            let arn = locate::execution(config, execution.as_deref(), &state_machine).await?;
            rollout_commands::answer(config, &arn, None, by.as_deref(), &mut printer).await?;
            Ok(true)
        }
        Command::Reject {
            execution,
            reason,
            by,
            state_machine,
        } => {
            let arn = locate::execution(config, execution.as_deref(), &state_machine).await?;
            rollout_commands::answer(config, &arn, Some(&reason), by.as_deref(), &mut printer)
                .await?;
            Ok(true)
        }
        Command::Report {
            execution,
            out,
            state_machine,
        } => {
            let arn = locate::execution(config, execution.as_deref(), &state_machine).await?;
            rollout_commands::report(config, &arn, out.as_deref(), &mut printer).await?;
            Ok(true)
        }
        Command::Abort {
            execution,
            reason,
            timeout,
            state_machine,
        } => {
            let arn = locate::execution(config, execution.as_deref(), &state_machine).await?;
            rollout_commands::abort(
                config,
                &arn,
                &reason,
                Duration::from_secs(timeout),
                &mut printer,
            )
            .await?;
            Ok(true)
        }
        Command::Restore {
            execution,
            yes,
            force,
            state_machine,
        } => {
            let arn = locate::execution(config, Some(&execution), &state_machine).await?;
            rollout_commands::restore(config, &arn, yes, force, &mut printer).await?;
            Ok(true)
        }
        Command::Fleet(fleet) => run_fleet(config, fleet, &mut printer).await,
        Command::Freeze {
            command: Some(FreezeCommand::Status { switch }),
            ..
        } => {
            freeze_commands::status(config, &switch, &mut printer).await?;
            Ok(true)
        }
        Command::Freeze {
            reason,
            switch,
            command: None,
        } => {
            freeze_commands::freeze(config, reason.as_deref(), &switch, &mut printer).await?;
            Ok(true)
        }
        Command::Unfreeze { switch } => {
            freeze_commands::unfreeze(config, &switch, &mut printer).await?;
            Ok(true)
        }
        Command::List {
            limit,
            state_machine,
        } => {
            rollout_commands::list(config, &state_machine, limit, &mut printer).await?;
            Ok(true)
        }
    }
}

async fn run_fleet(
    config: &SdkConfig,
    command: FleetCommand,
    printer: &mut Printer,
) -> Result<bool, CliError> {
    match command {
        FleetCommand::Validate { .. } => Ok(true),
        FleetCommand::Check { file, machines } => {
            fleet_commands::check(config, &file, &machines, printer).await
        }
        FleetCommand::Start {
            file,
            name,
            watch,
            machines,
        } => {
            let arn =
                fleet_commands::start(config, &file, name.as_deref(), &machines, printer).await?;
            if watch {
                fleet_commands::watch(config, &arn, &machines, printer).await
            } else {
                Ok(true)
            }
        }
        FleetCommand::Watch {
            execution,
            machines,
        } => {
            let arn = locate::fleet_execution(config, execution.as_deref(), &machines).await?;
            fleet_commands::watch(config, &arn, &machines, printer).await
        }
        FleetCommand::Approve {
            execution,
            by,
            machines,
        } => {
            let arn = locate::fleet_execution(config, execution.as_deref(), &machines).await?;
            fleet_commands::answer(config, &arn, None, by.as_deref(), printer).await?;
            Ok(true)
        }
        FleetCommand::Reject {
            execution,
            reason,
            by,
            machines,
        } => {
            let arn = locate::fleet_execution(config, execution.as_deref(), &machines).await?;
            fleet_commands::answer(config, &arn, Some(&reason), by.as_deref(), printer).await?;
            Ok(true)
        }
        FleetCommand::Abort {
            execution,
            reason,
            timeout,
            machines,
        } => {
            let arn = locate::fleet_execution(config, execution.as_deref(), &machines).await?;
            fleet_commands::abort(
                config,
                &arn,
                &reason,
                Duration::from_secs(timeout),
                &machines,
                printer,
            )
            .await?;
            Ok(true)
        }
        FleetCommand::List { limit, machines } => {
            fleet_commands::list(config, &machines, limit, printer).await?;
            Ok(true)
        }
    }
}
