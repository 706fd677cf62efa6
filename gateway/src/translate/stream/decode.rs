//! Upstream stream decoders: chat chunks, Anthropic events and Gemini chunks into hub
//! events.

use std::borrow::Cow;

use serde_json::Value;

use super::chat_chunk;
use crate::dialect::Dialect;
use crate::sse::SseEvent;
use crate::translate::hub::{Event, StopReason, Usage, MAX_TOOL_CALLS};
use crate::translate::{chat, gemini, messages, wire};

pub(crate) enum Decoder {
    Chat(ChatDecoder),
    Messages(MessagesDecoder),
    Gemini(GeminiDecoder),
    Converse(ConverseDecoder),
}

impl Decoder {
    pub(crate) fn new(upstream: Dialect) -> Decoder {
        match upstream {
            Dialect::Messages => Decoder::Messages(MessagesDecoder::default()),
            Dialect::Gemini => Decoder::Gemini(GeminiDecoder::default()),
            Dialect::Converse => Decoder::Converse(ConverseDecoder::default()),
            // No provider streams Responses to a translated client.
            Dialect::Chat | Dialect::Responses => Decoder::Chat(ChatDecoder::default()),
        }
    }

    /// The upstream API this decoder reads.
    pub(crate) fn upstream(&self) -> Dialect {
        match self {
            Decoder::Chat(_) => Dialect::Chat,
            Decoder::Messages(_) => Dialect::Messages,
            Decoder::Gemini(_) => Dialect::Gemini,
            Decoder::Converse(_) => Dialect::Converse,
        }
    }

    /// Decodes one event (within its node budget: the translator checks that first).
    pub(crate) fn decode(&mut self, ev: &SseEvent<'_>, out: &mut Vec<Event>) {
        match self {
            Decoder::Chat(d) => d.decode(ev, out),
            Decoder::Messages(d) => d.decode(ev, out),
            Decoder::Gemini(d) => d.decode(ev, out),
            Decoder::Converse(d) => d.decode(ev, out),
        }
    }

    /// The model an answer names when its upstream names none (Converse).
    pub(crate) fn set_model(&mut self, model: &str) {
        if let Decoder::Converse(d) = self {
            model.clone_into(&mut d.model);
        }
    }

    /// Whether the answer is complete although its terminator never came.
    pub(crate) fn complete_without_terminator(&self) -> bool {
        match self {
            // Some compatible servers end after the finish (and usage) chunk without [DONE].
            Decoder::Chat(d) => d.stopped,
            Decoder::Messages(_) => false,
            // Gemini streams have no terminator: the chunk with a finishReason is the end.
            Decoder::Gemini(d) => d.stopped,
            // Usage (`metadata`) follows `messageStop`: an answer cut between them is whole.
            Decoder::Converse(d) => d.stopped,
        }
    }
}

/// An event's data as JSON (Anthropic's and Converse's events), or `None` with an error
/// event pushed when it is not JSON.
fn json_event(ev: &SseEvent<'_>, out: &mut Vec<Event>) -> Option<Value> {
    let v = serde_json::from_slice(ev.data).ok();
    if v.is_none() {
        out.push(Event::Error {
            kind: "api_error".into(),
            message: "the upstream sent an event that is not JSON".into(),
        });
    }
    v
}

/// `v[k]` as a string, empty when absent or not a string.
fn str_field(v: &Value, k: &str) -> String {
    v.get(k)
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned()
}

fn error_event(v: &Value) -> Event {
    let err = v.get("error").unwrap_or(v);
    Event::Error {
        kind: err
            .get("type")
            .and_then(Value::as_str)
            .unwrap_or("api_error")
            .to_owned(),
        message: err
            .get("message")
            .and_then(Value::as_str)
            .unwrap_or("upstream error")
            .to_owned(),
    }
}

/// The start of the call past [`MAX_TOOL_CALLS`], never recorded (so a decoder's state stays
/// within the bound): the translator counts starts and ends the answer at this one, logged as
/// `too_many_tool_calls`. An error event here would be logged as the upstream's own error.
fn over_the_tool_limit() -> Event {
    Event::ToolCallStart {
        id: String::new(),
        name: String::new(),
    }
}

#[derive(Default)]
pub(crate) struct ChatDecoder {
    started: bool,
    stopped: bool,
    /// Chat `tool_calls[].index` values already started: a set, as one upstream chunk can
    /// name thousands (a list made that quadratic), and bounded by [`MAX_TOOL_CALLS`] here
    /// already, so a chunk naming more costs no more than the bound.
    tools: std::collections::HashSet<u64>,
    head: chat_chunk::Head,
}

impl ChatDecoder {
    /// Chunks are read by [`chat_chunk::read`], or through typed, borrowed structs
    /// ([`wire::ChunkIn`]) where it gives up: a `Value` tree per chunk was most of a
    /// translated stream's cost.
    fn decode(&mut self, ev: &SseEvent<'_>, out: &mut Vec<Event>) {
        if ev.data == b"[DONE]" {
            out.push(Event::End);
            return;
        }
        // Validated once here: `from_slice` validates every string and key on its own.
        let Ok(data) = std::str::from_utf8(ev.data) else {
            out.push(not_a_chunk());
            return;
        };
        let v = match chat_chunk::read(data, &mut self.head) {
            Some(v) => v,
            None => match serde_json::from_str::<wire::ChunkIn<'_>>(data) {
                Ok(v) if v.error.is_some_and(|e| e.get() != "null") => {
                    let tree = serde_json::from_str::<Value>(data).unwrap_or(Value::Null);
                    out.push(error_event(&tree));
                    return;
                }
                Ok(v) => v.into(),
                Err(_) => {
                    out.push(not_a_chunk());
                    return;
                }
            },
        };
        // Azure OpenAI's first chunk names no id or model (`""`) and carries only the
        // prompt's content-filter results (`choices: []`): the answer starts at the next
        // chunk, which names them.
        if !self.started && v.choice.is_none() && v.usage.is_none() {
            return;
        }
        if !self.started {
            self.started = true;
            out.push(Event::Start {
                id: v.id.as_deref().unwrap_or("chatcmpl").to_owned(),
                model: v.model.as_deref().unwrap_or_default().to_owned(),
            });
        }
        if let Some(choice) = v.choice {
            for t in [choice.content, choice.refusal].into_iter().flatten() {
                if !t.is_empty() {
                    out.push(Event::Text(t.into_owned()));
                }
            }
            for tc in choice.tool_calls {
                let index = tc.index.unwrap_or(0);
                let (name, arguments) = match tc.function {
                    Some(f) => (f.name, f.arguments),
                    None => (None, None),
                };
                if !self.tools.contains(&index) {
                    if self.tools.len() == MAX_TOOL_CALLS {
                        out.push(over_the_tool_limit());
                        return;
                    }
                    self.tools.insert(index);
                    out.push(Event::ToolCallStart {
                        id: tc.id.map(Cow::into_owned).unwrap_or_default(),
                        name: name.map(Cow::into_owned).unwrap_or_default(),
                    });
                }
                if let Some(a) = arguments.filter(|a| !a.is_empty()) {
                    out.push(Event::ToolArgs(a.into_owned()));
                }
            }
            if let Some(r) = choice.finish_reason {
                self.stopped = true;
                out.push(Event::Stop(chat::stop_from(Some(&r))));
            }
        }
        if let Some(u) = &v.usage {
            out.push(Event::Usage(chat::usage_from(u)));
        }
    }
}

fn not_a_chunk() -> Event {
    Event::Error {
        kind: "api_error".into(),
        message: "the upstream sent an event that is not a chat chunk".into(),
    }
}

#[derive(Default)]
pub(crate) struct MessagesDecoder {
    /// Usage so far: `message_start` has the input, `message_delta` the final output.
    usage: Usage,
}

impl MessagesDecoder {
    fn decode(&mut self, ev: &SseEvent<'_>, out: &mut Vec<Event>) {
        let Some(v) = json_event(ev, out) else {
            return;
        };
        match v.get("type").and_then(Value::as_str).unwrap_or_default() {
            "message_start" => {
                let m = v.get("message").unwrap_or(&Value::Null);
                out.push(Event::Start {
                    id: str_field(m, "id"),
                    model: str_field(m, "model"),
                });
                if let Some(u) = m.get("usage") {
                    self.merge(u);
                    out.push(Event::Usage(self.usage));
                }
            }
            "content_block_start" => {
                let b = v.get("content_block").unwrap_or(&Value::Null);
                match b.get("type").and_then(Value::as_str) {
                    Some("text") => {
                        let t = str_field(b, "text");
                        if !t.is_empty() {
                            out.push(Event::Text(t));
                        }
                    }
                    Some("tool_use") => out.push(Event::ToolCallStart {
                        id: str_field(b, "id"),
                        name: str_field(b, "name"),
                    }),
                    _ => {}
                }
            }
            "content_block_delta" => {
                let d = v.get("delta").unwrap_or(&Value::Null);
                match d.get("type").and_then(Value::as_str) {
                    Some("text_delta") => out.push(Event::Text(str_field(d, "text"))),
                    Some("input_json_delta") => {
                        let a = str_field(d, "partial_json");
                        if !a.is_empty() {
                            out.push(Event::ToolArgs(a));
                        }
                    }
                    _ => {}
                }
            }
            "message_delta" => {
                if let Some(r) = v
                    .get("delta")
                    .and_then(|d| d.get("stop_reason"))
                    .and_then(Value::as_str)
                {
                    out.push(Event::Stop(messages::stop_from(Some(r))));
                }
                if let Some(u) = v.get("usage") {
                    self.merge(u);
                    out.push(Event::Usage(self.usage));
                }
            }
            "message_stop" => out.push(Event::End),
            "error" => out.push(error_event(&v)),
            _ => {} // ping, content_block_stop, unknown future events
        }
    }

    /// Later figures win field by field (`message_delta` counts are cumulative).
    fn merge(&mut self, u: &Value) {
        let get = |k: &str| u.get(k).and_then(Value::as_u64);
        let old = self.usage;
        let uncached = get("input_tokens").unwrap_or(old.uncached_input());
        let cache_read = get("cache_read_input_tokens").unwrap_or(old.cache_read);
        let cache_creation = get("cache_creation_input_tokens").unwrap_or(old.cache_creation);
        self.usage = Usage {
            input: uncached
                .saturating_add(cache_read)
                .saturating_add(cache_creation),
            cache_read,
            cache_creation,
            output: get("output_tokens").unwrap_or(old.output),
        };
    }
}

#[derive(Default)]
pub(crate) struct GeminiDecoder {
    started: bool,
    stopped: bool,
    /// Calls started (each chunk holds whole calls), bounded by [`MAX_TOOL_CALLS`].
    calls: usize,
}

impl GeminiDecoder {
    fn decode(&mut self, ev: &SseEvent<'_>, out: &mut Vec<Event>) {
        let Ok(v) = serde_json::from_slice::<gemini::wire::GenerateIn<'_>>(ev.data) else {
            out.push(Event::Error {
                kind: "api_error".into(),
                message: "the upstream sent an event that is not a Gemini chunk".into(),
            });
            return;
        };
        if let Some(e) = v.error {
            let tree = serde_json::from_str::<Value>(e.get()).unwrap_or(Value::Null);
            out.push(Event::Error {
                kind: tree
                    .get("status")
                    .and_then(Value::as_str)
                    .unwrap_or("api_error")
                    .to_owned(),
                message: tree
                    .get("message")
                    .and_then(Value::as_str)
                    .unwrap_or("upstream error")
                    .to_owned(),
            });
            return;
        }
        if !self.started {
            self.started = true;
            out.push(Event::Start {
                id: v.response_id.as_deref().unwrap_or("gemini").to_owned(),
                model: v.model_version.as_deref().unwrap_or_default().to_owned(),
            });
        }
        let blocked = v.prompt_feedback.and_then(|f| f.block_reason).is_some();
        let mut finish = None;
        if let Some(c) = v.candidates.and_then(|c| c.into_iter().next()) {
            finish = c.finish_reason;
            for p in c.content.and_then(|c| c.parts).into_iter().flatten() {
                if let Some(f) = p.function_call {
                    if self.calls == MAX_TOOL_CALLS {
                        out.push(over_the_tool_limit());
                        return;
                    }
                    match gemini::call(f, p.thought_signature.as_deref(), self.calls) {
                        Ok((id, name, arguments)) => {
                            self.calls += 1;
                            out.push(Event::ToolCallStart { id, name });
                            out.push(Event::ToolArgs(arguments));
                        }
                        Err(e) => {
                            out.push(Event::Error {
                                kind: "api_error".into(),
                                message: e.0,
                            });
                            return;
                        }
                    }
                } else if let Some(t) = p.text.filter(|t| !t.is_empty() && p.thought != Some(true))
                {
                    out.push(Event::Text(t.into_owned()));
                }
            }
        }
        if let Some(u) = &v.usage_metadata {
            out.push(Event::Usage(gemini::usage_from(u)));
        }
        if blocked || finish.is_some() {
            self.stopped = true;
            out.push(Event::Stop(if blocked {
                StopReason::ContentFilter
            } else {
                gemini::stop_from(finish.as_deref(), self.calls > 0)
            }));
        }
    }
}

/// Bedrock's ConverseStream, one event-stream frame at a time (framed by
/// `super::eventstream`): `messageStart`, `contentBlockStart` (tool uses only: text blocks
/// begin with their first delta), `contentBlockDelta`, `contentBlockStop`, `messageStop`
/// (the stop reason), then `metadata` (the usage), which ends the answer. Exceptions end it
/// with an error.
#[derive(Default)]
pub(crate) struct ConverseDecoder {
    /// `messageStop` came (its reason went out at once, as Anthropic's `message_delta`
    /// does, the usage following): a stream cut before `metadata` is a whole answer.
    stopped: bool,
    /// The target's model id (Converse's events name none).
    model: String,
}

impl ConverseDecoder {
    fn decode(&mut self, ev: &SseEvent<'_>, out: &mut Vec<Event>) {
        let Some(v) = json_event(ev, out) else {
            return;
        };
        match ev.event {
            b"messageStart" => out.push(Event::Start {
                id: crate::translate::converse::answer_id(),
                model: self.model.clone(),
            }),
            b"contentBlockStart" => {
                // The translator bounds the calls (`hub::MAX_TOOL_CALLS`).
                if let Some(t) = v.pointer("/start/toolUse") {
                    out.push(Event::ToolCallStart {
                        id: str_field(t, "toolUseId"),
                        name: str_field(t, "name"),
                    });
                }
            }
            b"contentBlockDelta" => {
                let d = v.get("delta").unwrap_or(&Value::Null);
                if let Some(t) = d.get("text").and_then(Value::as_str) {
                    if !t.is_empty() {
                        out.push(Event::Text(t.to_owned()));
                    }
                } else if let Some(a) = d.pointer("/toolUse/input").and_then(Value::as_str) {
                    if !a.is_empty() {
                        out.push(Event::ToolArgs(a.to_owned()));
                    }
                }
                // Reasoning and citations are never asked for on a translated request.
            }
            b"messageStop" => {
                self.stopped = true;
                out.push(Event::Stop(crate::translate::converse::stop_from(
                    v.get("stopReason").and_then(Value::as_str),
                )));
            }
            b"metadata" => {
                if let Some(u) = v.get("usage") {
                    out.push(Event::Usage(crate::translate::converse::usage_from(u)));
                }
                out.push(Event::End);
            }
            b"contentBlockStop" => {}
            name => {
                let message = v
                    .get("message")
                    .or_else(|| v.get("Message"))
                    .and_then(Value::as_str)
                    .unwrap_or("upstream error")
                    .to_owned();
                let kind = match name {
                    b"throttlingException" => "rate_limit_error",
                    b"validationException" => "invalid_request_error",
                    b"serviceUnavailableException" => "overloaded_error",
                    n if n.ends_with(b"Exception") || n == super::eventstream::ERROR_EVENT => {
                        "api_error"
                    }
                    // An event this reader does not know (a later API's): skipped.
                    _ => return,
                };
                out.push(Event::Error {
                    kind: kind.into(),
                    message,
                });
            }
        }
    }
}
