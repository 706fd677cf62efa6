//! The credentials the gateway sent upstream, taken out of whatever an upstream sends back: an
//! upstream that echoes the request's credentials (a proxy's debug page, a misconfigured
//! server, an error event quoting the key) must not hand them to the gateway's clients.
//!
//! A request's [`Secrets`] are every credential sent for that attempt (a key, a token, a
//! session token, the SigV4 signature). Each is found in every form it can take in what a
//! client receives: raw, JSON-escaped (`\/`, `\\`, `\"`, any `\uXXXX`, of any of its
//! characters) and URL-encoded (`%XX`, either case), mixed freely, and across chunk
//! boundaries. Matching is done on the decoded text, mapped back to the bytes that encode it;
//! only the bytes that could still become a match wait for the next chunk.
//!
//! The common chunk (no escape that can decode to one of the secrets' bytes) costs one
//! `memchr2` over it and one prebuilt `memmem` search per secret: a request has one to three
//! secrets, too few for a multi-pattern automaton to pay for itself.

use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use bytes::Bytes;
use http_body::{Body, Frame, SizeHint};
use http_body_util::BodyExt;
use memchr::memmem;

use crate::body::{BodyError, GatewayBody, Polled};

const MASK: &[u8] = b"[redacted]";

/// The credentials of one upstream attempt, ready to be searched for.
pub(crate) struct Secrets {
    patterns: Box<[memmem::Finder<'static>]>,
    /// Bytes that occur in some secret: an escape that decodes to anything else cannot be
    /// part of a match, so a chunk with only such escapes (`\n`, `\"`) takes the fast path.
    alphabet: [bool; 256],
    /// Some secret has a byte above ASCII (a `\u` escape of a non-ASCII character matters).
    non_ascii: bool,
    /// The longest secret's length.
    longest: usize,
}

/// How much of a body is searched at once (its decoded copy takes five times this). Tests
/// use small windows, so that the fuzz target's short texts cross their edges too.
const WINDOW: usize = if cfg!(test) { 64 } else { 64 * 1024 };

impl std::fmt::Debug for Secrets {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Secrets({}, [redacted])", self.patterns.len())
    }
}

impl Secrets {
    /// The set of `secrets` (empty ones ignored, duplicates once); `None` when none is left.
    pub(crate) fn new<'a>(secrets: impl IntoIterator<Item = &'a [u8]>) -> Option<Arc<Secrets>> {
        let mut list: Vec<&[u8]> = secrets.into_iter().filter(|s| !s.is_empty()).collect();
        list.sort_unstable();
        list.dedup();
        if list.is_empty() {
            return None;
        }
        let mut alphabet = [false; 256];
        for s in &list {
            for &b in *s {
                alphabet[b as usize] = true;
            }
        }
        let non_ascii = alphabet[0x80..].contains(&true);
        let patterns = list
            .iter()
            .map(|s| memmem::Finder::new(s).into_owned())
            .collect();
        let longest = list.iter().map(|s| s.len()).max().unwrap_or(0);
        Some(Arc::new(Secrets {
            patterns,
            alphabet,
            non_ascii,
            longest,
        }))
    }

    /// The same secrets and `more` (a signature computed for one request).
    pub(crate) fn with(&self, more: &[u8]) -> Option<Arc<Secrets>> {
        let mut all: Vec<&[u8]> = self.patterns.iter().map(|p| p.needle()).collect();
        all.push(more);
        Secrets::new(all)
    }

    /// `data` with every secret, in any form, replaced by `[redacted]` (the same bytes, not
    /// copied, when none is there).
    pub(crate) fn redact(&self, data: Bytes) -> Bytes {
        let scan = self.scan(&data, true);
        if scan.spans.is_empty() {
            return data;
        }
        Bytes::from(masked(&data, &scan.spans, data.len()))
    }

    /// Whether `data` carries a secret in any form.
    pub(crate) fn found_in(&self, data: &[u8]) -> bool {
        !self.scan(data, true).spans.is_empty()
    }

    /// The spans of `data` to mask, and where the bytes that must wait begin (`data.len()`
    /// when none must, always at the end of the input). Read a window at a time, so that
    /// decoding a big body (a buffered answer of megabytes with a `\/` in it) costs memory
    /// for one window, not five times the body.
    fn scan(&self, data: &[u8], at_end: bool) -> Scan {
        // Far longer than a secret's longest form (six bytes a character).
        let window = WINDOW.max(self.longest * 16);
        if data.len() <= window {
            return self.scan_window(data, at_end);
        }
        let mut spans = Vec::new();
        let mut at = 0;
        loop {
            let end = (at + window).min(data.len());
            let last = end == data.len();
            let s = self.scan_window(&data[at..end], at_end && last);
            spans.extend(s.spans.iter().map(|&(a, b)| (at + a, at + b)));
            if last {
                return Scan {
                    spans,
                    hold: at + s.hold,
                };
            }
            // What a match may still complete is read again with what follows.
            at += s.hold;
        }
    }

    fn scan_window(&self, data: &[u8], at_end: bool) -> Scan {
        let mut spans = Vec::new();
        for p in self.patterns.iter() {
            let n = p.needle().len();
            spans.extend(p.find_iter(data).map(|i| (i, i + n)));
        }
        let mut hold = data.len();
        if !at_end {
            for p in self.patterns.iter() {
                hold = hold.min(data.len() - prefix_at_end(data, p.needle()));
            }
        }
        // A hold inside an escape would have the next chunk decoded out of step (`\u00aA`
        // held from its `A`): it moves back to where that escape starts.
        let mid_escape = hold < data.len()
            && memchr::memchr2(b'\\', b'%', &data[hold.saturating_sub(5)..hold]).is_some();
        if mid_escape || self.needs_decoding(data, at_end) {
            let d = Decoded::of(data, at_end);
            let unit = d.starts.partition_point(|&s| s as usize <= hold);
            if unit > 0 {
                hold = d.starts[unit - 1] as usize;
            }
            for p in self.patterns.iter() {
                let n = p.needle().len();
                spans.extend(
                    p.find_iter(&d.bytes)
                        .map(|i| (d.starts[i] as usize, d.starts[i + n] as usize)),
                );
            }
            if !at_end {
                let longest = self
                    .patterns
                    .iter()
                    .map(|p| prefix_at_end(&d.bytes, p.needle()))
                    .max()
                    .unwrap_or(0);
                hold = hold.min(d.starts[d.bytes.len() - longest] as usize);
            }
        }
        if spans.is_empty() {
            return Scan { spans, hold };
        }
        // Overlapping forms (two secrets sharing bytes, a raw match inside an encoded one)
        // become one span; one still incomplete at `hold` waits whole.
        spans.sort_unstable();
        let mut merged: Vec<(usize, usize)> = Vec::with_capacity(spans.len());
        for (s, e) in spans {
            match merged.last_mut() {
                Some(last) if s < last.1 => last.1 = last.1.max(e),
                _ => merged.push((s, e)),
            }
        }
        if let Some(i) = merged.iter().position(|&(_, e)| e > hold) {
            hold = hold.min(merged[i].0);
            merged.truncate(i);
        }
        Scan {
            spans: merged,
            hold,
        }
    }

    /// Whether `data` has an escape that may decode to a secret's byte, or ends in the middle
    /// of one (what follows may complete it): only then is the decoded text searched.
    fn needs_decoding(&self, data: &[u8], at_end: bool) -> bool {
        let mut i = 0;
        while let Some(at) = memchr::memchr2(b'\\', b'%', &data[i..]) {
            let at = i + at;
            let rest = &data[at + 1..];
            i = at + 1;
            if data[at] == b'%' {
                match (rest.first(), rest.get(1)) {
                    (Some(&a), Some(&b)) => {
                        if let (Some(a), Some(b)) = (hex(a), hex(b)) {
                            if self.alphabet[(a << 4 | b) as usize] {
                                return true;
                            }
                            i += 2;
                        }
                    }
                    (Some(&a), None) if hex(a).is_some() => return !at_end,
                    (None, _) => return !at_end,
                    _ => {}
                }
                continue;
            }
            let Some(&e) = rest.first() else {
                return !at_end;
            };
            if e == b'u' {
                i += 1;
                match unicode(&rest[1..]) {
                    Some(Some(c)) => {
                        let relevant = match u8::try_from(c) {
                            Ok(b) if b < 0x80 => self.alphabet[b as usize],
                            _ => self.non_ascii,
                        };
                        if relevant {
                            return true;
                        }
                        i += 4;
                    }
                    Some(None) => {}
                    None => return !at_end,
                }
            } else if let Some(b) = simple_escape(e) {
                if self.alphabet[b as usize] {
                    return true;
                }
                i += 1; // an escaped backslash escapes nothing after it
            }
        }
        false
    }
}

struct Scan {
    /// Sorted, disjoint, each before `hold`.
    spans: Vec<(usize, usize)>,
    hold: usize,
}

/// `data[..end]` with `spans` masked.
fn masked(data: &[u8], spans: &[(usize, usize)], end: usize) -> Vec<u8> {
    let mut out = Vec::with_capacity(end + spans.len() * MASK.len());
    let mut at = 0;
    for &(s, e) in spans {
        out.extend_from_slice(&data[at..s]);
        out.extend_from_slice(MASK);
        at = e;
    }
    out.extend_from_slice(&data[at..end]);
    out
}

fn hex(b: u8) -> Option<u8> {
    (b as char).to_digit(16).map(|d| d as u8)
}

/// The code unit of `\uXXXX` from the bytes after the `u`: `None` when fewer than four are
/// there, all hex (the escape may still complete), `Some(None)` when they are no escape.
fn unicode(after_u: &[u8]) -> Option<Option<u32>> {
    let mut cp = 0u32;
    for i in 0..4 {
        match hex(*after_u.get(i)?) {
            Some(d) => cp = cp << 4 | u32::from(d),
            None => return Some(None),
        }
    }
    Some(Some(cp))
}

/// What a two-byte JSON escape (`\` then `e`) stands for.
fn simple_escape(e: u8) -> Option<u8> {
    Some(match e {
        b'"' | b'\\' | b'/' => e,
        b'b' => 0x08,
        b'f' => 0x0c,
        b'n' => b'\n',
        b'r' => b'\r',
        b't' => b'\t',
        _ => return None,
    })
}

/// The text with every escape decoded, each decoded byte knowing where its source form
/// starts (`starts[i]`; `starts[len]` is where the decoded text ends in the source).
struct Decoded {
    bytes: Vec<u8>,
    starts: Vec<u32>,
}

impl Decoded {
    /// Decodes `data`; an escape cut off at its end stops the decoding there, unless
    /// `at_end` (nothing follows: its bytes stand as they are).
    fn of(data: &[u8], at_end: bool) -> Decoded {
        let mut bytes = Vec::with_capacity(data.len());
        let mut starts = Vec::with_capacity(data.len() + 1);
        let mut i = 0;
        while i < data.len() {
            let b = data[i];
            // The decoded bytes of an escape at `i` and its length; `None`: `b` stands.
            let mut utf8 = [0u8; 4];
            let escape: Option<(&[u8], usize)> = match b {
                b'%' => match (
                    data.get(i + 1).map(|&x| hex(x)),
                    data.get(i + 2).map(|&y| hex(y)),
                ) {
                    (Some(Some(x)), Some(Some(y))) => {
                        utf8[0] = x << 4 | y;
                        Some((&utf8[..1], 3))
                    }
                    (Some(Some(_)), None) | (None, _) if !at_end => break,
                    _ => None,
                },
                b'\\' => match data.get(i + 1) {
                    None if !at_end => break,
                    None => None,
                    Some(b'u') => match unicode(&data[i + 2..]) {
                        Some(Some(cp)) => {
                            // A lone surrogate is no character: its bytes stand.
                            char::from_u32(cp)
                                .map(|c| (c.encode_utf8(&mut utf8).as_bytes() as &[u8], 6))
                        }
                        Some(None) => None,
                        None if !at_end => break,
                        None => None,
                    },
                    Some(&e) => simple_escape(e).map(|d| {
                        utf8[0] = d;
                        (&utf8[..1], 2)
                    }),
                },
                _ => None,
            };
            match escape {
                Some((decoded, len)) => {
                    for &u in decoded {
                        bytes.push(u);
                        starts.push(i as u32);
                    }
                    i += len;
                }
                None => {
                    bytes.push(b);
                    starts.push(i as u32);
                    i += 1;
                }
            }
        }
        starts.push(i as u32);
        Decoded { bytes, starts }
    }
}

/// Redaction of a stream whose chunks may split a secret (in any form) anywhere: the end of a
/// chunk that could still become a secret waits for the next chunk. At most a few times the
/// longest secret is held (its encoded form), whatever the stream. (Event streams end their
/// frames with a blank line, which starts no secret, so in practice nothing waits.)
pub(crate) struct StreamRedactor {
    secrets: Arc<Secrets>,
    held: Vec<u8>,
    /// Whether anything was redacted so far.
    redacted: bool,
}

impl StreamRedactor {
    pub(crate) fn new(secrets: Arc<Secrets>) -> Self {
        StreamRedactor {
            secrets,
            held: Vec::new(),
            redacted: false,
        }
    }

    /// The bytes of `chunk` (after those held back from before) that can go on, redacted.
    pub(crate) fn feed(&mut self, chunk: Bytes) -> Bytes {
        let data: Bytes = if self.held.is_empty() {
            chunk
        } else {
            let mut v = std::mem::take(&mut self.held);
            v.extend_from_slice(&chunk);
            Bytes::from(v)
        };
        let scan = self.secrets.scan(&data, false);
        self.held.extend_from_slice(&data[scan.hold..]);
        if scan.spans.is_empty() {
            return data.slice(..scan.hold);
        }
        self.redacted = true;
        Bytes::from(masked(&data, &scan.spans, scan.hold))
    }

    /// The bytes held back when the stream ends (no secret follows them), redacted.
    pub(crate) fn finish(&mut self) -> Bytes {
        let held = Bytes::from(std::mem::take(&mut self.held));
        let scan = self.secrets.scan(&held, true);
        if scan.spans.is_empty() {
            return held;
        }
        self.redacted = true;
        Bytes::from(masked(&held, &scan.spans, held.len()))
    }

    /// Bytes waiting for the next chunk.
    #[cfg(test)]
    pub(crate) fn held(&self) -> usize {
        self.held.len()
    }
}

/// Watches a stream that cannot be redacted (compressed) through its decoded copy, fed in
/// pieces that may split a secret (in any form) anywhere.
pub(crate) struct LeakCheck(StreamRedactor);

impl LeakCheck {
    pub(crate) fn new(secrets: Arc<Secrets>) -> Self {
        LeakCheck(StreamRedactor::new(secrets))
    }

    /// Whether the stream, with `plain` added, has carried a secret.
    pub(crate) fn seen(&mut self, plain: &[u8]) -> bool {
        self.0.feed(Bytes::copy_from_slice(plain));
        self.0.redacted
    }
}

/// The one point where every answer derived from an upstream's (passthrough or translated,
/// streamed or whole, success or error, whatever its framing) is redacted on its way to the
/// client: the headers passed back, and the body. A body of known length (buffered) is
/// redacted whole and keeps a known length; any other is redacted as it streams. A
/// compressed body cannot be searched: the paths that pass one on watch its decoded copy
/// ([`LeakCheck`]) or decode it.
pub(crate) fn answer(
    mut resp: http::Response<GatewayBody>,
    secrets: Option<&Arc<Secrets>>,
) -> http::Response<GatewayBody> {
    let Some(secrets) = secrets else {
        return resp;
    };
    for v in resp.headers_mut().values_mut() {
        if secrets.found_in(v.as_bytes()) {
            let clean = secrets.redact(Bytes::copy_from_slice(v.as_bytes()));
            if let Ok(clean) = http::HeaderValue::from_maybe_shared(clean) {
                *v = clean;
            }
        }
    }
    // A gzipped body is watched or decoded by the path that passes it (see above); any
    // other encoding, `identity` included, is searched as it is.
    let gzip = resp
        .headers()
        .get(http::header::CONTENT_ENCODING)
        .is_some_and(|v| {
            let v = v.as_bytes().trim_ascii();
            v.eq_ignore_ascii_case(b"gzip") || v.eq_ignore_ascii_case(b"x-gzip")
        });
    if gzip {
        return resp;
    }
    let body = std::mem::replace(resp.body_mut(), crate::body::full(Bytes::new()));
    *resp.body_mut() = Redacted::new(body, secrets.clone()).boxed();
    resp
}

/// A body on its way to the client, redacted.
struct Redacted {
    inner: GatewayBody,
    /// Redacted bytes to hand out first: a body known whole (its length stays known), or
    /// what was read of one that turned out not to be.
    ready: Option<Bytes>,
    /// A frame read with those that is not data (trailers, an error), handed out next.
    parked: Option<Result<Frame<Bytes>, BodyError>>,
    /// The body was read whole at once: `ready` is all of it.
    whole: bool,
    stream: StreamRedactor,
    /// The inner body ended: what the redactor held is out.
    done: bool,
}

impl Redacted {
    fn new(mut inner: GatewayBody, secrets: Arc<Secrets>) -> Redacted {
        let mut stream = StreamRedactor::new(secrets.clone());
        let (mut ready, mut parked, mut whole) = (None, None, false);
        if inner.size_hint().exact().is_some() {
            // Bodies of known length here are in memory (buffered, or the gateway's own):
            // polling hands them over at once. One that is not ready is streamed instead.
            let mut cx = Context::from_waker(std::task::Waker::noop());
            let mut read: Vec<Bytes> = Vec::new();
            loop {
                match Pin::new(&mut inner).poll_frame(&mut cx) {
                    Poll::Ready(Some(Ok(f))) => match f.into_data() {
                        Ok(d) => read.push(d),
                        Err(f) => {
                            parked = Some(Ok(f));
                            break;
                        }
                    },
                    Poll::Ready(Some(Err(e))) => {
                        parked = Some(Err(e));
                        break;
                    }
                    Poll::Ready(None) => {
                        whole = true;
                        break;
                    }
                    Poll::Pending => break,
                }
            }
            let data = match read.len() {
                1 => read.pop().unwrap_or_default(),
                _ => Bytes::from(read.concat()),
            };
            ready = Some(if whole {
                secrets.redact(data)
            } else {
                stream.feed(data)
            });
        }
        Redacted {
            inner,
            ready,
            parked,
            whole,
            stream,
            done: whole,
        }
    }
}

impl Body for Redacted {
    type Data = Bytes;
    type Error = BodyError;

    fn poll_frame(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Polled {
        let this = &mut *self;
        if let Some(ready) = this.ready.take().filter(|r| !r.is_empty()) {
            return Poll::Ready(Some(Ok(Frame::data(ready))));
        }
        if let Some(frame) = this.parked.take() {
            return Poll::Ready(Some(frame));
        }
        loop {
            if this.done {
                return Poll::Ready(None);
            }
            match Pin::new(&mut this.inner).poll_frame(cx) {
                Poll::Ready(Some(Ok(frame))) => match frame.into_data() {
                    Ok(d) => {
                        let out = this.stream.feed(d);
                        if !out.is_empty() {
                            return Poll::Ready(Some(Ok(Frame::data(out))));
                        }
                    }
                    Err(frame) => return Poll::Ready(Some(Ok(frame))),
                },
                Poll::Ready(None) => {
                    this.done = true;
                    let tail = this.stream.finish();
                    if !tail.is_empty() {
                        return Poll::Ready(Some(Ok(Frame::data(tail))));
                    }
                }
                other => return other,
            }
        }
    }

    fn is_end_stream(&self) -> bool {
        self.done && self.ready.as_ref().is_none_or(Bytes::is_empty) && self.parked.is_none()
    }

    fn size_hint(&self) -> SizeHint {
        match &self.ready {
            Some(r) if self.whole && self.parked.is_none() => SizeHint::with_exact(r.len() as u64),
            None if self.done && self.parked.is_none() => SizeHint::with_exact(0),
            _ => SizeHint::default(),
        }
    }
}

/// The length of the longest end of `data` that is a proper start of `secret` (bytes that
/// must wait: the next ones may complete it).
pub(crate) fn prefix_at_end(data: &[u8], secret: &[u8]) -> usize {
    let longest = (secret.len() - 1).min(data.len());
    let tail = &data[data.len() - longest..];
    // Candidates start where the key's first byte is.
    memchr::memchr_iter(secret[0], tail)
        .find(|&i| secret.starts_with(&tail[i..]))
        .map_or(0, |i| longest - i)
}

/// The longest source form of one decoded byte: `\uXXXX`.
#[cfg(test)]
const MAX_UNIT: usize = 6;

/// The most bytes a stream redactor for `secrets` holds back between chunks.
#[cfg(test)]
fn max_held(secrets: &[&[u8]]) -> usize {
    secrets
        .iter()
        .map(|s| s.len() * MAX_UNIT)
        .max()
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    const KEY: &[u8] = b"sk-upstream-secret-0123";

    fn set(list: &[&[u8]]) -> Arc<Secrets> {
        Secrets::new(list.iter().copied()).unwrap()
    }

    fn stream(secrets: &Arc<Secrets>, input: &[u8], n: usize) -> Vec<u8> {
        let mut r = StreamRedactor::new(secrets.clone());
        let mut out = Vec::new();
        for piece in input.chunks(n) {
            out.extend_from_slice(&r.feed(Bytes::copy_from_slice(piece)));
            assert!(r.held() <= max_held(&[KEY, b"a/b+c=d/e"]) + MAX_UNIT);
        }
        out.extend_from_slice(&r.finish());
        out
    }

    #[test]
    fn whole_bodies() {
        let s = set(&[KEY]);
        let b = Bytes::from_static(
            b"{\"error\":\"bad key sk-upstream-secret-0123, sk-upstream-secret-0123\"}",
        );
        assert_eq!(
            &s.redact(b)[..],
            b"{\"error\":\"bad key [redacted], [redacted]\"}"
        );
        let clean = Bytes::from_static(b"no key here");
        assert_eq!(s.redact(clean.clone()).as_ptr(), clean.as_ptr());
        assert!(Secrets::new([&b""[..]]).is_none());
    }

    #[test]
    fn every_form_of_every_secret() {
        let s = set(&[b"a/b+c=d/e", KEY]);
        for (input, want) in [
            (&b"x a\\/b+c=d\\/e y"[..], &b"x [redacted] y"[..]),
            (b"x a%2Fb%2bc%3Dd%2fe y", b"x [redacted] y"),
            (b"x \\u0061\\u002F\\u0062+c=d/e y", b"x [redacted] y"),
            (b"x a\\/b%2Bc\\u003dd/e y", b"x [redacted] y"),
            (b"sk-upstream\\u002dsecret-0123", b"[redacted]"),
            (b"a/b+c=d/esk-upstream-secret-0123", b"[redacted][redacted]"),
            // An escaped backslash before `u` escapes nothing.
            (b"\\\\u0061/b+c=d/e", b"\\\\u0061/b+c=d/e"),
            (b"a/b+c=d/", b"a/b+c=d/"),
            (b"a\\/b+c=d\\/", b"a\\/b+c=d\\/"),
            (b"%2 %zz \\q \\u12 \\", b"%2 %zz \\q \\u12 \\"),
        ] {
            assert_eq!(
                s.redact(Bytes::copy_from_slice(input)),
                Bytes::copy_from_slice(want),
                "{}",
                String::from_utf8_lossy(input)
            );
            for n in [1, 2, 3, 5, 7, 1000] {
                assert_eq!(stream(&s, input, n), want, "pieces of {n}");
            }
        }
    }

    /// A body longer than a window: secrets across the windows' edges, in every form.
    #[test]
    fn big_bodies_are_read_a_window_at_a_time() {
        let s = set(&[b"a/b+c=d/e", KEY]);
        let forms: [&[u8]; 3] = [
            b"a\\/b+c=d\\/e",
            b"a%2Fb%2Bc%3Dd%2Fe",
            b"sk-upstream-secret-0123",
        ];
        for shift in [0, 1, 5, 11, 17] {
            let mut body = vec![b'x'; 64 * 1024 - 9 + shift];
            let mut want = body.clone();
            for i in 0..200 {
                let form = forms[i % 3];
                body.extend_from_slice(form);
                want.extend_from_slice(MASK);
                let pad = b"\\n\\u00e9 ".repeat(97);
                body.extend_from_slice(&pad);
                want.extend_from_slice(&pad);
            }
            let out = s.redact(Bytes::from(body.clone()));
            assert!(out == want, "shift {shift}");
            assert_eq!(stream(&s, &body, 40_000), want, "shift {shift}");
        }
    }

    #[test]
    fn streams_split_anywhere() {
        let s = set(&[KEY]);
        let input = b"data: {\"error\":{\"message\":\"key sk-upstream-secret-0123 is bad\"}}\n\ndata: sk-upstream-secret-012\n\n";
        let want = b"data: {\"error\":{\"message\":\"key [redacted] is bad\"}}\n\ndata: sk-upstream-secret-012\n\n";
        for n in [1, 2, 5, 17, 23, 24, 1000] {
            assert_eq!(stream(&s, input, n), want, "pieces of {n}");
        }
    }

    #[test]
    fn leaks_are_seen_across_pieces() {
        let s = set(&[KEY]);
        let input = b"data: x\n\ndata: key sk-upstream\\u002dsecret-0123\n\n";
        for n in [1, 3, 22, 23, 1000] {
            let mut c = LeakCheck::new(s.clone());
            assert!(input.chunks(n).any(|p| c.seen(p)), "pieces of {n}");
            let mut c = LeakCheck::new(s.clone());
            let clean = b"data: sk-upstream-secret-012 sk-upstream-secret-01\n\n";
            assert!(!clean.chunks(n).any(|p| c.seen(p)), "pieces of {n}");
        }
    }

    /// The one point: headers and a whole body redacted, the body's length still known; a
    /// stream redacted as it flows; a gzipped body left to its path.
    #[tokio::test]
    async fn answers_are_redacted_at_one_point() {
        let s = set(&[b"a/b+c=d/e"]);
        let mut resp = http::Response::new(crate::body::full("x a\\/b+c=d\\/e y"));
        resp.headers_mut().insert(
            "x-request-id",
            http::HeaderValue::from_static("a%2Fb+c=d/e"),
        );
        let out = answer(resp, Some(&s));
        assert_eq!(out.headers()["x-request-id"], "[redacted]");
        assert_eq!(out.body().size_hint().exact(), Some(14));
        let body = out.into_body().collect().await.unwrap().to_bytes();
        assert_eq!(&body[..], b"x [redacted] y");

        let (tx, rx) = tokio::sync::mpsc::channel(4);
        let out = answer(http::Response::new(Chan(rx).boxed()), Some(&s));
        assert!(out.body().size_hint().exact().is_none());
        for piece in ["x a\\u002", "fb+c=d/", "e y"] {
            tx.send(Bytes::from(piece)).await.unwrap();
        }
        drop(tx);
        let body = out.into_body().collect().await.unwrap().to_bytes();
        assert_eq!(&body[..], b"x [redacted] y");

        let mut resp = http::Response::new(crate::body::full("a/b+c=d/e"));
        resp.headers_mut()
            .insert("content-encoding", http::HeaderValue::from_static("gzip"));
        let body = answer(resp, Some(&s)).into_body().collect().await.unwrap();
        assert_eq!(&body.to_bytes()[..], b"a/b+c=d/e");
    }

    /// A streamed body: what the channel sends, as it comes.
    struct Chan(tokio::sync::mpsc::Receiver<Bytes>);

    impl Body for Chan {
        type Data = Bytes;
        type Error = BodyError;

        fn poll_frame(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Polled {
            self.0.poll_recv(cx).map(|b| b.map(|b| Ok(Frame::data(b))))
        }
    }

    #[test]
    fn frames_ending_in_a_blank_line_pass_whole() {
        let mut r = StreamRedactor::new(set(&[KEY]));
        let b = Bytes::from_static(b"data: {\"x\":\"s\\n\\u00e9\"}\n\n");
        let out = r.feed(b.clone());
        assert_eq!(out.as_ptr(), b.as_ptr());
        assert_eq!(out.len(), b.len());
    }
}
