//! The cross-dialect matrix: each of the four client dialects on a model of each of the four
//! providers (passthrough on the diagonal, translated elsewhere), through the real gateway
//! and the mock upstream, streaming and not: the mock's text and usage arrive in the
//! client's terms, and a tool round trip works (the mock calls the offered tool; its result,
//! sent back in the client's dialect, comes back quoted after `Tool said: `).

use crate::support::*;
use http::StatusCode;
use serde_json::{json, Value};

const PROVIDERS: [&str; 4] = ["openai", "anthropic", "openai-compatible", "gemini"];

#[derive(Clone, Copy, Debug)]
enum Client {
    Chat,
    Messages,
    Responses,
    Gemini,
}

const CLIENTS: [Client; 4] = [
    Client::Chat,
    Client::Messages,
    Client::Responses,
    Client::Gemini,
];

fn model_name(provider: &str) -> String {
    format!("m-{provider}")
}

/// The path and body of a request asking `prompt` of `model`, optionally offering the
/// `get_weather(city)` tool, with `history` (dialect-specific turns) before the prompt.
fn request(
    c: Client,
    model: &str,
    stream: bool,
    tools: bool,
    history: &[Value],
) -> (String, String) {
    let params =
        json!({"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]});
    let mut b = match c {
        Client::Chat => {
            let mut messages = vec![json!({"role": "user", "content": "Weather in Paris?"})];
            messages.extend_from_slice(history);
            let mut b = json!({"model": model, "messages": messages, "stream": stream});
            if stream {
                b["stream_options"] = json!({"include_usage": true});
            }
            if tools {
                b["tools"] = json!([{"type": "function", "function": {"name": "get_weather", "parameters": params}}]);
            }
            b
        }
        Client::Messages => {
            let mut messages = vec![json!({"role": "user", "content": "Weather in Paris?"})];
            messages.extend_from_slice(history);
            let mut b =
                json!({"model": model, "max_tokens": 64, "messages": messages, "stream": stream});
            if tools {
                b["tools"] = json!([{"name": "get_weather", "input_schema": params}]);
            }
            b
        }
        Client::Responses => {
            let mut input = vec![
                json!({"role": "user", "content": [{"type": "input_text", "text": "Weather in Paris?"}]}),
            ];
            input.extend_from_slice(history);
            let mut b = json!({"model": model, "input": input, "stream": stream});
            if tools {
                b["tools"] =
                    json!([{"type": "function", "name": "get_weather", "parameters": params}]);
            }
            b
        }
        Client::Gemini => {
            let mut contents =
                vec![json!({"role": "user", "parts": [{"text": "Weather in Paris?"}]})];
            contents.extend_from_slice(history);
            let mut b = json!({"contents": contents});
            if tools {
                b["tools"] = json!([{"functionDeclarations": [{"name": "get_weather",
                    "parameters": {"type": "OBJECT", "properties": {"city": {"type": "STRING"}}, "required": ["city"]}}]}]);
            }
            b
        }
    };
    let path = match (c, stream) {
        (Client::Chat, _) => CHAT.to_owned(),
        (Client::Messages, _) => MESSAGES.to_owned(),
        (Client::Responses, _) => RESPONSES.to_owned(),
        (Client::Gemini, false) => format!("/v1beta/models/{model}:generateContent"),
        (Client::Gemini, true) => format!("/v1beta/models/{model}:streamGenerateContent?alt=sse"),
    };
    if matches!(c, Client::Gemini) {
        b.as_object_mut().unwrap().remove("model");
    }
    (path, b.to_string())
}

/// What an answer said: its text, its tool calls (id, name, arguments) and its usage.
#[derive(Debug, Default)]
struct Answer {
    text: String,
    calls: Vec<(String, String, Value)>,
    usage: (u64, u64),
}

fn events(c: Client, body: &[u8]) -> Vec<Value> {
    let text = std::str::from_utf8(body).unwrap();
    let sep = if matches!(c, Client::Gemini) {
        "\r\n\r\n"
    } else {
        "\n\n"
    };
    assert!(
        text.ends_with(sep),
        "{c:?}: stream ends mid-event: {text:?}"
    );
    text.split_terminator(sep)
        .filter_map(|ev| ev.lines().find_map(|l| l.strip_prefix("data: ")))
        .filter(|d| *d != "[DONE]")
        .map(|d| serde_json::from_str(d).unwrap())
        .collect()
}

fn read(c: Client, stream: bool, body: &[u8]) -> Answer {
    let mut a = Answer::default();
    let u = |v: &Value| v.as_u64().unwrap_or(0);
    match (c, stream) {
        (Client::Chat, false) => {
            let v: Value = serde_json::from_slice(body).unwrap();
            let m = &v["choices"][0]["message"];
            a.text = m["content"].as_str().unwrap_or_default().to_owned();
            for tc in m["tool_calls"].as_array().into_iter().flatten() {
                let args =
                    serde_json::from_str(tc["function"]["arguments"].as_str().unwrap()).unwrap();
                a.calls.push((
                    tc["id"].as_str().unwrap().into(),
                    tc["function"]["name"].as_str().unwrap().into(),
                    args,
                ));
            }
            a.usage = (
                u(&v["usage"]["prompt_tokens"]),
                u(&v["usage"]["completion_tokens"]),
            );
        }
        (Client::Chat, true) => {
            let mut args = String::new();
            for e in events(c, body) {
                if let Some(t) = e["choices"][0]["delta"]["content"].as_str() {
                    a.text.push_str(t);
                }
                for tc in e["choices"][0]["delta"]["tool_calls"]
                    .as_array()
                    .into_iter()
                    .flatten()
                {
                    if let Some(id) = tc["id"].as_str() {
                        a.calls.push((
                            id.into(),
                            tc["function"]["name"].as_str().unwrap().into(),
                            Value::Null,
                        ));
                    }
                    args.push_str(tc["function"]["arguments"].as_str().unwrap_or_default());
                }
                if e["usage"].is_object() {
                    a.usage = (
                        u(&e["usage"]["prompt_tokens"]),
                        u(&e["usage"]["completion_tokens"]),
                    );
                }
            }
            if let Some(call) = a.calls.last_mut() {
                call.2 = serde_json::from_str(&args).unwrap();
            }
        }
        (Client::Messages, false) => {
            let v: Value = serde_json::from_slice(body).unwrap();
            for b in v["content"].as_array().unwrap() {
                match b["type"].as_str() {
                    Some("text") => a.text.push_str(b["text"].as_str().unwrap()),
                    Some("tool_use") => a.calls.push((
                        b["id"].as_str().unwrap().into(),
                        b["name"].as_str().unwrap().into(),
                        b["input"].clone(),
                    )),
                    _ => {}
                }
            }
            let us = &v["usage"];
            a.usage = (
                u(&us["input_tokens"])
                    + u(&us["cache_read_input_tokens"])
                    + u(&us["cache_creation_input_tokens"]),
                u(&us["output_tokens"]),
            );
        }
        (Client::Messages, true) => {
            let mut args = String::new();
            let (mut input, mut output) = (0, 0);
            for e in events(c, body) {
                match e["type"].as_str() {
                    Some("message_start") => {
                        input = u(&e["message"]["usage"]["input_tokens"])
                            + u(&e["message"]["usage"]["cache_read_input_tokens"])
                    }
                    Some("content_block_start") if e["content_block"]["type"] == "tool_use" => {
                        a.calls.push((
                            e["content_block"]["id"].as_str().unwrap().into(),
                            e["content_block"]["name"].as_str().unwrap().into(),
                            Value::Null,
                        ));
                    }
                    Some("content_block_delta") => {
                        a.text
                            .push_str(e["delta"]["text"].as_str().unwrap_or_default());
                        args.push_str(e["delta"]["partial_json"].as_str().unwrap_or_default());
                    }
                    Some("message_delta") => {
                        output = u(&e["usage"]["output_tokens"]);
                        if e["usage"]["input_tokens"].is_u64() {
                            input = u(&e["usage"]["input_tokens"])
                                + u(&e["usage"]["cache_read_input_tokens"]);
                        }
                    }
                    _ => {}
                }
            }
            if let Some(call) = a.calls.last_mut() {
                call.2 = serde_json::from_str(&args).unwrap();
            }
            a.usage = (input, output);
        }
        (Client::Responses, _) => {
            let v: Value = if stream {
                let last = events(c, body).pop().unwrap();
                assert_eq!(last["type"], "response.completed", "{last}");
                last["response"].clone()
            } else {
                serde_json::from_slice(body).unwrap()
            };
            for item in v["output"].as_array().unwrap() {
                match item["type"].as_str() {
                    Some("message") => a
                        .text
                        .push_str(item["content"][0]["text"].as_str().unwrap()),
                    Some("function_call") => a.calls.push((
                        item["call_id"].as_str().unwrap().into(),
                        item["name"].as_str().unwrap().into(),
                        serde_json::from_str(item["arguments"].as_str().unwrap()).unwrap(),
                    )),
                    _ => {}
                }
            }
            a.usage = (
                u(&v["usage"]["input_tokens"]),
                u(&v["usage"]["output_tokens"]),
            );
        }
        (Client::Gemini, _) => {
            let chunks = if stream {
                events(c, body)
            } else {
                vec![serde_json::from_slice(body).unwrap()]
            };
            for ch in chunks {
                for p in ch["candidates"][0]["content"]["parts"]
                    .as_array()
                    .into_iter()
                    .flatten()
                {
                    if let Some(t) = p["text"].as_str() {
                        a.text.push_str(t);
                    }
                    if let Some(f) = p.get("functionCall") {
                        a.calls.push((
                            f["id"].as_str().unwrap_or_default().into(),
                            f["name"].as_str().unwrap().into(),
                            f["args"].clone(),
                        ));
                    }
                }
                if let Some(m) = ch.get("usageMetadata") {
                    a.usage = (
                        u(&m["promptTokenCount"]),
                        u(&m["candidatesTokenCount"]) + u(&m["thoughtsTokenCount"]),
                    );
                }
            }
        }
    }
    a
}

/// The turns that send `call` back with its result, in the client's dialect.
fn tool_round(c: Client, (id, name, args): &(String, String, Value)) -> Vec<Value> {
    match c {
        Client::Chat => vec![
            json!({"role": "assistant", "content": null, "tool_calls": [{"id": id, "type": "function",
                "function": {"name": name, "arguments": args.to_string()}}]}),
            json!({"role": "tool", "tool_call_id": id, "content": "sunny"}),
        ],
        Client::Messages => vec![
            json!({"role": "assistant", "content": [{"type": "tool_use", "id": id, "name": name, "input": args}]}),
            json!({"role": "user", "content": [{"type": "tool_result", "tool_use_id": id, "content": "sunny"}]}),
        ],
        Client::Responses => vec![
            json!({"type": "function_call", "call_id": id, "name": name, "arguments": args.to_string()}),
            json!({"type": "function_call_output", "call_id": id, "output": "sunny"}),
        ],
        Client::Gemini => vec![
            json!({"role": "model", "parts": [{"functionCall": {"id": id, "name": name, "args": args}}]}),
            json!({"role": "user", "parts": [{"functionResponse": {"id": id, "name": name, "response": {"output": "sunny"}}}]}),
        ],
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_client_dialect_on_every_provider() {
    let cfg = MockConfig {
        record: true,
        ..MockConfig::default()
    };
    let mock = MockUpstream::start(cfg.clone()).await.unwrap();
    let config: String = PROVIDERS
        .iter()
        .map(|p| model(&model_name(p), &[(p, &mock.base_url())]))
        .collect();
    let gw = TestGateway::start(&config).await;
    let (input, output) = expected_usage(&cfg);
    let mut failures = Vec::new();
    for c in CLIENTS {
        for p in PROVIDERS {
            let model = model_name(p);
            for stream in [false, true] {
                let case = format!("{c:?} on {p}, stream={stream}");
                // A plain answer: the mock's text and usage.
                let (path, body) = request(c, &model, stream, false, &[]);
                let r = gw.send(post(&path, body)).await;
                if r.status != StatusCode::OK {
                    failures.push(format!("{case}: {} {}", r.status, r.text()));
                    continue;
                }
                let a = read(c, stream, &r.body);
                if a.text != expected_text(&cfg) || a.usage != (input, output) {
                    failures.push(format!("{case}: text {:?}, usage {:?}", a.text, a.usage));
                }
                // A tool round trip.
                let (path, body) = request(c, &model, stream, true, &[]);
                let r = gw.send(post(&path, body)).await;
                let a = read(c, stream, &r.body);
                let Some(call) = a.calls.first() else {
                    failures.push(format!("{case}: no tool call: {}", r.text()));
                    continue;
                };
                if call.1 != "get_weather" || call.2 != json!({"city": "mock city"}) {
                    failures.push(format!("{case}: call {call:?}"));
                }
                let (path, body) = request(c, &model, stream, true, &tool_round(c, call));
                let r = gw.send(post(&path, body)).await;
                if r.status != StatusCode::OK {
                    failures.push(format!("{case}: tool result: {} {}", r.status, r.text()));
                    continue;
                }
                let a = read(c, stream, &r.body);
                if !(a.text.starts_with(TOOL_RESULT_PREFIX) && a.text.contains("sunny")) {
                    failures.push(format!("{case}: tool result answered {:?}", a.text));
                }
                // Gemini signed its call: whatever the client's dialect, the signature went
                // back with it, byte for byte.
                if p == "gemini" {
                    let sent: Value =
                        serde_json::from_slice(&mock.recorded().pop().unwrap().body).unwrap();
                    let part = &sent["contents"][1]["parts"][0];
                    let want = trainer::mock::gemini_thought_signature("get_weather");
                    if part["thoughtSignature"] != want.as_str() && !matches!(c, Client::Gemini) {
                        failures.push(format!("{case}: the call went back as {part}"));
                    }
                }
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} of 32 cases failed:\n{}",
        failures.len(),
        failures.join("\n")
    );
}
