//! The response body: one full frame, or an SSE stream paced by `chunk_delay`, cut into
//! `write_fragment`-byte frames, and optionally stalled forever after its last segment.

use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{ready, Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use http_body::{Body, Frame, SizeHint};
use tokio::time::Sleep;

pub(crate) struct MockBody {
    kind: Kind,
}

enum Kind {
    Full(Option<Bytes>),
    Stream(Stream),
}

struct Stream {
    /// Segments to send; `delay` is waited before each one but the first.
    segments: Arc<[Bytes]>,
    next: usize,
    /// The rest of the segment being sent.
    pending: Bytes,
    fragment: Option<usize>,
    delay: Duration,
    sleep: Option<Pin<Box<Sleep>>>,
    started: bool,
    /// After the last segment, never end the body.
    stall: bool,
}

impl MockBody {
    pub(crate) fn full(bytes: Bytes) -> MockBody {
        MockBody {
            kind: Kind::Full(Some(bytes)),
        }
    }

    pub(crate) fn stream(
        segments: Arc<[Bytes]>,
        fragment: Option<usize>,
        delay: Duration,
        stall: bool,
    ) -> MockBody {
        MockBody {
            kind: Kind::Stream(Stream {
                segments,
                next: 0,
                pending: Bytes::new(),
                fragment: fragment.map(|n| n.max(1)),
                delay,
                sleep: None,
                started: false,
                stall,
            }),
        }
    }
}

impl Body for MockBody {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        match &mut self.get_mut().kind {
            Kind::Full(bytes) => Poll::Ready(bytes.take().map(|b| Ok(Frame::data(b)))),
            Kind::Stream(stream) => stream.poll_next(cx),
        }
    }

    fn is_end_stream(&self) -> bool {
        match &self.kind {
            Kind::Full(bytes) => bytes.is_none(),
            Kind::Stream(_) => false,
        }
    }

    fn size_hint(&self) -> SizeHint {
        match &self.kind {
            Kind::Full(Some(bytes)) => SizeHint::with_exact(bytes.len() as u64),
            Kind::Full(None) => SizeHint::with_exact(0),
            Kind::Stream(_) => SizeHint::default(),
        }
    }
}

impl Stream {
    fn poll_next(
        &mut self,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        loop {
            if !self.pending.is_empty() {
                let n = self
                    .fragment
                    .map_or(self.pending.len(), |f| f.min(self.pending.len()));
                return Poll::Ready(Some(Ok(Frame::data(self.pending.split_to(n)))));
            }
            if let Some(sleep) = self.sleep.as_mut() {
                ready!(sleep.as_mut().poll(cx));
                self.sleep = None;
                self.take_segment();
                continue;
            }
            if self.next == self.segments.len() {
                // A stalled stream registers no waker: it stays open until the connection
                // is dropped by the client or by shutdown.
                return if self.stall {
                    Poll::Pending
                } else {
                    Poll::Ready(None)
                };
            }
            if self.started && !self.delay.is_zero() {
                self.sleep = Some(Box::pin(tokio::time::sleep(self.delay)));
                continue;
            }
            self.started = true;
            self.take_segment();
        }
    }

    fn take_segment(&mut self) {
        self.pending = self.segments[self.next].clone();
        self.next += 1;
    }
}
