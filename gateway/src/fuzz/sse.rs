//! `SseParser` against a line-by-line reference: the whole stream split on `\n`, one `\r`
//! stripped from each line's end, then the spec's field rules. The parser's contract, which
//! the reference follows: a line ends at `\n` (so at `\r\n` too), never at a lone `\r`.
//! Streams mix both line ends, comments, fields without a colon, `data` with and without
//! its space, multi-byte characters, and are fed cut at random points; the events and
//! `is_mid_event` after every piece must be the reference's.

use proptest::prelude::*;
use proptest::sample::Index;

use super::corpus::STREAMS;
use super::{apply, cuts, edit, fuzz, pieces};
use crate::sse::SseParser;

type Event = (Vec<u8>, Vec<u8>);

/// Events and whether the stream stops inside one, read the simple way.
fn reference(stream: &[u8]) -> (Vec<Event>, bool) {
    let mut events = Vec::new();
    let (mut event, mut data, mut has_data) = (Vec::new(), Vec::new(), false);
    let mut lines: Vec<&[u8]> = stream.split(|&b| b == b'\n').collect();
    // What follows the last `\n` is a line not yet ended.
    let partial = lines.pop().unwrap_or_default();
    for line in lines {
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        if line.is_empty() {
            if has_data {
                events.push((event.clone(), data.clone()));
            }
            event.clear();
            data.clear();
            has_data = false;
            continue;
        }
        if line[0] == b':' {
            continue;
        }
        let (field, value) = match line.iter().position(|&b| b == b':') {
            Some(i) => {
                let v = &line[i + 1..];
                (&line[..i], v.strip_prefix(b" ").unwrap_or(v))
            }
            None => (line, &[][..]),
        };
        match field {
            b"data" => {
                if has_data {
                    data.push(b'\n');
                }
                data.extend_from_slice(value);
                has_data = true;
            }
            b"event" => event = value.to_vec(),
            _ => {}
        }
    }
    (events, !partial.is_empty() || has_data)
}

/// One line's content (without its end).
fn line() -> impl Strategy<Value = Vec<u8>> {
    let value = "[a-z0-9 :{}\"\\\\\r日é😀]{0,12}";
    prop_oneof![
        6 => value.prop_map(|v| format!("data: {v}").into_bytes()),
        2 => value.prop_map(|v| format!("data:{v}").into_bytes()),
        1 => value.prop_map(|v| format!("data:  {v}").into_bytes()),
        1 => Just(b"data".to_vec()),
        1 => Just(b"data:".to_vec()),
        2 => "[a-z_.]{0,10}".prop_map(|v| format!("event: {v}").into_bytes()),
        1 => Just(b"event".to_vec()),
        1 => value.prop_map(|v| format!(":{v}").into_bytes()),
        1 => prop::sample::select(vec!["id: 1", "retry: 5", "unknown", "dat", "data x", "Data: x", " data: x", "\u{feff}data: x"])
            .prop_map(|s| s.as_bytes().to_vec()),
        3 => Just(Vec::new()),
        1 => prop::collection::vec(any::<u8>().prop_filter("no line end", |&b| b != b'\n'), 0..8),
    ]
}

fn stream() -> impl Strategy<Value = (Vec<u8>, Vec<Index>)> {
    let ended = (line(), prop::sample::select(vec![&b"\n"[..], b"\r\n"]));
    (
        prop::collection::vec(ended, 0..40),
        prop::option::weighted(0.3, line()),
        prop::collection::vec(any::<Index>(), 0..10),
    )
        .prop_map(|(lines, tail, cuts)| {
            let mut s = Vec::new();
            for (l, end) in lines {
                s.extend_from_slice(&l);
                s.extend_from_slice(end);
            }
            s.extend(tail.unwrap_or_default());
            (s, cuts)
        })
}

/// The golden streams of every client dialect, damaged by byte edits.
fn seeded() -> impl Strategy<Value = (Vec<u8>, Vec<Index>)> {
    (
        any::<Index>(),
        prop::collection::vec(edit(), 0..4),
        prop::collection::vec(any::<Index>(), 0..10),
    )
        .prop_map(|(i, edits, cuts)| (apply(STREAMS[i.index(STREAMS.len())].clone(), &edits), cuts))
}

fn check((stream, at): (Vec<u8>, Vec<Index>)) -> Result<(), TestCaseError> {
    let cuts = cuts(&at, stream.len());
    let mut p = SseParser::new();
    let mut got = Vec::new();
    let mut fed = 0;
    for piece in pieces(&stream, &cuts) {
        p.feed(piece, |e| got.push((e.event.to_vec(), e.data.to_vec())));
        fed += piece.len();
        let (want, mid) = reference(&stream[..fed]);
        prop_assert_eq!(
            &got,
            &want,
            "after {} bytes of {:?}",
            fed,
            String::from_utf8_lossy(&stream)
        );
        prop_assert_eq!(p.is_mid_event(), mid, "is_mid_event after {} bytes", fed);
    }
    Ok(())
}

#[test]
fn fuzz_sse_parser() {
    fuzz(
        "sse_parser",
        prop_oneof![3 => stream(), 1 => seeded()],
        check,
    );
}
