//! Hub events into Gemini `streamGenerateContent` chunks: each a whole
//! `GenerateContentResponse` with the next text, or one whole function call (Gemini streams
//! a call's arguments at once, so they are gathered until the call ends); the last chunk
//! has the `finishReason` and the usage. No terminator: the stream just ends. Without
//! `alt=sse` the chunks are the elements of one JSON array (`[{...}\n,\r\n{...}]`).

use serde_json::{json, Value};

use crate::translate::gemini::{args_value, finish_reason, usage_json};
use crate::translate::hub::{Event, StopReason, Usage};

pub(crate) struct GeminiEncoder {
    json_array: bool,
    /// Chunks written (an array's separators; its opening bracket).
    chunks: usize,
    id: String,
    model: String,
    /// The call being gathered: id, name, argument text.
    call: Option<(String, String, String)>,
    stop: Option<StopReason>,
    usage: Usage,
    /// The answer ended here (its last chunk, or an error this encoder wrote itself): later
    /// events write nothing, not even after the array's closing bracket.
    ended: bool,
}

impl GeminiEncoder {
    pub(crate) fn new(json_array: bool) -> GeminiEncoder {
        GeminiEncoder {
            json_array,
            chunks: 0,
            id: String::new(),
            model: String::new(),
            call: None,
            stop: None,
            usage: Usage::default(),
            ended: false,
        }
    }

    fn write(&mut self, out: &mut Vec<u8>, v: &Value) {
        if self.json_array {
            out.extend_from_slice(if self.chunks == 0 { b"[" } else { b"\n,\r\n" });
            serde_json::to_writer(&mut *out, v).expect("a JSON value serializes");
        } else {
            out.extend_from_slice(b"data: ");
            serde_json::to_writer(&mut *out, v).expect("a JSON value serializes");
            out.extend_from_slice(b"\r\n\r\n");
        }
        self.chunks += 1;
    }

    fn chunk(&mut self, out: &mut Vec<u8>, parts: Value) {
        let v = json!({
            "candidates": [{"content": {"role": "model", "parts": parts}, "index": 0}],
            "modelVersion": self.model, "responseId": self.id,
        });
        self.write(out, &v);
    }

    /// Writes the gathered call, if any. False when its arguments were not a JSON object.
    fn flush_call(&mut self, out: &mut Vec<u8>) -> bool {
        let Some((id, name, args)) = self.call.take() else {
            return true;
        };
        match args_value(&args) {
            Ok(args) => {
                self.chunk(
                    out,
                    json!([{"functionCall": {"id": id, "name": name, "args": args}}]),
                );
                true
            }
            Err(e) => {
                self.error(out, "api_error", &e.0);
                false
            }
        }
    }

    fn error(&mut self, out: &mut Vec<u8>, _kind: &str, message: &str) {
        let v = json!({"error": {"code": 500, "message": message, "status": "INTERNAL"}});
        self.write(out, &v);
        self.close(out);
    }

    fn close(&mut self, out: &mut Vec<u8>) {
        self.ended = true;
        if self.json_array {
            if self.chunks == 0 {
                out.push(b'[');
            }
            out.extend_from_slice(b"]");
        }
    }

    pub(crate) fn encode(&mut self, e: &Event, out: &mut Vec<u8>) {
        if self.ended {
            return;
        }
        match e {
            Event::Start { id, model } => {
                self.id = id.clone();
                self.model = model.clone();
            }
            Event::Text(t) => {
                if self.flush_call(out) {
                    self.chunk(out, json!([{"text": t}]));
                }
            }
            Event::ToolCallStart { id, name } => {
                if self.flush_call(out) {
                    self.call = Some((id.clone(), name.clone(), String::new()));
                }
            }
            Event::ToolArgs(a) => {
                if let Some((_, _, args)) = &mut self.call {
                    args.push_str(a);
                }
            }
            Event::Stop(s) => self.stop = Some(*s),
            Event::Usage(u) => self.usage = *u,
            Event::Error { kind, message } => self.error(out, kind, message),
            Event::End => {
                if !self.flush_call(out) {
                    return;
                }
                let stop = self.stop.unwrap_or(StopReason::EndTurn);
                let v = json!({
                    "candidates": [{
                        "content": {"role": "model", "parts": [{"text": ""}]},
                        "finishReason": finish_reason(stop), "index": 0,
                    }],
                    "usageMetadata": usage_json(&self.usage),
                    "modelVersion": self.model, "responseId": self.id,
                });
                self.write(out, &v);
                self.close(out);
            }
        }
    }
}
