//! Memory per request on the translated paths (issue 49): a fresh gateway per case, routed
//! to a hostile upstream of this module's own, sent one big request or answered one big
//! answer, event or error body; the gateway's peak RSS (`VmHWM`) before and after gives the
//! growth, divided by the bytes of the document the case is about (the request body, or the
//! upstream's answer). A request case first sends one small request on its route, so that a
//! process's one-time costs are not counted as the big request's. Exits non-zero when a case grows more than the target multiple.
//!
//! The upstream is raw TCP (one canned answer per case, `Connection: close`) so that the
//! answer is exactly the bytes chosen: a mock that parses the request would cost the case
//! nothing, but a mock that writes whatever it likes is what a hostile upstream is.

use std::fmt::Write as _;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use serde::Serialize;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

use crate::error::{io, BenchError};
use crate::raw_http;
use trainer::launch::{GatewayProcess, Launch};

/// The target: peak RSS growth per request at most this many times the bytes read.
pub const TARGET_RATIO: f64 = 4.0;

#[derive(Debug, Clone)]
pub struct MemoryOptions {
    pub gateway: PathBuf,
    pub work_dir: PathBuf,
    /// Cases whose name contains one of these (all when empty).
    pub only: Vec<String>,
    pub target: f64,
}

#[derive(Debug, Clone, Serialize)]
pub struct CaseResult {
    pub case: String,
    /// The translation, `client->upstream`.
    pub path: String,
    /// Bytes of the document the case is about.
    pub bytes: usize,
    pub status: u16,
    pub hwm_before_kib: u64,
    pub hwm_after_kib: u64,
    pub growth_bytes: u64,
    pub ratio: f64,
    pub within: bool,
}

#[derive(Debug, Clone, Serialize)]
pub struct MemoryReport {
    pub binary: String,
    pub target: f64,
    pub cases: Vec<CaseResult>,
}

impl MemoryReport {
    pub fn failed(&self) -> Vec<&CaseResult> {
        self.cases.iter().filter(|c| !c.within).collect()
    }
}

/// What the client sends and what the upstream answers.
struct Case {
    name: &'static str,
    path: &'static str,
    /// Client route and body.
    route: String,
    body: Vec<u8>,
    /// The upstream's whole answer: head and body.
    answer: Vec<u8>,
    /// Whether the measured document is the request (else the answer's body).
    measures_request: bool,
    /// A request case's warm-up: a ~100 KB body on the same route, sent before the peak is
    /// read, so that what a process pays once (the blocking pool's first thread and its
    /// allocator arena, the upstream connection) is not counted as the big request's.
    /// (An answer case's upstream has only its one big answer.)
    warmup: Option<Vec<u8>>,
    answer_body_len: usize,
}

const MB: usize = 1_000_000;

/// `[{"a":1},{"a":1},...]`, `n` bytes or just under: a flood of the smallest objects that
/// hold a member (an empty object allocates nothing; one member, a whole B-tree leaf).
fn flood(n: usize) -> String {
    flood_of(r#"{"a":1}"#, n)
}

/// `[one,one,...]`, `n` bytes or just under.
fn flood_of(one: &str, n: usize) -> String {
    let k = n.saturating_sub(1) / (one.len() + 1);
    let mut s = String::with_capacity(n);
    s.push('[');
    for i in 0..k {
        if i > 0 {
            s.push(',');
        }
        s.push_str(one);
    }
    s.push(']');
    s
}

/// `doc` padded with a flood under `key` so that the whole is about `n` bytes; `doc` ends
/// with `}` and is an object.
fn with_flood(doc: &str, key: &str, n: usize) -> String {
    let head = &doc[..doc.len() - 1];
    let f = flood(n.saturating_sub(doc.len() + key.len() + 4));
    format!("{head},\"{key}\":{f}}}")
}

fn http_answer(status: u16, content_type: &str, body: &[u8]) -> Vec<u8> {
    let mut a = format!(
        "HTTP/1.1 {status} X\r\ncontent-type: {content_type}\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
        body.len()
    )
    .into_bytes();
    a.extend_from_slice(body);
    a
}

const CHAT_ANSWER: &str = r#"{"id":"c1","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"ok"},"finish_reason":"stop"}],"usage":{"prompt_tokens":1,"completion_tokens":1,"total_tokens":2}}"#;

/// One AWS event-stream frame (`:message-type` event) carrying `payload`.
fn event_frame(event_type: &str, payload: &[u8]) -> Vec<u8> {
    let mut headers = Vec::new();
    for (name, value) in [
        (":message-type", "event"),
        (":event-type", event_type),
        (":content-type", "application/json"),
    ] {
        headers.push(name.len() as u8);
        headers.extend_from_slice(name.as_bytes());
        headers.push(7); // string
        headers.extend_from_slice(&(value.len() as u16).to_be_bytes());
        headers.extend_from_slice(value.as_bytes());
    }
    let total = 12 + headers.len() + payload.len() + 4;
    let mut f = Vec::with_capacity(total);
    f.extend_from_slice(&(total as u32).to_be_bytes());
    f.extend_from_slice(&(headers.len() as u32).to_be_bytes());
    let prelude_crc = crc32fast::hash(&f);
    f.extend_from_slice(&prelude_crc.to_be_bytes());
    f.extend_from_slice(&headers);
    f.extend_from_slice(payload);
    let crc = crc32fast::hash(&f);
    f.extend_from_slice(&crc.to_be_bytes());
    f
}

fn cases() -> Vec<Case> {
    let small_messages =
        r#"{"model":"via-openai","max_tokens":64,"messages":[{"role":"user","content":"hi"}]}"#;
    let small_chat = |model: &str, stream: bool| {
        format!(
            r#"{{"model":"{model}","stream":{stream},"messages":[{{"role":"user","content":"hi"}}]}}"#
        )
    };
    // A realistic big body: a long conversation of big text turns (pasted files, tool
    // output), the shape of a long agent session.
    let realistic = |repeat: usize| {
        let turn = "lorem ipsum dolor sit amet, consectetur adipiscing elit. ".repeat(repeat);
        let mut messages = Vec::new();
        for i in 0..8 {
            let role = if i % 2 == 0 { "user" } else { "assistant" };
            messages.push(
                serde_json::json!({"role": role, "content": [{"type": "text", "text": turn}]}),
            );
        }
        messages.push(serde_json::json!({"role": "user", "content": "and so?"}));
        serde_json::to_vec(&serde_json::json!({
            "model": "via-openai", "max_tokens": 64, "system": "You are terse.", "messages": messages,
        }))
        .expect("JSON")
    };
    let warm_messages = Some(realistic(220));
    let warm_gemini = Some(
        format!(
            r#"{{"contents":[{{"role":"user","parts":[{{"text":"{}"}}]}}]}}"#,
            "lorem ipsum ".repeat(9_000)
        )
        .into_bytes(),
    );
    let chat_ok = http_answer(200, "application/json", CHAT_ANSWER.as_bytes());
    let converse = with_flood(
        r#"{"output":{"message":{"role":"assistant","content":[{"text":"ok"}]}},"stopReason":"end_turn","usage":{"inputTokens":1,"outputTokens":1,"totalTokens":2}}"#,
        "metrics",
        2 * MB,
    );
    let frame = event_frame(
        "contentBlockDelta",
        with_flood(
            r#"{"contentBlockIndex":0,"delta":{"text":"ok"}}"#,
            "p",
            2 * MB,
        )
        .as_bytes(),
    );
    let frame_len = frame.len();
    let error = with_flood(
        r#"{"type":"error","error":{"type":"invalid_request_error","message":"no"}}"#,
        "detail",
        2 * MB,
    );
    let parts = format!(
        r#"{{"candidates":[{{"content":{{"role":"model","parts":{}}},"finishReason":"STOP"}}],"usageMetadata":{{"promptTokenCount":1,"candidatesTokenCount":1,"totalTokenCount":2}}}}"#,
        flood_of("{}", 1_800_000).replacen("[{}", r#"[{"text":"ok"}"#, 1)
    );
    let gemini_request = format!(
        r#"{{"contents":[{{"role":"user","parts":{}}}]}}"#,
        flood(1_800_000).replacen(r#"[{"a":1}"#, r#"[{"text":"hi"}"#, 1)
    );
    vec![
        Case {
            name: "request-8mb-realistic",
            path: "messages->chat",
            route: "/v1/messages".into(),
            body: realistic(17_000),
            answer: chat_ok.clone(),
            measures_request: true,
            warmup: warm_messages.clone(),
            answer_body_len: 0,
        },
        Case {
            name: "request-8mb-flood",
            path: "messages->chat",
            route: "/v1/messages".into(),
            body: with_flood(small_messages, "metadata_flood", 8 * MB).into_bytes(),
            answer: chat_ok.clone(),
            measures_request: true,
            warmup: warm_messages,
            answer_body_len: 0,
        },
        Case {
            name: "request-1.8mb-gemini-parts-flood",
            path: "gemini->chat",
            route: "/v1beta/models/via-openai:generateContent".into(),
            body: gemini_request.into_bytes(),
            answer: chat_ok,
            measures_request: true,
            warmup: warm_gemini,
            answer_body_len: 0,
        },
        Case {
            name: "answer-2mb-converse",
            path: "chat->converse",
            route: "/v1/chat/completions".into(),
            body: small_chat("bedrock", false).into_bytes(),
            answer_body_len: converse.len(),
            answer: http_answer(200, "application/json", converse.as_bytes()),
            measures_request: false,
            warmup: None,
        },
        Case {
            name: "event-2mb-eventstream-frame",
            path: "chat->converse (stream)",
            route: "/v1/chat/completions".into(),
            body: small_chat("bedrock", true).into_bytes(),
            answer_body_len: frame_len,
            answer: http_answer(200, "application/vnd.amazon.eventstream", &frame),
            measures_request: false,
            warmup: None,
        },
        Case {
            name: "error-2mb-translated",
            path: "chat->messages",
            route: "/v1/chat/completions".into(),
            body: small_chat("via-anthropic", false).into_bytes(),
            answer_body_len: error.len(),
            answer: http_answer(400, "application/json", error.as_bytes()),
            measures_request: false,
            warmup: None,
        },
        Case {
            name: "answer-1.8mb-gemini-parts-flood",
            path: "chat->gemini",
            route: "/v1/chat/completions".into(),
            body: small_chat("gemini", false).into_bytes(),
            answer_body_len: parts.len(),
            answer: http_answer(200, "application/json", parts.as_bytes()),
            measures_request: false,
            warmup: None,
        },
    ]
}

fn config_toml(upstream: &str) -> String {
    let mut toml = String::from(
        "[server]\nlisten = \"127.0.0.1:0\"\nworkers = 1\n[observability]\naccess_log = \"off\"\n",
    );
    // (model, provider, upstream model, the target's credential line)
    let key = r#"api_key_env = "BENCH_MEMORY_KEY""#;
    for (name, provider, model, auth) in [
        ("via-openai", "openai", "gpt-4o-mini", key),
        ("via-anthropic", "anthropic", "claude", key),
        ("gemini", "gemini", "gemini-2.5-flash", key),
        (
            "bedrock",
            "bedrock",
            "anthropic.claude",
            "region = \"us-east-1\"\naws_credentials = \"env\"",
        ),
    ] {
        let _ = write!(
            toml,
            "[[models]]\nname = \"{name}\"\n[[models.targets]]\nprovider = \"{provider}\"\n\
             base_url = \"{upstream}\"\nmodel = \"{model}\"\n{auth}\n"
        );
    }
    toml
}

/// Answers every connection with `answer` after reading the request (head and
/// `content-length` body), then closes it.
async fn hostile_upstream(listener: TcpListener, answer: Arc<Vec<u8>>) {
    loop {
        let Ok((mut s, _)) = listener.accept().await else {
            return;
        };
        let answer = answer.clone();
        tokio::spawn(async move {
            if read_request(&mut s).await.is_ok() {
                let _ = s.write_all(&answer).await;
                let _ = s.shutdown().await;
            }
        });
    }
}

async fn read_request(s: &mut TcpStream) -> std::io::Result<()> {
    let mut buf = Vec::new();
    let mut chunk = vec![0u8; 64 * 1024];
    let head_end = loop {
        let n = s.read(&mut chunk).await?;
        if n == 0 {
            return Err(std::io::ErrorKind::UnexpectedEof.into());
        }
        buf.extend_from_slice(&chunk[..n]);
        if let Some(end) = raw_http::head_end(&buf) {
            break end;
        }
    };
    let (_, len) = raw_http::head_and_length(&buf[..head_end]);
    let mut have = buf.len() - head_end;
    while have < len {
        let n = s.read(&mut chunk).await?;
        if n == 0 {
            break;
        }
        have += n;
    }
    Ok(())
}

/// Sends `body` to `route` and reads the answer to its end; its status.
async fn send(addr: &str, route: &str, body: &[u8]) -> std::io::Result<u16> {
    let mut s = TcpStream::connect(addr).await?;
    let head = format!(
        "POST {route} HTTP/1.1\r\nhost: {addr}\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
        body.len()
    );
    s.write_all(head.as_bytes()).await?;
    s.write_all(body).await?;
    let mut answer = Vec::new();
    s.read_to_end(&mut answer).await?;
    let status = answer
        .get(9..12)
        .and_then(|b| std::str::from_utf8(b).ok())
        .and_then(|b| b.parse().ok())
        .unwrap_or(0);
    Ok(status)
}

async fn run_case(opts: &MemoryOptions, case: &Case) -> Result<CaseResult, BenchError> {
    let listener = TcpListener::bind("127.0.0.1:0")
        .await
        .map_err(io("binding the hostile upstream"))?;
    let upstream = format!(
        "http://{}",
        listener.local_addr().map_err(io("its address"))?
    );
    let mock = tokio::spawn(hostile_upstream(listener, Arc::new(case.answer.clone())));
    let config = opts.work_dir.join(format!("memory-{}.toml", case.name));
    std::fs::write(&config, config_toml(&upstream)).map_err(io("writing the config"))?;
    let mut launch = Launch::new(
        &opts.gateway,
        &config,
        &opts.work_dir.join(format!("memory-{}.stderr", case.name)),
        Duration::from_secs(60),
    );
    launch.env = vec![
        ("BENCH_MEMORY_KEY".into(), "bench-memory-key".into()),
        ("AWS_ACCESS_KEY_ID".into(), "AKIDBENCHMEMORY01".into()),
        ("AWS_SECRET_ACCESS_KEY".into(), "bench-memory-secret".into()),
    ];
    let gw = GatewayProcess::start(&launch).await?;
    let hwm = |gw: &GatewayProcess| {
        gw.memory_kib()
            .map(|(_, hwm)| hwm)
            .ok_or_else(|| BenchError::Failed(format!("/proc/{}/status unreadable", gw.pid())))
    };
    let addr = gw.base_url().trim_start_matches("http://").to_owned();
    if let Some(warmup) = &case.warmup {
        let status = send(&addr, &case.route, warmup)
            .await
            .map_err(io(format!("warming case {}", case.name)))?;
        if status != 200 {
            let why = format!("case {}: its warm-up request got {status}", case.name);
            return Err(BenchError::Failed(why));
        }
    }
    let before = hwm(&gw)?;
    let status = send(&addr, &case.route, &case.body)
        .await
        .map_err(io(format!("sending case {}", case.name)))?;
    let after = hwm(&gw)?;
    gw.stop(Duration::from_secs(30)).await?;
    mock.abort();
    let bytes = if case.measures_request {
        case.body.len()
    } else {
        case.answer_body_len
    };
    let growth = after.saturating_sub(before) * 1024;
    let ratio = growth as f64 / bytes as f64;
    Ok(CaseResult {
        case: case.name.into(),
        path: case.path.into(),
        bytes,
        status,
        hwm_before_kib: before,
        hwm_after_kib: after,
        growth_bytes: growth,
        ratio,
        within: ratio <= opts.target,
    })
}

pub async fn run(opts: &MemoryOptions) -> Result<MemoryReport, BenchError> {
    std::fs::create_dir_all(&opts.work_dir).map_err(io("creating the work dir"))?;
    let mut out = Vec::new();
    for case in cases() {
        if !opts.only.is_empty() && !opts.only.iter().any(|o| case.name.contains(o.as_str())) {
            continue;
        }
        let r = run_case(opts, &case).await?;
        eprintln!(
            "memory {}: {} bytes, status {}, +{:.1} MiB, {:.2}x",
            r.case,
            r.bytes,
            r.status,
            r.growth_bytes as f64 / 1048576.0,
            r.ratio
        );
        out.push(r);
    }
    Ok(MemoryReport {
        binary: opts.gateway.display().to_string(),
        target: opts.target,
        cases: out,
    })
}

pub fn markdown(r: &MemoryReport) -> String {
    let mut s = format!(
        "Peak RSS growth per request (VmHWM after - before, a fresh gateway per case; a request case \
         after one ~100 KB warm-up request on its route), `{}`:\n\n\
         | case | path | bytes read | status | RSS growth | growth / bytes | verdict (<= {:.1}x) |\n\
         | --- | --- | ---: | ---: | ---: | ---: | --- |\n",
        r.binary, r.target
    );
    for c in &r.cases {
        let _ = writeln!(
            s,
            "| {} | {} | {} | {} | {:.1} MiB | {:.2}x | {} |",
            c.case,
            c.path,
            c.bytes,
            c.status,
            c.growth_bytes as f64 / 1048576.0,
            c.ratio,
            if c.within { "met" } else { "**NOT met**" }
        );
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn documents_are_the_sizes_named_and_json() {
        for c in cases() {
            let doc = if c.measures_request {
                c.body.clone()
            } else {
                let at = c.answer.windows(4).position(|w| w == b"\r\n\r\n").unwrap() + 4;
                c.answer[at..].to_vec()
            };
            if !c.name.contains("eventstream") {
                serde_json::from_slice::<serde_json::Value>(&doc)
                    .unwrap_or_else(|e| panic!("{}: {e}", c.name));
            }
            let want = if c.name.contains("1.8mb") {
                1_800_000
            } else if c.name.contains("8mb") {
                8 * MB
            } else {
                2 * MB
            };
            let len = doc.len();
            assert!(
                len * 100 >= want * 95 && len * 100 <= want * 105,
                "{}: {len}",
                c.name
            );
        }
    }
}
