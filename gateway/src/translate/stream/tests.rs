//! Stream translation, fed at every split point (events and UTF-8 characters cut across
//! reads) and checked against each dialect's lifecycle.

use serde_json::Value;

use super::Translator;
use crate::dialect::{Dialect, Upstream};
use crate::sse::SseParser;

const ANTHROPIC_STREAM: &str = concat!(
    "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_1\",\"type\":\"message\",\"role\":\"assistant\",\"model\":\"claude\",\"content\":[],\"usage\":{\"input_tokens\":5,\"cache_read_input_tokens\":3,\"output_tokens\":1}}}\n\n",
    "event: ping\ndata: {\"type\":\"ping\"}\n\n",
    "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n",
    "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"日本\"}}\n\n",
    "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"é!\"}}\n\n",
    "event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n",
    "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":1,\"content_block\":{\"type\":\"tool_use\",\"id\":\"toolu_1\",\"name\":\"get\",\"input\":{}}}\n\n",
    "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":1,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"{\\\"a\\\":\"}}\n\n",
    "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":1,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"1}\"}}\n\n",
    "event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":1}\n\n",
    "event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"tool_use\",\"stop_sequence\":null},\"usage\":{\"output_tokens\":7}}\n\n",
    "event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n",
);

const CHAT_STREAM: &str = concat!(
    "data: {\"id\":\"c1\",\"object\":\"chat.completion.chunk\",\"model\":\"gpt\",\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"\"},\"finish_reason\":null}],\"usage\":null}\n\n",
    "data: {\"id\":\"c1\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"日本\"},\"finish_reason\":null}],\"usage\":null}\n\n",
    "data: {\"id\":\"c1\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"é!\"},\"finish_reason\":null}],\"usage\":null}\n\n",
    "data: {\"id\":\"c1\",\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"id\":\"call_1\",\"type\":\"function\",\"function\":{\"name\":\"get\",\"arguments\":\"\"}}]},\"finish_reason\":null}]}\n\n",
    "data: {\"id\":\"c1\",\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"function\":{\"arguments\":\"{\\\"a\\\":\"}}]},\"finish_reason\":null}]}\n\n",
    "data: {\"id\":\"c1\",\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"function\":{\"arguments\":\"1}\"}}]},\"finish_reason\":null}]}\n\n",
    "data: {\"id\":\"c1\",\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"tool_calls\"}],\"usage\":null}\n\n",
    "data: {\"id\":\"c1\",\"choices\":[],\"usage\":{\"prompt_tokens\":8,\"completion_tokens\":7,\"prompt_tokens_details\":{\"cached_tokens\":3}}}\n\n",
    "data: [DONE]\n\n",
);

/// Translates `stream` fed in two pieces split at `at`; returns the client events
/// (name, data) and whether the stream finished cleanly.
fn run(
    client: Dialect,
    upstream: Upstream,
    stream: &str,
    at: usize,
) -> (Vec<(String, String)>, bool) {
    let (out, ok) = translate_split(client, upstream, stream.as_bytes(), at);
    (events_of(&out), ok)
}

/// The client's bytes of `stream` fed in two pieces split at `at`, and whether the
/// stream finished cleanly.
fn translate_split(
    client: Dialect,
    upstream: Upstream,
    stream: &[u8],
    at: usize,
) -> (Vec<u8>, bool) {
    let mut t = Translator::new(client, upstream, true, Default::default());
    let mut out = Vec::new();
    let (a, b) = stream.split_at(at);
    t.feed(a, &mut out);
    t.feed(b, &mut out);
    let ok = t.finish(&mut out).is_ok();
    (out, ok)
}

/// The client's events (name, data with its timestamps zeroed), whole.
fn events_of(out: &[u8]) -> Vec<(String, String)> {
    let mut events = Vec::new();
    let mut p = SseParser::new();
    p.feed(out, |e| {
        events.push((
            String::from_utf8(e.event.to_vec()).unwrap(),
            without_clock(std::str::from_utf8(e.data).unwrap()),
        ))
    });
    assert!(!p.is_mid_event(), "output ends mid-event");
    events
}

/// The event with its timestamps zeroed: runs a second apart must compare equal.
fn without_clock(data: &str) -> String {
    let Ok(mut v) = serde_json::from_str::<Value>(data) else {
        return data.to_owned();
    };
    if v.get("created").is_some() {
        v["created"] = 0.into();
    }
    if v.get("response").is_some() {
        v["response"]["created_at"] = 0.into();
    }
    v.to_string()
}

fn every_split(client: Dialect, upstream: Upstream, stream: &str) -> Vec<(String, String)> {
    let whole = run(client, upstream, stream, 0);
    assert!(whole.1);
    for at in 1..stream.len() {
        let split = run(client, upstream, stream, at);
        assert!(split.1, "split at {at}");
        // Ids and timestamps are equal too: the same translator state either way.
        assert_eq!(split.0, whole.0, "split at {at}");
    }
    whole.0
}

/// A chat client's chunks before `[DONE]`, checked to carry the streams' one answer: the
/// text `日本é!` and a call's arguments `{"a":1}`.
fn chat_chunks_with_the_answer(ev: &[(String, String)]) -> Vec<Value> {
    let data: Vec<&str> = ev.iter().map(|(_, d)| d.as_str()).collect();
    assert_eq!(data.last(), Some(&"[DONE]"));
    let chunks: Vec<Value> = data[..data.len() - 1].iter().map(|d| json(d)).collect();
    let text: String = chunks
        .iter()
        .filter_map(|c| c["choices"][0]["delta"]["content"].as_str())
        .collect();
    assert_eq!(text, "日本é!");
    let args: String = chunks
        .iter()
        .filter_map(|c| c["choices"][0]["delta"]["tool_calls"][0]["function"]["arguments"].as_str())
        .collect();
    assert_eq!(args, "{\"a\":1}");
    chunks
}

fn json(s: &str) -> Value {
    serde_json::from_str(s).unwrap()
}

#[test]
fn anthropic_to_chat_lifecycle() {
    let ev = every_split(Dialect::Chat, Upstream::Messages, ANTHROPIC_STREAM);
    let chunks = chat_chunks_with_the_answer(&ev);
    assert_eq!(chunks[0]["choices"][0]["delta"]["role"], "assistant");
    let start = chunks
        .iter()
        .find(|c| c["choices"][0]["delta"]["tool_calls"][0]["id"] == "toolu_1")
        .unwrap();
    assert_eq!(
        start["choices"][0]["delta"]["tool_calls"][0]["function"]["name"],
        "get"
    );
    let finish = &chunks[chunks.len() - 2];
    assert_eq!(finish["choices"][0]["finish_reason"], "tool_calls");
    let usage = &chunks[chunks.len() - 1];
    assert_eq!(usage["choices"], serde_json::json!([]));
    assert_eq!(usage["usage"]["prompt_tokens"], 8);
    assert_eq!(usage["usage"]["completion_tokens"], 7);
    assert_eq!(usage["usage"]["prompt_tokens_details"]["cached_tokens"], 3);
}

#[test]
fn chat_to_anthropic_lifecycle() {
    let ev = every_split(Dialect::Messages, Upstream::Chat, CHAT_STREAM);
    let names: Vec<&str> = ev.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(
        names,
        [
            "message_start",
            "content_block_start",
            "content_block_delta",
            "content_block_delta",
            "content_block_stop",
            "content_block_start",
            "content_block_delta",
            "content_block_delta",
            "content_block_stop",
            "message_delta",
            "message_stop"
        ]
    );
    for (n, d) in &ev {
        assert_eq!(json(d)["type"], n.as_str());
    }
    assert_eq!(json(&ev[5].1)["content_block"]["id"], "call_1");
    assert_eq!(json(&ev[6].1)["index"], 1);
    let delta = json(&ev[9].1);
    assert_eq!(delta["delta"]["stop_reason"], "tool_use");
    assert_eq!(delta["usage"]["output_tokens"], 7);
    assert_eq!(delta["usage"]["input_tokens"], 5);
    assert_eq!(delta["usage"]["cache_read_input_tokens"], 3);
}

/// Azure OpenAI opens a stream with a chunk of no choices, no id and no model, only the
/// prompt's content-filter results: every translated client names the model of the chunks
/// after it, as on a non-streaming answer.
#[test]
fn azure_prompt_filter_chunk_does_not_name_the_answer() {
    let azure = format!(
        "data: {{\"choices\":[],\"created\":0,\"id\":\"\",\"model\":\"\",\"object\":\"\",\"prompt_filter_results\":[{{\"prompt_index\":0,\"content_filter_results\":{{}}}}]}}\n\n{CHAT_STREAM}"
    );
    let ev = every_split(Dialect::Messages, Upstream::Chat, &azure);
    assert_eq!(ev[0].0, "message_start");
    assert_eq!(json(&ev[0].1)["message"]["model"], "gpt");
    assert_eq!(
        ev,
        every_split(Dialect::Messages, Upstream::Chat, CHAT_STREAM)
    );
    let ev = every_split(Dialect::Gemini, Upstream::Chat, &azure);
    assert!(
        ev.iter().all(|(_, d)| json(d)["modelVersion"] == "gpt"),
        "{ev:?}"
    );
    let ev = every_split(Dialect::Responses, Upstream::Chat, &azure);
    assert_eq!(check_responses(&ev)["model"], "gpt");
}

fn check_responses(ev: &[(String, String)]) -> Value {
    let names: Vec<&str> = ev.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(
        names,
        [
            "response.created",
            "response.in_progress",
            "response.output_item.added",
            "response.content_part.added",
            "response.output_text.delta",
            "response.output_text.delta",
            "response.output_text.done",
            "response.content_part.done",
            "response.output_item.done",
            "response.output_item.added",
            "response.function_call_arguments.delta",
            "response.function_call_arguments.delta",
            "response.function_call_arguments.done",
            "response.output_item.done",
            "response.completed"
        ]
    );
    for (i, (n, d)) in ev.iter().enumerate() {
        let v = json(d);
        assert_eq!(v["type"], n.as_str());
        assert_eq!(v["sequence_number"], i);
    }
    assert_eq!(json(&ev[6].1)["text"], "日本é!");
    assert_eq!(json(&ev[12].1)["arguments"], "{\"a\":1}");
    json(&ev[14].1)["response"].clone()
}

#[test]
fn anthropic_to_responses_lifecycle() {
    let ev = every_split(Dialect::Responses, Upstream::Messages, ANTHROPIC_STREAM);
    let r = check_responses(&ev);
    assert_eq!(r["status"], "completed");
    assert_eq!(r["usage"]["input_tokens"], 8);
    assert_eq!(r["usage"]["output_tokens"], 7);
    assert_eq!(r["output"][1]["call_id"], "toolu_1");
}

#[test]
fn chat_to_responses_lifecycle() {
    let ev = every_split(Dialect::Responses, Upstream::Chat, CHAT_STREAM);
    let r = check_responses(&ev);
    assert_eq!(r["usage"]["input_tokens_details"]["cached_tokens"], 3);
    assert_eq!(r["output"][0]["content"][0]["text"], "日本é!");
}

#[test]
fn usage_is_reported_in_hub_terms() {
    let mut t = Translator::new(Dialect::Chat, Upstream::Messages, false, Default::default());
    let mut out = Vec::new();
    t.feed(ANTHROPIC_STREAM.as_bytes(), &mut out);
    let u = t.usage().unwrap().accounting();
    assert_eq!((u.input, u.output), (Some(8), Some(7)));
    // Without include_usage the client gets no usage chunk.
    assert!(!String::from_utf8(out).unwrap().contains("\"choices\":[]"));
}

#[test]
fn cut_streams_are_truncated_and_missing_done_is_tolerated() {
    let cut = &ANTHROPIC_STREAM[..ANTHROPIC_STREAM.find("event: message_delta").unwrap()];
    let (_, ok) = run(Dialect::Chat, Upstream::Messages, cut, 0);
    assert!(!ok);
    let no_done = CHAT_STREAM.trim_end_matches("data: [DONE]\n\n");
    let (ev, ok) = run(Dialect::Messages, Upstream::Chat, no_done, 0);
    assert!(ok);
    assert_eq!(ev.last().unwrap().0, "message_stop");
    let (_, ok) = run(Dialect::Messages, Upstream::Chat, &CHAT_STREAM[..300], 0);
    assert!(!ok);
}

#[test]
fn in_stream_errors_reach_the_client_in_its_dialect() {
    let s = "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"m\",\"model\":\"c\",\"usage\":{\"input_tokens\":1}}}\n\n\
             event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}\n\n";
    let (ev, ok) = run(Dialect::Chat, Upstream::Messages, s, 0);
    assert!(ok);
    let last = json(&ev.last().unwrap().1);
    assert_eq!(last["error"]["message"], "Overloaded");
    let (ev, _) = run(Dialect::Responses, Upstream::Messages, s, 0);
    assert_eq!(ev.last().unwrap().0, "error");
}

const GEMINI_STREAM: &str = concat!(
    "data: {\"candidates\":[{\"content\":{\"role\":\"model\",\"parts\":[{\"text\":\"thinking\",\"thought\":true}]},\"index\":0}],\"usageMetadata\":{\"promptTokenCount\":8},\"modelVersion\":\"gemini-2.5-pro\",\"responseId\":\"r1\"}\r\n\r\n",
    "data: {\"candidates\":[{\"content\":{\"role\":\"model\",\"parts\":[{\"text\":\"日本\"}]},\"index\":0}],\"modelVersion\":\"gemini-2.5-pro\",\"responseId\":\"r1\"}\r\n\r\n",
    "data: {\"candidates\":[{\"content\":{\"role\":\"model\",\"parts\":[{\"text\":\"é!\"}]},\"index\":0}]}\r\n\r\n",
    "data: {\"candidates\":[{\"content\":{\"role\":\"model\",\"parts\":[{\"functionCall\":{\"id\":\"fc1\",\"name\":\"get\",\"args\":{\"a\":1}},\"thoughtSignature\":\"c2ln\"}]},\"finishReason\":\"STOP\",\"index\":0}],\"usageMetadata\":{\"promptTokenCount\":8,\"candidatesTokenCount\":5,\"thoughtsTokenCount\":2,\"cachedContentTokenCount\":3}}\r\n\r\n",
);

#[test]
fn gemini_to_chat_lifecycle() {
    for at in 0..=GEMINI_STREAM.len() {
        if !GEMINI_STREAM.is_char_boundary(at) {
            continue;
        }
        let (events, ok) = run(Dialect::Chat, Upstream::Gemini, GEMINI_STREAM, at);
        assert!(
            ok,
            "split at {at}: the stream ends with its finishReason chunk"
        );
        let datas: Vec<Value> = events
            .iter()
            .filter(|(_, d)| d != "[DONE]")
            .map(|(_, d)| serde_json::from_str(d).unwrap())
            .collect();
        let text: String = datas
            .iter()
            .filter_map(|d| d["choices"][0]["delta"]["content"].as_str())
            .collect();
        assert_eq!(text, "日本é!", "split at {at}");
        let call = datas
            .iter()
            .find_map(|d| d["choices"][0]["delta"]["tool_calls"][0]["id"].as_str())
            .unwrap();
        assert_eq!(
            crate::translate::gemini::signature::unfold(call),
            ("fc1", Some("c2ln".to_owned()))
        );
        let finish = datas
            .iter()
            .find_map(|d| d["choices"][0]["finish_reason"].as_str())
            .unwrap();
        assert_eq!(finish, "tool_calls");
        let usage = &datas.iter().rev().find(|d| d["usage"].is_object()).unwrap()["usage"];
        assert_eq!(usage["prompt_tokens"], 8);
        assert_eq!(usage["completion_tokens"], 7);
        assert_eq!(usage["prompt_tokens_details"]["cached_tokens"], 3);
        assert_eq!(events.last().unwrap().1, "[DONE]");
    }
}

#[test]
fn chat_to_gemini_lifecycle_sse_and_array() {
    for at in [0, 100, CHAT_STREAM.len() / 2, CHAT_STREAM.len()] {
        let (events, ok) = run(Dialect::Gemini, Upstream::Chat, CHAT_STREAM, at);
        assert!(ok);
        let datas: Vec<Value> = events
            .iter()
            .map(|(_, d)| serde_json::from_str(d).unwrap())
            .collect();
        let text: String = datas
            .iter()
            .filter_map(|d| d["candidates"][0]["content"]["parts"][0]["text"].as_str())
            .collect();
        assert_eq!(text, "日本é!");
        let call = datas
            .iter()
            .find_map(|d| d["candidates"][0]["content"]["parts"][0].get("functionCall"))
            .unwrap();
        assert_eq!(
            *call,
            serde_json::json!({"id": "call_1", "name": "get", "args": {"a": 1}})
        );
        let last = datas.last().unwrap();
        assert_eq!(last["candidates"][0]["finishReason"], "STOP");
        assert_eq!(last["usageMetadata"]["promptTokenCount"], 8);
        assert_eq!(last["usageMetadata"]["candidatesTokenCount"], 7);
    }
    // Without alt=sse: one JSON array of the same chunks.
    let view = crate::translate::hub::ClientView {
        json_array_stream: true,
        ..Default::default()
    };
    let mut t = Translator::new(Dialect::Gemini, Upstream::Chat, false, view);
    let mut out = Vec::new();
    t.feed(CHAT_STREAM.as_bytes(), &mut out);
    assert!(t.finish(&mut out).is_ok());
    let chunks: Vec<Value> = serde_json::from_slice(&out).unwrap();
    assert_eq!(chunks.len(), 4, "{}", String::from_utf8_lossy(&out));
    assert_eq!(chunks[3]["candidates"][0]["finishReason"], "STOP");
}

/// A ConverseStream answer (text, then a tool call) as Bedrock frames it.
fn converse_stream() -> Vec<u8> {
    use super::eventstream::testing::event;
    [
        event("messageStart", r#"{"role":"assistant"}"#),
        event(
            "contentBlockDelta",
            r#"{"contentBlockIndex":0,"delta":{"text":"日本"}}"#,
        ),
        event(
            "contentBlockDelta",
            r#"{"contentBlockIndex":0,"delta":{"text":"é!"}}"#,
        ),
        event("contentBlockStop", r#"{"contentBlockIndex":0}"#),
        event(
            "contentBlockStart",
            r#"{"contentBlockIndex":1,"start":{"toolUse":{"toolUseId":"tooluse_1","name":"get"}}}"#,
        ),
        event(
            "contentBlockDelta",
            r#"{"contentBlockIndex":1,"delta":{"toolUse":{"input":"{\"a\":"}}}"#,
        ),
        event(
            "contentBlockDelta",
            r#"{"contentBlockIndex":1,"delta":{"toolUse":{"input":"1}"}}}"#,
        ),
        event("contentBlockStop", r#"{"contentBlockIndex":1}"#),
        event("messageStop", r#"{"stopReason":"tool_use"}"#),
        event(
            "metadata",
            r#"{"usage":{"inputTokens":5,"outputTokens":7,"totalTokens":12,"cacheReadInputTokens":3},"metrics":{"latencyMs":10}}"#,
        ),
    ]
    .concat()
}

/// Translates a binary stream fed in two pieces; the client events (ids blanked: each
/// translator makes its own) and whether it finished cleanly.
fn run_bytes(client: Dialect, stream: &[u8], at: usize) -> (Vec<(String, String)>, bool) {
    let (out, ok) = translate_split(client, Upstream::Converse, stream, at);
    let text = String::from_utf8(out).unwrap();
    (events_of(regex_free_ids(&text).as_bytes()), ok)
}

/// `text` with every generated answer id (`msg_bdrk_...`) replaced by one name.
fn regex_free_ids(text: &str) -> String {
    let mut out = String::new();
    let mut rest = text;
    while let Some(i) = rest.find("msg_bdrk_") {
        out.push_str(&rest[..i]);
        out.push_str("msg_bdrk_ID");
        let tail = &rest[i + "msg_bdrk_".len()..];
        let end = tail
            .find(|c: char| !c.is_ascii_hexdigit())
            .unwrap_or(tail.len());
        rest = &tail[end..];
    }
    out.push_str(rest);
    out
}

#[test]
fn converse_to_every_client_at_every_split() {
    let s = converse_stream();
    for client in Dialect::ALL {
        let whole = run_bytes(client, &s, 0);
        assert!(whole.1, "{client:?}");
        for at in 1..s.len() {
            let split = run_bytes(client, &s, at);
            assert!(split.1, "{client:?} split at {at}");
            assert_eq!(split.0, whole.0, "{client:?} split at {at}");
        }
    }
    let (ev, _) = run_bytes(Dialect::Chat, &s, 0);
    let chunks = chat_chunks_with_the_answer(&ev);
    assert_eq!(
        chunks[chunks.len() - 2]["choices"][0]["finish_reason"],
        "tool_calls"
    );
    let usage = &chunks[chunks.len() - 1]["usage"];
    assert_eq!(usage["prompt_tokens"], 8);
    assert_eq!(usage["completion_tokens"], 7);
    let (ev, _) = run_bytes(Dialect::Messages, &s, 0);
    let names: Vec<&str> = ev.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(names.first(), Some(&"message_start"));
    assert_eq!(names.last(), Some(&"message_stop"));
    let delta = ev.iter().find(|(n, _)| n == "message_delta").unwrap();
    let delta = json(&delta.1);
    assert_eq!(delta["delta"]["stop_reason"], "tool_use");
}

#[test]
fn converse_errors_and_cuts() {
    use super::eventstream::testing::{event, exception};
    let s = converse_stream();
    let stop = s.len() - event("metadata", r#"{"usage":{"inputTokens":5,"outputTokens":7,"totalTokens":12,"cacheReadInputTokens":3},"metrics":{"latencyMs":10}}"#).len();
    // Cut after messageStop: the answer is whole (only the usage is missing).
    let (_, ok) = run_bytes(Dialect::Chat, &s[..stop], 0);
    assert!(ok);
    // Cut inside a frame, or before messageStop: truncated.
    let (_, ok) = run_bytes(Dialect::Chat, &s[..stop - 5], 0);
    assert!(!ok);
    let (_, ok) = run_bytes(Dialect::Chat, &s[..40], 0);
    assert!(!ok);
    // A mid-stream exception: the client's in-stream error.
    let mut e = event("messageStart", r#"{"role":"assistant"}"#);
    e.extend(event(
        "contentBlockDelta",
        r#"{"contentBlockIndex":0,"delta":{"text":"Hel"}}"#,
    ));
    e.extend(exception(
        "modelStreamErrorException",
        r#"{"message":"model failed","originalStatusCode":500}"#,
    ));
    let (ev, ok) = run_bytes(Dialect::Chat, &e, 0);
    assert!(ok);
    assert_eq!(
        json(&ev.last().unwrap().1)["error"]["message"],
        "model failed"
    );
    let (ev, _) = run_bytes(Dialect::Messages, &e, 0);
    let last = json(&ev.last().unwrap().1);
    assert_eq!(
        (last["type"].as_str(), last["error"]["type"].as_str()),
        (Some("error"), Some("api_error"))
    );
    let mut throttled = event("messageStart", r#"{"role":"assistant"}"#);
    throttled.extend(exception(
        "throttlingException",
        r#"{"message":"slow down"}"#,
    ));
    let (ev, _) = run_bytes(Dialect::Messages, &throttled, 0);
    assert_eq!(
        json(&ev.last().unwrap().1)["error"]["type"],
        "rate_limit_error"
    );
    // A bad CRC: the answer ends with an error at once.
    let mut bad = s.clone();
    bad[30] ^= 1;
    let (ev, ok) = run_bytes(Dialect::Chat, &bad, 0);
    assert!(ok, "ended by the error");
    let last = json(&ev.last().unwrap().1);
    assert!(
        last["error"]["message"]
            .as_str()
            .unwrap()
            .contains("cannot be read on"),
        "{last}"
    );
}

/// The access log's `error` for a translated stream: none for a whole answer, the reason for
/// one that ended with an error event.
#[test]
fn an_answer_ended_by_an_error_says_why() {
    let why = |client, upstream, bytes: &[u8]| {
        let mut t = Translator::new(client, upstream, true, Default::default());
        let mut out = Vec::new();
        t.feed(bytes, &mut out);
        let _ = t.finish(&mut out);
        t.error()
    };
    assert_eq!(
        why(Dialect::Messages, Upstream::Chat, CHAT_STREAM.as_bytes()),
        None
    );
    let upstream_error = "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"m\",\"model\":\"c\",\"usage\":{\"input_tokens\":1}}}\n\n\
         event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}\n\n";
    assert_eq!(
        why(Dialect::Chat, Upstream::Messages, upstream_error.as_bytes()),
        Some("upstream_stream_error")
    );
    let converse = converse_stream();
    assert_eq!(why(Dialect::Chat, Upstream::Converse, &converse), None);
    let mut bad_crc = converse;
    bad_crc[30] ^= 1;
    assert_eq!(
        why(Dialect::Chat, Upstream::Converse, &bad_crc),
        Some("upstream_stream_unreadable")
    );
    // One call past the bound, from each upstream that streams calls: its own reason, not
    // the upstream's error (chat and Gemini decoders stop at the bound themselves).
    let over = crate::translate::hub::MAX_TOOL_CALLS + 1;
    let chat_calls: Vec<String> = (0..over)
        .map(|i| {
            format!(r#"{{"index":{i},"id":"c{i}","function":{{"name":"f","arguments":"{{}}"}}}}"#)
        })
        .collect();
    let chat = format!(
        "data: {{\"id\":\"x\",\"model\":\"m\",\"choices\":[{{\"index\":0,\"delta\":{{\"tool_calls\":[{}]}}}}]}}\n\n",
        chat_calls.join(",")
    );
    let gemini_calls = vec![r#"{"functionCall":{"name":"f","args":{}}}"#; over].join(",");
    let gemini = format!(
        "data: {{\"candidates\":[{{\"content\":{{\"role\":\"model\",\"parts\":[{gemini_calls}]}}}}]}}\n\n"
    );
    let mut messages = String::from("event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"m\",\"model\":\"c\",\"usage\":{\"input_tokens\":1}}}\n\n");
    for i in 0..over {
        messages.push_str(&format!(
            "event: content_block_start\ndata: {{\"type\":\"content_block_start\",\"index\":{i},\"content_block\":{{\"type\":\"tool_use\",\"id\":\"t{i}\",\"name\":\"f\",\"input\":{{}}}}}}\n\n\
             event: content_block_stop\ndata: {{\"type\":\"content_block_stop\",\"index\":{i}}}\n\n"
        ));
    }
    for (upstream, stream) in [
        (Upstream::Chat, &chat),
        (Upstream::Gemini, &gemini),
        (Upstream::Messages, &messages),
    ] {
        for client in Dialect::ALL {
            if upstream == client {
                continue;
            }
            assert_eq!(
                why(client, upstream, stream.as_bytes()),
                Some("too_many_tool_calls"),
                "{upstream:?} to {client:?}"
            );
        }
    }
    // A Responses client's answer past its bound: 17 deltas of 512 KiB.
    let text = "a".repeat(512 << 10);
    let delta = format!(
        "data: {{\"id\":\"x\",\"model\":\"m\",\"choices\":[{{\"index\":0,\"delta\":{{\"content\":\"{text}\"}}}}]}}\n\n"
    );
    let long = delta.repeat(17);
    assert_eq!(
        why(Dialect::Responses, Upstream::Chat, long.as_bytes()),
        Some("translated_answer_too_long")
    );
    assert_eq!(
        why(Dialect::Messages, Upstream::Chat, long.as_bytes()),
        None
    );
}
