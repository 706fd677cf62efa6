//! Hub events into Anthropic's event lifecycle: message_start, per block
//! content_block_start / content_block_delta / content_block_stop, message_delta (stop
//! reason and usage), message_stop.

use serde::Serialize;

use super::named_frame;
use crate::translate::hub::{Event, StopReason, Usage};
use crate::translate::json::write_str;
use crate::translate::messages::stop_reason;

#[derive(Clone, Copy, PartialEq, Eq)]
enum Block {
    Text,
    Tool,
}

/// One event's data, tagged by `type` (also the event's name).
#[derive(Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum Frame<'a> {
    ContentBlockStart {
        index: usize,
        content_block: BlockStart<'a>,
    },
    ContentBlockDelta {
        index: usize,
        delta: Delta<'a>,
    },
    Error {
        error: ErrorOut<'a>,
    },
}

impl Frame<'_> {
    fn name(&self) -> &'static str {
        match self {
            Frame::ContentBlockStart { .. } => "content_block_start",
            Frame::ContentBlockDelta { .. } => "content_block_delta",
            Frame::Error { .. } => "error",
        }
    }

    fn write(&self, out: &mut Vec<u8>) {
        named_frame(out, self.name(), self);
    }
}

#[derive(Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum BlockStart<'a> {
    // Text blocks start in `open_text`.
    ToolUse {
        id: &'a str,
        name: &'a str,
        input: Empty,
    },
}

/// `{}`.
#[derive(Serialize)]
struct Empty {}

#[derive(Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum Delta<'a> {
    InputJsonDelta { partial_json: &'a str },
}

#[derive(Serialize)]
struct ErrorOut<'a> {
    #[serde(rename = "type")]
    ty: &'a str,
    message: &'a str,
}

/// `n` in decimal.
fn number(out: &mut Vec<u8>, mut n: u64) {
    let mut digits = [0u8; 20];
    let mut at = digits.len();
    loop {
        at -= 1;
        digits[at] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    out.extend_from_slice(&digits[at..]);
}

/// A `text_delta` frame, the bulk of a stream, written by hand: as [`Frame::write`] writes
/// it, for a fraction of serde's cost per frame.
fn text_delta(out: &mut Vec<u8>, index: usize, text: &str) {
    out.extend_from_slice(
        b"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":",
    );
    number(out, index as u64);
    out.extend_from_slice(b",\"delta\":{\"type\":\"text_delta\",\"text\":");
    write_str(out, text);
    out.extend_from_slice(b"}}\n\n");
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
        out.extend_from_slice(
            b"event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":",
        );
        write_str(out, id);
        out.extend_from_slice(b",\"type\":\"message\",\"role\":\"assistant\",\"model\":");
        write_str(out, model);
        out.extend_from_slice(b",\"content\":[],\"stop_reason\":null,\"stop_sequence\":null,\"usage\":{\"input_tokens\":");
        number(out, self.usage.uncached_input());
        out.extend_from_slice(b",\"output_tokens\":0}}}\n\n");
    }

    fn open(&mut self, out: &mut Vec<u8>, kind: Block, block: BlockStart<'_>) {
        self.close(out);
        Frame::ContentBlockStart {
            index: self.index,
            content_block: block,
        }
        .write(out);
        self.open = Some(kind);
    }

    /// [`Self::open`] of a text block, written directly: through serde this one frame cost
    /// ~1,200 instructions, a tenth of what a short translated stream's encoding costs.
    fn open_text(&mut self, out: &mut Vec<u8>) {
        self.close(out);
        out.extend_from_slice(
            b"event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":",
        );
        number(out, self.index as u64);
        out.extend_from_slice(b",\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n");
        self.open = Some(Block::Text);
    }

    fn close(&mut self, out: &mut Vec<u8>) {
        if self.open.take().is_some() {
            out.extend_from_slice(
                b"event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":",
            );
            number(out, self.index as u64);
            out.extend_from_slice(b"}\n\n");
            self.index += 1;
        }
    }

    pub(crate) fn encode(&mut self, e: &Event, out: &mut Vec<u8>) {
        match e {
            Event::Start { id, model } => self.start(out, id, model),
            Event::Text(t) => {
                self.start(out, "msg", "");
                if self.open != Some(Block::Text) {
                    self.open_text(out);
                }
                text_delta(out, self.index, t);
            }
            Event::ToolCallStart { id, name } => {
                self.start(out, "msg", "");
                self.open(
                    out,
                    Block::Tool,
                    BlockStart::ToolUse {
                        id,
                        name,
                        input: Empty {},
                    },
                );
            }
            Event::ToolArgs(a) => {
                if self.open == Some(Block::Tool) {
                    Frame::ContentBlockDelta {
                        index: self.index,
                        delta: Delta::InputJsonDelta { partial_json: a },
                    }
                    .write(out);
                }
            }
            Event::Stop(s) => self.stop = Some(*s),
            Event::Usage(u) => self.usage = *u,
            Event::Error { kind, message } => Frame::Error {
                error: ErrorOut { ty: kind, message },
            }
            .write(out),
            Event::End => {
                self.start(out, "msg", "");
                self.close(out);
                let u = &self.usage;
                out.extend_from_slice(b"event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"");
                let stop = stop_reason(self.stop.unwrap_or(StopReason::EndTurn));
                out.extend_from_slice(stop.as_bytes());
                out.extend_from_slice(b"\",\"stop_sequence\":null},\"usage\":{\"input_tokens\":");
                number(out, u.uncached_input());
                out.extend_from_slice(b",\"output_tokens\":");
                number(out, u.output);
                out.extend_from_slice(b",\"cache_read_input_tokens\":");
                number(out, u.cache_read);
                out.extend_from_slice(b",\"cache_creation_input_tokens\":");
                number(out, u.cache_creation);
                out.extend_from_slice(
                    b"}}\n\nevent: message_stop\ndata: {\"type\":\"message_stop\"}\n\n",
                );
            }
        }
    }
}
