//! The `bench` command line: the anchored A/B bench by default, and its sibling subcommands
//! (`callgrind`, `holdout`, `rss`, `memory`, `load`, `soak`, `translated`, `board`, `syscalls`,
//! `report`).

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::time::Duration;

use clap::{Args, Subcommand};
use serde::Serialize;

use crate::ab::{self, AbOptions};
use crate::board::{self, BoardOptions};
use crate::callgrind::{self, CallgrindOptions};
use crate::holdout;
use crate::load::{self, LoadOptions};
use crate::memory::{self, MemoryOptions};
use crate::report;
use crate::responsive::{self, ResponsiveOptions};
use crate::rss::{self, RssOptions};
use crate::soak::{self, SoakOptions};
use crate::soak_shared::{self, SharedSoakOptions};
use crate::syscalls::{self, SyscallsOptions};
use crate::translated;
use crate::variant::{check_variants, Variant};
use trainer::launch::{self, parse_cpus};
use trainer::shapes;

type Error = Box<dyn std::error::Error>;

#[derive(Args, Debug)]
#[command(args_conflicts_with_subcommands = true, subcommand_negates_reqs = true)]
pub struct BenchArgs {
    // Boxed: the arguments are large (clippy's large_enum_variant).
    #[command(subcommand)]
    command: Option<Box<BenchCommand>>,
    #[command(flatten)]
    ab: Box<AbArgs>,
}

#[derive(Subcommand, Debug)]
enum BenchCommand {
    /// Instructions, simulated I1 misses and branch mispredictions per request under
    /// callgrind (one worker, exact request counts, marginal: (big - small) / (big - small count)).
    Callgrind(CallgrindArgs),
    /// The holdout gate: callgrind on the holdout shape; exits non-zero when any variant's
    /// instructions per request exceed --max-ratio x the first variant's.
    Holdout(HoldoutArgs),
    /// Idle RSS of a gateway after start-up with a config (the example config by default).
    Rss(RssArgs),
    /// Peak RSS growth per request on the translated paths: a fresh gateway per case, an
    /// 8 MB request (realistic, and a flood of tiny objects), 2 MB hostile answers, event and
    /// error bodies; exits non-zero when a case grows more than --target x its bytes.
    Memory(MemoryArgs),
    /// Keep-alive load check: exits non-zero if any request fails.
    Load(LoadArgs),
    /// Soak and fault run: normal traffic mixed with stalled uploads, non-reading clients,
    /// upstream resets and a slow upstream, then SIGTERM; exits non-zero on any failed
    /// normal request, RSS or fds not back to baseline, or no exit 0 within the grace.
    Soak(SoakArgs),
    /// Three replicas sharing rate limits on a real redis-server, with clients that read to
    /// the end, clients that leave after the first delta and a capped key, Redis killed and
    /// restarted half way; exits non-zero when the charged tokens do not match the upstream's
    /// usage, the cap is exceeded across replicas or a replica does not come back.
    SoakShared(SoakSharedArgs),
    /// Translated shapes beside their passthrough twins, from callgrind results; exits
    /// non-zero when a pair is not measured.
    Translated(TranslatedArgs),
    /// The same-rig board's metrics: added latency at c=1, the throughput frontier under p99
    /// bounds, the translation lane, paced streams, CPU per request and RSS idle / steady /
    /// recovered, every variant interleaved with a control leg and the mock driven directly.
    Board(BoardArgs),
    /// System calls per request by name (strace -f -c attached over exact request windows,
    /// marginal), per variant on the passthrough and translated paths at each concurrency,
    /// beside the floor; exits non-zero when --max-c1 is set and a c=1 total is over it.
    Syscalls(SyscallsArgs),
    /// Writes BENCHMARKS.md from a results directory.
    Report(ReportArgs),
    /// The runtime stays responsive: one gateway worker under floods of big translations
    /// (error bodies, answers, request bodies, streams), /healthz latency p50/p99/max per
    /// flood and the gateway's CPU per flood request; exits non-zero when a flood request
    /// fails or, with --max-p99-ms, a p99 is over it.
    Responsive(ResponsiveArgs),
}

#[derive(Args, Debug)]
struct ResponsiveArgs {
    #[arg(long)]
    gateway: PathBuf,
    /// Bytes of each translated body (default: just under the 1 MiB once moved off the worker).
    #[arg(long, default_value_t = 1_000_000)]
    size: usize,
    /// Flooding clients per flood.
    #[arg(long, default_value_t = 4)]
    clients: u32,
    /// Seconds per flood.
    #[arg(long, default_value_t = 5.0)]
    seconds: f64,
    /// Milliseconds between two health checks.
    #[arg(long, default_value_t = 10)]
    interval_ms: u64,
    /// Fail when a flood's healthz p99 is over this many milliseconds.
    #[arg(long)]
    max_p99_ms: Option<f64>,
    /// The gateway's `--runtime` (default: its own).
    #[arg(long)]
    runtime: Option<String>,
    #[command(flatten)]
    common: Common,
}

#[derive(Args, Debug)]
struct Common {
    /// The shapes directory.
    #[arg(long, default_value = "shapes")]
    shapes: PathBuf,
    /// Write the result as JSON here.
    #[arg(long)]
    json: Option<PathBuf>,
    /// Write the result as markdown here (it is printed to stdout too).
    #[arg(long)]
    markdown: Option<PathBuf>,
    /// Scratch directory (configs, gateway stderr, callgrind out files).
    #[arg(long)]
    work_dir: Option<PathBuf>,
}

#[derive(Args, Debug)]
struct AbArgs {
    /// NAME=PATH of a gateway binary; the first is the baseline. Repeat for each variant.
    #[arg(long = "variant", required = true)]
    variants: Vec<Variant>,
    /// The shape to drive.
    #[arg(long, default_value = "chat-nonstream-minimal")]
    shape: String,
    #[arg(long, default_value_t = 3)]
    rounds: u32,
    /// Measured windows per gateway run.
    #[arg(long, default_value_t = 3)]
    windows: u32,
    /// Target window length in seconds (sets the request count per window).
    #[arg(long, default_value_t = 2.0)]
    window_s: f64,
    /// Fixed request count per window instead of calibrating from --window-s.
    #[arg(long)]
    window_requests: Option<u64>,
    #[arg(long, default_value_t = 1000)]
    warmup_requests: u64,
    /// Keep-alive connections (default: the shape's concurrency).
    #[arg(long)]
    connections: Option<u32>,
    /// Extra attempts of a window with a failed request.
    #[arg(long, default_value_t = 2)]
    max_retries: u32,
    /// Gateway worker threads (0 = one per core).
    #[arg(long, default_value_t = 1)]
    workers: usize,
    /// Skip the control leg (the baseline against an identical copy of itself).
    #[arg(long)]
    no_control: bool,
    /// Pin the gateway to these CPUs (e.g. 0 or 0-3).
    #[arg(long)]
    gateway_cpus: Option<String>,
    /// Pin the client (this process) to these CPUs.
    #[arg(long)]
    client_cpus: Option<String>,
    /// Pin the mock upstream to these CPUs (default: the client's).
    #[arg(long)]
    mock_cpus: Option<String>,
    /// Client runtime threads.
    #[arg(long, default_value_t = 1)]
    client_threads: usize,
    #[command(flatten)]
    common: Common,
}

#[derive(Args, Debug)]
struct CallgrindCommon {
    /// NAME=PATH of a gateway binary; the first is the baseline of the ratios.
    #[arg(long = "variant", required = true)]
    variants: Vec<Variant>,
    /// The valgrind executable.
    #[arg(long, default_value = "valgrind")]
    valgrind: PathBuf,
    /// Requests of the small run (start-up and shutdown subtracted with it).
    #[arg(long, default_value_t = 8)]
    small: u64,
    /// Requests of the large run.
    #[arg(long, default_value_t = 2000)]
    big: u64,
    /// Keep-alive connections of the client.
    #[arg(long, default_value_t = 1)]
    connections: u32,
    /// Longest wait for a gateway under valgrind to announce its address, in seconds.
    #[arg(long, default_value_t = 300)]
    ready_timeout_s: u64,
    /// Longest wait for exit after SIGTERM (callgrind writes its file then), in seconds.
    #[arg(long, default_value_t = 300)]
    exit_timeout_s: u64,
    /// Longest one request may take under valgrind, in seconds.
    #[arg(long, default_value_t = 120)]
    request_timeout_s: u64,
    /// Also measure the large runs' code footprint (per-instruction dumps: larger out files).
    #[arg(long)]
    footprint: bool,
}

impl CallgrindCommon {
    fn options(&self, out_dir: PathBuf) -> CallgrindOptions {
        CallgrindOptions {
            valgrind: self.valgrind.clone(),
            requests_small: self.small,
            requests_big: self.big,
            connections: self.connections,
            out_dir,
            footprint: self.footprint,
            ready_timeout: Duration::from_secs(self.ready_timeout_s),
            exit_timeout: Duration::from_secs(self.exit_timeout_s),
            request_timeout: Duration::from_secs(self.request_timeout_s),
        }
    }
}

#[derive(Args, Debug)]
struct CallgrindArgs {
    #[arg(long, default_value = "chat-nonstream-minimal")]
    shape: String,
    /// The upstream's transport: the shape's own (`upstream_tls`), or plain HTTP or HTTPS
    /// whatever the shape says (the same request both ways: what TLS costs per request).
    #[arg(long, value_enum, default_value_t = Transport::Shape)]
    upstream: Transport,
    #[command(flatten)]
    cg: CallgrindCommon,
    #[command(flatten)]
    common: Common,
}

#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
enum Transport {
    Shape,
    Http,
    Https,
}

#[derive(Args, Debug)]
struct HoldoutArgs {
    /// Largest allowed instructions/request ratio to the baseline.
    #[arg(long, default_value_t = 1.0)]
    max_ratio: f64,
    /// Also write the full callgrind report as JSON here.
    #[arg(long)]
    callgrind_json: Option<PathBuf>,
    #[command(flatten)]
    cg: CallgrindCommon,
    #[command(flatten)]
    common: Common,
}

#[derive(Args, Debug)]
struct MemoryArgs {
    #[arg(long)]
    gateway: PathBuf,
    /// Only the cases whose name contains one of these (repeatable).
    #[arg(long)]
    only: Vec<String>,
    /// The largest growth allowed, as a multiple of the bytes read.
    #[arg(long, default_value_t = memory::TARGET_RATIO)]
    target: f64,
    #[command(flatten)]
    common: Common,
}

#[derive(Args, Debug)]
struct RssArgs {
    #[arg(long)]
    gateway: PathBuf,
    #[arg(long, default_value = "gateway.example.toml")]
    config: PathBuf,
    /// Wait after /healthz answered before reading VmRSS, in milliseconds.
    #[arg(long, default_value_t = 1000)]
    settle_ms: u64,
    #[command(flatten)]
    common: Common,
}

#[derive(Args, Debug)]
struct LoadArgs {
    #[arg(long)]
    gateway: PathBuf,
    #[arg(long, default_value = "chat-nonstream-minimal")]
    shape: String,
    #[arg(long, default_value_t = 32)]
    connections: u32,
    #[arg(long, default_value_t = 50_000)]
    requests: u64,
    /// Gateway worker threads (0 = one per core).
    #[arg(long, default_value_t = 0)]
    workers: usize,
    #[command(flatten)]
    common: Common,
}

#[derive(Args, Debug)]
struct SoakArgs {
    #[arg(long)]
    gateway: PathBuf,
    /// Length of the mixed phase, in seconds.
    #[arg(long, default_value_t = 90)]
    duration_s: u64,
    /// Concurrent normal clients.
    #[arg(long, default_value_t = 4)]
    clients: usize,
    #[command(flatten)]
    common: Common,
}

#[derive(Args, Debug)]
struct SoakSharedArgs {
    #[arg(long)]
    gateway: PathBuf,
    /// Length of the run, in seconds (Redis goes down half way).
    #[arg(long, default_value_t = 30)]
    duration_s: u64,
    #[command(flatten)]
    common: Common,
}

#[derive(Args, Debug)]
struct TranslatedArgs {
    /// Print the shapes of the pairs, one per line, and exit.
    #[arg(long)]
    list_shapes: bool,
    /// The directory holding `callgrind-<shape>.json` (and `callgrind.json`).
    #[arg(long, required_unless_present = "list_shapes")]
    results: Option<PathBuf>,
    /// Also write the table here (it is printed to stdout).
    #[arg(long)]
    markdown: Option<PathBuf>,
}

#[derive(Args, Debug)]
struct BoardArgs {
    /// NAME=PATH of a gateway binary; the first is the baseline. Repeat for each variant.
    #[arg(long = "variant", required = true)]
    variants: Vec<Variant>,
    /// Interleaved rounds (the order rotates each round).
    #[arg(long, default_value_t = 3)]
    rounds: u32,
    /// Skip the control leg (the baseline against an identical copy of itself).
    #[arg(long)]
    no_control: bool,
    /// Gateway worker threads.
    #[arg(long, default_value_t = 1)]
    workers: usize,
    /// Measure each variant under each of these gateway runtimes (`multi-thread`,
    /// `thread-per-core`), the first under the variants' names, the next as `NAME-tpc` (or
    /// `NAME-mt`); default: the binaries' own runtime only.
    #[arg(long, value_delimiter = ',')]
    runtimes: Vec<String>,
    /// Pin the gateway to these CPUs (e.g. 0 or 0-3).
    #[arg(long)]
    gateway_cpus: Option<String>,
    /// Pin the load generator (this process) to these CPUs.
    #[arg(long)]
    load_cpus: Option<String>,
    /// Pin the mock upstreams to these CPUs (default: the load generator's).
    #[arg(long)]
    mock_cpus: Option<String>,
    /// Load generator threads (default: one per --load-cpus CPU, else 1).
    #[arg(long)]
    load_threads: Option<usize>,
    /// Mock runtime threads (default: one per --mock-cpus CPU, else 1).
    #[arg(long)]
    mock_threads: Option<usize>,
    /// The concurrency-1 latency window, in seconds.
    #[arg(long, default_value_t = 1.5)]
    latency_s: f64,
    /// Each sweep step, in seconds.
    #[arg(long, default_value_t = 1.0)]
    step_s: f64,
    /// The sweep's concurrencies.
    #[arg(long, default_value = "1,2,4,8,16,32,64,128")]
    concurrency: String,
    /// The frontier's p99 bounds in ms (unbounded is always reported).
    #[arg(long, default_value = "1,5,10,50,100")]
    bounds_ms: String,
    /// The sweep step whose gateway CPU per request is reported (added to the sweep).
    #[arg(long, default_value_t = 64)]
    cpu_concurrency: u32,
    /// Concurrencies of the translation lane's max-rate steps.
    #[arg(long, default_value = "8,32")]
    xlat_concurrency: String,
    /// Text deltas per paced stream.
    #[arg(long, default_value_t = 64)]
    stream_deltas: usize,
    /// Pause between two deltas, in ms.
    #[arg(long, default_value_t = 20)]
    stream_pace_ms: u64,
    /// Streams at c=1 (one after another) for time to first token and gaps.
    #[arg(long, default_value_t = 3)]
    stream_samples: u32,
    /// The ladder of stream concurrencies (stops at the first step not carried).
    #[arg(long, default_value = "16,64,256")]
    stream_concurrency: String,
    /// A gap between two deltas longer than this is a stall, in ms.
    #[arg(long, default_value_t = 500)]
    stall_ms: u64,
    /// Longest wait for RSS to stop falling after the load, in seconds.
    #[arg(long, default_value_t = 10.0)]
    recover_max_s: f64,
    #[command(flatten)]
    common: Common,
}

#[derive(Args, Debug)]
struct SyscallsArgs {
    /// NAME=PATH of a gateway binary. Repeat for each variant.
    #[arg(long = "variant", required = true)]
    variants: Vec<Variant>,
    /// An argument added to every gateway's command line (repeatable), e.g.
    /// `--gateway-arg=--runtime=thread-per-core`.
    #[arg(long = "gateway-arg", allow_hyphen_values = true)]
    gateway_args: Vec<String>,
    /// NAME=ARGS: arguments (split at whitespace) added to one variant's command line, so
    /// that one binary under two settings is two variants (repeatable).
    #[arg(long = "variant-args", allow_hyphen_values = true)]
    variant_args: Vec<String>,
    /// The concurrencies measured.
    #[arg(long, default_value = "1,16")]
    concurrency: String,
    /// Requests before the windows.
    #[arg(long, default_value_t = 300)]
    warmup: u64,
    /// Requests of the small and the large window (per request = the difference / the
    /// difference of the counts).
    #[arg(long, default_value_t = 200)]
    small: u64,
    #[arg(long, default_value_t = 1200)]
    big: u64,
    /// Gateway worker threads.
    #[arg(long, default_value_t = 1)]
    workers: usize,
    /// Fail when any variant's calls per request at c=1 (either path) are over this.
    #[arg(long)]
    max_c1: Option<f64>,
    #[arg(long, default_value = "strace")]
    strace: PathBuf,
    /// What the binaries are, in words, printed under their paths.
    #[arg(long)]
    note: Option<String>,
    #[command(flatten)]
    common: Common,
}

#[derive(Args, Debug)]
struct ReportArgs {
    /// The results directory written by scripts/benchmarks.sh.
    #[arg(long)]
    results: PathBuf,
    #[arg(long, default_value = "BENCHMARKS.md")]
    out: PathBuf,
    /// Replace only the board's section (between its markers) of the existing --out with the
    /// one from --results (scripts/bench-board.sh run alone), leaving the rest as it was.
    #[arg(long, conflicts_with_all = ["translated_only", "syscalls_only"])]
    board_only: bool,
    /// Replace only the translated paths' section (between its markers) of the existing
    /// --out with the one from --results (scripts/bench-translated.sh run alone).
    #[arg(long, conflicts_with = "syscalls_only")]
    translated_only: bool,
    /// Replace only the syscalls section (between its markers) of the existing --out with
    /// the one from --results (`bench syscalls` run alone, its JSON as syscalls.json).
    #[arg(long)]
    syscalls_only: bool,
}

pub fn run(args: BenchArgs) -> Result<(), Error> {
    match args.command.map(|c| *c) {
        None => run_ab(*args.ab),
        Some(BenchCommand::Callgrind(a)) => run_callgrind(a),
        Some(BenchCommand::Holdout(a)) => run_holdout(a),
        Some(BenchCommand::Rss(a)) => run_rss(a),
        Some(BenchCommand::Memory(a)) => run_memory(a),
        Some(BenchCommand::Load(a)) => run_load(a),
        Some(BenchCommand::Soak(a)) => run_soak(a),
        Some(BenchCommand::SoakShared(a)) => run_soak_shared(a),
        Some(BenchCommand::Translated(a)) => run_translated(a),
        Some(BenchCommand::Board(a)) => run_board(a),
        Some(BenchCommand::Syscalls(a)) => run_syscalls(a),
        Some(BenchCommand::Responsive(a)) => run_responsive(a),
        Some(BenchCommand::Report(a)) => {
            let doc = if a.board_only {
                let old = std::fs::read_to_string(&a.out)?;
                report::splice_board(&a.results, &old)?
            } else if a.translated_only {
                let old = std::fs::read_to_string(&a.out)?;
                report::splice_translated(&a.results, &old)?
            } else if a.syscalls_only {
                let old = std::fs::read_to_string(&a.out)?;
                report::splice_syscalls(&a.results, &old)?
            } else {
                // Sections measured by hand (between `<!-- NAME:begin/end -->` markers, e.g.
                // the C of build scripts) are not in any results directory: carried over.
                let old = std::fs::read_to_string(&a.out).unwrap_or_default();
                report::keep_by_hand(&old, report::document(&a.results)?)
            };
            // Whole or not at all: a reader never sees a half-written file.
            let tmp = a.out.with_extension("md.tmp");
            std::fs::write(&tmp, doc)?;
            std::fs::rename(&tmp, &a.out)?;
            eprintln!("bench report: wrote {}", a.out.display());
            Ok(())
        }
    }
}

fn run_translated(a: TranslatedArgs) -> Result<(), Error> {
    if a.list_shapes {
        for shape in translated::shapes() {
            println!("{shape}");
        }
        return Ok(());
    }
    let dir = a.results.ok_or("--results is required")?;
    let pairs = translated::measured(&dir)?;
    if pairs.len() != translated::PAIRS.len() {
        return Err(format!(
            "{}: {} of {} translated pairs measured (callgrind-<shape>.json for {})",
            dir.display(),
            pairs.len(),
            translated::PAIRS.len(),
            translated::shapes().collect::<Vec<_>>().join(", ")
        )
        .into());
    }
    let md = translated::markdown(&pairs);
    print!("{md}");
    if let Some(path) = a.markdown {
        std::fs::write(path, md)?;
    }
    Ok(())
}

fn runtime(threads: usize) -> Result<tokio::runtime::Runtime, Error> {
    Ok(tokio::runtime::Builder::new_multi_thread()
        .worker_threads(threads.max(1))
        .enable_all()
        .build()?)
}

fn work_dir(c: &Common, what: &str) -> PathBuf {
    c.work_dir.clone().unwrap_or_else(|| {
        std::env::temp_dir().join(format!("trainer-bench-{what}-{}", std::process::id()))
    })
}

fn emit<T: Serialize>(c: &Common, value: &T, markdown: &str) -> Result<(), Error> {
    if let Some(p) = &c.json {
        write_file(p, &serde_json::to_string_pretty(value)?)?;
    }
    if let Some(p) = &c.markdown {
        write_file(p, markdown)?;
    }
    println!("{markdown}");
    Ok(())
}

fn write_file(p: &Path, text: &str) -> Result<(), Error> {
    if let Some(d) = p.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(d)?;
    }
    std::fs::write(p, text).map_err(|e| format!("writing {}: {e}", p.display()).into())
}

fn cpus(s: &Option<String>) -> Result<Vec<usize>, Error> {
    Ok(match s {
        Some(s) => parse_cpus(s)?,
        None => Vec::new(),
    })
}

fn run_ab(a: AbArgs) -> Result<(), Error> {
    check_variants(&a.variants)?;
    let shape = shapes::find(&a.common.shapes, &a.shape)?;
    let client_cpus = cpus(&a.client_cpus)?;
    let gateway_cpus = cpus(&a.gateway_cpus)?;
    let mock_cpus = match &a.mock_cpus {
        Some(_) => cpus(&a.mock_cpus)?,
        None => client_cpus.clone(),
    };
    // The gateway must not share a core with its load: that would measure the scheduler.
    if gateway_cpus
        .iter()
        .any(|c| client_cpus.contains(c) || mock_cpus.contains(c))
    {
        return Err("--gateway-cpus must be disjoint from --client-cpus and --mock-cpus".into());
    }
    // Before the runtime exists, so that its threads inherit the mask.
    if !client_cpus.is_empty() {
        launch::pin_current(&client_cpus)?;
    }
    let opts = AbOptions {
        rounds: a.rounds,
        windows: a.windows,
        window_s: a.window_s,
        window_requests: a.window_requests,
        warmup_requests: a.warmup_requests,
        connections: a.connections.unwrap_or(shape.concurrency),
        max_retries: a.max_retries,
        workers: a.workers,
        control: !a.no_control,
        gateway_cpus,
        mock_cpus,
        work_dir: work_dir(&a.common, "ab"),
        ready_timeout: Duration::from_secs(60),
        exit_timeout: Duration::from_secs(60),
        request_timeout: Duration::from_secs(30),
    };
    let r = runtime(a.client_threads)?.block_on(ab::run(&shape, &a.variants, &opts))?;
    emit(&a.common, &r, &report::ab_markdown(&r))
}

fn list<T: std::str::FromStr>(what: &str, s: &str) -> Result<Vec<T>, Error> {
    let v = s
        .split(',')
        .filter(|p| !p.trim().is_empty())
        .map(|p| p.trim().parse::<T>())
        .collect::<Result<Vec<T>, _>>()
        .map_err(|_| format!("--{what}: bad list {s:?} (expected e.g. 1,2,4)"))?;
    if v.is_empty() {
        return Err(format!("--{what}: empty list").into());
    }
    Ok(v)
}

fn run_board(a: BoardArgs) -> Result<(), Error> {
    check_variants(&a.variants)?;
    let gateway_cpus = cpus(&a.gateway_cpus)?;
    let load_cpus = cpus(&a.load_cpus)?;
    let mock_cpus = match &a.mock_cpus {
        Some(_) => cpus(&a.mock_cpus)?,
        None => load_cpus.clone(),
    };
    if gateway_cpus
        .iter()
        .any(|c| load_cpus.contains(c) || mock_cpus.contains(c))
    {
        return Err("--gateway-cpus must be disjoint from --load-cpus and --mock-cpus".into());
    }
    if a.step_s <= 0.0 || a.latency_s <= 0.0 || a.rounds == 0 {
        return Err("--rounds, --step-s and --latency-s must be positive".into());
    }
    let threads = |n: Option<usize>, c: &[usize]| n.unwrap_or(c.len()).max(1);
    let mut opts = BoardOptions::new(work_dir(&a.common, "board"), a.common.shapes.clone());
    opts.rounds = a.rounds;
    opts.control = !a.no_control;
    opts.workers = a.workers;
    board::runtime::check(&a.runtimes)?;
    opts.runtimes = a.runtimes.clone();
    opts.load_threads = threads(a.load_threads, &load_cpus);
    opts.mock_threads = threads(a.mock_threads, &mock_cpus);
    opts.gateway_cpus = gateway_cpus;
    opts.load_cpus = load_cpus.clone();
    opts.mock_cpus = mock_cpus;
    opts.latency_s = a.latency_s;
    opts.step_s = a.step_s;
    opts.concurrency = list("concurrency", &a.concurrency)?;
    opts.bounds_ms = list("bounds-ms", &a.bounds_ms)?;
    opts.cpu_concurrency = a.cpu_concurrency;
    opts.xlat_concurrency = list("xlat-concurrency", &a.xlat_concurrency)?;
    opts.stream_deltas = a.stream_deltas.max(1);
    opts.stream_pace = Duration::from_millis(a.stream_pace_ms);
    opts.stream_samples = a.stream_samples.max(1);
    opts.stream_concurrency = list("stream-concurrency", &a.stream_concurrency)?;
    opts.stall = Duration::from_millis(a.stall_ms.max(1));
    opts.recover_max = Duration::from_secs_f64(a.recover_max_s.max(0.0));
    // Before the runtime exists, so that its threads inherit the mask.
    if !load_cpus.is_empty() {
        launch::pin_current(&load_cpus)
            .map_err(|e| format!("pinning the load generator to CPUs {load_cpus:?}: {e}"))?;
    }
    // A long run stopped by Ctrl-C or SIGTERM drops the run's future, which kills the gateway
    // it has started (kill_on_drop) before the process exits.
    let r = runtime(opts.load_threads)?.block_on(async {
        tokio::select! {
            r = board::run(&a.variants, &opts) => r.map_err(Error::from),
            s = interrupted() => Err(format!("{s}: stopped, the running gateway killed").into()),
        }
    })?;
    emit(&a.common, &r, &board::report::markdown(&r))?;
    let failed: u64 = r.failed.values().sum();
    if failed > 0 {
        eprintln!(
            "bench board: {failed} failed requests or streams (per variant: {:?}); their steps \
             are left out of the figures",
            r.failed
        );
    }
    Ok(())
}

fn run_syscalls(a: SyscallsArgs) -> Result<(), Error> {
    check_variants(&a.variants)?;
    let mut opts = SyscallsOptions::new(work_dir(&a.common, "syscalls"), a.common.shapes.clone());
    opts.strace = a.strace;
    opts.concurrency = list("concurrency", &a.concurrency)?;
    opts.warmup = a.warmup;
    opts.requests_small = a.small;
    opts.requests_big = a.big;
    opts.workers = a.workers;
    opts.max_c1 = a.max_c1;
    opts.gateway_args = a.gateway_args.iter().map(OsString::from).collect();
    for spec in &a.variant_args {
        let (name, args) = spec
            .split_once('=')
            .ok_or_else(|| format!("--variant-args {spec:?}: expected NAME=ARGS"))?;
        if !a.variants.iter().any(|v| v.name == name) {
            return Err(format!("--variant-args {spec:?}: no variant named {name:?}").into());
        }
        opts.variant_args
            .entry(name.to_owned())
            .or_default()
            .extend(args.split_whitespace().map(OsString::from));
    }
    let r = runtime(1)?.block_on(async {
        tokio::select! {
            r = syscalls::run(&a.variants, &opts) => r.map_err(Error::from),
            s = interrupted() => Err(format!("{s}: stopped, the running gateway killed").into()),
        }
    })?;
    let r = syscalls::SyscallReport { note: a.note, ..r };
    emit(&a.common, &r, &syscalls::markdown(&r))?;
    syscalls::gate(&r)?;
    Ok(())
}

/// The first SIGINT or SIGTERM, named.
async fn interrupted() -> &'static str {
    use tokio::signal::unix::{signal, SignalKind};
    match (
        signal(SignalKind::interrupt()),
        signal(SignalKind::terminate()),
    ) {
        (Ok(mut i), Ok(mut t)) => tokio::select! {
            _ = i.recv() => "SIGINT",
            _ = t.recv() => "SIGTERM",
        },
        // Without handlers the default action stands; never resolve.
        _ => std::future::pending().await,
    }
}

fn run_callgrind(a: CallgrindArgs) -> Result<(), Error> {
    check_variants(&a.cg.variants)?;
    let mut shape = shapes::find(&a.common.shapes, &a.shape)?;
    match a.upstream {
        Transport::Shape => {}
        Transport::Http => shape.upstream_tls = false,
        Transport::Https => shape.upstream_tls = true,
    }
    let opts = a.cg.options(work_dir(&a.common, "callgrind"));
    let r = runtime(1)?.block_on(callgrind::run(&shape, &a.cg.variants, &opts))?;
    let md = format!(
        "{}\n{}",
        report::callgrind_markdown(&r),
        report::targets_markdown(&r)
    );
    emit(&a.common, &r, &md)
}

fn run_holdout(a: HoldoutArgs) -> Result<(), Error> {
    check_variants(&a.cg.variants)?;
    if a.cg.variants.len() < 2 {
        return Err("the holdout gate needs the baseline and at least one other variant".into());
    }
    let all = shapes::load_dir(&a.common.shapes)?;
    let holdouts: Vec<_> = all.into_iter().filter(|s| s.holdout).collect();
    let [shape] = holdouts.as_slice() else {
        return Err(format!(
            "expected exactly one holdout shape in {}, found {}",
            a.common.shapes.display(),
            holdouts.len()
        )
        .into());
    };
    let opts = a.cg.options(work_dir(&a.common, "holdout"));
    let r = runtime(1)?.block_on(callgrind::run(shape, &a.cg.variants, &opts))?;
    if let Some(p) = &a.callgrind_json {
        write_file(p, &serde_json::to_string_pretty(&r)?)?;
    }
    let g = holdout::gate(&r, a.max_ratio)?;
    let md = format!(
        "{}\n{}",
        report::holdout_markdown(&g),
        report::callgrind_markdown(&r)
    );
    emit(&a.common, &g, &md)?;
    if !g.pass {
        let worse: Vec<String> = g
            .lines
            .iter()
            .filter(|l| !l.pass)
            .map(|l| format!("{} {:.4}x", l.variant, l.ratio))
            .collect();
        return Err(format!(
            "holdout gate FAILED on {}: instructions/request over {:.2}x {}: {}",
            g.shape,
            g.max_ratio,
            g.baseline,
            worse.join(", ")
        )
        .into());
    }
    Ok(())
}

fn run_responsive(a: ResponsiveArgs) -> Result<(), Error> {
    let opts = ResponsiveOptions {
        gateway: a.gateway,
        size: a.size,
        clients: a.clients,
        duration: Duration::from_secs_f64(a.seconds),
        interval: Duration::from_millis(a.interval_ms),
        runtime: a.runtime,
        work_dir: work_dir(&a.common, "responsive"),
    };
    // Clients, the mock and the sampler: enough threads that the gateway is what waits.
    let r = runtime(4)?.block_on(responsive::run(&opts))?;
    emit(&a.common, &r, &r.markdown())?;
    let problems = r.problems(a.max_p99_ms.unwrap_or(f64::INFINITY));
    if !problems.is_empty() {
        return Err(format!("responsive check FAILED: {}", problems.join("; ")).into());
    }
    Ok(())
}

fn run_rss(a: RssArgs) -> Result<(), Error> {
    // The example config reads upstream and gateway keys from these variables; their values
    // do not matter for an idle gateway.
    let env = [
        "OPENAI_API_KEY",
        "ANTHROPIC_API_KEY",
        "GEMINI_API_KEY",
        "GATEWAY_KEY_TEAM_B",
    ]
    .iter()
    .map(|k| ((*k).to_owned(), format!("bench-{}", k.to_lowercase())))
    .collect();
    let opts = RssOptions {
        gateway: a.gateway,
        config: a.config,
        env,
        settle: Duration::from_millis(a.settle_ms),
        work_dir: work_dir(&a.common, "rss"),
    };
    let r = runtime(1)?.block_on(rss::run(&opts))?;
    emit(&a.common, &r, &report::rss_markdown(&r))
}

fn run_memory(a: MemoryArgs) -> Result<(), Error> {
    let opts = MemoryOptions {
        gateway: a.gateway,
        work_dir: work_dir(&a.common, "memory"),
        only: a.only,
        target: a.target,
    };
    let r = runtime(2)?.block_on(memory::run(&opts))?;
    emit(&a.common, &r, &memory::markdown(&r))?;
    let failed = r.failed();
    if !failed.is_empty() {
        let names: Vec<&str> = failed.iter().map(|c| c.case.as_str()).collect();
        return Err(format!(
            "peak RSS growth over {:.1}x the bytes read: {}",
            r.target,
            names.join(", ")
        )
        .into());
    }
    Ok(())
}

fn run_load(a: LoadArgs) -> Result<(), Error> {
    let shape = shapes::find(&a.common.shapes, &a.shape)?;
    let opts = LoadOptions {
        gateway: a.gateway,
        connections: a.connections,
        requests: a.requests,
        workers: a.workers,
        work_dir: work_dir(&a.common, "load"),
    };
    let r = runtime(2)?.block_on(load::run(&shape, &opts))?;
    emit(&a.common, &r, &report::load_markdown(&r))?;
    if !r.pass() {
        return Err(format!(
            "load check FAILED: {} of {} requests failed",
            r.failed, r.requests
        )
        .into());
    }
    Ok(())
}

fn run_soak(a: SoakArgs) -> Result<(), Error> {
    let opts = SoakOptions {
        gateway: a.gateway,
        duration: Duration::from_secs(a.duration_s),
        normal_clients: a.clients,
        work_dir: work_dir(&a.common, "soak"),
    };
    let r = runtime(2)?.block_on(soak::run(&opts))?;
    emit(&a.common, &r, &soak::markdown(&r))?;
    let problems = r.problems();
    if !problems.is_empty() {
        return Err(format!("soak FAILED: {}", problems.join("; ")).into());
    }
    Ok(())
}

fn run_soak_shared(a: SoakSharedArgs) -> Result<(), Error> {
    let opts = SharedSoakOptions {
        gateway: a.gateway,
        duration: Duration::from_secs(a.duration_s),
        work_dir: work_dir(&a.common, "soak-shared"),
    };
    let r = runtime(2)?.block_on(soak_shared::run(&opts))?;
    emit(&a.common, &r, &soak_shared::markdown(&r))?;
    let problems = r.problems();
    if !problems.is_empty() {
        return Err(format!("shared soak FAILED: {}", problems.join("; ")).into());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct Top {
        #[command(flatten)]
        bench: BenchArgs,
    }

    fn parse(args: &[&str]) -> Result<BenchArgs, clap::Error> {
        Top::try_parse_from(std::iter::once("bench").chain(args.iter().copied())).map(|t| t.bench)
    }

    #[test]
    fn ab_is_the_default_and_subcommands_stand_alone() {
        let a = parse(&[
            "--variant",
            "plain=/a",
            "--variant",
            "pgo=/b",
            "--rounds",
            "5",
        ])
        .unwrap();
        assert!(a.command.is_none());
        assert_eq!(a.ab.variants.len(), 2);
        assert_eq!(a.ab.rounds, 5);
        // A/B needs a variant; a subcommand does not take A/B flags.
        assert!(parse(&[]).is_err());
        let h = parse(&["holdout", "--variant", "plain=/a", "--variant", "pgo=/b"]).unwrap();
        match h.command.map(|c| *c) {
            Some(BenchCommand::Holdout(h)) => {
                assert_eq!(h.max_ratio, 1.0);
                assert_eq!((h.cg.small, h.cg.big), (8, 2000));
            }
            _ => panic!("expected holdout"),
        }
        assert!(parse(&["--rounds", "2", "holdout", "--variant", "a=/a"]).is_err());
        let b = parse(&["board", "--variant", "plain=/a", "--gateway-cpus", "0"]).unwrap();
        match b.command.map(|c| *c) {
            Some(BenchCommand::Board(b)) => {
                assert_eq!((b.rounds, b.workers, b.stream_deltas), (3, 1, 64));
                assert_eq!(list::<u32>("c", &b.concurrency).unwrap().len(), 8);
            }
            _ => panic!("expected board"),
        }
        assert!(list::<u32>("c", "1,x").is_err());
        assert!(list::<u32>("c", "").is_err());
        assert!(parse(&["callgrind", "--variant", "nonsense"]).is_err());
    }
}
