//! The mock's Gemini API over real sockets: `generateContent`, `streamGenerateContent` (SSE
//! with `alt=sse`, a JSON array without), `countTokens`, on `v1beta` and `v1`; tool calls
//! with their `thoughtSignature`, tool results, directives, Google's error envelope, cached
//! tokens, recording, fragments and stalls.

use std::time::Duration;

use bytes::Bytes;
use http::{HeaderMap, Method, Request, StatusCode};
use http_body_util::{BodyExt, Full};
use serde_json::{json, Value};
use trainer::mock::{
    expected_text, expected_usage, gemini_thought_signature, MockConfig, MockUpstream,
    GEMINI_CALL_ID, INPUT_TOKENS, TOOL_RESULT_PREFIX,
};

const MODEL: &str = "gemini-2.5-flash";
const HELLO: &str = r#"{"contents":[{"role":"user","parts":[{"text":"Say hello."}]}]}"#;

struct Reply {
    status: StatusCode,
    headers: HeaderMap,
    frames: Vec<Bytes>,
    body: Bytes,
}

impl Reply {
    fn json(&self) -> Value {
        serde_json::from_slice(&self.body).expect("JSON body")
    }

    fn header(&self, name: &str) -> &str {
        self.headers
            .get(name)
            .unwrap_or_else(|| panic!("missing header {name}"))
            .to_str()
            .unwrap()
    }

    /// The chunks of an SSE stream: `data:` lines only, each event ending in `\r\n\r\n`.
    fn chunks(&self) -> Vec<Value> {
        assert_eq!(self.status, StatusCode::OK, "{:?}", self.body);
        assert_eq!(self.header("content-type"), "text/event-stream");
        let text = std::str::from_utf8(&self.body).expect("UTF-8 stream");
        assert!(
            text.ends_with("\r\n\r\n"),
            "stream ends mid-event: {text:?}"
        );
        text.split_terminator("\r\n\r\n")
            .map(|event| {
                let data = event
                    .strip_prefix("data: ")
                    .unwrap_or_else(|| panic!("not a data line: {event:?}"));
                assert!(!data.contains('\n'), "one line per event: {event:?}");
                assert_ne!(data, "[DONE]");
                serde_json::from_str(data).expect("JSON chunk")
            })
            .collect()
    }
}

fn path(version: &str, model: &str, method: &str) -> String {
    format!("/{version}/models/{model}:{method}")
}

async fn post(mock: &MockUpstream, path: &str, body: &str) -> Reply {
    let stream = tokio::net::TcpStream::connect(mock.addr()).await.unwrap();
    let mut sender = trainer::http1::handshake(stream).await.unwrap();
    let req = Request::builder()
        .method(Method::POST)
        .uri(path)
        .header("host", "mock")
        .header("content-type", "application/json")
        .header("x-goog-api-key", "AIza-test")
        .body(Full::new(Bytes::copy_from_slice(body.as_bytes())))
        .unwrap();
    let (parts, mut body) = sender.send_request(req).await.unwrap().into_parts();
    let mut frames = Vec::new();
    while let Some(frame) = body.frame().await {
        if let Ok(data) = frame.unwrap().into_data() {
            frames.push(data);
        }
    }
    Reply {
        status: parts.status,
        headers: parts.headers,
        body: frames.concat().into(),
        frames,
    }
}

async fn start(config: MockConfig) -> MockUpstream {
    MockUpstream::start(config).await.unwrap()
}

/// The text of a candidate's parts and its function calls (name, args, signature).
fn parts(chunk: &Value) -> (String, Vec<(String, Value, String)>) {
    let mut text = String::new();
    let mut calls = Vec::new();
    let content = &chunk["candidates"][0]["content"];
    assert_eq!(content["role"], "model", "{chunk}");
    for part in content["parts"].as_array().unwrap() {
        if let Some(t) = part["text"].as_str() {
            text.push_str(t);
        } else {
            let call = &part["functionCall"];
            assert_eq!(call["id"], GEMINI_CALL_ID, "{part}");
            calls.push((
                call["name"].as_str().unwrap().to_owned(),
                call["args"].clone(),
                part["thoughtSignature"].as_str().unwrap().to_owned(),
            ));
        }
    }
    (text, calls)
}

/// The answer of a reply, streamed (SSE) or not: its text and its calls.
fn answer(reply: &Reply) -> (String, Vec<(String, Value, String)>) {
    assert_eq!(reply.status, StatusCode::OK, "{:?}", reply.body);
    let chunks = if reply.header("content-type") == "text/event-stream" {
        reply.chunks()
    } else {
        vec![reply.json()]
    };
    let mut text = String::new();
    let mut calls = Vec::new();
    for (i, chunk) in chunks.iter().enumerate() {
        let last = i + 1 == chunks.len();
        let finish = &chunk["candidates"][0]["finishReason"];
        assert_eq!(finish.as_str(), last.then_some("STOP"), "{chunk}");
        let (t, c) = parts(chunk);
        text.push_str(&t);
        calls.extend(c);
    }
    (text, calls)
}

#[tokio::test]
async fn generate_content_on_v1beta_and_v1() {
    let config = MockConfig::default();
    let mock = start(config.clone()).await;
    let beta = post(&mock, &path("v1beta", MODEL, "generateContent"), HELLO).await;
    assert_eq!(beta.status, StatusCode::OK);
    assert_eq!(
        beta.header("content-type"),
        "application/json; charset=UTF-8"
    );
    assert!(!beta.headers.contains_key("x-request-id"));
    assert!(!beta.headers.contains_key("request-id"));
    let v = beta.json();
    let candidate = &v["candidates"][0];
    assert_eq!(v["candidates"].as_array().unwrap().len(), 1);
    assert_eq!(candidate["index"], 0);
    assert_eq!(candidate["finishReason"], "STOP");
    assert_eq!(candidate["content"]["role"], "model");
    assert_eq!(
        candidate["content"]["parts"],
        json!([{"text": expected_text(&config)}])
    );
    let (input, output) = expected_usage(&config);
    let usage = &v["usageMetadata"];
    assert_eq!(usage["promptTokenCount"], input);
    assert_eq!(usage["candidatesTokenCount"], output);
    assert_eq!(usage["totalTokenCount"], input + output);
    assert!(usage.get("cachedContentTokenCount").is_none());
    assert!(usage.get("thoughtsTokenCount").is_none());
    assert_eq!(v["modelVersion"], MODEL);
    assert!(v["responseId"].is_string());
    assert!(v.get("model").is_none() && v.get("usage").is_none());
    let v1 = post(&mock, &path("v1", MODEL, "generateContent"), HELLO).await;
    assert_eq!(v1.body, beta.body, "v1 answers as v1beta");
    // The model of the path, escaped.
    let odd = post(&mock, &path("v1beta", "a%22b", "generateContent"), HELLO).await;
    assert_eq!(odd.json()["modelVersion"], "a%22b");
    mock.shutdown().await;
}

#[tokio::test]
async fn stream_generate_content_is_sse_chunks_ending_with_finish_and_usage() {
    let config = MockConfig {
        chunks: 5,
        ..MockConfig::default()
    };
    let mock = start(config.clone()).await;
    for version in ["v1beta", "v1"] {
        let uri = format!("{}?alt=sse", path(version, MODEL, "streamGenerateContent"));
        let reply = post(&mock, &uri, HELLO).await;
        assert_eq!(reply.header("cache-control"), "no-cache");
        let chunks = reply.chunks();
        assert_eq!(chunks.len(), config.chunks, "one chunk per text fragment");
        let (input, output) = expected_usage(&config);
        for (i, chunk) in chunks.iter().enumerate() {
            assert_eq!(chunk["modelVersion"], MODEL);
            let usage = &chunk["usageMetadata"];
            assert_eq!(usage["promptTokenCount"], input);
            if i + 1 < chunks.len() {
                assert!(chunk["candidates"][0].get("finishReason").is_none());
                assert!(usage.get("candidatesTokenCount").is_none(), "{chunk}");
            } else {
                assert_eq!(usage["candidatesTokenCount"], output);
                assert_eq!(usage["totalTokenCount"], input + output);
            }
        }
        assert_eq!(answer(&reply), (expected_text(&config), vec![]));
    }
    mock.shutdown().await;
}

#[tokio::test]
async fn stream_without_alt_sse_is_one_json_array_in_pieces() {
    let config = MockConfig::default();
    let mock = start(MockConfig {
        chunk_delay: Duration::from_millis(1),
        ..config.clone()
    })
    .await;
    let uri = path("v1beta", MODEL, "streamGenerateContent");
    let array = post(&mock, &uri, HELLO).await;
    assert_eq!(array.status, StatusCode::OK);
    assert_eq!(
        array.header("content-type"),
        "application/json; charset=UTF-8"
    );
    assert!(array.frames.len() > config.chunks, "written in pieces");
    let sse = post(&mock, &format!("{uri}?alt=sse"), HELLO).await;
    assert_eq!(array.json(), Value::Array(sse.chunks()));
    mock.shutdown().await;
}

const TOOLS: &str = r#""tools":[{"functionDeclarations":[
    {"name":"read_file","description":"Reads a file","parameters":{"type":"OBJECT",
     "properties":{"absolute_path":{"type":"STRING"},"limit":{"type":"NUMBER"}},"required":["absolute_path"]}},
    {"name":"glob","parametersJsonSchema":{"type":"object","properties":{"pattern":{"type":"string"}}}}]}]"#;

fn with_tools(contents: &str) -> String {
    format!(r#"{{"contents":{contents},{TOOLS},"generationConfig":{{"topK":64,"temperature":0}}}}"#)
}

#[tokio::test]
async fn a_tool_call_carries_the_thought_signature_and_finishes_with_stop() {
    let mock = start(MockConfig::default()).await;
    let body = with_tools(r#"[{"role":"user","parts":[{"text":"Read it."}]}]"#);
    let signature = gemini_thought_signature("read_file");
    assert_eq!(signature, "bW9jay1zaWduYXR1cmUtcmVhZF9maWxl");
    for uri in [
        path("v1beta", MODEL, "generateContent"),
        format!("{}?alt=sse", path("v1", MODEL, "streamGenerateContent")),
    ] {
        let reply = post(&mock, &uri, &body).await;
        let (text, calls) = answer(&reply);
        assert_eq!(text, "", "{uri}");
        assert_eq!(
            calls,
            vec![(
                "read_file".to_owned(),
                json!({"absolute_path": "mock absolute_path"}),
                signature.clone()
            )],
            "{uri}"
        );
        let last = if reply.header("content-type") == "text/event-stream" {
            let chunks = reply.chunks();
            assert_eq!(chunks.len(), 1, "the call comes whole, in one chunk");
            chunks[0].clone()
        } else {
            reply.json()
        };
        assert_eq!(last["usageMetadata"]["candidatesTokenCount"], 2);
        assert_eq!(last["usageMetadata"]["totalTokenCount"], INPUT_TOKENS + 2);
    }
    // Stateless: the same request gets the same bytes.
    let uri = path("v1beta", MODEL, "generateContent");
    assert_eq!(
        post(&mock, &uri, &body).await.body,
        post(&mock, &uri, &body).await.body
    );
    mock.shutdown().await;
}

#[tokio::test]
async fn function_responses_are_quoted_and_directives_choose_the_answer() {
    let config = MockConfig::default();
    let mock = start(config.clone()).await;
    let signature = gemini_thought_signature("read_file");
    let results = with_tools(&format!(
        r#"[{{"role":"user","parts":[{{"text":"Read it."}}]}},
        {{"role":"model","parts":[{{"functionCall":{{"id":"c1","name":"read_file","args":{{"absolute_path":"/w/m"}}}},"thoughtSignature":"{signature}"}}]}},
        {{"role":"user","parts":[{{"functionResponse":{{"id":"c1","name":"read_file","response":{{"output":"marker 42"}}}}}},
            {{"functionResponse":{{"name":"glob","response":{{"error":"no match"}}}}}}]}}]"#
    ));
    let expected =
        format!(r#"{TOOL_RESULT_PREFIX}{{"output":"marker 42"}}; {{"error":"no match"}}"#);
    for uri in [
        path("v1beta", MODEL, "generateContent"),
        format!("{}?alt=sse", path("v1beta", MODEL, "streamGenerateContent")),
    ] {
        let reply = post(&mock, &uri, &results).await;
        assert_eq!(answer(&reply), (expected.clone(), vec![]), "{uri}");

        let text = with_tools(
            r#"[{"role":"user","parts":[{"text":"<context>"},{"text":"Hello [mock: text]"}]}]"#,
        );
        let reply = post(&mock, &uri, &text).await;
        assert_eq!(answer(&reply), (expected_text(&config), vec![]), "{uri}");

        let call = with_tools(
            r#"[{"role":"user","parts":[{"text":"[mock: call glob {\"pattern\":\"**/*.rs\"}]"}]}]"#,
        );
        let (_, calls) = answer(&post(&mock, &uri, &call).await);
        assert_eq!(
            calls,
            vec![(
                "glob".to_owned(),
                json!({"pattern": "**/*.rs"}),
                gemini_thought_signature("glob")
            )],
            "{uri}"
        );

        let nope = with_tools(r#"[{"role":"user","parts":[{"text":"[mock: call Nope]"}]}]"#);
        let reply = post(&mock, &uri, &nope).await;
        let said = ("mock: tool Nope is not offered".to_owned(), vec![]);
        assert_eq!(answer(&reply), said, "{uri}");
    }
    mock.shutdown().await;
}

#[tokio::test]
async fn errors_are_in_googles_envelope() {
    let mock = start(MockConfig::default()).await;
    for (status, name, method) in [
        (400, "INVALID_ARGUMENT", "generateContent"),
        (401, "UNAUTHENTICATED", "generateContent"),
        (403, "PERMISSION_DENIED", "countTokens"),
        (404, "NOT_FOUND", "generateContent"),
        (429, "RESOURCE_EXHAUSTED", "streamGenerateContent?alt=sse"),
        (500, "INTERNAL", "generateContent"),
        (503, "UNAVAILABLE", "streamGenerateContent?alt=sse"),
        (504, "DEADLINE_EXCEEDED", "generateContent"),
    ] {
        let uri = path("v1beta", &format!("mock-error-{status}"), method);
        let reply = post(&mock, &uri, HELLO).await;
        assert_eq!(reply.status.as_u16(), status, "{uri}");
        assert_eq!(
            reply.header("content-type"),
            "application/json; charset=UTF-8"
        );
        let v = reply.json();
        assert_eq!(v["error"]["code"], status, "{uri}");
        assert_eq!(v["error"]["status"], name, "{uri}");
        assert!(v["error"]["message"].is_string());
        if status == 429 {
            assert_eq!(reply.header("retry-after"), "1");
            assert_eq!(
                v["error"]["details"][0]["@type"],
                "type.googleapis.com/google.rpc.RetryInfo"
            );
        }
    }
    // Bodies Google refuses: a field it does not know, no contents, not JSON.
    for body in [
        r#"{"contents":[],"stream":true}"#,
        r#"{"contents":[],"model":"m","messages":[]}"#,
        r#"{"generationConfig":{}}"#,
        "{not json",
    ] {
        let reply = post(&mock, &path("v1beta", MODEL, "generateContent"), body).await;
        assert_eq!(reply.status, StatusCode::BAD_REQUEST, "{body}");
        assert_eq!(
            reply.json()["error"]["status"],
            "INVALID_ARGUMENT",
            "{body}"
        );
    }
    mock.shutdown().await;

    let failing = start(MockConfig {
        fail_status: Some(503),
        ..MockConfig::default()
    })
    .await;
    for method in [
        "generateContent",
        "streamGenerateContent?alt=sse",
        "countTokens",
    ] {
        let reply = post(&failing, &path("v1", MODEL, method), HELLO).await;
        assert_eq!(reply.status.as_u16(), 503, "{method}");
        assert_eq!(reply.json()["error"]["status"], "UNAVAILABLE", "{method}");
    }
    failing.shutdown().await;
}

#[tokio::test]
async fn count_tokens_answers_the_input_count() {
    let mock = start(MockConfig::default()).await;
    for version in ["v1beta", "v1"] {
        for body in [HELLO, r#"{"generateContentRequest":{"contents":[]}}"#] {
            let reply = post(&mock, &path(version, MODEL, "countTokens"), body).await;
            assert_eq!(reply.status, StatusCode::OK);
            assert_eq!(reply.json()["totalTokens"], INPUT_TOKENS);
        }
    }
    let bad = post(&mock, &path("v1beta", MODEL, "countTokens"), "{}").await;
    assert_eq!(bad.status, StatusCode::BAD_REQUEST);
    mock.shutdown().await;
}

#[tokio::test]
async fn cached_tokens_are_part_of_the_prompt_count() {
    let mock = start(MockConfig {
        cached_tokens: 5,
        ..MockConfig::default()
    })
    .await;
    let v = post(&mock, &path("v1beta", MODEL, "generateContent"), HELLO)
        .await
        .json();
    assert_eq!(v["usageMetadata"]["promptTokenCount"], INPUT_TOKENS);
    assert_eq!(v["usageMetadata"]["cachedContentTokenCount"], 5);
    let uri = format!("{}?alt=sse", path("v1beta", MODEL, "streamGenerateContent"));
    let chunks = post(&mock, &uri, HELLO).await.chunks();
    assert_eq!(
        chunks.last().unwrap()["usageMetadata"]["cachedContentTokenCount"],
        5
    );
    mock.shutdown().await;
}

#[tokio::test]
async fn recording_keeps_path_query_key_and_body() {
    let dir = std::env::temp_dir().join(format!("trainer-mock-gemini-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let mock = start(MockConfig {
        record: true,
        record_dir: Some(dir.clone()),
        ..MockConfig::default()
    })
    .await;
    let uri = format!("{}?alt=sse", path("v1beta", MODEL, "streamGenerateContent"));
    post(&mock, &uri, HELLO).await;
    let recorded = mock.recorded();
    assert_eq!(recorded.len(), 1);
    let r = &recorded[0];
    assert_eq!(r.path, path("v1beta", MODEL, "streamGenerateContent"));
    assert_eq!(r.query.as_deref(), Some("alt=sse"));
    assert_eq!(r.headers["x-goog-api-key"], "AIza-test");
    assert_eq!(r.body, HELLO.as_bytes());
    mock.shutdown().await;
    assert_eq!(
        std::fs::read_to_string(dir.join("001.json")).unwrap(),
        HELLO
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

#[tokio::test]
async fn fragments_delays_and_stalls_apply_to_gemini_streams() {
    let uri = format!("{}?alt=sse", path("v1beta", MODEL, "streamGenerateContent"));
    let whole = start(MockConfig::default()).await;
    let reference = post(&whole, &uri, HELLO).await;
    whole.shutdown().await;
    let fragmented = start(MockConfig {
        write_fragment: Some(1),
        first_byte_delay: Duration::from_millis(2),
        chunk_delay: Duration::from_millis(1),
        ..MockConfig::default()
    })
    .await;
    let split = post(&fragmented, &uri, HELLO).await;
    assert_eq!(split.body, reference.body);
    assert_eq!(split.frames.len(), split.body.len(), "one frame per byte");
    assert!(split.frames.iter().any(|f| std::str::from_utf8(f).is_err()));
    fragmented.shutdown().await;

    let stalled = start(MockConfig {
        stall_after_events: Some(2),
        ..MockConfig::default()
    })
    .await;
    let stream = tokio::net::TcpStream::connect(stalled.addr())
        .await
        .unwrap();
    let mut sender = trainer::http1::handshake(stream).await.unwrap();
    let req = Request::post(uri.as_str())
        .header("host", "mock")
        .body(Full::new(Bytes::from_static(HELLO.as_bytes())))
        .unwrap();
    let mut body = sender.send_request(req).await.unwrap().into_body();
    let mut got = Vec::new();
    while got.windows(4).filter(|w| w == b"\r\n\r\n").count() < 2 {
        let frame = body.frame().await.unwrap().unwrap();
        got.extend_from_slice(&frame.into_data().unwrap());
    }
    let more = tokio::time::timeout(Duration::from_millis(100), body.frame()).await;
    assert!(more.is_err(), "the stream stalls after two events");
    stalled.shutdown().await;
}

#[tokio::test]
async fn other_gemini_paths_are_not_found() {
    let mock = start(MockConfig::default()).await;
    for uri in [
        "/v1beta/models/m:embedContent",
        "/v1beta/models",
        "/v2/models/m:generateContent",
        "/v1beta/models/:generateContent",
    ] {
        let reply = post(&mock, uri, HELLO).await;
        assert_eq!(reply.status, StatusCode::NOT_FOUND, "{uri}");
    }
    mock.shutdown().await;
}
