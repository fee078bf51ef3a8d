//! `cluster-canary`: parse the arguments, run the command, set the exit code.

use std::process::ExitCode;

use clap::Parser;
use cluster_canary::args::Cli;

#[tokio::main]
async fn main() -> ExitCode {
    match cluster_canary::run(Cli::parse()).await {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::FAILURE,
        Err(error) => {
            eprintln!("error: {error}");
            ExitCode::FAILURE
        }
    }
}
