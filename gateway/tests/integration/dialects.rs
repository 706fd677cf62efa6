//! Every route, streaming and not: the client gets exactly the bytes the upstream sent, the
//! upstream gets exactly the client's body with the model rewritten, headers pass the right
//! way, and usage lands in the token metrics.

use crate::support::*;
use http::StatusCode;

const ROUTES: [&str; 3] = [CHAT, MESSAGES, RESPONSES];

async fn setup(mock: MockConfig) -> (MockUpstream, TestGateway) {
    let mock = MockUpstream::start(MockConfig {
        record: true,
        ..mock
    })
    .await
    .unwrap();
    let gw = TestGateway::start(&two_models(&mock.base_url())).await;
    (mock, gw)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_route_streaming_and_not_passes_bytes_through() {
    let (mock, gw) = setup(MockConfig::default()).await;
    for path in ROUTES {
        for stream in [false, true] {
            let model = model_for(path);
            let client_body = body(path, model, stream);
            let r = gw.send(post(path, client_body.clone())).await;
            assert_eq!(
                r.status,
                StatusCode::OK,
                "{path} stream={stream}: {:?}",
                r.body
            );
            assert!(r.body_error.is_none(), "{path}: {:?}", r.body_error);

            // What the upstream received: the client's body, only the model value changed.
            let rec = mock.recorded().pop().unwrap();
            assert_eq!(rec.path, path);
            let upstream_body = client_body.replace(
                &format!("\"model\":\"{model}\""),
                &format!("\"model\":\"up-{model}\""),
            );
            assert_eq!(
                std::str::from_utf8(&rec.body).unwrap(),
                upstream_body,
                "{path} stream={stream}: the body changed beyond the model"
            );

            // What the client got: byte for byte what the upstream sends for that body.
            let d = direct(&mock, path, &upstream_body).await;
            assert_eq!(d.status, StatusCode::OK);
            assert_eq!(
                r.text(),
                d.text(),
                "{path} stream={stream}: body differs from the upstream's"
            );
            let ct = r.header("content-type").unwrap();
            if stream {
                assert!(ct.starts_with("text/event-stream"), "{ct}");
                let data = sse_data(&r.body);
                assert!(!data.is_empty());
                if path == CHAT {
                    assert_eq!(data.last().unwrap(), "[DONE]");
                }
            } else {
                assert!(ct.starts_with("application/json"), "{ct}");
                let v = r.json();
                assert_eq!(v["model"], format!("up-{model}"));
                assert!(v["usage"].is_object());
            }
        }
    }
    // The text of each dialect is the mock's text.
    let r = gw.send(post(CHAT, body(CHAT, "gpt", false))).await;
    assert_eq!(
        r.json()["choices"][0]["message"]["content"],
        expected_text(mock.config())
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn usage_is_counted_into_token_metrics() {
    let cfg = MockConfig {
        chunks: 7,
        ..MockConfig::default()
    };
    let (input, output) = expected_usage(&cfg);
    let (mock, gw) = setup(cfg).await;
    let mut per_model = std::collections::HashMap::new();
    for path in ROUTES {
        for stream in [false, true] {
            let model = model_for(path);
            let r = gw.send(post(path, body(path, model, stream))).await;
            assert_eq!(r.status, StatusCode::OK);
            *per_model.entry(model).or_insert(0u64) += 1;
        }
    }
    assert_eq!(mock.request_count(), 6);
    for (model, n) in per_model {
        gw.wait_metric(&tokens_series(model, "input"), (n * input) as f64)
            .await;
        let text = gw
            .wait_metric(&tokens_series(model, "output"), (n * output) as f64)
            .await;
        for path in ROUTES.iter().filter(|p| model_for(p) == model) {
            assert_eq!(
                requests_total(&text, path, model, 200),
                2.0,
                "{path}\n{text}"
            );
        }
    }
    // Per-request tokens in the access log.
    let api = gw
        .wait_logs("on the API routes", 6, |l| {
            ROUTES.contains(&l["route"].as_str().unwrap_or(""))
        })
        .await;
    assert_eq!(api.len(), 6, "{api:?}");
    for l in &api {
        assert_eq!(l["status"], 200);
        assert_eq!(l["input_tokens"], input, "{l}");
        assert_eq!(l["output_tokens"], output, "{l}");
        assert!(l["request_id"].is_string());
        assert!(l["error"].is_null(), "{l}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn headers_pass_the_right_way() {
    let (mock, gw) = setup(MockConfig::default()).await;

    // OpenAI-shaped upstream: upstream key injected as a bearer token.
    let r = gw
        .send(
            post(CHAT, body(CHAT, "gpt", false))
                .header("openai-organization", "org-1")
                .header("x-request-id", "client-chosen-id-1")
                .header("cookie", "session=secret"),
        )
        .await;
    assert_eq!(r.status, StatusCode::OK);
    let rec = mock.recorded().pop().unwrap();
    assert_eq!(
        rec.headers["authorization"],
        format!("Bearer {UPSTREAM_KEY}").as_str()
    );
    assert!(rec.headers.get("x-api-key").is_none());
    assert!(rec.headers.get("cookie").is_none());
    // Headers that pick who pays stay with the client (issue 13).
    assert!(rec.headers.get("openai-organization").is_none());
    // The client's request id names the request end to end.
    assert_eq!(rec.headers["x-request-id"], "client-chosen-id-1");
    assert_eq!(r.header("x-gateway-request-id"), Some("client-chosen-id-1"));
    // The upstream's request id and rate-limit headers come back.
    let up_id = r.header("x-request-id").unwrap();
    assert!(up_id.starts_with("req_mock"), "{up_id}");
    assert_eq!(r.header("x-ratelimit-limit-requests"), Some("10000"));
    // Only ids and rate-limit headers come back, not the upstream's account headers.
    assert!(r.header("openai-processing-ms").is_none());
    assert_eq!(r.header("x-ratelimit-remaining-tokens"), Some("1999000"));

    // Anthropic-shaped upstream: x-api-key injected, version and beta forwarded.
    let r = gw
        .send(
            post(MESSAGES, body(MESSAGES, "claude", true))
                .header("anthropic-version", "2023-06-01")
                .header("anthropic-beta", "tools-2024-05-16"),
        )
        .await;
    assert_eq!(r.status, StatusCode::OK);
    let rec = mock.recorded().pop().unwrap();
    assert_eq!(rec.headers["x-api-key"], UPSTREAM_KEY);
    assert!(rec.headers.get("authorization").is_none());
    assert_eq!(rec.headers["anthropic-version"], "2023-06-01");
    assert_eq!(rec.headers["anthropic-beta"], "tools-2024-05-16");
    assert!(r.header("request-id").unwrap().starts_with("req_mock"));
    assert_eq!(r.header("anthropic-ratelimit-requests-limit"), Some("4000"));
    assert_eq!(
        r.header("anthropic-ratelimit-tokens-remaining"),
        Some("399000")
    );
    // A gateway id of its own, sent upstream as x-request-id.
    let gid = r.header("x-gateway-request-id").unwrap();
    assert_eq!(rec.headers["x-request-id"], gid);
    assert_ne!(Some(gid), r.header("request-id"));

    // No anthropic-version from the client: the gateway supplies one.
    gw.send(post(MESSAGES, body(MESSAGES, "claude", false)))
        .await;
    let rec = mock.recorded().pop().unwrap();
    assert!(rec.headers.get("anthropic-version").is_some());

    // Two requests get different gateway ids.
    let a = gw
        .send(post(RESPONSES, body(RESPONSES, "gpt", false)))
        .await;
    let b = gw
        .send(post(RESPONSES, body(RESPONSES, "gpt", false)))
        .await;
    assert_ne!(
        a.header("x-gateway-request-id"),
        b.header("x-gateway-request-id")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn model_rewrite_touches_only_the_model_value() {
    let (mock, gw) = setup(MockConfig::default()).await;
    // Odd spacing, a "model" lookalike inside a string, unicode, numbers in odd notation,
    // and a model field that is not first.
    let client = "{ \"messages\" : [ {\"role\":\"user\",\"content\":\"\\\"model\\\": \\\"gpt\\\" caf\u{e9} \\u00e9\"} ],\n  \"model\"  :  \"gpt\" , \"temperature\": 1.50e0, \"n\":1 }";
    let r = gw.send(post(CHAT, client.to_owned())).await;
    assert_eq!(r.status, StatusCode::OK, "{:?}", r.body);
    let rec = mock.recorded().pop().unwrap();
    let expected = client.replace("\"model\"  :  \"gpt\"", "\"model\"  :  \"up-gpt\"");
    assert_eq!(std::str::from_utf8(&rec.body).unwrap(), expected);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn keep_alive_connection_serves_many_requests() {
    let (_mock, gw) = setup(MockConfig::default()).await;
    let stream = tokio::net::TcpStream::connect(gw.addr).await.unwrap();
    let mut sender = trainer::http1::handshake(stream).await.unwrap();
    for i in 0..6 {
        let path = ROUTES[i % 3];
        let req = http::Request::post(path)
            .header("host", "gw")
            .body(http_body_util::Full::new(bytes::Bytes::from(body(
                path,
                model_for(path),
                i % 2 == 0,
            ))))
            .unwrap();
        sender.ready().await.unwrap();
        let resp = sender.send_request(req).await.unwrap();
        assert_eq!(resp.status(), StatusCode::OK);
        use http_body_util::BodyExt;
        resp.into_body().collect().await.unwrap();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn escaped_model_name_is_resolved_and_rewritten() {
    let (mock, gw) = setup(MockConfig::default()).await;
    let client = r#"{"model":"g\u0070t","input":"hi"}"#;
    let r = gw.send(post(RESPONSES, client)).await;
    assert_eq!(r.status, StatusCode::OK, "{:?}", r.body);
    let rec = mock.recorded().pop().unwrap();
    assert_eq!(&rec.body[..], br#"{"model":"up-gpt","input":"hi"}"#);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn chunked_request_body_is_forwarded_intact() {
    use tokio::io::AsyncWriteExt;
    let (mock, gw) = setup(MockConfig::default()).await;
    let part1 = r#"{"model":"claude","max_tokens":8,"#;
    let part2 = r#""messages":[{"role":"user","content":"café ☕"}]}"#;
    let mut s = tokio::net::TcpStream::connect(gw.addr).await.unwrap();
    let req = format!(
        "POST /v1/messages HTTP/1.1\r\nhost: gw\r\ntransfer-encoding: chunked\r\nconnection: close\r\n\r\n{:x}\r\n{part1}\r\n{:x}\r\n{part2}\r\n0\r\n\r\n",
        part1.len(),
        part2.len()
    );
    s.write_all(req.as_bytes()).await.unwrap();
    let got = read_until(&mut s, b"\"end_turn\"").await;
    assert!(
        got.starts_with(b"HTTP/1.1 200"),
        "{:?}",
        String::from_utf8_lossy(&got)
    );
    let rec = mock.recorded().pop().unwrap();
    assert_eq!(
        std::str::from_utf8(&rec.body).unwrap(),
        format!("{part1}{part2}").replace("\"claude\"", "\"up-claude\"")
    );
}
