//! One client connection's socket, as hyper sees it, with two jobs hyper has no hook for:
//!
//! - **A write-stall limit.** A client that stops reading would pin its stream and the
//!   upstream connection behind it for ever (`upstream.idle_timeout_ms` only watches the
//!   upstream). When a write has been pending for `server.client_write_timeout_ms`, the
//!   write fails, hyper closes the connection and the stream is dropped, which cancels the
//!   upstream request.
//! - **Envelopes for hyper's own errors.** hyper answers a head it cannot parse (400, 414,
//!   431) by itself with an empty body. Those answers are recognised on their way out and
//!   replaced by the same status with an error body in the route's dialect.

use std::future::Future;
use std::io;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::sync::Arc;
use std::task::{ready, Context, Poll};
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;
use tokio::time::{Instant, Sleep};

use crate::dialect::Envelope;
use crate::error::{ApiError, ErrorKind};

/// The shortest pacemaker period: below it a timer the gateway arms per request may still
/// unpark the driver (as before); a wake-up a second costs nothing measurable.
const PACEMAKER_MIN: Duration = Duration::from_secs(1);

/// Keeps one timer pending on the runtime it runs on, never due later than `period` from
/// now. Why: tokio unparks its time driver (an eventfd `write`, then often an extra
/// `epoll_wait` that only drains it) whenever a timer is registered with a deadline earlier
/// than the driver's next wake-up, even from the thread that holds the driver. On a
/// keep-alive connection hyper arms its header-read timer for the next request right after
/// each response, while the only timer pending was the request's longer first-byte timeout:
/// one self-wake per request (strace at c=1: `write` 1.00 per request, `epoll_wait` 2.47
/// against the floor's 2). With this timer pending, the driver's next wake-up is never
/// later than a per-request deadline, so arming one is not a reason to wake. Spawn one per
/// runtime; it wakes once a `period` when idle.
pub(crate) async fn pacemaker(period: Duration) {
    loop {
        tokio::time::sleep(period).await;
    }
}

/// The pacemaker's period: the shortest timeout the gateway arms per request or connection
/// (at least [`PACEMAKER_MIN`]).
pub(crate) fn pacemaker_period(cfg: &crate::config::Config) -> Duration {
    let (s, u) = (&cfg.server, &cfg.upstream);
    [
        s.header_read_timeout_ms,
        s.body_read_timeout_ms,
        s.client_write_timeout_ms,
        u.connect_timeout_ms,
        u.first_byte_timeout_ms,
        u.idle_timeout_ms,
        u.response_timeout_ms,
    ]
    .into_iter()
    .map(Duration::from_millis)
    .min()
    .unwrap_or(PACEMAKER_MIN)
    .max(PACEMAKER_MIN)
}

/// What a connection's requests may need to know about it.
#[derive(Debug, Default)]
pub(crate) struct ConnState {
    write_timed_out: AtomicBool,
}

impl ConnState {
    /// Whether the connection was closed because the client stopped reading.
    pub(crate) fn write_timed_out(&self) -> bool {
        self.write_timed_out.load(Relaxed)
    }
}

/// Request-line bytes kept to pick the envelope of a replaced error (`/v1/messages`).
const HEAD_PREFIX: usize = 48;

pub(crate) struct ClientIo {
    inner: TcpStream,
    state: Arc<ConnState>,
    write_timeout: Duration,
    /// Armed while a write is pending; allocated on the first stall only.
    stall: Option<Pin<Box<Sleep>>>,
    armed: bool,
    head: [u8; HEAD_PREFIX],
    head_len: usize,
    replacement: Option<Replacement>,
}

/// An error answer written in place of hyper's empty one.
struct Replacement {
    bytes: Vec<u8>,
    written: usize,
    /// What hyper is told was written: the length of its own answer.
    reported: usize,
}

impl ClientIo {
    pub(crate) fn new(
        inner: TcpStream,
        state: Arc<ConnState>,
        write_timeout: Duration,
    ) -> ClientIo {
        ClientIo {
            inner,
            state,
            write_timeout,
            stall: None,
            armed: false,
            head: [0; HEAD_PREFIX],
            head_len: 0,
            replacement: None,
        }
    }

    /// Passes a write result through, failing it once writes were pending too long.
    fn watch<T>(&mut self, cx: &mut Context<'_>, r: Poll<io::Result<T>>) -> Poll<io::Result<T>> {
        if r.is_ready() {
            self.armed = false;
            return r;
        }
        if !self.armed {
            let deadline = Instant::now() + self.write_timeout;
            match &mut self.stall {
                Some(s) => s.as_mut().reset(deadline),
                None => self.stall = Some(Box::pin(tokio::time::sleep_until(deadline))),
            }
            self.armed = true;
        }
        let Some(sleep) = &mut self.stall else {
            return Poll::Pending;
        };
        if sleep.as_mut().poll(cx).is_ready() {
            self.state.write_timed_out.store(true, Relaxed);
            return Poll::Ready(Err(io::Error::new(
                io::ErrorKind::TimedOut,
                "client stopped reading",
            )));
        }
        Poll::Pending
    }

    fn poll_replacement(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<usize>> {
        loop {
            let Some(r) = &mut self.replacement else {
                return Poll::Ready(Ok(0));
            };
            if r.written == r.bytes.len() {
                let reported = r.reported;
                self.replacement = None;
                return Poll::Ready(Ok(reported));
            }
            let res = Pin::new(&mut self.inner).poll_write(cx, &r.bytes[r.written..]);
            let n = ready!(self.watch(cx, res))?;
            if n == 0 {
                return Poll::Ready(Err(io::ErrorKind::WriteZero.into()));
            }
            if let Some(r) = &mut self.replacement {
                r.written += n;
            }
        }
    }

    /// Starts a replacement if `buf` is one of hyper's own empty error answers.
    fn intercept(&mut self, buf: &[u8]) -> bool {
        let Some((kind, message)) = hyper_error(buf) else {
            if buf.starts_with(b"HTTP/1.") {
                // A response: whatever is read next starts the next request head.
                self.head_len = 0;
            }
            return false;
        };
        let head = &self.head[..self.head_len];
        let has = |needle: &[u8]| head.windows(needle.len()).any(|w| w == needle);
        let envelope = if has(b" /v1/messages") {
            Envelope::Anthropic
        } else if has(b" /v1beta/models") || has(b"GenerateContent") || has(b":generateContent") {
            Envelope::Google
        } else {
            Envelope::Openai
        };
        let err = ApiError::new(kind, message);
        let body = err.body(envelope);
        let status = err.status();
        let mut bytes = format!(
            "HTTP/1.1 {} {}\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
            status.as_u16(),
            status.canonical_reason().unwrap_or(""),
            body.len()
        )
        .into_bytes();
        bytes.extend_from_slice(&body);
        self.replacement = Some(Replacement {
            bytes,
            written: 0,
            reported: buf.len(),
        });
        true
    }
}

/// hyper's own answers to heads it cannot parse: a status line, `content-length: 0`, no
/// id of ours (every answer the gateway makes carries `x-gateway-request-id`).
fn hyper_error(buf: &[u8]) -> Option<(ErrorKind, &'static str)> {
    const KNOWN: [(&[u8], ErrorKind, &str); 3] = [
        (
            b"HTTP/1.1 400 ",
            ErrorKind::InvalidRequest,
            "malformed HTTP request",
        ),
        (
            b"HTTP/1.1 414 ",
            ErrorKind::UriTooLong,
            "request URI is too long",
        ),
        (
            b"HTTP/1.1 431 ",
            ErrorKind::HeadersTooLarge,
            "request header fields are too large",
        ),
    ];
    let (_, kind, message) = KNOWN.iter().find(|(p, _, _)| buf.starts_with(p))?;
    let end = buf.windows(4).position(|w| w == b"\r\n\r\n")?;
    let head = &buf[..end + 2];
    let has = |needle: &[u8]| head.windows(needle.len()).any(|w| w == needle);
    (has(b"\r\ncontent-length: 0\r\n") && !has(b"x-gateway-request-id"))
        .then_some((*kind, *message))
}

impl AsyncRead for ClientIo {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        let before = buf.filled().len();
        ready!(Pin::new(&mut this.inner).poll_read(cx, buf))?;
        if this.head_len < HEAD_PREFIX {
            let new = &buf.filled()[before..];
            let n = new.len().min(HEAD_PREFIX - this.head_len);
            this.head[this.head_len..this.head_len + n].copy_from_slice(&new[..n]);
            this.head_len += n;
        }
        Poll::Ready(Ok(()))
    }
}

impl AsyncWrite for ClientIo {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        if this.replacement.is_some() || this.intercept(buf) {
            return this.poll_replacement(cx);
        }
        let r = Pin::new(&mut this.inner).poll_write(cx, buf);
        this.watch(cx, r)
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        if this.replacement.is_some() {
            return this.poll_replacement(cx);
        }
        if let Some(first) = bufs.iter().find(|b| !b.is_empty()) {
            if this.intercept(first) {
                return this.poll_replacement(cx);
            }
        }
        let r = Pin::new(&mut this.inner).poll_write_vectored(cx, bufs);
        this.watch(cx, r)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        if this.replacement.is_some() {
            ready!(this.poll_replacement(cx))?;
        }
        let r = Pin::new(&mut this.inner).poll_flush(cx);
        this.watch(cx, r)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        if this.replacement.is_some() {
            ready!(this.poll_replacement(cx))?;
        }
        Pin::new(&mut this.inner).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The pacemaker's timer must be due no later than any per-request timer, or arming
    /// that timer wakes the runtime again.
    #[test]
    fn the_pacemaker_beats_the_shortest_timeout_but_not_below_a_second() {
        let cfg = |extra: &str| {
            crate::config::Config::parse(
                &format!(
                    "{extra}\n[[models]]\nname = \"m\"\n[[models.targets]]\nprovider = \"openai\"\n\
                     base_url = \"http://127.0.0.1:9\"\nmodel = \"m\"\n"
                ),
                std::path::Path::new("test.toml"),
            )
            .unwrap()
        };
        // Defaults: the upstream connect timeout (5 s) is the shortest.
        assert_eq!(pacemaker_period(&cfg("")), Duration::from_secs(5));
        let short = cfg("[server]\nheader_read_timeout_ms = 2500");
        assert_eq!(pacemaker_period(&short), Duration::from_millis(2500));
        let tiny = cfg("[upstream]\nconnect_timeout_ms = 50");
        assert_eq!(pacemaker_period(&tiny), PACEMAKER_MIN);
    }

    #[test]
    fn recognises_only_hyper_answers() {
        let hyper =
            b"HTTP/1.1 431 Request Header Fields Too Large\r\ncontent-length: 0\r\ndate: x\r\n\r\n";
        assert_eq!(hyper_error(hyper).unwrap().0, ErrorKind::HeadersTooLarge);
        let ours =
            b"HTTP/1.1 400 Bad Request\r\ncontent-length: 0\r\nx-gateway-request-id: r\r\n\r\n";
        assert!(hyper_error(ours).is_none());
        let body = b"HTTP/1.1 400 Bad Request\r\ncontent-length: 12\r\n\r\n";
        assert!(hyper_error(body).is_none());
        assert!(hyper_error(b"HTTP/1.1 200 OK\r\ncontent-length: 0\r\n\r\n").is_none());
    }
}
