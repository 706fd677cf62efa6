//! The upstream key, taken out of whatever an upstream sends back: an upstream that echoes
//! the request's credentials in an error (a proxy's debug page, a misconfigured server)
//! must not hand them to the gateway's clients. Whole bodies and streams alike.

use bytes::Bytes;
use memchr::memmem;

const MASK: &[u8] = b"[redacted]";

/// `body` with every occurrence of `secret` replaced by `[redacted]`.
pub(crate) fn redact(body: Bytes, secret: &[u8]) -> Bytes {
    if secret.is_empty() || memmem::find(&body, secret).is_none() {
        return body;
    }
    Bytes::from(replaced(&body, secret))
}

fn replaced(data: &[u8], secret: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(data.len());
    let mut rest = data;
    while let Some(i) = memmem::find(rest, secret) {
        out.extend_from_slice(&rest[..i]);
        out.extend_from_slice(MASK);
        rest = &rest[i + secret.len()..];
    }
    out.extend_from_slice(rest);
    out
}

/// Redaction of a stream whose frames may split the key anywhere: the end of a frame that
/// could be the start of the key waits for the next frame. (Event streams end their frames
/// with a blank line, which starts no key, so in practice nothing waits.)
pub(crate) struct StreamRedactor {
    secret: std::sync::Arc<[u8]>,
    held: Vec<u8>,
}

impl StreamRedactor {
    pub(crate) fn new(secret: std::sync::Arc<[u8]>) -> Self {
        StreamRedactor {
            secret,
            held: Vec::new(),
        }
    }

    /// The bytes of `chunk` (after those held back from before) that can go on, redacted.
    pub(crate) fn feed(&mut self, chunk: Bytes) -> Bytes {
        let secret = &*self.secret;
        if secret.is_empty() {
            return chunk;
        }
        let data: Bytes = if self.held.is_empty() {
            chunk
        } else {
            let mut v = std::mem::take(&mut self.held);
            v.extend_from_slice(&chunk);
            Bytes::from(v)
        };
        let data = if memmem::find(&data, secret).is_some() {
            Bytes::from(replaced(&data, secret))
        } else {
            data
        };
        let keep = data.len() - prefix_at_end(&data, secret);
        self.held.extend_from_slice(&data[keep..]);
        data.slice(..keep)
    }

    /// The bytes held back when the stream ends: no key follows them.
    pub(crate) fn finish(&mut self) -> Bytes {
        Bytes::from(std::mem::take(&mut self.held))
    }
}

/// Watches a stream that cannot be redacted (compressed) through its decoded copy, fed in
/// pieces that may split the key anywhere.
pub(crate) struct LeakCheck {
    secret: std::sync::Arc<[u8]>,
    /// The last bytes seen, fewer than the key's length: a key may end in the next piece.
    tail: Vec<u8>,
}

impl LeakCheck {
    pub(crate) fn new(secret: std::sync::Arc<[u8]>) -> Self {
        LeakCheck {
            secret,
            tail: Vec::new(),
        }
    }

    /// Whether the stream, with `plain` added, has carried the key.
    pub(crate) fn seen(&mut self, plain: &[u8]) -> bool {
        let secret = &*self.secret;
        if secret.is_empty() {
            return false;
        }
        let keep = secret.len() - 1;
        if !self.tail.is_empty() {
            let joined = [&self.tail[..], &plain[..plain.len().min(keep)]].concat();
            if memmem::find(&joined, secret).is_some() {
                return true;
            }
        }
        if memmem::find(plain, secret).is_some() {
            return true;
        }
        self.tail
            .extend_from_slice(&plain[plain.len().saturating_sub(keep)..]);
        let excess = self.tail.len().saturating_sub(keep);
        self.tail.drain(..excess);
        false
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

#[cfg(test)]
mod tests {
    use super::*;

    const KEY: &[u8] = b"sk-upstream-secret-0123";

    #[test]
    fn whole_bodies() {
        let b = Bytes::from_static(
            b"{\"error\":\"bad key sk-upstream-secret-0123, sk-upstream-secret-0123\"}",
        );
        assert_eq!(
            &redact(b, KEY)[..],
            b"{\"error\":\"bad key [redacted], [redacted]\"}"
        );
        let clean = Bytes::from_static(b"no key here");
        assert_eq!(redact(clean.clone(), KEY).as_ptr(), clean.as_ptr());
    }

    #[test]
    fn streams_split_anywhere() {
        let stream = b"data: {\"error\":{\"message\":\"key sk-upstream-secret-0123 is bad\"}}\n\ndata: sk-upstream-secret-012\n\n";
        let want = b"data: {\"error\":{\"message\":\"key [redacted] is bad\"}}\n\ndata: sk-upstream-secret-012\n\n";
        for n in [1, 2, 5, 17, 23, 24, 1000] {
            let mut r = StreamRedactor::new(KEY.into());
            let mut out = Vec::new();
            for piece in stream.chunks(n) {
                out.extend_from_slice(&r.feed(Bytes::copy_from_slice(piece)));
            }
            out.extend_from_slice(&r.finish());
            assert_eq!(out, want, "pieces of {n}");
        }
    }

    #[test]
    fn leaks_are_seen_across_pieces() {
        let stream = b"data: x\n\ndata: key sk-upstream-secret-0123\n\n";
        for n in [1, 3, 22, 23, 1000] {
            let mut c = LeakCheck::new(KEY.into());
            assert!(stream.chunks(n).any(|p| c.seen(p)), "pieces of {n}");
            let mut c = LeakCheck::new(KEY.into());
            let clean = b"data: sk-upstream-secret-012 sk-upstream-secret-01\n\n";
            assert!(!clean.chunks(n).any(|p| c.seen(p)), "pieces of {n}");
        }
    }

    #[test]
    fn frames_ending_in_a_blank_line_pass_whole() {
        let mut r = StreamRedactor::new(KEY.into());
        let b = Bytes::from_static(b"data: {\"x\":\"s\"}\n\n");
        let out = r.feed(b.clone());
        assert_eq!(out.as_ptr(), b.as_ptr());
        assert_eq!(out.len(), b.len());
    }
}
