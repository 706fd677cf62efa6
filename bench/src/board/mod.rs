//! The public same-rig board's metrics, measured our way: every variant (and a control, the
//! baseline's identical copy) in interleaved rounds whose order rotates, each round also
//! driving the mock directly (the rig's own ceiling and the baseline the "added" figures
//! subtract). Per gateway run: idle RSS, latency at concurrency 1, the throughput frontier
//! from one concurrency sweep (with CPU per request and steady RSS under it), the
//! Anthropic-in translation lane, streams against a paced mock, recovered RSS.
//!
//! `latency` drives non-streamed load, `frontier` turns a sweep into max rates under p99
//! bounds, `streams` is the paced-stream client, `memory` reads RSS, `report` the markdown;
//! this module runs the schedule and assembles the medians, ratios and control bands.

mod frontier;
mod latency;
mod memory;
pub mod report;
pub mod runtime;
mod split;
mod streams;
pub mod worth;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use toml::{Table, Value};

use crate::config::{bench_config, BENCH_KEY};
use crate::error::{io, BenchError};
use crate::stats::{self, Band, SlotKind, Verdict};
use crate::upstream::MockThread;
use crate::variant::{Variant, CONTROL};
use trainer::launch::{GatewayProcess, Launch};
use trainer::mock::MockConfig;
use trainer::shapes::{self, Shape};

pub use frontier::frontier;
pub use latency::LoadStep;
pub use streams::StreamStep;

/// The name of the legs that drive the mock directly, without a gateway.
pub const DIRECT: &str = "direct";

/// The non-streamed reference body (OpenAI chat to an OpenAI provider).
pub(crate) const CHAT_SHAPE: &str = "chat-nonstream-minimal";
/// The translation lane: an Anthropic `/v1/messages` client, the model on an OpenAI provider.
pub(crate) const XLAT_SHAPE: &str = "messages-nonstream-minimal-via-openai";
/// The streamed body (chat, include_usage), its model renamed to route to the paced mock.
const STREAM_SHAPE: &str = "chat-stream-minimal";
const PACED_MODEL: &str = "board-paced";
/// Recovered RSS: read once it has not fallen for this long after the load (at least this
/// long after it, so an allocator's decay timer gets its chance).
const RECOVER_WINDOW: Duration = Duration::from_secs(2);

#[derive(Debug, Clone)]
pub struct BoardOptions {
    pub rounds: u32,
    /// Add the control leg (the baseline copied under another name).
    pub control: bool,
    /// Gateway worker threads.
    pub workers: usize,
    /// Each variant is measured under each of these `--runtime`s (none: the binary's default).
    pub runtimes: Vec<String>,
    pub gateway_cpus: Vec<usize>,
    /// Where the caller pinned this process (the load generator); recorded for the report.
    pub load_cpus: Vec<usize>,
    pub load_threads: usize,
    pub mock_cpus: Vec<usize>,
    pub mock_threads: usize,
    /// Length of the concurrency-1 latency window (after a short warm-up).
    pub latency_s: f64,
    /// Length of each sweep step.
    pub step_s: f64,
    /// The sweep's concurrencies (ascending after dedup; `cpu_concurrency` is added).
    pub concurrency: Vec<u32>,
    /// The frontier's p99 bounds in ms (plus unbounded, always).
    pub bounds_ms: Vec<f64>,
    /// The sweep step whose gateway CPU time per request is reported.
    pub cpu_concurrency: u32,
    /// Concurrencies of the translation lane's max-rate steps.
    pub xlat_concurrency: Vec<u32>,
    /// Text deltas per paced stream and the pause between them.
    pub stream_deltas: usize,
    pub stream_pace: Duration,
    /// Streams at concurrency 1 (one after another) for time to first token and gaps.
    pub stream_samples: u32,
    /// The ladder of stream concurrencies for "carried without a dropped frame or stall".
    pub stream_concurrency: Vec<u32>,
    /// A gap between two frames longer than this is a stall.
    pub stall: Duration,
    /// Longest wait for RSS to stop falling after the load.
    pub recover_max: Duration,
    pub work_dir: PathBuf,
    pub shapes_dir: PathBuf,
    pub ready_timeout: Duration,
    pub exit_timeout: Duration,
    pub request_timeout: Duration,
    /// Fault injection (the smoke test): both mocks answer every request with this status.
    pub mock_fail_status: Option<u16>,
}

impl BoardOptions {
    /// Defaults sized for the 2-core rig; the scripts and tests override what they need.
    pub fn new(work_dir: PathBuf, shapes_dir: PathBuf) -> BoardOptions {
        BoardOptions {
            rounds: 3,
            control: true,
            workers: 1,
            runtimes: Vec::new(),
            gateway_cpus: Vec::new(),
            load_cpus: Vec::new(),
            load_threads: 1,
            mock_cpus: Vec::new(),
            mock_threads: 1,
            latency_s: 1.5,
            step_s: 1.0,
            concurrency: vec![1, 2, 4, 8, 16, 32, 64, 128],
            bounds_ms: vec![1.0, 5.0, 10.0, 50.0, 100.0],
            cpu_concurrency: 64,
            xlat_concurrency: vec![8, 32],
            stream_deltas: 64,
            stream_pace: Duration::from_millis(20),
            stream_samples: 3,
            stream_concurrency: vec![16, 64, 256],
            stall: Duration::from_millis(500),
            recover_max: Duration::from_secs(10),
            work_dir,
            shapes_dir,
            ready_timeout: Duration::from_secs(60),
            exit_timeout: Duration::from_secs(60),
            request_timeout: Duration::from_secs(10),
            mock_fail_status: None,
        }
    }

    fn sweep(&self) -> Vec<u32> {
        let mut c: Vec<u32> = self
            .concurrency
            .iter()
            .copied()
            .filter(|c| *c > 0)
            .collect();
        c.push(self.cpu_concurrency.max(1));
        c.sort_unstable();
        c.dedup();
        c
    }
}

/// One gateway run (or one direct run) in one round: the raw figures, before subtraction.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Leg {
    pub variant: String,
    pub round: u32,
    /// Position in the round's (rotated) order.
    pub position: usize,
    /// Raw figures by key (see `raw`); a figure is absent when its step had a failure.
    pub raw: BTreeMap<String, f64>,
    /// Failed requests and streams over the whole leg.
    pub failed: u64,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub failures: Vec<String>,
    pub steps: Vec<LoadStep>,
    pub xlat_steps: Vec<LoadStep>,
    pub streams: Vec<StreamStep>,
}

impl Leg {
    fn new(variant: &str, round: u32, position: usize) -> Leg {
        Leg {
            variant: variant.to_owned(),
            round,
            position,
            raw: BTreeMap::new(),
            failed: 0,
            failures: Vec::new(),
            steps: Vec::new(),
            xlat_steps: Vec::new(),
            streams: Vec::new(),
        }
    }

    fn fail(&mut self, n: u64, failures: &[String]) {
        self.failed += n;
        for f in failures {
            if self.failures.len() < 5 {
                self.failures.push(f.clone());
            }
        }
    }

    fn set(&mut self, key: &str, value: Option<f64>) {
        if let Some(v) = value.filter(|v| v.is_finite()) {
            self.raw.insert(key.to_owned(), v);
        }
    }
}

/// Keys of the raw figures of a leg.
pub(crate) mod raw {
    pub const C1_P50: &str = "c1_p50_ms";
    pub const C1_P99: &str = "c1_p99_ms";
    pub const XLAT_P50: &str = "xlat_c1_p50_ms";
    pub const XLAT_P99: &str = "xlat_c1_p99_ms";
    pub const XLAT_MAX: &str = "xlat_max_rps";
    pub const TTFT: &str = "stream_ttft_ms";
    pub const GAP_P50: &str = "stream_gap_p50_ms";
    pub const GAP_P99: &str = "stream_gap_p99_ms";
    pub const CARRIED: &str = "stream_carried";
    pub const CPU: &str = "cpu_us_per_req";
    pub const CPU_USER: &str = "cpu_user_us_per_req";
    pub const CPU_SYS: &str = "cpu_sys_us_per_req";
    pub const RSS_IDLE: &str = "rss_idle_mib";
    pub const RSS_STEADY: &str = "rss_steady_mib";
    pub const RSS_RECOVERED: &str = "rss_recovered_mib";
    pub const UNBOUNDED: &str = "frontier_unbounded_rps";

    pub fn frontier(bound_ms: f64) -> String {
        format!("frontier_p99_le_{bound_ms}ms_rps")
    }
}

/// One reported figure: how it is derived from the legs, and which way is better.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Metric {
    pub key: String,
    pub label: String,
    pub unit: String,
    pub higher_is_better: bool,
    /// Subtract the same round's direct leg's value of this raw key ("added" figures).
    pub minus_direct: bool,
}

/// The board's figures, in the order of the report.
pub(crate) fn metrics(bounds_ms: &[f64]) -> Vec<Metric> {
    let m = |key: &str, label: &str, unit: &str, higher: bool, added: bool| Metric {
        key: key.to_owned(),
        label: label.to_owned(),
        unit: unit.to_owned(),
        higher_is_better: higher,
        minus_direct: added,
    };
    let mut v = vec![
        m(raw::C1_P50, "added p50 latency, c=1", "ms", false, true),
        m(raw::C1_P99, "added p99 latency, c=1", "ms", false, true),
    ];
    for b in bounds_ms {
        v.push(m(
            &raw::frontier(*b),
            &format!("max req/s, p99 <= {b} ms"),
            "req/s",
            true,
            false,
        ));
    }
    v.extend([
        m(raw::UNBOUNDED, "max req/s, unbounded", "req/s", true, false),
        m(
            raw::XLAT_P50,
            "translation lane: added p50, c=1",
            "ms",
            false,
            true,
        ),
        m(
            raw::XLAT_P99,
            "translation lane: added p99, c=1",
            "ms",
            false,
            true,
        ),
        m(
            raw::XLAT_MAX,
            "translation lane: max req/s",
            "req/s",
            true,
            false,
        ),
        m(
            raw::TTFT,
            "streams: added time to first token",
            "ms",
            false,
            true,
        ),
        m(
            raw::GAP_P50,
            "streams: added inter-frame gap p50",
            "ms",
            false,
            true,
        ),
        m(
            raw::GAP_P99,
            "streams: added inter-frame gap p99",
            "ms",
            false,
            true,
        ),
        m(
            raw::CARRIED,
            "streams carried, no dropped frame or stall",
            "streams",
            true,
            false,
        ),
        m(raw::CPU, "gateway CPU per request", "us", false, false),
        m(
            raw::CPU_USER,
            "gateway CPU per request: user",
            "us",
            false,
            false,
        ),
        m(
            raw::CPU_SYS,
            "gateway CPU per request: kernel",
            "us",
            false,
            false,
        ),
        m(raw::RSS_IDLE, "RSS idle", "MiB", false, false),
        m(
            raw::RSS_STEADY,
            "RSS steady (under load)",
            "MiB",
            false,
            false,
        ),
        m(raw::RSS_RECOVERED, "RSS recovered", "MiB", false, false),
    ]);
    v
}

/// One variant's figure across rounds.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Cell {
    pub variant: String,
    /// Median over the rounds that have the figure.
    pub median: Option<f64>,
    pub rounds: usize,
    /// Median over the baseline's median.
    pub ratio: Option<f64>,
    /// Per-round ratios to the baseline in the same round.
    pub paired: Vec<f64>,
    /// Against the control band; `None` for the baseline and the control.
    pub verdict: Option<Verdict>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Row {
    pub metric: Metric,
    pub cells: Vec<Cell>,
    /// The control's ratios' range (always including 1.00).
    pub band: Option<Band>,
}

/// The rig as measured: the direct legs' medians.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Rig {
    pub cpus: usize,
    pub cpu_model: String,
    pub gateway_cpus: Vec<usize>,
    pub workers: usize,
    /// The `--runtime`s each variant ran under (empty: the binaries' default).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub runtimes: Vec<String>,
    pub load_cpus: Vec<usize>,
    pub load_threads: usize,
    pub mock_cpus: Vec<usize>,
    pub mock_threads: usize,
    pub rounds: u32,
    pub latency_s: f64,
    pub step_s: f64,
    pub concurrency: Vec<u32>,
    pub bounds_ms: Vec<f64>,
    pub cpu_concurrency: u32,
    pub xlat_concurrency: Vec<u32>,
    pub stream_deltas: usize,
    pub stream_pace_ms: f64,
    pub stream_samples: u32,
    pub stream_concurrency: Vec<u32>,
    pub stall_ms: f64,
    /// Direct to the mock (medians over rounds).
    pub direct_c1_p50_ms: Option<f64>,
    pub direct_c1_p99_ms: Option<f64>,
    pub direct_xlat_p50_ms: Option<f64>,
    pub direct_xlat_p99_ms: Option<f64>,
    pub direct_ttft_ms: Option<f64>,
    pub direct_gap_p50_ms: Option<f64>,
    pub direct_gap_p99_ms: Option<f64>,
    /// The load generator straight to the mock: the rig's own ceiling.
    pub ceiling_rps: Option<f64>,
    /// The ceiling over the best gateway's unbounded rate.
    pub headroom: Option<f64>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct BoardReport {
    pub baseline: String,
    /// (name, binary) in report order: baseline, control, the others.
    pub variants: Vec<(String, String)>,
    pub rig: Rig,
    pub rows: Vec<Row>,
    /// Failed requests and streams per variant (direct included), over all rounds.
    pub failed: BTreeMap<String, u64>,
    pub seconds: f64,
    pub legs: Vec<Leg>,
}

/// Runs the whole schedule. `variants[0]` is the baseline.
pub async fn run(variants: &[Variant], opts: &BoardOptions) -> Result<BoardReport, BenchError> {
    let started = std::time::Instant::now();
    if variants.is_empty() {
        return Err(BenchError::Failed("no variants to measure".into()));
    }
    if variants.iter().any(|v| v.name == DIRECT) {
        return Err(BenchError::Failed(format!(
            "{DIRECT:?} names the mock's own legs; pick another variant name"
        )));
    }
    std::fs::create_dir_all(&opts.work_dir)
        .map_err(io(format!("creating {}", opts.work_dir.display())))?;
    let all = if opts.control {
        crate::variant::with_control(variants, &opts.work_dir)?
    } else {
        variants.to_vec()
    };
    let legs_of = runtime::expand(all, &opts.runtimes)?;
    let all: Vec<Variant> = legs_of.iter().map(|(v, _)| v.clone()).collect();
    let shapes = Shapes::load(&opts.shapes_dir)?;
    let fail = |c: MockConfig| MockConfig {
        fail_status: opts.mock_fail_status,
        ..c
    };
    let mock = MockThread::start_with(
        fail(MockConfig::default()),
        opts.mock_cpus.clone(),
        opts.mock_threads,
    )
    .map_err(io(format!(
        "starting the mock upstream (CPUs {:?})",
        opts.mock_cpus
    )))?;
    let paced = MockThread::start_with(
        fail(MockConfig {
            chunks: opts.stream_deltas,
            chunk_delay: opts.stream_pace,
            ..MockConfig::default()
        }),
        opts.mock_cpus.clone(),
        opts.mock_threads,
    )
    .map_err(io(format!(
        "starting the paced mock upstream (CPUs {:?})",
        opts.mock_cpus
    )))?;
    let config = opts.work_dir.join("board-gateway.toml");
    std::fs::write(
        &config,
        board_config(&shapes, mock.base_url(), paced.base_url(), opts.workers),
    )
    .map_err(io(format!("writing {}", config.display())))?;

    // The direct legs rotate with the variants: index `all.len()`.
    let slots: Vec<_> = stats::schedule(all.len() + 1, opts.rounds)
        .into_iter()
        .filter(|s| s.kind == SlotKind::Round)
        .collect();
    let mut legs = Vec::new();
    let mut position = 0;
    let mut last_round = None;
    for (i, slot) in slots.iter().enumerate() {
        let round = slot.round.unwrap_or(0);
        if last_round != Some(round) {
            position = 0;
            last_round = Some(round);
        }
        let targets = Targets {
            chat: mock.base_url(),
            paced: paced.base_url(),
        };
        let leg = match legs_of.get(slot.variant) {
            Some((v, args)) => {
                let leg = Leg::new(&v.name, round, position);
                gateway_leg(leg, v, args, &config, &shapes, opts, i).await?
            }
            None => direct_leg(Leg::new(DIRECT, round, position), &targets, &shapes, opts).await,
        };
        eprintln!(
            "bench board: {}/{} round {} {}: {} failed, c=1 p50 {} ms, unbounded {} req/s",
            i + 1,
            slots.len(),
            round,
            leg.variant,
            leg.failed,
            leg.raw
                .get(raw::C1_P50)
                .map_or("-".into(), |x| format!("{x:.3}")),
            leg.raw
                .get(raw::UNBOUNDED)
                .map_or("-".into(), |x| format!("{x:.0}")),
        );
        legs.push(leg);
        position += 1;
    }
    drop(paced);
    drop(mock);
    Ok(assemble(&all, opts, legs, started.elapsed().as_secs_f64()))
}

/// The shapes the board drives, the stream's model renamed to route to the paced mock.
pub(crate) struct Shapes {
    pub(crate) chat: Shape,
    pub(crate) xlat: Shape,
    stream: Shape,
}

impl Shapes {
    pub(crate) fn load(dir: &Path) -> Result<Shapes, BenchError> {
        let find = |n: &str| {
            shapes::find(dir, n).map_err(|e| BenchError::Failed(format!("shape {n}: {e}")))
        };
        let mut stream = find(STREAM_SHAPE)?;
        let mut body: serde_json::Value = serde_json::from_slice(&stream.body)
            .map_err(|e| BenchError::Failed(format!("{STREAM_SHAPE} body: {e}")))?;
        body["model"] = PACED_MODEL.into();
        stream.body = serde_json::to_vec(&body).expect("JSON serializes");
        stream.model = PACED_MODEL.into();
        Ok(Shapes {
            chat: find(CHAT_SHAPE)?,
            xlat: find(XLAT_SHAPE)?,
            stream,
        })
    }
}

/// One config with the three models: chat and the translation lane on the fast mock, the
/// streamed model on the paced one.
pub(crate) fn board_config(s: &Shapes, fast: &str, paced: &str, workers: usize) -> String {
    let parse = |t: String| -> Table { toml::from_str(&t).expect("rendered config parses") };
    let mut root = parse(bench_config(&s.chat, fast, None, workers));
    let mut models = Vec::new();
    if let Some(Value::Array(m)) = root.get("models") {
        models.extend(m.iter().cloned());
    }
    for (shape, url) in [(&s.xlat, fast), (&s.stream, paced)] {
        if let Some(Value::Array(m)) = parse(bench_config(shape, url, None, workers)).get("models")
        {
            models.extend(m.iter().cloned());
        }
    }
    root.insert("models".into(), Value::Array(models));
    toml::to_string(&root).expect("config serializes")
}

struct Targets<'a> {
    chat: &'a str,
    paced: &'a str,
}

/// The mock driven directly: the c=1 baselines, the rig's ceiling, the streams' baseline.
async fn direct_leg(mut leg: Leg, t: &Targets<'_>, s: &Shapes, opts: &BoardOptions) -> Leg {
    let d = latency::Driver {
        url: t.chat.to_owned(),
        timeout: opts.request_timeout,
        gateway: None,
    };
    let c1 = latency::c1(&d, &s.chat, opts.latency_s).await;
    record_c1(&mut leg, &c1, raw::C1_P50, raw::C1_P99);
    let steps = latency::sweep(&d, &s.chat, &opts.sweep(), opts.step_s, c1.rate()).await;
    record_sweep(&mut leg, steps, opts);
    let x1 = latency::c1(&d, &s.xlat, opts.latency_s).await;
    record_c1(&mut leg, &x1, raw::XLAT_P50, raw::XLAT_P99);
    let st = streams::Target::new(t.paced, &s.stream, BENCH_KEY);
    let sample = streams::step(&st, 1, opts.stream_samples.max(1), opts).await;
    record_stream_sample(&mut leg, sample);
    leg
}

async fn gateway_leg(
    mut leg: Leg,
    v: &Variant,
    args: &[String],
    config: &Path,
    s: &Shapes,
    opts: &BoardOptions,
    index: usize,
) -> Result<Leg, BenchError> {
    let launch = Launch {
        bin: v.path.clone(),
        config: config.to_owned(),
        args: args.iter().map(Into::into).collect(),
        wrapper: Vec::new(),
        cpus: opts.gateway_cpus.clone(),
        env: Vec::new(),
        stderr: opts
            .work_dir
            .join(format!("leg-{index:03}-{}.stderr", v.name)),
        ready_timeout: opts.ready_timeout,
        healthz: true,
        preflight: true,
    };
    let gw = GatewayProcess::start(&launch).await.map_err(|e| {
        BenchError::Failed(format!(
            "variant {} ({}), round {}: the gateway did not start: {e}",
            v.name,
            v.path.display(),
            leg.round
        ))
    })?;
    // Dropping `gw` on any early return kills it (kill_on_drop); `stop` below is the clean
    // path, which must exit 0.
    let pid = gw.pid();
    leg.set(
        raw::RSS_IDLE,
        memory::settled(pid, Duration::from_millis(300), Duration::from_secs(2))
            .await
            .map(mib),
    );
    let sampler = memory::Sampler::start(pid);
    let url = gw.base_url();
    let d = latency::Driver {
        url: url.clone(),
        timeout: opts.request_timeout,
        gateway: Some(&gw),
    };
    let c1 = latency::c1(&d, &s.chat, opts.latency_s).await;
    record_c1(&mut leg, &c1, raw::C1_P50, raw::C1_P99);
    let steps = latency::sweep(&d, &s.chat, &opts.sweep(), opts.step_s, c1.rate()).await;
    record_sweep(&mut leg, steps, opts);

    let x1 = latency::c1(&d, &s.xlat, opts.latency_s).await;
    record_c1(&mut leg, &x1, raw::XLAT_P50, raw::XLAT_P99);
    let xsteps = latency::sweep(&d, &s.xlat, &opts.xlat_concurrency, opts.step_s, x1.rate()).await;
    for st in &xsteps {
        leg.fail(st.failed, &st.failures);
    }
    leg.set(raw::XLAT_MAX, frontier(&xsteps, None));
    leg.xlat_steps = xsteps;

    let st = streams::Target::new(&url, &s.stream, BENCH_KEY);
    let sample = streams::step(&st, 1, opts.stream_samples.max(1), opts).await;
    let mut carried = if sample.carried() { Some(1.0) } else { None };
    record_stream_sample(&mut leg, sample);
    if carried.is_some() {
        let mut ladder: Vec<u32> = opts
            .stream_concurrency
            .iter()
            .copied()
            .filter(|c| *c > 1)
            .collect();
        ladder.sort_unstable();
        ladder.dedup();
        for c in ladder {
            let r = streams::step(&st, c, 1, opts).await;
            let ok = r.carried();
            leg.fail(r.failed(), &r.failures);
            leg.streams.push(r);
            if !ok {
                break;
            }
            carried = Some(f64::from(c));
        }
    }
    leg.set(raw::CARRIED, Some(carried.unwrap_or(0.0)));
    leg.set(raw::RSS_STEADY, sampler.finish().map(mib));
    leg.set(
        raw::RSS_RECOVERED,
        memory::settled(pid, RECOVER_WINDOW, opts.recover_max)
            .await
            .map(mib),
    );
    gw.stop(opts.exit_timeout).await.map_err(|e| {
        BenchError::Failed(format!(
            "variant {}, round {}: the gateway did not stop cleanly: {e}",
            v.name, leg.round
        ))
    })?;
    Ok(leg)
}

fn mib(kib: u64) -> f64 {
    kib as f64 / 1024.0
}

fn record_c1(leg: &mut Leg, s: &LoadStep, p50: &str, p99: &str) {
    leg.fail(s.failed, &s.failures);
    if s.ok() {
        leg.set(p50, Some(s.p50_ms));
        leg.set(p99, Some(s.p99_ms));
    }
}

fn record_sweep(leg: &mut Leg, steps: Vec<LoadStep>, opts: &BoardOptions) {
    for s in &steps {
        leg.fail(s.failed, &s.failures);
    }
    for b in &opts.bounds_ms {
        leg.set(&raw::frontier(*b), frontier(&steps, Some(*b)));
    }
    leg.set(raw::UNBOUNDED, frontier(&steps, None));
    let cpu_step = steps
        .iter()
        .find(|s| s.concurrency == opts.cpu_concurrency.max(1) && s.ok());
    leg.set(raw::CPU, cpu_step.and_then(|s| s.cpu_us_per_req));
    leg.set(raw::CPU_USER, cpu_step.and_then(|s| s.user_us_per_req));
    leg.set(raw::CPU_SYS, cpu_step.and_then(|s| s.sys_us_per_req));
    leg.steps = steps;
}

fn record_stream_sample(leg: &mut Leg, s: StreamStep) {
    leg.fail(s.failed(), &s.failures);
    if s.carried() {
        leg.set(raw::TTFT, s.ttft_p50_ms);
        leg.set(raw::GAP_P50, s.gap_p50_ms);
        leg.set(raw::GAP_P99, s.gap_p99_ms);
    }
    leg.streams.push(s);
}

/// Nearest-rank percentile of sorted values; `None` when empty.
pub(crate) fn percentile(sorted: &[f64], p: u32) -> Option<f64> {
    if sorted.is_empty() {
        return None;
    }
    let rank = (sorted.len() * p as usize).div_ceil(100).max(1);
    Some(sorted[rank.min(sorted.len()) - 1])
}

/// The figure `m` of a gateway leg: its raw value, minus the same round's direct value for an
/// "added" figure.
fn value(m: &Metric, leg: &Leg, direct: Option<&Leg>) -> Option<f64> {
    let v = *leg.raw.get(&m.key)?;
    if m.minus_direct {
        Some(v - direct?.raw.get(&m.key)?)
    } else {
        Some(v)
    }
}

/// `a / b` of two positive figures: an "added" figure can come out at or below zero (the
/// gateway within the direct leg's noise), and a ratio of such is no comparison.
fn positive_ratio(a: f64, b: f64) -> Option<f64> {
    if a > 0.0 {
        stats::ratio(a, b)
    } else {
        None
    }
}

/// Pure: the legs into medians, ratios to the baseline, control bands and verdicts.
pub(crate) fn assemble(
    all: &[Variant],
    opts: &BoardOptions,
    legs: Vec<Leg>,
    seconds: f64,
) -> BoardReport {
    let base = all[0].name.clone();
    let direct_of = |round: u32| {
        legs.iter()
            .find(|l| l.variant == DIRECT && l.round == round)
    };
    let per_round = |m: &Metric, name: &str| -> Vec<(u32, f64)> {
        legs.iter()
            .filter(|l| l.variant == name)
            .filter_map(|l| Some((l.round, value(m, l, direct_of(l.round))?)))
            .collect()
    };
    let mut rows = Vec::new();
    for m in metrics(&opts.bounds_ms) {
        let base_rounds = per_round(&m, &base);
        let base_median = stats::median(&base_rounds.iter().map(|x| x.1).collect::<Vec<_>>());
        let mut cells: Vec<Cell> = all
            .iter()
            .map(|v| {
                let rs = per_round(&m, &v.name);
                let median = stats::median(&rs.iter().map(|x| x.1).collect::<Vec<_>>());
                let paired = if v.name == base {
                    Vec::new()
                } else {
                    rs.iter()
                        .filter_map(|(r, x)| {
                            let b = base_rounds.iter().find(|(rb, _)| rb == r)?.1;
                            positive_ratio(*x, b)
                        })
                        .collect()
                };
                Cell {
                    variant: v.name.clone(),
                    median,
                    rounds: rs.len(),
                    ratio: median
                        .zip(base_median)
                        .and_then(|(a, b)| positive_ratio(a, b)),
                    paired,
                    verdict: None,
                }
            })
            .collect();
        let band = cells.iter().find(|c| c.variant == CONTROL).and_then(|c| {
            let mut rs = c.paired.clone();
            rs.extend(c.ratio);
            Band::from_control(&rs)
        });
        if let Some(b) = band {
            for c in cells
                .iter_mut()
                .filter(|c| c.variant != base && c.variant != CONTROL)
            {
                c.verdict = c.ratio.map(|x| b.classify(x));
            }
        }
        rows.push(Row {
            metric: m,
            cells,
            band,
        });
    }

    let direct = |key: &str| {
        stats::median(
            &legs
                .iter()
                .filter(|l| l.variant == DIRECT)
                .filter_map(|l| l.raw.get(key).copied())
                .collect::<Vec<_>>(),
        )
    };
    let ceiling = direct(raw::UNBOUNDED);
    let best = rows
        .iter()
        .find(|r| r.metric.key == raw::UNBOUNDED)
        .and_then(|r| {
            r.cells
                .iter()
                .filter_map(|c| c.median)
                .fold(None, |m: Option<f64>, x| Some(m.map_or(x, |m| m.max(x))))
        });
    let mut failed = BTreeMap::new();
    for l in &legs {
        *failed.entry(l.variant.clone()).or_insert(0) += l.failed;
    }
    let rig = Rig {
        cpus: online_cpus(),
        cpu_model: cpu_model(),
        gateway_cpus: opts.gateway_cpus.clone(),
        workers: opts.workers,
        runtimes: opts.runtimes.clone(),
        load_cpus: opts.load_cpus.clone(),
        load_threads: opts.load_threads,
        mock_cpus: opts.mock_cpus.clone(),
        mock_threads: opts.mock_threads,
        rounds: opts.rounds,
        latency_s: opts.latency_s,
        step_s: opts.step_s,
        concurrency: opts.sweep(),
        bounds_ms: opts.bounds_ms.clone(),
        cpu_concurrency: opts.cpu_concurrency,
        xlat_concurrency: opts.xlat_concurrency.clone(),
        stream_deltas: opts.stream_deltas,
        stream_pace_ms: opts.stream_pace.as_secs_f64() * 1e3,
        stream_samples: opts.stream_samples,
        stream_concurrency: opts.stream_concurrency.clone(),
        stall_ms: opts.stall.as_secs_f64() * 1e3,
        direct_c1_p50_ms: direct(raw::C1_P50),
        direct_c1_p99_ms: direct(raw::C1_P99),
        direct_xlat_p50_ms: direct(raw::XLAT_P50),
        direct_xlat_p99_ms: direct(raw::XLAT_P99),
        direct_ttft_ms: direct(raw::TTFT),
        direct_gap_p50_ms: direct(raw::GAP_P50),
        direct_gap_p99_ms: direct(raw::GAP_P99),
        ceiling_rps: ceiling,
        headroom: stats::headroom(ceiling, best),
    };
    BoardReport {
        baseline: base,
        variants: all
            .iter()
            .map(|v| (v.name.clone(), v.path.display().to_string()))
            .collect(),
        rig,
        rows,
        failed,
        seconds,
        legs,
    }
}

/// The machine's online CPUs (not this process's mask: the load generator is pinned).
fn online_cpus() -> usize {
    // SAFETY: sysconf has no preconditions.
    let n = unsafe { libc::sysconf(libc::_SC_NPROCESSORS_ONLN) };
    usize::try_from(n).unwrap_or(0)
}

fn cpu_model() -> String {
    std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|t| {
            t.lines()
                .find_map(|l| l.strip_prefix("model name")?.split_once(':'))
                .map(|(_, v)| v.trim().to_owned())
        })
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(name: &str) -> Variant {
        Variant {
            name: name.into(),
            path: PathBuf::from(name),
        }
    }

    fn leg(variant: &str, round: u32, c1_p50: f64, unbounded: f64) -> Leg {
        let mut l = Leg::new(variant, round, 0);
        l.set(raw::C1_P50, Some(c1_p50));
        l.set(raw::UNBOUNDED, Some(unbounded));
        l
    }

    #[test]
    fn added_figures_subtract_the_same_rounds_direct_leg_and_bands_come_from_the_control() {
        let opts = BoardOptions::new("/nonexistent".into(), "/nonexistent".into());
        let all = [v("plain"), v(CONTROL), v("pgo")];
        let legs = vec![
            leg(DIRECT, 0, 0.10, 50_000.0),
            leg("plain", 0, 0.30, 10_000.0),
            leg(CONTROL, 0, 0.31, 10_200.0),
            leg("pgo", 0, 0.20, 13_000.0),
            leg(DIRECT, 1, 0.20, 40_000.0),
            leg("plain", 1, 0.40, 10_000.0),
            leg(CONTROL, 1, 0.39, 9_900.0),
            leg("pgo", 1, 0.30, 12_000.0),
        ];
        let r = assemble(&all, &opts, legs, 1.0);
        let row = |k: &str| r.rows.iter().find(|r| r.metric.key == k).unwrap();
        let cell = |k: &str, n: &str| {
            row(k)
                .cells
                .iter()
                .find(|c| c.variant == n)
                .unwrap()
                .clone()
        };
        // Added: 0.20 in both rounds for plain, 0.10 for pgo.
        let p = cell(raw::C1_P50, "plain");
        assert!((p.median.unwrap() - 0.2).abs() < 1e-9);
        let g = cell(raw::C1_P50, "pgo");
        assert!((g.ratio.unwrap() - 0.5).abs() < 1e-9);
        assert_eq!(g.verdict, Some(Verdict::Below));
        let u = cell(raw::UNBOUNDED, "pgo");
        assert_eq!(u.median, Some(12_500.0));
        assert_eq!(u.paired, vec![1.3, 1.2]);
        assert_eq!(u.verdict, Some(Verdict::Above));
        let band = row(raw::UNBOUNDED).band.unwrap();
        assert_eq!((band.lo, band.hi), (0.99, 1.02));
        assert_eq!(r.rig.ceiling_rps, Some(45_000.0));
        assert!((r.rig.headroom.unwrap() - 45_000.0 / 12_500.0).abs() < 1e-9);
        // A figure nobody measured stays empty, never zero.
        assert_eq!(cell(raw::CPU, "plain").median, None);
    }

    #[test]
    fn percentiles_use_nearest_rank() {
        let v: Vec<f64> = (1..=100).map(f64::from).collect();
        assert_eq!(percentile(&v, 50), Some(50.0));
        assert_eq!(percentile(&v, 99), Some(99.0));
        assert_eq!(percentile(&[], 50), None);
    }

    #[test]
    fn the_config_routes_the_paced_model_to_the_paced_mock() {
        let s = Shapes::load(&shapes::repo_dir()).unwrap();
        let t: Table =
            toml::from_str(&board_config(&s, "http://fast:1", "http://paced:2", 1)).unwrap();
        let models = t["models"].as_array().unwrap();
        assert_eq!(models.len(), 3);
        let url = |name: &str| {
            models
                .iter()
                .find(|m| m["name"].as_str() == Some(name))
                .map(|m| m["targets"][0]["base_url"].as_str().unwrap().to_owned())
        };
        assert_eq!(url(&s.chat.model).as_deref(), Some("http://fast:1"));
        assert_eq!(url(&s.xlat.model).as_deref(), Some("http://fast:1"));
        assert_eq!(url(PACED_MODEL).as_deref(), Some("http://paced:2"));
        assert!(std::str::from_utf8(&s.stream.body)
            .unwrap()
            .contains(PACED_MODEL));
    }
}
