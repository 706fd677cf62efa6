//! The streaming response body: upstream SSE bytes pass through frame by frame, untouched,
//! while the SSE parser reads usage on the side. Dropping it (the client went away) drops
//! the upstream body, which closes that upstream connection: the upstream request is
//! cancelled rather than read to the end.

use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use http_body::{Body, SizeHint};
use hyper::body::Incoming;

use crate::body::{BodyError, Polled};
use crate::settle::Settlement;
use crate::sse::SseParser;
use crate::usage::StreamUsage;

use super::upstream_stream::UpstreamStream;

pub(crate) struct AccountedStream {
    upstream: UpstreamStream,
    parser: SseParser,
    usage: StreamUsage,
}

#[derive(Debug, thiserror::Error)]
#[error("upstream stream ended in the middle of an event")]
struct Truncated;

impl AccountedStream {
    pub(crate) fn new(
        upstream: Incoming,
        settlement: Settlement,
        idle_timeout: Duration,
        gzip: bool,
    ) -> Self {
        AccountedStream {
            upstream: UpstreamStream::new(upstream, settlement, idle_timeout, gzip),
            parser: SseParser::new(),
            usage: StreamUsage::default(),
        }
    }
}

impl Drop for AccountedStream {
    fn drop(&mut self) {
        let usage = &self.usage;
        self.upstream.dropped(|| usage.usage());
    }
}

impl Body for AccountedStream {
    type Data = Bytes;
    type Error = BodyError;

    fn poll_frame(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Polled {
        let this = &mut *self;
        let usage = &mut this.usage;
        match this.upstream.poll_frame(cx) {
            Poll::Ready(Some(Ok(frame))) => {
                if let Some(data) = frame.data_ref() {
                    let parser = &mut this.parser;
                    match this.upstream.gzip_side() {
                        None => parser.feed(data, |event| usage.observe(&event)),
                        Some(gz) => gz.feed(data, |plain| {
                            parser.feed(plain, |event| usage.observe(&event))
                        }),
                    }
                }
                if this.upstream.is_end_stream() {
                    // A length-delimited body can end with its last data frame: hyper will not
                    // poll again, so this is the end of the stream.
                    this.upstream.end(|| usage.usage(), None, None);
                } else {
                    this.upstream.rearm();
                }
                Poll::Ready(Some(Ok(frame)))
            }
            Poll::Ready(Some(Err(e))) => {
                this.upstream.broke(|| usage.usage());
                Poll::Ready(Some(Err(e.into())))
            }
            Poll::Ready(None) => {
                if !this.upstream.is_gzip() && this.parser.is_mid_event() {
                    // A close-delimited body whose upstream died: the end of the
                    // connection looks clean, the half event says otherwise.
                    this.upstream.broke(|| usage.usage());
                    return Poll::Ready(Some(Err(Box::new(Truncated))));
                }
                this.upstream.end(|| usage.usage(), None, None);
                Poll::Ready(None)
            }
            Poll::Pending => match this.upstream.poll_idle(cx, || usage.usage()) {
                Some(e) => Poll::Ready(Some(Err(e))),
                None => Poll::Pending,
            },
        }
    }

    fn is_end_stream(&self) -> bool {
        self.upstream.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.upstream.size_hint()
    }
}
