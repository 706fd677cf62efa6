//! Chat completion chunks into hub events (the upstream side of `encode_chat.rs`).

use std::borrow::Cow;

use serde_json::Value;

use super::chat_chunk;
use crate::sse::SseEvent;
use crate::translate::hub::{Event, MAX_TOOL_CALLS};
use crate::translate::{chat, wire};

#[derive(Default)]
pub(crate) struct ChatDecoder {
    started: bool,
    pub(super) stopped: bool,
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
    pub(super) fn decode(&mut self, ev: &SseEvent<'_>, out: &mut Vec<Event>) {
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
                    out.push(super::decode::error_event(&tree));
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
                        out.push(super::decode::over_the_tool_limit());
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
