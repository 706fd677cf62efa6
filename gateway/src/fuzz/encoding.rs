//! `GzSide` (the side decoder of gzip streams) against flate2's whole decode
//! (`read::GzDecoder` over the complete body): random payloads at random levels, fed cut at
//! random points, must decode to the same bytes; corrupted bodies must not panic and may
//! only stop early (what came out is a prefix of what the whole decode reads before its
//! error); no single call hands out more than one slice can inflate to.

use std::io::{Read, Write};

use proptest::prelude::*;
use proptest::sample::Index;

use super::corpus::STREAMS;
use super::{apply, cuts, edit, fuzz, pieces, Edit};
use crate::proxy::encoding::GzSide;

fn gzip(payload: &[u8], level: u32) -> Vec<u8> {
    let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::new(level));
    e.write_all(payload).expect("in memory");
    e.finish().expect("in memory")
}

/// flate2's decode of the whole body (its first member), and whether it ended cleanly.
fn whole(body: &[u8]) -> (Vec<u8>, bool) {
    let mut out = Vec::new();
    let ok = flate2::read::GzDecoder::new(body)
        .read_to_end(&mut out)
        .is_ok();
    (out, ok)
}

fn payload() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        4 => prop::collection::vec(any::<u8>(), 0..4096),
        // Compressible: a few bytes repeated, as SSE text is.
        4 => (prop::collection::vec(any::<u8>(), 1..32), 1..2000usize)
            .prop_map(|(unit, n)| unit.repeat(n)),
        // A small gzip bomb: one slice inflates to hundreds of KiB.
        1 => (100_000..3_000_000usize).prop_map(|n| vec![0u8; n]),
        // What upstreams compress: the golden streams (the corpus).
        2 => any::<Index>().prop_map(|i| STREAMS[i.index(STREAMS.len())].clone()),
    ]
}

#[derive(Clone)]
struct Case {
    payload: Vec<u8>,
    level: u32,
    /// A second member after the first (gzip allows concatenation).
    second: Option<Vec<u8>>,
    cuts: Vec<Index>,
    edits: Vec<Edit>,
}

impl std::fmt::Debug for Case {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let short = |b: &[u8]| format!("{} bytes {:02x?}", b.len(), &b[..b.len().min(48)]);
        f.debug_struct("Case")
            .field("payload", &short(&self.payload))
            .field("level", &self.level)
            .field("second", &self.second.as_deref().map(short))
            .field("cuts", &self.cuts)
            .field("edits", &self.edits)
            .finish()
    }
}

fn case() -> impl Strategy<Value = Case> {
    (
        payload(),
        0..=9u32,
        prop::option::weighted(0.1, prop::collection::vec(any::<u8>(), 0..256)),
        prop::collection::vec(any::<Index>(), 0..12),
        prop_oneof![3 => Just(Vec::new()), 1 => prop::collection::vec(edit(), 1..4)],
    )
        .prop_map(|(payload, level, second, cuts, edits)| Case {
            payload,
            level,
            second,
            cuts,
            edits,
        })
}

/// What one `feed` slice (1 KiB of input) can inflate to: deflate's 1032:1 at most, and
/// what the decoder held from the slice before.
const MAX_OUT_PER_CALL: usize = 1032 * 1024 + 64 * 1024;

fn check(c: Case) -> Result<(), TestCaseError> {
    let mut body = gzip(&c.payload, c.level);
    if let Some(second) = &c.second {
        body.extend_from_slice(&gzip(second, c.level));
    }
    let body = apply(body, &c.edits);
    let cuts = cuts(&c.cuts, body.len());
    let mut side = GzSide::new();
    let mut got = Vec::new();
    let mut largest = 0;
    for piece in pieces(&body, &cuts) {
        side.feed(piece, |d| {
            largest = largest.max(d.len());
            got.extend_from_slice(d);
        });
    }
    prop_assert!(
        largest <= MAX_OUT_PER_CALL,
        "one call handed out {largest} bytes"
    );
    let (want, ok) = whole(&body);
    if c.edits.is_empty() {
        prop_assert!(ok);
        prop_assert_eq!(&want, &c.payload);
        // The first member whole; a second one is not decoded (`read::GzDecoder` reads one
        // member too, and the side copy is for usage, which one member holds).
        prop_assert!(
            got.starts_with(&want),
            "side copy of {} bytes is not the whole decode ({} bytes); cut at {:?} of {}",
            got.len(),
            want.len(),
            cuts,
            body.len()
        );
        prop_assert!(
            got.len() == want.len()
                || c.second
                    .as_ref()
                    .is_some_and(|s| got.len() == want.len() + s.len()),
            "side copy of {} bytes, whole decode {}",
            got.len(),
            want.len()
        );
    } else {
        // Damaged: both stop at the damage, or one reads on where the other gave up.
        let n = got.len().min(want.len());
        prop_assert_eq!(&got[..n], &want[..n], "side copy differs before any error");
    }
    Ok(())
}

#[test]
fn fuzz_gzip_side() {
    fuzz("gzip_side", case(), check);
}

// Regressions: minimal inputs the target found, kept as plain tests.

/// A member followed by more bytes (a second member, trailing bytes) in the same 1 KiB
/// slice: the decoder refuses the extra bytes, and what it had inflated from that slice,
/// the end of the body where usage is, was dropped with it (here: all of it).
#[test]
fn regression_bytes_after_the_member_lose_its_end() {
    let payload = br#"{"choices":[],"usage":{"prompt_tokens":9,"completion_tokens":2}}"#;
    for after in [gzip(b"data: more", 6), b"\n".to_vec()] {
        let mut body = gzip(payload, 6);
        body.extend_from_slice(&after);
        let mut side = GzSide::new();
        let mut got = Vec::new();
        side.feed(&body, |d| got.extend_from_slice(d));
        assert_eq!(got, whole(&body).0);
        assert_eq!(got, payload);
    }
    // The slice that ends the member is the one whose output was lost.
    let payload: Vec<u8> = (0..2291u32)
        .map(|i| (i.wrapping_mul(2_654_435_761) >> 7) as u8)
        .collect();
    let mut body = gzip(&payload, 7);
    body.extend_from_slice(&gzip(b"hello", 7));
    let mut side = GzSide::new();
    let mut got = Vec::new();
    side.feed(&body, |d| got.extend_from_slice(d));
    assert_eq!(got, payload);
}
