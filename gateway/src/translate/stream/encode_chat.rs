//! Hub events into chat completion chunks: a role chunk, content and tool-call deltas, the
//! finish_reason chunk, the usage chunk (`"choices":[]`, when the client asked for
//! `include_usage`) and `data: [DONE]`.

use serde_json::{json, Value};

use super::data_frame;
use crate::translate::chat::{finish_reason, usage_json};
use crate::translate::hub::{Event, StopReason, Usage};

pub(crate) struct ChatEncoder {
    include_usage: bool,
    id: String,
    model: String,
    created: u64,
    started: bool,
    /// Tool calls started so far (the next call's `index`).
    tools: usize,
    stop: Option<StopReason>,
    usage: Usage,
}

impl ChatEncoder {
    pub(crate) fn new(include_usage: bool) -> ChatEncoder {
        ChatEncoder {
            include_usage,
            id: String::new(),
            model: String::new(),
            created: crate::translate::now_secs(),
            started: false,
            tools: 0,
            stop: None,
            usage: Usage::default(),
        }
    }

    fn chunk(&self, out: &mut Vec<u8>, delta: Value, finish: Option<&str>) {
        let mut c = json!({
            "id": self.id, "object": "chat.completion.chunk", "created": self.created,
            "model": self.model,
            "choices": [{"index": 0, "delta": delta, "logprobs": null, "finish_reason": finish}],
        });
        if self.include_usage {
            c["usage"] = Value::Null;
        }
        data_frame(out, &c);
    }

    fn start(&mut self, out: &mut Vec<u8>) {
        if !self.started {
            self.started = true;
            self.chunk(out, json!({"role": "assistant", "content": ""}), None);
        }
    }

    pub(crate) fn encode(&mut self, e: &Event, out: &mut Vec<u8>) {
        match e {
            Event::Start { id, model } => {
                self.id = id.clone();
                self.model = model.clone();
                self.start(out);
            }
            Event::Text(t) => {
                self.start(out);
                self.chunk(out, json!({"content": t}), None);
            }
            Event::ToolCallStart { id, name } => {
                self.start(out);
                let tc = json!({"index": self.tools, "id": id, "type": "function",
                    "function": {"name": name, "arguments": ""}});
                self.tools += 1;
                self.chunk(out, json!({"tool_calls": [tc]}), None);
            }
            Event::ToolArgs(a) => {
                let index = self.tools.saturating_sub(1);
                let tc = json!({"index": index, "function": {"arguments": a}});
                self.chunk(out, json!({"tool_calls": [tc]}), None);
            }
            Event::Stop(s) => self.stop = Some(*s),
            Event::Usage(u) => self.usage = *u,
            Event::Error { kind, message } => data_frame(
                out,
                &json!({"error": {"message": message, "type": kind, "param": null, "code": null}}),
            ),
            Event::End => {
                self.start(out);
                let stop = self.stop.unwrap_or(StopReason::EndTurn);
                self.chunk(out, json!({}), Some(finish_reason(stop)));
                if self.include_usage {
                    data_frame(
                        out,
                        &json!({
                            "id": self.id, "object": "chat.completion.chunk",
                            "created": self.created, "model": self.model,
                            "choices": [], "usage": usage_json(&self.usage),
                        }),
                    );
                }
                out.extend_from_slice(b"data: [DONE]\n\n");
            }
        }
    }
}
