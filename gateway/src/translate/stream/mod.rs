//! Stream translation, event by event as bytes arrive: the upstream's SSE bytes are framed
//! by the shared parser (`crate::sse`, which copes with events and UTF-8 characters split
//! across reads), decoded into hub [`Event`]s by the upstream dialect's decoder, and encoded
//! into the client dialect's full event lifecycle. Nothing waits for the whole answer.

mod chat_chunk;
mod decode;
mod decode_chat;
mod decode_converse;
mod decode_gemini;
mod decode_messages;
mod encode_chat;
mod encode_gemini;
mod encode_messages;
mod encode_responses;
pub(crate) mod eventstream;

use crate::dialect::{Dialect, Upstream};
use crate::sse::{SseEvent, SseParser};

use super::hub::{self, ClientView, Event, Usage};
use decode_chat::ChatDecoder;
use decode_converse::ConverseDecoder;
use decode_gemini::GeminiDecoder;
use decode_messages::MessagesDecoder;
use encode_chat::ChatEncoder;
use encode_gemini::GeminiEncoder;
use encode_messages::MessagesEncoder;
use encode_responses::ResponsesEncoder;

/// The upstream stream ended before its answer was complete.
#[derive(Debug, thiserror::Error)]
#[error("upstream stream ended before the answer was complete")]
pub(crate) struct Truncated;

enum Encoder {
    Chat(ChatEncoder),
    Messages(MessagesEncoder),
    Responses(ResponsesEncoder),
    Gemini(GeminiEncoder),
}

impl Encoder {
    fn encode(&mut self, e: &Event, out: &mut Vec<u8>) {
        match self {
            Encoder::Chat(c) => c.encode(e, out),
            Encoder::Messages(m) => m.encode(e, out),
            Encoder::Responses(r) => r.encode(e, out),
            Encoder::Gemini(g) => g.encode(e, out),
        }
    }

    /// Whether the encoder holds more of the answer than it may (Responses keeps the
    /// whole answer for its final object; the others keep nothing).
    fn over_limit(&self) -> bool {
        matches!(self, Encoder::Responses(r) if r.over_limit())
    }
}

/// How an upstream's stream is cut into events: server-sent events, or AWS's binary
/// event stream (Bedrock's ConverseStream).
enum Framing {
    Sse(SseParser),
    EventStream(eventstream::EventStreamFramer),
}

impl Framing {
    fn feed(&mut self, chunk: &[u8], on_event: impl FnMut(crate::sse::SseEvent<'_>)) {
        match self {
            Framing::Sse(p) => p.feed(chunk, on_event),
            Framing::EventStream(f) => f.feed(chunk, on_event),
        }
    }

    fn held(&self) -> usize {
        match self {
            Framing::Sse(p) => p.held(),
            Framing::EventStream(f) => f.held(),
        }
    }

    fn oversized(&self) -> u64 {
        match self {
            Framing::Sse(p) => p.oversized(),
            Framing::EventStream(f) => f.oversized(),
        }
    }

    fn is_mid_event(&self) -> bool {
        match self {
            Framing::Sse(p) => p.is_mid_event(),
            Framing::EventStream(f) => f.is_mid_event(),
        }
    }

    /// Why the stream cannot be read on (an event stream's framing is lost or a frame is
    /// corrupt); SSE always reads on.
    fn failure(&self) -> Option<&str> {
        match self {
            Framing::Sse(_) => None,
            Framing::EventStream(f) => f.failure(),
        }
    }
}

/// The upstream's stream decoder, one per upstream API (each in its own file).
pub(crate) enum Decoder {
    Chat(ChatDecoder),
    Messages(MessagesDecoder),
    Gemini(GeminiDecoder),
    Converse(ConverseDecoder),
}

impl Decoder {
    pub(crate) fn new(upstream: Upstream) -> Decoder {
        match upstream {
            Upstream::Messages => Decoder::Messages(MessagesDecoder::default()),
            Upstream::Gemini => Decoder::Gemini(GeminiDecoder::default()),
            Upstream::Converse => Decoder::Converse(ConverseDecoder::default()),
            // No provider streams Responses to a translated client.
            Upstream::Chat | Upstream::Responses => Decoder::Chat(ChatDecoder::default()),
        }
    }

    /// The upstream API this decoder reads.
    pub(crate) fn upstream(&self) -> Upstream {
        match self {
            Decoder::Chat(_) => Upstream::Chat,
            Decoder::Messages(_) => Upstream::Messages,
            Decoder::Gemini(_) => Upstream::Gemini,
            Decoder::Converse(_) => Upstream::Converse,
        }
    }

    /// Decodes one event (within its node budget: the translator checks that first).
    pub(crate) fn decode(&mut self, ev: &SseEvent<'_>, out: &mut Vec<Event>) {
        match self {
            Decoder::Chat(d) => d.decode(ev, out),
            Decoder::Messages(d) => d.decode(ev, out),
            Decoder::Gemini(d) => d.decode(ev, out),
            Decoder::Converse(d) => d.decode(ev, out),
        }
    }

    /// The model an answer names when its upstream names none (Converse).
    pub(crate) fn set_model(&mut self, model: &str) {
        if let Decoder::Converse(d) = self {
            model.clone_into(&mut d.model);
        }
    }

    /// Whether the answer is complete although its terminator never came.
    pub(crate) fn complete_without_terminator(&self) -> bool {
        match self {
            // Some compatible servers end after the finish (and usage) chunk without [DONE].
            Decoder::Chat(d) => d.stopped,
            Decoder::Messages(_) => false,
            // Gemini streams have no terminator: the chunk with a finishReason is the end.
            Decoder::Gemini(d) => d.stopped,
            // Usage (`metadata`) follows `messageStop`: an answer cut between them is whole.
            Decoder::Converse(d) => d.stopped,
        }
    }
}

/// One stream's translator: upstream bytes in, client bytes out.
pub(crate) struct Translator {
    parser: Framing,
    decoder: Decoder,
    encoder: Encoder,
    pending: Vec<Event>,
    usage: Option<Usage>,
    /// Upstream events read.
    events: u64,
    /// Tool calls the answer started (bounded by [`hub::MAX_TOOL_CALLS`] whatever the
    /// upstream's dialect).
    tool_calls: usize,
    /// The answer ended (or failed): later upstream bytes are ignored.
    done: bool,
    /// Why the answer ended with an error event, for the access log.
    error: Option<&'static str>,
    /// An event over its node budget (`json::budget`), refused before any tree of it was
    /// built: the answer ends there, as at an event too long to read.
    over_budget: Option<String>,
}

impl Translator {
    /// `include_usage`: a chat client's `stream_options.include_usage`; `view`: the
    /// client's own terms for its tools (Responses).
    pub(crate) fn new(
        client: Dialect,
        upstream: Upstream,
        include_usage: bool,
        view: ClientView,
    ) -> Translator {
        Translator {
            parser: match upstream {
                Upstream::Converse => Framing::EventStream(eventstream::EventStreamFramer::new()),
                _ => Framing::Sse(SseParser::new()),
            },
            decoder: Decoder::new(upstream),
            encoder: match client {
                Dialect::Chat => Encoder::Chat(ChatEncoder::new(include_usage)),
                Dialect::Messages => Encoder::Messages(MessagesEncoder::default()),
                Dialect::Gemini => Encoder::Gemini(GeminiEncoder::new(view.json_array_stream)),
                Dialect::Responses => Encoder::Responses(ResponsesEncoder::new(view)),
            },
            // A chunk's events at once (the first chunk's are several): no growing.
            pending: Vec::with_capacity(8),
            usage: None,
            events: 0,
            tool_calls: 0,
            done: false,
            error: None,
            over_budget: None,
        }
    }

    /// The target's upstream model, named in the answer when the upstream names none
    /// (Converse's streams).
    pub(crate) fn answering_for(mut self, model: &str) -> Translator {
        self.decoder.set_model(model);
        self
    }

    /// Feeds upstream bytes; appends the client bytes they complete to `out`.
    pub(crate) fn feed(&mut self, chunk: &[u8], out: &mut Vec<u8>) {
        let (parser, decoder, pending) = (&mut self.parser, &mut self.decoder, &mut self.pending);
        let (events, over_budget) = (&mut self.events, &mut self.over_budget);
        parser.feed(chunk, |ev| {
            *events += 1;
            if over_budget.is_some() {
                return; // the answer ends at the refused event
            }
            match crate::translate::json::budget::check(ev.data) {
                Ok(()) => decoder.decode(&ev, pending),
                Err(e) => {
                    let why = crate::translate::errors::over_budget(decoder.upstream(), "event", e);
                    *over_budget = Some(why.0);
                }
            }
        });
        // The events read before a failure go out first.
        self.flush(out);
        if let (Some(why), false) = (self.parser.failure(), self.done) {
            // The rest cannot be read: the answer ends here with an error (as a cut one).
            let message = format!("the upstream stream cannot be read on: {why}");
            self.fail("upstream_stream_unreadable", message, out);
        }
        if let (Some(message), false) = (self.over_budget.take(), self.done) {
            self.fail("upstream_event_too_large", message, out);
        }
        if self.parser.oversized() > 0 && !self.done {
            // Skipped unread, its part of the answer is lost: translating on would hand the
            // client an answer with a hole in it.
            let message = format!(
                "the upstream sent a stream event longer than the gateway translates ({} MiB)",
                crate::sse::MAX_EVENT_BYTES >> 20
            );
            self.fail("upstream_event_too_large", message, out);
        }
    }

    /// Ends the answer with the gateway's own error event; `why` is logged.
    fn fail(&mut self, why: &'static str, message: String, out: &mut Vec<u8>) {
        let error = Event::Error {
            kind: "api_error".into(),
            message,
        };
        self.encoder.encode(&error, out);
        self.done = true;
        self.error = Some(why);
    }

    /// Bytes of an incomplete upstream event held: with the next chunk, the size of the
    /// event it may complete.
    pub(crate) fn held(&self) -> usize {
        self.parser.held()
    }

    /// Upstream events skipped because they were too long to read; the first ended the
    /// answer with an error.
    pub(crate) fn oversized(&self) -> u64 {
        self.parser.oversized()
    }

    fn flush(&mut self, out: &mut Vec<u8>) {
        // Taken out (its capacity given back below) so that `fail` may borrow `self`.
        let mut pending = std::mem::take(&mut self.pending);
        for e in pending.drain(..) {
            if self.done {
                continue;
            }
            match &e {
                Event::Usage(u) => self.usage = Some(*u),
                Event::ToolCallStart { .. } => {
                    self.tool_calls += 1;
                    if self.tool_calls > hub::MAX_TOOL_CALLS {
                        self.fail("too_many_tool_calls", hub::too_many_tool_calls(), out);
                        continue;
                    }
                }
                // The upstream's own error (or an event the decoder could not read).
                Event::Error { .. } => self.error = Some("upstream_stream_error"),
                _ => {}
            }
            self.encoder.encode(&e, out);
            self.done = matches!(e, Event::End | Event::Error { .. });
            if !self.done && self.encoder.over_limit() {
                let message = format!(
                    "the answer is longer than a translated Responses stream may be ({} MiB of output)",
                    encode_responses::MAX_KEPT_BYTES >> 20
                );
                self.fail("translated_answer_too_long", message, out);
            }
        }
        self.pending = pending;
    }

    /// The upstream body ended. A stream whose answer was complete but whose terminator
    /// was missing (a chat stream without `[DONE]`) is finished normally; one cut earlier
    /// is [`Truncated`].
    pub(crate) fn finish(&mut self, out: &mut Vec<u8>) -> Result<(), Truncated> {
        if self.done {
            return Ok(());
        }
        if self.decoder.complete_without_terminator() && !self.parser.is_mid_event() {
            self.pending.push(Event::End);
            self.flush(out);
            return Ok(());
        }
        Err(Truncated)
    }

    /// Whether the answer ended (normally or with an in-stream error).
    pub(crate) fn is_done(&self) -> bool {
        self.done
    }

    /// Why the answer ended with an error event (the access log's `error`), if it did.
    pub(crate) fn error(&self) -> Option<&'static str> {
        self.error
    }

    /// Upstream events read so far.
    pub(crate) fn events(&self) -> u64 {
        self.events
    }

    /// The usage reported so far, in hub terms.
    pub(crate) fn usage(&self) -> Option<Usage> {
        self.usage
    }
}

/// `event: <name>\ndata: <json>\n\n`.
pub(crate) fn named_frame(out: &mut Vec<u8>, name: &str, data: &impl serde::Serialize) {
    out.extend_from_slice(b"event: ");
    out.extend_from_slice(name.as_bytes());
    out.extend_from_slice(b"\ndata: ");
    serde_json::to_writer(&mut *out, data).expect("an event serializes");
    out.extend_from_slice(b"\n\n");
}

/// `data: <json>\n\n`.
pub(crate) fn data_frame(out: &mut Vec<u8>, data: &impl serde::Serialize) {
    out.extend_from_slice(b"data: ");
    serde_json::to_writer(&mut *out, data).expect("an event serializes");
    out.extend_from_slice(b"\n\n");
}

#[cfg(test)]
mod golden;
#[cfg(test)]
mod tests;
