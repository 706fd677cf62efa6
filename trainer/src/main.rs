//! `trainer`: the mock upstream, the shape driver and the fail-closed training stages.

use std::process::ExitCode;

use clap::{Parser, Subcommand};

#[derive(Parser)]
#[command(version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run the mock upstream (OpenAI chat/responses, Anthropic messages) until SIGTERM.
    Mock(trainer::mock::cli::MockArgs),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Mock(args) => trainer::mock::cli::run(args),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("trainer: {e:#}");
            ExitCode::FAILURE
        }
    }
}
