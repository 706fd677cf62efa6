//! Hub events into Anthropic's event lifecycle: message_start, per block
//! content_block_start / content_block_delta / content_block_stop, message_delta (stop
//! reason and usage), message_stop.

use serde_json::json;

use super::named_frame;
use crate::translate::hub::{Event, StopReason, Usage};
use crate::translate::messages::stop_reason;

#[derive(Clone, Copy, PartialEq, Eq)]
enum Block {
    Text,
    Tool,
}

#[derive(Default)]
pub(crate) struct MessagesEncoder {
    started: bool,
    open: Option<Block>,
    /// Index of the open block, or of the next one.
    index: usize,
    stop: Option<StopReason>,
    usage: Usage,
}

impl MessagesEncoder {
    fn start(&mut self, out: &mut Vec<u8>, id: &str, model: &str) {
        if self.started {
            return;
        }
        self.started = true;
        // A chat upstream reports usage only at the end: message_delta carries it all.
        named_frame(
            out,
            "message_start",
            &json!({
                "type": "message_start",
                "message": {
                    "id": id, "type": "message", "role": "assistant", "model": model,
                    "content": [], "stop_reason": null, "stop_sequence": null,
                    "usage": {"input_tokens": self.usage.uncached_input(), "output_tokens": 0},
                },
            }),
        );
    }

    fn open(&mut self, out: &mut Vec<u8>, kind: Block, block: serde_json::Value) {
        self.close(out);
        named_frame(
            out,
            "content_block_start",
            &json!({
                "type": "content_block_start", "index": self.index, "content_block": block,
            }),
        );
        self.open = Some(kind);
    }

    fn close(&mut self, out: &mut Vec<u8>) {
        if self.open.take().is_some() {
            named_frame(
                out,
                "content_block_stop",
                &json!({"type": "content_block_stop", "index": self.index}),
            );
            self.index += 1;
        }
    }

    pub(crate) fn encode(&mut self, e: &Event, out: &mut Vec<u8>) {
        match e {
            Event::Start { id, model } => self.start(out, id, model),
            Event::Text(t) => {
                self.start(out, "msg", "");
                if self.open != Some(Block::Text) {
                    self.open(out, Block::Text, json!({"type": "text", "text": ""}));
                }
                named_frame(
                    out,
                    "content_block_delta",
                    &json!({
                        "type": "content_block_delta", "index": self.index,
                        "delta": {"type": "text_delta", "text": t},
                    }),
                );
            }
            Event::ToolCallStart { id, name } => {
                self.start(out, "msg", "");
                self.open(
                    out,
                    Block::Tool,
                    json!({"type": "tool_use", "id": id, "name": name, "input": {}}),
                );
            }
            Event::ToolArgs(a) => {
                if self.open == Some(Block::Tool) {
                    named_frame(
                        out,
                        "content_block_delta",
                        &json!({
                            "type": "content_block_delta", "index": self.index,
                            "delta": {"type": "input_json_delta", "partial_json": a},
                        }),
                    );
                }
            }
            Event::Stop(s) => self.stop = Some(*s),
            Event::Usage(u) => self.usage = *u,
            Event::Error { kind, message } => named_frame(
                out,
                "error",
                &json!({
                    "type": "error", "error": {"type": kind, "message": message},
                }),
            ),
            Event::End => {
                self.start(out, "msg", "");
                self.close(out);
                let u = &self.usage;
                named_frame(
                    out,
                    "message_delta",
                    &json!({
                        "type": "message_delta",
                        "delta": {"stop_reason": stop_reason(self.stop.unwrap_or(StopReason::EndTurn)), "stop_sequence": null},
                        "usage": {
                            "input_tokens": u.uncached_input(), "output_tokens": u.output,
                            "cache_read_input_tokens": u.cache_read,
                            "cache_creation_input_tokens": u.cache_creation,
                        },
                    }),
                );
                named_frame(out, "message_stop", &json!({"type": "message_stop"}));
            }
        }
    }
}
