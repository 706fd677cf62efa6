//! Structured output over real sockets: a request that asks for JSON (a schema, or a bare
//! JSON object) gets a JSON text built from the schema, in each dialect, whole and
//! streamed in the usual number of deltas; the prose path and the tool precedence stay.

use bytes::Bytes;
use http::{Method, Request, StatusCode};
use http_body_util::{BodyExt, Full};
use serde_json::{json, Value};
use trainer::mock::{expected_text, MockConfig, MockUpstream, INPUT_TOKENS, TOOL_RESULT_PREFIX};

/// Gemini CLI's model router: upper-case Gemini types.
fn router_schema() -> Value {
    json!({"type": "OBJECT", "properties": {
        "complexity_reasoning": {"type": "STRING", "description": "Brief explanation for the score."},
        "complexity_score": {"type": "INTEGER", "description": "Complexity score from 1-100."}},
        "required": ["complexity_reasoning", "complexity_score"]})
}

/// What the router schema is answered with, as text: the schema's order.
const ROUTER_ANSWER: &str =
    r#"{"complexity_reasoning":"mock complexity_reasoning","complexity_score":1}"#;

#[derive(Clone, Copy, Debug, PartialEq)]
enum Dialect {
    Chat,
    Messages,
    Responses,
    Gemini,
}

const DIALECTS: [Dialect; 4] = [
    Dialect::Chat,
    Dialect::Messages,
    Dialect::Responses,
    Dialect::Gemini,
];

/// One request: its path and body. `format` is the dialect's JSON-output field's value, or
/// none; `extra` more top-level members (tools, ...).
fn request(
    dialect: Dialect,
    stream: bool,
    format: Option<Value>,
    extra: Value,
) -> (String, String) {
    let mut body = match dialect {
        Dialect::Chat => json!({"model": "m", "stream": stream,
            "stream_options": {"include_usage": true},
            "messages": [{"role": "user", "content": "Rate this."}]}),
        Dialect::Messages => json!({"model": "m", "stream": stream, "max_tokens": 64,
            "messages": [{"role": "user", "content": "Rate this."}]}),
        Dialect::Responses => json!({"model": "m", "stream": stream, "input": "Rate this."}),
        Dialect::Gemini => {
            json!({"contents": [{"role": "user", "parts": [{"text": "Rate this."}]}]})
        }
    };
    if let Some(format) = format {
        let field = match dialect {
            Dialect::Chat => "response_format",
            Dialect::Messages => "output_config",
            Dialect::Responses => "text",
            Dialect::Gemini => "generationConfig",
        };
        body[field] = format;
    }
    for (k, v) in extra.as_object().into_iter().flatten() {
        body[k] = v.clone();
    }
    let path = match (dialect, stream) {
        (Dialect::Chat, _) => "/v1/chat/completions".into(),
        (Dialect::Messages, _) => "/v1/messages".into(),
        (Dialect::Responses, _) => "/v1/responses".into(),
        (Dialect::Gemini, false) => "/v1beta/models/gemini-3.5-flash-lite:generateContent".into(),
        (Dialect::Gemini, true) => {
            "/v1beta/models/gemini-3.5-flash-lite:streamGenerateContent?alt=sse".into()
        }
    };
    (path, body.to_string())
}

/// The dialect's way to ask for a value of `schema`.
fn schema_format(dialect: Dialect, schema: &Value) -> Value {
    match dialect {
        Dialect::Chat => {
            json!({"type": "json_schema", "json_schema": {"name": "router", "strict": true, "schema": schema}})
        }
        Dialect::Messages => json!({"format": {"type": "json_schema", "schema": schema}}),
        Dialect::Responses => {
            json!({"verbosity": "medium", "format": {"type": "json_schema", "name": "router", "schema": schema}})
        }
        Dialect::Gemini => json!({"temperature": 0, "responseMimeType": "application/json",
            "responseJsonSchema": schema}),
    }
}

/// The answer as a client reassembles it: the text, the number of text deltas it came in
/// (1 when not streamed), the output tokens reported, and the tool calls' names.
#[derive(Debug)]
struct Answer {
    text: String,
    deltas: usize,
    output_tokens: u64,
    calls: Vec<String>,
}

async fn post(mock: &MockUpstream, path: &str, body: &str) -> (StatusCode, String, Bytes) {
    let stream = tokio::net::TcpStream::connect(mock.addr()).await.unwrap();
    let mut sender = trainer::http1::handshake(stream).await.unwrap();
    let req = Request::builder()
        .method(Method::POST)
        .uri(path)
        .header("host", "mock")
        .header("content-type", "application/json")
        .body(Full::new(Bytes::copy_from_slice(body.as_bytes())))
        .unwrap();
    let response = sender.send_request(req).await.unwrap();
    let status = response.status();
    let content_type = response.headers()["content-type"]
        .to_str()
        .unwrap()
        .to_owned();
    let body = response.into_body().collect().await.unwrap().to_bytes();
    (status, content_type, body)
}

/// The `data:` payloads of an SSE body (`[DONE]` left out), as JSON.
fn sse_data(body: &[u8]) -> Vec<Value> {
    let text = std::str::from_utf8(body).unwrap().replace("\r\n", "\n");
    assert!(text.ends_with("\n\n"), "stream ends mid-event: {text:?}");
    text.split_terminator("\n\n")
        .filter_map(|event| {
            event
                .lines()
                .find_map(|l| l.strip_prefix("data: "))
                .filter(|d| *d != "[DONE]")
                .map(|d| serde_json::from_str(d).expect("JSON data"))
        })
        .collect()
}

async fn ask(mock: &MockUpstream, dialect: Dialect, path: &str, body: &str) -> Answer {
    let (status, content_type, body) = post(mock, path, body).await;
    assert_eq!(status, StatusCode::OK, "{path}: {body:?}");
    let streamed = content_type == "text/event-stream";
    let mut a = Answer {
        text: String::new(),
        deltas: 0,
        output_tokens: 0,
        calls: Vec::new(),
    };
    if !streamed {
        let v: Value = serde_json::from_slice(&body).unwrap();
        a.deltas = 1;
        match dialect {
            Dialect::Chat => {
                let message = &v["choices"][0]["message"];
                a.text = message["content"].as_str().unwrap_or_default().into();
                for c in message["tool_calls"].as_array().into_iter().flatten() {
                    a.calls.push(c["function"]["name"].as_str().unwrap().into());
                }
                a.output_tokens = v["usage"]["completion_tokens"].as_u64().unwrap();
            }
            Dialect::Messages => {
                for block in v["content"].as_array().unwrap() {
                    match block["type"].as_str().unwrap() {
                        "text" => a.text.push_str(block["text"].as_str().unwrap()),
                        _ => a.calls.push(block["name"].as_str().unwrap().into()),
                    }
                }
                a.output_tokens = v["usage"]["output_tokens"].as_u64().unwrap();
            }
            Dialect::Responses => {
                for item in v["output"].as_array().unwrap() {
                    match item["type"].as_str().unwrap() {
                        "message" => a
                            .text
                            .push_str(item["content"][0]["text"].as_str().unwrap()),
                        _ => a.calls.push(item["name"].as_str().unwrap().into()),
                    }
                }
                a.output_tokens = v["usage"]["output_tokens"].as_u64().unwrap();
            }
            Dialect::Gemini => {
                gemini_parts(&v, &mut a);
                a.output_tokens = v["usageMetadata"]["candidatesTokenCount"].as_u64().unwrap();
            }
        }
        return a;
    }
    let events = sse_data(&body);
    for e in &events {
        match dialect {
            Dialect::Chat => {
                if let Some(d) = e["choices"][0]["delta"]["content"].as_str() {
                    if !d.is_empty() {
                        a.text.push_str(d);
                        a.deltas += 1;
                    }
                }
                if let Some(name) =
                    e["choices"][0]["delta"]["tool_calls"][0]["function"]["name"].as_str()
                {
                    a.calls.push(name.into());
                }
                if let Some(n) = e["usage"]["completion_tokens"].as_u64() {
                    a.output_tokens = n;
                }
            }
            Dialect::Messages => {
                if let Some(d) = e["delta"]["text"].as_str() {
                    a.text.push_str(d);
                    a.deltas += 1;
                }
                if e["content_block"]["type"] == "tool_use" {
                    a.calls
                        .push(e["content_block"]["name"].as_str().unwrap().into());
                }
                if e["type"] == "message_delta" {
                    a.output_tokens = e["usage"]["output_tokens"].as_u64().unwrap();
                }
            }
            Dialect::Responses => {
                if e["type"] == "response.output_text.delta" {
                    a.text.push_str(e["delta"].as_str().unwrap());
                    a.deltas += 1;
                }
                if e["type"] == "response.output_text.done" {
                    assert_eq!(
                        e["text"].as_str().unwrap(),
                        a.text,
                        "done repeats the deltas"
                    );
                }
                if e["type"] == "response.output_item.added" && e["item"]["type"] == "function_call"
                {
                    a.calls.push(e["item"]["name"].as_str().unwrap().into());
                }
                if e["type"] == "response.completed" {
                    a.output_tokens = e["response"]["usage"]["output_tokens"].as_u64().unwrap();
                }
            }
            Dialect::Gemini => {
                let before = a.text.len();
                gemini_parts(e, &mut a);
                if a.text.len() > before {
                    a.deltas += 1;
                }
                if let Some(n) = e["usageMetadata"]["candidatesTokenCount"].as_u64() {
                    a.output_tokens = n;
                }
            }
        }
    }
    a
}

fn gemini_parts(chunk: &Value, a: &mut Answer) {
    for part in chunk["candidates"][0]["content"]["parts"]
        .as_array()
        .unwrap()
    {
        if let Some(t) = part["text"].as_str() {
            a.text.push_str(t);
        } else {
            a.calls
                .push(part["functionCall"]["name"].as_str().unwrap().into());
        }
    }
}

#[tokio::test]
async fn a_schema_gets_matching_json_in_each_dialect() {
    let config = MockConfig {
        chunks: 6,
        ..MockConfig::default()
    };
    let mock = MockUpstream::start(config.clone()).await.unwrap();
    for dialect in DIALECTS {
        for stream in [false, true] {
            let case = format!("{dialect:?} stream={stream}");
            let format = schema_format(dialect, &router_schema());
            let (path, body) = request(dialect, stream, Some(format), json!({}));
            let a = ask(&mock, dialect, &path, &body).await;
            let v: Value = serde_json::from_str(&a.text)
                .unwrap_or_else(|e| panic!("{case}: not JSON ({e}): {:?}", a.text));
            assert_eq!(
                v["complexity_reasoning"], "mock complexity_reasoning",
                "{case}"
            );
            assert_eq!(v["complexity_score"], 1, "{case}");
            assert!(v["complexity_score"].is_i64(), "{case}");
            assert_eq!(v.as_object().unwrap().len(), 2, "{case}");
            assert_eq!(a.text, ROUTER_ANSWER, "{case}: the schema's order");
            assert!(a.calls.is_empty(), "{case}");
            // The usual delivery: the mock's number of deltas, one output token each.
            let deltas = if stream { config.chunks } else { 1 };
            assert_eq!(a.deltas, deltas, "{case}");
            assert_eq!(a.output_tokens, config.chunks as u64, "{case}");
        }
    }
    mock.shutdown().await;
}

#[tokio::test]
async fn every_schema_type_is_answered() {
    let schema = json!({"type": "object", "properties": {
        "name": {"type": "string"},
        "level": {"type": "string", "enum": ["low", "high"]},
        "score": {"type": "integer", "minimum": 5},
        "ratio": {"type": "number"},
        "ok": {"type": "boolean"},
        "tags": {"type": "array", "items": {"type": "string"}},
        "inner": {"type": "object", "properties": {"depth": {"type": ["integer", "null"]}}},
        "nothing": {"type": "null"}},
        "required": ["name"], "additionalProperties": false});
    let mock = MockUpstream::start(MockConfig::default()).await.unwrap();
    for dialect in DIALECTS {
        for stream in [false, true] {
            let case = format!("{dialect:?} stream={stream}");
            let (path, body) = request(
                dialect,
                stream,
                Some(schema_format(dialect, &schema)),
                json!({}),
            );
            let a = ask(&mock, dialect, &path, &body).await;
            let v: Value = serde_json::from_str(&a.text).unwrap();
            assert_eq!(
                v,
                json!({"name": "mock name", "level": "low", "score": 5, "ratio": 1.0, "ok": true,
                    "tags": ["mock tags"], "inner": {"depth": 1}, "nothing": null}),
                "{case}"
            );
        }
    }
    mock.shutdown().await;
}

#[tokio::test]
async fn a_bare_json_object_request_gets_a_json_object() {
    let mock = MockUpstream::start(MockConfig::default()).await.unwrap();
    let cases = [
        (Dialect::Chat, json!({"type": "json_object"})),
        (
            Dialect::Responses,
            json!({"format": {"type": "json_object"}}),
        ),
        (
            Dialect::Gemini,
            json!({"responseMimeType": "application/json"}),
        ),
    ];
    for (dialect, format) in cases {
        for stream in [false, true] {
            let case = format!("{dialect:?} stream={stream}");
            let (path, body) = request(dialect, stream, Some(format.clone()), json!({}));
            let a = ask(&mock, dialect, &path, &body).await;
            let v: Value = serde_json::from_str(&a.text).unwrap_or_else(|e| panic!("{case}: {e}"));
            assert!(v.is_object(), "{case}: {v}");
        }
    }
    mock.shutdown().await;
}

#[tokio::test]
async fn without_a_json_format_the_answer_stays_prose_and_cached_prose_is_not_served() {
    let config = MockConfig::default();
    let mock = MockUpstream::start(config.clone()).await.unwrap();
    let plain_formats = |dialect| match dialect {
        Dialect::Chat => Some(json!({"type": "text"})),
        Dialect::Messages => Some(json!({"effort": "low"})),
        Dialect::Responses => Some(json!({"format": {"type": "text"}})),
        Dialect::Gemini => Some(json!({"responseMimeType": "text/plain", "temperature": 1})),
    };
    for dialect in DIALECTS {
        for stream in [false, true] {
            let case = format!("{dialect:?} stream={stream}");
            // Prose first: it fills the cache for this shape and model.
            for format in [None, plain_formats(dialect)] {
                let (path, body) = request(dialect, stream, format, json!({}));
                let a = ask(&mock, dialect, &path, &body).await;
                assert_eq!(a.text, expected_text(&config), "{case}");
            }
            // Same shape, same model: the schema is answered, not the cached prose.
            let format = schema_format(dialect, &router_schema());
            let (path, body) = request(dialect, stream, Some(format), json!({}));
            assert_eq!(
                ask(&mock, dialect, &path, &body).await.text,
                ROUTER_ANSWER,
                "{case}"
            );
            // And the prose is still prose afterwards.
            let (path, body) = request(dialect, stream, None, json!({}));
            assert_eq!(
                ask(&mock, dialect, &path, &body).await.text,
                expected_text(&config),
                "{case}"
            );
        }
    }
    mock.shutdown().await;
}

#[tokio::test]
async fn tool_calls_and_tool_results_keep_precedence_over_a_schema() {
    let mock = MockUpstream::start(MockConfig::default()).await.unwrap();
    let schema = router_schema();
    let chat_tools = json!([{"type": "function", "function": {"name": "Read",
        "parameters": {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}}}]);
    let gemini_tools = json!([{"functionDeclarations": [{"name": "Read",
        "parameters": {"type": "OBJECT", "properties": {"path": {"type": "STRING"}}, "required": ["path"]}}]}]);
    for (dialect, tools) in [(Dialect::Chat, chat_tools), (Dialect::Gemini, gemini_tools)] {
        for stream in [false, true] {
            let case = format!("{dialect:?} stream={stream}");
            let format = || Some(schema_format(dialect, &schema));
            // Tools offered, no directive: the first tool is called.
            let (path, body) = request(dialect, stream, format(), json!({"tools": tools}));
            let a = ask(&mock, dialect, &path, &body).await;
            assert_eq!(a.calls, vec!["Read".to_owned()], "{case}");
            assert_eq!(a.text, "", "{case}");

            // `[mock: text]`: the ordinary answer, which for a schema is its JSON.
            let turn = match dialect {
                Dialect::Chat => json!({"messages": [{"role": "user", "content": "[mock: text]"}]}),
                _ => json!({"contents": [{"role": "user", "parts": [{"text": "[mock: text]"}]}]}),
            };
            let mut extra = turn;
            extra["tools"] = tools.clone();
            let (path, body) = request(dialect, stream, format(), extra);
            let a = ask(&mock, dialect, &path, &body).await;
            assert_eq!(a.text, ROUTER_ANSWER, "{case}");
            assert!(a.calls.is_empty(), "{case}");

            // Tool results: quoted, as without a schema.
            let turn = match dialect {
                Dialect::Chat => json!({"messages": [{"role": "user", "content": "hi"},
                    {"role": "assistant", "tool_calls": []},
                    {"role": "tool", "tool_call_id": "a", "content": "marker 42"}]}),
                // Signed: Gemini 3 refuses an unsigned call (the mock too, `refusals`).
                _ => json!({"contents": [{"role": "user", "parts": [{"text": "hi"}]},
                    {"role": "model", "parts": [{"functionCall": {"name": "Read", "args": {}},
                        "thoughtSignature": "c2ln"}]},
                    {"role": "user", "parts": [{"functionResponse": {"name": "Read", "response": {"output": "marker 42"}}}]}]}),
            };
            let mut extra = turn;
            extra["tools"] = tools.clone();
            let (path, body) = request(dialect, stream, format(), extra);
            let a = ask(&mock, dialect, &path, &body).await;
            assert!(a.text.starts_with(TOOL_RESULT_PREFIX), "{case}: {}", a.text);
            assert!(a.text.contains("marker 42"), "{case}");
        }
    }
    // Gemini with only a search tool: nothing to call, so the ordinary answer: the JSON.
    let (path, body) = request(
        Dialect::Gemini,
        false,
        Some(schema_format(Dialect::Gemini, &schema)),
        json!({"tools": [{"googleSearch": {}}]}),
    );
    assert_eq!(
        ask(&mock, Dialect::Gemini, &path, &body).await.text,
        ROUTER_ANSWER
    );
    mock.shutdown().await;
}

#[tokio::test]
async fn gemini_schema_variants_and_json_array_streams() {
    let mock = MockUpstream::start(MockConfig::default()).await.unwrap();
    let schema = router_schema();
    let lower = json!({"type": "object", "properties": {
        "complexity_reasoning": {"type": "string"}, "complexity_score": {"type": "integer"}}});
    let configs = [
        json!({"generationConfig": {"responseMimeType": "application/json", "responseSchema": schema}}),
        json!({"generation_config": {"response_mime_type": "application/json", "response_json_schema": schema}}),
        json!({"generationConfig": {"responseMimeType": "application/json", "responseJsonSchema": lower}}),
    ];
    for extra in configs {
        let (path, body) = request(Dialect::Gemini, false, None, extra.clone());
        assert_eq!(
            ask(&mock, Dialect::Gemini, &path, &body).await.text,
            ROUTER_ANSWER,
            "{extra}"
        );
    }
    // `streamGenerateContent` without `alt=sse`: one JSON array of chunks.
    let (_, body) = request(
        Dialect::Gemini,
        true,
        Some(schema_format(Dialect::Gemini, &schema)),
        json!({}),
    );
    let path = "/v1beta/models/gemini-3.5-flash-lite:streamGenerateContent";
    let (status, _, bytes) = post(&mock, path, &body).await;
    assert_eq!(status, StatusCode::OK);
    let chunks: Value = serde_json::from_slice(&bytes).unwrap();
    let mut a = Answer {
        text: String::new(),
        deltas: 0,
        output_tokens: 0,
        calls: Vec::new(),
    };
    for chunk in chunks.as_array().unwrap() {
        gemini_parts(chunk, &mut a);
    }
    assert_eq!(a.text, ROUTER_ANSWER);
    let last = chunks.as_array().unwrap().last().unwrap();
    assert_eq!(last["usageMetadata"]["promptTokenCount"], INPUT_TOKENS);
    mock.shutdown().await;
}
