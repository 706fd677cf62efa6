//! JSON text: read within a node budget ([`budget`], [`read`]), scanned ([`scan`]) and
//! written ([`write_str`], [`raw_fragment`]). The accessors that name a field in their
//! errors are [`super::field`]'s.

pub(crate) mod budget;
mod read;
pub(crate) mod scan;
pub(crate) use read::{read, read_members, ReadError};

/// Writes `s` as a JSON string literal, escaped exactly as serde_json escapes it. serde_json
/// looks each byte up in a table: the text of a translated request's messages cost ~6
/// instructions a byte that way; [`scan::plain_len`] skips plain runs 32 bytes a step.
pub(crate) fn write_str(out: &mut impl Sink, s: &str) {
    out.reserve(s.len() + 2);
    out.put("\"");
    let b = s.as_bytes();
    let mut start = 0;
    loop {
        let i = start + scan::plain_len(&b[start..]);
        // Special bytes are ASCII: `i` is a character boundary.
        out.put(&s[start..i]);
        let Some(&c) = b.get(i) else {
            break;
        };
        match c {
            b'"' => out.put("\\\""),
            b'\\' => out.put("\\\\"),
            b'\n' => out.put("\\n"),
            b'\r' => out.put("\\r"),
            b'\t' => out.put("\\t"),
            0x08 => out.put("\\b"),
            0x0c => out.put("\\f"),
            _ => {
                const HEX: &str = "0123456789abcdef";
                let (hi, lo) = (usize::from(c >> 4), usize::from(c & 0xf));
                out.put("\\u00");
                out.put(&HEX[hi..=hi]);
                out.put(&HEX[lo..=lo]);
            }
        }
        start = i + 1;
    }
    out.put("\"");
}

/// Where [`write_str`] writes.
pub(crate) trait Sink {
    fn reserve(&mut self, n: usize);
    fn put(&mut self, s: &str);
}

impl Sink for String {
    fn reserve(&mut self, n: usize) {
        String::reserve(self, n);
    }
    fn put(&mut self, s: &str) {
        self.push_str(s);
    }
}

impl Sink for Vec<u8> {
    fn reserve(&mut self, n: usize) {
        Vec::reserve(self, n);
    }
    fn put(&mut self, s: &str) {
        self.extend_from_slice(s.as_bytes());
    }
}

/// serde_json's marker for a raw JSON fragment (what `RawValue` serializes as): the
/// fragment is written verbatim.
const RAW_TOKEN: &str = "$serde_json::private::RawValue";

/// Serializes `json`, a whole JSON value, as it is (as `RawValue` does).
pub(crate) fn raw_fragment<S: serde::Serializer>(json: &str, ser: S) -> Result<S::Ok, S::Error> {
    use serde::ser::SerializeStruct;
    let mut st = ser.serialize_struct(RAW_TOKEN, 1)?;
    st.serialize_field(RAW_TOKEN, json)?;
    st.end()
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn write_str_escapes_as_serde_json(s in "\\PC*|[\\x00-\\x7f]{0,80}") {
            let mut out = String::new();
            write_str(&mut out, &s);
            prop_assert_eq!(out, serde_json::to_string(&s).unwrap());
        }
    }
}
