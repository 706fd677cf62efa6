//! The shape driver: sends exactly a shape's request count at its concurrency over
//! keep-alive connections and checks every response.
//!
//! Each unit of concurrency is one HTTP/1.1 connection sending its share of the requests
//! back to back, as an SDK client with a connection pool does. A connection the gateway
//! closes is reopened; a request that fails is counted, never retried.

use std::fmt;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use http::{header, Request, StatusCode, Uri};
use http_body_util::{BodyExt, Full};
use hyper::client::conn::http1::SendRequest;

use crate::check;
use crate::dialect::Dialect;
use crate::http1;
use crate::shapes::Shape;

/// Failures kept verbatim in a report; the rest are only counted.
const KEPT_FAILURES: usize = 5;

#[derive(Debug, thiserror::Error)]
pub enum DriveError {
    #[error("gateway URL {url:?}: {message}")]
    Url { url: String, message: String },
    #[error("driver task failed: {0}")]
    Task(String),
}

#[derive(Debug, Clone)]
pub struct DriveOptions {
    /// The gateway's base URL, `http://host:port` (the dialect's route is appended; Gemini's
    /// names the model and the method: `/v1beta/models/{model}:generateContent`, streaming
    /// `:streamGenerateContent?alt=sse`).
    pub gateway: String,
    /// The gateway API key; sent as `x-api-key` for messages, `x-goog-api-key` for Gemini,
    /// `Authorization: Bearer` otherwise.
    pub key: Option<String>,
    /// Longest a single request (head and whole body) may take before it counts as failed.
    pub request_timeout: Duration,
}

impl DriveOptions {
    pub fn new(gateway: impl Into<String>, key: Option<String>) -> DriveOptions {
        DriveOptions {
            gateway: gateway.into(),
            key,
            request_timeout: Duration::from_secs(60),
        }
    }
}

/// What one drive of a shape did.
#[derive(Debug, Clone)]
pub struct DriveReport {
    pub shape: String,
    pub requests: u64,
    pub ok: u64,
    pub failed: u64,
    pub elapsed: Duration,
    pub p50: Duration,
    pub p99: Duration,
    /// The first few failures, each naming the request and what was wrong.
    pub failures: Vec<String>,
}

impl DriveReport {
    /// Requests per second over the whole drive.
    pub fn rate(&self) -> f64 {
        self.requests as f64 / self.elapsed.as_secs_f64().max(1e-9)
    }

    /// Every request sent and every response well formed.
    pub fn is_success(&self) -> bool {
        self.failed == 0 && self.ok == self.requests
    }
}

impl fmt::Display for DriveReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}: ok {} fail {} of {} in {:.2}s, {:.0} req/s, p50 {:.2} ms, p99 {:.2} ms",
            self.shape,
            self.ok,
            self.failed,
            self.requests,
            self.elapsed.as_secs_f64(),
            self.rate(),
            self.p50.as_secs_f64() * 1e3,
            self.p99.as_secs_f64() * 1e3,
        )?;
        for failure in &self.failures {
            write!(f, "\n  failed: {failure}")?;
        }
        if self.failed > self.failures.len() as u64 {
            write!(
                f,
                "\n  ... and {} more failures",
                self.failed - self.failures.len() as u64
            )?;
        }
        Ok(())
    }
}

/// Where and what to send; shared by all connections of one drive.
struct Target {
    authority: String,
    uri: Uri,
    dialect: Dialect,
    stream: bool,
    body: Bytes,
    key: Option<String>,
    timeout: Duration,
}

#[derive(Default)]
struct WorkerResult {
    latencies: Vec<Duration>,
    failed: u64,
    failures: Vec<String>,
}

/// Sends exactly `shape.requests` requests at `shape.concurrency` and checks each response.
/// Request failures are counted in the report (see [`DriveReport::is_success`]); `Err` means
/// the drive could not run at all.
pub async fn drive(shape: &Shape, opts: &DriveOptions) -> Result<DriveReport, DriveError> {
    let target = Arc::new(target(shape, opts)?);
    let conc = u64::from(shape.concurrency).min(shape.requests).max(1);
    let start = Instant::now();
    let mut tasks = Vec::new();
    for w in 0..conc {
        let n = shape.requests / conc + u64::from(w < shape.requests % conc);
        tasks.push(tokio::spawn(worker(target.clone(), w, n)));
    }
    let mut all = WorkerResult::default();
    for t in tasks {
        let r = t.await.map_err(|e| DriveError::Task(e.to_string()))?;
        all.latencies.extend(r.latencies);
        all.failed += r.failed;
        for f in r.failures {
            if all.failures.len() < KEPT_FAILURES {
                all.failures.push(f);
            }
        }
    }
    let elapsed = start.elapsed();
    all.latencies.sort_unstable();
    Ok(DriveReport {
        shape: shape.name.clone(),
        requests: shape.requests,
        ok: all.latencies.len() as u64,
        failed: all.failed,
        elapsed,
        p50: percentile(&all.latencies, 50),
        p99: percentile(&all.latencies, 99),
        failures: all.failures,
    })
}

/// The nearest-rank percentile of sorted samples; zero when there are none.
pub(crate) fn percentile(sorted: &[Duration], p: u32) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    let rank = (sorted.len() * p as usize).div_ceil(100).max(1);
    sorted[rank.min(sorted.len()) - 1]
}

fn target(shape: &Shape, opts: &DriveOptions) -> Result<Target, DriveError> {
    let bad = |message: &str| DriveError::Url {
        url: opts.gateway.clone(),
        message: message.to_owned(),
    };
    let base: Uri = opts.gateway.parse().map_err(|_| bad("not a valid URL"))?;
    if base.scheme_str() != Some("http") {
        return Err(bad("only http:// is supported"));
    }
    let authority = base.authority().ok_or_else(|| bad("no host"))?;
    if authority.port_u16().is_none() {
        return Err(bad("no port"));
    }
    let prefix = base.path().trim_end_matches('/');
    let uri = format!(
        "{prefix}{}",
        shape.dialect.request_path(&shape.model, shape.stream)
    )
    .parse()
    .map_err(|_| bad("cannot append the route"))?;
    Ok(Target {
        authority: authority.as_str().to_owned(),
        uri,
        dialect: shape.dialect,
        stream: shape.stream,
        body: Bytes::from(shape.body.clone()),
        key: opts.key.clone(),
        timeout: opts.request_timeout,
    })
}

async fn connect(t: &Target) -> Result<SendRequest<Full<Bytes>>, String> {
    http1::connect(t.authority.as_str()).await
}

fn request(t: &Target) -> Request<Full<Bytes>> {
    let mut b = Request::post(t.uri.clone())
        .header(header::HOST, &t.authority)
        .header(header::CONTENT_TYPE, "application/json");
    if t.stream {
        b = b.header(header::ACCEPT, "text/event-stream");
    }
    if t.dialect.is_anthropic() {
        b = b.header("anthropic-version", "2023-06-01");
    }
    if let Some(key) = &t.key {
        b = match t.dialect {
            Dialect::Messages => b.header("x-api-key", key),
            Dialect::Gemini => b.header("x-goog-api-key", key),
            Dialect::Chat | Dialect::Responses => {
                b.header(header::AUTHORIZATION, format!("Bearer {key}"))
            }
        };
    }
    b.body(Full::new(t.body.clone()))
        .expect("request parts are valid")
}

async fn worker(t: Arc<Target>, worker: u64, n: u64) -> WorkerResult {
    let mut out = WorkerResult {
        latencies: Vec::with_capacity(n as usize),
        ..WorkerResult::default()
    };
    let mut sender: Option<SendRequest<Full<Bytes>>> = None;
    for i in 0..n {
        let start = Instant::now();
        let result = tokio::time::timeout(t.timeout, one(&t, &mut sender)).await;
        let result = match result {
            Ok(r) => r,
            Err(_) => {
                sender = None;
                Err(format!("no complete response within {:?}", t.timeout))
            }
        };
        match result {
            Ok(()) => out.latencies.push(start.elapsed()),
            Err(e) => {
                out.failed += 1;
                if out.failures.len() < KEPT_FAILURES {
                    out.failures
                        .push(format!("connection {worker} request {i}: {e}"));
                }
            }
        }
    }
    out
}

async fn one(t: &Target, sender: &mut Option<SendRequest<Full<Bytes>>>) -> Result<(), String> {
    let s = match sender {
        Some(s) if !s.is_closed() => s,
        _ => sender.insert(connect(t).await?),
    };
    if s.ready().await.is_err() {
        *s = connect(t).await?;
    }
    let resp = match s.send_request(request(t)).await {
        Ok(r) => r,
        Err(e) => {
            *sender = None;
            return Err(format!("send: {e}"));
        }
    };
    let status = resp.status();
    let content_type = resp
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_owned();
    let body = match resp.into_body().collect().await {
        Ok(b) => b.to_bytes(),
        Err(e) => {
            *sender = None;
            return Err(format!("reading body: {e}"));
        }
    };
    if status != StatusCode::OK {
        return Err(format!(
            "status {status}: {}",
            String::from_utf8_lossy(&body[..body.len().min(200)])
        ));
    }
    let checked = if t.stream {
        if !content_type.starts_with("text/event-stream") {
            return Err(format!("stream with content-type {content_type:?}"));
        }
        check::check_sse(t.dialect, &body)
    } else {
        check::check_json(t.dialect, &body)
    };
    checked.map(|_| ()).map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::shapes;

    #[test]
    fn each_dialect_posts_to_its_path_with_its_key_header() {
        let dir = shapes::repo_dir();
        let opts = DriveOptions::new("http://127.0.0.1:9/base/", Some("k".into()));
        for (name, path, key, value) in [
            (
                "chat-nonstream-minimal",
                "/base/v1/chat/completions",
                "authorization",
                "Bearer k",
            ),
            ("messages-stream-mid", "/base/v1/messages", "x-api-key", "k"),
            (
                "gemini-nonstream-minimal",
                "/base/v1beta/models/gemini-2.5-flash:generateContent",
                "x-goog-api-key",
                "k",
            ),
            (
                "gemini-stream-mid",
                "/base/v1beta/models/gemini-2.5-pro:streamGenerateContent?alt=sse",
                "x-goog-api-key",
                "k",
            ),
        ] {
            let shape = shapes::find(&dir, name).unwrap();
            let t = target(&shape, &opts).unwrap();
            let req = request(&t);
            assert_eq!(req.uri().to_string(), path, "{name}");
            assert_eq!(req.headers()[key], value, "{name}");
            assert_eq!(
                req.headers().len(),
                3 + usize::from(shape.stream) + usize::from(shape.dialect == Dialect::Messages),
                "{name}: {:?}",
                req.headers()
            );
        }
    }

    #[test]
    fn percentiles_use_nearest_rank() {
        let v: Vec<Duration> = (1..=100).map(Duration::from_millis).collect();
        assert_eq!(percentile(&v, 50), Duration::from_millis(50));
        assert_eq!(percentile(&v, 99), Duration::from_millis(99));
        assert_eq!(percentile(&v[..1], 99), Duration::from_millis(1));
        assert_eq!(percentile(&[], 50), Duration::ZERO);
    }
}
