//! Hub events into the Responses event lifecycle, every event with an increasing
//! `sequence_number`: response.created, response.in_progress, per item output_item.added /
//! (content_part.added, output_text.delta..., output_text.done, content_part.done |
//! function_call_arguments.delta..., function_call_arguments.done) / output_item.done, and
//! response.completed (or response.incomplete) carrying the whole response and its usage.

use serde::Serialize;
use serde_json::Value;

use super::named_frame;
use crate::translate::hub::{ClientView, Event, StopReason, ToolKind, Usage};
use crate::translate::responses::{
    call_item_id, custom_input, custom_item_id, message_item_id, response_id, response_object,
    text_item, tool_call_item,
};

/// An event's data with its `type` and `sequence_number`.
#[derive(Serialize)]
struct Seq<'a, T> {
    #[serde(rename = "type")]
    ty: &'a str,
    sequence_number: u64,
    #[serde(flatten)]
    data: T,
}

/// Writes one event, numbered.
fn emit(out: &mut Vec<u8>, seq: &mut u64, ty: &str, data: impl Serialize) {
    let sequence_number = *seq;
    *seq += 1;
    named_frame(
        out,
        ty,
        &Seq {
            ty,
            sequence_number,
            data,
        },
    );
}

#[derive(Serialize)]
struct ResponseData<'a> {
    response: &'a Value,
}

#[derive(Serialize)]
struct ItemData<I> {
    output_index: usize,
    item: I,
}

/// A message item as it opens: no content yet.
#[derive(Serialize)]
struct MessageOpen<'a> {
    #[serde(rename = "type")]
    ty: &'static str,
    id: &'a str,
    status: &'static str,
    role: &'static str,
    content: [(); 0],
}

#[derive(Serialize)]
struct PartData<'a> {
    item_id: &'a str,
    output_index: usize,
    content_index: u32,
    part: TextPart<'a>,
}

#[derive(Serialize)]
struct TextPart<'a> {
    #[serde(rename = "type")]
    ty: &'static str,
    text: &'a str,
    annotations: [(); 0],
    logprobs: [(); 0],
}

impl TextPart<'_> {
    fn new(text: &str) -> TextPart<'_> {
        TextPart {
            ty: "output_text",
            text,
            annotations: [],
            logprobs: [],
        }
    }
}

#[derive(Serialize)]
struct TextDelta<'a> {
    item_id: &'a str,
    output_index: usize,
    content_index: u32,
    delta: &'a str,
    logprobs: [(); 0],
}

#[derive(Serialize)]
struct TextDone<'a> {
    item_id: &'a str,
    output_index: usize,
    content_index: u32,
    text: &'a str,
    logprobs: [(); 0],
}

#[derive(Serialize)]
struct CallDelta<'a> {
    item_id: &'a str,
    output_index: usize,
    delta: &'a str,
}

#[derive(Serialize)]
struct CustomDone<'a> {
    item_id: &'a str,
    output_index: usize,
    input: &'a str,
}

#[derive(Serialize)]
struct ArgsDone<'a> {
    item_id: &'a str,
    output_index: usize,
    arguments: &'a str,
    name: &'a str,
}

#[derive(Serialize)]
struct ErrorData<'a> {
    code: &'a str,
    message: &'a str,
    param: Option<()>,
}

enum Open {
    Text {
        item_id: String,
        text: String,
    },
    Call {
        call_id: String,
        name: String,
        args: String,
    },
}

#[derive(Default)]
pub(crate) struct ResponsesEncoder {
    seq: u64,
    started: bool,
    upstream_id: String,
    model: String,
    created: u64,
    /// Finished output items, for the final response object.
    output: Vec<Value>,
    /// Bytes of text and arguments kept for the final object (bounded: MAX_KEPT_BYTES).
    kept: usize,
    open: Option<Open>,
    stop: Option<StopReason>,
    usage: Usage,
    /// The client's tools (custom and namespaced ones come back in its own terms).
    view: ClientView,
}

/// Output text and arguments a translated Responses stream keeps for its final
/// `response.completed` object; past it the stream ends with an error event. The longest
/// real answers are well under 1 MiB; unbounded, a hostile upstream held ~9.5x what it sent.
pub(super) const MAX_KEPT_BYTES: usize = 8 << 20;

impl ResponsesEncoder {
    pub(super) fn over_limit(&self) -> bool {
        self.kept > MAX_KEPT_BYTES
    }

    pub(crate) fn new(view: ClientView) -> ResponsesEncoder {
        ResponsesEncoder {
            view,
            ..ResponsesEncoder::default()
        }
    }

    fn start(&mut self, out: &mut Vec<u8>, id: &str, model: &str) {
        if self.started {
            return;
        }
        self.started = true;
        self.upstream_id = id.to_owned();
        self.model = model.to_owned();
        self.created = crate::translate::hub::now_secs();
        let resp = response_object(
            &response_id(id),
            model,
            self.created,
            Vec::new(),
            None,
            &self.view,
        );
        // The two opening events carry the same object (the client's echoed request fields
        // included, Codex's tools list among them), written twice rather than cloned.
        let data = ResponseData { response: &resp };
        emit(out, &mut self.seq, "response.created", &data);
        emit(out, &mut self.seq, "response.in_progress", &data);
    }

    fn output_index(&self) -> usize {
        self.output.len()
    }

    fn close(&mut self, out: &mut Vec<u8>) {
        let i = self.output_index();
        match self.open.take() {
            None => {}
            Some(Open::Text { item_id, text }) => {
                let done = TextDone {
                    item_id: &item_id,
                    output_index: i,
                    content_index: 0,
                    text: &text,
                    logprobs: [],
                };
                emit(out, &mut self.seq, "response.output_text.done", done);
                let part_done = PartData {
                    item_id: &item_id,
                    output_index: i,
                    content_index: 0,
                    part: TextPart::new(&text),
                };
                emit(out, &mut self.seq, "response.content_part.done", part_done);
                let item = text_item(&item_id, "completed", &text);
                let done = ItemData {
                    output_index: i,
                    item: &item,
                };
                emit(out, &mut self.seq, "response.output_item.done", done);
                self.output.push(item);
            }
            Some(Open::Call {
                call_id,
                name,
                args,
            }) => {
                if let Some(ToolKind::Custom) = self.view.kind(&name) {
                    // The input arrives as JSON fragments of one string argument: sent
                    // whole, once the call is complete.
                    let input = custom_input(&args);
                    let item_id = custom_item_id(&call_id);
                    let delta = CallDelta {
                        item_id: &item_id,
                        output_index: i,
                        delta: &input,
                    };
                    let ty = "response.custom_tool_call_input.delta";
                    emit(out, &mut self.seq, ty, delta);
                    let done = CustomDone {
                        item_id: &item_id,
                        output_index: i,
                        input: &input,
                    };
                    let ty = "response.custom_tool_call_input.done";
                    emit(out, &mut self.seq, ty, done);
                } else {
                    let shown = match self.view.kind(&name) {
                        Some(ToolKind::Namespaced { name, .. }) => name.as_str(),
                        _ => name.as_str(),
                    };
                    let done = ArgsDone {
                        item_id: &call_item_id(&call_id),
                        output_index: i,
                        arguments: &args,
                        name: shown,
                    };
                    emit(
                        out,
                        &mut self.seq,
                        "response.function_call_arguments.done",
                        done,
                    );
                }
                let item = tool_call_item(&self.view, &call_id, &name, &args, "completed");
                let done = ItemData {
                    output_index: i,
                    item: &item,
                };
                emit(out, &mut self.seq, "response.output_item.done", done);
                self.output.push(item);
            }
        }
    }

    pub(crate) fn encode(&mut self, e: &Event, out: &mut Vec<u8>) {
        match e {
            Event::Start { id, model } => self.start(out, id, model),
            Event::Text(t) => {
                self.start(out, "", "");
                let i = self.output_index();
                if !matches!(self.open, Some(Open::Text { .. })) {
                    self.close(out);
                    let i = self.output_index();
                    let item_id = message_item_id(&self.upstream_id, i);
                    let added = ItemData {
                        output_index: i,
                        item: MessageOpen {
                            ty: "message",
                            id: &item_id,
                            status: "in_progress",
                            role: "assistant",
                            content: [],
                        },
                    };
                    emit(out, &mut self.seq, "response.output_item.added", added);
                    let part_added = PartData {
                        item_id: &item_id,
                        output_index: i,
                        content_index: 0,
                        part: TextPart::new(""),
                    };
                    emit(
                        out,
                        &mut self.seq,
                        "response.content_part.added",
                        part_added,
                    );
                    self.open = Some(Open::Text {
                        item_id,
                        text: String::new(),
                    });
                }
                let Some(Open::Text { item_id, text }) = &mut self.open else {
                    unreachable!("just opened")
                };
                text.push_str(t);
                self.kept += t.len();
                let delta = TextDelta {
                    item_id,
                    output_index: i,
                    content_index: 0,
                    delta: t,
                    logprobs: [],
                };
                emit(out, &mut self.seq, "response.output_text.delta", delta);
            }
            Event::ToolCallStart { id, name } => {
                self.start(out, "", "");
                self.close(out);
                let i = self.output_index();
                let item = tool_call_item(&self.view, id, name, "", "in_progress");
                let added = ItemData {
                    output_index: i,
                    item: &item,
                };
                emit(out, &mut self.seq, "response.output_item.added", added);
                self.open = Some(Open::Call {
                    call_id: id.clone(),
                    name: name.clone(),
                    args: String::new(),
                });
            }
            Event::ToolArgs(a) => {
                let i = self.output_index();
                if let Some(Open::Call {
                    call_id,
                    name,
                    args,
                }) = &mut self.open
                {
                    args.push_str(a);
                    self.kept += a.len();
                    if !matches!(self.view.kind(name), Some(ToolKind::Custom)) {
                        let delta = CallDelta {
                            item_id: &call_item_id(call_id),
                            output_index: i,
                            delta: a,
                        };
                        let ty = "response.function_call_arguments.delta";
                        emit(out, &mut self.seq, ty, delta);
                    }
                }
            }
            Event::Stop(s) => self.stop = Some(*s),
            Event::Usage(u) => self.usage = *u,
            Event::Error { kind, message } => {
                let data = ErrorData {
                    code: kind,
                    message,
                    param: None,
                };
                emit(out, &mut self.seq, "error", data);
            }
            Event::End => {
                self.start(out, "", "");
                self.close(out);
                let stop = self.stop.unwrap_or(StopReason::EndTurn);
                let output = std::mem::take(&mut self.output);
                let resp = response_object(
                    &response_id(&self.upstream_id),
                    &self.model,
                    self.created,
                    output,
                    Some((stop, &self.usage)),
                    &self.view,
                );
                let ty = if resp["status"] == "completed" {
                    "response.completed"
                } else {
                    "response.incomplete"
                };
                emit(out, &mut self.seq, ty, ResponseData { response: &resp });
            }
        }
    }
}
