//! The runtime stays responsive (issue 49, item 6): a gateway with ONE worker under floods
//! of big translations, `/healthz` sampled all along on its own keep-alive connection. Each
//! flood is a few clients in a loop, each request translated one way:
//!
//! - `error`: an upstream error body of `--size` bytes (Anthropic's envelope, many small
//!   members beside the message), translated to a chat client's envelope;
//! - `answer`: a successful Messages answer of `--size` bytes (many small text blocks),
//!   translated for a chat client;
//! - `request`: a chat request body of `--size` bytes (many small messages), translated to
//!   Messages (the answer is small);
//! - `stream`: a Messages stream of `--size` bytes in one write (many small deltas),
//!   translated event by event for a chat client.
//!
//! The default size, 1,000,000 bytes, sits just under the 1 MiB the gateway once moved off
//! its worker for successful answers only. Printed per flood: the healthz latency p50, p99
//! and max, the flood's requests, and the gateway's CPU per flood request (what one
//! translation of that size costs: the figure a threshold is chosen from).

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body_util::{BodyExt, Empty, Full};
use serde::{Deserialize, Serialize};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

use crate::raw_http;
use trainer::launch::{GatewayProcess, Launch, LaunchError};

#[derive(Debug, Clone)]
pub struct ResponsiveOptions {
    pub gateway: PathBuf,
    /// Bytes of each translated body.
    pub size: usize,
    /// Flooding clients.
    pub clients: u32,
    /// How long each flood lasts.
    pub duration: Duration,
    /// Time between two health checks.
    pub interval: Duration,
    /// The gateway's `--runtime`, if not its default.
    pub runtime: Option<String>,
    pub work_dir: PathBuf,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Flood {
    pub name: String,
    pub requests: u64,
    /// Requests not answered with the expected status.
    pub failed: u64,
    pub samples: usize,
    pub p50_ms: f64,
    pub p99_ms: f64,
    pub max_ms: f64,
    /// Gateway CPU (user + system) per flood request, in milliseconds.
    pub cpu_ms_per_request: Option<f64>,
    /// The first failures, as the clients saw them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub failures: Vec<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ResponsiveReport {
    pub binary: String,
    pub size: usize,
    pub clients: u32,
    pub seconds: f64,
    pub floods: Vec<Flood>,
}

impl ResponsiveReport {
    /// Floods whose healthz p99 is over `bound_ms`, or that failed requests.
    pub fn problems(&self, bound_ms: f64) -> Vec<String> {
        self.floods
            .iter()
            .filter_map(|f| {
                if f.failed > 0 || (f.requests == 0 && f.name != "idle") {
                    Some(format!(
                        "{}: {} of {} failed ({})",
                        f.name,
                        f.failed,
                        f.requests,
                        f.failures.join(" | ")
                    ))
                } else if f.p99_ms > bound_ms {
                    Some(format!("{}: healthz p99 {:.1} ms", f.name, f.p99_ms))
                } else {
                    None
                }
            })
            .collect()
    }

    pub fn markdown(&self) -> String {
        let mut s = format!(
            "healthz latency, one gateway worker, {} clients per flood, {} s each, bodies of {} bytes ({})\n\n\
             | flood | requests | failed | healthz samples | p50 ms | p99 ms | max ms | gateway CPU ms / request |\n\
             | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n",
            self.clients, self.seconds, self.size, self.binary
        );
        for f in &self.floods {
            s.push_str(&format!(
                "| {} | {} | {} | {} | {:.2} | {:.2} | {:.2} | {} |\n",
                f.name,
                f.requests,
                f.failed,
                f.samples,
                f.p50_ms,
                f.p99_ms,
                f.max_ms,
                f.cpu_ms_per_request
                    .map_or("-".into(), |c| format!("{c:.2}"))
            ));
        }
        s
    }
}

#[derive(Debug, thiserror::Error)]
pub enum ResponsiveError {
    #[error(transparent)]
    Launch(#[from] LaunchError),
    #[error("{0}")]
    Io(#[from] std::io::Error),
    #[error("{0}")]
    Client(String),
}

/// The upstream bodies, built once.
struct Bodies {
    error: Bytes,
    answer: Bytes,
    stream: Bytes,
    small: Bytes,
}

/// `n` JSON items from `item(i)`, comma-separated, until `size` bytes are reached.
fn fill(size: usize, item: impl Fn(usize) -> String) -> String {
    let mut out = String::with_capacity(size + 64);
    let mut i = 0;
    while out.len() < size {
        if i > 0 {
            out.push(',');
        }
        out.push_str(&item(i));
        i += 1;
    }
    out
}

impl Bodies {
    fn new(size: usize) -> Bodies {
        let details = fill(size, |i| format!(r#"{{"field":"f{i}","reason":"bad"}}"#));
        let error = format!(
            r#"{{"type":"error","error":{{"type":"invalid_request_error","message":"too much","details":[{details}]}}}}"#
        );
        let blocks = fill(size, |i| format!(r#"{{"type":"text","text":"part {i} "}}"#));
        let answer = format!(
            r#"{{"id":"msg_1","type":"message","role":"assistant","model":"m","content":[{blocks}],"stop_reason":"end_turn","stop_sequence":null,"usage":{{"input_tokens":5,"output_tokens":7}}}}"#
        );
        let mut stream = String::from(
            "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_1\",\"type\":\"message\",\"role\":\"assistant\",\"model\":\"m\",\"content\":[],\"usage\":{\"input_tokens\":5,\"output_tokens\":1}}}\n\n\
             event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n",
        );
        while stream.len() < size {
            stream.push_str("event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"word \"}}\n\n");
        }
        stream.push_str(
            "event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n\
             event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\",\"stop_sequence\":null},\"usage\":{\"output_tokens\":7}}\n\n\
             event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n",
        );
        let small = r#"{"id":"msg_1","type":"message","role":"assistant","model":"m","content":[{"type":"text","text":"ok"}],"stop_reason":"end_turn","stop_sequence":null,"usage":{"input_tokens":5,"output_tokens":1}}"#;
        Bodies {
            error: Bytes::from(error),
            answer: Bytes::from(answer),
            stream: Bytes::from(stream),
            small: Bytes::from_static(small.as_bytes()),
        }
    }
}

/// A chat request of about `size` bytes (many small messages) for `model`.
fn chat_request(model: &str, size: usize, stream: bool) -> Bytes {
    let messages = fill(size, |i| {
        let role = if i % 2 == 0 { "user" } else { "assistant" };
        format!(r#"{{"role":"{role}","content":"message {i}"}}"#)
    });
    Bytes::from(format!(
        r#"{{"model":"{model}","stream":{stream},"max_tokens":16,"messages":[{messages},{{"role":"user","content":"go"}}]}}"#
    ))
}

/// The mock upstream: keep-alive HTTP/1.1, the answer picked by the path's first segment.
async fn mock(bodies: Arc<Bodies>) -> std::io::Result<String> {
    let listener = TcpListener::bind("127.0.0.1:0").await?;
    let addr = listener.local_addr()?.to_string();
    tokio::spawn(async move {
        while let Ok((s, _)) = listener.accept().await {
            tokio::spawn(serve(s, bodies.clone()));
        }
    });
    Ok(addr)
}

async fn serve(mut s: TcpStream, bodies: Arc<Bodies>) {
    let _ = s.set_nodelay(true);
    let mut buf: Vec<u8> = Vec::with_capacity(64 << 10);
    let mut chunk = vec![0u8; 256 << 10];
    loop {
        // The head, then the body it announces.
        let head_end = loop {
            if let Some(end) = raw_http::head_end(&buf) {
                break end;
            }
            match s.read(&mut chunk).await {
                Ok(0) | Err(_) => return,
                Ok(n) => buf.extend_from_slice(&chunk[..n]),
            }
        };
        let (head, len) = raw_http::head_and_length(&buf[..head_end]);
        while buf.len() < head_end + len {
            match s.read(&mut chunk).await {
                Ok(0) | Err(_) => return,
                Ok(n) => buf.extend_from_slice(&chunk[..n]),
            }
        }
        let path = head.split_whitespace().nth(1).unwrap_or("").to_owned();
        buf.drain(..head_end + len);
        let (status, ty, body) = match path.split('/').nth(1).unwrap_or("") {
            "err" => ("400 Bad Request", "application/json", &bodies.error),
            "big" => ("200 OK", "application/json", &bodies.answer),
            "sse" => ("200 OK", "text/event-stream", &bodies.stream),
            _ => ("200 OK", "application/json", &bodies.small),
        };
        let head = format!(
            "HTTP/1.1 {status}\r\ncontent-type: {ty}\r\ncontent-length: {}\r\n\r\n",
            body.len()
        );
        if s.write_all(head.as_bytes()).await.is_err() || s.write_all(body).await.is_err() {
            return;
        }
    }
}

fn config(mock: &str) -> String {
    let mut s = String::from(
        "[server]\nlisten = \"127.0.0.1:0\"\nworkers = 1\nmax_body_bytes = 67108864\n\n\
         [observability]\naccess_log = \"stderr\"\nmetrics = false\n\n",
    );
    for (name, prefix) in [
        ("err", "err"),
        ("big", "big"),
        ("sse", "sse"),
        ("small", "small"),
    ] {
        s.push_str(&format!(
            "[[models]]\nname = \"{name}\"\n[[models.targets]]\nprovider = \"anthropic\"\n\
             base_url = \"http://{mock}/{prefix}\"\nmodel = \"m\"\napi_key_env = \"RESPONSIVE_UPSTREAM_KEY\"\n\n"
        ));
    }
    s
}

/// One flood: its request and the status each answer must have.
struct Load {
    name: &'static str,
    body: Option<Bytes>,
    status: u16,
}

/// Sends `body` to the chat route in a loop until `until`; (answered as expected, not, what
/// the first failures were).
async fn flood(addr: String, body: Bytes, status: u16, until: Instant) -> (u64, u64, Vec<String>) {
    let (mut ok, mut failed, mut why) = (0, 0, Vec::new());
    let mut sender = None;
    while Instant::now() < until {
        if sender.is_none() {
            sender = trainer::http1::connect::<_, Full<Bytes>>(addr.as_str())
                .await
                .ok();
        }
        let Some(s) = sender.as_mut() else {
            failed += 1;
            tokio::time::sleep(Duration::from_millis(10)).await;
            continue;
        };
        let req = http::Request::post(format!("http://{addr}/v1/chat/completions"))
            .header("host", addr.as_str())
            .header("content-type", "application/json")
            .body(Full::new(body.clone()))
            .expect("a valid request");
        // A chunked answer read to its end may leave the connection a moment from ready:
        // sent before, the request is refused unsent ("operation was canceled").
        if s.ready().await.is_err() {
            failed += 1;
            sender = None;
            continue;
        }
        let answered = match s.send_request(req).await {
            Ok(r) => {
                let st = r.status().as_u16();
                match r.into_body().collect().await {
                    Ok(_) if st == status => Ok(()),
                    Ok(b) => Err(format!(
                        "{st}: {}",
                        String::from_utf8_lossy(
                            &b.to_bytes()[..]
                                .iter()
                                .take(200)
                                .copied()
                                .collect::<Vec<u8>>()
                        )
                    )),
                    Err(e) => Err(format!("{st}, body: {e}")),
                }
            }
            Err(e) => Err(e.to_string()),
        };
        match answered {
            Ok(()) => ok += 1,
            Err(e) => {
                failed += 1;
                if why.len() < 3 {
                    why.push(e);
                }
                sender = None;
            }
        }
    }
    (ok, failed, why)
}

/// Health checks every `interval` until `until`: each one's latency in milliseconds.
async fn sample(addr: String, interval: Duration, until: Instant) -> Result<Vec<f64>, String> {
    let mut s = trainer::http1::connect::<_, Empty<Bytes>>(addr.as_str()).await?;
    let mut out = Vec::new();
    while Instant::now() < until {
        let req = http::Request::get(format!("http://{addr}/healthz"))
            .header("host", addr.as_str())
            .body(Empty::new())
            .expect("a valid request");
        let t = Instant::now();
        s.ready().await.map_err(|e| e.to_string())?;
        let r = s.send_request(req).await.map_err(|e| e.to_string())?;
        let ok = r.status().is_success();
        r.into_body().collect().await.map_err(|e| e.to_string())?;
        if !ok {
            return Err("/healthz did not answer 200".into());
        }
        out.push(t.elapsed().as_secs_f64() * 1e3);
        tokio::time::sleep(interval).await;
    }
    Ok(out)
}

fn quantile(sorted: &[f64], q: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let i = ((sorted.len() as f64 - 1.0) * q).round() as usize;
    sorted[i.min(sorted.len() - 1)]
}

pub async fn run(opts: &ResponsiveOptions) -> Result<ResponsiveReport, ResponsiveError> {
    std::fs::create_dir_all(&opts.work_dir)?;
    let bodies = Arc::new(Bodies::new(opts.size));
    let upstream = mock(bodies).await?;
    let cfg = opts.work_dir.join("responsive.toml");
    std::fs::write(&cfg, config(&upstream))?;
    let launch = Launch {
        bin: opts.gateway.clone(),
        config: cfg,
        args: ["--workers", "1"]
            .into_iter()
            .map(String::from)
            .chain(
                opts.runtime
                    .iter()
                    .flat_map(|r| ["--runtime".to_owned(), r.clone()]),
            )
            .map(Into::into)
            .collect(),
        wrapper: Vec::new(),
        cpus: Vec::new(),
        env: vec![("RESPONSIVE_UPSTREAM_KEY".into(), "sk-responsive".into())],
        stderr: opts.work_dir.join("responsive-gateway.stderr"),
        ready_timeout: Duration::from_secs(60),
        healthz: true,
        preflight: true,
    };
    let gw = GatewayProcess::start(&launch).await?;
    let addr = gw
        .base_url()
        .trim_start_matches("http://")
        .trim_end_matches('/')
        .to_owned();
    let small = chat_request("small", 64, false);
    let loads = [
        Load {
            name: "idle",
            body: None,
            status: 200,
        },
        Load {
            name: "error",
            body: Some(chat_request("err", 64, false)),
            status: 400,
        },
        Load {
            name: "answer",
            body: Some(chat_request("big", 64, false)),
            status: 200,
        },
        Load {
            name: "request",
            body: Some(chat_request("small", opts.size, false)),
            status: 200,
        },
        Load {
            name: "stream",
            body: Some(chat_request("sse", 64, true)),
            status: 200,
        },
    ];
    // Warm-up: connections, the allocator's arenas.
    flood(
        addr.clone(),
        small,
        200,
        Instant::now() + Duration::from_millis(300),
    )
    .await;
    let mut floods = Vec::new();
    for load in loads {
        let until = Instant::now() + opts.duration;
        let cpu0 = gw.cpu_seconds();
        let clients: Vec<_> = match &load.body {
            Some(b) => (0..opts.clients)
                .map(|_| tokio::spawn(flood(addr.clone(), b.clone(), load.status, until)))
                .collect(),
            None => Vec::new(),
        };
        let samples = sample(addr.clone(), opts.interval, until)
            .await
            .map_err(ResponsiveError::Client)?;
        let (mut requests, mut failed, mut failures) = (0, 0, Vec::new());
        for c in clients {
            let (ok, bad, why) = c
                .await
                .map_err(|e| ResponsiveError::Client(e.to_string()))?;
            requests += ok + bad;
            failed += bad;
            failures.extend(why);
        }
        let cpu = gw.cpu_seconds().zip(cpu0).map(|(b, a)| (b - a).max(0.0));
        let mut sorted = samples.clone();
        sorted.sort_by(f64::total_cmp);
        floods.push(Flood {
            name: load.name.into(),
            requests,
            failed,
            samples: sorted.len(),
            p50_ms: quantile(&sorted, 0.5),
            p99_ms: quantile(&sorted, 0.99),
            max_ms: sorted.last().copied().unwrap_or(f64::NAN),
            cpu_ms_per_request: cpu
                .filter(|_| requests > 0)
                .map(|c| c * 1e3 / requests as f64),
            failures,
        });
    }
    gw.stop(Duration::from_secs(30)).await?;
    Ok(ResponsiveReport {
        binary: opts.gateway.display().to_string(),
        size: opts.size,
        clients: opts.clients,
        seconds: opts.duration.as_secs_f64(),
        floods,
    })
}
