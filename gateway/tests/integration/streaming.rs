//! Streams: 1-byte fragments, client disconnects, concurrent streams, and upstream
//! answers shaped in ways the mock does not produce.

use std::time::Duration;

use crate::support::*;
use http::StatusCode;

const ROUTES: [&str; 3] = [CHAT, MESSAGES, RESPONSES];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_byte_fragments_arrive_intact_and_usage_is_counted() {
    let cfg = MockConfig {
        chunks: 9,
        write_fragment: Some(1),
        ..MockConfig::default()
    };
    let (input, output) = expected_usage(&cfg);
    let mock = MockUpstream::start(cfg).await.unwrap();
    let gw = TestGateway::start(&two_models(&mock.base_url())).await;
    for path in ROUTES {
        let model = model_for(path);
        let r = gw.send(post(path, body(path, model, true))).await;
        assert_eq!(r.status, StatusCode::OK);
        assert!(r.body_error.is_none());
        let d = direct(&mock, path, &body(path, &format!("up-{model}"), true)).await;
        // Split UTF-8 sequences and split events are passed on untouched.
        assert_eq!(r.body, d.body, "{path}");
        let text = r.text();
        assert!(text.contains("café") && text.contains("日本"), "{text}");
        assert!(sse_data(&r.body).len() > 3);
    }
    gw.wait_metric(&tokens_series("gpt", "input"), (2 * input) as f64)
        .await;
    gw.wait_metric(&tokens_series("gpt", "output"), (2 * output) as f64)
        .await;
    gw.wait_metric(&tokens_series("claude", "input"), input as f64)
        .await;
    gw.wait_metric(&tokens_series("claude", "output"), output as f64)
        .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn client_disconnect_mid_stream_cancels_the_upstream_request() {
    // The client leaves after the first event.
    let mock = slow_stream_mock().await;
    let relay = Relay::start(mock.addr()).await;
    let gw = TestGateway::start(&two_models(&relay.base_url())).await;
    for (i, path) in ROUTES.into_iter().enumerate() {
        let mut s = raw_request(gw.addr, path, &body(path, model_for(path), true)).await;
        let head = read_until(&mut s, b"\n\n").await;
        assert!(
            head.starts_with(b"HTTP/1.1 200"),
            "{:?}",
            String::from_utf8_lossy(&head)
        );
        let in_flight = metric(&gw.metrics().await, "gateway_in_flight_requests");
        assert_eq!(in_flight, Some(1.0));
        drop(s);
        // The gateway closes its upstream connection instead of reading the stream to its end.
        relay
            .wait_closed(i as u64 + 1, Duration::from_secs(8))
            .await;
        gw.wait_metric("gateway_in_flight_requests", 0.0).await;
        let line = gw
            .wait_log("with client_disconnected", |l| {
                l["route"] == path && l["error"] == "client_disconnected"
            })
            .await;
        assert_eq!(line["status"], 200, "{line}");
        assert_eq!(line["stream"], true, "{line}");
    }
    assert_eq!(relay.opened(), 3);
    // The gateway keeps serving.
    let r = gw.send(post(CHAT, body(CHAT, "gpt", false))).await;
    assert_eq!(r.status, StatusCode::OK);
    assert!(gw.stderr_lines().iter().all(|l| !l.contains("panicked")));
}

/// Sends a chat request through a relay to a mock that answers after 1.5 s, and hangs up
/// once the request is upstream. Returns once the gateway has dropped the upstream request.
async fn leave_before_the_response_head() -> (MockUpstream, Relay, TestGateway) {
    let mock = MockUpstream::start(MockConfig {
        first_byte_delay: Duration::from_millis(1500),
        ..MockConfig::default()
    })
    .await
    .unwrap();
    let relay = Relay::start(mock.addr()).await;
    let gw = TestGateway::start(&two_models(&relay.base_url())).await;
    let s = raw_request(gw.addr, CHAT, &body(CHAT, "gpt", false)).await;
    let deadline = std::time::Instant::now() + PATIENCE;
    while relay.opened() == 0 {
        assert!(std::time::Instant::now() < deadline);
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    drop(s);
    relay.wait_closed(1, PATIENCE).await;
    gw.wait_metric("gateway_in_flight_requests", 0.0).await;
    (mock, relay, gw)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn client_disconnect_while_waiting_for_the_upstream_cancels_it() {
    let (_mock, _relay, gw) = leave_before_the_response_head().await;
    let text = gw.metrics().await;
    assert_eq!(requests_total(&text, CHAT, "gpt", 200), 0.0, "{text}");
    let r = gw.send(post(CHAT, body(CHAT, "gpt", false))).await;
    assert_eq!(r.status, StatusCode::OK);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn client_disconnect_before_the_head_is_recorded_as_such() {
    let (_mock, _relay, gw) = leave_before_the_response_head().await;
    let text = gw.metrics().await;
    assert_eq!(
        requests_total(&text, CHAT, "gpt", 100),
        0.0,
        "bogus status 100:\n{text}"
    );
    let line = gw.wait_log("for the request", |l| l["route"] == CHAT).await;
    assert_ne!(line["status"], 0, "{line}");
    assert_eq!(line["error"], "client_disconnected", "{line}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_streams_are_all_intact() {
    let cfg = MockConfig {
        chunks: 10,
        chunk_delay: Duration::from_millis(10),
        ..MockConfig::default()
    };
    let (input, output) = expected_usage(&cfg);
    let mock = MockUpstream::start(cfg).await.unwrap();
    let gw = TestGateway::start(&two_models(&mock.base_url())).await;
    let mut tasks = Vec::new();
    for i in 0..24 {
        let path = ROUTES[i % 3];
        let addr = gw.addr;
        tasks.push(tokio::spawn(async move {
            (
                path,
                send(addr, post(path, body(path, model_for(path), true))).await,
            )
        }));
    }
    let mut expected = std::collections::HashMap::new();
    for path in ROUTES {
        let model = model_for(path);
        expected.insert(
            path,
            direct(&mock, path, &body(path, &format!("up-{model}"), true))
                .await
                .body,
        );
    }
    for t in tasks {
        let (path, r) = t.await.unwrap();
        assert_eq!(r.status, StatusCode::OK);
        assert_eq!(r.body, expected[path], "{path}");
    }
    gw.wait_metric(&tokens_series("gpt", "output"), (16 * output) as f64)
        .await;
    gw.wait_metric(&tokens_series("claude", "input"), (8 * input) as f64)
        .await;
    gw.wait_metric("gateway_in_flight_requests", 0.0).await;
}

// Issue 21, item 1: a chat stream that does not ask for usage (the OpenAI SDK's default)
// is asked for it by the gateway, so its tokens are counted, limited and logged; the
// client gets exactly the stream it asked for, without the usage chunk or `"usage":null`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn chat_stream_without_usage_is_counted_and_looks_as_asked() {
    let cfg = MockConfig::default();
    let (input, output) = expected_usage(&cfg);
    let mock = MockUpstream::start(cfg).await.unwrap();
    let gw = TestGateway::start(&two_models(&mock.base_url())).await;
    let plain = |model: &str| {
        format!(
            r#"{{"model":"{model}","messages":[{{"role":"user","content":"hi"}}],"stream":true}}"#
        )
    };
    let r = gw.send(post(CHAT, plain("gpt"))).await;
    assert_eq!(r.status, StatusCode::OK);
    let as_asked = direct(&mock, CHAT, &plain("up-gpt")).await;
    assert!(
        !as_asked.text().contains("\"usage\""),
        "{}",
        as_asked.text()
    );
    assert_eq!(r.text(), as_asked.text());
    assert_eq!(sse_data(&r.body).last().unwrap(), "[DONE]");
    let line = gw.wait_log("for the stream", |l| l["route"] == CHAT).await;
    assert!(line["error"].is_null(), "{line}");
    assert_eq!(line["input_tokens"], input, "{line}");
    assert_eq!(line["output_tokens"], output, "{line}");
    gw.wait_metric(&tokens_series("gpt", "output"), output as f64)
        .await;
    // The client's own stream_options members reach the upstream with include_usage set.
    let mixed = r#"{"model":"gpt","messages":[{"role":"user","content":"hi"}],"stream":true,"stream_options":{"include_usage":false}}"#;
    let r = gw.send(post(CHAT, mixed)).await;
    assert_eq!(r.text(), as_asked.text());
    gw.wait_metric(&tokens_series("gpt", "output"), (2 * output) as f64)
        .await;
}

/// An upstream that sends an SSE stream with a content-length instead of chunked encoding.
fn sse_with_content_length() -> Vec<u8> {
    let events = "data: {\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"hi\"},\"finish_reason\":null}],\"usage\":null}\n\n\
                  data: {\"object\":\"chat.completion.chunk\",\"choices\":[],\"usage\":{\"prompt_tokens\":5,\"completion_tokens\":3,\"total_tokens\":8}}\n\n\
                  data: [DONE]\n\n";
    format!(
        "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncontent-length: {}\r\n\r\n{events}",
        events.len()
    )
    .into_bytes()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sse_with_content_length_completes_cleanly() {
    let up = RawUpstream::start(vec![(Duration::ZERO, sse_with_content_length())], false).await;
    let gw = TestGateway::start(&model("gpt", &[("openai", &up.base_url())])).await;
    let r = gw.send(post(CHAT, body(CHAT, "gpt", true))).await;
    assert_eq!(r.status, StatusCode::OK);
    assert!(r.body_error.is_none());
    assert_eq!(sse_data(&r.body).last().unwrap(), "[DONE]");
    gw.wait_metric(&tokens_series("gpt", "output"), 3.0).await;
    let line = gw.wait_log("for the stream", |l| l["route"] == CHAT).await;
    assert!(
        line["error"].is_null(),
        "a complete stream logged as {line}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stalled_non_streaming_body_gets_504() {
    // The head and half of a JSON body, then silence.
    let head = b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 100\r\n\r\n{\"id\":\"x\",".to_vec();
    let up = RawUpstream::start(vec![(Duration::ZERO, head)], true).await;
    let config = format!(
        "[upstream]\nidle_timeout_ms = 300\n{}{}",
        model("gpt", &[("openai", &up.base_url())]),
        model("claude", &[("anthropic", &up.base_url())])
    );
    let gw = TestGateway::start(&config).await;
    let r = gw.send(post(CHAT, body(CHAT, "gpt", false))).await;
    assert_openai_error(&r, 504);
    let r = gw
        .send(post(MESSAGES, body(MESSAGES, "claude", false)))
        .await;
    assert_eq!(assert_anthropic_error(&r, 504), "timeout_error");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn broken_upstream_answers_get_502() {
    // Not HTTP at all.
    let garbage = RawUpstream::start(
        vec![(Duration::ZERO, b"SSH-2.0-OpenSSH\r\n\x00\xff".to_vec())],
        false,
    )
    .await;
    // A body shorter than its content-length.
    let short = RawUpstream::start(
        vec![(
            Duration::ZERO,
            b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 100\r\n\r\n{\"id\":".to_vec(),
        )],
        false,
    )
    .await;
    for up in [&garbage, &short] {
        let config = format!(
            "{}{}",
            model("gpt", &[("openai", &up.base_url())]),
            model("claude", &[("anthropic", &up.base_url())])
        );
        let gw = TestGateway::start(&config).await;
        let r = gw.send(post(CHAT, body(CHAT, "gpt", false))).await;
        assert_openai_error(&r, 502);
        let r = gw
            .send(post(MESSAGES, body(MESSAGES, "claude", false)))
            .await;
        assert_anthropic_error(&r, 502);
        assert!(up.requests() >= 2);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn crlf_events_comments_and_odd_splits_are_counted() {
    // Anthropic-style events with CRLF line ends, comments, a ping and an in-stream error
    // after the usage, sent chunked with a write split inside "日" and inside "usage".
    let events = "event: message_start\r\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"m\",\"usage\":{\"input_tokens\":11,\"output_tokens\":1}}}\r\n\r\n\
                  : a comment\r\n\r\n\
                  event: ping\r\ndata: {\"type\":\"ping\"}\r\n\r\n\
                  event: content_block_delta\r\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"日本\"}}\r\n\r\n\
                  event: message_delta\r\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\"},\"usage\":{\"output_tokens\":23}}\r\n\r\n\
                  event: error\r\ndata: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}\r\n\r\n";
    let bytes = events.as_bytes();
    let cut1 = events.find("日").unwrap() + 1;
    let cut2 = events.rfind("usage").unwrap() + 2;
    let chunk = |b: &[u8]| {
        let mut v = format!("{:x}\r\n", b.len()).into_bytes();
        v.extend_from_slice(b);
        v.extend_from_slice(b"\r\n");
        v
    };
    let ms = Duration::from_millis(20);
    let script = vec![
        (
            Duration::ZERO,
            b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\nrequest-id: req_raw1\r\n\r\n".to_vec(),
        ),
        (ms, chunk(&bytes[..cut1])),
        (ms, chunk(&bytes[cut1..cut2])),
        (ms, chunk(&bytes[cut2..])),
        (ms, b"0\r\n\r\n".to_vec()),
    ];
    let up = RawUpstream::start(script, false).await;
    let gw = TestGateway::start(&model("claude", &[("anthropic", &up.base_url())])).await;
    let r = gw
        .send(post(MESSAGES, body(MESSAGES, "claude", true)))
        .await;
    assert_eq!(r.status, StatusCode::OK);
    assert!(r.body_error.is_none());
    assert_eq!(r.body, bytes, "the stream was altered");
    assert_eq!(r.header("request-id"), Some("req_raw1"));
    gw.wait_metric(&tokens_series("claude", "input"), 11.0)
        .await;
    gw.wait_metric(&tokens_series("claude", "output"), 23.0)
        .await;
}
