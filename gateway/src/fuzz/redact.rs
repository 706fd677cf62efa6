//! The redactor (`crate::redact`) against a plain reference: random secrets (credential
//! alphabets: base64, base64url, hex, JWT dots), each embedded in random text in a random
//! mix of its forms (raw, `\/`, `\uXXXX` in either case, `%XX` in either case, character
//! by character), the stream cut at random points or at every byte. After redaction neither
//! the output nor its decoding (every escape and `%XX` decoded, the reference's own simple
//! loop) holds a secret; text that holds no secret in any form passes byte for byte, whole
//! and streamed.

use bytes::Bytes;
use proptest::prelude::*;
use proptest::sample::Index;

use super::{cuts, fuzz, pieces};
use crate::redact::{Secrets, StreamRedactor};

/// Every escape and `%XX` of `text` decoded, left to right (a cut-off one stands as it is).
fn decoded(text: &[u8]) -> Vec<u8> {
    let hex = |b: Option<&u8>| b.and_then(|&b| (b as char).to_digit(16));
    let mut out = Vec::new();
    let mut i = 0;
    while i < text.len() {
        let b = text[i];
        if b == b'%' {
            if let (Some(x), Some(y)) = (hex(text.get(i + 1)), hex(text.get(i + 2))) {
                out.push((x * 16 + y) as u8);
                i += 3;
                continue;
            }
        }
        if b == b'\\' {
            let simple = match text.get(i + 1) {
                Some(b'/') => Some(b'/'),
                Some(b'\\') => Some(b'\\'),
                Some(b'"') => Some(b'"'),
                Some(b'n') => Some(b'\n'),
                Some(b't') => Some(b'\t'),
                Some(b'r') => Some(b'\r'),
                Some(b'b') => Some(8),
                Some(b'f') => Some(12),
                _ => None,
            };
            if let Some(d) = simple {
                out.push(d);
                i += 2;
                continue;
            }
            if text.get(i + 1) == Some(&b'u') {
                let digits: Option<Vec<u32>> = (2..6).map(|k| hex(text.get(i + k))).collect();
                if let Some(c) = digits
                    .map(|d| d.iter().fold(0, |a, &x| a * 16 + x))
                    .and_then(char::from_u32)
                {
                    out.extend_from_slice(c.to_string().as_bytes());
                    i += 6;
                    continue;
                }
            }
        }
        out.push(b);
        i += 1;
    }
    out
}

fn holds(text: &[u8], secret: &[u8]) -> bool {
    let has = |t: &[u8]| t.windows(secret.len()).any(|w| w == secret);
    has(text) || has(&decoded(text))
}

/// How one character of a secret is written.
#[derive(Debug, Clone, Copy)]
enum Form {
    Raw,
    /// `\/` for a slash (JSON's optional escape), raw for anything else.
    Solidus,
    Unicode {
        upper: bool,
    },
    Percent {
        upper: bool,
    },
}

fn form() -> impl Strategy<Value = Form> {
    prop_oneof![
        3 => Just(Form::Raw),
        3 => Just(Form::Solidus),
        1 => any::<bool>().prop_map(|upper| Form::Unicode { upper }),
        2 => any::<bool>().prop_map(|upper| Form::Percent { upper }),
    ]
}

fn write(secret: &[u8], forms: &[Form], out: &mut Vec<u8>) {
    for (i, &c) in secret.iter().enumerate() {
        let s = match forms[i % forms.len()] {
            Form::Raw => (c as char).to_string(),
            Form::Solidus if c == b'/' => "\\/".to_owned(),
            Form::Solidus => (c as char).to_string(),
            Form::Unicode { upper: true } => format!("\\u{c:04X}"),
            Form::Unicode { upper: false } => format!("\\u{c:04x}"),
            Form::Percent { upper: true } => format!("%{c:02X}"),
            Form::Percent { upper: false } => format!("%{c:02x}"),
        };
        out.extend_from_slice(s.as_bytes());
    }
}

/// A credential: base64 (with slashes, the form that JSON escapes), base64url, hex, a JWT.
fn secret() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        "[A-Za-z0-9+/]{3,20}={0,2}",
        "[A-Za-z0-9/]{1,6}/[A-Za-z0-9/]{1,12}",
        "[A-Za-z0-9_-]{4,24}",
        "[0-9a-f]{8,24}",
        "[A-Za-z0-9_-]{2,8}\\.[A-Za-z0-9_-]{2,8}\\.[A-Za-z0-9_-]{2,8}",
    ]
    .prop_map(String::into_bytes)
}

/// Text around the secrets: what JSON and SSE carry, escapes and stray `%` and `\` among it.
fn filler() -> impl Strategy<Value = Vec<u8>> {
    let piece = prop_oneof![
        4 => "[a-z ]{0,6}".prop_map(String::into_bytes),
        1 => prop::sample::select(vec![
            &b"\\n"[..], b"\\\"", b"\\\\", b"\\u00e9", b"\\ud83d", b"%", b"%2", b"%zz", b"\\",
            b"\\u00", b"data: {\"error\":\"", b"\"}\n\n", b"/", b"+", b"=", b"\xe6\x97\xa5",
        ])
        .prop_map(<[u8]>::to_vec),
        // Any `\u00XX` (most are no secret's byte, and end in a letter or digit a secret has).
        1 => "[0-9a-fA-F]{2}".prop_map(|h| format!("\\u00{h}").into_bytes()),
    ];
    prop::collection::vec(piece, 0..6).prop_map(|v| v.concat())
}

#[derive(Debug)]
struct Case {
    secrets: Vec<Vec<u8>>,
    text: Vec<u8>,
    cuts: Vec<Index>,
    every_byte: bool,
}

fn case() -> impl Strategy<Value = Case> {
    let embedded = (0..3usize, prop::collection::vec(form(), 1..4), filler());
    // Near misses: part of a secret, in some form, anywhere (the bytes a stream holds back,
    // then lets go); its first character, when a hex digit, may end a `\u008X` escape
    // instead (the raw text then holds the part, the decoded text does not).
    let starts = (
        any::<Index>(),
        0..3usize,
        (any::<Index>(), any::<Index>()),
        prop::collection::vec(form(), 1..4),
        any::<bool>(),
    );
    (
        prop::collection::vec(secret(), 1..4),
        filler(),
        // Half the cases hold no secret (so their output must be their input).
        prop_oneof![Just(Vec::new()), prop::collection::vec(embedded, 1..4)],
        prop::collection::vec(starts, 0..4),
        prop::collection::vec(any::<Index>(), 0..12),
        prop::bool::weighted(0.3),
    )
        .prop_map(|(secrets, head, embedded, starts, cuts, every_byte)| {
            let mut text = head;
            for (which, forms, after) in embedded {
                write(&secrets[which % secrets.len()], &forms, &mut text);
                text.extend_from_slice(&after);
            }
            for (at, which, (a, b), forms, in_escape) in starts {
                let s = &secrets[which % secrets.len()];
                let (a, b) = (a.index(s.len()), b.index(s.len() + 1));
                let (a, b) = (a.min(b), a.max(b));
                let mut part = Vec::new();
                let mut from = a;
                if in_escape && s.get(a).is_some_and(u8::is_ascii_hexdigit) {
                    part.extend_from_slice(b"\\u008");
                    part.push(s[a]);
                    from += 1;
                }
                write(&s[from..b.max(from)], &forms, &mut part);
                let at = at.index(text.len() + 1);
                text.splice(at..at, part);
            }
            Case {
                secrets,
                text,
                cuts,
                every_byte,
            }
        })
}

fn check(case: Case) -> Result<(), TestCaseError> {
    let set = Secrets::new(case.secrets.iter().map(Vec::as_slice)).unwrap();
    let text = &case.text;
    let shown = String::from_utf8_lossy(text);
    let cut = if case.every_byte {
        (1..text.len()).collect()
    } else {
        cuts(&case.cuts, text.len())
    };
    let mut r = StreamRedactor::new(set.clone());
    let mut streamed = Vec::new();
    for piece in pieces(text, &cut) {
        streamed.extend_from_slice(&r.feed(Bytes::copy_from_slice(piece)));
        let longest = case.secrets.iter().map(Vec::len).max().unwrap_or(0);
        prop_assert!(
            r.held() <= longest * 6 + 6,
            "held {} of {shown:?}",
            r.held()
        );
    }
    streamed.extend_from_slice(&r.finish());
    let whole = set.redact(Bytes::copy_from_slice(text));
    let clean = !case.secrets.iter().any(|s| holds(text, s));
    for out in [&streamed[..], &whole[..]] {
        for s in &case.secrets {
            prop_assert!(
                !holds(out, s),
                "{:?} in {:?} (from {shown:?})",
                String::from_utf8_lossy(s),
                String::from_utf8_lossy(out)
            );
        }
        if clean {
            prop_assert_eq!(out, &text[..], "no secret in {:?}", shown);
        }
    }
    Ok(())
}

#[test]
fn fuzz_redactor() {
    fuzz("redactor", case(), check);
}
