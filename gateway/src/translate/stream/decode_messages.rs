//! Anthropic's message events into hub events (the upstream side of
//! `encode_messages.rs`).

use serde_json::Value;

use crate::sse::SseEvent;
use crate::translate::hub::{Event, Usage};
use crate::translate::messages;

#[derive(Default)]
pub(crate) struct MessagesDecoder {
    /// Usage so far: `message_start` has the input, `message_delta` the final output.
    usage: Usage,
}

impl MessagesDecoder {
    pub(super) fn decode(&mut self, ev: &SseEvent<'_>, out: &mut Vec<Event>) {
        let Some(v) = super::decode::json_event(ev, out) else {
            return;
        };
        match v.get("type").and_then(Value::as_str).unwrap_or_default() {
            "message_start" => {
                let m = v.get("message").unwrap_or(&Value::Null);
                out.push(Event::Start {
                    id: super::decode::str_field(m, "id"),
                    model: super::decode::str_field(m, "model"),
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
                        let t = super::decode::str_field(b, "text");
                        if !t.is_empty() {
                            out.push(Event::Text(t));
                        }
                    }
                    Some("tool_use") => out.push(Event::ToolCallStart {
                        id: super::decode::str_field(b, "id"),
                        name: super::decode::str_field(b, "name"),
                    }),
                    _ => {}
                }
            }
            "content_block_delta" => {
                let d = v.get("delta").unwrap_or(&Value::Null);
                match d.get("type").and_then(Value::as_str) {
                    Some("text_delta") => {
                        out.push(Event::Text(super::decode::str_field(d, "text")))
                    }
                    Some("input_json_delta") => {
                        let a = super::decode::str_field(d, "partial_json");
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
            "error" => out.push(super::decode::error_event(&v)),
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
