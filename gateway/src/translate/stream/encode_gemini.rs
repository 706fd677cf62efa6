//! Hub events into Gemini `streamGenerateContent` chunks: each a whole
//! `GenerateContentResponse` with the next text, or one whole function call (Gemini streams
//! a call's arguments at once, so they are gathered until the call ends); the last chunk
//! has the `finishReason` and the usage. No terminator: the stream just ends. Without
//! `alt=sse` the chunks are the elements of one JSON array (`[{...}\n,\r\n{...}]`).

use serde::Serialize;
use serde_json::Value;

use crate::translate::gemini::wire::UsageOut;
use crate::translate::gemini::{args_value, finish_reason, usage_out};
use crate::translate::hub::{Event, StopReason, Usage};

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct ChunkOut<'a> {
    candidates: [CandidateOut<'a>; 1],
    #[serde(skip_serializing_if = "Option::is_none")]
    usage_metadata: Option<UsageOut>,
    model_version: &'a str,
    response_id: &'a str,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct CandidateOut<'a> {
    content: ContentOut<'a>,
    #[serde(skip_serializing_if = "Option::is_none")]
    finish_reason: Option<&'static str>,
    index: u32,
}

#[derive(Serialize)]
struct ContentOut<'a> {
    role: &'static str,
    parts: [PartOut<'a>; 1],
}

#[derive(Serialize)]
#[serde(untagged)]
enum PartOut<'a> {
    Text {
        text: &'a str,
    },
    #[serde(rename_all = "camelCase")]
    Call {
        function_call: CallOut<'a>,
    },
}

#[derive(Serialize)]
struct CallOut<'a> {
    id: &'a str,
    name: &'a str,
    args: &'a Value,
}

#[derive(Serialize)]
struct ErrorFrame<'a> {
    error: ErrorOut<'a>,
}

#[derive(Serialize)]
struct ErrorOut<'a> {
    code: u16,
    message: &'a str,
    status: &'static str,
}

/// Writes one chunk; `chunks`: those written before it.
fn write(out: &mut Vec<u8>, json_array: bool, chunks: &mut usize, v: &impl Serialize) {
    if json_array {
        out.extend_from_slice(if *chunks == 0 { b"[" } else { b"\n,\r\n" });
        serde_json::to_writer(&mut *out, v).expect("a chunk serializes");
    } else {
        out.extend_from_slice(b"data: ");
        serde_json::to_writer(&mut *out, v).expect("a chunk serializes");
        out.extend_from_slice(b"\r\n\r\n");
    }
    *chunks += 1;
}

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

    fn write(&mut self, out: &mut Vec<u8>, v: &impl Serialize) {
        write(out, self.json_array, &mut self.chunks, v);
    }

    /// A chunk of one part; `end`: the finish reason and usage of the last chunk.
    fn chunk(
        &mut self,
        out: &mut Vec<u8>,
        part: PartOut<'_>,
        end: Option<(&'static str, UsageOut)>,
    ) {
        let (finish_reason, usage_metadata) = end.unzip();
        let c = ChunkOut {
            candidates: [CandidateOut {
                content: ContentOut {
                    role: "model",
                    parts: [part],
                },
                finish_reason,
                index: 0,
            }],
            usage_metadata,
            model_version: &self.model,
            response_id: &self.id,
        };
        write(out, self.json_array, &mut self.chunks, &c);
    }

    /// Writes the gathered call, if any. False when its arguments were not a JSON object.
    fn flush_call(&mut self, out: &mut Vec<u8>) -> bool {
        let Some((id, name, args)) = self.call.take() else {
            return true;
        };
        match args_value(&args) {
            Ok(args) => {
                let call = CallOut {
                    id: &id,
                    name: &name,
                    args: &args,
                };
                self.chunk(
                    out,
                    PartOut::Call {
                        function_call: call,
                    },
                    None,
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
        let v = ErrorFrame {
            error: ErrorOut {
                code: 500,
                message,
                status: "INTERNAL",
            },
        };
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
                    self.chunk(out, PartOut::Text { text: t }, None);
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
                let end = (finish_reason(stop), usage_out(&self.usage));
                self.chunk(out, PartOut::Text { text: "" }, Some(end));
                self.close(out);
            }
        }
    }
}
