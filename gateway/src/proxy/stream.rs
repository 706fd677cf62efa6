//! The streaming response body: upstream SSE bytes pass through frame by frame, untouched,
//! while the SSE parser reads usage on the side. The exceptions (`rewrite.rs`): a chat
//! stream whose usage the gateway asked for loses that usage chunk again, and a gzipped
//! stream that carries an upstream secret is cut (identity streams are redacted on their
//! way out, `crate::redact::answer`). Dropping it (the client went away) drops
//! the upstream body, which closes that upstream connection: the upstream request is
//! cancelled rather than read to the end.
//!
//! Its upstream body, idle timer, gzip side and settlement are its own fields, not
//! `upstream_stream::UpstreamStream` as in the translated body: measured, that wrapper cost
//! PGO builds ~2.5% instructions per request here (see upstream_stream.rs).

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use http_body::{Body, Frame, SizeHint};
use hyper::body::Incoming;
use tokio::time::{Instant, Sleep};

use crate::body::BodyError;
use crate::metrics::UpstreamErrorKind;
use crate::settle::Settlement;
use crate::sse::SseParser;
use crate::usage::StreamUsage;

use super::encoding::GzSide;
use super::rewrite::Rewrites;
use super::upstream_stream::IdleTimeout;
use crate::redact::{LeakCheck, Secrets};

pub(crate) struct AccountedStream {
    upstream: Incoming,
    parser: SseParser,
    usage: StreamUsage,
    /// Set when the upstream gzips its stream: usage is read from a decoded copy.
    gzip: Option<Box<GzSide>>,
    /// What changes in the bytes on their way (identity streams only).
    rewrites: Option<Box<Rewrites>>,
    /// A gzipped stream's upstream secrets, looked for (in every form) in the decoded copy:
    /// compressed bytes cannot be redacted, so a stream that carries one is cut before that
    /// frame. (Identity streams are redacted on their way out: `crate::redact::answer`.)
    leak_check: Option<Box<LeakCheck>>,
    idle: Pin<Box<Sleep>>,
    idle_timeout: Duration,
    /// Taken (and so recorded) when the stream ends; if still here on drop, the client left.
    settlement: Option<Settlement>,
}

#[derive(Debug, thiserror::Error)]
#[error("upstream stream ended in the middle of an event")]
struct Truncated;

#[derive(Debug, thiserror::Error)]
#[error("upstream stream carried the upstream key; cut before it")]
struct KeyInStream;

impl AccountedStream {
    pub(crate) fn new(
        upstream: Incoming,
        mut settlement: Settlement,
        idle_timeout: Duration,
        gzip: bool,
        strip_usage: bool,
        secrets: Option<&Arc<Secrets>>,
        gemini: bool,
    ) -> Self {
        // Until the stream ends normally, a drop means the client disconnected.
        settlement.error = Some("client_disconnected");
        if (200..300).contains(&settlement.status) {
            // An answer is being generated: its tokens count even if its usage never comes.
            settlement.streamed_events = Some(0);
        }
        AccountedStream {
            upstream,
            parser: SseParser::new(),
            usage: StreamUsage::new(gemini),
            gzip: gzip.then(Box::default),
            // Not on a gzipped stream (the upstream ignored the gateway's accept-encoding):
            // events cannot be cut out of compressed bytes, so the client gets the chunk.
            rewrites: if gzip {
                None
            } else {
                Rewrites::new(strip_usage)
            },
            leak_check: secrets
                .filter(|_| gzip)
                .map(|s| Box::new(LeakCheck::new(s.clone()))),
            idle: Box::pin(tokio::time::sleep(idle_timeout)),
            idle_timeout,
            settlement: Some(settlement),
        }
    }

    /// The upstream broke mid-stream: a 502 in metrics and the log (the client already has
    /// a 200 head and sees a cut stream), counted as an upstream read error.
    fn upstream_broke(&mut self) {
        if let Some(slot) = self.settlement.as_ref().and_then(|c| c.model_slot()) {
            slot.upstream_error(UpstreamErrorKind::Read);
        }
        self.end(Some("upstream_read_error"), Some(502));
    }

    /// The upstream body ended cleanly: an answer that carried an error event is logged
    /// with it (its 200 kept: the client had that head and reads the error in the stream).
    fn ended(&mut self) {
        let error = self.usage.error_event().then_some("upstream_stream_error");
        self.end(error, None);
    }

    fn end(&mut self, error: Option<&'static str>, status: Option<u16>) {
        if let Some(mut c) = self.settlement.take() {
            record(&mut c, &self.usage, &self.parser);
            c.error = error;
            if let Some(s) = status {
                c.status = s;
            }
        }
    }
}

impl Drop for AccountedStream {
    fn drop(&mut self) {
        if let Some(c) = &mut self.settlement {
            record(c, &self.usage, &self.parser);
        }
    }
}

/// What the stream read goes to the settlement: the usage, and the events for an estimate
/// (those too long to read among them: they carried output all the same).
fn record(c: &mut Settlement, usage: &StreamUsage, parser: &SseParser) {
    c.usage = usage.usage();
    c.oversized_events = parser.oversized();
    if let Some(n) = &mut c.streamed_events {
        *n = usage.events() + parser.oversized();
    }
}

impl Body for AccountedStream {
    type Data = Bytes;
    type Error = BodyError;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, BodyError>>> {
        let this = &mut *self;
        loop {
            return match Pin::new(&mut this.upstream).poll_frame(cx) {
                Poll::Ready(Some(Ok(mut frame))) => {
                    if let Some(data) = frame.data_ref() {
                        let usage = &mut this.usage;
                        let parser = &mut this.parser;
                        match &mut this.gzip {
                            None => parser.feed(data, |event| usage.observe(&event)),
                            Some(gz) => {
                                let mut leaked = false;
                                let check = &mut this.leak_check;
                                gz.feed(data, |plain| {
                                    parser.feed(plain, |event| usage.observe(&event));
                                    leaked |= check.as_mut().is_some_and(|c| c.seen(plain));
                                });
                                if leaked {
                                    this.end(Some("upstream_key_in_stream"), Some(502));
                                    return Poll::Ready(Some(Err(Box::new(KeyInStream))));
                                }
                            }
                        }
                    }
                    let end = this.upstream.is_end_stream();
                    if end {
                        // A length-delimited body can end with its last data frame: hyper will not
                        // poll again, so this is the end of the stream.
                        this.ended();
                    } else {
                        let deadline = Instant::now() + this.idle_timeout;
                        this.idle.as_mut().reset(deadline);
                    }
                    if let (Some(r), Some(data)) = (&mut this.rewrites, frame.data_ref()) {
                        let mut kept = r.feed(data);
                        if end {
                            kept = [kept, r.finish()].concat().into();
                        }
                        if kept.is_empty() && !end {
                            continue;
                        }
                        frame = Frame::data(kept);
                    }
                    Poll::Ready(Some(Ok(frame)))
                }
                Poll::Ready(Some(Err(e))) => {
                    this.upstream_broke();
                    Poll::Ready(Some(Err(e.into())))
                }
                Poll::Ready(None) => {
                    if this.gzip.is_none() && this.parser.is_mid_event() {
                        // A close-delimited body whose upstream died: the end of the
                        // connection looks clean, the half event says otherwise.
                        this.upstream_broke();
                        return Poll::Ready(Some(Err(Box::new(Truncated))));
                    }
                    this.ended();
                    match this.rewrites.as_mut().map(|r| r.finish()) {
                        Some(tail) if !tail.is_empty() => Poll::Ready(Some(Ok(Frame::data(tail)))),
                        _ => Poll::Ready(None),
                    }
                }
                Poll::Pending => {
                    if this.idle.as_mut().poll(cx).is_ready() {
                        // The status line is long gone; 504 in metrics and the log says why the
                        // client saw a cut stream.
                        this.end(Some("upstream_idle_timeout"), Some(504));
                        return Poll::Ready(Some(Err(Box::new(IdleTimeout(this.idle_timeout)))));
                    }
                    Poll::Pending
                }
            };
        }
    }

    fn is_end_stream(&self) -> bool {
        self.upstream.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.upstream.size_hint()
    }
}
