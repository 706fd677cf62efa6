//! The usage readers (`crate::usage`) against serde_json.
//!
//! - `from_body` (its tail read and hand scan, serde where they cannot decide) against a
//!   serde derive of the same fields over the whole body: equal on every generated body;
//!   on damaged ones, where serde refuses the whole body, the tail read may still answer,
//!   as documented ("the members before `usage` are not checked"), and then serde must read
//!   the same from `{` followed by the body from the last `"usage"` key on.
//! - `scan_usage` (the hand scan) against serde's `Option<UsageFields>` on the same bytes:
//!   where the scan answers, the same fields and the same length; and it answers on every
//!   compact usage object shaped as the dialects send them.
//! - `from_gemini_body` against a reading of the `Value` tree.

use proptest::prelude::*;
use serde::Deserialize;
use serde_json::Value;

use super::corpus::{docs, seeded, ANSWERS};
use super::{apply, edit, fuzz, json_value, render, style, text, Edit, Style, J};
use crate::usage::{from_body, from_gemini_body, scan_fields, tail_read, Usage};

/// The contract's fields, derived independently of `crate::usage`.
#[derive(Deserialize, Debug, PartialEq, Eq)]
struct RefFields {
    prompt_tokens: Option<u64>,
    completion_tokens: Option<u64>,
    input_tokens: Option<u64>,
    output_tokens: Option<u64>,
    cache_read_input_tokens: Option<u64>,
    cache_creation_input_tokens: Option<u64>,
}

impl RefFields {
    fn array(&self) -> [Option<u64>; 6] {
        [
            self.prompt_tokens,
            self.completion_tokens,
            self.input_tokens,
            self.output_tokens,
            self.cache_read_input_tokens,
            self.cache_creation_input_tokens,
        ]
    }

    /// Input is the whole prompt: Anthropic's cache counts join its `input_tokens`.
    fn usage(&self) -> Usage {
        let cached = self
            .cache_read_input_tokens
            .unwrap_or(0)
            .saturating_add(self.cache_creation_input_tokens.unwrap_or(0));
        Usage {
            input: self
                .prompt_tokens
                .or(self.input_tokens.map(|n| n.saturating_add(cached))),
            output: self.completion_tokens.or(self.output_tokens),
        }
    }
}

#[derive(Deserialize)]
struct RefBody {
    usage: Option<RefFields>,
}

/// What serde reads from the whole body.
fn reference(body: &[u8]) -> Option<Usage> {
    serde_json::from_slice::<RefBody>(body)
        .ok()?
        .usage
        .map(|u| u.usage())
}

/// Numbers as upstreams write them, and as serde refuses them for a u64.
fn number() -> impl Strategy<Value = J> {
    prop_oneof![
        6 => (0..100_000u64).prop_map(|n| J::Raw(n.to_string())),
        2 => any::<u64>().prop_map(|n| J::Raw(n.to_string())),
        1 => prop::sample::select(vec![
            "0", "18446744073709551615", "18446744073709551616", "99999999999999999999999",
            "01", "00", "-0", "-1", "1.5", "1e3", "1E0", "0.0", "null", "true", "\"5\"", "{}",
            "[]", "-", "1.", "nul",
        ])
        .prop_map(|s| J::Raw(s.to_owned())),
    ]
}

const FIELDS: [&str; 6] = [
    "prompt_tokens",
    "completion_tokens",
    "input_tokens",
    "output_tokens",
    "cache_read_input_tokens",
    "cache_creation_input_tokens",
];

/// A usage object's members: the counted fields, the dialects' others, anything.
fn usage_object() -> impl Strategy<Value = J> {
    let member = prop_oneof![
        6 => (prop::sample::select(FIELDS.to_vec()), number())
            .prop_map(|(k, v)| (k.to_owned(), v)),
        2 => (
            prop::sample::select(vec![
                "total_tokens",
                "prompt_tokens_details",
                "completion_tokens_details",
                "input_tokens_details",
                "output_tokens_details",
                "cache_creation",
                "service_tier",
                "server_tool_use",
            ]),
            prop_oneof![number(), details(), json_value(3).prop_map(|v| J::from(&v))],
        )
            .prop_map(|(k, v)| (k.to_owned(), v)),
        1 => (text(), json_value(2).prop_map(|v| J::from(&v))),
    ];
    prop::collection::vec(member, 0..8).prop_map(J::Obj)
}

/// A `*_details` object: counts, or deeper than the hand scan follows.
fn details() -> impl Strategy<Value = J> {
    let count = (
        prop::sample::select(vec!["cached_tokens", "audio_tokens", "reasoning_tokens"]),
        0..1000u64,
    )
        .prop_map(|(k, n)| (k.to_owned(), J::Raw(n.to_string())));
    prop::collection::vec(count, 0..4)
        .prop_map(J::Obj)
        .prop_recursive(5, 16, 2, |inner| {
            prop::collection::vec(("[a-z]{1,3}", inner), 0..2).prop_map(J::Obj)
        })
}

/// A usage object as the dialects send it: valid counts and details, no duplicate key.
fn dialect_usage() -> impl Strategy<Value = J> {
    let fields = prop::sample::subsequence(FIELDS.to_vec(), 0..=6);
    (
        fields,
        prop::collection::vec(0..u64::MAX, 6),
        details(),
        details(),
    )
        .prop_map(|(keys, ns, d1, d2)| {
            let mut m: Vec<(String, J)> = keys
                .into_iter()
                .zip(ns)
                .map(|(k, n)| (k.to_owned(), J::Raw(n.to_string())))
                .collect();
            m.push(("prompt_tokens_details".into(), d1));
            m.push(("output_tokens_details".into(), d2));
            J::Obj(m)
        })
}

/// A response body: members around `usage`, strings that name it, a nested `usage`
/// elsewhere, sometimes a second root `usage`, a long tail or a root array.
#[derive(Debug, Clone)]
struct Body {
    tree: J,
    style: Style,
    edits: Vec<Edit>,
}

fn member() -> impl Strategy<Value = (String, J)> {
    let key = prop_oneof![
        3 => prop::sample::select(vec![
            "id", "object", "choices", "content", "model", "output", "metadata", "service_tier",
            "system_fingerprint", "stop_reason", "n", "usageMetadata", "Usage",
        ])
        .prop_map(str::to_owned),
        1 => text(),
    ];
    let value = prop_oneof![
        4 => json_value(3).prop_map(|v| J::from(&v)),
        1 => usage_object().prop_map(|u| J::Obj(vec![("usage".into(), u)])),
        1 => usage_object().prop_map(|u| J::Arr(vec![J::Obj(vec![("usage".into(), u)])])),
        1 => (1000..6000usize).prop_map(|n| J::Str("x".repeat(n))),
    ];
    (key, value)
}

fn body() -> impl Strategy<Value = Body> {
    let usage = prop_oneof![
        8 => usage_object(),
        4 => dialect_usage(),
        1 => prop::sample::select(vec!["null", "5", "\"usage\"", "[]", "true"])
            .prop_map(|s| J::Raw(s.to_owned())),
    ];
    (
        prop::collection::vec(member(), 0..6),
        usage,
        any::<prop::sample::Index>(),
        prop::option::weighted(0.1, (usage_object(), any::<prop::sample::Index>())),
        prop::option::weighted(0.8, Just(())),
        prop::option::weighted(0.05, Just(())),
        style(),
        prop_oneof![3 => Just(Vec::new()), 1 => prop::collection::vec(edit(), 1..4)],
    )
        .prop_map(
            |(mut members, usage, at, second, has_usage, array, style, edits)| {
                if has_usage.is_some() {
                    let at = at.index(members.len() + 1);
                    members.insert(at, ("usage".into(), usage));
                }
                if let Some((u, at)) = second {
                    members.insert(at.index(members.len() + 1), ("usage".into(), u));
                }
                let root = J::Obj(members);
                // A root array is not a body with usage, to either reader.
                let tree = if array.is_some() {
                    J::Arr(vec![root])
                } else {
                    root
                };
                Body { tree, style, edits }
            },
        )
}

/// The real answers (the corpus), mutated, in any layout, sometimes damaged.
fn seeded_body() -> impl Strategy<Value = Body> {
    (
        seeded(docs(&ANSWERS, |_| true)),
        style(),
        prop_oneof![3 => Just(Vec::new()), 1 => prop::collection::vec(edit(), 1..4)],
    )
        .prop_map(|(tree, style, edits)| Body { tree, style, edits })
}

/// Every `usage` object of the real answers.
fn usages() -> Vec<J> {
    fn walk(j: &J, out: &mut Vec<J>) {
        match j {
            J::Obj(m) => {
                for (k, v) in m {
                    if k == "usage" && matches!(v, J::Obj(_)) {
                        out.push(v.clone());
                    }
                    walk(v, out);
                }
            }
            J::Arr(a) => a.iter().for_each(|v| walk(v, out)),
            _ => {}
        }
    }
    let mut out = Vec::new();
    for (_, j) in ANSWERS.iter() {
        walk(j, &mut out);
    }
    out
}

fn last_usage_key(body: &[u8]) -> Option<usize> {
    memchr::memmem::rfind(body, b"\"usage\"")
}

fn check_body(b: Body) -> Result<(), TestCaseError> {
    let bytes = apply(render(&b.tree, &b.style), &b.edits);
    // The proxy takes no usage as no figures (`unwrap_or_default`): None and
    // Some(Usage::default()) are the same answer.
    let got = from_body(&bytes).filter(|u| *u != Usage::default());
    let want = reference(&bytes).filter(|u| *u != Usage::default());
    let shown = || bytes.escape_ascii().to_string();
    let root_usages = match &b.tree {
        J::Obj(m) => m.iter().filter(|(k, _)| k == "usage").count(),
        _ => 0,
    };
    let object = bytes.trim_ascii_start().first() == Some(&b'{');
    let json = serde_json::from_slice::<serde::de::IgnoredAny>(&bytes).is_ok();
    if b.edits.is_empty() && object && json && root_usages < 2 {
        // A well-formed body (no key twice: serde refuses it, the tail read takes the last
        // one): exactly what serde reads.
        prop_assert_eq!(got, want, "body {}", shown());
    } else if got.is_none() {
        // serde's derive reads a struct from an array too, its fields in order
        // (`[{"prompt_tokens":1}]`); the tail read does not.
        prop_assert!(want.is_none() || !object, "serde {:?}: {}", want, shown());
    } else if got != want {
        // Serde refused the body; the tail read answered from the usage member on.
        prop_assert!(
            want.is_none(),
            "from_body {:?}, serde {:?}: {}",
            got,
            want,
            shown()
        );
        let at = last_usage_key(&bytes).expect("the tail read found a key");
        let mut from_key = b"{".to_vec();
        from_key.extend_from_slice(&bytes[at..]);
        prop_assert_eq!(
            reference(&from_key).filter(|u| *u != Usage::default()),
            got,
            "the tail read answered what the body from its key on does not say: {}",
            shown()
        );
    }
    // The tail read alone, where it decides, says what from_body says.
    if let Some(t) = tail_read(&bytes) {
        prop_assert_eq!(t.filter(|u| *u != Usage::default()), got);
    }
    Ok(())
}

#[test]
fn fuzz_usage_body() {
    fuzz(
        "usage_body",
        prop_oneof![2 => body(), 1 => seeded_body()],
        check_body,
    );
}

/// A usage value and what may follow it, compact or spaced, whole or cut.
#[derive(Debug, Clone)]
struct Value_ {
    tree: J,
    style: Style,
    after: &'static str,
    cut: Option<prop::sample::Index>,
    edits: Vec<Edit>,
}

fn serde_read(v: &[u8]) -> Option<([Option<u64>; 6], usize)> {
    let mut values = serde_json::Deserializer::from_slice(v).into_iter::<Option<RefFields>>();
    match values.next() {
        Some(Ok(Some(u))) => Some((u.array(), values.byte_offset())),
        // `null` is serde's None: the scan never answers it.
        _ => None,
    }
}

fn check_scan(v: Value_) -> Result<(), TestCaseError> {
    let mut bytes = render(&v.tree, &v.style);
    bytes.extend_from_slice(v.after.as_bytes());
    if let Some(cut) = v.cut {
        bytes.truncate(cut.index(bytes.len() + 1));
    }
    let bytes = apply(bytes, &v.edits);
    if let Some(scanned) = scan_fields(&bytes) {
        prop_assert_eq!(
            Some(scanned),
            serde_read(&bytes),
            "{:?}",
            String::from_utf8_lossy(&bytes)
        );
    }
    Ok(())
}

#[test]
fn fuzz_usage_scan() {
    let value = (
        prop_oneof![
            1 => usage_object(),
            1 => dialect_usage(),
            1 => seeded(usages()),
        ],
        prop_oneof![Just(None), style().prop_map(Some)],
        prop::sample::select(vec!["", ",", "}", " ,", "\n}", "]", "x"]),
        prop::option::weighted(0.2, any::<prop::sample::Index>()),
        prop_oneof![3 => Just(Vec::new()), 1 => prop::collection::vec(edit(), 1..3)],
    )
        .prop_map(|(tree, style, after, cut, edits)| Value_ {
            tree,
            style: style.unwrap_or(Style {
                ws: vec![""],
                escape_every: 0,
            }),
            after,
            cut,
            edits,
        });
    fuzz("usage_scan", value, check_scan);
}

/// The promise that keeps the scan worth having: every usage object the dialects send
/// (compact, valid counts, details one level deep) is read by hand.
#[test]
fn fuzz_usage_scan_reads_the_dialects_objects() {
    let compact = Style {
        ws: vec![""],
        escape_every: 0,
    };
    fuzz("usage_scan_dialects", dialect_usage(), move |tree| {
        let bytes = render(&tree, &compact);
        let depth = max_depth(&tree);
        let scanned = scan_fields(&bytes);
        if depth <= 5 {
            prop_assert!(
                scanned.is_some(),
                "not scanned: {:?}",
                String::from_utf8_lossy(&bytes)
            );
        }
        if scanned.is_some() {
            prop_assert_eq!(scanned, serde_read(&bytes));
        }
        Ok(())
    });
}

fn max_depth(j: &J) -> usize {
    match j {
        J::Arr(a) => 1 + a.iter().map(max_depth).max().unwrap_or(0),
        J::Obj(o) => 1 + o.iter().map(|(_, v)| max_depth(v)).max().unwrap_or(0),
        _ => 0,
    }
}

/// Gemini's `usageMetadata` read from the `Value` tree: the fields the gateway counts must
/// be counts or null, the chunks objects; the last chunk that reports counts.
fn gemini_reference(body: &[u8]) -> Option<Usage> {
    let v: Value = serde_json::from_slice(body).ok()?;
    let from_chunk = |c: &Value| -> Result<Option<Usage>, ()> {
        let o = c.as_object().ok_or(())?;
        let m = match o.get("usageMetadata") {
            None | Some(Value::Null) => return Ok(None),
            Some(Value::Object(m)) => m,
            Some(_) => return Err(()),
        };
        let get = |k: &str| -> Result<Option<u64>, ()> {
            match m.get(k) {
                None | Some(Value::Null) => Ok(None),
                Some(n) => n.as_u64().map(Some).ok_or(()),
            }
        };
        let prompt = get("promptTokenCount")?;
        let tool = get("toolUsePromptTokenCount")?;
        let candidates = get("candidatesTokenCount")?;
        let thoughts = get("thoughtsTokenCount")?;
        let output = match (candidates, thoughts) {
            (None, None) => None,
            (c, t) => Some(c.unwrap_or(0).saturating_add(t.unwrap_or(0))),
        };
        Ok(Some(Usage {
            input: prompt.map(|p| p.saturating_add(tool.unwrap_or(0))),
            output,
        }))
    };
    match &v {
        Value::Array(chunks) => {
            let read: Result<Vec<Option<Usage>>, ()> = chunks.iter().map(from_chunk).collect();
            read.ok()?.into_iter().rev().flatten().next()
        }
        one => from_chunk(one).ok().flatten(),
    }
}

fn gemini_chunk() -> impl Strategy<Value = J> {
    let count = prop_oneof![
        8 => any::<u64>().prop_map(|n| J::Raw(n.to_string())),
        1 => prop::sample::select(vec!["null", "-1", "1.5", "\"3\"", "18446744073709551616"])
            .prop_map(|s| J::Raw(s.to_owned())),
    ];
    let field = prop::sample::select(vec![
        "promptTokenCount",
        "toolUsePromptTokenCount",
        "candidatesTokenCount",
        "thoughtsTokenCount",
        "cachedContentTokenCount",
        "totalTokenCount",
    ]);
    let metadata = prop_oneof![
        6 => prop::sample::subsequence(
            vec![
                "promptTokenCount",
                "toolUsePromptTokenCount",
                "candidatesTokenCount",
                "thoughtsTokenCount",
                "cachedContentTokenCount",
                "totalTokenCount",
            ],
            0..=6,
        )
        .prop_flat_map(move |keys| {
            let n = keys.len();
            (Just(keys), prop::collection::vec(count.clone(), n))
        })
        .prop_map(|(keys, counts)| {
            J::Obj(keys.into_iter().map(str::to_owned).zip(counts).collect())
        }),
        1 => (field, json_value(1)).prop_map(|(k, v)| J::Obj(vec![(k.to_owned(), J::from(&v))])),
        1 => Just(J::Raw("null".into())),
    ];
    (
        prop::option::weighted(0.7, metadata),
        prop::collection::vec(member(), 0..3),
    )
        .prop_map(|(m, mut members)| {
            members.retain(|(k, _)| k != "usageMetadata");
            if let Some(m) = m {
                members.push(("usageMetadata".into(), m));
            }
            J::Obj(members)
        })
}

#[test]
fn fuzz_usage_gemini_body() {
    let body = (
        prop_oneof![
            gemini_chunk(),
            prop::collection::vec(gemini_chunk(), 0..5).prop_map(J::Arr),
        ],
        style(),
        prop_oneof![4 => Just(Vec::new()), 1 => prop::collection::vec(edit(), 1..3)],
    );
    fuzz("usage_gemini_body", body, |(tree, style, edits)| {
        let bytes = apply(render(&tree, &style), &edits);
        let got = from_gemini_body(&bytes);
        // Edits can repeat a key, which `Value` takes and a derive refuses: those bodies
        // only must not panic.
        if edits.is_empty() {
            prop_assert_eq!(
                got,
                gemini_reference(&bytes),
                "{:?}",
                String::from_utf8_lossy(&bytes)
            );
        }
        Ok(())
    });
}

// Regressions: minimal inputs the targets found, kept as plain tests.

/// A root key written with escapes is the key to serde; the tail read looked only for the
/// literal `"usage"` and answered "no usage" without the full parse.
#[test]
fn regression_escaped_usage_key() {
    for body in [
        r#"{"\u0075\u0073\u0061\u0067\u0065":{}}"#,
        r#"{"id":"x","usag\u0065":{"prompt_tokens":3,"completion_tokens":4}}"#,
    ] {
        assert_eq!(
            from_body(body.as_bytes()),
            reference(body.as_bytes()),
            "{body}"
        );
        assert!(from_body(body.as_bytes()).is_some(), "{body}");
    }
}

/// What follows the usage object was only checked for its brackets: a body broken after
/// it, which serde refuses, was read as having usage.
#[test]
fn regression_a_broken_tail_is_not_read() {
    for body in [
        &br#"{"usage":{"prompt_tokens":1},"id":tru}"#[..],
        br#"{"usage":{"prompt_tokens":1},:1}"#,
        br#"{"usage":{"prompt_tokens":1},"id":000}"#,
        b"{\"usage\":{\"prompt_tokens\":1}\x00\"id\":0}",
        b"{\"usage\":{\"prompt_tokens\":1},\"n\":\"a\x01\"}",
        b"{\"usage\":{\"prompt_tokens\":1},\"\x80usage\":{}}",
        br#"{"usage":{"prompt_tokens":1},"n":"\x"}"#,
        // The same key twice, the second one spelled in escapes.
        br#"{"usage":{"prompt_tokens":1},"\u0075sage":{"prompt_tokens":2}}"#,
    ] {
        assert_eq!(reference(body), None, "{}", body.escape_ascii());
        assert_eq!(from_body(body), None, "{}", body.escape_ascii());
    }
    // Escapes, surrogate pairs, numbers and nesting serde reads are still read from the tail.
    let body = r#"{"usage":{"prompt_tokens":1} ,"n":"\ud83d\ude00\"\\\/\b\f\n\r\t\u00e9","x":[-0.5e+3,0,1E2,{"a":[true,false,null]}],"é":{}}"#;
    let body = body.as_bytes();
    assert_eq!(from_body(body), reference(body));
    assert!(tail_read(body).is_some());
}
