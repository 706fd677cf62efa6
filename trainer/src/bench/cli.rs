//! `trainer bench`: the benchmark subcommands.

#[derive(clap::Args, Debug)]
pub struct BenchArgs {}

pub fn run(_args: BenchArgs) -> Result<(), Box<dyn std::error::Error>> {
    Err("trainer bench: not implemented yet".into())
}
