//! The streaming body of a translated request: upstream SSE bytes go through the stream
//! translator (`crate::translate::stream`) and the client gets its own dialect's events as
//! soon as each upstream event is complete. Kept apart from the passthrough body
//! (`stream.rs`) so the fast path carries no translation state or branch.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use http_body::{Body, Frame};
use hyper::body::Incoming;
use tokio::time::{Instant, Sleep};

use crate::body::BodyError;
use crate::metrics::UpstreamErrorKind;
use crate::settle::Settlement;
use crate::translate::stream::Translator;

use super::encoding::GzSide;

pub(crate) struct TranslatedStream {
    upstream: Incoming,
    translator: Translator,
    /// Set when the upstream gzips its stream although asked not to.
    gzip: Option<Box<GzSide>>,
    idle: Pin<Box<Sleep>>,
    idle_timeout: Duration,
    /// Taken (and so recorded) when the stream ends; if still here on drop, the client left.
    settlement: Option<Settlement>,
    /// The client has its whole answer: the body is over whatever the upstream still sends.
    finished: bool,
}

#[derive(Debug, thiserror::Error)]
#[error("upstream stream was idle for longer than {0:?}")]
struct IdleTimeout(Duration);

impl TranslatedStream {
    pub(crate) fn new(
        upstream: Incoming,
        translator: Translator,
        mut settlement: Settlement,
        idle_timeout: Duration,
        gzip: bool,
    ) -> Self {
        settlement.error = Some("client_disconnected");
        TranslatedStream {
            upstream,
            translator,
            gzip: gzip.then(Box::default),
            idle: Box::pin(tokio::time::sleep(idle_timeout)),
            idle_timeout,
            settlement: Some(settlement),
            finished: false,
        }
    }

    fn upstream_broke(&mut self) {
        if let Some(slot) = self.settlement.as_ref().and_then(|c| c.model_slot()) {
            slot.upstream_error(UpstreamErrorKind::Read);
        }
        self.end(Some("upstream_read_error"), Some(502));
    }

    fn end(&mut self, error: Option<&'static str>, status: Option<u16>) {
        self.finished = true;
        if let Some(mut c) = self.settlement.take() {
            c.usage = self.usage();
            c.error = error;
            if let Some(s) = status {
                c.status = s;
            }
        }
    }

    fn usage(&self) -> crate::usage::Usage {
        self.translator
            .usage()
            .map(|u| u.accounting())
            .unwrap_or_default()
    }
}

impl Drop for TranslatedStream {
    fn drop(&mut self) {
        let usage = self.usage();
        if let Some(c) = &mut self.settlement {
            c.usage = usage;
        }
    }
}

fn data(out: Vec<u8>) -> Poll<Option<Result<Frame<Bytes>, BodyError>>> {
    Poll::Ready(Some(Ok(Frame::data(Bytes::from(out)))))
}

impl Body for TranslatedStream {
    type Data = Bytes;
    type Error = BodyError;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, BodyError>>> {
        let this = &mut *self;
        loop {
            if this.finished {
                return Poll::Ready(None);
            }
            match Pin::new(&mut this.upstream).poll_frame(cx) {
                Poll::Ready(Some(Ok(frame))) => {
                    let Some(chunk) = frame.data_ref() else {
                        continue; // trailers carry nothing to translate
                    };
                    let mut out = Vec::new();
                    let translator = &mut this.translator;
                    match &mut this.gzip {
                        None => translator.feed(chunk, &mut out),
                        Some(gz) => gz.feed(chunk, |plain| translator.feed(plain, &mut out)),
                    }
                    if this.translator.is_done() {
                        this.end(None, None);
                    } else {
                        let deadline = Instant::now() + this.idle_timeout;
                        this.idle.as_mut().reset(deadline);
                    }
                    if !out.is_empty() {
                        return data(out);
                    }
                }
                Poll::Ready(Some(Err(e))) => {
                    this.upstream_broke();
                    return Poll::Ready(Some(Err(e.into())));
                }
                Poll::Ready(None) => {
                    let mut out = Vec::new();
                    return match this.translator.finish(&mut out) {
                        Ok(()) => {
                            this.end(None, None);
                            if out.is_empty() {
                                Poll::Ready(None)
                            } else {
                                data(out)
                            }
                        }
                        Err(t) => {
                            this.upstream_broke();
                            Poll::Ready(Some(Err(Box::new(t))))
                        }
                    };
                }
                Poll::Pending => {
                    if this.idle.as_mut().poll(cx).is_ready() {
                        this.end(Some("upstream_idle_timeout"), Some(504));
                        return Poll::Ready(Some(Err(Box::new(IdleTimeout(this.idle_timeout)))));
                    }
                    return Poll::Pending;
                }
            }
        }
    }

    fn is_end_stream(&self) -> bool {
        self.finished
    }
}
