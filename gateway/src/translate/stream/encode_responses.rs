//! Hub events into the Responses event lifecycle, every event with an increasing
//! `sequence_number`: response.created, response.in_progress, per item output_item.added /
//! (content_part.added, output_text.delta..., output_text.done, content_part.done |
//! function_call_arguments.delta..., function_call_arguments.done) / output_item.done, and
//! response.completed (or response.incomplete) carrying the whole response and its usage.

use serde_json::{json, Value};

use super::named_frame;
use crate::translate::hub::{ClientView, Event, StopReason, ToolKind, Usage};
use crate::translate::responses::{
    call_item_id, custom_input, custom_item_id, message_item_id, response_id, response_object,
    text_item, tool_call_item,
};

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

    fn emit(&mut self, out: &mut Vec<u8>, ty: &str, mut data: Value) {
        self.emit_in_place(out, ty, &mut data);
    }

    /// As [`Self::emit`], leaving `data` to be sent again under another type: the two
    /// opening events carry the same response object (the client's echoed request fields
    /// included, Codex's tools list among them), written twice rather than cloned.
    fn emit_in_place(&mut self, out: &mut Vec<u8>, ty: &str, data: &mut Value) {
        data["type"] = json!(ty);
        data["sequence_number"] = json!(self.seq);
        self.seq += 1;
        named_frame(out, ty, data);
    }

    fn start(&mut self, out: &mut Vec<u8>, id: &str, model: &str) {
        if self.started {
            return;
        }
        self.started = true;
        self.upstream_id = id.to_owned();
        self.model = model.to_owned();
        self.created = crate::translate::now_secs();
        let resp = response_object(
            &response_id(id),
            model,
            self.created,
            Vec::new(),
            None,
            &self.view,
        );
        let mut data = json!({"response": resp});
        self.emit_in_place(out, "response.created", &mut data);
        self.emit_in_place(out, "response.in_progress", &mut data);
    }

    fn output_index(&self) -> usize {
        self.output.len()
    }

    fn close(&mut self, out: &mut Vec<u8>) {
        let i = self.output_index();
        match self.open.take() {
            None => {}
            Some(Open::Text { item_id, text }) => {
                let part =
                    json!({"type": "output_text", "text": text, "annotations": [], "logprobs": []});
                let at = json!({"item_id": item_id, "output_index": i, "content_index": 0});
                let mut done = at.clone();
                done["text"] = json!(text);
                done["logprobs"] = json!([]);
                self.emit(out, "response.output_text.done", done);
                let mut part_done = at;
                part_done["part"] = part;
                self.emit(out, "response.content_part.done", part_done);
                let item = text_item(&item_id, "completed", &text);
                self.emit(
                    out,
                    "response.output_item.done",
                    json!({"output_index": i, "item": item.clone()}),
                );
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
                    let at = json!({"item_id": custom_item_id(&call_id), "output_index": i});
                    let mut delta = at.clone();
                    delta["delta"] = json!(input);
                    self.emit(out, "response.custom_tool_call_input.delta", delta);
                    let mut done = at;
                    done["input"] = json!(input);
                    self.emit(out, "response.custom_tool_call_input.done", done);
                } else {
                    let shown = match self.view.kind(&name) {
                        Some(ToolKind::Namespaced { name, .. }) => name.as_str(),
                        _ => name.as_str(),
                    };
                    self.emit(
                        out,
                        "response.function_call_arguments.done",
                        json!({
                            "item_id": call_item_id(&call_id), "output_index": i,
                            "arguments": args, "name": shown,
                        }),
                    );
                }
                let item = tool_call_item(&self.view, &call_id, &name, &args, "completed");
                self.emit(
                    out,
                    "response.output_item.done",
                    json!({"output_index": i, "item": item.clone()}),
                );
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
                    let item = json!({"type": "message", "id": item_id, "status": "in_progress",
                        "role": "assistant", "content": []});
                    self.emit(
                        out,
                        "response.output_item.added",
                        json!({"output_index": i, "item": item}),
                    );
                    self.emit(out, "response.content_part.added", json!({
                        "item_id": item_id, "output_index": i, "content_index": 0,
                        "part": {"type": "output_text", "text": "", "annotations": [], "logprobs": []},
                    }));
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
                let data = json!({"item_id": item_id, "output_index": i, "content_index": 0,
                    "delta": t, "logprobs": []});
                self.emit(out, "response.output_text.delta", data);
            }
            Event::ToolCallStart { id, name } => {
                self.start(out, "", "");
                self.close(out);
                let i = self.output_index();
                let item = tool_call_item(&self.view, id, name, "", "in_progress");
                self.emit(
                    out,
                    "response.output_item.added",
                    json!({"output_index": i, "item": item}),
                );
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
                        let data = json!({"item_id": call_item_id(call_id), "output_index": i,
                            "delta": a});
                        self.emit(out, "response.function_call_arguments.delta", data);
                    }
                }
            }
            Event::Stop(s) => self.stop = Some(*s),
            Event::Usage(u) => self.usage = *u,
            Event::Error { kind, message } => self.emit(
                out,
                "error",
                json!({"code": kind, "message": message, "param": null}),
            ),
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
                self.emit(out, ty, json!({"response": resp}));
            }
        }
    }
}
