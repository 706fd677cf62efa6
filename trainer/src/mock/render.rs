//! The exact bodies and SSE event sequences of the three dialects (PROTOCOLS.md).
//!
//! JSON is written by hand so that field order matches the real APIs (`type` first) and
//! rendering needs no intermediate tree; every string goes through [`json_str`].

use bytes::Bytes;

use super::dialect::Dialect;
use super::text::{deltas, INPUT_TOKENS};

const CREATED: u64 = 1_767_225_600;
const CHAT_ID: &str = "chatcmpl-mock0001";
const MESSAGE_ID: &str = "msg_mock0001";
const RESPONSE_ID: &str = "resp_mock0001";
const RESPONSE_ITEM_ID: &str = "msg_mock0001";

/// `s` as a JSON string literal, quotes included.
pub(crate) fn json_str(s: &str) -> String {
    serde_json::to_string(s).expect("a str always serializes")
}

/// What one request is answered with.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) struct Shape {
    pub dialect: Dialect,
    pub stream: bool,
    /// Chat only: `stream_options.include_usage`.
    pub include_usage: bool,
}

/// The non-streamed JSON body for `dialect`.
pub(crate) fn full_body(dialect: Dialect, model: &str, chunks: usize) -> Bytes {
    let model = json_str(model);
    let text = json_str(&deltas(chunks).collect::<String>());
    let output = chunks as u64;
    let body = match dialect {
        Dialect::Chat => format!(
            concat!(
                r#"{{"id":"{id}","object":"chat.completion","created":{created},"model":{model},"#,
                r#""choices":[{{"index":0,"message":{{"role":"assistant","content":{text},"refusal":null,"annotations":[]}},"#,
                r#""logprobs":null,"finish_reason":"stop"}}],"usage":{usage},"#,
                r#""service_tier":"default","system_fingerprint":"fp_mock"}}"#
            ),
            id = CHAT_ID,
            created = CREATED,
            model = model,
            text = text,
            usage = chat_usage(output),
        ),
        Dialect::Messages => format!(
            concat!(
                r#"{{"id":"{id}","type":"message","role":"assistant","model":{model},"#,
                r#""content":[{{"type":"text","text":{text}}}],"stop_reason":"end_turn","#,
                r#""stop_sequence":null,"usage":{usage}}}"#
            ),
            id = MESSAGE_ID,
            model = model,
            text = text,
            usage = anthropic_usage(output),
        ),
        Dialect::Responses => response_object(
            &model,
            "completed",
            &format!("[{}]", response_message("completed", &output_text(&text))),
            &responses_usage(output),
        ),
    };
    Bytes::from(body)
}

/// Every SSE frame of the streamed answer, in order, each ending in its blank line.
pub(crate) fn stream_events(shape: Shape, model: &str, chunks: usize) -> Vec<Bytes> {
    let model = json_str(model);
    match shape.dialect {
        Dialect::Chat => chat_events(&model, chunks, shape.include_usage),
        Dialect::Messages => messages_events(&model, chunks),
        Dialect::Responses => responses_events(&model, chunks),
    }
}

fn data_frame(data: &str) -> Bytes {
    Bytes::from(format!("data: {data}\n\n"))
}

fn event_frame(event: &str, data: &str) -> Bytes {
    Bytes::from(format!("event: {event}\ndata: {data}\n\n"))
}

fn chat_usage(output: u64) -> String {
    format!(
        concat!(
            r#"{{"prompt_tokens":{i},"completion_tokens":{o},"total_tokens":{t},"#,
            r#""prompt_tokens_details":{{"cached_tokens":0,"audio_tokens":0}},"#,
            r#""completion_tokens_details":{{"reasoning_tokens":0,"audio_tokens":0,"#,
            r#""accepted_prediction_tokens":0,"rejected_prediction_tokens":0}}}}"#
        ),
        i = INPUT_TOKENS,
        o = output,
        t = INPUT_TOKENS + output,
    )
}

fn chat_events(model: &str, chunks: usize, include_usage: bool) -> Vec<Bytes> {
    let head = format!(
        r#"{{"id":"{CHAT_ID}","object":"chat.completion.chunk","created":{CREATED},"model":{model},"service_tier":"default","system_fingerprint":"fp_mock","choices":"#
    );
    let tail = if include_usage {
        r#","usage":null}"#
    } else {
        "}"
    };
    let choice = |delta: &str, finish: &str| {
        data_frame(&format!(
            r#"{head}[{{"index":0,"delta":{delta},"logprobs":null,"finish_reason":{finish}}}]{tail}"#
        ))
    };
    let mut events = Vec::with_capacity(chunks + 4);
    events.push(choice(
        r#"{"role":"assistant","content":"","refusal":null}"#,
        "null",
    ));
    for d in deltas(chunks) {
        events.push(choice(&format!(r#"{{"content":{}}}"#, json_str(d)), "null"));
    }
    events.push(choice("{}", r#""stop""#));
    if include_usage {
        events.push(data_frame(&format!(
            r#"{head}[],"usage":{}}}"#,
            chat_usage(chunks as u64)
        )));
    }
    events.push(data_frame("[DONE]"));
    events
}

fn anthropic_usage(output: u64) -> String {
    format!(
        r#"{{"input_tokens":{INPUT_TOKENS},"cache_creation_input_tokens":0,"cache_read_input_tokens":0,"output_tokens":{output}}}"#
    )
}

fn messages_events(model: &str, chunks: usize) -> Vec<Bytes> {
    let mut events = Vec::with_capacity(chunks + 6);
    // Like the real API, message_start reports output_tokens 1; message_delta carries the
    // cumulative final count, which replaces it.
    events.push(event_frame(
        "message_start",
        &format!(
            concat!(
                r#"{{"type":"message_start","message":{{"id":"{id}","type":"message","role":"assistant","#,
                r#""model":{model},"content":[],"stop_reason":null,"stop_sequence":null,"usage":{usage}}}}}"#
            ),
            id = MESSAGE_ID,
            model = model,
            usage = anthropic_usage(1),
        ),
    ));
    events.push(event_frame(
        "content_block_start",
        r#"{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}"#,
    ));
    events.push(event_frame("ping", r#"{"type":"ping"}"#));
    for d in deltas(chunks) {
        events.push(event_frame(
            "content_block_delta",
            &format!(
                r#"{{"type":"content_block_delta","index":0,"delta":{{"type":"text_delta","text":{}}}}}"#,
                json_str(d)
            ),
        ));
    }
    events.push(event_frame(
        "content_block_stop",
        r#"{"type":"content_block_stop","index":0}"#,
    ));
    events.push(event_frame(
        "message_delta",
        &format!(
            r#"{{"type":"message_delta","delta":{{"stop_reason":"end_turn","stop_sequence":null}},"usage":{{"output_tokens":{chunks}}}}}"#
        ),
    ));
    events.push(event_frame("message_stop", r#"{"type":"message_stop"}"#));
    events
}

fn responses_usage(output: u64) -> String {
    format!(
        concat!(
            r#"{{"input_tokens":{i},"input_tokens_details":{{"cached_tokens":0}},"#,
            r#""output_tokens":{o},"output_tokens_details":{{"reasoning_tokens":0}},"total_tokens":{t}}}"#
        ),
        i = INPUT_TOKENS,
        o = output,
        t = INPUT_TOKENS + output,
    )
}

/// An `output_text` content part; `text` is a JSON string literal.
fn output_text(text: &str) -> String {
    format!(r#"{{"type":"output_text","text":{text},"annotations":[],"logprobs":[]}}"#)
}

/// The assistant message output item; `content` is one JSON content part or empty.
fn response_message(status: &str, content: &str) -> String {
    format!(
        r#"{{"type":"message","id":"{RESPONSE_ITEM_ID}","status":"{status}","role":"assistant","content":[{content}]}}"#
    )
}

/// The `response` object; `output` is a JSON array and `usage` JSON or `null`.
fn response_object(model: &str, status: &str, output: &str, usage: &str) -> String {
    format!(
        concat!(
            r#"{{"id":"{id}","object":"response","created_at":{created},"status":"{status}","#,
            r#""background":false,"error":null,"incomplete_details":null,"instructions":null,"#,
            r#""max_output_tokens":null,"model":{model},"output":{output},"parallel_tool_calls":true,"#,
            r#""previous_response_id":null,"reasoning":{{"effort":null,"summary":null}},"#,
            r#""service_tier":"default","store":true,"temperature":1.0,"#,
            r#""text":{{"format":{{"type":"text"}}}},"tool_choice":"auto","tools":[],"top_p":1.0,"#,
            r#""truncation":"disabled","usage":{usage},"user":null,"metadata":{{}}}}"#
        ),
        id = RESPONSE_ID,
        created = CREATED,
        status = status,
        model = model,
        output = output,
        usage = usage,
    )
}

fn responses_events(model: &str, chunks: usize) -> Vec<Bytes> {
    let text = json_str(&deltas(chunks).collect::<String>());
    let mut events = Vec::with_capacity(chunks + 8);
    let mut push = |kind: &str, rest: &str| {
        let seq = events.len();
        events.push(event_frame(
            kind,
            &format!(r#"{{"type":"{kind}","sequence_number":{seq},{rest}}}"#),
        ));
    };
    let in_progress = response_object(model, "in_progress", "[]", "null");
    push("response.created", &format!(r#""response":{in_progress}"#));
    push(
        "response.in_progress",
        &format!(r#""response":{in_progress}"#),
    );
    push(
        "response.output_item.added",
        &format!(
            r#""output_index":0,"item":{}"#,
            response_message("in_progress", "")
        ),
    );
    let at = format!(r#""item_id":"{RESPONSE_ITEM_ID}","output_index":0,"content_index":0"#);
    push(
        "response.content_part.added",
        &format!(r#"{at},"part":{}"#, output_text(r#""""#)),
    );
    for d in deltas(chunks) {
        push(
            "response.output_text.delta",
            &format!(r#"{at},"delta":{},"logprobs":[]"#, json_str(d)),
        );
    }
    push(
        "response.output_text.done",
        &format!(r#"{at},"text":{text},"logprobs":[]"#),
    );
    let part = output_text(&text);
    push(
        "response.content_part.done",
        &format!(r#"{at},"part":{part}"#),
    );
    let item = response_message("completed", &part);
    push(
        "response.output_item.done",
        &format!(r#""output_index":0,"item":{item}"#),
    );
    let completed = response_object(
        model,
        "completed",
        &format!("[{item}]"),
        &responses_usage(chunks as u64),
    );
    push("response.completed", &format!(r#""response":{completed}"#));
    events
}
