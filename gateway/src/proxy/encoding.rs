//! Upstreams that compress although asked for `identity`: the bytes pass through to the
//! client unchanged (with their `content-encoding`), and a decoded copy is read on the side
//! for usage. Only gzip is decoded; other encodings go uncounted. Decoding is bounded:
//! whole bodies at a size, streams a slice at a time.

use std::io::{Read, Write};

use http::{header, HeaderMap};

/// Whether `headers` say the body is gzip-encoded.
pub(crate) fn is_gzip(headers: &HeaderMap) -> bool {
    headers.get(header::CONTENT_ENCODING).is_some_and(|v| {
        let v = v.as_bytes().trim_ascii();
        v.eq_ignore_ascii_case(b"gzip") || v.eq_ignore_ascii_case(b"x-gzip")
    })
}

/// A whole gzip body decoded, at most `max` bytes (a gzip bomb is cut, not inflated).
pub(crate) fn gunzip(body: &[u8], max: usize) -> Option<Vec<u8>> {
    let mut out = Vec::new();
    flate2::read::GzDecoder::new(body)
        .take(max as u64)
        .read_to_end(&mut out)
        .ok()?;
    Some(out)
}

/// Incremental gzip decoding of a stream, for accounting only.
pub(crate) struct GzSide {
    decoder: Option<flate2::write::GzDecoder<Vec<u8>>>,
}

impl GzSide {
    pub(crate) fn new() -> GzSide {
        GzSide {
            decoder: Some(flate2::write::GzDecoder::new(Vec::new())),
        }
    }

    /// Feeds compressed bytes; calls `out` with what they decode to, piece by piece: the
    /// input goes in [`GZ_STEP`]-byte slices, so one call holds at most what a slice can
    /// inflate to (deflate tops out near 1,032:1, about 1 MiB) rather than a whole gzip
    /// bomb. After a decoding error, or past the first gzip member (as [`gunzip`] reads),
    /// the rest of the stream is not decoded (and so not counted); what came before is.
    pub(crate) fn feed(&mut self, chunk: &[u8], mut out: impl FnMut(&[u8])) {
        let Some(d) = &mut self.decoder else { return };
        for step in chunk.chunks(GZ_STEP) {
            // `flush`: the decoder otherwise keeps what it inflated until the next write.
            let written = d.write_all(step).and_then(|()| d.flush());
            // Out before an error too: bytes after the member (another member, anything)
            // fail the write that inflated its end, and the end is where usage is.
            let buf = d.get_mut();
            if !buf.is_empty() {
                out(buf);
                buf.clear();
            }
            if written.is_err() {
                self.decoder = None;
                return;
            }
        }
    }
}

/// Compressed bytes decoded at a time (see [`GzSide::feed`]).
const GZ_STEP: usize = 1024;

impl Default for GzSide {
    fn default() -> Self {
        GzSide::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn gz(data: &[u8]) -> Vec<u8> {
        let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        e.write_all(data).unwrap();
        e.finish().unwrap()
    }

    #[test]
    fn whole_and_incremental() {
        let z = gz(b"hello world, hello world");
        assert_eq!(gunzip(&z, 1 << 20).unwrap(), b"hello world, hello world");
        assert_eq!(gunzip(&z, 5).unwrap(), b"hello");
        let mut side = GzSide::new();
        let mut got = Vec::new();
        for c in z.chunks(3) {
            side.feed(c, |d| got.extend_from_slice(d));
        }
        assert_eq!(got, b"hello world, hello world");
    }
}
