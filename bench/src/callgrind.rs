//! Exact instruction counts: each variant runs under `valgrind --tool=callgrind
//! --cache-sim=yes --branch-sim=yes` with one worker thread, is driven with an exact request
//! count over keep-alive connections, and stops on SIGTERM; callgrind writes its totals at
//! exit. Two runs per variant (a small and a large count) give the marginal cost per
//! request, so start-up and shutdown cancel out: (E(big) - E(small)) / (big - small).
//!
//! This is the stable signal on a noisy 2-core VM (+-0.03% run to run): instructions show
//! what PGO removed, simulated I1 misses show what BOLT's layout saved.

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::config::{bench_config, BENCH_KEY};
use crate::upstream::MockThread;
use crate::variant::Variant;
use trainer::drive::{self, DriveOptions};
use trainer::launch::{GatewayProcess, Launch, LaunchError};
use trainer::shapes::Shape;
use trainer::workload;

#[derive(Debug, thiserror::Error)]
pub enum CallgrindError {
    #[error("callgrind output {path}: {what}")]
    Output { path: PathBuf, what: String },
    #[error(transparent)]
    Launch(#[from] LaunchError),
    #[error("{variant}: {what}")]
    Run { variant: String, what: String },
    #[error("{what}: {source}")]
    Io {
        what: String,
        source: std::io::Error,
    },
}

/// The event totals of one callgrind run, by event name (`Ir`, `I1mr`, `Bcm`, ...).
pub(crate) type Events = BTreeMap<String, u64>;

/// Reads the `events:` header and the `totals:` line (or `summary:`, which older valgrinds
/// write instead) of a callgrind out file.
pub(crate) fn parse_totals(text: &str) -> Result<Events, String> {
    let mut names: Option<Vec<&str>> = None;
    let mut totals: Option<&str> = None;
    let mut summary: Option<&str> = None;
    for line in text.lines() {
        if let Some(rest) = line.strip_prefix("events:") {
            names = Some(rest.split_whitespace().collect());
        } else if let Some(rest) = line.strip_prefix("totals:") {
            totals = Some(rest);
        } else if let Some(rest) = line.strip_prefix("summary:") {
            summary = Some(rest);
        }
    }
    let names = names.ok_or("no `events:` line")?;
    let values = totals
        .or(summary)
        .ok_or("no `totals:` or `summary:` line")?;
    let values: Vec<u64> = values
        .split_whitespace()
        .map(|v| v.parse().map_err(|_| format!("bad count {v:?}")))
        .collect::<Result<_, _>>()?;
    if values.len() > names.len() {
        return Err(format!(
            "{} counts for {} events",
            values.len(),
            names.len()
        ));
    }
    // Trailing zero counts may be omitted in the format.
    Ok(names
        .iter()
        .enumerate()
        .map(|(i, n)| ((*n).to_owned(), values.get(i).copied().unwrap_or(0)))
        .collect())
}

/// The code a run executed, by 64-byte line (the simulated I-cache's), from a callgrind out
/// file written with `--dump-instr=yes --compress-pos=no`: how much code is hot, and whether
/// the I1 misses fall on it (capacity: a hot path larger than I1 misses on every request
/// whatever the layout) or elsewhere.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Footprint {
    /// Lines holding any executed instruction.
    pub lines_touched: u64,
    /// Lines holding an instruction executed at least once per request on average (the
    /// run's request count or more times).
    pub hot_lines: u64,
    /// I1 misses of the whole run, and those on hot lines.
    pub i1_misses: u64,
    pub i1_misses_on_hot_lines: u64,
}

/// [`Footprint`] of a callgrind out file of `requests` requests. Cost lines after `calls=` are
/// a call's inclusive cost, not the call site's own: skipped.
pub(crate) fn footprint(text: &str, requests: u64) -> Result<Footprint, String> {
    let mut names: Option<Vec<&str>> = None;
    // `positions: instr line`: the address, then the source line, then the events.
    let mut positions = 1;
    // line -> (most executions of one instruction, I1 misses)
    let mut lines: BTreeMap<u64, (u64, u64)> = BTreeMap::new();
    let mut after_calls = false;
    for line in text.lines() {
        if let Some(rest) = line.strip_prefix("events:") {
            names = Some(rest.split_whitespace().collect());
            continue;
        }
        if let Some(rest) = line.strip_prefix("positions:") {
            positions = rest.split_whitespace().count().max(1);
            continue;
        }
        if line.starts_with("calls=") {
            after_calls = true;
            continue;
        }
        let Some(addr) = line.strip_prefix("0x") else {
            continue;
        };
        if std::mem::take(&mut after_calls) {
            continue;
        }
        let names = names.as_ref().ok_or("cost lines before `events:`")?;
        let col = |event: &str| names.iter().position(|n| *n == event);
        let (ir, i1) = (col("Ir").ok_or("no Ir event")?, col("I1mr"));
        let mut fields = addr.split_whitespace();
        let a = fields
            .next()
            .and_then(|a| u64::from_str_radix(a, 16).ok())
            .ok_or_else(|| format!("bad position in {line:?} (run with --compress-pos=no)"))?;
        let counts: Vec<u64> = fields
            .skip(positions - 1)
            .map(|c| c.parse().unwrap_or(0))
            .collect();
        let e = lines.entry(a >> 6).or_default();
        e.0 = e.0.max(counts.get(ir).copied().unwrap_or(0));
        e.1 += i1.and_then(|i| counts.get(i)).copied().unwrap_or(0);
    }
    if lines.is_empty() {
        return Err("no per-instruction costs (run with --dump-instr=yes)".into());
    }
    let hot = |(max, _): &&(u64, u64)| *max >= requests;
    Ok(Footprint {
        lines_touched: lines.len() as u64,
        hot_lines: lines.values().filter(hot).count() as u64,
        i1_misses: lines.values().map(|l| l.1).sum(),
        i1_misses_on_hot_lines: lines.values().filter(hot).map(|l| l.1).sum(),
    })
}

/// Per-request marginal counts: (big - small) / (n_big - n_small) for every event both runs
/// have. Saturates at zero (a negative marginal would mean a broken run; it shows as 0).
pub(crate) fn marginal(
    small: &Events,
    big: &Events,
    n_small: u64,
    n_big: u64,
) -> BTreeMap<String, f64> {
    let n = n_big.saturating_sub(n_small).max(1) as f64;
    big.iter()
        .filter_map(|(k, b)| {
            let s = small.get(k)?;
            Some((k.clone(), b.saturating_sub(*s) as f64 / n))
        })
        .collect()
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct VariantCounts {
    pub name: String,
    pub binary: String,
    pub small: Events,
    pub big: Events,
    /// Marginal counts per request.
    pub per_request: BTreeMap<String, f64>,
    /// `per_request` over the baseline's, per event.
    pub ratio_to_baseline: BTreeMap<String, f64>,
    pub(crate) seconds: f64,
    /// The large run's code footprint, when measured (`--footprint`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub footprint: Option<Footprint>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct CallgrindReport {
    pub shape: String,
    /// The upstream the gateway reached: `http`, or `https` (a TLS handshake per new
    /// connection, `reconnect_every` responses apart when the shape sets it).
    #[serde(default = "plain_http")]
    pub upstream: String,
    pub requests_small: u64,
    pub requests_big: u64,
    pub connections: u32,
    pub workers: u32,
    pub valgrind: String,
    pub(crate) baseline: String,
    pub variants: Vec<VariantCounts>,
}

impl CallgrindReport {
    pub(crate) fn get(&self, name: &str) -> Option<&VariantCounts> {
        self.variants.iter().find(|v| v.name == name)
    }

    /// `a`'s per-request `event` over `b`'s.
    pub fn ratio(&self, a: &str, b: &str, event: &str) -> Option<f64> {
        let a = self.get(a)?.per_request.get(event)?;
        let b = self.get(b)?.per_request.get(event)?;
        (*b > 0.0).then(|| a / b)
    }
}

#[derive(Debug, Clone)]
pub struct CallgrindOptions {
    pub valgrind: PathBuf,
    pub requests_small: u64,
    pub requests_big: u64,
    pub connections: u32,
    pub out_dir: PathBuf,
    /// Also dump per-instruction costs and measure each large run's [`Footprint`].
    pub footprint: bool,
    /// Valgrind starts a gateway ~50x slower than native: generous by default.
    pub ready_timeout: Duration,
    pub exit_timeout: Duration,
    pub request_timeout: Duration,
}

/// Measures every variant on `shape`; the first variant is the baseline of the ratios.
pub async fn run(
    shape: &Shape,
    variants: &[Variant],
    opts: &CallgrindOptions,
) -> Result<CallgrindReport, CallgrindError> {
    std::fs::create_dir_all(&opts.out_dir).map_err(|source| CallgrindError::Io {
        what: format!("creating {}", opts.out_dir.display()),
        source,
    })?;
    let valgrind_version = version(&opts.valgrind)?;
    // The shape's upstream as training runs it: HTTPS with a CA made now, reconnects.
    let mock_config = workload::mock_config(shape).map_err(|what| CallgrindError::Run {
        variant: "mock upstream".into(),
        what,
    })?;
    let ca_pem = mock_config.tls.as_ref().map(|t| t.ca_pem().to_owned());
    let mock = MockThread::start_with(mock_config, Vec::new(), 1).map_err(|source| {
        CallgrindError::Io {
            what: "starting the mock upstream".into(),
            source,
        }
    })?;
    let ca_file = opts.out_dir.join(format!("{}.upstream-ca.pem", shape.name));
    if let Some(pem) = &ca_pem {
        std::fs::write(&ca_file, pem).map_err(|source| CallgrindError::Io {
            what: format!("writing {}", ca_file.display()),
            source,
        })?;
    }
    let config = opts.out_dir.join(format!("{}.gateway.toml", shape.name));
    let text = bench_config(
        shape,
        mock.base_url(),
        ca_pem.is_some().then_some(ca_file.as_path()),
        1,
    );
    std::fs::write(&config, text).map_err(|source| CallgrindError::Io {
        what: format!("writing {}", config.display()),
        source,
    })?;

    let mut out = Vec::new();
    for v in variants {
        let started = std::time::Instant::now();
        let mut runs = Vec::new();
        let mut footprint = None;
        for n in [opts.requests_small, opts.requests_big] {
            let (events, text) = one_run(shape, v, n, &config, opts).await?;
            if opts.footprint && n == opts.requests_big {
                footprint =
                    Some(
                        self::footprint(&text, n).map_err(|what| CallgrindError::Output {
                            path: opts.out_dir.join(format!("{}-{}-{n}", shape.name, v.name)),
                            what,
                        })?,
                    );
            }
            eprintln!(
                "bench callgrind: {} {} x{n}: Ir {}",
                shape.name,
                v.name,
                events.get("Ir").copied().unwrap_or(0)
            );
            runs.push(events);
        }
        let big = runs.pop().unwrap_or_default();
        let small = runs.pop().unwrap_or_default();
        let per_request = marginal(&small, &big, opts.requests_small, opts.requests_big);
        out.push(VariantCounts {
            name: v.name.clone(),
            binary: v.path.display().to_string(),
            small,
            big,
            per_request,
            ratio_to_baseline: BTreeMap::new(),
            seconds: started.elapsed().as_secs_f64(),
            footprint,
        });
    }
    let base = out
        .first()
        .map(|v| v.per_request.clone())
        .unwrap_or_default();
    for v in &mut out {
        v.ratio_to_baseline = v
            .per_request
            .iter()
            .filter_map(|(k, x)| {
                let b = base.get(k)?;
                (*b > 0.0).then(|| (k.clone(), x / b))
            })
            .collect();
    }
    Ok(CallgrindReport {
        shape: shape.name.clone(),
        upstream: transport(shape),
        requests_small: opts.requests_small,
        requests_big: opts.requests_big,
        connections: opts.connections,
        workers: 1,
        valgrind: valgrind_version,
        baseline: variants.first().map(|v| v.name.clone()).unwrap_or_default(),
        variants: out,
    })
}

async fn one_run(
    shape: &Shape,
    v: &Variant,
    n: u64,
    config: &Path,
    opts: &CallgrindOptions,
) -> Result<(Events, String), CallgrindError> {
    let stem = format!("{}-{}-{n}", shape.name, v.name);
    let out_file = opts.out_dir.join(format!("{stem}.callgrind.out"));
    // A leftover file from an earlier run must not be read as this run's result.
    let _ = std::fs::remove_file(&out_file);
    let mut out_arg = OsString::from("--callgrind-out-file=");
    out_arg.push(&out_file);
    let mut wrapper: Vec<OsString> = vec![
        opts.valgrind.clone().into_os_string(),
        "--tool=callgrind".into(),
        "--cache-sim=yes".into(),
        "--branch-sim=yes".into(),
        out_arg,
    ];
    if opts.footprint {
        wrapper.extend(["--dump-instr=yes".into(), "--compress-pos=no".into()]);
    }
    let launch = Launch {
        bin: v.path.clone(),
        config: config.to_owned(),
        args: Vec::new(),
        wrapper,
        cpus: Vec::new(),
        env: Vec::new(),
        stderr: opts.out_dir.join(format!("{stem}.stderr")),
        ready_timeout: opts.ready_timeout,
        // No /healthz: the counted requests are exactly the driven ones.
        healthz: false,
        preflight: true,
    };
    let gw = GatewayProcess::start(&launch).await?;
    let mut s = shape.clone();
    s.requests = n;
    s.concurrency = opts.connections;
    let mut d = DriveOptions::new(gw.base_url(), Some(BENCH_KEY.into()));
    d.request_timeout = opts.request_timeout;
    let report = match drive::drive(&s, &d).await {
        Ok(r) if r.is_success() => r,
        Ok(r) => {
            let what = format!("{r}{}", gw.log_tail());
            gw.kill().await;
            return Err(CallgrindError::Run {
                variant: v.name.clone(),
                what,
            });
        }
        Err(e) => {
            gw.kill().await;
            return Err(CallgrindError::Run {
                variant: v.name.clone(),
                what: e.to_string(),
            });
        }
    };
    debug_assert_eq!(report.ok, n);
    gw.stop(opts.exit_timeout).await?;
    let text = std::fs::read_to_string(&out_file).map_err(|e| CallgrindError::Output {
        path: out_file.clone(),
        what: e.to_string(),
    })?;
    let events = parse_totals(&text).map_err(|what| CallgrindError::Output {
        path: out_file,
        what,
    })?;
    Ok((events, text))
}

fn plain_http() -> String {
    "http".into()
}

/// How a report names the shape's upstream: `http`, `https` or `https, new connection every N`.
fn transport(shape: &Shape) -> String {
    match (shape.upstream_tls, shape.reconnect_every) {
        (false, None) => "http".into(),
        (false, Some(n)) => format!("http, new connection every {n}"),
        (true, None) => "https".into(),
        (true, Some(n)) => format!("https, new connection every {n}"),
    }
}

fn version(valgrind: &Path) -> Result<String, CallgrindError> {
    let out = std::process::Command::new(valgrind)
        .arg("--version")
        .output()
        .map_err(|source| CallgrindError::Io {
            what: format!("running {} --version", valgrind.display()),
            source,
        })?;
    Ok(String::from_utf8_lossy(&out.stdout).trim().to_owned())
}

/// A report with only per-request instruction counts (`Ir`), the first variant the baseline:
/// the gates' unit tests (holdout, translated) judge such reports.
#[cfg(test)]
pub(crate) fn report_of(shape: &str, irs: &[(&str, f64)]) -> CallgrindReport {
    CallgrindReport {
        shape: shape.into(),
        upstream: plain_http(),
        requests_small: 8,
        requests_big: 2000,
        connections: 1,
        workers: 1,
        valgrind: String::new(),
        baseline: irs.first().map(|x| x.0.to_owned()).unwrap_or_default(),
        variants: irs
            .iter()
            .map(|(n, ir)| VariantCounts {
                name: (*n).into(),
                binary: String::new(),
                small: BTreeMap::new(),
                big: BTreeMap::new(),
                per_request: [("Ir".to_owned(), *ir)].into(),
                ratio_to_baseline: BTreeMap::new(),
                seconds: 0.0,
                footprint: None,
            })
            .collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const OUT: &str = "# callgrind format\nversion: 1\ncreator: callgrind-3.19.0\npid: 42\ncmd:  ./gateway --config x\npart: 1\n\npositions: line\nevents: Ir Dr Dw I1mr D1mr D1mw ILmr DLmr DLmw Bc Bcm Bi Bim\nsummary: 1000 400 300 50 20 10 5 2 1 200 30 10 4\n\nfl=(1) x.rs\nfn=(1) main\n0 1000 400 300 50 20 10 5 2 1 200 30 10 4\n\ntotals: 1000 400 300 50 20 10 5 2 1 200 30 10 4\n";

    #[test]
    fn totals_parse() {
        let e = parse_totals(OUT).unwrap();
        assert_eq!(e["Ir"], 1000);
        assert_eq!(e["I1mr"], 50);
        assert_eq!(e["Bim"], 4);
        assert_eq!(e.len(), 13);
    }

    #[test]
    fn footprint_by_cache_line() {
        // Two instructions on line 0x40 (run 10 and 3 times), one on line 0x41 run twice; the
        // cost line after `calls=` is the callee's inclusive cost, not this line's.
        let out = "positions: instr line\nevents: Ir I1mr\nfn=(1) f\n\
                   0x1000 5 10 2\n0x1004 5 3 1\ncalls=1 0x2000 0\n0x1008 5 999 99\n\
                   0x1040 6 2 1\n";
        let f = footprint(out, 10).unwrap();
        assert_eq!(
            f,
            Footprint {
                lines_touched: 2,
                hot_lines: 1,
                i1_misses: 4,
                i1_misses_on_hot_lines: 3,
            }
        );
        assert_eq!(footprint(out, 2).unwrap().hot_lines, 2);
        assert!(footprint(OUT, 1).unwrap_err().contains("--dump-instr=yes"));
        assert!(footprint("events: Ir\n+3 1\n0xzz 1\n", 1).is_err());
        // Without source lines the events follow the address.
        let f = footprint("positions: instr\nevents: Ir I1mr\n0x1000 4 1\n", 4).unwrap();
        assert_eq!((f.hot_lines, f.i1_misses), (1, 1));
    }

    #[test]
    fn summary_is_enough_and_short_lines_pad_with_zero() {
        let e = parse_totals("events: Ir I1mr Bcm\nsummary: 7 3\n").unwrap();
        assert_eq!((e["Ir"], e["I1mr"], e["Bcm"]), (7, 3, 0));
        assert!(parse_totals("summary: 1\n").is_err());
        assert!(parse_totals("events: Ir\n").is_err());
        assert!(parse_totals("events: Ir\ntotals: 1 2\n").is_err());
        assert!(parse_totals("events: Ir\ntotals: x\n").is_err());
    }

    #[test]
    fn marginal_subtracts_start_up() {
        let small: Events = [("Ir".to_owned(), 1_000_000), ("I1mr".to_owned(), 5_000)].into();
        let big: Events = [
            ("Ir".to_owned(), 1_000_000 + 1992 * 120_000),
            ("I1mr".to_owned(), 5_000 + 1992 * 300),
        ]
        .into();
        let m = marginal(&small, &big, 8, 2000);
        assert_eq!(m["Ir"], 120_000.0);
        assert_eq!(m["I1mr"], 300.0);
        // A missing event in one run is left out, a negative marginal saturates at zero.
        let small2: Events = [("Ir".to_owned(), 10)].into();
        let big2: Events = [("Ir".to_owned(), 5), ("Bc".to_owned(), 1)].into();
        let m2 = marginal(&small2, &big2, 8, 2000);
        assert_eq!(m2.len(), 1);
        assert_eq!(m2["Ir"], 0.0);
    }

    #[test]
    fn report_ratios() {
        let mk = |name: &str, ir: f64| VariantCounts {
            name: name.into(),
            binary: String::new(),
            small: Events::new(),
            big: Events::new(),
            per_request: [("Ir".to_owned(), ir)].into(),
            ratio_to_baseline: BTreeMap::new(),
            seconds: 0.0,
            footprint: None,
        };
        let r = CallgrindReport {
            shape: "s".into(),
            upstream: plain_http(),
            requests_small: 8,
            requests_big: 2000,
            connections: 1,
            workers: 1,
            valgrind: String::new(),
            baseline: "plain".into(),
            variants: vec![mk("plain", 100.0), mk("pgo", 90.0)],
        };
        assert_eq!(r.ratio("pgo", "plain", "Ir"), Some(0.9));
        assert_eq!(r.ratio("nope", "plain", "Ir"), None);
        assert_eq!(r.ratio("pgo", "plain", "Bc"), None);
    }
}
