//! The shared-limits soak (issue 21): three gateway replicas sharing their rate limits on one
//! real Redis (`when_down = "memory"`), under clients that read every answer, clients that
//! leave after the first delta, and a key capped in requests per minute; Redis is killed and
//! restarted half way. Reports the tokens the replicas charged against the upstream's own
//! usage, and fails when a fully read answer is charged anything but its usage, a client that
//! left is charged nothing, the capped key gets more than its limit across the replicas while
//! Redis is up, or a replica does not come back to Redis after the restart.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering::Relaxed};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use serde::{Deserialize, Serialize};

use crate::config::BENCH_KEY;
use crate::error::{io, BenchError};
use crate::soak::{contains, post};
use trainer::launch::{GatewayProcess, Launch};
use trainer::mock::{expected_usage, MockConfig, MockUpstream};
use trainer::redis_server::RedisServer;

const REPLICAS: usize = 3;
/// The capped key's limit: one request back per second.
const CAPPED_RPM: u64 = 60;
const CAPPED_KEY: &str = "soak-capped-key";
/// How long Redis stays down half way.
const OUTAGE: Duration = Duration::from_secs(3);

#[derive(Debug, Clone)]
pub struct SharedSoakOptions {
    pub gateway: PathBuf,
    pub(crate) duration: Duration,
    pub work_dir: PathBuf,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct SharedSoakReport {
    pub binary: String,
    pub(crate) replicas: usize,
    pub(crate) duration_s: f64,
    /// Answers read to their end (chat streamed without asking for usage, chat buffered,
    /// messages streamed and translated, the capped key's admitted requests), and those that
    /// failed.
    pub(crate) full_requests: u64,
    pub(crate) full_failed: u64,
    pub failures: Vec<String>,
    /// What the upstream reported for them, and what the replicas charged.
    pub(crate) full_upstream_tokens: u64,
    pub(crate) full_charged_tokens: u64,
    /// Streams whose client left after the first delta (chat and translated messages).
    pub(crate) leavers: u64,
    /// Whole answers the upstream began for them (what it would bill).
    pub(crate) leaver_upstream_tokens: u64,
    pub(crate) leaver_charged_tokens: u64,
    pub(crate) leaver_estimated_tokens: u64,
    /// The capped key: admitted across the replicas while Redis was up (before the outage
    /// and after the restart), and the most its limit allows in those spans.
    pub(crate) capped_admitted: u64,
    pub(crate) capped_bound: u64,
    pub(crate) capped_refused: u64,
    /// Requests decided by `when_down` over all replicas, and the replicas answered by Redis
    /// again at the end.
    pub(crate) degraded: u64,
    pub(crate) replicas_back: usize,
}

impl SharedSoakReport {
    pub(crate) fn problems(&self) -> Vec<String> {
        let mut p = Vec::new();
        if self.full_failed > 0 {
            p.push(format!("{} fully read request(s) failed", self.full_failed));
        }
        if self.full_requests == 0 || self.full_charged_tokens != self.full_upstream_tokens {
            p.push(format!(
                "fully read answers charged {} tokens, the upstream reported {}",
                self.full_charged_tokens, self.full_upstream_tokens
            ));
        }
        if self.leavers == 0 || self.leaver_charged_tokens < self.leavers {
            p.push(format!(
                "{} clients that left were charged {} tokens (at least one each)",
                self.leavers, self.leaver_charged_tokens
            ));
        }
        if self.capped_admitted > self.capped_bound {
            p.push(format!(
                "the capped key got {} requests across {} replicas, at most {} allowed",
                self.capped_admitted, self.replicas, self.capped_bound
            ));
        }
        if self.degraded == 0 {
            p.push("no replica saw Redis down".into());
        }
        if self.replicas_back < self.replicas {
            p.push(format!(
                "{} of {} replicas came back to Redis",
                self.replicas_back, self.replicas
            ));
        }
        p
    }
}

/// The capped key's admissions, by whether Redis was meant to be up.
#[derive(Default)]
struct Tally {
    full: AtomicU64,
    full_failed: AtomicU64,
    failures: Mutex<Vec<String>>,
    leavers: AtomicU64,
    capped_shared: AtomicU64,
    capped_refused: AtomicU64,
    /// 0: Redis up; 1: down or coming back (admissions not bounded by the shared limit).
    outage: AtomicUsize,
}

impl Tally {
    fn fail(&self, what: String) {
        self.full_failed.fetch_add(1, Relaxed);
        let mut f = self.failures.lock().unwrap_or_else(|p| p.into_inner());
        if f.len() < 10 {
            f.push(what);
        }
    }
}

pub async fn run(opts: &SharedSoakOptions) -> Result<SharedSoakReport, BenchError> {
    std::fs::create_dir_all(&opts.work_dir)
        .map_err(io(format!("creating {}", opts.work_dir.display())))?;
    let Some(mut redis) = RedisServer::start().await else {
        return Err(BenchError::Failed(
            "the shared-limits soak needs redis-server (GATEWAY_TEST_NO_REDIS=1 is set)".into(),
        ));
    };
    let metered_cfg = MockConfig {
        chunks: 16,
        chunk_delay: Duration::from_millis(1),
        ..MockConfig::default()
    };
    // Long answers, so that the leavers leave well before the end.
    let leaver_cfg = MockConfig {
        chunks: 200,
        chunk_delay: Duration::from_millis(5),
        ..MockConfig::default()
    };
    let per_answer = |c: &MockConfig| {
        let (i, o) = expected_usage(c);
        i + o
    };
    let (metered_tokens, leaver_tokens) = (per_answer(&metered_cfg), per_answer(&leaver_cfg));
    let start_mock = |c: MockConfig| async move {
        MockUpstream::start(c)
            .await
            .map_err(io("starting a mock upstream".to_owned()))
    };
    let metered = start_mock(metered_cfg).await?;
    let leaver = start_mock(leaver_cfg).await?;

    let config = opts.work_dir.join("shared-gateway.toml");
    std::fs::write(
        &config,
        shared_config(&redis.url(), &metered.base_url(), &leaver.base_url()),
    )
    .map_err(io(format!("writing {}", config.display())))?;
    let mut gws = Vec::new();
    for i in 0..REPLICAS {
        let launch = Launch {
            args: vec!["--listen".into(), "127.0.0.1:0".into()],
            preflight: true,
            ..Launch::new(
                &opts.gateway,
                &config,
                &opts.work_dir.join(format!("replica-{i}.stderr")),
                Duration::from_secs(60),
            )
        };
        gws.push(GatewayProcess::start(&launch).await?);
    }
    let addrs: Vec<SocketAddr> = gws
        .iter()
        .map(|g| g.base_url().trim_start_matches("http://").parse())
        .collect::<Result<_, _>>()
        .map_err(|e| BenchError::Failed(format!("gateway address: {e}")))?;

    let tally = Arc::new(Tally::default());
    let start = Instant::now();
    let deadline = start + opts.duration;
    let mut tasks = Vec::new();
    for c in 0..3 {
        let (t, a) = (tally.clone(), addrs.clone());
        tasks.push(tokio::spawn(async move {
            let mut i = c;
            while Instant::now() < deadline {
                i += 1;
                full_reader(a[i % a.len()], i, &t).await;
            }
        }));
    }
    for c in 0..2 {
        let (t, a) = (tally.clone(), addrs.clone());
        tasks.push(tokio::spawn(async move {
            let mut i = c;
            while Instant::now() < deadline {
                i += 1;
                early_leaver(a[i % a.len()], i, &t).await;
            }
        }));
    }
    {
        let (t, a) = (tally.clone(), addrs.clone());
        tasks.push(tokio::spawn(async move {
            let mut i = 0;
            while Instant::now() < deadline {
                i += 1;
                capped(a[i % a.len()], &t).await;
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        }));
    }

    // Half way: Redis killed, then restarted empty once the outage is over; the capped key's
    // admissions count against the bound again once every replica answers from Redis.
    tokio::time::sleep(opts.duration / 2).await;
    let up_before = start.elapsed();
    tally.outage.store(1, Relaxed);
    redis.kill().await;
    tokio::time::sleep(OUTAGE).await;
    redis.restart().await;
    let back_deadline = Instant::now() + Duration::from_secs(20);
    while Instant::now() < back_deadline {
        let mut up = 0;
        for a in &addrs {
            if scrape(*a, "gateway_ratelimit_backend_up").await == Some(1.0) {
                up += 1;
            }
        }
        if up == addrs.len() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let back_at = Instant::now();
    tally.outage.store(0, Relaxed);
    for t in tasks {
        let _ = t.await;
    }
    let up_after = back_at.elapsed();
    let duration_s = start.elapsed().as_secs_f64();

    // Every request settled (its charge sent) before the figures are read.
    let settle_until = Instant::now() + Duration::from_secs(20);
    for a in &addrs {
        while Instant::now() < settle_until
            && scrape(*a, "gateway_in_flight_requests").await != Some(0.0)
        {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
    let mut figures = [0.0f64; 4];
    let mut replicas_back = 0;
    let mut degraded = 0.0;
    let series = [
        "gateway_tokens_total{model=\"metered\",direction=\"input\"}",
        "gateway_tokens_total{model=\"metered\",direction=\"output\"}",
        "gateway_tokens_total{model=\"leaver\",direction=\"input\"}",
        "gateway_tokens_total{model=\"leaver\",direction=\"output\"}",
    ];
    let mut leaver_estimated = 0.0;
    for a in &addrs {
        let text = metrics(*a).await.unwrap_or_default();
        for (f, s) in figures.iter_mut().zip(series) {
            *f += metric(&text, s).unwrap_or(0.0);
        }
        for d in ["input", "output"] {
            leaver_estimated += metric(
                &text,
                &format!("gateway_estimated_tokens_total{{model=\"leaver\",direction=\"{d}\"}}"),
            )
            .unwrap_or(0.0);
        }
        degraded += metric(&text, "gateway_ratelimit_degraded_total").unwrap_or(0.0);
        if metric(&text, "gateway_ratelimit_backend_up") == Some(1.0) {
            replicas_back += 1;
        }
    }
    for g in gws {
        let _ = g.stop(Duration::from_secs(15)).await;
    }
    // What the capped key may get while Redis is up: its burst once per span (Redis comes
    // back empty), what refills over both spans, and the one request in flight at each
    // switch.
    let refill = |d: Duration| (CAPPED_RPM as f64 * d.as_secs_f64() / 60.0).ceil() as u64;
    let capped_bound = 2 * CAPPED_RPM + refill(up_before) + refill(up_after) + 2;
    let load = |a: &AtomicU64| a.load(Relaxed);
    let failures = tally
        .failures
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .clone();
    Ok(SharedSoakReport {
        binary: opts.gateway.display().to_string(),
        replicas: REPLICAS,
        duration_s,
        full_requests: load(&tally.full),
        full_failed: load(&tally.full_failed),
        failures,
        full_upstream_tokens: metered.request_count() * metered_tokens,
        full_charged_tokens: (figures[0] + figures[1]) as u64,
        leavers: load(&tally.leavers),
        leaver_upstream_tokens: leaver.request_count() * leaver_tokens,
        leaver_charged_tokens: (figures[2] + figures[3]) as u64,
        leaver_estimated_tokens: leaver_estimated as u64,
        capped_admitted: load(&tally.capped_shared),
        capped_bound,
        capped_refused: load(&tally.capped_refused),
        degraded: degraded as u64,
        replicas_back,
    })
}

fn shared_config(redis: &str, metered: &str, leaver: &str) -> String {
    let model = |name: &str, base: &str| {
        format!(
            "[[models]]\nname = \"{name}\"\n[[models.targets]]\nprovider = \"openai\"\nbase_url = \"{base}\"\nmodel = \"up-{name}\"\n\n"
        )
    };
    // The soak key's token limit is never reached: its charges still go through Redis.
    format!(
        "[server]\nworkers = 2\n\n[observability]\naccess_log = \"off\"\n\n\
         [rate_limits]\nbackend = \"redis\"\n\n\
         [rate_limits.redis]\nurl = \"{redis}\"\ntimeout_ms = 1000\nrecheck_ms = 250\nwhen_down = \"memory\"\n\n\
         [[keys]]\nname = \"soak\"\nkey = \"{BENCH_KEY}\"\nrate_limit = {{ tokens_per_minute = 1000000000 }}\n\n\
         [[keys]]\nname = \"capped\"\nkey = \"{CAPPED_KEY}\"\nrate_limit = {{ requests_per_minute = {CAPPED_RPM} }}\n\n{}{}",
        model("metered", metered),
        model("leaver", leaver),
    )
}

/// A chat stream that does not ask for usage (the OpenAI SDK's default), chat buffered, or
/// a messages stream (translated to the openai upstream), each read to its end.
async fn full_reader(addr: SocketAddr, i: usize, t: &Tally) {
    let (path, body, end): (&str, &str, &str) = match i % 3 {
        0 => (
            "/v1/chat/completions",
            r#"{"model":"metered","messages":[{"role":"user","content":"hi"}],"stream":true}"#,
            "[DONE]",
        ),
        1 => (
            "/v1/chat/completions",
            r#"{"model":"metered","messages":[{"role":"user","content":"hi"}]}"#,
            "\"usage\"",
        ),
        _ => (
            "/v1/messages",
            r#"{"model":"metered","max_tokens":64,"messages":[{"role":"user","content":"hi"}],"stream":true}"#,
            "message_stop",
        ),
    };
    t.full.fetch_add(1, Relaxed);
    match post(addr, path, body, BENCH_KEY, None).await {
        Ok((200, b)) if contains(&b, end.as_bytes()) => {}
        Ok((s, b)) => t.fail(format!(
            "{path}: {s} {}",
            String::from_utf8_lossy(&b[..b.len().min(200)])
        )),
        Err(e) => t.fail(format!("{path}: {e}")),
    }
}

/// A stream left after its first delta: chat without usage, or messages (translated).
async fn early_leaver(addr: SocketAddr, i: usize, t: &Tally) {
    let (path, body) = if i.is_multiple_of(2) {
        (
            "/v1/chat/completions",
            r#"{"model":"leaver","messages":[{"role":"user","content":"hi"}],"stream":true}"#,
        )
    } else {
        (
            "/v1/messages",
            r#"{"model":"leaver","max_tokens":64,"messages":[{"role":"user","content":"hi"}],"stream":true}"#,
        )
    };
    match post(addr, path, body, BENCH_KEY, Some(b"delta")).await {
        Ok((200, _)) => {
            t.leavers.fetch_add(1, Relaxed);
        }
        Ok((s, b)) => t.fail(format!(
            "leaver {path}: {s} {}",
            String::from_utf8_lossy(&b[..b.len().min(200)])
        )),
        Err(e) => t.fail(format!("leaver {path}: {e}")),
    }
}

/// One buffered chat request of the capped key: 200 (an answer read to its end, like the
/// full readers') or 429, nothing else.
async fn capped(addr: SocketAddr, t: &Tally) {
    let outage = t.outage.load(Relaxed) != 0;
    let body = r#"{"model":"metered","messages":[{"role":"user","content":"hi"}]}"#;
    let r = post(addr, "/v1/chat/completions", body, CAPPED_KEY, None).await;
    if !matches!(r, Ok((429, _))) {
        t.full.fetch_add(1, Relaxed);
    }
    match r {
        // Counted against the bound only when Redis was up from start to end.
        Ok((200, b)) if contains(&b, b"\"usage\"") => {
            if !outage && t.outage.load(Relaxed) == 0 {
                t.capped_shared.fetch_add(1, Relaxed);
            }
        }
        Ok((429, _)) => {
            t.capped_refused.fetch_add(1, Relaxed);
        }
        Ok((s, b)) => t.fail(format!(
            "capped: {s} {}",
            String::from_utf8_lossy(&b[..b.len().min(200)])
        )),
        Err(e) => t.fail(format!("capped: {e}")),
    }
}

async fn metrics(addr: SocketAddr) -> Option<String> {
    let fut = async {
        let mut sender = trainer::http1::connect(addr).await.ok()?;
        let req = http::Request::get("/metrics")
            .header("host", "soak")
            .body(Full::new(Bytes::new()))
            .ok()?;
        let resp = sender.send_request(req).await.ok()?;
        let body = resp.into_body().collect().await.ok()?.to_bytes();
        String::from_utf8(body.to_vec()).ok()
    };
    tokio::time::timeout(Duration::from_secs(10), fut)
        .await
        .ok()
        .flatten()
}

async fn scrape(addr: SocketAddr, series: &str) -> Option<f64> {
    metric(&metrics(addr).await?, series)
}

/// One series (exact name and labels) of Prometheus text.
fn metric(text: &str, series: &str) -> Option<f64> {
    text.lines().find_map(|l| {
        let rest = l.strip_prefix(series)?;
        rest.strip_prefix(' ')?.trim().parse().ok()
    })
}

pub(crate) fn markdown(r: &SharedSoakReport) -> String {
    let problems = r.problems();
    let verdict = if problems.is_empty() {
        "pass".to_owned()
    } else {
        format!("FAIL: {}", problems.join("; "))
    };
    let pct = |a: u64, b: u64| {
        if b == 0 {
            0.0
        } else {
            100.0 * a as f64 / b as f64
        }
    };
    format!(
        "`{}`, {} replicas on one Redis, {:.0} s, Redis killed and restarted half way ({verdict}):\n\n\
         | figure | value |\n| --- | --- |\n\
         | answers read to their end (failed) | {} ({}) |\n\
         | their tokens: upstream usage / charged | {} / {} |\n\
         | clients that left after the first delta | {} |\n\
         | their tokens: upstream's whole answers / charged (estimated) | {} / {} ({}), {:.1} % |\n\
         | capped key ({CAPPED_RPM}/min) while Redis was up: admitted / bound (refused) | {} / {} ({}) |\n\
         | requests decided by when_down = \"memory\" | {} |\n\
         | replicas back on Redis | {}/{} |\n",
        r.binary,
        r.replicas,
        r.duration_s,
        r.full_requests,
        r.full_failed,
        r.full_upstream_tokens,
        r.full_charged_tokens,
        r.leavers,
        r.leaver_upstream_tokens,
        r.leaver_charged_tokens,
        r.leaver_estimated_tokens,
        pct(r.leaver_charged_tokens, r.leaver_upstream_tokens),
        r.capped_admitted,
        r.capped_bound,
        r.capped_refused,
        r.degraded,
        r.replicas_back,
        r.replicas,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn problems_name_every_failed_check() {
        let ok = SharedSoakReport {
            replicas: 3,
            full_requests: 10,
            full_upstream_tokens: 330,
            full_charged_tokens: 330,
            leavers: 4,
            leaver_charged_tokens: 40,
            capped_admitted: 100,
            capped_bound: 130,
            degraded: 5,
            replicas_back: 3,
            ..SharedSoakReport::default()
        };
        assert!(ok.problems().is_empty(), "{:?}", ok.problems());
        assert!(markdown(&ok).contains("(pass)"));
        let bad = SharedSoakReport {
            full_charged_tokens: 300,
            leaver_charged_tokens: 0,
            capped_admitted: 200,
            replicas_back: 2,
            degraded: 0,
            ..ok
        };
        assert_eq!(bad.problems().len(), 5, "{:?}", bad.problems());
        assert!(markdown(&bad).contains("FAIL"));
    }

    #[test]
    fn config_parses_as_toml() {
        let c = shared_config("redis://127.0.0.1:1/0", "http://a:1", "http://b:1");
        let v: toml::Table = toml::from_str(&c).unwrap();
        assert_eq!(v["rate_limits"]["backend"].as_str(), Some("redis"));
        assert_eq!(v["keys"].as_array().unwrap().len(), 2);
    }
}
