//! An incremental Server-Sent Events parser for accounting.
//!
//! The gateway passes stream bytes through untouched; this parser only watches them. Events
//! may be split anywhere across reads, including inside a UTF-8 character, so it works on
//! bytes and only hands out complete events (terminated by a blank line). Lines end at LF or
//! CRLF. A lone CR, which the SSE spec also allows, ends no line here: no upstream the
//! gateway speaks to sends one, and such a stream's bytes still pass, only unread.

/// Longest event the parser buffers. A longer one is skipped (and counted, see
/// [`SseParser::oversized`]): a passthrough stream still carries it to the client, only its
/// usage goes unread; a translated one cannot translate it. So a hostile upstream cannot grow
/// the gateway's memory without bound: a stream's parser holds at most about twice this.
pub(crate) const MAX_EVENT_BYTES: usize = 4 * 1024 * 1024;

/// One complete event: its `event:` name (empty if none) and its `data:` lines joined by `\n`.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct SseEvent<'a> {
    pub(crate) event: &'a [u8],
    pub(crate) data: &'a [u8],
}

#[derive(Debug, Default)]
pub(crate) struct SseParser {
    /// An incomplete line carried over from the previous chunk.
    partial: Vec<u8>,
    event: Vec<u8>,
    data: Vec<u8>,
    has_data: bool,
    /// The current event grew past [`MAX_EVENT_BYTES`]; drop it at its terminator.
    skipping: bool,
    /// Events skipped for their size.
    oversized: u64,
    /// The line being read was too long and its start is gone: the rest of it is dropped.
    line_dropped: bool,
}

impl SseParser {
    pub(crate) fn new() -> SseParser {
        SseParser::default()
    }

    /// Feeds the next chunk of the stream; calls `on_event` for every event it completes.
    pub(crate) fn feed(&mut self, mut chunk: &[u8], mut on_event: impl FnMut(SseEvent<'_>)) {
        while let Some(nl) = memchr::memchr(b'\n', chunk) {
            let (line, rest) = chunk.split_at(nl);
            chunk = &rest[1..];
            if self.line_dropped {
                // The end of a line too long to keep goes with it: were it read as a line,
                // an empty end would pass for the blank line that ends an event.
                self.line_dropped = false;
                self.partial.clear();
                continue;
            }
            if self.partial.is_empty() {
                self.line(line, &mut on_event);
            } else {
                let mut joined = std::mem::take(&mut self.partial);
                joined.extend_from_slice(line);
                self.line(&joined, &mut on_event);
                joined.clear();
                self.partial = joined;
            }
        }
        if !chunk.is_empty() {
            if self.partial.len() + chunk.len() > MAX_EVENT_BYTES {
                self.skip();
                self.line_dropped = true;
                // Freed, not cleared: the memory of a rare huge event is not kept.
                self.partial = Vec::new();
            } else {
                self.partial.extend_from_slice(chunk);
            }
        }
    }

    /// Whether the bytes fed so far stop inside an event (a partial line, or data lines
    /// without their blank-line terminator): a stream that ends here was cut.
    pub(crate) fn is_mid_event(&self) -> bool {
        !self.partial.is_empty() || self.has_data || self.skipping
    }

    /// Bytes of an incomplete event held so far.
    pub(crate) fn held(&self) -> usize {
        self.partial.len() + self.data.len()
    }

    /// Events skipped so far because they were longer than [`MAX_EVENT_BYTES`] (the one
    /// being skipped included).
    pub(crate) fn oversized(&self) -> u64 {
        self.oversized
    }

    fn skip(&mut self) {
        if !self.skipping {
            self.skipping = true;
            self.oversized += 1;
        }
    }

    fn line(&mut self, line: &[u8], on_event: &mut impl FnMut(SseEvent<'_>)) {
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        if line.is_empty() {
            if self.has_data && !self.skipping {
                on_event(SseEvent {
                    event: &self.event,
                    data: &self.data,
                });
            }
            self.event.clear();
            self.data.clear();
            self.has_data = false;
            self.skipping = false;
            return;
        }
        if self.skipping {
            return;
        }
        let (field, value) = match line.iter().position(|&b| b == b':') {
            Some(0) => return, // a comment line
            Some(i) => {
                let v = &line[i + 1..];
                (&line[..i], v.strip_prefix(b" ").unwrap_or(v))
            }
            None => (line, &b""[..]),
        };
        match field {
            b"data" => {
                if self.has_data {
                    self.data.push(b'\n');
                }
                self.data.extend_from_slice(value);
                self.has_data = true;
                if self.data.len() > MAX_EVENT_BYTES {
                    self.skip();
                    self.data = Vec::new();
                }
            }
            b"event" => {
                self.event.clear();
                self.event.extend_from_slice(value);
            }
            _ => {} // id, retry and unknown fields do not matter for accounting
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn collect(chunks: &[&[u8]]) -> Vec<(String, String)> {
        let mut p = SseParser::new();
        let mut out = Vec::new();
        for c in chunks {
            p.feed(c, |e| {
                out.push((
                    String::from_utf8(e.event.to_vec()).unwrap(),
                    String::from_utf8(e.data.to_vec()).unwrap(),
                ))
            });
        }
        out
    }

    const STREAM: &[u8] = "event: message_start\ndata: {\"a\":1}\n\n: keepalive\n\ndata: {\"t\":\"日本é\"}\r\n\r\ndata: line1\ndata: line2\n\ndata: [DONE]\n\n".as_bytes();

    fn expected() -> Vec<(String, String)> {
        vec![
            ("message_start".into(), "{\"a\":1}".into()),
            (String::new(), "{\"t\":\"日本é\"}".into()),
            (String::new(), "line1\nline2".into()),
            (String::new(), "[DONE]".into()),
        ]
    }

    #[test]
    fn whole_stream_at_once() {
        assert_eq!(collect(&[STREAM]), expected());
    }

    #[test]
    fn one_byte_fragments_split_utf8_and_crlf() {
        let chunks: Vec<&[u8]> = STREAM.chunks(1).collect();
        assert_eq!(collect(&chunks), expected());
    }

    #[test]
    fn every_split_point() {
        for i in 0..STREAM.len() {
            let (a, b) = STREAM.split_at(i);
            assert_eq!(collect(&[a, b]), expected(), "split at {i}");
        }
    }

    #[test]
    fn incomplete_event_is_not_emitted() {
        assert!(collect(&[b"data: {\"x\":1}\n"]).is_empty());
    }

    #[test]
    fn mid_event_is_detected() {
        let mut p = SseParser::new();
        p.feed(b"data: a\n\n", |_| {});
        assert!(!p.is_mid_event());
        p.feed(b"data: {\"ch", |_| {});
        assert!(p.is_mid_event());
        let mut p = SseParser::new();
        p.feed(b"data: a\n", |_| {});
        assert!(p.is_mid_event());
    }

    #[test]
    fn oversized_event_is_skipped_and_parser_recovers() {
        let big = vec![b'x'; MAX_EVENT_BYTES + 10];
        let mut p = SseParser::new();
        let mut n = Vec::new();
        p.feed(b"data: ", |_| {});
        p.feed(&big, |_| {});
        p.feed(b"\n\ndata: ok\n\n", |e| n.push(e.data.to_vec()));
        assert_eq!(n, vec![b"ok".to_vec()]);
        assert_eq!(p.oversized(), 1);
    }

    /// Found by the fuzzer: a dropped long line whose `\n` starts the next chunk ended its
    /// event there, and the event's later `data:` lines came out as an event of their own.
    #[test]
    fn the_end_of_a_dropped_line_is_no_blank_line() {
        for nl in ["\n", "\r\n"] {
            let mut p = SseParser::new();
            let mut n = Vec::new();
            p.feed(b"data: ", |_| {});
            p.feed(&vec![b'x'; MAX_EVENT_BYTES + 1], |_| {});
            let rest = format!("{nl}data: tail{nl}{nl}data: ok{nl}{nl}");
            p.feed(rest.as_bytes(), |e| n.push(e.data.to_vec()));
            assert_eq!(n, vec![b"ok".to_vec()], "{nl:?}");
            assert_eq!(p.oversized(), 1);
        }
    }

    /// A line that never ends, 64 KiB at a time: counted once, memory bounded.
    #[test]
    fn an_endless_line_is_counted_once_and_bounded() {
        let mut p = SseParser::new();
        p.feed(b"data: ", |_| {});
        let piece = vec![b'x'; 64 * 1024];
        for _ in 0..(3 * MAX_EVENT_BYTES / piece.len()) {
            p.feed(&piece, |_| panic!("no event"));
            assert!(p.partial.capacity() + p.data.capacity() <= 2 * MAX_EVENT_BYTES);
        }
        assert_eq!(p.oversized(), 1);
        assert!(p.is_mid_event());
    }
}
