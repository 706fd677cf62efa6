//! Hub events into chat completion chunks: a role chunk, content and tool-call deltas, the
//! finish_reason chunk, the usage chunk (`"choices":[]`, when the client asked for
//! `include_usage`) and `data: [DONE]`.

use serde::Serialize;

use super::data_frame;
use crate::translate::chat::{finish_reason, usage_out};
use crate::translate::hub::{Event, StopReason, Usage};
use crate::translate::wire::ChatUsageOut;

#[derive(Serialize)]
struct ChunkOut<'a> {
    id: &'a str,
    object: &'static str,
    created: u64,
    model: &'a str,
    choices: &'a [ChoiceOut<'a>],
    /// Absent unless the client asked for usage; then `null` but in the usage chunk.
    #[serde(skip_serializing_if = "Option::is_none")]
    usage: Option<Option<ChatUsageOut>>,
}

#[derive(Serialize)]
struct ChoiceOut<'a> {
    index: u32,
    delta: DeltaOut<'a>,
    logprobs: Option<()>,
    finish_reason: Option<&'static str>,
}

#[derive(Serialize, Default)]
struct DeltaOut<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    role: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    content: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    tool_calls: Option<[ToolCallOut<'a>; 1]>,
}

#[derive(Serialize)]
struct ToolCallOut<'a> {
    index: usize,
    #[serde(skip_serializing_if = "Option::is_none")]
    id: Option<&'a str>,
    #[serde(rename = "type", skip_serializing_if = "Option::is_none")]
    ty: Option<&'static str>,
    function: FunctionOut<'a>,
}

#[derive(Serialize)]
struct FunctionOut<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    name: Option<&'a str>,
    arguments: &'a str,
}

#[derive(Serialize)]
struct ErrorFrame<'a> {
    error: ErrorOut<'a>,
}

#[derive(Serialize)]
struct ErrorOut<'a> {
    message: &'a str,
    #[serde(rename = "type")]
    ty: &'a str,
    param: Option<()>,
    code: Option<()>,
}

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
            created: crate::translate::hub::now_secs(),
            started: false,
            tools: 0,
            stop: None,
            usage: Usage::default(),
        }
    }

    fn chunk(&self, out: &mut Vec<u8>, delta: DeltaOut<'_>, finish: Option<&'static str>) {
        let choices = [ChoiceOut {
            index: 0,
            delta,
            logprobs: None,
            finish_reason: finish,
        }];
        let c = ChunkOut {
            id: &self.id,
            object: "chat.completion.chunk",
            created: self.created,
            model: &self.model,
            choices: &choices,
            usage: self.include_usage.then_some(None),
        };
        data_frame(out, &c);
    }

    fn start(&mut self, out: &mut Vec<u8>) {
        if !self.started {
            self.started = true;
            let delta = DeltaOut {
                role: Some("assistant"),
                content: Some(""),
                ..DeltaOut::default()
            };
            self.chunk(out, delta, None);
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
                let delta = DeltaOut {
                    content: Some(t),
                    ..DeltaOut::default()
                };
                self.chunk(out, delta, None);
            }
            Event::ToolCallStart { id, name } => {
                self.start(out);
                let tc = ToolCallOut {
                    index: self.tools,
                    id: Some(id),
                    ty: Some("function"),
                    function: FunctionOut {
                        name: Some(name),
                        arguments: "",
                    },
                };
                self.tools += 1;
                let delta = DeltaOut {
                    tool_calls: Some([tc]),
                    ..DeltaOut::default()
                };
                self.chunk(out, delta, None);
            }
            Event::ToolArgs(a) => {
                let tc = ToolCallOut {
                    index: self.tools.saturating_sub(1),
                    id: None,
                    ty: None,
                    function: FunctionOut {
                        name: None,
                        arguments: a,
                    },
                };
                let delta = DeltaOut {
                    tool_calls: Some([tc]),
                    ..DeltaOut::default()
                };
                self.chunk(out, delta, None);
            }
            Event::Stop(s) => self.stop = Some(*s),
            Event::Usage(u) => self.usage = *u,
            Event::Error { kind, message } => data_frame(
                out,
                &ErrorFrame {
                    error: ErrorOut {
                        message,
                        ty: kind,
                        param: None,
                        code: None,
                    },
                },
            ),
            Event::End => {
                self.start(out);
                let stop = self.stop.unwrap_or(StopReason::EndTurn);
                self.chunk(out, DeltaOut::default(), Some(finish_reason(stop)));
                if self.include_usage {
                    let c = ChunkOut {
                        id: &self.id,
                        object: "chat.completion.chunk",
                        created: self.created,
                        model: &self.model,
                        choices: &[],
                        usage: Some(Some(usage_out(&self.usage))),
                    };
                    data_frame(out, &c);
                }
                out.extend_from_slice(b"data: [DONE]\n\n");
            }
        }
    }
}
