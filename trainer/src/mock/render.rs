//! The exact bodies and SSE event sequences of the dialects (PROTOCOLS.md); Gemini's are
//! in `gemini`.
//!
//! JSON is written by hand so that field order matches the real APIs (`type` first) and
//! rendering needs no intermediate tree; every string goes through [`json_str`].

use bytes::Bytes;

use super::answer::Tokens;
use super::gemini;
use super::json::json_str;
use crate::dialect::Dialect;

pub(super) const CREATED: u64 = 1_767_225_600;
pub(super) const CHAT_ID: &str = "chatcmpl-mock0001";
pub(super) const MESSAGE_ID: &str = "msg_mock0001";
const RESPONSE_ID: &str = "resp_mock0001";
const RESPONSE_ITEM_ID: &str = "msg_mock0001";

/// What one request is answered with.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) struct Shape {
    pub dialect: Dialect,
    pub stream: bool,
    /// Chat only: `stream_options.include_usage`.
    pub include_usage: bool,
    /// Gemini only: `streamGenerateContent` without `alt=sse`, answered with one JSON array
    /// of the chunks, written in pieces.
    pub json_array: bool,
}

/// The non-streamed JSON body of a text answer; the text is `deltas` joined.
pub(crate) fn full_body(dialect: Dialect, model: &str, deltas: &[&str], tokens: Tokens) -> Bytes {
    let model = json_str(model);
    let text = json_str(&deltas.concat());
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
            usage = chat_usage(tokens),
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
            usage = anthropic_usage(tokens),
        ),
        Dialect::Responses => response_object(
            &model,
            "completed",
            &format!("[{}]", response_message("completed", &output_text(&text))),
            &responses_usage(tokens),
        ),
        Dialect::Gemini => gemini::text_body(&model, deltas, tokens),
    };
    Bytes::from(body)
}

/// Every SSE frame of a streamed text answer, in order, each ending in its blank line (a
/// Gemini JSON array: its pieces).
pub(crate) fn stream_events(
    shape: Shape,
    model: &str,
    deltas: &[&str],
    tokens: Tokens,
) -> Vec<Bytes> {
    let model = json_str(model);
    match shape.dialect {
        Dialect::Chat => chat_events(&model, deltas, tokens, shape.include_usage),
        Dialect::Messages => messages_events(&model, deltas, tokens),
        Dialect::Responses => responses_events(&model, deltas, tokens),
        Dialect::Gemini => gemini::text_stream(&model, deltas, tokens, shape.json_array),
    }
}

pub(super) fn data_frame(data: &str) -> Bytes {
    Bytes::from(format!("data: {data}\n\n"))
}

pub(super) fn event_frame(event: &str, data: &str) -> Bytes {
    Bytes::from(format!("event: {event}\ndata: {data}\n\n"))
}

pub(super) fn chat_usage(tokens: Tokens) -> String {
    format!(
        concat!(
            r#"{{"prompt_tokens":{i},"completion_tokens":{o},"total_tokens":{t},"#,
            r#""prompt_tokens_details":{{"cached_tokens":{c},"audio_tokens":0}},"#,
            r#""completion_tokens_details":{{"reasoning_tokens":0,"audio_tokens":0,"#,
            r#""accepted_prediction_tokens":0,"rejected_prediction_tokens":0}}}}"#
        ),
        i = tokens.input,
        c = tokens.cached,
        o = tokens.output,
        t = tokens.input + tokens.output,
    )
}

/// The chunk writer of one chat stream: every chunk but the usage chunk carries
/// `"usage":null` when the client asked for usage, as the real API does.
pub(super) struct ChatChunks {
    head: String,
    include_usage: bool,
}

impl ChatChunks {
    /// `model` is a JSON string literal.
    pub(super) fn new(model: &str, include_usage: bool) -> ChatChunks {
        ChatChunks {
            head: format!(
                r#"{{"id":"{CHAT_ID}","object":"chat.completion.chunk","created":{CREATED},"model":{model},"service_tier":"default","system_fingerprint":"fp_mock","choices":"#
            ),
            include_usage,
        }
    }

    /// A chunk with one choice; `delta` is a JSON object and `finish` JSON (`null` or a string).
    pub(super) fn choice(&self, delta: &str, finish: &str) -> Bytes {
        let tail = if self.include_usage {
            r#","usage":null}"#
        } else {
            "}"
        };
        data_frame(&format!(
            r#"{}[{{"index":0,"delta":{delta},"logprobs":null,"finish_reason":{finish}}}]{tail}"#,
            self.head
        ))
    }

    /// The end of the stream: the usage chunk (when asked for) and `[DONE]`.
    pub(super) fn finish(&self, events: &mut Vec<Bytes>, tokens: Tokens) {
        if self.include_usage {
            events.push(data_frame(&format!(
                r#"{}[],"usage":{}}}"#,
                self.head,
                chat_usage(tokens)
            )));
        }
        events.push(data_frame("[DONE]"));
    }
}

fn chat_events(model: &str, deltas: &[&str], tokens: Tokens, include_usage: bool) -> Vec<Bytes> {
    let chunks = ChatChunks::new(model, include_usage);
    let mut events = Vec::with_capacity(deltas.len() + 4);
    events.push(chunks.choice(
        r#"{"role":"assistant","content":"","refusal":null}"#,
        "null",
    ));
    for d in deltas {
        events.push(chunks.choice(&format!(r#"{{"content":{}}}"#, json_str(d)), "null"));
    }
    events.push(chunks.choice("{}", r#""stop""#));
    chunks.finish(&mut events, tokens);
    events
}

pub(super) fn anthropic_usage(tokens: Tokens) -> String {
    format!(
        r#"{{"input_tokens":{},"cache_creation_input_tokens":0,"cache_read_input_tokens":{},"output_tokens":{}}}"#,
        tokens.input, tokens.cached, tokens.output
    )
}

/// The `message_start` frame; `model` is a JSON string literal.
pub(super) fn message_start(model: &str, tokens: Tokens) -> Bytes {
    // Like the real API, message_start reports output_tokens 1; message_delta carries the
    // cumulative final count, which replaces it.
    event_frame(
        "message_start",
        &format!(
            concat!(
                r#"{{"type":"message_start","message":{{"id":"{id}","type":"message","role":"assistant","#,
                r#""model":{model},"content":[],"stop_reason":null,"stop_sequence":null,"usage":{usage}}}}}"#
            ),
            id = MESSAGE_ID,
            model = model,
            usage = anthropic_usage(Tokens {
                output: 1,
                ..tokens
            }),
        ),
    )
}

/// The `message_delta` and `message_stop` frames that end a message.
pub(super) fn message_end(events: &mut Vec<Bytes>, stop_reason: &str, output_tokens: u64) {
    events.push(event_frame(
        "message_delta",
        &format!(
            r#"{{"type":"message_delta","delta":{{"stop_reason":"{stop_reason}","stop_sequence":null}},"usage":{{"output_tokens":{output_tokens}}}}}"#
        ),
    ));
    events.push(event_frame("message_stop", r#"{"type":"message_stop"}"#));
}

fn messages_events(model: &str, deltas: &[&str], tokens: Tokens) -> Vec<Bytes> {
    let mut events = Vec::with_capacity(deltas.len() + 6);
    events.push(message_start(model, tokens));
    events.push(event_frame(
        "content_block_start",
        r#"{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}"#,
    ));
    events.push(event_frame("ping", r#"{"type":"ping"}"#));
    for d in deltas {
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
    message_end(&mut events, "end_turn", tokens.output);
    events
}

pub(super) fn responses_usage(tokens: Tokens) -> String {
    format!(
        concat!(
            r#"{{"input_tokens":{i},"input_tokens_details":{{"cached_tokens":{c}}},"#,
            r#""output_tokens":{o},"output_tokens_details":{{"reasoning_tokens":0}},"total_tokens":{t}}}"#
        ),
        i = tokens.input,
        c = tokens.cached,
        o = tokens.output,
        t = tokens.input + tokens.output,
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
pub(super) fn response_object(model: &str, status: &str, output: &str, usage: &str) -> String {
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

/// Writes the events of one Responses stream, numbering them with `sequence_number`.
pub(super) struct ResponsesEvents {
    pub events: Vec<Bytes>,
}

impl ResponsesEvents {
    /// Starts with `response.created` and `response.in_progress`; `model` is a JSON literal.
    pub(super) fn start(model: &str, capacity: usize) -> ResponsesEvents {
        let mut out = ResponsesEvents {
            events: Vec::with_capacity(capacity),
        };
        let in_progress = response_object(model, "in_progress", "[]", "null");
        out.push("response.created", &format!(r#""response":{in_progress}"#));
        out.push(
            "response.in_progress",
            &format!(r#""response":{in_progress}"#),
        );
        out
    }

    /// One event; `rest` is the JSON members after `type` and `sequence_number`.
    pub(super) fn push(&mut self, kind: &str, rest: &str) {
        let seq = self.events.len();
        self.events.push(event_frame(
            kind,
            &format!(r#"{{"type":"{kind}","sequence_number":{seq},{rest}}}"#),
        ));
    }
}

fn responses_events(model: &str, deltas: &[&str], tokens: Tokens) -> Vec<Bytes> {
    let text = json_str(&deltas.concat());
    let mut out = ResponsesEvents::start(model, deltas.len() + 8);
    let mut push = |kind: &str, rest: &str| out.push(kind, rest);
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
    for d in deltas {
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
        &responses_usage(tokens),
    );
    push("response.completed", &format!(r#""response":{completed}"#));
    out.events
}
