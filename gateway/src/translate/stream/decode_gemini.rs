//! Gemini's stream chunks into hub events (the upstream side of `encode_gemini.rs`).

use serde_json::Value;

use crate::sse::SseEvent;
use crate::translate::gemini;
use crate::translate::hub::{Event, StopReason, MAX_TOOL_CALLS};

#[derive(Default)]
pub(crate) struct GeminiDecoder {
    started: bool,
    pub(super) stopped: bool,
    /// Calls started (each chunk holds whole calls), bounded by [`MAX_TOOL_CALLS`].
    calls: usize,
}

impl GeminiDecoder {
    pub(super) fn decode(&mut self, ev: &SseEvent<'_>, out: &mut Vec<Event>) {
        let Ok(v) = serde_json::from_slice::<gemini::wire::GenerateIn<'_>>(ev.data) else {
            out.push(Event::Error {
                kind: "api_error".into(),
                message: "the upstream sent an event that is not a Gemini chunk".into(),
            });
            return;
        };
        if let Some(e) = v.error {
            let tree = serde_json::from_str::<Value>(e.get()).unwrap_or(Value::Null);
            out.push(super::decode::error_of(&tree, "status"));
            return;
        }
        if !self.started {
            self.started = true;
            out.push(Event::Start {
                id: v.response_id.as_deref().unwrap_or("gemini").to_owned(),
                model: v.model_version.as_deref().unwrap_or_default().to_owned(),
            });
        }
        let blocked = v.prompt_feedback.and_then(|f| f.block_reason).is_some();
        let mut finish = None;
        if let Some(c) = v.candidates.and_then(|c| c.into_iter().next()) {
            finish = c.finish_reason;
            for p in c.content.and_then(|c| c.parts).into_iter().flatten() {
                if let Some(f) = p.function_call {
                    if self.calls == MAX_TOOL_CALLS {
                        out.push(super::decode::over_the_tool_limit());
                        return;
                    }
                    match gemini::call(f, p.thought_signature.as_deref(), self.calls) {
                        Ok((id, name, arguments)) => {
                            self.calls += 1;
                            out.push(Event::ToolCallStart { id, name });
                            out.push(Event::ToolArgs(arguments));
                        }
                        Err(e) => {
                            out.push(Event::Error {
                                kind: "api_error".into(),
                                message: e.0,
                            });
                            return;
                        }
                    }
                } else if let Some(t) = p.text.filter(|t| !t.is_empty() && p.thought != Some(true))
                {
                    out.push(Event::Text(t.into_owned()));
                }
            }
        }
        if let Some(u) = &v.usage_metadata {
            out.push(Event::Usage(gemini::usage_from(u)));
        }
        if blocked || finish.is_some() {
            self.stopped = true;
            out.push(Event::Stop(if blocked {
                StopReason::ContentFilter
            } else {
                gemini::stop_from(finish.as_deref(), self.calls > 0)
            }));
        }
    }
}
