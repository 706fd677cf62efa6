//! What the upstream stream decoders share (each decoder is its own file beside its
//! encoder: `decode_chat.rs`, `decode_messages.rs`, `decode_gemini.rs`, `decode_converse.rs`).

use serde_json::Value;

use crate::sse::SseEvent;
use crate::translate::hub::Event;

/// An event's data as JSON (Anthropic's and Converse's events), or `None` with an error
/// event pushed when it is not JSON.
pub(super) fn json_event(ev: &SseEvent<'_>, out: &mut Vec<Event>) -> Option<Value> {
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
pub(super) fn str_field(v: &Value, k: &str) -> String {
    v.get(k)
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned()
}

pub(super) fn error_event(v: &Value) -> Event {
    error_of(v.get("error").unwrap_or(v), "type")
}

/// The error event of an upstream's error object `err`, its kind read from `kind_key`.
pub(super) fn error_of(err: &Value, kind_key: &str) -> Event {
    Event::Error {
        kind: err
            .get(kind_key)
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

/// The start of the call past [`MAX_TOOL_CALLS`](crate::translate::hub::MAX_TOOL_CALLS),
/// never recorded (so a decoder's state stays within the bound): the translator counts
/// starts and ends the answer at this one, logged as `too_many_tool_calls`. An error event
/// here would be logged as the upstream's own error.
pub(super) fn over_the_tool_limit() -> Event {
    Event::ToolCallStart {
        id: String::new(),
        name: String::new(),
    }
}
