//! The streaming body of a translated request: upstream SSE bytes go through the stream
//! translator (`crate::translate::stream`) and the client gets its own dialect's events as
//! soon as each upstream event is complete. Kept apart from the passthrough body
//! (`stream.rs`) so the fast path carries no translation state or branch.

use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use http_body::{Body, Frame};
use hyper::body::Incoming;

use crate::body::{BodyError, Polled};
use crate::settle::Settlement;
use crate::translate::stream::Translator;
use crate::usage::Usage;

use super::offload::{blocking, OFF_RUNTIME_BYTES};
use super::upstream_stream::UpstreamStream;

pub(crate) struct TranslatedStream {
    upstream: UpstreamStream,
    translator: Translator,
    /// The client has its whole answer: the body is over whatever the upstream still sends.
    finished: bool,
}

impl TranslatedStream {
    pub(crate) fn new(
        upstream: Incoming,
        translator: Translator,
        settlement: Settlement,
        idle_timeout: Duration,
        gzip: bool,
    ) -> Self {
        TranslatedStream {
            upstream: UpstreamStream::new(upstream, settlement, idle_timeout, gzip),
            translator,
            finished: false,
        }
    }
}

/// The usage the translator has read, in the gateway's accounting, and the upstream events
/// it saw (the estimate when no usage came).
fn usage(translator: &Translator) -> (Usage, u64) {
    let usage = translator
        .usage()
        .map(|u| u.accounting())
        .unwrap_or_default();
    (usage, translator.events())
}

impl Drop for TranslatedStream {
    fn drop(&mut self) {
        let translator = &self.translator;
        self.upstream.dropped(|| usage(translator));
    }
}

fn data(out: Vec<u8>) -> Polled {
    Poll::Ready(Some(Ok(Frame::data(Bytes::from(out)))))
}

impl Body for TranslatedStream {
    type Data = Bytes;
    type Error = BodyError;

    fn poll_frame(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Polled {
        let this = &mut *self;
        loop {
            if this.finished {
                return Poll::Ready(None);
            }
            let translator = &mut this.translator;
            match this.upstream.poll_frame(cx) {
                Poll::Ready(Some(Ok(frame))) => {
                    let Some(chunk) = frame.data_ref() else {
                        continue; // trailers carry nothing to translate
                    };
                    // Sized for the translated events at once: growing from empty cost
                    // several reallocations per upstream chunk.
                    let mut out = Vec::with_capacity(chunk.len() + chunk.len() / 2 + 512);
                    match this.upstream.gzip_side() {
                        None if translator.held() + chunk.len() >= OFF_RUNTIME_BYTES => {
                            // An event of megabytes takes milliseconds to translate: the
                            // worker's other tasks move to another thread meanwhile.
                            blocking(|| translator.feed(chunk, &mut out))
                        }
                        None => translator.feed(chunk, &mut out),
                        Some(gz) => {
                            blocking(|| gz.feed(chunk, |plain| translator.feed(plain, &mut out)))
                        }
                    }
                    if translator.oversized() > 0 {
                        this.finished = true;
                        this.upstream.oversized(translator.oversized());
                        let error = Some("upstream_event_too_large");
                        this.upstream.end(|| usage(translator), error, Some(502));
                    } else if translator.is_done() {
                        this.finished = true;
                        // An event over its node budget is logged as one too long to read.
                        let error = translator.error();
                        let status = (error == Some("upstream_event_too_large")).then_some(502);
                        this.upstream.end(|| usage(translator), error, status);
                    } else {
                        this.upstream.rearm();
                    }
                    if !out.is_empty() {
                        return data(out);
                    }
                }
                Poll::Ready(Some(Err(e))) => {
                    this.finished = true;
                    this.upstream.broke(|| usage(translator));
                    return Poll::Ready(Some(Err(e.into())));
                }
                Poll::Ready(None) => {
                    let mut out = Vec::new();
                    this.finished = true;
                    return match translator.finish(&mut out) {
                        Ok(()) => {
                            this.upstream.end(|| usage(translator), None, None);
                            if out.is_empty() {
                                Poll::Ready(None)
                            } else {
                                data(out)
                            }
                        }
                        Err(t) => {
                            this.upstream.broke(|| usage(translator));
                            Poll::Ready(Some(Err(Box::new(t))))
                        }
                    };
                }
                Poll::Pending => {
                    let finished = &mut this.finished;
                    return this.upstream.pending(cx, finished, || usage(translator));
                }
            }
        }
    }

    fn is_end_stream(&self) -> bool {
        self.finished
    }
}
