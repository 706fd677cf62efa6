//! The soak and fault run (issue 13): a bounded run of one gateway mixing normal traffic
//! with hostile clients and broken upstreams, then SIGTERM with requests in flight.
//!
//! - normal clients: chat (buffered), messages and responses (streamed), and requests to
//!   a slow upstream; every answer is checked, none may fail;
//! - stalled uploads: heads with a large `content-length`, part of the body, then nothing
//!   (each must get its 408);
//! - non-reading clients: streams of a huge answer whose client stops reading (each must
//!   be cut by the gateway);
//! - an upstream that resets mid-stream.
//!
//! Resident memory and open descriptors are sampled throughout. Afterwards both must come
//! back to the warmed-up baseline (within a slack), and SIGTERM with slow requests and
//! stalled uploads in flight must exit 0 within the grace period, every normal request
//! answered.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use serde::{Deserialize, Serialize};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::config::BENCH_KEY;
use crate::error::{io, BenchError};
use trainer::launch::{status_kib, GatewayProcess, Launch};
use trainer::mock::{MockConfig, MockUpstream};

/// Descriptors the gateway may hold above its baseline afterwards (pooled upstream
/// connections come and go with load).
pub(crate) const FD_SLACK: u64 = 8;
/// Resident memory the gateway may hold above its baseline afterwards (allocator caches).
pub(crate) const RSS_SLACK_KIB: u64 = 24 * 1024;

/// The gateway's limits in this run: short, so each fault is cut many times per run.
const BODY_READ_TIMEOUT_MS: u64 = 2000;
const CLIENT_WRITE_TIMEOUT_MS: u64 = 2000;
const GRACE_MS: u64 = 10_000;
const SLOW_FIRST_BYTE: Duration = Duration::from_millis(1500);

#[derive(Debug, Clone)]
pub struct SoakOptions {
    pub gateway: PathBuf,
    /// Length of the mixed phase.
    pub(crate) duration: Duration,
    pub(crate) normal_clients: usize,
    pub work_dir: PathBuf,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct SoakReport {
    pub binary: String,
    pub(crate) duration_s: f64,
    pub(crate) normal_requests: u64,
    pub(crate) normal_failed: u64,
    pub failures: Vec<String>,
    pub(crate) p50_ms: f64,
    pub(crate) p99_ms: f64,
    pub(crate) stalled_uploads: u64,
    pub(crate) stalled_uploads_408: u64,
    pub(crate) stalled_readers: u64,
    pub(crate) stalled_readers_cut: u64,
    pub(crate) upstream_resets: u64,
    pub(crate) rss_baseline_kib: u64,
    pub(crate) rss_peak_kib: u64,
    pub(crate) rss_after_kib: u64,
    pub(crate) fds_baseline: u64,
    pub(crate) fds_peak: u64,
    pub(crate) fds_after: u64,
    pub(crate) in_flight_at_sigterm: u64,
    pub(crate) in_flight_ok: u64,
    pub(crate) shutdown_ms: f64,
    pub(crate) exit_ok: bool,
    pub(crate) grace_ms: u64,
}

impl SoakReport {
    /// Every reason the run fails; empty: it passes.
    pub(crate) fn problems(&self) -> Vec<String> {
        let mut p = Vec::new();
        if self.normal_failed > 0 {
            p.push(format!("{} normal request(s) failed", self.normal_failed));
        }
        if self.stalled_uploads_408 < self.stalled_uploads {
            p.push(format!(
                "{} of {} stalled uploads got no 408",
                self.stalled_uploads - self.stalled_uploads_408,
                self.stalled_uploads
            ));
        }
        if self.stalled_readers_cut < self.stalled_readers {
            p.push(format!(
                "{} of {} non-reading clients were not cut",
                self.stalled_readers - self.stalled_readers_cut,
                self.stalled_readers
            ));
        }
        if self.fds_after > self.fds_baseline + FD_SLACK {
            p.push(format!(
                "open fds {} after, baseline {}",
                self.fds_after, self.fds_baseline
            ));
        }
        if self.rss_after_kib > self.rss_baseline_kib + RSS_SLACK_KIB {
            p.push(format!(
                "RSS {} KiB after, baseline {} KiB",
                self.rss_after_kib, self.rss_baseline_kib
            ));
        }
        if self.in_flight_ok < self.in_flight_at_sigterm {
            p.push("a request in flight at SIGTERM was not answered".into());
        }
        if !self.exit_ok {
            p.push("no exit 0 within the grace period after SIGTERM".into());
        }
        p
    }
}

/// Counters shared by the client tasks.
#[derive(Default)]
struct Tally {
    normal: AtomicU64,
    normal_failed: AtomicU64,
    failures: Mutex<Vec<String>>,
    latencies_us: Mutex<Vec<u64>>,
    stalled_uploads: AtomicU64,
    stalled_uploads_408: AtomicU64,
    stalled_readers: AtomicU64,
    stalled_readers_cut: AtomicU64,
    resets: AtomicU64,
}

impl Tally {
    fn fail(&self, what: String) {
        self.normal_failed.fetch_add(1, Ordering::Relaxed);
        let mut f = self.failures.lock().unwrap_or_else(|p| p.into_inner());
        if f.len() < 10 {
            f.push(what);
        }
    }
}

pub async fn run(opts: &SoakOptions) -> Result<SoakReport, BenchError> {
    std::fs::create_dir_all(&opts.work_dir)
        .map_err(io(format!("creating {}", opts.work_dir.display())))?;
    let mock = start_mock(MockConfig {
        chunk_delay: Duration::from_millis(2),
        ..MockConfig::default()
    })
    .await?;
    let slow = start_mock(MockConfig {
        first_byte_delay: SLOW_FIRST_BYTE,
        ..MockConfig::default()
    })
    .await?;
    // One answer of many megabytes, for the clients that stop reading.
    let flood = start_mock(MockConfig {
        chunks: 200_000,
        ..MockConfig::default()
    })
    .await?;
    let reset = ResetUpstream::start()
        .await
        .map_err(io("starting the resetting upstream"))?;

    let config = opts.work_dir.join("soak-gateway.toml");
    std::fs::write(
        &config,
        soak_config(
            &mock.base_url(),
            &slow.base_url(),
            &flood.base_url(),
            &reset.base_url(),
        ),
    )
    .map_err(io(format!("writing {}", config.display())))?;
    let launch = Launch {
        bin: opts.gateway.clone(),
        config,
        args: vec!["--listen".into(), "127.0.0.1:0".into()],
        wrapper: Vec::new(),
        cpus: Vec::new(),
        env: Vec::new(),
        stderr: opts.work_dir.join("soak-gateway.stderr"),
        ready_timeout: Duration::from_secs(60),
        healthz: true,
        preflight: true,
    };
    let gw = GatewayProcess::start(&launch).await?;
    let addr: SocketAddr = gw
        .base_url()
        .trim_start_matches("http://")
        .parse()
        .map_err(|e| BenchError::Failed(format!("gateway address: {e}")))?;
    let pid = gw.pid();

    // Warm up with normal traffic only, then take the baseline.
    let tally = Arc::new(Tally::default());
    run_normal(addr, opts.normal_clients, Duration::from_secs(3), &tally).await;
    tokio::time::sleep(Duration::from_secs(1)).await;
    let (rss_baseline, fds_baseline) = sample(pid);
    let warm_failed = tally.normal_failed.swap(0, Ordering::Relaxed);
    if warm_failed > 0 {
        return Err(BenchError::Failed(format!(
            "{warm_failed} warm-up request(s) failed: {:?}",
            tally.failures.lock().unwrap_or_else(|p| p.into_inner())
        )));
    }
    tally.normal.store(0, Ordering::Relaxed);
    tally
        .latencies_us
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .clear();

    // The mixed phase, with a sampler for the peaks.
    let peaks = Arc::new(Mutex::new((rss_baseline, fds_baseline)));
    let sampling = Arc::new(AtomicBool::new(true));
    let sampler = {
        let (peaks, sampling) = (peaks.clone(), sampling.clone());
        tokio::spawn(async move {
            while sampling.load(Ordering::Relaxed) {
                let (r, f) = sample(pid);
                {
                    let mut p = peaks.lock().unwrap_or_else(|p| p.into_inner());
                    p.0 = p.0.max(r);
                    p.1 = p.1.max(f);
                }
                tokio::time::sleep(Duration::from_millis(250)).await;
            }
        })
    };
    let start = Instant::now();
    let deadline = start + opts.duration;
    let mut tasks = Vec::new();
    for _ in 0..4 {
        let t = tally.clone();
        tasks.push(tokio::spawn(async move {
            while Instant::now() < deadline {
                stalled_upload(addr, &t).await;
            }
        }));
    }
    for _ in 0..2 {
        let t = tally.clone();
        tasks.push(tokio::spawn(async move {
            while Instant::now() < deadline {
                non_reading_client(addr, &t).await;
            }
        }));
    }
    {
        let t = tally.clone();
        tasks.push(tokio::spawn(async move {
            while Instant::now() < deadline {
                reset_stream(addr, &t).await;
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        }));
    }
    run_normal(addr, opts.normal_clients, opts.duration, &tally).await;
    for t in tasks {
        let _ = t.await;
    }
    let duration_s = start.elapsed().as_secs_f64();

    // Settle: every cut connection closed, buffers returned.
    let settle_until = Instant::now() + Duration::from_secs(20);
    let (mut rss_after, mut fds_after) = sample(pid);
    while Instant::now() < settle_until
        && (fds_after > fds_baseline + FD_SLACK || rss_after > rss_baseline + RSS_SLACK_KIB)
    {
        tokio::time::sleep(Duration::from_millis(500)).await;
        (rss_after, fds_after) = sample(pid);
    }
    sampling.store(false, Ordering::Relaxed);
    let _ = sampler.await;
    let (rss_peak, fds_peak) = *peaks.lock().unwrap_or_else(|p| p.into_inner());

    // SIGTERM with slow requests and stalled uploads in flight.
    let in_flight: Vec<_> = (0..4)
        .map(|_| {
            tokio::spawn(async move {
                let body = chat_body("slow", false);
                request(addr, "/v1/chat/completions", body).await
            })
        })
        .collect();
    let mut stalled = Vec::new();
    for _ in 0..4 {
        if let Ok(s) = start_stalled_upload(addr).await {
            stalled.push(s);
        }
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    let grace = Duration::from_millis(GRACE_MS);
    let t0 = Instant::now();
    let exit_ok = gw.stop(grace + Duration::from_secs(2)).await.is_ok();
    let shutdown_ms = t0.elapsed().as_secs_f64() * 1e3;
    let exit_ok = exit_ok && t0.elapsed() <= grace;
    let mut in_flight_ok = 0;
    for t in in_flight {
        if matches!(t.await, Ok(Ok((200, _)))) {
            in_flight_ok += 1;
        }
    }
    drop(stalled);
    reset.stop();

    let mut lat = tally
        .latencies_us
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .clone();
    lat.sort_unstable();
    let pct = |q: f64| {
        lat.get(((lat.len() as f64 * q) as usize).min(lat.len().saturating_sub(1)))
            .map_or(0.0, |&us| us as f64 / 1e3)
    };
    let load = |a: &AtomicU64| a.load(Ordering::Relaxed);
    let failures = tally
        .failures
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .clone();
    Ok(SoakReport {
        binary: opts.gateway.display().to_string(),
        duration_s,
        normal_requests: load(&tally.normal),
        normal_failed: load(&tally.normal_failed),
        failures,
        p50_ms: pct(0.5),
        p99_ms: pct(0.99),
        stalled_uploads: load(&tally.stalled_uploads),
        stalled_uploads_408: load(&tally.stalled_uploads_408),
        stalled_readers: load(&tally.stalled_readers),
        stalled_readers_cut: load(&tally.stalled_readers_cut),
        upstream_resets: load(&tally.resets),
        rss_baseline_kib: rss_baseline,
        rss_peak_kib: rss_peak,
        rss_after_kib: rss_after,
        fds_baseline,
        fds_peak,
        fds_after,
        in_flight_at_sigterm: 4,
        in_flight_ok,
        shutdown_ms,
        exit_ok,
        grace_ms: GRACE_MS,
    })
}

async fn start_mock(config: MockConfig) -> Result<MockUpstream, BenchError> {
    MockUpstream::start(config)
        .await
        .map_err(|source| BenchError::Io {
            what: "starting a mock upstream".into(),
            source,
        })
}

fn soak_config(mock: &str, slow: &str, flood: &str, reset: &str) -> String {
    let model = |name: &str, provider: &str, base: &str| {
        format!(
            "[[models]]\nname = \"{name}\"\n[[models.targets]]\nprovider = \"{provider}\"\nbase_url = \"{base}\"\nmodel = \"up-{name}\"\n\n"
        )
    };
    format!(
        "[server]\nworkers = 2\nbody_read_timeout_ms = {BODY_READ_TIMEOUT_MS}\n\
         client_write_timeout_ms = {CLIENT_WRITE_TIMEOUT_MS}\nshutdown_grace_ms = {GRACE_MS}\n\n\
         [observability]\naccess_log = \"stdout\"\n\n\
         [[keys]]\nname = \"soak\"\nkey = \"{BENCH_KEY}\"\n\n{}{}{}{}{}",
        model("gpt", "openai", mock),
        model("claude", "anthropic", mock),
        model("slow", "openai", slow),
        model("flood", "openai", flood),
        model("flaky", "openai", reset),
    )
}

/// `VmRSS` in KiB and the number of open descriptors of `pid` (0 when unreadable).
fn sample(pid: u32) -> (u64, u64) {
    let rss = std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|t| status_kib(&t, "VmRSS"))
        .unwrap_or(0);
    let fds = std::fs::read_dir(format!("/proc/{pid}/fd")).map_or(0, |d| d.count() as u64);
    (rss, fds)
}

fn chat_body(model: &str, stream: bool) -> String {
    format!(
        r#"{{"model":"{model}","messages":[{{"role":"user","content":"Say hi"}}],"stream":{stream},"stream_options":{{"include_usage":true}}}}"#
    )
}

/// One request on a fresh connection: status and whole body, bounded in time.
async fn request(addr: SocketAddr, path: &str, body: String) -> Result<(u16, Bytes), String> {
    post(addr, path, &body, BENCH_KEY, None).await
}

/// POSTs `body` on a fresh connection and reads the answer whole, or (`leave_after`) until
/// a body piece holds that needle, then closes the connection.
pub(crate) async fn post(
    addr: SocketAddr,
    path: &str,
    body: &str,
    key: &str,
    leave_after: Option<&[u8]>,
) -> Result<(u16, Bytes), String> {
    let fut = async {
        let mut sender = trainer::http1::connect(addr).await?;
        let req = http::Request::post(path)
            .header("host", "soak")
            .header("content-type", "application/json")
            .header("authorization", format!("Bearer {key}"))
            .header("anthropic-version", "2023-06-01")
            .body(Full::new(Bytes::from(body.to_owned())))
            .map_err(|e| e.to_string())?;
        let resp = sender
            .send_request(req)
            .await
            .map_err(|e| format!("request: {e}"))?;
        let status = resp.status().as_u16();
        let mut body = resp.into_body();
        let mut got = Vec::new();
        while let Some(frame) = body.frame().await {
            let frame = frame.map_err(|e| format!("body: {e}"))?;
            if let Ok(d) = frame.into_data() {
                got.extend_from_slice(&d);
                if leave_after.is_some_and(|n| status == 200 && contains(&got, n)) {
                    break;
                }
            }
        }
        Ok((status, Bytes::from(got)))
    };
    tokio::time::timeout(Duration::from_secs(30), fut)
        .await
        .map_err(|_| "no answer within 30 s".to_owned())?
}

/// Normal clients for `length`: a mix of routes and a slow upstream, every answer checked.
async fn run_normal(addr: SocketAddr, clients: usize, length: Duration, tally: &Arc<Tally>) {
    let deadline = Instant::now() + length;
    let tasks: Vec<_> = (0..clients.max(1))
        .map(|c| {
            let tally = tally.clone();
            tokio::spawn(async move {
                let mut i = c;
                while Instant::now() < deadline {
                    i += 1;
                    let (path, body, done): (&str, String, &str) = match i % 10 {
                        0 => ("/v1/chat/completions", chat_body("slow", false), "\"usage\""),
                        1 | 4 | 7 => ("/v1/chat/completions", chat_body("gpt", false), "\"usage\""),
                        2 | 5 | 8 => (
                            "/v1/messages",
                            r#"{"model":"claude","max_tokens":64,"messages":[{"role":"user","content":"hi"}],"stream":true}"#.to_owned(),
                            "message_stop",
                        ),
                        _ => (
                            "/v1/responses",
                            r#"{"model":"gpt","input":"hi","stream":true}"#.to_owned(),
                            "response.completed",
                        ),
                    };
                    let t0 = Instant::now();
                    let r = request(addr, path, body).await;
                    tally.normal.fetch_add(1, Ordering::Relaxed);
                    match r {
                        Ok((200, b)) if contains(&b, done.as_bytes()) => {
                            tally
                                .latencies_us
                                .lock()
                                .unwrap_or_else(|p| p.into_inner())
                                .push(t0.elapsed().as_micros() as u64);
                        }
                        Ok((s, b)) => tally.fail(format!(
                            "{path}: {s} {}",
                            String::from_utf8_lossy(&b[..b.len().min(200)])
                        )),
                        Err(e) => tally.fail(format!("{path}: {e}")),
                    }
                }
            })
        })
        .collect();
    for t in tasks {
        let _ = t.await;
    }
}

pub(crate) fn contains(hay: &[u8], needle: &[u8]) -> bool {
    hay.windows(needle.len()).any(|w| w == needle)
}

/// A head declaring 1 MiB, 256 KiB of it, then nothing.
async fn start_stalled_upload(addr: SocketAddr) -> std::io::Result<tokio::net::TcpStream> {
    let mut s = tokio::net::TcpStream::connect(addr).await?;
    let head = format!(
        "POST /v1/chat/completions HTTP/1.1\r\nhost: soak\r\nauthorization: Bearer {BENCH_KEY}\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n",
        1 << 20
    );
    s.write_all(head.as_bytes()).await?;
    s.write_all(&vec![b' '; 256 * 1024]).await?;
    Ok(s)
}

async fn stalled_upload(addr: SocketAddr, tally: &Tally) {
    tally.stalled_uploads.fetch_add(1, Ordering::Relaxed);
    let Ok(mut s) = start_stalled_upload(addr).await else {
        return;
    };
    let mut got = Vec::new();
    let mut buf = [0u8; 4096];
    let limit = Duration::from_millis(BODY_READ_TIMEOUT_MS * 3);
    let _ = tokio::time::timeout(limit, async {
        while got.len() < 12 {
            match s.read(&mut buf).await {
                Ok(0) | Err(_) => break,
                Ok(n) => got.extend_from_slice(&buf[..n]),
            }
        }
    })
    .await;
    if got.starts_with(b"HTTP/1.1 408") {
        tally.stalled_uploads_408.fetch_add(1, Ordering::Relaxed);
    }
}

/// A stream of a huge answer whose client stops reading after the head; afterwards the
/// client drains what reached it: a cut connection ends, an uncut one streams on.
async fn non_reading_client(addr: SocketAddr, tally: &Tally) {
    tally.stalled_readers.fetch_add(1, Ordering::Relaxed);
    let Ok(sock) = tokio::net::TcpSocket::new_v4() else {
        return;
    };
    let _ = sock.set_recv_buffer_size(4096);
    let Ok(mut s) = sock.connect(addr).await else {
        return;
    };
    let body = chat_body("flood", true);
    let req = format!(
        "POST /v1/chat/completions HTTP/1.1\r\nhost: soak\r\nauthorization: Bearer {BENCH_KEY}\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n{body}",
        body.len()
    );
    if s.write_all(req.as_bytes()).await.is_err() {
        return;
    }
    let mut buf = [0u8; 1024];
    let _ = tokio::time::timeout(Duration::from_secs(5), s.read(&mut buf)).await;
    // Stop reading for well past the write-stall limit.
    tokio::time::sleep(Duration::from_millis(CLIENT_WRITE_TIMEOUT_MS * 2)).await;
    let mut drained = 0usize;
    let mut big = vec![0u8; 64 * 1024];
    let ended = tokio::time::timeout(Duration::from_secs(5), async {
        loop {
            match s.read(&mut big).await {
                Ok(0) | Err(_) => return true,
                Ok(n) => {
                    drained += n;
                    // Far more than socket buffers hold: the stream was never cut.
                    if drained > 64 << 20 {
                        return false;
                    }
                }
            }
        }
    })
    .await
    .unwrap_or(false);
    if ended {
        tally.stalled_readers_cut.fetch_add(1, Ordering::Relaxed);
    }
}

async fn reset_stream(addr: SocketAddr, tally: &Tally) {
    // A cut stream or a 502: either way not a normal request, and never a hang.
    let _ = request(addr, "/v1/chat/completions", chat_body("flaky", true)).await;
    tally.resets.fetch_add(1, Ordering::Relaxed);
}

/// An upstream that starts a stream, sends two events, then resets the connection.
struct ResetUpstream {
    addr: SocketAddr,
    task: tokio::task::JoinHandle<()>,
}

impl ResetUpstream {
    async fn start() -> std::io::Result<ResetUpstream> {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
        let addr = listener.local_addr()?;
        let task = tokio::spawn(async move {
            loop {
                let Ok((mut s, _)) = listener.accept().await else {
                    continue;
                };
                tokio::spawn(async move {
                    let mut buf = vec![0u8; 16 * 1024];
                    let mut got = Vec::new();
                    while !contains(&got, b"\r\n\r\n") {
                        match s.read(&mut buf).await {
                            Ok(0) | Err(_) => return,
                            Ok(n) => got.extend_from_slice(&buf[..n]),
                        }
                    }
                    let ev = b"data: {\"choices\":[{\"delta\":{\"content\":\"hi\"}}]}\n\n";
                    let mut out = b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n".to_vec();
                    for _ in 0..2 {
                        out.extend_from_slice(format!("{:x}\r\n", ev.len()).as_bytes());
                        out.extend_from_slice(ev);
                        out.extend_from_slice(b"\r\n");
                    }
                    let _ = s.write_all(&out).await;
                    tokio::time::sleep(Duration::from_millis(20)).await;
                    // SO_LINGER 0: closing sends a reset, not a FIN.
                    let l = libc::linger {
                        l_onoff: 1,
                        l_linger: 0,
                    };
                    let fd = std::os::fd::AsRawFd::as_raw_fd(&s);
                    // SAFETY: setsockopt on a socket we own, with a stack-built linger.
                    unsafe {
                        libc::setsockopt(
                            fd,
                            libc::SOL_SOCKET,
                            libc::SO_LINGER,
                            std::ptr::addr_of!(l).cast(),
                            std::mem::size_of::<libc::linger>() as libc::socklen_t,
                        );
                    }
                    drop(s);
                });
            }
        });
        Ok(ResetUpstream { addr, task })
    }

    fn base_url(&self) -> String {
        format!("http://{}", self.addr)
    }

    fn stop(&self) {
        self.task.abort();
    }
}

/// The report's markdown table.
pub(crate) fn markdown(r: &SoakReport) -> String {
    let problems = r.problems();
    let verdict = if problems.is_empty() {
        "pass".to_owned()
    } else {
        format!("FAIL: {}", problems.join("; "))
    };
    let mib = |k: u64| k as f64 / 1024.0;
    format!(
        "`{}`, {:.0} s mixed phase ({verdict}):\n\n\
         | figure | value |\n| --- | --- |\n\
         | normal requests (failed) | {} ({}) |\n\
         | normal latency p50 / p99 | {:.1} / {:.1} ms |\n\
         | stalled uploads (answered 408) | {} ({}) |\n\
         | non-reading clients (cut) | {} ({}) |\n\
         | upstream resets mid-stream | {} |\n\
         | RSS baseline / peak / after | {:.1} / {:.1} / {:.1} MiB |\n\
         | open fds baseline / peak / after | {} / {} / {} |\n\
         | SIGTERM: in-flight answered, exit | {}/{}, exit 0 in {:.0} ms (grace {} ms): {} |\n",
        r.binary,
        r.duration_s,
        r.normal_requests,
        r.normal_failed,
        r.p50_ms,
        r.p99_ms,
        r.stalled_uploads,
        r.stalled_uploads_408,
        r.stalled_readers,
        r.stalled_readers_cut,
        r.upstream_resets,
        mib(r.rss_baseline_kib),
        mib(r.rss_peak_kib),
        mib(r.rss_after_kib),
        r.fds_baseline,
        r.fds_peak,
        r.fds_after,
        r.in_flight_ok,
        r.in_flight_at_sigterm,
        r.shutdown_ms,
        r.grace_ms,
        if r.exit_ok { "yes" } else { "NO" },
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn problems_name_every_failed_check() {
        let ok = SoakReport {
            normal_requests: 10,
            stalled_uploads: 2,
            stalled_uploads_408: 2,
            stalled_readers: 1,
            stalled_readers_cut: 1,
            rss_baseline_kib: 10_000,
            rss_after_kib: 12_000,
            fds_baseline: 20,
            fds_after: 21,
            in_flight_at_sigterm: 4,
            in_flight_ok: 4,
            exit_ok: true,
            ..SoakReport::default()
        };
        assert!(ok.problems().is_empty());
        assert!(markdown(&ok).contains("(pass)"));
        let bad = SoakReport {
            normal_failed: 1,
            fds_after: 40,
            exit_ok: false,
            ..ok
        };
        let p = bad.problems();
        assert_eq!(p.len(), 3, "{p:?}");
        assert!(markdown(&bad).contains("FAIL"));
    }

    #[test]
    fn config_parses_as_toml() {
        let c = soak_config("http://a:1", "http://b:1", "http://c:1", "http://d:1");
        let v: toml::Table = toml::from_str(&c).unwrap();
        assert_eq!(v["models"].as_array().unwrap().len(), 5);
    }
}
