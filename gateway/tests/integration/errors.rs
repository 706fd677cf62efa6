//! Every gateway-made error status, on every route, in that route's envelope: 400, 404,
//! 413, 502, 504 (first byte) and a stream cut by the idle timeout.

use std::time::Duration;

use crate::support::*;
use http::{Method, StatusCode};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

const ROUTES: [&str; 3] = [CHAT, MESSAGES, RESPONSES];

async fn gateway_on(mock: &MockUpstream, extra: &str) -> TestGateway {
    TestGateway::start(&format!("{extra}\n{}", two_models(&mock.base_url()))).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_requests_get_400() {
    let mock = MockUpstream::start(MockConfig::default()).await.unwrap();
    let gw = gateway_on(&mock, "").await;
    for path in ROUTES {
        let model = model_for(path);
        let bodies = [
            "".to_owned(),
            "{".to_owned(),
            "not json".to_owned(),
            "[1,2]".to_owned(),
            r#"{"messages":[]}"#.to_owned(),
            format!(r#"{{"model":{{"name":"{model}"}}}}"#),
            r#"{"model":5}"#.to_owned(),
            format!(r#"{{"model":"{model}","stream":"yes"}}"#),
            format!(r#"{{"model":"{model}""#),
        ];
        for b in bodies {
            let r = gw.send(post(path, b.clone())).await;
            assert_error(path, &r, 400);
            if path == MESSAGES {
                assert_eq!(
                    assert_anthropic_error(&r, 400),
                    "invalid_request_error",
                    "{b}"
                );
            } else {
                assert_eq!(r.json()["error"]["type"], "invalid_request_error", "{b}");
            }
        }
        // Wrong method on an API route: 405 with `Allow` (hardening_client covers more).
        let mut req = post(path, body(path, model, false));
        req.method = Method::GET;
        let r = gw.send(req).await;
        assert_error(path, &r, 405);
        assert_eq!(r.header("allow"), Some("POST"));
    }
    assert_eq!(mock.request_count(), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unknown_model_and_path_get_404() {
    let mock = MockUpstream::start(MockConfig::default()).await.unwrap();
    let gw = gateway_on(&mock, "").await;
    for path in ROUTES {
        for stream in [false, true] {
            let r = gw
                .send(post(path, body(path, "no-such-model", stream)))
                .await;
            if path == MESSAGES {
                assert_eq!(assert_anthropic_error(&r, 404), "not_found_error");
            } else {
                let v = assert_openai_error(&r, 404);
                assert_eq!(v["error"]["code"], "model_not_found");
            }
            assert!(r.text().contains("no-such-model"));
        }
    }
    for p in ["/v1/chat", "/v1/chat/completions/x", "/v2/messages", "/v1"] {
        let r = gw.send(post(p, "{}")).await;
        assert_openai_error(&r, 404);
    }
    // `/` is a probe (GET or HEAD, like /healthz): POST is the wrong method, not a wrong path.
    let r = gw.send(post("/", "{}")).await;
    assert_openai_error(&r, 405);
    assert_eq!(r.header("allow"), Some("GET, HEAD"));
    assert_eq!(mock.request_count(), 0);
    let text = gw.metrics().await;
    assert_eq!(requests_total(&text, CHAT, "", 404), 2.0, "{text}");
    assert_eq!(requests_total(&text, "other", "", 404), 4.0, "{text}");
}

/// Before translation existed these got `400 ... its provider speaks another API`; now the
/// request is translated into the provider's dialect and the answer back into the client's
/// (the translation itself is tested in `translate_*.rs`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dialect_the_provider_does_not_speak_is_translated() {
    let mock = MockUpstream::start(MockConfig {
        record: true,
        ..MockConfig::default()
    })
    .await
    .unwrap();
    let gw = gateway_on(&mock, "").await;
    let cases = [
        (CHAT, "claude", MESSAGES),
        (RESPONSES, "claude", MESSAGES),
        (MESSAGES, "gpt", CHAT),
    ];
    for (path, model, upstream_path) in cases {
        let r = gw.send(post(path, body(path, model, false))).await;
        assert_eq!(r.status, StatusCode::OK, "{path} {model}: {}", r.text());
        let v = r.json();
        match path {
            CHAT => assert_eq!(v["object"], "chat.completion"),
            RESPONSES => assert_eq!(v["object"], "response"),
            _ => assert_eq!(v["type"], "message"),
        }
        let last = mock.recorded().pop().unwrap();
        assert_eq!(last.path, upstream_path);
    }
    assert_eq!(mock.request_count(), 3);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn body_over_the_limit_gets_413() {
    let mock = MockUpstream::start(MockConfig::default()).await.unwrap();
    let gw = gateway_on(&mock, "[server]\nmax_body_bytes = 1024\n").await;
    for path in ROUTES {
        let model = model_for(path);
        let pad = "x".repeat(2000);
        let big = format!(r#"{{"model":"{model}","max_tokens":5,"input":"{pad}","messages":[]}}"#);
        let r = gw.send(post(path, big)).await;
        if path == MESSAGES {
            assert_eq!(assert_anthropic_error(&r, 413), "request_too_large");
        } else {
            assert_openai_error(&r, 413);
        }
        // Just under the limit passes.
        let b = body(path, model, false);
        assert!(b.len() < 1024);
        assert_eq!(gw.send(post(path, b)).await.status, StatusCode::OK);
    }
    // A chunked body (no content-length) over the limit: 413 as well.
    let mut s = tokio::net::TcpStream::connect(gw.addr).await.unwrap();
    let chunk = "y".repeat(700);
    let req = format!(
        "POST /v1/chat/completions HTTP/1.1\r\nhost: gw\r\ntransfer-encoding: chunked\r\ncontent-type: application/json\r\n\r\n{:x}\r\n{{\"model\":\"gpt\",\"x\":\"{chunk}\r\n{:x}\r\n{chunk}\"}}\r\n0\r\n\r\n",
        chunk.len() + 20,
        chunk.len() + 2
    );
    s.write_all(req.as_bytes()).await.unwrap();
    let mut buf = vec![0u8; 4096];
    let n = tokio::time::timeout(PATIENCE, s.read(&mut buf))
        .await
        .unwrap()
        .unwrap();
    let head = String::from_utf8_lossy(&buf[..n]);
    assert!(head.starts_with("HTTP/1.1 413"), "{head}");
    assert_eq!(mock.request_count(), 3);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unreachable_upstream_gets_502_after_every_target() {
    let (closed_a, closed_b) = (ClosedPort::new(), ClosedPort::new());
    let (a, b) = (closed_a.url(), closed_b.url());
    let config = format!(
        "{}{}",
        model("gpt", &[("openai", a), ("openai", b)]),
        model("claude", &[("anthropic", a), ("anthropic", b)])
    );
    let gw = TestGateway::start(&config).await;
    for path in ROUTES {
        for stream in [false, true] {
            let r = gw
                .send(post(path, body(path, model_for(path), stream)))
                .await;
            if path == MESSAGES {
                assert_eq!(assert_anthropic_error(&r, 502), "api_error");
            } else {
                let v = assert_openai_error(&r, 502);
                assert_eq!(v["error"]["type"], "server_error");
            }
        }
    }
    let text = gw.metrics().await;
    assert_eq!(
        metric(
            &text,
            "gateway_upstream_errors_total{model=\"gpt\",kind=\"connect\"}"
        ),
        Some(8.0),
        "{text}"
    );
    assert_eq!(requests_total(&text, MESSAGES, "claude", 502), 2.0);
    let line = gw
        .wait_log("with bad_gateway", |l| l["error"] == "bad_gateway")
        .await;
    assert_eq!(line["status"], 502);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn slow_first_byte_gets_504() {
    let mock = MockUpstream::start(MockConfig {
        first_byte_delay: Duration::from_secs(3),
        ..MockConfig::default()
    })
    .await
    .unwrap();
    let gw = gateway_on(&mock, "[upstream]\nfirst_byte_timeout_ms = 200\n").await;
    let mut tasks = Vec::new();
    for path in ROUTES {
        for stream in [false, true] {
            let addr = gw.addr;
            tasks.push(tokio::spawn(async move {
                let r = send(addr, post(path, body(path, model_for(path), stream))).await;
                (path, r)
            }));
        }
    }
    for t in tasks {
        let (path, r) = t.await.unwrap();
        if path == MESSAGES {
            assert_eq!(assert_anthropic_error(&r, 504), "timeout_error");
        } else {
            let v = assert_openai_error(&r, 504);
            assert_eq!(v["error"]["code"], "timeout");
        }
    }
    let text = gw.metrics().await;
    assert_eq!(
        metric(
            &text,
            "gateway_upstream_errors_total{model=\"gpt\",kind=\"timeout\"}"
        ),
        Some(4.0),
        "{text}"
    );
    assert_eq!(requests_total(&text, RESPONSES, "gpt", 504), 2.0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn slow_first_byte_fails_over_to_the_next_target() {
    let slow = MockUpstream::start(MockConfig {
        first_byte_delay: Duration::from_secs(3),
        ..MockConfig::default()
    })
    .await
    .unwrap();
    let good = MockUpstream::start(MockConfig::default()).await.unwrap();
    let config = format!(
        "[upstream]\nfirst_byte_timeout_ms = 200\n{}",
        model(
            "gpt",
            &[("openai", &slow.base_url()), ("openai", &good.base_url())]
        )
    );
    let gw = TestGateway::start(&config).await;
    let r = gw.send(post(CHAT, body(CHAT, "gpt", false))).await;
    assert_eq!(r.status, StatusCode::OK);
    assert_eq!(good.request_count(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stalled_stream_is_cut_by_the_idle_timeout() {
    let cfg = MockConfig {
        stall_after_events: Some(3),
        ..MockConfig::default()
    };
    let mock = MockUpstream::start(cfg).await.unwrap();
    let gw = gateway_on(&mock, "[upstream]\nidle_timeout_ms = 300\n").await;
    let mut tasks = Vec::new();
    for path in ROUTES {
        let addr = gw.addr;
        tasks.push(tokio::spawn(async move {
            (
                path,
                send(addr, post(path, body(path, model_for(path), true))).await,
            )
        }));
    }
    for t in tasks {
        let (path, r) = t.await.unwrap();
        // The head went out long ago; the client sees a stream that never completes.
        assert_eq!(r.status, StatusCode::OK, "{path}");
        assert!(
            r.body_error.is_some(),
            "{path}: the cut stream looked complete"
        );
        // What did arrive are the first three whole events.
        let text = r.text();
        assert_eq!(text.matches("\n\n").count(), 3, "{path}: {text:?}");
        if path == CHAT {
            assert!(!text.contains("[DONE]"));
        }
    }
    for path in ROUTES {
        let model = model_for(path);
        gw.wait_log("for the cut stream", |l| {
            l["route"] == path && l["error"] == "upstream_idle_timeout" && l["status"] == 504
        })
        .await;
        let text = gw.metrics().await;
        assert_eq!(
            requests_total(&text, path, model, 504),
            1.0,
            "{path}\n{text}"
        );
    }
    let text = gw.wait_metric("gateway_in_flight_requests", 0.0).await;
    assert_eq!(requests_total(&text, CHAT, "gpt", 200), 0.0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn long_stream_with_short_gaps_is_not_cut() {
    // Gaps of 60 ms under an idle timeout of 400 ms; the whole stream lasts longer than
    // the idle timeout: no total-duration cap.
    let cfg = MockConfig {
        chunks: 12,
        chunk_delay: Duration::from_millis(60),
        ..MockConfig::default()
    };
    let mock = MockUpstream::start(cfg).await.unwrap();
    let gw = gateway_on(
        &mock,
        "[upstream]\nidle_timeout_ms = 400\nfirst_byte_timeout_ms = 400\n",
    )
    .await;
    let r = gw.send(post(CHAT, body(CHAT, "gpt", true))).await;
    assert_eq!(r.status, StatusCode::OK);
    assert!(r.body_error.is_none());
    assert_eq!(sse_data(&r.body).last().unwrap(), "[DONE]");
}

// Issue 49 item 8: the access log's `error` for each error kind a request can meet before any
// upstream is named by what happened (a swapped label fails here).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_refusal_is_logged_with_its_own_error() {
    let mock = MockUpstream::start(MockConfig::default()).await.unwrap();
    let cfg = format!(
        "[server]\nmax_body_bytes = 2048\n[[keys]]\nname = \"a\"\nkey = \"key-a\"\nmodels = [\"gpt\"]\n{}{}",
        model("gpt", &[("openai", &mock.base_url())]),
        model_with(
            "limited",
            "rate_limit = { requests_per_minute = 1 }",
            &[("openai", &mock.base_url())]
        ),
    );
    let gw = TestGateway::start(&cfg).await;
    let cases: [(&str, Req, u16); 7] = [
        (
            "invalid_request",
            post(CHAT, "not json").bearer("key-a"),
            400,
        ),
        ("authentication", post(CHAT, body(CHAT, "gpt", false)), 401),
        (
            "permission",
            post(CHAT, body(CHAT, "limited", false)).bearer("key-a"),
            403,
        ),
        (
            "model_not_found",
            post(CHAT, body(CHAT, "nope", false)).bearer("key-a"),
            404,
        ),
        ("method_not_allowed", get(CHAT).bearer("key-a"), 405),
        (
            "too_large",
            post(CHAT, "x".repeat(4096)).bearer("key-a"),
            413,
        ),
        ("not_found", post("/v1/nowhere", "{}").bearer("key-a"), 404),
    ];
    for (want, req, status) in cases {
        let r = gw.send(req).await;
        assert_eq!(r.status.as_u16(), status, "{want}: {}", r.text());
        let line = gw.wait_log(want, |l| l["error"] == want).await;
        assert_eq!(line["status"], status, "{line}");
    }
    // The open route of a rate-limited model: the second request in the minute is refused.
    let cfg = model_with(
        "limited",
        "rate_limit = { requests_per_minute = 1 }",
        &[("openai", &mock.base_url())],
    );
    let gw = TestGateway::start(&cfg).await;
    assert_eq!(
        gw.send(post(CHAT, body(CHAT, "limited", false)))
            .await
            .status,
        200
    );
    let r = gw.send(post(CHAT, body(CHAT, "limited", false))).await;
    assert_eq!(r.status, 429);
    let line = gw.wait_log("rate_limited", |l| l["status"] == 429).await;
    assert_eq!(line["error"], "rate_limited", "{line}");
}
