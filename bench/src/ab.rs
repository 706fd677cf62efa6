//! The anchored A/B throughput bench: the variants run in interleaved rounds between a front
//! and a back anchor of the baseline, each gateway run a warm-up and then fixed windows of the
//! same request count; a window with a failed request is recorded, invalid and retried
//! (bounded); a control (an identical copy of the baseline) gives the noise band; the mock
//! driven directly by the same client gives the floor headroom.
//!
//! Windows are a fixed request count, not a fixed duration, so every variant does the same
//! work per window and every response is checked by the shape driver; the count is calibrated
//! once from the front anchor's warm-up to last about `window_s`.

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::config::{bench_config, BENCH_KEY};
use crate::error::{io, BenchError};
use crate::stats::{self, Band, Slot, SlotKind, Step, Summary, Verdict, Window};
use crate::upstream::MockThread;
use crate::variant::Variant;
use trainer::drive::{self, DriveOptions, DriveReport};
use trainer::launch::{GatewayProcess, Launch};
use trainer::shapes::Shape;

pub use crate::variant::CONTROL;

#[derive(Debug, Clone)]
pub struct AbOptions {
    pub rounds: u32,
    pub windows: u32,
    /// Target length of one window; sets the request count per window from the warm-up.
    pub window_s: f64,
    /// A fixed request count per window instead of the calibration.
    pub window_requests: Option<u64>,
    pub warmup_requests: u64,
    pub connections: u32,
    /// Extra attempts of a window that had a failed request.
    pub max_retries: u32,
    /// Gateway worker threads (0 = one per core).
    pub workers: usize,
    pub control: bool,
    pub gateway_cpus: Vec<usize>,
    pub mock_cpus: Vec<usize>,
    pub work_dir: PathBuf,
    pub ready_timeout: Duration,
    pub exit_timeout: Duration,
    pub request_timeout: Duration,
}

/// One window attempt as recorded, valid or not.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Recorded {
    pub variant: String,
    pub(crate) slot: usize,
    pub(crate) kind: SlotKind,
    pub round: Option<u32>,
    pub window: u32,
    pub(crate) attempt: u32,
    pub valid: bool,
    pub(crate) rps: f64,
    #[serde(flatten)]
    pub(crate) w: Window,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub failures: Vec<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct VariantResult {
    pub name: String,
    pub binary: String,
    #[serde(flatten)]
    pub summary: Summary,
    /// Median rate over the baseline's median rate (round windows only).
    pub ratio: Option<f64>,
    /// Per-round ratios to the baseline in the same round.
    pub paired_ratios: Vec<f64>,
    /// Against the control band; `None` for the baseline, the control, or without a band.
    pub verdict: Option<Verdict>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Floor {
    pub mock_rps: Option<f64>,
    pub(crate) best_gateway_rps: Option<f64>,
    pub headroom: Option<f64>,
    pub(crate) required: f64,
    /// False: the client and mock may be what limited; the run measured them, not the gateway.
    pub ok: bool,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct AbReport {
    pub shape: String,
    pub rounds: u32,
    pub windows: u32,
    pub window_requests: u64,
    pub warmup_requests: u64,
    pub connections: u32,
    pub(crate) gateway_workers: usize,
    pub gateway_cpus: Vec<usize>,
    pub(crate) baseline: String,
    pub variants: Vec<VariantResult>,
    pub band: Option<Band>,
    pub(crate) front_anchor_rps: Option<f64>,
    pub(crate) back_anchor_rps: Option<f64>,
    pub drift: Option<f64>,
    pub floor: Floor,
    pub invalid_windows: usize,
    pub windows_recorded: Vec<Recorded>,
}

/// Runs the whole schedule. `variants[0]` is the baseline.
pub async fn run(
    shape: &Shape,
    variants: &[Variant],
    opts: &AbOptions,
) -> Result<AbReport, BenchError> {
    if variants.is_empty() {
        return Err(BenchError::Failed("no variants to measure".into()));
    }
    std::fs::create_dir_all(&opts.work_dir)
        .map_err(io(format!("creating {}", opts.work_dir.display())))?;
    let all = if opts.control {
        crate::variant::with_control(variants, &opts.work_dir)?
    } else {
        variants.to_vec()
    };

    let mock =
        MockThread::start(opts.mock_cpus.clone()).map_err(io("starting the mock upstream"))?;
    let config = opts.work_dir.join("gateway.toml");
    std::fs::write(
        &config,
        bench_config(shape, mock.base_url(), None, opts.workers),
    )
    .map_err(io(format!("writing {}", config.display())))?;

    let slots = stats::schedule(all.len(), opts.rounds);
    let mut window_requests = opts.window_requests;
    let mut recorded = Vec::new();
    for (i, slot) in slots.iter().enumerate() {
        let v = &all[slot.variant];
        let n = run_slot(
            shape,
            v,
            i,
            slot,
            &config,
            opts,
            &mut window_requests,
            &mut recorded,
        )
        .await?;
        eprintln!(
            "bench: slot {}/{} {} ({:?}{}): {n} windows",
            i + 1,
            slots.len(),
            v.name,
            slot.kind,
            slot.round
                .map(|r| format!(" round {r}"))
                .unwrap_or_default()
        );
    }
    let window_requests = window_requests.unwrap_or(0);

    // Floor: the same client, the same shape, the mock directly.
    let mut mock_windows = Vec::new();
    let mock_url = mock.base_url().to_owned();
    let _ = drive_n(shape, &mock_url, opts.warmup_requests, opts).await?;
    for _ in 0..opts.windows.max(1) {
        let r = drive_n(shape, &mock_url, window_requests.max(1), opts).await?;
        mock_windows.push(window_of(&r, 0.0));
    }
    drop(mock);

    Ok(assemble(
        shape,
        &all,
        opts,
        window_requests,
        recorded,
        &mock_windows,
    ))
}

#[allow(clippy::too_many_arguments)]
async fn run_slot(
    shape: &Shape,
    v: &Variant,
    index: usize,
    slot: &Slot,
    config: &Path,
    opts: &AbOptions,
    window_requests: &mut Option<u64>,
    recorded: &mut Vec<Recorded>,
) -> Result<usize, BenchError> {
    let launch = Launch {
        bin: v.path.clone(),
        config: config.to_owned(),
        args: Vec::new(),
        wrapper: Vec::new(),
        cpus: opts.gateway_cpus.clone(),
        env: Vec::new(),
        stderr: opts
            .work_dir
            .join(format!("slot-{index:03}-{}.stderr", v.name)),
        ready_timeout: opts.ready_timeout,
        healthz: true,
        preflight: true,
    };
    let gw = GatewayProcess::start(&launch).await?;
    let url = gw.base_url();
    let result = async {
        let warm = drive_n(shape, &url, opts.warmup_requests.max(1), opts).await?;
        let n = *window_requests.get_or_insert_with(|| {
            // At least a few requests per connection so the window is not all connection setup.
            ((warm.rate() * opts.window_s).round() as u64).max(10 * u64::from(opts.connections))
        });
        let mut kept = 0;
        for w in 0..opts.windows {
            let mut attempt = 0;
            loop {
                let cpu0 = gw.cpu_seconds().unwrap_or(0.0);
                let r = drive_n(shape, &url, n, opts).await?;
                let cpu = (gw.cpu_seconds().unwrap_or(0.0) - cpu0).max(0.0);
                let win = window_of(&r, cpu);
                let valid = win.is_valid();
                recorded.push(Recorded {
                    variant: v.name.clone(),
                    slot: index,
                    kind: slot.kind,
                    round: slot.round,
                    window: w,
                    attempt,
                    valid,
                    rps: win.rate(),
                    w: win,
                    failures: r.failures.clone(),
                });
                match stats::next_step(attempt, valid, opts.max_retries) {
                    Step::Keep => {
                        kept += 1;
                        break;
                    }
                    Step::Retry => attempt += 1,
                    Step::GiveUp => break,
                }
            }
        }
        Ok::<usize, BenchError>(kept)
    }
    .await;
    match result {
        Ok(kept) => {
            gw.stop(opts.exit_timeout).await?;
            Ok(kept)
        }
        Err(e) => {
            gw.kill().await;
            Err(e)
        }
    }
}

async fn drive_n(
    shape: &Shape,
    url: &str,
    n: u64,
    opts: &AbOptions,
) -> Result<DriveReport, BenchError> {
    let mut s = shape.clone();
    s.requests = n;
    s.concurrency = opts.connections;
    let mut d = DriveOptions::new(url, Some(BENCH_KEY.into()));
    d.request_timeout = opts.request_timeout;
    drive::drive(&s, &d)
        .await
        .map_err(|e| BenchError::Failed(format!("driving {url}: {e}")))
}

fn window_of(r: &DriveReport, cpu_s: f64) -> Window {
    Window {
        requests: r.requests,
        failed: r.failed,
        elapsed_s: r.elapsed.as_secs_f64(),
        cpu_s,
        p50_ms: r.p50.as_secs_f64() * 1e3,
        p99_ms: r.p99.as_secs_f64() * 1e3,
    }
}

/// Pure: turns the recorded windows into the report.
pub(crate) fn assemble(
    shape: &Shape,
    all: &[Variant],
    opts: &AbOptions,
    window_requests: u64,
    recorded: Vec<Recorded>,
    mock_windows: &[Window],
) -> AbReport {
    let windows_of = |name: &str, pred: &dyn Fn(&Recorded) -> bool| -> Vec<Window> {
        recorded
            .iter()
            .filter(|r| r.variant == name && pred(r))
            .map(|r| r.w)
            .collect()
    };
    let per_round = |name: &str| -> Vec<Vec<Window>> {
        (0..opts.rounds)
            .map(|round| windows_of(name, &|r| r.round == Some(round)))
            .collect()
    };
    let base = &all[0].name;
    let base_summary = stats::summarize(&windows_of(base, &|r| r.kind == SlotKind::Round));
    let base_rounds = per_round(base);

    let mut results: Vec<VariantResult> = all
        .iter()
        .map(|v| {
            let summary = stats::summarize(&windows_of(&v.name, &|r| r.kind == SlotKind::Round));
            let ratio = summary
                .median_rps
                .zip(base_summary.median_rps)
                .and_then(|(a, b)| stats::ratio(a, b));
            VariantResult {
                name: v.name.clone(),
                binary: v.path.display().to_string(),
                summary,
                ratio,
                paired_ratios: if &v.name == base {
                    Vec::new()
                } else {
                    stats::paired_ratios(&per_round(&v.name), &base_rounds)
                },
                verdict: None,
            }
        })
        .collect();

    let band = results.iter().find(|r| r.name == CONTROL).and_then(|c| {
        let mut rs = c.paired_ratios.clone();
        rs.extend(c.ratio);
        Band::from_control(&rs)
    });
    if let Some(b) = band {
        for r in results
            .iter_mut()
            .filter(|r| &r.name != base && r.name != CONTROL)
        {
            r.verdict = r.ratio.map(|x| b.classify(x));
        }
    }

    let anchor =
        |kind: SlotKind| stats::summarize(&windows_of(base, &|r| r.kind == kind)).median_rps;
    let front = anchor(SlotKind::Front);
    let back = anchor(SlotKind::Back);
    let best = results
        .iter()
        .filter_map(|r| r.summary.median_rps)
        .fold(None, |m: Option<f64>, x| Some(m.map_or(x, |m| m.max(x))));
    let mock_rps = stats::summarize(mock_windows).median_rps;
    let headroom = stats::headroom(mock_rps, best);
    AbReport {
        shape: shape.name.clone(),
        rounds: opts.rounds,
        windows: opts.windows,
        window_requests,
        warmup_requests: opts.warmup_requests,
        connections: opts.connections,
        gateway_workers: opts.workers,
        gateway_cpus: opts.gateway_cpus.clone(),
        baseline: base.clone(),
        variants: results,
        band,
        front_anchor_rps: front,
        back_anchor_rps: back,
        drift: stats::drift(front, back),
        floor: Floor {
            mock_rps,
            best_gateway_rps: best,
            headroom,
            required: stats::MIN_FLOOR_HEADROOM,
            ok: headroom.is_some_and(|h| h >= stats::MIN_FLOOR_HEADROOM),
        },
        invalid_windows: recorded.iter().filter(|r| !r.valid).count(),
        windows_recorded: recorded,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use trainer::shapes;

    fn opts(rounds: u32) -> AbOptions {
        AbOptions {
            rounds,
            windows: 1,
            window_s: 1.0,
            window_requests: None,
            warmup_requests: 10,
            connections: 1,
            max_retries: 1,
            workers: 1,
            control: true,
            gateway_cpus: Vec::new(),
            mock_cpus: Vec::new(),
            work_dir: PathBuf::from("/nonexistent"),
            ready_timeout: Duration::from_secs(1),
            exit_timeout: Duration::from_secs(1),
            request_timeout: Duration::from_secs(1),
        }
    }

    fn rec(variant: &str, kind: SlotKind, round: Option<u32>, rps: f64, failed: u64) -> Recorded {
        let w = Window {
            requests: 1000,
            failed,
            elapsed_s: 1000.0 / rps,
            cpu_s: 0.1,
            p50_ms: 1.0,
            p99_ms: 3.0,
        };
        Recorded {
            variant: variant.into(),
            slot: 0,
            kind,
            round,
            window: 0,
            attempt: 0,
            valid: w.is_valid(),
            rps,
            w,
            failures: Vec::new(),
        }
    }

    fn v(name: &str) -> Variant {
        Variant {
            name: name.into(),
            path: PathBuf::from(name),
        }
    }

    #[test]
    fn assemble_band_verdicts_drift_floor() {
        let shape = shapes::find(&shapes::repo_dir(), "chat-nonstream-minimal").unwrap();
        let all = [v("plain"), v(CONTROL), v("pgo"), v("slow")];
        use SlotKind::*;
        let recorded = vec![
            rec("plain", Front, None, 1000.0, 0),
            rec("plain", Round, Some(0), 1000.0, 0),
            rec("control", Round, Some(0), 1020.0, 0),
            rec("pgo", Round, Some(0), 1300.0, 0),
            rec("slow", Round, Some(0), 900.0, 0),
            rec("plain", Round, Some(1), 1000.0, 0),
            rec("control", Round, Some(1), 980.0, 0),
            // An invalid, fast window: ignored for the rates, counted.
            rec("pgo", Round, Some(1), 9000.0, 3),
            rec("pgo", Round, Some(1), 1300.0, 0),
            rec("slow", Round, Some(1), 1010.0, 0),
            rec("plain", Back, None, 1050.0, 0),
        ];
        let mock = [Window {
            requests: 1000,
            failed: 0,
            elapsed_s: 0.25,
            cpu_s: 0.0,
            p50_ms: 0.1,
            p99_ms: 0.2,
        }];
        let r = assemble(&shape, &all, &opts(2), 1000, recorded, &mock);
        let band = r.band.unwrap();
        assert_eq!((band.lo, band.hi), (0.98, 1.02));
        let get = |n: &str| r.variants.iter().find(|x| x.name == n).unwrap();
        assert_eq!(get("pgo").ratio, Some(1.3));
        assert_eq!(get("pgo").verdict, Some(Verdict::Above));
        assert_eq!(get("pgo").summary.invalid_windows, 1);
        assert_eq!(get("slow").ratio, Some(0.955));
        assert_eq!(get("slow").verdict, Some(Verdict::Below));
        assert_eq!(get("plain").verdict, None);
        assert_eq!(get("control").verdict, None);
        assert!((r.drift.unwrap() - 0.05).abs() < 1e-12);
        assert_eq!(r.invalid_windows, 1);
        assert_eq!(r.floor.mock_rps, Some(4000.0));
        assert_eq!(r.floor.best_gateway_rps, Some(1300.0));
        assert!(r.floor.ok);
    }

    #[test]
    fn floor_fails_when_the_mock_is_not_twice_as_fast() {
        let shape = shapes::find(&shapes::repo_dir(), "chat-nonstream-minimal").unwrap();
        let all = [v("plain")];
        let recorded = vec![rec("plain", SlotKind::Round, Some(0), 1000.0, 0)];
        let mock = [Window {
            requests: 1000,
            failed: 0,
            elapsed_s: 0.6,
            cpu_s: 0.0,
            p50_ms: 0.1,
            p99_ms: 0.2,
        }];
        let mut o = opts(1);
        o.control = false;
        let r = assemble(&shape, &all, &o, 1000, recorded, &mock);
        assert!(!r.floor.ok);
        assert_eq!(r.band, None);
        assert_eq!(r.drift, None);
    }
}
