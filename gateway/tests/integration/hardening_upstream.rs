//! Flaky and hostile upstreams (issue 13): billing headers, absurd usage, resets and
//! malformed heads, big buffered bodies, odd content types, gzip and key echoes. Each
//! upstream is a few lines of raw TCP on loopback.

use std::io::Write as _;
use std::time::Duration;

use crate::support::*;
use http::StatusCode;
use tokio::io::AsyncWriteExt;

/// An upstream answering every request with `bytes`, then closing.
pub(crate) async fn fixed(bytes: Vec<u8>) -> FnUpstream {
    let bytes = std::sync::Arc::new(bytes);
    FnUpstream::start(move |mut s, _| {
        let bytes = bytes.clone();
        async move {
            let _ = s.write_all(&bytes).await;
            let _ = s.shutdown().await;
        }
    })
    .await
}

fn gpt_on(up: &FnUpstream, extra: &str) -> String {
    model_with("gpt", extra, &[("openai", &up.base_url())])
}

// Item 2: headers that pick who pays stay with the client; upstream org/project headers stay
// with the upstream; the client's content type is not forwarded.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn billing_headers_cross_in_neither_direction() {
    let up = fixed(http_response(
        "200 OK",
        &[
            ("content-type", "application/json"),
            ("openai-organization", "org-upstream"),
            ("openai-project", "proj-upstream"),
            ("openai-processing-ms", "3"),
            ("x-request-id", "req_up_1"),
            ("x-ratelimit-limit-requests", "100"),
            ("set-cookie", "a=b"),
        ],
        chat_json(3, 4).as_bytes(),
    ))
    .await;
    let gw = TestGateway::start(&gpt_on(&up, "")).await;
    let mut req = post(CHAT, body(CHAT, "gpt", false))
        .header("openai-organization", "org-attacker")
        .header("openai-project", "proj-attacker")
        .header("openai-beta", "assistants=v2")
        .header("idempotency-key", "k1");
    req.headers[0].1 = b"text/plain; charset=latin1".to_vec();
    let r = gw.send(req).await;
    assert_eq!(r.status, StatusCode::OK);
    let head = up.heads().pop().unwrap();
    for name in [
        "openai-organization",
        "openai-project",
        "openai-beta",
        "idempotency-key",
        "text/plain",
    ] {
        assert!(!head.contains(name), "{name} reached the upstream:\n{head}");
    }
    assert!(
        head.contains("content-type: application/json\r\n"),
        "{head}"
    );
    for name in [
        "openai-organization",
        "openai-project",
        "openai-processing-ms",
        "set-cookie",
    ] {
        assert!(
            r.header(name).is_none(),
            "{name} came back: {:?}",
            r.headers
        );
    }
    assert_eq!(r.header("x-request-id"), Some("req_up_1"));
    assert_eq!(r.header("x-ratelimit-limit-requests"), Some("100"));
    assert_eq!(r.header("content-type"), Some("application/json"));
}

// Item 2: a model may allow more client headers (`forward_headers`), never credentials.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn forward_headers_allows_more_per_model() {
    let up = fixed(http_response(
        "200 OK",
        &[("content-type", "application/json")],
        chat_json(1, 1).as_bytes(),
    ))
    .await;
    let gw = TestGateway::start(&gpt_on(&up, "forward_headers = [\"OpenAI-Beta\"]")).await;
    let r = gw
        .send(
            post(CHAT, body(CHAT, "gpt", false))
                .header("openai-beta", "assistants=v2")
                .header("openai-organization", "org-x"),
        )
        .await;
    assert_eq!(r.status, StatusCode::OK);
    let head = up.heads().pop().unwrap();
    assert!(head.contains("openai-beta: assistants=v2"), "{head}");
    assert!(!head.contains("openai-organization"), "{head}");

    let path = scratch("fwd.toml");
    std::fs::write(&path, gpt_on(&up, "forward_headers = [\"authorization\"]")).unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_gateway"))
        .arg("--config")
        .arg(&path)
        .arg("--check-config")
        .env(UPSTREAM_KEY_ENV, UPSTREAM_KEY)
        .output()
        .unwrap();
    let _ = std::fs::remove_file(&path);
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("forward_headers"), "{stderr}");
}

// Item 5: a usage of 1.8e19 tokens on a rate-limited model must not panic the limiter: the
// next requests get a 429 with a sane Retry-After, not an empty reply.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn absurd_usage_does_not_break_the_rate_limiter() {
    let up = fixed(http_response(
        "200 OK",
        &[("content-type", "application/json")],
        chat_json(18_000_000_000_000_000_000, 1).as_bytes(),
    ))
    .await;
    let gw = TestGateway::start(&gpt_on(
        &up,
        // 10 tokens per minute: 1.8e19 tokens of debt are more seconds than a Duration holds.
        "rate_limit = { tokens_per_minute = 10 }",
    ))
    .await;
    let r = gw.send(post(CHAT, body(CHAT, "gpt", false))).await;
    assert_eq!(r.status, StatusCode::OK);
    for _ in 0..3 {
        let r = gw.send(post(CHAT, body(CHAT, "gpt", false))).await;
        assert_openai_error(&r, 429);
        // The debt is capped at an hour of refill.
        let secs: u64 = r.header("retry-after").unwrap().parse().unwrap();
        assert!((1..=3700).contains(&secs), "{secs}");
    }
    let stderr = gw.stderr_lines().join("\n");
    assert!(!stderr.contains("panicked"), "{stderr}");
}

// Item 5: u64::MAX input saturates the total (a wrap would let the next request through),
// and token counters never go down.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn token_arithmetic_saturates() {
    let limited = fixed(http_response(
        "200 OK",
        &[("content-type", "application/json")],
        chat_json(u64::MAX, 5).as_bytes(),
    ))
    .await;
    let half = fixed(http_response(
        "200 OK",
        &[("content-type", "application/json")],
        chat_json(1, 1u64 << 63).as_bytes(),
    ))
    .await;
    let config = format!(
        "{}{}",
        model_with(
            "gpt",
            "rate_limit = { tokens_per_minute = 1000 }",
            &[("openai", &limited.base_url())]
        ),
        model("big", &[("openai", &half.base_url())])
    );
    let gw = TestGateway::start(&config).await;
    assert_eq!(
        gw.send(post(CHAT, body(CHAT, "gpt", false))).await.status,
        StatusCode::OK
    );
    let r = gw.send(post(CHAT, body(CHAT, "gpt", false))).await;
    assert_openai_error(&r, 429);
    for _ in 0..2 {
        let r = gw.send(post(CHAT, body(CHAT, "big", false))).await;
        assert_eq!(r.status, StatusCode::OK);
    }
    let text = gw.wait_metric(&tokens_series("big", "input"), 2.0).await;
    let out = metric(&text, &tokens_series("big", "output")).unwrap();
    assert!(out >= 1.8e19, "gateway_tokens_total went down: {out}");
}

/// An SSE head, two events, then `end` (reset or close).
async fn dying_stream(reset: bool, chunked: bool) -> FnUpstream {
    FnUpstream::start(move |mut s, _| async move {
        let ev = b"data: {\"choices\":[{\"delta\":{\"content\":\"hi\"}}]}\n\n";
        let mut out: Vec<u8> = if chunked {
            b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n".to_vec()
        } else {
            b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\nconnection: close\r\n\r\n".to_vec()
        };
        for _ in 0..2 {
            if chunked {
                out.extend_from_slice(&chunk(ev));
            } else {
                out.extend_from_slice(ev);
            }
        }
        if !chunked {
            // Half an event: the connection ends mid-event.
            out.extend_from_slice(b"data: {\"choi");
        }
        let _ = s.write_all(&out).await;
        tokio::time::sleep(Duration::from_millis(100)).await;
        if reset {
            let _ = socket2::SockRef::from(&s).set_linger(Some(Duration::ZERO));
        }
        drop(s);
    })
    .await
}

// Item 7: an upstream that resets or dies mid-stream counts as an upstream error (502), not
// as a 200.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn upstream_dying_mid_stream_is_an_upstream_error() {
    for (reset, chunked) in [(true, true), (false, false)] {
        let up = dying_stream(reset, chunked).await;
        let gw = TestGateway::start(&gpt_on(&up, "")).await;
        let r = gw.send(post(CHAT, body(CHAT, "gpt", true))).await;
        assert_eq!(r.status, StatusCode::OK);
        let line = gw
            .wait_log("for the cut stream", |l| l["route"] == CHAT)
            .await;
        assert_eq!(line["status"], 502, "reset={reset}: {line}");
        assert_eq!(line["error"], "upstream_read_error", "{line}");
        let text = gw.wait_metric(&upstream_errors("gpt", "read"), 1.0).await;
        assert_eq!(requests_total(&text, CHAT, "gpt", 200), 0.0, "{text}");
        assert_eq!(requests_total(&text, CHAT, "gpt", 502), 1.0, "{text}");
    }
}

// Item 7: a 5xx that triggers failover is counted, and a malformed upstream head is a
// protocol error, not a connect error.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn failover_5xx_and_malformed_heads_are_counted_by_kind() {
    let bad = fixed(http_response(
        "503 Service Unavailable",
        &[("content-type", "application/json")],
        b"{}",
    ))
    .await;
    let garbage = fixed(b"HTTP/1.1 twohundred OK\r\n\r\n".to_vec()).await;
    let mock = MockUpstream::start(MockConfig::default()).await.unwrap();
    let config = format!(
        "{}{}",
        model(
            "gpt",
            &[("openai", &bad.base_url()), ("openai", &mock.base_url())]
        ),
        model("odd", &[("openai", &garbage.base_url())])
    );
    let gw = TestGateway::start(&config).await;
    assert_eq!(
        gw.send(post(CHAT, body(CHAT, "gpt", false))).await.status,
        StatusCode::OK
    );
    let r = gw.send(post(CHAT, body(CHAT, "odd", false))).await;
    assert_openai_error(&r, 502);
    let text = gw
        .wait_metric(&upstream_errors("gpt", "http_5xx"), 1.0)
        .await;
    assert_eq!(
        metric(&text, "gateway_upstream_failovers_total{model=\"gpt\"}"),
        Some(1.0)
    );
    assert_eq!(
        metric(&text, &upstream_errors("odd", "protocol")),
        Some(1.0),
        "{text}"
    );
    assert_eq!(
        metric(&text, &upstream_errors("odd", "connect")),
        Some(0.0),
        "{text}"
    );
}

// Item 7: a stream cut at the end of the grace period is labelled as such, not as a client
// disconnect.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stream_cut_by_the_grace_period_is_labelled_shutdown() {
    let mock = stalling_mock().await;
    let (mut gw, _stream) = gateway_with_stalled_stream(&mock, 300).await;
    gw.sigterm();
    assert!(gw.wait_exit(PATIENCE).await.success());
    let line = gw
        .wait_log("for the cut stream", |l| l["route"] == CHAT)
        .await;
    assert_eq!(line["error"], "shutdown_grace_exceeded", "{line}");
    assert_eq!(line["status"], 503, "{line}");
}

/// A JSON body of about `size` bytes with usage, written in two halves `gap` apart.
async fn big_json(size: usize, gap: Duration) -> FnUpstream {
    let pad = "p".repeat(size);
    let body = format!(
        r#"{{"id":"x","pad":"{pad}","usage":{{"prompt_tokens":1,"completion_tokens":1}}}}"#
    );
    let bytes = std::sync::Arc::new(http_response(
        "200 OK",
        &[("content-type", "application/json")],
        body.as_bytes(),
    ));
    FnUpstream::start(move |mut s, _| {
        let bytes = bytes.clone();
        async move {
            let half = bytes.len() / 2;
            let _ = s.write_all(&bytes[..half]).await;
            tokio::time::sleep(gap).await;
            let _ = s.write_all(&bytes[half..]).await;
        }
    })
    .await
}

// Item 8: concurrently buffered upstream bytes are bounded (`upstream.max_buffered_bytes`):
// over the bound, requests get 503 in their envelope, and the budget comes back.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn buffered_upstream_bytes_are_bounded() {
    let up = big_json(700 * 1024, Duration::from_millis(800)).await;
    let config = format!(
        "[upstream]\nmax_buffered_bytes = 1048576\nmax_response_body_bytes = 1048576\n{}",
        gpt_on(&up, "")
    );
    let gw = TestGateway::start(&config).await;
    let addr = gw.addr;
    let tasks: Vec<_> = (0..3)
        .map(|_| {
            tokio::spawn(async move { send(addr, post(CHAT, body(CHAT, "gpt", false))).await })
        })
        .collect();
    let mut ok = 0;
    let mut refused = 0;
    for t in tasks {
        let r = t.await.unwrap();
        match r.status.as_u16() {
            200 => ok += 1,
            503 => {
                assert_openai_error(&r, 503);
                refused += 1;
            }
            s => panic!("unexpected {s}"),
        }
    }
    assert!(ok >= 1 && refused >= 1, "ok {ok}, refused {refused}");
    // Logged as what it is (issue 49 item 8: each logged reason has a test that fails when
    // it is wrong).
    let line = gw
        .wait_log("refused for the buffer budget", |l| l["status"] == 503)
        .await;
    assert_eq!(line["error"], "overloaded", "{line}");
    // The budget is released: one at a time always fits.
    for _ in 0..3 {
        let r = gw.send(post(CHAT, body(CHAT, "gpt", false))).await;
        assert_eq!(r.status, StatusCode::OK);
    }
    // One body over the per-body limit is a 502.
    let config = format!(
        "[upstream]\nmax_response_body_bytes = 100000\n{}",
        gpt_on(&up, "")
    );
    let gw = TestGateway::start(&config).await;
    let r = gw.send(post(CHAT, body(CHAT, "gpt", false))).await;
    assert_openai_error(&r, 502);
}

// Item 9: `Text/Event-Stream` is still SSE: streamed as it arrives, usage counted.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sse_content_type_is_case_insensitive() {
    let up = FnUpstream::start(|mut s, _| async move {
        let head = b"HTTP/1.1 200 OK\r\nContent-Type: Text/Event-Stream; charset=utf-8\r\ntransfer-encoding: chunked\r\n\r\n";
        let _ = s.write_all(head).await;
        for ev in [
            "data: {\"choices\":[{\"delta\":{\"content\":\"hi\"}}]}\n\n".to_owned(),
            "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":7,\"completion_tokens\":2}}\n\n"
                .to_owned(),
            "data: [DONE]\n\n".to_owned(),
        ] {
            let _ = s.write_all(&chunk(ev.as_bytes())).await;
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        let _ = s.write_all(b"0\r\n\r\n").await;
    })
    .await;
    let gw = TestGateway::start(&gpt_on(&up, "")).await;
    let r = gw.send(post(CHAT, body(CHAT, "gpt", true))).await;
    assert_eq!(r.status, StatusCode::OK);
    assert!(
        r.frames >= 2,
        "buffered instead of streamed: {} frame(s)",
        r.frames
    );
    let line = gw.wait_log("for the stream", |l| l["route"] == CHAT).await;
    assert_eq!(line["input_tokens"], 7, "{line}");
    assert_eq!(line["stream"], true, "{line}");
}

fn gzip(data: &[u8]) -> Vec<u8> {
    let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    e.write_all(data).unwrap();
    e.finish().unwrap()
}

// Item 9: an upstream that gzips although never asked keeps its usage counted, buffered or
// streamed, and the client still gets bytes it can decode.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn gzip_from_the_upstream_keeps_the_usage() {
    let json = chat_json(11, 3);
    let plain = fixed(http_response(
        "200 OK",
        &[
            ("content-type", "application/json"),
            ("content-encoding", "gzip"),
        ],
        &gzip(json.as_bytes()),
    ))
    .await;
    let stream = FnUpstream::start(|mut s, _| async move {
        let events = "data: {\"choices\":[{\"delta\":{\"content\":\"hi\"}}]}\n\n\
                      data: {\"choices\":[],\"usage\":{\"prompt_tokens\":13,\"completion_tokens\":4}}\n\n\
                      data: [DONE]\n\n";
        let z = gzip(events.as_bytes());
        let head = b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncontent-encoding: gzip\r\ntransfer-encoding: chunked\r\n\r\n";
        let _ = s.write_all(head).await;
        for part in z.chunks(7) {
            let _ = s.write_all(&chunk(part)).await;
        }
        let _ = s.write_all(b"0\r\n\r\n").await;
    })
    .await;
    let config = format!(
        "{}{}",
        model("gpt", &[("openai", &plain.base_url())]),
        model("gpts", &[("openai", &stream.base_url())])
    );
    let gw = TestGateway::start(&config).await;
    let r = gw.send(post(CHAT, body(CHAT, "gpt", false))).await;
    assert_eq!(r.status, StatusCode::OK);
    let mut got = Vec::new();
    if r.header("content-encoding") == Some("gzip") {
        std::io::Read::read_to_end(&mut flate2::read::GzDecoder::new(&r.body[..]), &mut got)
            .unwrap();
    } else {
        got = r.body.to_vec();
    }
    assert_eq!(got, json.as_bytes());
    let r = gw.send(post(CHAT, body(CHAT, "gpts", true))).await;
    assert_eq!(r.status, StatusCode::OK);
    let text = gw.wait_metric(&tokens_series("gpt", "input"), 11.0).await;
    assert_eq!(
        metric(&text, &tokens_series("gpts", "input")),
        Some(13.0),
        "{text}"
    );
    assert_eq!(
        metric(&text, &tokens_series("gpts", "output")),
        Some(4.0),
        "{text}"
    );
}

// Item 9: an upstream error body that echoes the upstream key does not reach the client.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn upstream_key_echoed_in_an_error_is_redacted() {
    let body_text = format!(
        r#"{{"error":{{"message":"Incorrect API key provided: {UPSTREAM_KEY}. Bearer {UPSTREAM_KEY}","type":"invalid_request_error"}}}}"#
    );
    let up = fixed(http_response(
        "401 Unauthorized",
        &[("content-type", "application/json")],
        body_text.as_bytes(),
    ))
    .await;
    let gw = TestGateway::start(&gpt_on(&up, "")).await;
    let r = gw.send(post(CHAT, body(CHAT, "gpt", false))).await;
    assert_eq!(r.status, StatusCode::UNAUTHORIZED);
    let text = String::from_utf8_lossy(&r.body).to_string();
    assert!(!text.contains(UPSTREAM_KEY), "{text}");
    assert!(!text.contains("upstream-secret"), "{text}");
    assert!(r.json()["error"]["message"].is_string(), "{text}");
}

// Issue 21, item 7: a buffered answer trickled a byte at a time beats the idle timeout
// between frames, but not `upstream.response_timeout_ms`: 504 in the route's envelope.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn trickled_buffered_answer_meets_the_total_deadline() {
    let up = FnUpstream::start(|mut s, _| async move {
        let _ = s
            .write_all(b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 100000\r\n\r\n")
            .await;
        // Far longer than the deadline below, one byte per 100 ms: never idle for 1 s.
        for _ in 0..600 {
            if s.write_all(b" ").await.is_err() {
                return;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    })
    .await;
    let config = format!(
        "[upstream]\nidle_timeout_ms = 1000\nresponse_timeout_ms = 1500\n{}",
        gpt_on(&up, "")
    );
    let gw = TestGateway::start(&config).await;
    let started = std::time::Instant::now();
    let r = gw.send(post(CHAT, body(CHAT, "gpt", false))).await;
    let took = started.elapsed();
    assert_openai_error(&r, 504);
    assert!(
        String::from_utf8_lossy(&r.body).contains("response_timeout_ms"),
        "{:?}",
        r.body
    );
    assert!(took >= Duration::from_millis(1500), "{took:?}");
    let line = gw.wait_log("the 504", |l| l["status"] == 504).await;
    assert_eq!(line["error"], "gateway_timeout", "{line}");
}

// Issue 21, item 8: hyper skips 100 and 103; a 101 (or any other 1xx) as the final answer
// is a broken upstream: 502 in the route's envelope, never relayed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn informational_final_answer_is_a_502() {
    let up = fixed(
        b"HTTP/1.1 101 Switching Protocols\r\nconnection: upgrade\r\nupgrade: websocket\r\n\r\n"
            .to_vec(),
    )
    .await;
    let gw = TestGateway::start(&format!(
        "{}\n{}",
        gpt_on(&up, ""),
        model("claude", &[("anthropic", &up.base_url())])
    ))
    .await;
    for (path, model) in [(CHAT, "gpt"), (MESSAGES, "claude")] {
        let r = gw.send(post(path, body(path, model, false))).await;
        assert_error(path, &r, 502);
        assert!(
            String::from_utf8_lossy(&r.body).contains("1xx"),
            "{path}: {:?}",
            r.body
        );
    }
    gw.wait_logs("both 502s", 2, |l| l["status"] == 502).await;
    let logged = gw.access_log();
    assert!(logged.iter().all(|l| l["status"] != 101), "{logged:?}");
    gw.wait_metric(&upstream_errors("gpt", "protocol"), 1.0)
        .await;
    gw.wait_metric(&upstream_errors("claude", "protocol"), 1.0)
        .await;
}

/// A chunked response head, then each of `frames` as its own chunk, a pause apart.
async fn chunked(status: &str, headers: &str, frames: Vec<Vec<u8>>) -> FnUpstream {
    let head = format!("HTTP/1.1 {status}\r\n{headers}transfer-encoding: chunked\r\n\r\n");
    let frames = std::sync::Arc::new((head, frames));
    FnUpstream::start(move |mut s, _| {
        let frames = frames.clone();
        async move {
            let _ = s.write_all(frames.0.as_bytes()).await;
            for f in &frames.1 {
                let _ = s.write_all(format!("{:x}\r\n", f.len()).as_bytes()).await;
                let _ = s.write_all(f).await;
                let _ = s.write_all(b"\r\n").await;
                let _ = s.flush().await;
                tokio::time::sleep(Duration::from_millis(30)).await;
            }
            let _ = s.write_all(b"0\r\n\r\n").await;
        }
    })
    .await
}

// Issue 21, item 3: the upstream key is redacted from every body that can carry it: an
// error typed `text/event-stream`, a gzipped error (sent decoded), an SSE error event in a
// 200 stream even when frames split the key; a gzipped 200 stream carrying it is cut.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn upstream_key_is_redacted_from_every_body() {
    let error = format!(r#"{{"error":{{"message":"bad key {UPSTREAM_KEY}"}}}}"#);
    let sse_error = fixed(http_response(
        "401 Unauthorized",
        &[("content-type", "text/event-stream")],
        format!("event: error\ndata: {error}\n\n").as_bytes(),
    ))
    .await;
    let gz_error = fixed(http_response(
        "401 Unauthorized",
        &[
            ("content-type", "application/json"),
            ("content-encoding", "gzip"),
        ],
        &gzip(error.as_bytes()),
    ))
    .await;
    let event = format!("event: error\ndata: {error}\n\n");
    let (a, b) = event.split_at(event.find(UPSTREAM_KEY).unwrap() + 5);
    let in_stream = chunked(
        "200 OK",
        "content-type: text/event-stream\r\n",
        vec![
            b"data: {\"choices\":[{\"delta\":{\"content\":\"hi\"}}]}\n\n".to_vec(),
            a.as_bytes().to_vec(),
            b.as_bytes().to_vec(),
        ],
    )
    .await;
    let gz_stream = chunked(
        "200 OK",
        "content-type: text/event-stream\r\ncontent-encoding: gzip\r\n",
        vec![gzip(event.as_bytes())],
    )
    .await;
    let config = [
        ("sse", &sse_error),
        ("gz", &gz_error),
        ("stream", &in_stream),
        ("gzstream", &gz_stream),
    ]
    .iter()
    .map(|(name, up)| model(name, &[("openai", &up.base_url())]))
    .collect::<String>();
    let gw = TestGateway::start(&config).await;
    for (model, stream) in [("sse", false), ("gz", false), ("stream", true)] {
        let r = gw.send(post(CHAT, body(CHAT, model, stream))).await;
        let text = String::from_utf8_lossy(&r.body).to_string();
        assert!(!text.contains("upstream-secret"), "{model}: {text}");
        assert!(text.contains("bad key [redacted]"), "{model}: {text}");
        if model == "gz" {
            assert_eq!(r.status, StatusCode::UNAUTHORIZED);
            assert!(r.header("content-encoding").is_none(), "{:?}", r.headers);
            assert!(r.json()["error"]["message"].is_string(), "{text}");
        }
    }
    // Compressed, the key cannot be redacted: the stream is cut before the frame with it.
    // (Cut before its first byte, the answer may lose its head too: hyper closes.)
    if let Ok(r) = try_send(gw.addr, post(CHAT, body(CHAT, "gzstream", true))).await {
        assert!(r.body_error.is_some(), "{:?}", r.body);
        assert!(r.body.is_empty(), "{:?}", r.body);
    }
    let line = gw
        .wait_log("the cut stream", |l| l["model"] == "gzstream")
        .await;
    assert_eq!(line["error"], "upstream_key_in_stream", "{line}");
}

// Issue 21, item 4: a gzip bomb in a stream (64 KiB that inflate to 64 MiB, in one frame)
// is decoded a slice at a time: the gateway's memory does not grow by the inflated size.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn gzip_bomb_in_a_stream_is_decoded_in_bounded_pieces() {
    let mut bomb = b"data: {\"choices\":[{\"delta\":{\"content\":\"".to_vec();
    bomb.resize(64 << 20, b'a');
    let z = gzip(&bomb);
    drop(bomb);
    assert!(z.len() < 1 << 20, "{}", z.len());
    let mut response = format!(
        "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncontent-encoding: gzip\r\ncontent-length: {}\r\n\r\n",
        z.len()
    )
    .into_bytes();
    response.extend_from_slice(&z);
    let up = fixed(response).await;
    let gw = TestGateway::start(&gpt_on(&up, "")).await;
    let before = peak_rss_kib(gw.pid());
    let r = gw.send(post(CHAT, body(CHAT, "gpt", true))).await;
    assert_eq!(r.status, StatusCode::OK);
    assert_eq!(r.body.len(), z.len(), "the compressed bytes pass through");
    gw.wait_log("the stream", |l| l["route"] == CHAT).await;
    let grew = peak_rss_kib(gw.pid()).saturating_sub(before);
    assert!(grew < 32 << 10, "peak RSS grew by {grew} KiB");
}

// Issue 21, item 6: one upstream chat chunk naming thousands of tool calls is neither
// quadratic nor copied out whole: a translated answer starts at most 1,024 calls, then
// ends with an error event in the client's dialect. (A chunk of 160,000 calls, 2.6 MB, is
// refused whole by the node budget: `a_chunk_over_the_node_budget_ends_the_stream`.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_chunk_of_thousands_of_tool_calls_ends_the_translated_stream() {
    let chunk = many_call_chunk(4_000);
    assert!(chunk.len() > 50_000, "{}", chunk.len());
    let (gw, text) = messages_stream_of(chunk).await;
    assert_eq!(
        text.matches("\"type\":\"tool_use\"").count(),
        1024,
        "{text:.300}"
    );
    assert!(text.contains("event: error"), "{text:.300}");
    assert!(text.contains("more than 1024 tool calls"), "{text:.300}");
    let line = gw.wait_log(MESSAGES, |l| l["route"] == MESSAGES).await;
    assert_eq!(line["status"], 200, "{line}");
    assert_eq!(line["error"], "too_many_tool_calls", "{line}");
}

/// What a Messages client streaming from an OpenAI target gets when the upstream sends
/// `chunk`, then `[DONE]`: a 200 of under a megabyte (and the gateway, for its log).
async fn messages_stream_of(chunk: String) -> (TestGateway, String) {
    let up = chunked(
        "200 OK",
        "content-type: text/event-stream\r\n",
        vec![chunk.into_bytes(), b"data: [DONE]\n\n".to_vec()],
    )
    .await;
    let gw = TestGateway::start(&model("claude", &[("openai", &up.base_url())])).await;
    let r = gw
        .send(post(MESSAGES, body(MESSAGES, "claude", true)))
        .await;
    assert_eq!(r.status, StatusCode::OK);
    assert!(r.body.len() < 1 << 20, "{} bytes", r.body.len());
    (gw, r.text())
}

/// One chat chunk naming `n` tool calls (each `{"index":i}`).
fn many_call_chunk(n: usize) -> String {
    let calls: Vec<String> = (0..n).map(|i| format!(r#"{{"index":{i}}}"#)).collect();
    format!(
        "data: {{\"id\":\"x\",\"model\":\"m\",\"choices\":[{{\"index\":0,\"delta\":{{\"tool_calls\":[{}]}}}}]}}\n\n",
        calls.join(",")
    )
}

// Issue 49: the 160,000-call chunk (2.6 MB) is over its node budget: refused before it is
// read (no call started), the stream ended with an error event that names the upstream.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_chunk_over_the_node_budget_ends_the_stream() {
    let chunk = many_call_chunk(160_000);
    assert!(chunk.len() > 2_000_000, "{}", chunk.len());
    let (gw, text) = messages_stream_of(chunk).await;
    assert_eq!(
        text.matches("\"type\":\"tool_use\"").count(),
        0,
        "{text:.300}"
    );
    assert!(text.contains("event: error"), "{text:.300}");
    assert!(
        text.contains("OpenAI chat completions upstream's event is refused unread"),
        "{text:.300}"
    );
    let line = gw.wait_log(MESSAGES, |l| l["route"] == MESSAGES).await;
    assert_eq!(line["status"], 502, "{line}");
    assert_eq!(line["error"], "upstream_event_too_large", "{line}");
}

// Issue 21, item 5: a translated Responses stream keeps its answer for the final
// `response.completed`, at most 8 MiB of it: an upstream streaming 24 MiB of text gets the
// client an error event at the bound, and the gateway's memory stays bounded.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn translated_responses_stream_keeps_a_bounded_answer() {
    let text = "a".repeat(512 << 10);
    let event = format!(
        "data: {{\"id\":\"x\",\"model\":\"m\",\"choices\":[{{\"index\":0,\"delta\":{{\"content\":\"{text}\"}}}}]}}\n\n"
    );
    let up = chunked(
        "200 OK",
        "content-type: text/event-stream\r\n",
        vec![event.into_bytes(); 48],
    )
    .await;
    // A chat server: Responses clients get translated.
    let gw = TestGateway::start(&model("local", &[("openai-compatible", &up.base_url())])).await;
    let before = peak_rss_kib(gw.pid());
    let r = gw
        .send(post(RESPONSES, body(RESPONSES, "local", true)))
        .await;
    assert_eq!(r.status, StatusCode::OK);
    let body = r.text();
    let deltas = body.matches("event: response.output_text.delta").count();
    // 16 deltas are 8 MiB: the 17th is past the bound.
    assert_eq!(
        deltas,
        17,
        "{deltas} deltas: {}",
        &body[..body.len().min(600)]
    );
    assert!(
        body.contains("event: error"),
        "{}",
        &body[body.len() - 300..]
    );
    assert!(
        body.contains("8 MiB of output"),
        "{}",
        &body[body.len() - 300..]
    );
    assert!(!body.contains("response.completed"));
    let grew = peak_rss_kib(gw.pid()).saturating_sub(before);
    assert!(grew < 96 << 10, "peak RSS grew by {grew} KiB");
    let line = gw.wait_log(RESPONSES, |l| l["route"] == RESPONSES).await;
    assert_eq!(line["status"], 200, "{line}");
    assert_eq!(line["error"], "translated_answer_too_long", "{line}");
}

/// A stream that the upstream ends with an error event, passed through or translated: the
/// client gets the error in its own dialect, and the access log says why the 200 answer
/// failed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stream_ended_by_an_upstream_error_is_logged_as_one() {
    let up = chunked(
        "200 OK",
        "content-type: text/event-stream\r\n",
        vec![
            b"event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"m\",\"model\":\"c\",\"usage\":{\"input_tokens\":3}}}\n\n".to_vec(),
            b"event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}\n\n".to_vec(),
        ],
    )
    .await;
    let gw = TestGateway::start(&model("claude", &[("anthropic", &up.base_url())])).await;
    for path in [MESSAGES, CHAT] {
        let r = gw.send(post(path, body(path, "claude", true))).await;
        assert_eq!(r.status, StatusCode::OK);
        let text = String::from_utf8_lossy(&r.body);
        assert!(text.contains("Overloaded"), "{path}: {text}");
        let line = gw.wait_log(path, |l| l["route"] == path).await;
        assert_eq!(line["status"], 200, "{line}");
        assert_eq!(line["error"], "upstream_stream_error", "{line}");
    }
}

// Issue 49 item 5: an upstream's Retry-After reaches the client only when it is one
// (delta-seconds or an HTTP-date), clamped to an hour; anything else is dropped. Passthrough
// (chat to openai) and translated (messages to openai) alike.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn retry_after_is_passed_only_when_valid_and_clamped_to_an_hour() {
    for (sent, want) in [
        ("30", Some("30")),
        ("99999999999999999999999", Some("3600")),
        ("Fri, 31 Dec 9999 23:59:59 GMT", Some("3600")),
        ("Thu, 01 Jan 1970 00:00:00 GMT", Some("0")),
        ("-5", None),
        ("1e300", None),
        ("try again later", None),
    ] {
        let up = fixed(http_response(
            "429 Too Many Requests",
            &[("content-type", "application/json"), ("retry-after", sent)],
            br#"{"error":{"message":"slow down","type":"rate_limit_error","code":"rate_limit"}}"#,
        ))
        .await;
        let gw = TestGateway::start(&gpt_on(&up, "")).await;
        for route in [CHAT, MESSAGES] {
            let r = gw.send(post(route, body(route, "gpt", false))).await;
            assert_eq!(r.status, StatusCode::TOO_MANY_REQUESTS, "{}", r.text());
            assert_eq!(r.header("retry-after"), want, "{route} {sent:?}");
        }
    }
}

// Issue 49 item 5: credential names in the client's query are recognised percent-encoded
// too (`k%65y` is `key`): none reaches a passthrough upstream; other parameters do.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn percent_encoded_credential_names_stay_behind() {
    let up = fixed(http_response(
        "200 OK",
        &[("content-type", "application/json")],
        chat_json(3, 1).as_bytes(),
    ))
    .await;
    let anth = fixed(http_response(
        "200 OK",
        &[("content-type", "application/json")],
        br#"{"id":"msg_1","type":"message","role":"assistant","model":"c","content":[{"type":"text","text":"hi"}],"stop_reason":"end_turn","stop_sequence":null,"usage":{"input_tokens":3,"output_tokens":1}}"#,
    ))
    .await;
    let cfg = format!(
        "{}{}",
        gpt_on(&up, ""),
        model_with("claude", "", &[("anthropic", &anth.base_url())])
    );
    let gw = TestGateway::start(&cfg).await;
    let q = "?k%65y=secret-one&access%5Ftoken=secret-two&api%5Fkey=secret-three&api%2dkey=secret-four&%6B%65%79=secret-five&beta=true";
    for (route, model, upstream) in [(CHAT, "gpt", &up), (MESSAGES, "claude", &anth)] {
        let r = gw
            .send(post(&format!("{route}{q}"), body(route, model, false)))
            .await;
        assert_eq!(r.status, StatusCode::OK, "{}", r.text());
        let head = upstream.heads().last().cloned().unwrap();
        let line = head.lines().next().unwrap();
        assert!(line.contains("beta=true"), "{line}");
        assert!(!line.contains("secret"), "{route}: {line}");
    }
}
