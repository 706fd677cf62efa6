//! A passthrough Gemini `streamGenerateContent` without `alt=sse`: one JSON array whose
//! elements come as the model writes them. Its bytes pass on as they arrive (no total cap:
//! only the idle timeout, as for SSE streams), while a splitter reads each element for its
//! usage. A cold path, kept apart from the SSE body (`stream.rs`) so that one carries no
//! branch for it.

use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use http_body::Body;
use hyper::body::Incoming;

use crate::body::{BodyError, Polled};
use crate::redact::{LeakCheck, Secrets};
use crate::settle::Settlement;
use crate::sse::{SseEvent, MAX_EVENT_BYTES};
use crate::usage::{StreamUsage, Usage};

use super::upstream_stream::UpstreamStream;

pub(crate) struct ArrayStream {
    upstream: UpstreamStream,
    elements: Elements,
    usage: StreamUsage,
    /// A gzipped stream's secrets, looked for in the decoded copy (see `stream.rs`).
    leak_check: Option<Box<LeakCheck>>,
    finished: bool,
}

#[derive(Debug, thiserror::Error)]
#[error("upstream stream carried an upstream secret; cut before it")]
struct SecretInStream;

impl ArrayStream {
    pub(crate) fn new(
        upstream: Incoming,
        settlement: Settlement,
        idle_timeout: Duration,
        gzip: bool,
        secrets: Option<&Arc<Secrets>>,
    ) -> Self {
        ArrayStream {
            upstream: UpstreamStream::new(upstream, settlement, idle_timeout, gzip),
            elements: Elements::default(),
            usage: StreamUsage::new(true),
            leak_check: secrets
                .filter(|_| gzip)
                .map(|s| Box::new(LeakCheck::new(s.clone()))),
            finished: false,
        }
    }
}

fn usage(u: &StreamUsage) -> (Usage, u64) {
    (u.usage(), u.events())
}

impl Drop for ArrayStream {
    fn drop(&mut self) {
        let u = &self.usage;
        self.upstream.dropped(|| usage(u));
    }
}

impl Body for ArrayStream {
    type Data = bytes::Bytes;
    type Error = BodyError;

    fn poll_frame(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Polled {
        let this = &mut *self;
        if this.finished {
            return Poll::Ready(None);
        }
        let u = &mut this.usage;
        match this.upstream.poll_frame(cx) {
            Poll::Ready(Some(Ok(frame))) => {
                if let Some(chunk) = frame.data_ref() {
                    let elements = &mut this.elements;
                    let mut leaked = false;
                    match this.upstream.gzip_side() {
                        None => elements.feed(chunk, |e| u.observe(&element(e))),
                        Some(gz) => {
                            let check = &mut this.leak_check;
                            gz.feed(chunk, |plain| {
                                elements.feed(plain, |e| u.observe(&element(e)));
                                leaked |= check.as_mut().is_some_and(|c| c.seen(plain));
                            })
                        }
                    }
                    if leaked {
                        this.finished = true;
                        this.upstream
                            .end(|| usage(u), Some("upstream_key_in_stream"), Some(502));
                        return Poll::Ready(Some(Err(Box::new(SecretInStream))));
                    }
                    this.upstream.rearm();
                }
                Poll::Ready(Some(Ok(frame)))
            }
            Poll::Ready(Some(Err(e))) => {
                this.finished = true;
                this.upstream.broke(|| usage(u));
                Poll::Ready(Some(Err(e.into())))
            }
            Poll::Ready(None) => {
                this.finished = true;
                let error = u.error_event().then_some("upstream_stream_error");
                this.upstream.oversized(this.elements.oversized);
                this.upstream.end(|| usage(u), error, None);
                Poll::Ready(None)
            }
            Poll::Pending => this.upstream.pending(cx, &mut this.finished, || usage(u)),
        }
    }

    fn is_end_stream(&self) -> bool {
        self.finished
    }
}

/// An element of the array, read as the data of an event (what usage reading takes).
fn element(data: &[u8]) -> SseEvent<'_> {
    SseEvent { event: b"", data }
}

/// Splits a JSON array, fed in pieces, into its elements (each at most [`MAX_EVENT_BYTES`];
/// a longer one is skipped and counted, as SSE events are).
#[derive(Default)]
struct Elements {
    /// Nesting depth, the array itself being 1.
    depth: u32,
    in_string: bool,
    escaped: bool,
    current: Vec<u8>,
    skipping: bool,
    oversized: u64,
}

impl Elements {
    fn feed(&mut self, chunk: &[u8], mut on_element: impl FnMut(&[u8])) {
        for &b in chunk {
            let inside = self.depth >= 2;
            if self.in_string {
                if self.escaped {
                    self.escaped = false;
                } else if b == b'\\' {
                    self.escaped = true;
                } else if b == b'"' {
                    self.in_string = false;
                }
            } else {
                match b {
                    b'"' => self.in_string = self.depth >= 1,
                    b'{' | b'[' => self.depth += 1,
                    b'}' | b']' => self.depth = self.depth.saturating_sub(1),
                    _ => {}
                }
            }
            if inside || self.depth >= 2 {
                if self.current.len() < MAX_EVENT_BYTES {
                    self.current.push(b);
                } else {
                    self.skipping = true;
                }
            }
            if inside && self.depth < 2 {
                // The element closed: hand it on (unless it was too long to keep).
                if self.skipping {
                    self.oversized += 1;
                } else {
                    on_element(&self.current);
                }
                self.current.clear();
                self.skipping = false;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn elements_split_anywhere() {
        let array = br#"[{"a":"]}\"[{"},
{"usageMetadata":{"promptTokenCount":3}}
,{"b":[1,{"c":2}]}]"#;
        for n in [1, 2, 3, 7, 1000] {
            let mut e = Elements::default();
            let mut got = Vec::new();
            for piece in array.chunks(n) {
                e.feed(piece, |el| {
                    got.push(String::from_utf8(el.to_vec()).unwrap())
                });
            }
            assert_eq!(
                got,
                [
                    r#"{"a":"]}\"[{"}"#,
                    r#"{"usageMetadata":{"promptTokenCount":3}}"#,
                    r#"{"b":[1,{"c":2}]}"#
                ],
                "pieces of {n}"
            );
        }
    }
}
