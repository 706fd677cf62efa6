//! Command-line interface.

use std::net::SocketAddr;
use std::path::PathBuf;

use clap::Parser;

use crate::config::Runtime;

#[derive(Debug, Parser)]
#[command(
    name = "gateway",
    version,
    about = "A fast multi-dialect AI gateway (OpenAI, Anthropic, Gemini)"
)]
pub(crate) struct Cli {
    /// The TOML config file.
    #[arg(long, short = 'c', value_name = "FILE")]
    pub(crate) config: PathBuf,
    /// Listen on this address instead of `server.listen` (port 0 picks a free port; the
    /// address is printed at start).
    #[arg(long, value_name = "ADDR")]
    pub(crate) listen: Option<SocketAddr>,
    /// Worker threads instead of `server.workers` (0 = one per core).
    #[arg(long, value_name = "N")]
    pub(crate) workers: Option<usize>,
    /// The runtime instead of `server.runtime`.
    #[arg(long, value_enum, value_name = "RUNTIME")]
    pub(crate) runtime: Option<Runtime>,
    /// Validate the config and exit.
    #[arg(long)]
    pub(crate) check_config: bool,
}
