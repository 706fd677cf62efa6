//! `bench`: the anchored A/B bench by default (`bench --variant NAME=PATH ...`), and its
//! sibling subcommands (`callgrind`, `holdout`, `rss`, `load`, `soak`, `translated`, `board`,
//! `report`). See `bench::cli`.

use std::process::ExitCode;

use clap::Parser;

#[derive(Parser)]
#[command(name = "bench", version, about)]
struct Cli {
    #[command(flatten)]
    bench: bench::cli::BenchArgs,
}

fn main() -> ExitCode {
    match bench::cli::run(Cli::parse().bench) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("bench: {e:#}");
            ExitCode::FAILURE
        }
    }
}
