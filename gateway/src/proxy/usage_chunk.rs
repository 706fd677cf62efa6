//! The usage-only chunk of a chat stream, taken out again: the gateway asks every
//! passthrough chat stream for usage (`stream_options.include_usage`, so the limiter and
//! metrics see its tokens), and a client that did not ask gets the stream it asked for.
//!
//! Asked for usage, a chat stream also says `"usage":null` in every other chunk; that member
//! goes too. The filter works on whole events and passes every other byte through as it
//! came; bytes of an event not yet terminated wait for the blank line that ends it.

use bytes::Bytes;
use memchr::memmem;
use serde::de::IgnoredAny;
use serde::Deserialize;

/// The most of one event the filter holds back while it may still be the usage chunk (a
/// real one is under 1 KiB). Past it, or once its `"choices":[` is seen not to be empty, the
/// event is known to be kept and its bytes flow as they come: a long or endless line is
/// never held whole.
pub(super) const MAX_HELD_EVENT: usize = 4096;

#[derive(Debug, Default)]
pub(super) struct UsageChunkFilter {
    /// The start of an event whose terminating blank line has not arrived and that may
    /// still be the usage chunk.
    pending: Vec<u8>,
    /// The event being read is known to be kept: its bytes go on as they arrive.
    passing: Option<Passing>,
    /// The current line has no byte yet.
    line_empty: bool,
    /// The last byte was a CR (a LF right after it ends nothing more).
    after_cr: bool,
}

/// A chat chunk, read only as far as telling the usage-only one.
#[derive(Deserialize)]
struct Chunk {
    choices: Option<Vec<IgnoredAny>>,
    usage: Option<IgnoredAny>,
}

impl UsageChunkFilter {
    pub(super) fn new() -> Self {
        UsageChunkFilter {
            line_empty: true,
            ..Self::default()
        }
    }

    /// The bytes of `chunk` to send on: complete events other than the usage-only chunk,
    /// and the part so far of an event known to be kept. While every event passes whole,
    /// that is a slice of `chunk` (no copy).
    pub(super) fn feed(&mut self, chunk: &Bytes) -> Bytes {
        // Set once the output stops being a prefix of `chunk`; until then it is ..kept.
        let mut out: Option<Vec<u8>> = None;
        let mut kept = 0;
        // Where the event being scanned starts in `chunk` (its start may be in `pending`).
        let mut start = 0;
        for (i, &b) in chunk.iter().enumerate() {
            match b {
                b'\n' if self.after_cr => {
                    self.after_cr = false;
                    continue;
                }
                b'\n' | b'\r' => self.after_cr = b == b'\r',
                _ => {
                    self.after_cr = false;
                    self.line_empty = false;
                    continue;
                }
            }
            if !self.line_empty {
                self.line_empty = true;
                continue;
            }
            // A blank line: the event ends here, with a CRLF's LF when it is next.
            let mut end = i + 1;
            if b == b'\r' && chunk.get(end) == Some(&b'\n') {
                end += 1;
            }
            if let Some(mut p) = self.passing.take() {
                // Only the first event of a chunk can have begun before it: `out` is empty.
                let o = out.get_or_insert_with(Vec::new);
                p.pass(&chunk[start..end], o);
                p.end(o);
            } else if !self.pending.is_empty() {
                self.pending.extend_from_slice(&chunk[start..end]);
                let o = out.get_or_insert_with(Vec::new);
                keep(&self.pending, o);
                self.pending.clear();
            } else {
                let event = &chunk[start..end];
                if out.is_none()
                    && !is_usage_only(event)
                    && memmem::find(event, NULL_USAGE).is_none()
                {
                    kept = end;
                } else {
                    keep(event, out.get_or_insert_with(|| chunk[..kept].to_vec()));
                }
            }
            start = end;
        }
        let rest = &chunk[start..];
        if !rest.is_empty() {
            if self.passing.is_none() {
                self.pending.extend_from_slice(rest);
                if is_kept(&self.pending) {
                    let mut p = Passing::default();
                    let o = out.get_or_insert_with(|| chunk[..kept].to_vec());
                    p.pass(&self.pending, o);
                    self.pending.clear();
                    self.passing = Some(p);
                }
            } else if let Some(p) = &mut self.passing {
                p.pass(rest, out.get_or_insert_with(Vec::new));
            }
        }
        match out {
            Some(v) => Bytes::from(v),
            None => chunk.slice(..kept),
        }
    }

    /// What is left at the end of the stream (an unterminated last event), sent as it is.
    pub(super) fn finish(&mut self) -> Bytes {
        let mut out = std::mem::take(&mut self.pending);
        if let Some(p) = self.passing.take() {
            p.end(&mut out);
        }
        Bytes::from(out)
    }

    /// Bytes held back now (for the bound's test).
    #[cfg(test)]
    fn held(&self) -> usize {
        self.pending.len() + self.passing.as_ref().map_or(0, |p| p.held.len())
    }
}

/// Whether the start of an unterminated event already shows it is not the usage chunk.
fn is_kept(start: &[u8]) -> bool {
    if start.len() > MAX_HELD_EVENT {
        return true;
    }
    const CHOICES: &[u8] = b"\"choices\":[";
    memmem::find(start, CHOICES)
        .and_then(|at| start.get(at + CHOICES.len()))
        .is_some_and(|&b| b != b']')
}

/// An event on its way before its end arrived: only its `"usage":null` member comes out,
/// so the few bytes that may begin that member wait for the next ones.
#[derive(Debug, Default)]
struct Passing {
    held: Vec<u8>,
    /// The member was taken out (once per event, as [`keep`] does).
    cut: bool,
}

impl Passing {
    fn pass(&mut self, bytes: &[u8], out: &mut Vec<u8>) {
        if self.cut {
            out.extend_from_slice(bytes);
            return;
        }
        let joined;
        let data = if self.held.is_empty() {
            bytes
        } else {
            joined = [&self.held[..], bytes].concat();
            &joined[..]
        };
        if let Some(at) = memmem::find(data, NULL_USAGE) {
            out.extend_from_slice(&data[..at]);
            out.extend_from_slice(&data[at + NULL_USAGE.len()..]);
            self.held.clear();
            self.cut = true;
            return;
        }
        let keep = data.len() - crate::redact::prefix_at_end(data, NULL_USAGE);
        out.extend_from_slice(&data[..keep]);
        self.held = data[keep..].to_vec();
    }

    fn end(self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.held);
    }
}

/// The member a chat stream asked for usage adds to every chunk before the last.
const NULL_USAGE: &[u8] = b",\"usage\":null";

/// Appends `event` to `out` as the client would have had it: not at all when it is the
/// usage chunk, without its `"usage":null` member otherwise. (Quotes inside JSON strings
/// are escaped, so the member's bytes cannot be a string's.)
fn keep(event: &[u8], out: &mut Vec<u8>) {
    if is_usage_only(event) {
        return;
    }
    match memmem::find(event, NULL_USAGE) {
        Some(at) => {
            out.extend_from_slice(&event[..at]);
            out.extend_from_slice(&event[at + NULL_USAGE.len()..]);
        }
        None => out.extend_from_slice(event),
    }
}

/// A chat chunk with no choices and a usage object: the one the gateway asked for.
fn is_usage_only(event: &[u8]) -> bool {
    const NEEDLE: &[u8] = b"\"choices\":[]";
    if memmem::find(event, NEEDLE).is_none() {
        return false;
    }
    let mut data = Vec::new();
    for line in event.split(|&b| b == b'\n' || b == b'\r') {
        if let Some(rest) = line.strip_prefix(b"data:") {
            if !data.is_empty() {
                data.push(b'\n');
            }
            data.extend_from_slice(rest.strip_prefix(b" ").unwrap_or(rest));
        }
    }
    matches!(
        serde_json::from_slice::<Chunk>(&data),
        Ok(Chunk { choices: Some(c), usage: Some(_) }) if c.is_empty()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    const USAGE: &str = "data: {\"id\":\"c\",\"choices\":[],\"usage\":{\"prompt_tokens\":7,\"completion_tokens\":2}}\n\n";
    const DELTA: &str = "data: {\"id\":\"c\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"hi\"}}],\"usage\":null}\n\n";
    /// `DELTA` as a stream that did not ask for usage has it.
    const PLAIN: &str =
        "data: {\"id\":\"c\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"hi\"}}]}\n\n";
    const DONE: &str = "data: [DONE]\n\n";

    /// `stream` fed in pieces of `n` bytes, and what came out.
    fn through(stream: &str, n: usize) -> String {
        let mut f = UsageChunkFilter::new();
        let mut out = Vec::new();
        for piece in stream.as_bytes().chunks(n) {
            out.extend_from_slice(&f.feed(&Bytes::copy_from_slice(piece)));
        }
        out.extend_from_slice(&f.finish());
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn drops_only_the_usage_chunk_wherever_the_stream_is_cut() {
        let stream = format!("{DELTA}: keep-alive\n\n{DELTA}{USAGE}{DONE}");
        let want = format!("{PLAIN}: keep-alive\n\n{PLAIN}{DONE}");
        for n in [1, 2, 3, 7, 50, 1000] {
            assert_eq!(through(&stream, n), want, "pieces of {n}");
        }
    }

    #[test]
    fn crlf_and_cr_line_ends() {
        for sep in ["\r\n", "\r"] {
            let stream = format!("{DELTA}{USAGE}{DONE}").replace('\n', sep);
            let want = format!("{PLAIN}{DONE}").replace('\n', sep);
            for n in [1, 5, 1000] {
                assert_eq!(through(&stream, n), want, "{sep:?} pieces of {n}");
            }
        }
    }

    #[test]
    fn keeps_chunks_that_have_choices_or_no_usage() {
        let with_choice =
            "data: {\"choices\":[{\"delta\":{}}],\"usage\":{\"prompt_tokens\":1}}\n\n";
        let no_usage = "data: {\"choices\":[]}\n\n";
        let text = "data: {\"choices\":[{\"delta\":{\"content\":\"\\\"choices\\\":[]\"}}]}\n\n";
        let stream = format!("{with_choice}{no_usage}{text}");
        assert_eq!(through(&stream, 4), stream);
    }

    #[test]
    fn whole_chunks_pass_without_a_copy() {
        let mut f = UsageChunkFilter::new();
        let b = Bytes::from(format!("{PLAIN}{PLAIN}"));
        let out = f.feed(&b);
        assert_eq!(out.as_ptr(), b.as_ptr());
        assert_eq!(out.len(), b.len());
    }

    /// An upstream that sends one endless line: what the client gets keeps up with what
    /// came, less a few bytes that may begin `,"usage":null`.
    #[test]
    fn a_line_that_never_ends_flows_as_it_comes() {
        let mut f = UsageChunkFilter::new();
        let mut sent = 0;
        let head = "data: {\"id\":\"c\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"";
        let mut out = f.feed(&Bytes::from(head)).len();
        sent += head.len();
        for _ in 0..1000 {
            let piece = Bytes::from(vec![b'x'; 1000]);
            out += f.feed(&piece).len();
            sent += piece.len();
            assert_eq!(out, sent, "nothing held in a line known to be kept");
        }
        // The end of the event, with the member to take out split across pieces.
        out += f.feed(&Bytes::from("\"}}],\"us")).len();
        out += f.feed(&Bytes::from("age\":null}\n\n")).len();
        sent += "\"}}],\"usage\":null}\n\n".len();
        assert_eq!(out, sent - NULL_USAGE.len());
        assert_eq!(f.held(), 0);
    }

    /// An event that never says what it is stops being held at the bound.
    #[test]
    fn an_undecided_event_is_held_no_longer_than_the_bound() {
        let mut f = UsageChunkFilter::new();
        let mut out = Vec::new();
        let mut sent = Vec::new();
        for _ in 0..100 {
            let piece = Bytes::from(vec![b'y'; 100]);
            out.extend_from_slice(&f.feed(&piece));
            sent.extend_from_slice(&piece);
            assert!(f.held() <= MAX_HELD_EVENT, "held {}", f.held());
        }
        assert_eq!(out.len(), sent.len());
        let tail = f.feed(&Bytes::from_static(b"\n\ndata: [DONE]\n\n"));
        out.extend_from_slice(&tail);
        out.extend_from_slice(&f.finish());
        sent.extend_from_slice(b"\n\ndata: [DONE]\n\n");
        assert_eq!(out, sent);
    }

    /// Cut anywhere, a stream of long events comes out as the whole-event filter says.
    #[test]
    fn long_events_cut_anywhere() {
        let long = format!(
            "data: {{\"id\":\"c\",\"choices\":[{{\"index\":0,\"delta\":{{\"content\":\"{}\"}}}}],\"usage\":null}}\n\n",
            "z".repeat(3 * MAX_HELD_EVENT)
        );
        let bare = format!("data: {}\n\n", "w".repeat(2 * MAX_HELD_EVENT));
        let stream = format!("{long}{USAGE}{bare}{DELTA}{long}{DONE}");
        let mut want = Vec::new();
        for event in [&long, USAGE, &bare, DELTA, &long, DONE] {
            keep(event.as_bytes(), &mut want);
        }
        for n in [1, 13, 4095, 4097, 10_000, 100_000] {
            assert_eq!(through(&stream, n).as_bytes(), &want[..], "pieces of {n}");
        }
    }

    #[test]
    fn an_unterminated_tail_comes_out_at_the_end() {
        let stream = format!("{PLAIN}data: {{\"choices\":[]");
        assert_eq!(through(&stream, 3), stream);
    }
}
