//! The mock upstream over real sockets: exact shapes and lifecycles per dialect, fragments,
//! failure modes, recording, shutdown and the `trainer mock` process.

use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::process::{Command, Stdio};
use std::time::Duration;

use bytes::Bytes;
use http::{HeaderMap, Method, Request, StatusCode};
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::client::conn::http1::SendRequest;
use serde_json::Value;
use trainer::mock::{
    expected_text, expected_usage, MockConfig, MockUpstream, INPUT_TOKENS, TOOL_RESULT_PREFIX,
};

const CHAT: &str = "/v1/chat/completions";
const MESSAGES: &str = "/v1/messages";
const RESPONSES: &str = "/v1/responses";

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

    fn sse(&self) -> Vec<Sse> {
        sse_frames(&self.body)
    }
}

#[derive(Debug)]
struct Sse {
    event: Option<String>,
    data: String,
}

impl Sse {
    fn json(&self) -> Value {
        serde_json::from_str(&self.data).expect("JSON data")
    }
}

/// Splits a whole SSE body at blank lines; every frame must end with one.
fn sse_frames(body: &[u8]) -> Vec<Sse> {
    let text = std::str::from_utf8(body).expect("UTF-8 stream");
    assert!(text.ends_with("\n\n"), "stream ends mid-frame: {text:?}");
    text.split_terminator("\n\n")
        .map(|frame| {
            let mut sse = Sse {
                event: None,
                data: String::new(),
            };
            for line in frame.lines() {
                if let Some(v) = line.strip_prefix("event: ") {
                    sse.event = Some(v.to_owned());
                } else if let Some(v) = line.strip_prefix("data: ") {
                    sse.data = v.to_owned();
                } else {
                    panic!("unexpected SSE line {line:?}");
                }
            }
            sse
        })
        .collect()
}

async fn connect(addr: SocketAddr) -> SendRequest<Full<Bytes>> {
    let stream = tokio::net::TcpStream::connect(addr).await.unwrap();
    trainer::http1::handshake(stream).await.unwrap()
}

async fn send(
    sender: &mut SendRequest<Full<Bytes>>,
    method: Method,
    path: &str,
    body: &str,
) -> hyper::Response<Incoming> {
    sender.ready().await.unwrap();
    let req = Request::builder()
        .method(method)
        .uri(path)
        .header("host", "mock")
        .header("content-type", "application/json")
        .header("authorization", "Bearer sk-test")
        .body(Full::new(Bytes::copy_from_slice(body.as_bytes())))
        .unwrap();
    sender.send_request(req).await.unwrap()
}

async fn read_all(response: hyper::Response<Incoming>) -> Reply {
    let (parts, mut body) = response.into_parts();
    let mut frames = Vec::new();
    while let Some(frame) = body.frame().await {
        if let Ok(data) = frame.unwrap().into_data() {
            frames.push(data);
        }
    }
    let body = frames.concat().into();
    Reply {
        status: parts.status,
        headers: parts.headers,
        frames,
        body,
    }
}

async fn post(mock: &MockUpstream, path: &str, body: &str) -> Reply {
    let mut sender = connect(mock.addr()).await;
    read_all(send(&mut sender, Method::POST, path, body).await).await
}

fn header<'a>(reply: &'a Reply, name: &str) -> &'a str {
    reply
        .headers
        .get(name)
        .unwrap_or_else(|| panic!("missing header {name}"))
        .to_str()
        .unwrap()
}

async fn start(config: MockConfig) -> MockUpstream {
    MockUpstream::start(config).await.unwrap()
}

#[tokio::test]
async fn chat_non_streaming_shape_and_usage() {
    let config = MockConfig::default();
    let mock = start(config.clone()).await;
    let reply = post(&mock, CHAT, r#"{"model":"gpt-4o-mini","messages":[]}"#).await;
    assert_eq!(reply.status, StatusCode::OK);
    assert_eq!(header(&reply, "content-type"), "application/json");
    assert!(header(&reply, "x-request-id").starts_with("req_"));
    assert_eq!(header(&reply, "x-ratelimit-remaining-requests"), "9999");
    let v = reply.json();
    assert_eq!(v["object"], "chat.completion");
    assert_eq!(v["model"], "gpt-4o-mini");
    assert_eq!(v["choices"].as_array().unwrap().len(), 1);
    assert_eq!(v["choices"][0]["index"], 0);
    assert_eq!(v["choices"][0]["message"]["role"], "assistant");
    assert_eq!(
        v["choices"][0]["message"]["content"],
        expected_text(&config)
    );
    assert_eq!(v["choices"][0]["finish_reason"], "stop");
    let (input, output) = expected_usage(&config);
    assert_eq!(v["usage"]["prompt_tokens"], input);
    assert_eq!(v["usage"]["completion_tokens"], output);
    assert_eq!(v["usage"]["total_tokens"], input + output);
    mock.shutdown().await;
}

#[tokio::test]
async fn chat_stream_without_usage_option_has_no_usage() {
    let config = MockConfig::default();
    let mock = start(config.clone()).await;
    let reply = post(&mock, CHAT, r#"{"model":"m","stream":true}"#).await;
    assert_eq!(header(&reply, "content-type"), "text/event-stream");
    let frames = reply.sse();
    assert_eq!(frames.len(), config.chunks + 3);
    assert_eq!(frames.last().unwrap().data, "[DONE]");
    let chunks: Vec<Value> = frames[..frames.len() - 1]
        .iter()
        .map(|f| {
            assert!(f.event.is_none());
            f.json()
        })
        .collect();
    for c in &chunks {
        assert_eq!(c["object"], "chat.completion.chunk");
        assert_eq!(c["model"], "m");
        assert!(c.get("usage").is_none(), "usage without include_usage: {c}");
        assert_eq!(c["choices"].as_array().unwrap().len(), 1);
    }
    assert_eq!(chunks[0]["choices"][0]["delta"]["role"], "assistant");
    let text: String = chunks
        .iter()
        .filter_map(|c| c["choices"][0]["delta"]["content"].as_str())
        .collect();
    assert_eq!(text, expected_text(&config));
    let last = chunks.last().unwrap();
    assert_eq!(last["choices"][0]["finish_reason"], "stop");
    assert!(chunks[..chunks.len() - 1]
        .iter()
        .all(|c| c["choices"][0]["finish_reason"].is_null()));
    mock.shutdown().await;
}

#[tokio::test]
async fn chat_stream_with_include_usage_ends_with_usage_chunk() {
    let config = MockConfig {
        chunks: 6,
        ..MockConfig::default()
    };
    let mock = start(config.clone()).await;
    let reply = post(
        &mock,
        CHAT,
        r#"{"model":"m","stream":true,"stream_options":{"include_usage":true}}"#,
    )
    .await;
    let frames = reply.sse();
    assert_eq!(frames.len(), config.chunks + 4);
    assert_eq!(frames.last().unwrap().data, "[DONE]");
    let chunks: Vec<Value> = frames[..frames.len() - 1].iter().map(Sse::json).collect();
    let (usage_chunk, choice_chunks) = chunks.split_last().unwrap();
    for c in choice_chunks {
        assert!(c["usage"].is_null() && c.get("usage").is_some(), "{c}");
        assert_eq!(c["choices"].as_array().unwrap().len(), 1);
    }
    assert_eq!(
        choice_chunks.last().unwrap()["choices"][0]["finish_reason"],
        "stop"
    );
    assert_eq!(usage_chunk["choices"], serde_json::json!([]));
    let (input, output) = expected_usage(&config);
    assert_eq!(usage_chunk["usage"]["prompt_tokens"], input);
    assert_eq!(usage_chunk["usage"]["completion_tokens"], output);
    assert_eq!(usage_chunk["usage"]["total_tokens"], input + output);
    mock.shutdown().await;
}

#[tokio::test]
async fn messages_non_streaming_shape_and_usage() {
    let config = MockConfig::default();
    let mock = start(config.clone()).await;
    let reply = post(
        &mock,
        MESSAGES,
        r#"{"model":"claude-x","max_tokens":64,"messages":[{"role":"user","content":"hi"}]}"#,
    )
    .await;
    assert_eq!(reply.status, StatusCode::OK);
    assert_eq!(header(&reply, "content-type"), "application/json");
    assert!(header(&reply, "request-id").starts_with("req_"));
    assert_eq!(
        header(&reply, "anthropic-ratelimit-requests-remaining"),
        "3999"
    );
    let v = reply.json();
    assert!(v["id"].as_str().unwrap().starts_with("msg_"));
    assert_eq!(v["type"], "message");
    assert_eq!(v["role"], "assistant");
    assert_eq!(v["model"], "claude-x");
    assert_eq!(v["content"][0]["type"], "text");
    assert_eq!(v["content"][0]["text"], expected_text(&config));
    assert_eq!(v["stop_reason"], "end_turn");
    assert!(v["stop_sequence"].is_null());
    let (input, output) = expected_usage(&config);
    assert_eq!(v["usage"]["input_tokens"], input);
    assert_eq!(v["usage"]["output_tokens"], output);
    mock.shutdown().await;
}

#[tokio::test]
async fn messages_stream_lifecycle() {
    let config = MockConfig::default();
    let mock = start(config.clone()).await;
    let reply = post(
        &mock,
        MESSAGES,
        r#"{"model":"claude-x","max_tokens":64,"messages":[],"stream":true}"#,
    )
    .await;
    assert_eq!(header(&reply, "content-type"), "text/event-stream");
    let frames = reply.sse();
    let mut types = Vec::new();
    let mut text = String::new();
    for f in &frames {
        let v = f.json();
        let event = f.event.as_deref().expect("every frame names its event");
        assert_eq!(v["type"], event);
        assert_ne!(f.data, "[DONE]");
        if event == "content_block_delta" {
            assert_eq!(v["delta"]["type"], "text_delta");
            text.push_str(v["delta"]["text"].as_str().unwrap());
        }
        types.push(event.to_owned());
    }
    let mut expected = vec!["message_start", "content_block_start", "ping"];
    expected.extend(std::iter::repeat_n("content_block_delta", config.chunks));
    expected.extend(["content_block_stop", "message_delta", "message_stop"]);
    assert_eq!(types, expected);
    assert_eq!(text, expected_text(&config));
    let (input, output) = expected_usage(&config);
    let start = frames[0].json();
    assert_eq!(start["message"]["model"], "claude-x");
    assert_eq!(start["message"]["usage"]["input_tokens"], input);
    let delta = frames[frames.len() - 2].json();
    assert_eq!(delta["delta"]["stop_reason"], "end_turn");
    assert_eq!(delta["usage"]["output_tokens"], output);
    mock.shutdown().await;
}

#[tokio::test]
async fn responses_non_streaming_shape_and_usage() {
    let config = MockConfig::default();
    let mock = start(config.clone()).await;
    let reply = post(&mock, RESPONSES, r#"{"model":"gpt-r","input":"hi"}"#).await;
    assert_eq!(reply.status, StatusCode::OK);
    assert!(header(&reply, "x-request-id").starts_with("req_"));
    let v = reply.json();
    assert!(v["id"].as_str().unwrap().starts_with("resp_"));
    assert_eq!(v["object"], "response");
    assert_eq!(v["status"], "completed");
    assert_eq!(v["model"], "gpt-r");
    let item = &v["output"][0];
    assert_eq!(item["type"], "message");
    assert_eq!(item["status"], "completed");
    assert_eq!(item["role"], "assistant");
    assert_eq!(item["content"][0]["type"], "output_text");
    assert_eq!(item["content"][0]["text"], expected_text(&config));
    assert_eq!(item["content"][0]["annotations"], serde_json::json!([]));
    let (input, output) = expected_usage(&config);
    assert_eq!(v["usage"]["input_tokens"], input);
    assert_eq!(v["usage"]["output_tokens"], output);
    assert_eq!(v["usage"]["total_tokens"], input + output);
    mock.shutdown().await;
}

#[tokio::test]
async fn responses_stream_lifecycle() {
    let config = MockConfig {
        chunks: 5,
        ..MockConfig::default()
    };
    let mock = start(config.clone()).await;
    let reply = post(
        &mock,
        RESPONSES,
        r#"{"model":"gpt-r","input":"hi","stream":true}"#,
    )
    .await;
    let frames = reply.sse();
    let mut types = Vec::new();
    let mut text = String::new();
    for (seq, f) in frames.iter().enumerate() {
        let v = f.json();
        let event = f.event.as_deref().unwrap();
        assert_eq!(v["type"], event);
        assert_eq!(v["sequence_number"], seq as u64);
        if event == "response.output_text.delta" {
            assert_eq!(v["output_index"], 0);
            assert_eq!(v["content_index"], 0);
            assert!(v["item_id"].is_string());
            text.push_str(v["delta"].as_str().unwrap());
        }
        types.push(event.to_owned());
    }
    let mut expected = vec![
        "response.created",
        "response.in_progress",
        "response.output_item.added",
        "response.content_part.added",
    ];
    expected.extend(std::iter::repeat_n(
        "response.output_text.delta",
        config.chunks,
    ));
    expected.extend([
        "response.output_text.done",
        "response.content_part.done",
        "response.output_item.done",
        "response.completed",
    ]);
    assert_eq!(types, expected);
    assert_eq!(text, expected_text(&config));
    let done = frames[frames.len() - 4].json();
    assert_eq!(done["text"], expected_text(&config));
    let completed = frames.last().unwrap().json();
    let response = &completed["response"];
    assert_eq!(response["status"], "completed");
    assert_eq!(response["model"], "gpt-r");
    assert_eq!(
        response["output"][0]["content"][0]["text"],
        expected_text(&config)
    );
    let (input, output) = expected_usage(&config);
    assert_eq!(response["usage"]["input_tokens"], input);
    assert_eq!(response["usage"]["output_tokens"], output);
    assert_eq!(response["usage"]["total_tokens"], input + output);
    assert!(frames[0].json()["response"]["usage"].is_null());
    mock.shutdown().await;
}

#[tokio::test]
async fn one_byte_fragments_reassemble_to_the_same_bytes() {
    let whole = start(MockConfig::default()).await;
    let fragmented = start(MockConfig {
        write_fragment: Some(1),
        ..MockConfig::default()
    })
    .await;
    let paced = start(MockConfig {
        write_fragment: Some(7),
        chunk_delay: Duration::from_millis(1),
        ..MockConfig::default()
    })
    .await;
    let bodies = [
        (
            CHAT,
            r#"{"model":"m","stream":true,"stream_options":{"include_usage":true}}"#,
        ),
        (
            MESSAGES,
            r#"{"model":"m","max_tokens":8,"messages":[],"stream":true}"#,
        ),
        (RESPONSES, r#"{"model":"m","input":"x","stream":true}"#),
    ];
    for (path, body) in bodies {
        let reference = post(&whole, path, body).await;
        let split = post(&fragmented, path, body).await;
        assert_eq!(split.body, reference.body, "{path}");
        assert_eq!(
            split.frames.len(),
            split.body.len(),
            "{path}: one frame per byte"
        );
        assert!(split.frames.iter().all(|f| f.len() == 1));
        // Multi-byte characters really were cut.
        assert!(split.frames.iter().any(|f| std::str::from_utf8(f).is_err()));
        let slow = post(&paced, path, body).await;
        assert_eq!(slow.body, reference.body, "{path}");
        assert!(slow.frames.iter().all(|f| f.len() <= 7));
    }
    // Non-streamed bodies are never fragmented.
    let full = post(&fragmented, CHAT, r#"{"model":"m"}"#).await;
    assert_eq!(
        full.json()["choices"][0]["message"]["content"],
        "Bonjour café 日本 world"
    );
    for mock in [whole, fragmented, paced] {
        mock.shutdown().await;
    }
}

#[tokio::test]
async fn fail_status_answers_in_each_dialect_envelope() {
    for status in [429u16, 503] {
        let mock = start(MockConfig {
            fail_status: Some(status),
            ..MockConfig::default()
        })
        .await;
        for path in [CHAT, RESPONSES] {
            let reply = post(&mock, path, r#"{"model":"m","stream":true}"#).await;
            assert_eq!(reply.status.as_u16(), status);
            assert_eq!(header(&reply, "content-type"), "application/json");
            assert!(reply.headers.contains_key("x-request-id"));
            let v = reply.json();
            let error = &v["error"];
            assert!(error["message"].is_string());
            assert!(error["type"].is_string());
            assert!(error.get("param").is_some() && error.get("code").is_some());
        }
        let reply = post(&mock, MESSAGES, r#"{"model":"m","stream":true}"#).await;
        assert_eq!(reply.status.as_u16(), status);
        assert!(reply.headers.contains_key("request-id"));
        let v = reply.json();
        assert_eq!(v["type"], "error");
        let kind = if status == 429 {
            "rate_limit_error"
        } else {
            "api_error"
        };
        assert_eq!(v["error"]["type"], kind);
        assert!(v["error"]["message"].is_string());
        if status == 429 {
            assert_eq!(header(&reply, "retry-after"), "1");
        }
        mock.shutdown().await;
    }
}

#[tokio::test]
async fn bad_requests_get_400_in_the_dialect_envelope() {
    let mock = start(MockConfig::default()).await;
    for body in ["{not json", r#"{"messages":[]}"#, r#"{"model":42}"#] {
        let chat = post(&mock, CHAT, body).await;
        assert_eq!(chat.status, StatusCode::BAD_REQUEST);
        assert_eq!(chat.json()["error"]["type"], "invalid_request_error");
        let messages = post(&mock, MESSAGES, body).await;
        assert_eq!(messages.status, StatusCode::BAD_REQUEST);
        assert_eq!(messages.json()["type"], "error");
        assert_eq!(messages.json()["error"]["type"], "invalid_request_error");
        let responses = post(&mock, RESPONSES, body).await;
        assert_eq!(responses.status, StatusCode::BAD_REQUEST);
        assert!(responses.json()["error"]["message"].is_string());
    }
    mock.shutdown().await;
}

#[tokio::test]
async fn unknown_routes_and_methods_get_404() {
    let mock = start(MockConfig::default()).await;
    let mut sender = connect(mock.addr()).await;
    for (method, path) in [
        (Method::POST, "/v1/completions"),
        (Method::GET, "/v1/chat/completions"),
        (Method::GET, "/"),
    ] {
        let reply = read_all(send(&mut sender, method, path, "").await).await;
        assert_eq!(reply.status, StatusCode::NOT_FOUND);
        assert!(reply.json()["error"]["message"].is_string());
    }
    assert_eq!(mock.request_count(), 3);
    mock.shutdown().await;
}

#[tokio::test]
async fn recording_keeps_every_request_and_keep_alive_reuses_the_connection() {
    let mock = start(MockConfig {
        record: true,
        ..MockConfig::default()
    })
    .await;
    let mut sender = connect(mock.addr()).await;
    let bodies = [
        (CHAT, r#"{"model":"a"}"#),
        (MESSAGES, r#"{"model":"b","stream":true}"#),
        (RESPONSES, r#"{"model":"c"}"#),
    ];
    for (path, body) in bodies {
        let reply = read_all(send(&mut sender, Method::POST, path, body).await).await;
        assert_eq!(reply.status, StatusCode::OK);
    }
    assert_eq!(mock.request_count(), 3);
    let recorded = mock.recorded();
    assert_eq!(recorded.len(), 3);
    for (r, (path, body)) in recorded.iter().zip(bodies) {
        assert_eq!(r.method, Method::POST);
        assert_eq!(r.path, path);
        assert_eq!(r.body, body.as_bytes());
        assert_eq!(r.headers["authorization"], "Bearer sk-test");
    }
    mock.shutdown().await;

    let unrecorded = start(MockConfig::default()).await;
    post(&unrecorded, CHAT, r#"{"model":"a"}"#).await;
    assert_eq!(unrecorded.request_count(), 1);
    assert!(unrecorded.recorded().is_empty());
    unrecorded.shutdown().await;
}

#[tokio::test]
async fn model_is_echoed_escaped_and_usage_follows_chunks() {
    let config = MockConfig {
        chunks: 11,
        ..MockConfig::default()
    };
    let mock = start(config.clone()).await;
    let model = r#"we\"ird/日本"#;
    let body = format!(r#"{{"model":"{model}"}}"#);
    let decoded = "we\"ird/日本";
    assert_eq!(post(&mock, CHAT, &body).await.json()["model"], decoded);
    assert_eq!(post(&mock, MESSAGES, &body).await.json()["model"], decoded);
    let v = post(&mock, RESPONSES, &body).await.json();
    assert_eq!(v["model"], decoded);
    assert_eq!(expected_usage(mock.config()), (INPUT_TOKENS, 11));
    assert_eq!(v["usage"]["output_tokens"], 11);
    assert_eq!(expected_text(&config).split(' ').count(), 11);
    // Same request, same bytes.
    let again = post(&mock, RESPONSES, &body).await.json();
    assert_eq!(again, v);
    mock.shutdown().await;
}

#[tokio::test]
async fn first_byte_and_chunk_delays_keep_the_bytes() {
    let reference = start(MockConfig::default()).await;
    let delayed = start(MockConfig {
        first_byte_delay: Duration::from_millis(5),
        chunk_delay: Duration::from_millis(1),
        ..MockConfig::default()
    })
    .await;
    let body = r#"{"model":"m","stream":true}"#;
    for path in [CHAT, MESSAGES, RESPONSES] {
        let a = post(&reference, path, body).await;
        let b = post(&delayed, path, body).await;
        assert_eq!(a.body, b.body);
        assert_eq!(b.frames.len(), b.sse().len(), "one frame per event");
    }
    reference.shutdown().await;
    delayed.shutdown().await;
}

#[tokio::test]
async fn stalled_stream_stays_open_until_shutdown() {
    let mock = start(MockConfig {
        stall_after_events: Some(2),
        ..MockConfig::default()
    })
    .await;
    let mut sender = connect(mock.addr()).await;
    let response = send(
        &mut sender,
        Method::POST,
        MESSAGES,
        r#"{"model":"m","stream":true}"#,
    )
    .await;
    assert_eq!(response.status(), StatusCode::OK);
    let mut body = response.into_body();
    let mut received = Vec::new();
    while sse_count(&received) < 2 {
        let frame = body.frame().await.expect("open stream").unwrap();
        received.extend_from_slice(&frame.into_data().unwrap());
    }
    let events = sse_frames(&received);
    assert_eq!(events[0].event.as_deref(), Some("message_start"));
    assert_eq!(events[1].event.as_deref(), Some("content_block_start"));
    let next = tokio::time::timeout(Duration::from_millis(100), body.frame()).await;
    assert!(next.is_err(), "stalled stream sent more: {next:?}");
    mock.shutdown().await;
    let after = tokio::time::timeout(Duration::from_secs(5), body.frame())
        .await
        .expect("shutdown closes the connection");
    assert!(!matches!(after, Some(Ok(_))), "no data after shutdown");
}

fn sse_count(bytes: &[u8]) -> usize {
    bytes.windows(2).filter(|w| w == b"\n\n").count()
}

#[tokio::test]
async fn shutdown_frees_the_port_and_start_on_binds_it() {
    let mock = start(MockConfig::default()).await;
    let addr = mock.addr();
    assert_eq!(mock.base_url(), format!("http://127.0.0.1:{}", addr.port()));
    mock.shutdown().await;
    assert!(tokio::net::TcpStream::connect(addr).await.is_err());
    let again = MockUpstream::start_on(addr, MockConfig::default())
        .await
        .unwrap();
    assert_eq!(again.addr(), addr);
    assert_eq!(
        post(&again, CHAT, r#"{"model":"m"}"#).await.status,
        StatusCode::OK
    );
    again.shutdown().await;
}

#[test]
fn mock_subcommand_prints_its_address_and_exits_on_sigterm() {
    let mut child = Command::new(env!("CARGO_BIN_EXE_trainer"))
        .args(["mock", "--chunks", "3", "--workers", "1"])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let url = line
        .strip_suffix('\n')
        .and_then(|l| l.strip_prefix("listening on "))
        .unwrap_or_else(|| panic!("unexpected first line {line:?}"));
    let addr: SocketAddr = url.strip_prefix("http://").unwrap().parse().unwrap();
    assert!(addr.ip().is_loopback() && addr.port() != 0);
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let text = runtime.block_on(async {
        let mut sender = connect(addr).await;
        let reply = read_all(send(&mut sender, Method::POST, CHAT, r#"{"model":"m"}"#).await).await;
        reply.json()["choices"][0]["message"]["content"].clone()
    });
    assert_eq!(text, "Bonjour café 日本");
    let kill = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(kill.success());
    assert!(child.wait().unwrap().success());
}

const CHAT_TOOLS: &str = r#""tools":[{"type":"function","function":{"name":"get_weather","parameters":{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}}}]"#;
const MESSAGES_TOOLS: &str = r#""tools":[{"name":"get_weather","input_schema":{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}}]"#;
const RESPONSES_TOOLS: &str = r#""tools":[{"type":"function","name":"get_weather","parameters":{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}}]"#;

#[tokio::test]
async fn tools_get_a_call_of_the_first_tool_in_each_dialect() {
    let mock = start(MockConfig::default()).await;
    let chat = post(
        &mock,
        CHAT,
        &format!(r#"{{"model":"m","messages":[{{"role":"user","content":"hi"}}],{CHAT_TOOLS}}}"#),
    )
    .await
    .json();
    let choice = &chat["choices"][0];
    assert_eq!(choice["finish_reason"], "tool_calls");
    let call = &choice["message"]["tool_calls"][0];
    assert_eq!(call["type"], "function");
    assert_eq!(call["function"]["name"], "get_weather");
    assert_eq!(call["function"]["arguments"], r#"{"city":"mock city"}"#);
    assert!(call["id"].as_str().unwrap().starts_with("call_"));

    let messages = post(
        &mock,
        MESSAGES,
        &format!(r#"{{"model":"m","max_tokens":9,"messages":[{{"role":"user","content":"hi"}}],{MESSAGES_TOOLS}}}"#),
    )
    .await
    .json();
    assert_eq!(messages["stop_reason"], "tool_use");
    let block = &messages["content"][0];
    assert_eq!(block["type"], "tool_use");
    assert_eq!(block["name"], "get_weather");
    assert_eq!(block["input"], serde_json::json!({"city": "mock city"}));

    let responses = post(
        &mock,
        RESPONSES,
        &format!(r#"{{"model":"m","input":"hi",{RESPONSES_TOOLS}}}"#),
    )
    .await
    .json();
    let item = &responses["output"][0];
    assert_eq!(item["type"], "function_call");
    assert_eq!(item["name"], "get_weather");
    assert_eq!(item["arguments"], r#"{"city":"mock city"}"#);
    assert_eq!(responses["status"], "completed");
    mock.shutdown().await;
}

#[tokio::test]
async fn streamed_tool_calls_reassemble_their_arguments() {
    let mock = start(MockConfig::default()).await;
    let chat = post(
        &mock,
        CHAT,
        &format!(r#"{{"model":"m","stream":true,"stream_options":{{"include_usage":true}},"messages":[],{CHAT_TOOLS}}}"#),
    )
    .await;
    let frames = chat.sse();
    assert_eq!(frames.last().unwrap().data, "[DONE]");
    let chunks: Vec<Value> = frames[..frames.len() - 1].iter().map(Sse::json).collect();
    let first = &chunks[0]["choices"][0]["delta"]["tool_calls"][0];
    assert_eq!(first["function"]["name"], "get_weather");
    let arguments: String = chunks
        .iter()
        .filter_map(|c| c["choices"][0]["delta"]["tool_calls"][0]["function"]["arguments"].as_str())
        .collect();
    assert_eq!(arguments, r#"{"city":"mock city"}"#);
    let (usage, rest) = chunks.split_last().unwrap();
    assert_eq!(
        rest.last().unwrap()["choices"][0]["finish_reason"],
        "tool_calls"
    );
    assert_eq!(usage["choices"], serde_json::json!([]));
    assert_eq!(usage["usage"]["completion_tokens"], 2);

    let messages = post(
        &mock,
        MESSAGES,
        &format!(r#"{{"model":"m","stream":true,"max_tokens":9,"messages":[],{MESSAGES_TOOLS}}}"#),
    )
    .await
    .sse();
    let events: Vec<Value> = messages.iter().map(Sse::json).collect();
    assert_eq!(events[1]["content_block"]["type"], "tool_use");
    assert_eq!(events[1]["content_block"]["name"], "get_weather");
    let partial: String = events
        .iter()
        .filter_map(|e| e["delta"]["partial_json"].as_str())
        .collect();
    assert_eq!(partial, r#"{"city":"mock city"}"#);
    let delta = events
        .iter()
        .find(|e| e["type"] == "message_delta")
        .unwrap();
    assert_eq!(delta["delta"]["stop_reason"], "tool_use");
    assert_eq!(events.last().unwrap()["type"], "message_stop");

    let responses = post(
        &mock,
        RESPONSES,
        &format!(r#"{{"model":"m","stream":true,"input":"hi",{RESPONSES_TOOLS}}}"#),
    )
    .await
    .sse();
    let events: Vec<Value> = responses.iter().map(Sse::json).collect();
    for (i, e) in events.iter().enumerate() {
        assert_eq!(e["sequence_number"], i);
    }
    let deltas: String = events
        .iter()
        .filter(|e| e["type"] == "response.function_call_arguments.delta")
        .map(|e| e["delta"].as_str().unwrap())
        .collect();
    assert_eq!(deltas, r#"{"city":"mock city"}"#);
    let completed = events.last().unwrap();
    assert_eq!(completed["type"], "response.completed");
    assert_eq!(completed["response"]["output"][0]["name"], "get_weather");
    mock.shutdown().await;
}

#[tokio::test]
async fn tool_results_are_quoted_in_the_answer() {
    let mock = start(MockConfig::default()).await;
    let chat = format!(
        r#"{{"model":"m","messages":[{{"role":"user","content":"hi"}},
        {{"role":"assistant","content":null,"tool_calls":[{{"id":"c","type":"function","function":{{"name":"get_weather","arguments":"{{}}"}}}}]}},
        {{"role":"tool","tool_call_id":"c","content":"18 degrees"}}],{CHAT_TOOLS}}}"#
    );
    let v = post(&mock, CHAT, &chat).await.json();
    assert_eq!(v["choices"][0]["finish_reason"], "stop");
    assert_eq!(
        v["choices"][0]["message"]["content"],
        format!("{TOOL_RESULT_PREFIX}18 degrees")
    );
    let messages = format!(
        r#"{{"model":"m","stream":true,"max_tokens":9,"messages":[{{"role":"user","content":"hi"}},
        {{"role":"assistant","content":[{{"type":"tool_use","id":"t","name":"get_weather","input":{{}}}}]}},
        {{"role":"user","content":[{{"type":"tool_result","tool_use_id":"t","content":"18 degrees"}}]}}],{MESSAGES_TOOLS}}}"#
    );
    let text: String = post(&mock, MESSAGES, &messages)
        .await
        .sse()
        .iter()
        .filter_map(|e| e.json()["delta"]["text"].as_str().map(str::to_owned))
        .collect();
    assert_eq!(text, format!("{TOOL_RESULT_PREFIX}18 degrees"));
    mock.shutdown().await;
}

#[tokio::test]
async fn an_error_model_gets_its_status_in_the_dialect_envelope() {
    let mock = start(MockConfig::default()).await;
    let reply = post(&mock, CHAT, r#"{"model":"mock-error-429","messages":[]}"#).await;
    assert_eq!(reply.status.as_u16(), 429);
    assert_eq!(header(&reply, "retry-after"), "1");
    assert_eq!(reply.json()["error"]["code"], "rate_limit_exceeded");
    let reply = post(
        &mock,
        MESSAGES,
        r#"{"model":"mock-error-529","stream":true}"#,
    )
    .await;
    assert_eq!(reply.status.as_u16(), 529);
    assert_eq!(reply.json()["error"]["type"], "overloaded_error");
    let reply = post(
        &mock,
        RESPONSES,
        r#"{"model":"mock-error-500","input":"x"}"#,
    )
    .await;
    assert_eq!(reply.status.as_u16(), 500);
    assert_eq!(reply.json()["error"]["type"], "server_error");
    // Not a status in 400..=599: an ordinary model.
    let reply = post(&mock, CHAT, r#"{"model":"mock-error-200"}"#).await;
    assert_eq!(reply.status, StatusCode::OK);
    assert_eq!(reply.json()["model"], "mock-error-200");
    mock.shutdown().await;
}

#[tokio::test]
async fn cached_tokens_are_reported_in_each_dialect() {
    let mock = start(MockConfig {
        cached_tokens: 5,
        ..MockConfig::default()
    })
    .await;
    let chat = post(&mock, CHAT, r#"{"model":"m"}"#).await.json();
    assert_eq!(chat["usage"]["prompt_tokens"], INPUT_TOKENS);
    assert_eq!(chat["usage"]["prompt_tokens_details"]["cached_tokens"], 5);
    let messages = post(&mock, MESSAGES, r#"{"model":"m"}"#).await.json();
    assert_eq!(messages["usage"]["input_tokens"], INPUT_TOKENS);
    assert_eq!(messages["usage"]["cache_read_input_tokens"], 5);
    let stream = post(&mock, MESSAGES, r#"{"model":"m","stream":true}"#)
        .await
        .sse();
    assert_eq!(
        stream[0].json()["message"]["usage"]["cache_read_input_tokens"],
        5
    );
    let responses = post(&mock, RESPONSES, r#"{"model":"m"}"#).await.json();
    assert_eq!(
        responses["usage"]["input_tokens_details"]["cached_tokens"],
        5
    );
    mock.shutdown().await;
}

/// The answer of a reply in any dialect, streamed or not: (text, tool calls as
/// (name, arguments text)).
fn answer(path: &str, reply: &Reply) -> (String, Vec<(String, String)>) {
    assert_eq!(reply.status, StatusCode::OK, "{:?}", reply.body);
    let mut text = String::new();
    let mut calls = Vec::new();
    let streamed = header(reply, "content-type") == "text/event-stream";
    match (path, streamed) {
        (CHAT, false) => {
            let message = &reply.json()["choices"][0]["message"];
            text.push_str(message["content"].as_str().unwrap_or(""));
            for c in message["tool_calls"].as_array().into_iter().flatten() {
                let f = &c["function"];
                calls.push((
                    f["name"].as_str().unwrap().into(),
                    f["arguments"].as_str().unwrap().into(),
                ));
            }
        }
        (CHAT, true) => {
            for frame in reply.sse().iter().filter(|f| f.data != "[DONE]") {
                let delta = &frame.json()["choices"][0]["delta"];
                text.push_str(delta["content"].as_str().unwrap_or(""));
                if let Some(c) = delta["tool_calls"].get(0) {
                    if let Some(name) = c["function"]["name"].as_str() {
                        calls.push((name.into(), String::new()));
                    }
                    let arguments = c["function"]["arguments"].as_str().unwrap_or("");
                    calls.last_mut().unwrap().1.push_str(arguments);
                }
            }
        }
        (MESSAGES, false) => {
            for block in reply.json()["content"].as_array().unwrap() {
                match block["type"].as_str().unwrap() {
                    "text" => text.push_str(block["text"].as_str().unwrap()),
                    "tool_use" => calls.push((
                        block["name"].as_str().unwrap().into(),
                        block["input"].to_string(),
                    )),
                    other => panic!("block {other}"),
                }
            }
        }
        (MESSAGES, true) => {
            for e in reply.sse().iter().map(Sse::json) {
                if e["type"] == "content_block_start" && e["content_block"]["type"] == "tool_use" {
                    calls.push((
                        e["content_block"]["name"].as_str().unwrap().into(),
                        String::new(),
                    ));
                }
                text.push_str(e["delta"]["text"].as_str().unwrap_or(""));
                if let Some(partial) = e["delta"]["partial_json"].as_str() {
                    calls.last_mut().unwrap().1.push_str(partial);
                }
            }
        }
        (RESPONSES, streamed) => {
            let response = if streamed {
                let last = reply.sse().last().unwrap().json();
                assert_eq!(last["type"], "response.completed");
                last["response"].clone()
            } else {
                reply.json()
            };
            for item in response["output"].as_array().unwrap() {
                match item["type"].as_str().unwrap() {
                    "message" => text.push_str(item["content"][0]["text"].as_str().unwrap()),
                    "function_call" => calls.push((
                        item["name"].as_str().unwrap().into(),
                        item["arguments"].as_str().unwrap().into(),
                    )),
                    other => panic!("item {other}"),
                }
            }
        }
        _ => unreachable!(),
    }
    (text, calls)
}

/// A request the size of a real agent's (Claude Code sends ~50 KB with 12 tools) whose
/// last user turn says `prompt`, in the dialect of `path`.
fn agent_request(path: &str, stream: bool, prompt: &str) -> String {
    let description = "Reads a file from the local filesystem. ".repeat(110);
    let names = [
        "Agent",
        "Bash",
        "Edit",
        "Glob",
        "Grep",
        "Read",
        "Skill",
        "Task",
        "TodoWrite",
        "WebFetch",
        "WebSearch",
        "Write",
    ];
    let schema = serde_json::json!({"type": "object", "properties": {"prompt": {"type": "string"}}, "required": ["prompt"]});
    let tools: Vec<Value> = names
        .iter()
        .map(|name| match path {
            CHAT => serde_json::json!({"type": "function", "function": {"name": name, "description": description, "parameters": schema}}),
            MESSAGES => serde_json::json!({"name": name, "description": description, "input_schema": schema}),
            _ => serde_json::json!({"type": "function", "name": name, "description": description, "parameters": schema}),
        })
        .collect();
    let mut body =
        serde_json::json!({"model": "m", "stream": stream, "max_tokens": 99, "tools": tools});
    let turns = serde_json::json!([
        {"role": "user", "content": "[mock: call Agent {}]"},
        {"role": "assistant", "content": "ok"},
        {"role": "user", "content": prompt},
    ]);
    if path == RESPONSES {
        body["input"] = turns;
    } else {
        body["messages"] = turns;
    }
    let body = body.to_string();
    assert!(body.len() > 50_000, "{}", body.len());
    body
}

#[tokio::test]
async fn directives_answer_agent_sized_requests_in_each_dialect() {
    let config = MockConfig::default();
    let mock = start(config.clone()).await;
    for path in [CHAT, MESSAGES, RESPONSES] {
        for stream in [false, true] {
            let case = format!("{path} stream={stream}");
            let reply = post(&mock, path, &agent_request(path, stream, "hi [mock: text]")).await;
            assert_eq!(
                answer(path, &reply),
                (expected_text(&config), vec![]),
                "{case}"
            );

            let prompt = r#"[mock: call Read {"file_path":"/w/a]b.txt","n":[1]}]"#;
            let reply = post(&mock, path, &agent_request(path, stream, prompt)).await;
            let (text, calls) = answer(path, &reply);
            assert_eq!(text, "", "{case}");
            assert_eq!(calls.len(), 1, "{case}");
            assert_eq!(calls[0].0, "Read", "{case}");
            let arguments: Value = serde_json::from_str(&calls[0].1).unwrap();
            assert_eq!(
                arguments,
                serde_json::json!({"file_path": "/w/a]b.txt", "n": [1]}),
                "{case}"
            );

            let reply = post(
                &mock,
                path,
                &agent_request(path, stream, "[mock: call Nope {}]"),
            )
            .await;
            let expected = ("mock: tool Nope is not offered".to_owned(), vec![]);
            assert_eq!(answer(path, &reply), expected, "{case}");

            // No directive: the first tool, as before.
            let reply = post(&mock, path, &agent_request(path, stream, "hello")).await;
            let (_, calls) = answer(path, &reply);
            assert_eq!(
                calls,
                vec![("Agent".into(), r#"{"prompt":"mock prompt"}"#.into())],
                "{case}"
            );
        }
    }
    mock.shutdown().await;
}

#[tokio::test]
async fn custom_tool_outputs_are_quoted_on_responses() {
    let mock = start(MockConfig::default()).await;
    let body = format!(
        r#"{{"model":"m","input":[{{"role":"user","content":"[mock: call Read {{}}]"}},
        {{"type":"custom_tool_call","call_id":"c","name":"apply_patch","input":"*** Begin Patch"}},
        {{"type":"custom_tool_call_output","call_id":"c","output":"patch refused: read-only sandbox"}}],{RESPONSES_TOOLS}}}"#
    );
    let reply = post(&mock, RESPONSES, &body).await;
    let expected = format!("{TOOL_RESULT_PREFIX}patch refused: read-only sandbox");
    assert_eq!(answer(RESPONSES, &reply), (expected, vec![]));
    mock.shutdown().await;
}

#[tokio::test]
async fn record_dir_keeps_each_body_under_its_number() {
    let dir = std::env::temp_dir().join(format!("trainer-mock-record-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let mock = start(MockConfig {
        record_dir: Some(dir.clone()),
        ..MockConfig::default()
    })
    .await;
    let first = r#"{"model":"a","messages":[]}"#;
    let second = agent_request(MESSAGES, true, "[mock: text]");
    post(&mock, CHAT, first).await;
    post(&mock, MESSAGES, &second).await;
    mock.shutdown().await;
    let mut names: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    names.sort();
    assert_eq!(names, ["001.json", "002.json"], "no temporary file is left");
    assert_eq!(
        std::fs::read_to_string(dir.join("001.json")).unwrap(),
        first
    );
    assert_eq!(
        std::fs::read_to_string(dir.join("002.json")).unwrap(),
        second
    );
    std::fs::remove_dir_all(&dir).unwrap();
}
