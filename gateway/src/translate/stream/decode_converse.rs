//! Bedrock's ConverseStream events into hub events (upstream only: no client speaks
//! Converse, so it has no encoder).

use serde_json::Value;

use crate::sse::SseEvent;
use crate::translate::hub::Event;

/// Bedrock's ConverseStream, one event-stream frame at a time (framed by
/// `super::eventstream`): `messageStart`, `contentBlockStart` (tool uses only: text blocks
/// begin with their first delta), `contentBlockDelta`, `contentBlockStop`, `messageStop`
/// (the stop reason), then `metadata` (the usage), which ends the answer. Exceptions end it
/// with an error.
#[derive(Default)]
pub(crate) struct ConverseDecoder {
    /// `messageStop` came (its reason went out at once, as Anthropic's `message_delta`
    /// does, the usage following): a stream cut before `metadata` is a whole answer.
    pub(super) stopped: bool,
    /// The target's model id (Converse's events name none).
    pub(super) model: String,
}

impl ConverseDecoder {
    pub(super) fn decode(&mut self, ev: &SseEvent<'_>, out: &mut Vec<Event>) {
        let Some(v) = super::decode::json_event(ev, out) else {
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
                        id: super::decode::str_field(t, "toolUseId"),
                        name: super::decode::str_field(t, "name"),
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
