//! `trainer`: the mock upstream, the shape driver and the training workload (the benchmarks
//! are the `bench` binary of `bench/`).
//!
//! `trainer workload --shapes DIR GATEWAY_BIN` is the chain's workload: it exercises the
//! binary once per training shape and exits 0 only when every run was clean. It never sets a
//! profile variable; the chain's stages (`nix/lib/stages/pgo-profile.sh`,
//! `nix/lib/stages/bolt-profile.sh`, contract in `nix/lib/stages/workload.sh`) set
//! `LLVM_PROFILE_FILE` and collect and merge the profiles.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use clap::{Args, Parser, Subcommand};

use trainer::drive::{self, DriveOptions};
use trainer::shapes;
use trainer::workload::{self, WorkloadOptions};

#[derive(Parser)]
#[command(version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run the mock upstream (OpenAI chat/responses, Anthropic messages, Gemini) until SIGTERM.
    Mock(trainer::mock::cli::MockArgs),
    /// List and validate the shapes.
    Shapes(ShapesArgs),
    /// Send one shape's requests to a running gateway and check every response.
    Drive(DriveArgs),
    /// The training workload: one gateway run per training shape, every response checked.
    ///
    /// Per training shape (holdouts skipped), in name order: start the mock upstream on
    /// loopback, write the shape's gateway config, start GATEWAY_BIN, wait for /healthz, drive
    /// the shape with every response checked, SIGTERM, and require exit code 0.
    ///
    /// The gateway inherits the environment, plus GATEWAY_TRAINING_VERTEX_TOKEN (a fixed
    /// token for the Vertex shapes' targets, which the mock does not check) and fixed
    /// AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY for the Bedrock shapes' (AWS_SESSION_TOKEN
    /// removed; the mock checks no signature); nothing sets a
    /// profile variable: set LLVM_PROFILE_FILE (with %p: one file per process) before calling; collecting and
    /// merging the profiles is the caller's job. Scratch files go under $TMPDIR and are
    /// removed. Progress goes to stderr; on success stdout is the one line
    /// "trainer workload: N gateway runs". Exit 1 on any failure, naming the shape and the
    /// cause (SIGTERM or SIGINT too: the running gateway is killed first); exit 2 on a usage
    /// error.
    Workload(WorkloadArgs),
}

#[derive(Args)]
struct ShapesArgs {
    /// The shapes directory.
    #[arg(long, default_value = "shapes")]
    shapes: PathBuf,
    /// The directory is one part of a training fanned out over parts (one shape each, as the
    /// Nix chain trains): every shape in it must train. Without it, the whole set must hold
    /// exactly one holdout shape.
    #[arg(long)]
    part: bool,
}

#[derive(Args)]
struct DriveArgs {
    /// The gateway's base URL, e.g. http://127.0.0.1:8080.
    #[arg(long)]
    gateway: String,
    /// The shape to send.
    #[arg(long)]
    shape: String,
    /// The shapes directory.
    #[arg(long, default_value = "shapes")]
    shapes: PathBuf,
    /// The gateway API key (none: send no key).
    #[arg(long)]
    key: Option<String>,
    /// Longest one request may take, in seconds.
    #[arg(long, default_value_t = 60)]
    request_timeout_s: u64,
}

#[derive(Args)]
struct WorkloadArgs {
    /// The shapes directory; every training shape (not holdout) runs, in name order.
    #[arg(long)]
    shapes: PathBuf,
    /// Longest wait for /healthz after starting the gateway, in seconds.
    #[arg(
        long,
        value_name = "N",
        default_value_t = 60,
        alias = "ready-timeout-s"
    )]
    ready_timeout_secs: u64,
    /// Longest wait for the gateway to exit after SIGTERM, in seconds (then killed: failure).
    #[arg(long, value_name = "N", default_value_t = 60, alias = "exit-timeout-s")]
    exit_timeout_secs: u64,
    /// The gateway binary to exercise (e.g. instrumented for PGO or BOLT). It inherits the
    /// environment unchanged, LLVM_PROFILE_FILE included.
    #[arg(value_name = "GATEWAY_BIN")]
    gateway_bin: PathBuf,
}

type Error = Box<dyn std::error::Error>;

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Mock(args) => trainer::mock::cli::run(args),
        Command::Shapes(args) => run_shapes(args),
        Command::Drive(args) => run_drive(args),
        Command::Workload(args) => run_workload(args),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("trainer: {e:#}");
            ExitCode::FAILURE
        }
    }
}

fn runtime() -> Result<tokio::runtime::Runtime, Error> {
    Ok(tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?)
}

fn run_shapes(args: ShapesArgs) -> Result<(), Error> {
    let all = shapes::load_dir(&args.shapes)?;
    println!(
        "{:<40} {:<9} {:<17} {:<6} {:>7} {:>8} {:>4} {:<12} role",
        "name", "dialect", "upstream", "stream", "body B", "requests", "conc", "posture"
    );
    for s in &all {
        println!(
            "{:<40} {:<9} {:<17} {:<6} {:>7} {:>8} {:>4} {:<12} {}",
            s.name,
            s.dialect,
            s.upstream,
            s.stream,
            s.body.len(),
            s.requests,
            s.concurrency,
            s.posture,
            if s.holdout { "holdout" } else { "train" }
        );
    }
    let holdouts = all.iter().filter(|s| s.holdout).count();
    println!(
        "{} shapes: {} training, {holdouts} holdout",
        all.len(),
        all.len() - holdouts
    );
    if args.part && holdouts != 0 {
        return Err(format!(
            "{}: a training part holds {holdouts} holdout shape(s): a holdout never trains",
            args.shapes.display()
        )
        .into());
    }
    if !args.part && holdouts != 1 {
        return Err(format!("expected exactly one holdout shape, found {holdouts}").into());
    }
    Ok(())
}

fn run_drive(args: DriveArgs) -> Result<(), Error> {
    let shape = shapes::find(&args.shapes, &args.shape)?;
    let mut opts = DriveOptions::new(args.gateway, args.key);
    opts.request_timeout = Duration::from_secs(args.request_timeout_s);
    let report = runtime()?.block_on(drive::drive(&shape, &opts))?;
    println!("{report}");
    if !report.is_success() {
        return Err(format!(
            "{}: {} of {} requests failed",
            shape.name, report.failed, report.requests
        )
        .into());
    }
    Ok(())
}

fn run_workload(args: WorkloadArgs) -> Result<(), Error> {
    let mut opts = WorkloadOptions::new(args.gateway_bin, args.shapes);
    opts.ready_timeout = Duration::from_secs(args.ready_timeout_secs);
    opts.exit_timeout = Duration::from_secs(args.exit_timeout_secs);
    let summary = runtime()?.block_on(async {
        use tokio::signal::unix::{signal, SignalKind};
        let mut term = signal(SignalKind::terminate())?;
        let mut int = signal(SignalKind::interrupt())?;
        let run = workload::run(&opts, |shape, r, connections| {
            eprintln!(
                "trainer workload: {}: {}/{} requests ok, {:.1} req/s, {connections} upstream connections ({})",
                r.shape,
                r.ok,
                r.requests,
                r.rate(),
                if shape.upstream_tls {
                    "HTTPS: a TLS handshake each"
                } else {
                    "plain HTTP"
                }
            );
        });
        // On a signal (a caller's time limit), dropping the run kills the running gateway
        // and removes the scratch directory before this process exits non-zero.
        tokio::select! {
            r = run => Ok::<_, Error>(r?),
            _ = term.recv() => Err("interrupted by SIGTERM; the running gateway was killed".into()),
            _ = int.recv() => Err("interrupted by SIGINT; the running gateway was killed".into()),
        }
    })?;
    println!("trainer workload: {} gateway runs", summary.runs.len());
    Ok(())
}
