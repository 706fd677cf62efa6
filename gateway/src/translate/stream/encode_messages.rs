//! Hub events into Anthropic's event lifecycle: message_start, per block
//! content_block_start / content_block_delta / content_block_stop, message_delta (stop
//! reason and usage), message_stop.

use serde::Serialize;

use super::named_frame;
use crate::translate::hub::{Event, StopReason, Usage};
use crate::translate::messages::stop_reason;
use crate::translate::wire::AnthropicUsageOut;

#[derive(Clone, Copy, PartialEq, Eq)]
enum Block {
    Text,
    Tool,
}

/// One event's data, tagged by `type` (also the event's name).
#[derive(Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum Frame<'a> {
    MessageStart {
        message: MessageStart<'a>,
    },
    ContentBlockStart {
        index: usize,
        content_block: BlockStart<'a>,
    },
    ContentBlockDelta {
        index: usize,
        delta: Delta<'a>,
    },
    ContentBlockStop {
        index: usize,
    },
    MessageDelta {
        delta: StopOut,
        usage: AnthropicUsageOut,
    },
    MessageStop,
    Error {
        error: ErrorOut<'a>,
    },
}

impl Frame<'_> {
    fn name(&self) -> &'static str {
        match self {
            Frame::MessageStart { .. } => "message_start",
            Frame::ContentBlockStart { .. } => "content_block_start",
            Frame::ContentBlockDelta { .. } => "content_block_delta",
            Frame::ContentBlockStop { .. } => "content_block_stop",
            Frame::MessageDelta { .. } => "message_delta",
            Frame::MessageStop => "message_stop",
            Frame::Error { .. } => "error",
        }
    }

    fn write(&self, out: &mut Vec<u8>) {
        named_frame(out, self.name(), self);
    }
}

#[derive(Serialize)]
struct MessageStart<'a> {
    id: &'a str,
    #[serde(rename = "type")]
    ty: &'static str,
    role: &'static str,
    model: &'a str,
    content: [(); 0],
    stop_reason: Option<()>,
    stop_sequence: Option<()>,
    usage: StartUsage,
}

#[derive(Serialize)]
struct StartUsage {
    input_tokens: u64,
    output_tokens: u64,
}

#[derive(Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum BlockStart<'a> {
    Text {
        text: &'static str,
    },
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
    TextDelta { text: &'a str },
    InputJsonDelta { partial_json: &'a str },
}

#[derive(Serialize)]
struct StopOut {
    stop_reason: &'static str,
    stop_sequence: Option<()>,
}

#[derive(Serialize)]
struct ErrorOut<'a> {
    #[serde(rename = "type")]
    ty: &'a str,
    message: &'a str,
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
        Frame::MessageStart {
            message: MessageStart {
                id,
                ty: "message",
                role: "assistant",
                model,
                content: [],
                stop_reason: None,
                stop_sequence: None,
                usage: StartUsage {
                    input_tokens: self.usage.uncached_input(),
                    output_tokens: 0,
                },
            },
        }
        .write(out);
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

    fn close(&mut self, out: &mut Vec<u8>) {
        if self.open.take().is_some() {
            Frame::ContentBlockStop { index: self.index }.write(out);
            self.index += 1;
        }
    }

    pub(crate) fn encode(&mut self, e: &Event, out: &mut Vec<u8>) {
        match e {
            Event::Start { id, model } => self.start(out, id, model),
            Event::Text(t) => {
                self.start(out, "msg", "");
                if self.open != Some(Block::Text) {
                    self.open(out, Block::Text, BlockStart::Text { text: "" });
                }
                Frame::ContentBlockDelta {
                    index: self.index,
                    delta: Delta::TextDelta { text: t },
                }
                .write(out);
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
                Frame::MessageDelta {
                    delta: StopOut {
                        stop_reason: stop_reason(self.stop.unwrap_or(StopReason::EndTurn)),
                        stop_sequence: None,
                    },
                    usage: AnthropicUsageOut {
                        input_tokens: u.uncached_input(),
                        output_tokens: u.output,
                        cache_read_input_tokens: u.cache_read,
                        cache_creation_input_tokens: u.cache_creation,
                    },
                }
                .write(out);
                Frame::MessageStop.write(out);
            }
        }
    }
}
