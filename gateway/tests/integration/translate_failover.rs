//! Translation and failover across providers, and the accounting of translated requests:
//! each target gets the request in its own dialect (passthrough bytes where it speaks the
//! client's, translated where not), and usage reaches metrics, limits and the access log.

use crate::support::*;
use http::StatusCode;
use serde_json::{json, Value};

const CHAT_OK: &str = r#"{"id":"chatcmpl-1","object":"chat.completion","created":1,"model":"gpt-up","choices":[{"index":0,"message":{"role":"assistant","content":"hello"},"finish_reason":"stop"}],"usage":{"prompt_tokens":11,"completion_tokens":3,"total_tokens":14}}"#;
const OVERLOADED: &str =
    r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#;

/// Anthropic overloaded on /v1/messages; a chat completion on /v1/chat/completions.
async fn overloaded_anthropic_and_working_openai() -> ScriptedUpstream {
    ScriptedUpstream::start(|head, _| {
        if head.starts_with("post /v1/messages") {
            json_answer("529 Overloaded", OVERLOADED)
        } else {
            json_answer("200 OK", CHAT_OK)
        }
    })
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn anthropic_then_openai_target_each_get_their_own_dialect() {
    let up = overloaded_anthropic_and_working_openai().await;
    let base = up.base_url();
    let gw = TestGateway::start(&model("mixed", &[("anthropic", &base), ("openai", &base)])).await;
    let sent_body =
        r#"{"model":"mixed","max_tokens":64,"messages":[{"role":"user","content":"Say hi"}]}"#;
    let r = gw.send(post(MESSAGES, sent_body)).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.text());
    let v = r.json();
    assert_eq!(v["type"], "message");
    assert_eq!(v["content"], json!([{"type": "text", "text": "hello"}]));
    assert_eq!(v["stop_reason"], "end_turn");
    assert_eq!(v["usage"]["input_tokens"], 11);

    let reqs = up.requests();
    assert_eq!(reqs.len(), 2);
    assert!(reqs[0].0.starts_with("post /v1/messages "));
    // Passthrough: the client's body, only the model replaced.
    let passthrough: Value =
        serde_json::from_str(&sent_body.replace("\"mixed\"", "\"up-mixed\"")).unwrap();
    assert_eq!(reqs[0].1, passthrough);
    assert!(reqs[1].0.starts_with("post /v1/chat/completions "));
    assert_eq!(
        reqs[1].1["messages"],
        json!([{"role": "user", "content": "Say hi"}])
    );
    assert_eq!(reqs[1].1["max_completion_tokens"], 64);

    let line = gw
        .wait_log("translated line", |l| l["translated"] == "messages->chat")
        .await;
    assert_eq!(line["input_tokens"], 11);
    let text = gw.metrics().await;
    assert_eq!(
        metric(&text, "gateway_upstream_failovers_total{model=\"mixed\"}"),
        Some(1.0),
        "{text}"
    );
    assert_eq!(
        metric(&text, "gateway_translated_requests_total{model=\"mixed\"}"),
        Some(1.0),
        "{text}"
    );

    // A chat client on the same model: the Anthropic target translates, the OpenAI one
    // passes through; the 529 is translated only if it is the last answer.
    let r = gw.send(post(CHAT, body(CHAT, "mixed", false))).await;
    assert_eq!(r.status, StatusCode::OK);
    assert_eq!(r.json()["choices"][0]["message"]["content"], "hello");
    let reqs = up.requests();
    assert!(reqs[2].0.starts_with("post /v1/messages "));
    assert_eq!(reqs[2].1["max_tokens"], 4096);
    assert_eq!(
        reqs[3].1,
        serde_json::from_str::<Value>(&body(CHAT, "up-mixed", false)).unwrap()
    );
    // The passthrough answer's log line has no `translated` field at all.
    let line = gw
        .wait_log("passthrough line", |l| l["route"] == CHAT)
        .await;
    assert!(line.get("translated").is_none(), "{line}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn openai_down_then_anthropic_translates_a_stream() {
    let up = ScriptedUpstream::start(|head, _| {
        assert!(head.starts_with("post /v1/messages"), "{head}");
        let sse = concat!(
            "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_s\",\"type\":\"message\",\"role\":\"assistant\",\"model\":\"claude-up\",\"content\":[],\"usage\":{\"input_tokens\":4,\"output_tokens\":1}}}\n\n",
            "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n",
            "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"hi ✓\"}}\n\n",
            "event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n",
            "event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"max_tokens\",\"stop_sequence\":null},\"usage\":{\"output_tokens\":3}}\n\n",
            "event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n",
        );
        sse_pieces(sse, 2)
    })
    .await;
    let closed = ClosedPort::new();
    let config = model(
        "mixed",
        &[("openai", closed.url()), ("anthropic", &up.base_url())],
    );
    let gw = TestGateway::start(&config).await;
    let r = gw.send(post(CHAT, body(CHAT, "mixed", true))).await;
    assert_eq!(r.status, StatusCode::OK);
    assert!(r.body_error.is_none());
    let ev = sse_events(&r.body);
    let chunks: Vec<Value> = ev[..ev.len() - 1]
        .iter()
        .map(|(_, d)| serde_json::from_str(d).unwrap())
        .collect();
    let text: String = chunks
        .iter()
        .filter_map(|c| c["choices"][0]["delta"]["content"].as_str())
        .collect();
    assert_eq!(text, "hi ✓");
    assert_eq!(
        chunks[chunks.len() - 2]["choices"][0]["finish_reason"],
        "length"
    );
    assert_eq!(chunks[chunks.len() - 1]["usage"]["total_tokens"], 7);
    let line = gw
        .wait_log("translated", |l| l["translated"] == "chat->messages")
        .await;
    assert_eq!(
        (
            line["input_tokens"].as_u64(),
            line["output_tokens"].as_u64()
        ),
        (Some(4), Some(3))
    );
    gw.wait_metric(&tokens_series("mixed", "output"), 3.0).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn untranslatable_request_still_uses_a_passthrough_target() {
    let up = overloaded_anthropic_and_working_openai().await;
    let base = up.base_url();
    let gw = TestGateway::start(&model("mixed", &[("anthropic", &base), ("openai", &base)])).await;
    // `top_k` has no chat equivalent: the OpenAI target cannot take this request, so the
    // Anthropic target's 529 is the answer (passed through), not a 400 or a 502.
    let req =
        r#"{"model":"mixed","max_tokens":8,"top_k":5,"messages":[{"role":"user","content":"hi"}]}"#;
    let r = gw.send(post(MESSAGES, req)).await;
    assert_eq!(assert_anthropic_error(&r, 529), "overloaded_error");
    assert_eq!(up.requests().len(), 1);
    // A model whose every target must translate refuses it before any upstream call.
    let gw = TestGateway::start(&model("gpt", &[("openai", &base)])).await;
    let r = gw.send(post(MESSAGES, req.replace("mixed", "gpt"))).await;
    assert_eq!(assert_anthropic_error(&r, 400), "invalid_request_error");
    assert!(r.text().contains("top_k"));
    assert_eq!(up.requests().len(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn translated_usage_is_charged_to_token_limits() {
    // 3000 tokens per minute; one translated stream reports 17 + 3058 tokens.
    let cfg = MockConfig {
        chunks: 3058,
        ..MockConfig::default()
    };
    let (input, output) = expected_usage(&cfg);
    let mock = MockUpstream::start(cfg).await.unwrap();
    let config = model_with(
        "gpt",
        "rate_limit = { tokens_per_minute = 3000 }",
        &[("openai", &mock.base_url())],
    );
    let gw = TestGateway::start(&config).await;
    let r = gw.send(post(MESSAGES, body(MESSAGES, "gpt", true))).await;
    assert_eq!(r.status, StatusCode::OK);
    assert!(r.body_error.is_none());
    let ev = sse_events(&r.body);
    let delta: Value = serde_json::from_str(&ev[ev.len() - 2].1).unwrap();
    assert_eq!(delta["usage"]["output_tokens"], output);
    gw.wait_metric(&tokens_series("gpt", "output"), output as f64)
        .await;
    gw.wait_metric(&tokens_series("gpt", "input"), input as f64)
        .await;
    let r = gw.send(post(MESSAGES, body(MESSAGES, "gpt", false))).await;
    assert_eq!(assert_anthropic_error(&r, 429), "rate_limit_error");
}
