//! Rate limits: 429 with Retry-After and x-ratelimit-* headers in the route's envelope, per
//! key and per model, counted in metrics, and recovery once the bucket refills.

use std::time::Duration;

use crate::support::*;
use http::StatusCode;

/// Two keys (`gw-<name>`), the first under `limit`, and [`two_models`] on `base`.
fn limited_and_other(limited: &str, limit: &str, other: &str, base: &str) -> String {
    format!(
        "[[keys]]\nname = \"{limited}\"\nkey = \"gw-{limited}\"\nrate_limit = {{ {limit} }}\n\n\
         [[keys]]\nname = \"{other}\"\nkey = \"gw-{other}\"\n\n{}",
        two_models(base)
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn key_requests_per_minute_gives_429_with_headers() {
    let mock = MockUpstream::start(MockConfig::default()).await.unwrap();
    let config = limited_and_other("slow", "requests_per_minute = 2", "free", &mock.base_url());
    let gw = TestGateway::start(&config).await;
    for _ in 0..2 {
        let r = gw
            .send(post(CHAT, body(CHAT, "gpt", false)).bearer("gw-slow"))
            .await;
        assert_eq!(r.status, StatusCode::OK);
    }
    // Third request within the minute: refused on every route, in its envelope.
    let r = gw
        .send(post(CHAT, body(CHAT, "gpt", false)).bearer("gw-slow"))
        .await;
    let v = assert_openai_error(&r, 429);
    assert_eq!(v["error"]["code"], "rate_limit_exceeded");
    // 2 per minute: one request back every 30 s.
    let retry: u64 = r.header("retry-after").unwrap().parse().unwrap();
    assert!((28..=30).contains(&retry), "Retry-After {retry}");
    assert_eq!(r.header("x-ratelimit-limit-requests"), Some("2"));
    assert_eq!(r.header("x-ratelimit-remaining-requests"), Some("0"));
    let reset = r.header("x-ratelimit-reset-requests").unwrap();
    assert!(reset.ends_with('s'), "{reset}");
    let r = gw
        .send(post(MESSAGES, body(MESSAGES, "claude", true)).x_api_key("gw-slow"))
        .await;
    assert_eq!(assert_anthropic_error(&r, 429), "rate_limit_error");
    assert!(r.header("retry-after").is_some());
    let r = gw
        .send(post(RESPONSES, body(RESPONSES, "gpt", false)).bearer("gw-slow"))
        .await;
    assert_openai_error(&r, 429);

    // Another key is not affected.
    let r = gw
        .send(post(CHAT, body(CHAT, "gpt", false)).bearer("gw-free"))
        .await;
    assert_eq!(r.status, StatusCode::OK);
    assert_eq!(mock.request_count(), 3);

    let text = gw
        .wait_metric(
            "gateway_rate_limited_total{model=\"gpt\",scope=\"key\"}",
            2.0,
        )
        .await;
    assert_eq!(
        metric(
            &text,
            "gateway_rate_limited_total{model=\"claude\",scope=\"key\"}"
        ),
        Some(1.0)
    );
    assert_eq!(requests_total(&text, CHAT, "gpt", 429), 1.0);
    assert_eq!(requests_total(&text, MESSAGES, "claude", 429), 1.0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn model_tokens_per_minute_refuses_then_recovers() {
    // 3000 tokens per minute = 50 per second. One response reports 17 + 3058 = 3075 tokens,
    // 75 more than the bucket holds: the next request waits about 1.5 seconds.
    let cfg = MockConfig {
        chunks: 3058,
        ..MockConfig::default()
    };
    let (input, output) = expected_usage(&cfg);
    assert_eq!(input + output, 3075);
    let mock = MockUpstream::start(cfg).await.unwrap();
    let base = mock.base_url();
    let config = format!(
        "{}{}",
        model_with(
            "claude",
            "rate_limit = { tokens_per_minute = 3000 }",
            &[("anthropic", &base)]
        ),
        model("gpt", &[("openai", &base)]),
    );
    let gw = TestGateway::start(&config).await;
    let r = gw
        .send(post(MESSAGES, body(MESSAGES, "claude", true)))
        .await;
    assert_eq!(r.status, StatusCode::OK);
    assert!(r.body_error.is_none());
    // The stream's usage was charged when it ended.
    gw.wait_metric(&tokens_series("claude", "output"), output as f64)
        .await;

    let r = gw
        .send(post(MESSAGES, body(MESSAGES, "claude", false)))
        .await;
    assert_eq!(assert_anthropic_error(&r, 429), "rate_limit_error");
    let retry: u64 = r.header("retry-after").unwrap().parse().unwrap();
    assert!((1..=2).contains(&retry), "Retry-After {retry}");
    assert_eq!(r.header("x-ratelimit-limit-tokens"), Some("3000"));
    assert_eq!(r.header("x-ratelimit-remaining-tokens"), Some("0"));
    assert!(r.header("x-ratelimit-reset-tokens").is_some());
    // A model without a limit is unaffected.
    let r = gw.send(post(CHAT, body(CHAT, "gpt", false))).await;
    assert_eq!(r.status, StatusCode::OK);

    // Wait it out: admitted again.
    tokio::time::sleep(Duration::from_secs(retry) + Duration::from_millis(100)).await;
    let r = gw
        .send(post(MESSAGES, body(MESSAGES, "claude", false)))
        .await;
    assert_eq!(r.status, StatusCode::OK, "{:?}", r.body);

    let text = gw.metrics().await;
    assert_eq!(
        metric(
            &text,
            "gateway_rate_limited_total{model=\"claude\",scope=\"model\"}"
        ),
        Some(1.0),
        "{text}"
    );
    assert_eq!(
        metric(
            &text,
            "gateway_rate_limited_total{model=\"claude\",scope=\"key\"}"
        ),
        Some(0.0)
    );
    assert_eq!(requests_total(&text, MESSAGES, "claude", 429), 1.0);
    assert_eq!(requests_total(&text, MESSAGES, "claude", 200), 2.0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn model_requests_per_minute_in_openai_envelope_on_responses() {
    let mock = MockUpstream::start(MockConfig::default()).await.unwrap();
    let config = model_with(
        "gpt",
        "rate_limit = { requests_per_minute = 1 }",
        &[("openai", &mock.base_url())],
    );
    let gw = TestGateway::start(&config).await;
    let r = gw.send(post(RESPONSES, body(RESPONSES, "gpt", true))).await;
    assert_eq!(r.status, StatusCode::OK);
    for path in [RESPONSES, CHAT] {
        let r = gw.send(post(path, body(path, "gpt", true))).await;
        let v = assert_openai_error(&r, 429);
        assert_eq!(v["error"]["type"], "requests");
        let retry: u64 = r.header("retry-after").unwrap().parse().unwrap();
        assert!((58..=60).contains(&retry), "Retry-After {retry}");
        assert_eq!(r.header("x-ratelimit-limit-requests"), Some("1"));
    }
    assert_eq!(mock.request_count(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn model_refusal_refunds_the_key_request() {
    let mock = MockUpstream::start(MockConfig::default()).await.unwrap();
    let base = mock.base_url();
    let config = format!(
        r#"
[[keys]]
name = "k"
key = "gw-k"
rate_limit = {{ requests_per_minute = 2 }}

{}{}"#,
        model_with(
            "gpt",
            "rate_limit = { requests_per_minute = 1 }",
            &[("openai", &base)]
        ),
        model("claude", &[("anthropic", &base)]),
    );
    let gw = TestGateway::start(&config).await;
    let ok = |r: &Reply| assert_eq!(r.status, StatusCode::OK, "{:?}", r.body);
    ok(&gw
        .send(post(CHAT, body(CHAT, "gpt", false)).bearer("gw-k"))
        .await);
    // Refused by the model's limit: the key's request comes back.
    for _ in 0..3 {
        let r = gw
            .send(post(CHAT, body(CHAT, "gpt", false)).bearer("gw-k"))
            .await;
        assert_openai_error(&r, 429);
    }
    ok(&gw
        .send(post(MESSAGES, body(MESSAGES, "claude", false)).bearer("gw-k"))
        .await);
    // Now the key's two requests are used.
    let r = gw
        .send(post(MESSAGES, body(MESSAGES, "claude", false)).bearer("gw-k"))
        .await;
    assert_anthropic_error(&r, 429);
    let text = gw.metrics().await;
    assert_eq!(
        metric(
            &text,
            "gateway_rate_limited_total{model=\"gpt\",scope=\"model\"}"
        ),
        Some(3.0)
    );
    assert_eq!(
        metric(
            &text,
            "gateway_rate_limited_total{model=\"claude\",scope=\"key\"}"
        ),
        Some(1.0)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn key_tokens_per_minute_charges_streamed_usage() {
    // 17 + 3058 = 3075 tokens per response against a key budget of 3000 per minute.
    let mock = MockUpstream::start(MockConfig {
        chunks: 3058,
        ..MockConfig::default()
    })
    .await
    .unwrap();
    let config = limited_and_other(
        "metered",
        "tokens_per_minute = 3000",
        "other",
        &mock.base_url(),
    );
    let gw = TestGateway::start(&config).await;
    let r = gw
        .send(post(CHAT, body(CHAT, "gpt", true)).bearer("gw-metered"))
        .await;
    assert_eq!(r.status, StatusCode::OK);
    gw.wait_metric(&tokens_series("gpt", "output"), 3058.0)
        .await;
    let r = gw
        .send(post(MESSAGES, body(MESSAGES, "claude", false)).x_api_key("gw-metered"))
        .await;
    assert_eq!(assert_anthropic_error(&r, 429), "rate_limit_error");
    assert_eq!(r.header("x-ratelimit-limit-tokens"), Some("3000"));
    let r = gw
        .send(post(MESSAGES, body(MESSAGES, "claude", false)).x_api_key("gw-other"))
        .await;
    assert_eq!(r.status, StatusCode::OK);
    let text = gw.metrics().await;
    assert_eq!(
        metric(
            &text,
            "gateway_rate_limited_total{model=\"claude\",scope=\"key\"}"
        ),
        Some(1.0)
    );
}

// Issue 21, item 2: a client that leaves before the usage event is still charged: the
// prompt at 4 bytes a token and one token per event it was streamed, marked as estimated
// in the log and the metrics. Before, each such client was charged 0 and all were admitted.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn clients_leaving_before_the_usage_are_charged_an_estimate() {
    let mock = slow_stream_mock().await;
    let config = model_with(
        "gpt",
        "rate_limit = { tokens_per_minute = 600 }",
        &[("openai", &mock.base_url())],
    );
    let gw = TestGateway::start(&config).await;
    // A prompt of about 1,000 tokens by the estimate: one early leaver overdraws the bucket.
    let prompt = "lorem ipsum ".repeat(330);
    let b = format!(
        r#"{{"model":"gpt","messages":[{{"role":"user","content":"{prompt}"}}],"stream":true,"stream_options":{{"include_usage":true}}}}"#
    );
    let estimate = b.len().div_ceil(4) as u64;
    let mut s = raw_request(gw.addr, CHAT, &b).await;
    let head = read_until(&mut s, b"\n\n").await;
    assert!(head.starts_with(b"HTTP/1.1 200"), "{head:?}");
    drop(s);
    let line = gw
        .wait_log("the leaver", |l| l["error"] == "client_disconnected")
        .await;
    assert_eq!(line["tokens_estimated"], true, "{line}");
    assert_eq!(line["input_tokens"], estimate, "{line}");
    let output = line["output_tokens"].as_u64().expect("an output estimate");
    assert!((1..1200).contains(&output), "{line}");
    gw.wait_metric(
        "gateway_estimated_tokens_total{model=\"gpt\",direction=\"input\"}",
        estimate as f64,
    )
    .await;
    let text = gw.metrics().await;
    assert_eq!(
        metric(&text, &tokens_series("gpt", "input")),
        Some(estimate as f64)
    );
    // The limiter agrees with the log and the metrics: the next request is refused.
    let r = gw.send(post(CHAT, b.clone())).await;
    assert_openai_error(&r, 429);
    // A stream read to its end is charged what its upstream reported, unmarked.
    let short = MockUpstream::start(MockConfig::default()).await.unwrap();
    let gw = TestGateway::start(&model("gpt", &[("openai", &short.base_url())])).await;
    let r = gw.send(post(CHAT, body(CHAT, "gpt", true))).await;
    assert_eq!(r.status, StatusCode::OK);
    let line = gw.wait_log("the full stream", |l| l["route"] == CHAT).await;
    assert!(line.get("tokens_estimated").is_none(), "{line}");
    assert_eq!(
        line["output_tokens"],
        expected_usage(&MockConfig::default()).1,
        "{line}"
    );
}
