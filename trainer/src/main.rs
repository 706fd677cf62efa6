//! `trainer`: the mock upstream, the shape driver and the fail-closed training stages.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use clap::{Args, Parser, Subcommand};

use trainer::drive::{self, DriveOptions};
use trainer::shapes;
use trainer::train::{self, bolt::Bolt, pgo::Pgo, TrainOptions};

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
    /// List and validate the shapes.
    Shapes(ShapesArgs),
    /// Send one shape's requests to a running gateway and check every response.
    Drive(DriveArgs),
    /// PGO training stage: drive an instrumented gateway per shape, merge the .profraw files.
    Profile(ProfileArgs),
    /// BOLT training stage: drive a BOLT-instrumented gateway per shape, merge the .fdata files.
    BoltProfile(BoltProfileArgs),
    /// Benchmarks and gates: A/B throughput, callgrind counts, holdout gate, RSS, load.
    Bench(trainer::bench::cli::BenchArgs),
}

#[derive(Args)]
struct ShapesArgs {
    /// The shapes directory.
    #[arg(long, default_value = "shapes")]
    shapes: PathBuf,
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
struct StageArgs {
    /// The instrumented gateway binary.
    #[arg(long)]
    gateway_bin: PathBuf,
    /// The shapes directory.
    #[arg(long)]
    shapes: PathBuf,
    /// The output directory; must not exist or be empty. Built next to it, then renamed.
    #[arg(long)]
    out: PathBuf,
    /// Size floor of each shape's profile file, in bytes (default: 64 KiB .profraw, 16 KiB .fdata).
    #[arg(long)]
    min_shape_bytes: Option<u64>,
    /// Size floor of the merged profile, in bytes (default: 64 KiB .profdata, 16 KiB .fdata).
    #[arg(long)]
    min_merged_bytes: Option<u64>,
    /// Longest wait for /healthz after starting the gateway, in seconds.
    #[arg(long, default_value_t = 60)]
    ready_timeout_s: u64,
    /// Longest wait for the gateway to exit after SIGTERM, in seconds (then killed: failure).
    #[arg(long, default_value_t = 60)]
    exit_timeout_s: u64,
}

impl StageArgs {
    fn options(&self) -> TrainOptions {
        let mut o = TrainOptions::new(
            self.gateway_bin.clone(),
            self.shapes.clone(),
            self.out.clone(),
        );
        o.min_shape_bytes = self.min_shape_bytes;
        o.min_merged_bytes = self.min_merged_bytes;
        o.ready_timeout = Duration::from_secs(self.ready_timeout_s);
        o.exit_timeout = Duration::from_secs(self.exit_timeout_s);
        o
    }
}

#[derive(Args)]
struct ProfileArgs {
    #[command(flatten)]
    stage: StageArgs,
    /// Absolute path to the llvm-profdata of rustc's LLVM.
    #[arg(long)]
    llvm_profdata: PathBuf,
    /// Refuse an llvm-profdata of another LLVM major (e.g. from `rustc -vV`).
    #[arg(long)]
    expect_llvm_major: Option<u32>,
}

#[derive(Args)]
struct BoltProfileArgs {
    #[command(flatten)]
    stage: StageArgs,
    /// Absolute path to merge-fdata.
    #[arg(long)]
    merge_fdata: PathBuf,
    /// The -instrumentation-file the binary was instrumented with (default: read from the
    /// binary's .note.bolt_info). Files are <prefix>.<pid>.fdata.
    #[arg(long)]
    instrumentation_file: Option<PathBuf>,
}

type Error = Box<dyn std::error::Error>;

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Mock(args) => trainer::mock::cli::run(args),
        Command::Shapes(args) => run_shapes(args),
        Command::Drive(args) => run_drive(args),
        Command::Profile(args) => run_profile(args),
        Command::BoltProfile(args) => run_bolt_profile(args),
        Command::Bench(args) => trainer::bench::cli::run(args),
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
    if holdouts != 1 {
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

fn run_profile(args: ProfileArgs) -> Result<(), Error> {
    let opts = args.stage.options();
    let kind = Pgo {
        llvm_profdata: args.llvm_profdata,
        expect_llvm_major: args.expect_llvm_major,
    };
    let m = runtime()?.block_on(train::run(&kind, &opts))?;
    print_summary("profile", "profraw", &m);
    Ok(())
}

fn run_bolt_profile(args: BoltProfileArgs) -> Result<(), Error> {
    let opts = args.stage.options();
    let kind = Bolt::new(args.merge_fdata, args.instrumentation_file);
    let m = runtime()?.block_on(train::run(&kind, &opts))?;
    print_summary("bolt-profile", "fdata", &m);
    Ok(())
}

fn print_summary(stage: &str, raw_ext: &str, m: &train::manifest::Manifest) {
    println!(
        "trainer {stage}: {} shapes, {} .{raw_ext} ({} bytes), {} = {} bytes, {} functions, sha256 {}",
        m.shapes.len(),
        m.raw_files,
        m.raw_bytes,
        m.merged_file,
        m.merged_bytes,
        m.functions,
        m.merged_sha256
    );
}
