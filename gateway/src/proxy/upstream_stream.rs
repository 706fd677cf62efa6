//! The upstream side of the translated streaming body (`translated.rs`): the upstream body,
//! its idle timer, the gzip side channel and the settlement recorded when the stream ends.
//! The passthrough body (`stream.rs`) keeps these as its own fields on purpose: wrapped in
//! this type, PGO builds spent ~2.5% more instructions per request on passthrough streams
//! (callgrind, responses-stream-minimal); only `IdleTimeout` is shared.

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
use crate::usage::Usage;

use super::encoding::GzSide;

pub(super) struct UpstreamStream {
    body: Incoming,
    /// Set when the upstream gzips its stream although asked not to: what the body reads
    /// from it comes from a decoded copy.
    gzip: Option<Box<GzSide>>,
    idle: Pin<Box<Sleep>>,
    idle_timeout: Duration,
    /// Taken (and so recorded) when the stream ends; if still here on drop, the client left.
    settlement: Option<Settlement>,
}

/// The error a streaming body ends with when its upstream was silent for the idle timeout.
#[derive(Debug, thiserror::Error)]
#[error("upstream stream was idle for longer than {0:?}")]
pub(super) struct IdleTimeout(pub(super) Duration);

impl UpstreamStream {
    pub(super) fn new(
        body: Incoming,
        mut settlement: Settlement,
        idle_timeout: Duration,
        gzip: bool,
    ) -> Self {
        // Until the stream ends normally, a drop means the client disconnected.
        settlement.error = Some("client_disconnected");
        // An answer is being generated: its tokens count even if its usage never comes.
        settlement.streamed_events = Some(0);
        UpstreamStream {
            body,
            gzip: gzip.then(Box::default),
            idle: Box::pin(tokio::time::sleep(idle_timeout)),
            idle_timeout,
            settlement: Some(settlement),
        }
    }

    #[inline]
    pub(super) fn poll_frame(
        &mut self,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, hyper::Error>>> {
        Pin::new(&mut self.body).poll_frame(cx)
    }

    /// The gunzipping side, when the upstream gzips its stream: the caller then reads each
    /// chunk through it, with one call site per case (a reader closure passed through a
    /// helper cost PGO builds instructions on streamed responses).
    #[inline]
    pub(super) fn gzip_side(&mut self) -> Option<&mut GzSide> {
        self.gzip.as_deref_mut()
    }

    /// A chunk arrived: the idle timer starts again.
    #[inline]
    pub(super) fn rearm(&mut self) {
        let deadline = Instant::now() + self.idle_timeout;
        self.idle.as_mut().reset(deadline);
    }

    /// The upstream was silent for the whole idle timeout: the status line is long gone, so
    /// 504 in metrics and the log says why the client saw a cut stream. `None` while there is
    /// still time.
    #[inline]
    pub(super) fn poll_idle(
        &mut self,
        cx: &mut Context<'_>,
        usage: impl FnOnce() -> (Usage, u64),
    ) -> Option<BodyError> {
        if self.idle.as_mut().poll(cx).is_pending() {
            return None;
        }
        self.end(usage, Some("upstream_idle_timeout"), Some(504));
        Some(Box::new(IdleTimeout(self.idle_timeout)))
    }

    /// What a body answers while its upstream has nothing: `Pending`, or past the idle
    /// timeout its error (the body then `finished`).
    #[inline]
    pub(super) fn pending(
        &mut self,
        cx: &mut Context<'_>,
        finished: &mut bool,
        usage: impl FnOnce() -> (Usage, u64),
    ) -> crate::body::Polled {
        match self.poll_idle(cx, usage) {
            Some(e) => {
                *finished = true;
                Poll::Ready(Some(Err(e)))
            }
            None => Poll::Pending,
        }
    }

    /// The upstream broke mid-stream: a 502 in metrics and the log (the client already has
    /// a 200 head and sees a cut stream), counted as an upstream read error.
    pub(super) fn broke(&mut self, usage: impl FnOnce() -> (Usage, u64)) {
        if let Some(slot) = self.settlement.as_ref().and_then(|c| c.model_slot()) {
            slot.upstream_error(UpstreamErrorKind::Read);
        }
        self.end(usage, Some("upstream_read_error"), Some(502));
    }

    /// The stream had `n` events too long to read (counted when the request settles).
    pub(super) fn oversized(&mut self, n: u64) {
        if let Some(c) = &mut self.settlement {
            c.oversized_events = n;
        }
    }

    /// Records the end of the stream (once; later calls do nothing).
    #[inline]
    pub(super) fn end(
        &mut self,
        usage: impl FnOnce() -> (Usage, u64),
        error: Option<&'static str>,
        status: Option<u16>,
    ) {
        if let Some(mut c) = self.settlement.take() {
            record(&mut c, usage());
            c.error = error;
            if let Some(s) = status {
                c.status = s;
            }
        }
    }

    /// The body is being dropped before its end (the client left): the settlement, recorded
    /// when it drops, carries the usage read so far.
    pub(super) fn dropped(&mut self, usage: impl FnOnce() -> (Usage, u64)) {
        if let Some(c) = &mut self.settlement {
            record(c, usage());
        }
    }
}

/// The usage read and the upstream events seen (for an estimate) go to the settlement.
fn record(c: &mut Settlement, (usage, events): (Usage, u64)) {
    c.usage = usage;
    if let Some(n) = &mut c.streamed_events {
        *n = events;
    }
}
