//! AWS's binary event-stream framing (Bedrock's ConverseStream), framed incrementally and
//! bounded like the SSE parser (`crate::sse`): bytes are held only up to one frame, a frame
//! longer than the gateway reads is skipped by counting (never buffered), and each whole
//! frame is checked and read by `aws-smithy-eventstream` (both CRCs, the header encoding).
//!
//! A frame is `total_length u32`, `headers_length u32`, `prelude_crc u32` (CRC-32 of the
//! first 8 bytes), headers, payload, `message_crc u32` (CRC-32 of all before it). The
//! prelude CRC is checked as soon as 12 bytes are in, before waiting for the body: a length
//! that is corrupt must not make the gateway wait for (or skip) gigabytes.
//! Each frame becomes an `SseEvent` so the decoders keep one signature: `event` is the
//! `:event-type` (events) or `:exception-type` (modelled exceptions); a generic error
//! (`:message-type: error`) is [`ERROR_EVENT`] with a `{"message","code"}` payload.

use aws_smithy_eventstream::frame::read_message_from;
use aws_smithy_types::event_stream::{HeaderValue, Message};

use crate::sse::SseEvent;

/// The longest frame read: as long as an SSE event may be, and room for its headers.
pub(crate) const MAX_FRAME_BYTES: usize = crate::sse::MAX_EVENT_BYTES + 64 * 1024;

/// The smallest frame: a prelude and a message CRC, no headers, no payload.
const MIN_FRAME_BYTES: usize = 16;

/// The event name a generic error frame (`:message-type: error`) is handed on as (a `:`
/// starts no member name).
pub(crate) const ERROR_EVENT: &[u8] = b":error";

pub(crate) struct EventStreamFramer {
    /// An incomplete frame's bytes (at most [`MAX_FRAME_BYTES`]).
    buf: Vec<u8>,
    /// Bytes of an oversized frame still to skip.
    skip: usize,
    oversized: u64,
    /// Why the stream cannot be read on (framing lost, a corrupt frame); set once.
    failure: Option<String>,
    /// A generic error's payload, built here (its message is in headers).
    scratch: Vec<u8>,
}

impl EventStreamFramer {
    pub(crate) fn new() -> EventStreamFramer {
        EventStreamFramer {
            buf: Vec::new(),
            skip: 0,
            oversized: 0,
            failure: None,
            scratch: Vec::new(),
        }
    }

    /// Feeds bytes; calls `on_event` for each whole frame they complete. After a failure
    /// ([`Self::failure`]) everything is ignored.
    pub(crate) fn feed(&mut self, chunk: &[u8], mut on_event: impl FnMut(SseEvent<'_>)) {
        if self.failure.is_some() {
            return;
        }
        let mut chunk = chunk;
        if self.skip > 0 {
            let n = self.skip.min(chunk.len());
            self.skip -= n;
            chunk = &chunk[n..];
        }
        // Whole frames straight out of the chunk when nothing is held (the usual case: no
        // copy); the tail is kept.
        if self.buf.is_empty() {
            let used = self.frames(chunk, &mut on_event);
            let rest = &chunk[used..];
            let rest = self.skip_from(rest);
            self.reserve_frame(rest);
            self.buf.extend_from_slice(rest);
            return;
        }
        self.reserve_frame(chunk);
        self.buf.extend_from_slice(chunk);
        let buf = std::mem::take(&mut self.buf);
        let used = self.frames(&buf, &mut on_event);
        let rest = self.skip_from(&buf[used..]);
        let keep = buf.len() - rest.len();
        let mut buf = buf;
        buf.drain(..keep);
        self.buf = buf;
    }

    /// Room for the whole frame being held, once its length is known: growing by doubling
    /// held a big frame's bytes up to twice while it was copied over (issue 49).
    fn reserve_frame(&mut self, more: &[u8]) {
        let have = self.buf.len() + more.len();
        if have < 4 || self.buf.capacity() >= have {
            return;
        }
        let mut len = [0u8; 4];
        for (k, b) in len.iter_mut().enumerate() {
            *b = if k < self.buf.len() {
                self.buf[k]
            } else {
                more[k - self.buf.len()]
            };
        }
        let total = (u32::from_be_bytes(len) as usize).min(MAX_FRAME_BYTES);
        self.buf.reserve_exact(total.max(have) - self.buf.len());
    }

    /// `rest` less the part of an oversized frame now being skipped.
    fn skip_from<'b>(&mut self, rest: &'b [u8]) -> &'b [u8] {
        let n = self.skip.min(rest.len());
        self.skip -= n;
        &rest[n..]
    }

    /// Reads the whole frames at the start of `data`; returns the bytes used. An oversized
    /// frame's length goes to `skip` (and its bytes here count as used).
    fn frames(&mut self, data: &[u8], on_event: &mut impl FnMut(SseEvent<'_>)) -> usize {
        let mut at = 0;
        while self.failure.is_none() && self.skip == 0 {
            let rest = &data[at..];
            if rest.len() < 12 {
                break;
            }
            let total = u32::from_be_bytes([rest[0], rest[1], rest[2], rest[3]]) as usize;
            let headers = u32::from_be_bytes([rest[4], rest[5], rest[6], rest[7]]) as usize;
            let crc = u32::from_be_bytes([rest[8], rest[9], rest[10], rest[11]]);
            if crc32fast::hash(&rest[..8]) != crc {
                self.failure = Some("an event-stream frame's prelude CRC does not match".into());
                break;
            }
            if total < MIN_FRAME_BYTES || headers > total - MIN_FRAME_BYTES {
                self.failure = Some("an event-stream frame's lengths are impossible".into());
                break;
            }
            if total > MAX_FRAME_BYTES {
                self.oversized += 1;
                let n = total.min(rest.len());
                at += n;
                self.skip = total - n;
                continue;
            }
            if rest.len() < total {
                break;
            }
            at += total;
            match read_message_from(&rest[..total]) {
                Ok(msg) => self.emit(&msg, on_event),
                Err(e) => {
                    self.failure = Some(format!("an event-stream frame is corrupt ({e})"));
                }
            }
        }
        at
    }

    fn emit(&mut self, msg: &Message, on_event: &mut impl FnMut(SseEvent<'_>)) {
        let header = |name: &str| {
            msg.headers()
                .iter()
                .find(|h| h.name().as_str() == name)
                .and_then(|h| match h.value() {
                    HeaderValue::String(s) => Some(s.as_str()),
                    _ => None,
                })
        };
        match header(":message-type") {
            Some("event") => on_event(SseEvent {
                event: header(":event-type").unwrap_or_default().as_bytes(),
                data: msg.payload(),
            }),
            Some("exception") => on_event(SseEvent {
                event: header(":exception-type").unwrap_or_default().as_bytes(),
                data: msg.payload(),
            }),
            Some("error") => {
                self.scratch.clear();
                let v = serde_json::json!({
                    "message": header(":error-message").unwrap_or("upstream error"),
                    "code": header(":error-code").unwrap_or_default(),
                });
                serde_json::to_writer(&mut self.scratch, &v).expect("a JSON value serializes");
                on_event(SseEvent {
                    event: ERROR_EVENT,
                    data: &self.scratch,
                });
            }
            // Another message type means nothing to a reader of Converse: skipped, as
            // botocore does.
            _ => {}
        }
    }

    /// Why the stream cannot be read on, once that happened.
    pub(crate) fn failure(&self) -> Option<&str> {
        self.failure.as_deref()
    }

    /// Whether the bytes so far end inside a frame (or a skipped one).
    pub(crate) fn is_mid_event(&self) -> bool {
        !self.buf.is_empty() || self.skip > 0
    }

    /// Bytes of an incomplete frame held.
    pub(crate) fn held(&self) -> usize {
        self.buf.len()
    }

    /// Frames skipped as longer than [`MAX_FRAME_BYTES`].
    pub(crate) fn oversized(&self) -> u64 {
        self.oversized
    }
}

/// Test and fuzz helpers: frames as AWS writes them (through the same crate's writer).
#[cfg(test)]
pub(crate) mod testing {
    use aws_smithy_eventstream::frame::write_message_to;
    use aws_smithy_types::event_stream::{Header, HeaderValue, Message};

    pub(crate) fn frame(kind: &str, name_header: &str, name: &str, payload: &[u8]) -> Vec<u8> {
        let msg = Message::new(payload.to_vec())
            .add_header(Header::new(
                ":message-type",
                HeaderValue::String(kind.to_owned().into()),
            ))
            .add_header(Header::new(
                name_header.to_owned(),
                HeaderValue::String(name.to_owned().into()),
            ))
            .add_header(Header::new(
                ":content-type",
                HeaderValue::String("application/json".into()),
            ));
        let mut out = Vec::new();
        write_message_to(&msg, &mut out).expect("a small message writes");
        out
    }

    pub(crate) fn event(name: &str, payload: &str) -> Vec<u8> {
        frame("event", ":event-type", name, payload.as_bytes())
    }

    pub(crate) fn exception(name: &str, payload: &str) -> Vec<u8> {
        frame("exception", ":exception-type", name, payload.as_bytes())
    }
}

#[cfg(test)]
mod tests {
    use super::testing::{event, exception};
    use super::*;

    fn read(pieces: &[&[u8]]) -> (Vec<(String, String)>, EventStreamFramer) {
        let mut f = EventStreamFramer::new();
        let mut got = Vec::new();
        for p in pieces {
            f.feed(p, |e| {
                got.push((
                    String::from_utf8_lossy(e.event).into_owned(),
                    String::from_utf8_lossy(e.data).into_owned(),
                ))
            });
        }
        (got, f)
    }

    fn sample() -> (Vec<u8>, Vec<(String, String)>) {
        let mut s = event("messageStart", r#"{"role":"assistant"}"#);
        s.extend(event(
            "contentBlockDelta",
            r#"{"contentBlockIndex":0,"delta":{"text":"hi"}}"#,
        ));
        s.extend(exception(
            "modelStreamErrorException",
            r#"{"message":"boom"}"#,
        ));
        let want = vec![
            ("messageStart".into(), r#"{"role":"assistant"}"#.into()),
            (
                "contentBlockDelta".into(),
                r#"{"contentBlockIndex":0,"delta":{"text":"hi"}}"#.into(),
            ),
            (
                "modelStreamErrorException".into(),
                r#"{"message":"boom"}"#.into(),
            ),
        ];
        (s, want)
    }

    #[test]
    fn split_at_every_byte() {
        let (s, want) = sample();
        for cut in 0..=s.len() {
            let (got, f) = read(&[&s[..cut], &s[cut..]]);
            assert_eq!(got, want, "cut at {cut}");
            assert!(!f.is_mid_event() && f.failure().is_none());
        }
        let bytes: Vec<&[u8]> = s.chunks(1).collect();
        let (got, f) = read(&bytes);
        assert_eq!(got, want);
        assert_eq!(f.held(), 0);
    }

    #[test]
    fn cut_frame_is_mid_event() {
        let (s, want) = sample();
        let (got, f) = read(&[&s[..s.len() - 3]]);
        assert_eq!(got, want[..2]);
        assert!(f.is_mid_event());
        assert!(f.failure().is_none());
    }

    #[test]
    fn bad_prelude_crc_fails_at_once() {
        let (mut s, _) = sample();
        let first = event("messageStart", r#"{"role":"assistant"}"#).len();
        s[first + 9] ^= 1; // the second frame's prelude CRC
        let (got, f) = read(&[&s[..first + 12]]);
        assert_eq!(got.len(), 1);
        assert!(
            f.failure().unwrap().contains("prelude CRC"),
            "{:?}",
            f.failure()
        );
        // A claimed length with a bad CRC is never waited for.
        let mut bad = vec![0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0, 0, 0, 0, 0];
        let (_, f) = read(&[&bad]);
        assert!(f.failure().is_some());
        bad.clear();
    }

    #[test]
    fn bad_message_crc_fails() {
        let (mut s, _) = sample();
        let first = event("messageStart", r#"{"role":"assistant"}"#).len();
        s[first - 1] ^= 1; // the first frame's message CRC
        let (got, f) = read(&[&s]);
        assert!(got.is_empty());
        assert!(
            f.failure().unwrap().contains("corrupt"),
            "{:?}",
            f.failure()
        );
        // A payload byte changed: the same.
        let (mut s, _) = sample();
        s[20] ^= 0x20;
        let (_, f) = read(&[&s]);
        assert!(f.failure().is_some());
    }

    #[test]
    fn oversized_frame_is_skipped_unbuffered() {
        let big = "x".repeat(MAX_FRAME_BYTES);
        let mut s = event("contentBlockDelta", &big);
        let (tail, want) = sample();
        s.extend(&tail);
        let mut f = EventStreamFramer::new();
        let mut got = Vec::new();
        let mut most_held = 0;
        for piece in s.chunks(16 * 1024) {
            f.feed(piece, |e| {
                got.push(String::from_utf8_lossy(e.event).into_owned())
            });
            most_held = most_held.max(f.held());
        }
        assert_eq!(f.oversized(), 1);
        assert!(most_held < 32 * 1024, "held {most_held}");
        let names: Vec<String> = want.into_iter().map(|(n, _)| n).collect();
        assert_eq!(got, names);
        assert!(!f.is_mid_event());
    }

    #[test]
    fn generic_error_frames() {
        use aws_smithy_eventstream::frame::write_message_to;
        use aws_smithy_types::event_stream::{Header, HeaderValue as V, Message};
        let msg = Message::new(Vec::new())
            .add_header(Header::new(":message-type", V::String("error".into())))
            .add_header(Header::new(
                ":error-code",
                V::String("InternalFailure".into()),
            ))
            .add_header(Header::new(":error-message", V::String("it broke".into())));
        let mut s = Vec::new();
        write_message_to(&msg, &mut s).unwrap();
        let (got, _) = read(&[&s]);
        assert_eq!(got[0].0, ":error");
        let v: serde_json::Value = serde_json::from_str(&got[0].1).unwrap();
        assert_eq!(v["message"], "it broke");
        assert_eq!(v["code"], "InternalFailure");
    }
}
