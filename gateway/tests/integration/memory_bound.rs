//! The node budget of translated paths (issue 49): a document over it is refused before its
//! tree is built, with an error in the caller's dialect: a client body gets 413 in its
//! envelope, an upstream answer 502 naming the upstream, an event ends the stream with an
//! error event. (How much memory each path takes is `bench memory`'s: bench/src/memory.rs.)

use http::StatusCode;

use crate::hardening_upstream::fixed;
use crate::support::*;

/// `[{"a":1},...]` of about `n` bytes: 3 nodes a byte, far over any budget.
fn flood(n: usize) -> String {
    format!("[{}1]", r#"{"a":1},"#.repeat(n / 8))
}

fn json_answer(status: &str, body: &str) -> Vec<u8> {
    http_response(
        status,
        &[("content-type", "application/json")],
        body.as_bytes(),
    )
}

/// A Messages client's flood to an OpenAI target: 413 in Anthropic's envelope, both below
/// the reader's prescan length (counted as it reads) and above it (scanned first); the same
/// body passed through to an Anthropic target is not measured.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_translated_flood_body_gets_413_in_the_clients_envelope() {
    let up = fixed(json_answer("200 OK", &chat_json(1, 1))).await;
    let gw = TestGateway::start(&format!(
        "{}{}",
        model("gpt", &[("openai", &up.base_url())]),
        model("claude", &[("anthropic", &up.base_url())]),
    ))
    .await;
    for size in [200_000, 3_000_000] {
        let body = format!(
            r#"{{"model":"gpt","max_tokens":8,"messages":[{{"role":"user","content":"hi"}}],"metadata":{{"user_id":"u","x":{}}}}}"#,
            flood(size)
        );
        let r = gw.send(post(MESSAGES, body)).await;
        assert_eq!(
            r.status,
            StatusCode::PAYLOAD_TOO_LARGE,
            "{size}: {}",
            r.text()
        );
        let v = r.json();
        assert_eq!(v["type"], "error", "{v}");
        assert_eq!(v["error"]["type"], "request_too_large", "{v}");
        let msg = v["error"]["message"].as_str().unwrap();
        assert!(
            msg.contains("too large to translate") && msg.contains("nodes"),
            "{msg}"
        );
    }
    assert!(up.heads().is_empty(), "a refused body reached the upstream");
    // A Gemini client's `parts` flood too, in Google's envelope.
    let parts = format!(
        r#"{{"contents":[{{"role":"user","parts":{}}}]}}"#,
        flood(1_800_000)
    );
    let r = gw
        .send(post("/v1beta/models/gpt:generateContent", parts))
        .await;
    assert_eq!(r.status, StatusCode::PAYLOAD_TOO_LARGE, "{}", r.text());
    assert_eq!(r.json()["error"]["code"], 413, "{}", r.text());
}

/// An upstream's flood answer: 502 naming the upstream's API (an OpenAI answer read by
/// typed structs; a Gemini one whose `parts` flood built a vector of parts).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_upstream_answer_over_the_budget_gets_502_naming_the_upstream() {
    let answer = format!(
        r#"{{"id":"c","object":"chat.completion","created":0,"model":"m","choices":[{{"index":0,"message":{{"role":"assistant","content":"hi"}},"finish_reason":"stop"}}],"x":{}}}"#,
        flood(400_000)
    );
    let parts = format!(
        r#"{{"candidates":[{{"content":{{"role":"model","parts":[{{"text":"hi"}}{}]}},"finishReason":"STOP"}}]}}"#,
        ",{}".repeat(300_000)
    );
    for (provider, answer, api, path) in [
        ("openai", answer, "OpenAI chat completions", MESSAGES),
        ("gemini", parts, "Google Gemini", CHAT),
    ] {
        let up = fixed(json_answer("200 OK", &answer)).await;
        let gw = TestGateway::start(&model("m", &[(provider, &up.base_url())])).await;
        let r = gw.send(post(path, body(path, "m", false))).await;
        assert_eq!(
            r.status,
            StatusCode::BAD_GATEWAY,
            "{provider}: {}",
            r.text()
        );
        let text = r.text();
        assert!(text.contains(api) && text.contains("budget"), "{text}");
    }
}

/// A stream event over the budget ends the translated stream with an error event that
/// says why; the text before it arrived.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stream_event_over_the_budget_ends_the_stream_with_an_error() {
    let events = format!(
        "event: message_start\ndata: {{\"type\":\"message_start\",\"message\":{{\"id\":\"m\",\"model\":\"c\",\"usage\":{{\"input_tokens\":1,\"output_tokens\":0}}}}}}\n\n\
         event: content_block_start\ndata: {{\"type\":\"content_block_start\",\"index\":0,\"content_block\":{{\"type\":\"text\",\"text\":\"\"}}}}\n\n\
         event: content_block_delta\ndata: {{\"type\":\"content_block_delta\",\"index\":0,\"delta\":{{\"type\":\"text_delta\",\"text\":\"early\"}}}}\n\n\
         event: content_block_delta\ndata: {{\"type\":\"content_block_delta\",\"index\":0,\"delta\":{{\"type\":\"text_delta\",\"text\":\"late\"}},\"x\":{}}}\n\n",
        flood(400_000)
    );
    let up = fixed(http_response(
        "200 OK",
        &[("content-type", "text/event-stream")],
        events.as_bytes(),
    ))
    .await;
    let gw = TestGateway::start(&model("claude", &[("anthropic", &up.base_url())])).await;
    let r = gw.send(post(CHAT, body(CHAT, "claude", true))).await;
    assert_eq!(r.status, StatusCode::OK);
    let text = r.text();
    assert!(text.contains("early"), "{text}");
    assert!(!text.contains("late"), "{text}");
    assert!(
        text.contains("Anthropic messages upstream's event is refused unread"),
        "{text}"
    );
}

/// An error body is read by borrowed fields: a flood beside its message costs no tree,
/// and the message still reaches the client in its envelope.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_error_body_flood_keeps_its_message() {
    let error = format!(
        r#"{{"type":"error","error":{{"type":"invalid_request_error","message":"prompt too long","detail":{}}}}}"#,
        flood(2_000_000)
    );
    let up = fixed(json_answer("400 Bad Request", &error)).await;
    let gw = TestGateway::start(&model("claude", &[("anthropic", &up.base_url())])).await;
    let r = gw.send(post(CHAT, body(CHAT, "claude", false))).await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST);
    let v = r.json();
    assert_eq!(v["error"]["message"], "prompt too long", "{v}");
}
