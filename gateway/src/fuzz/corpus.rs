//! Real documents the targets start from, and their mutations. A generator reaches what its
//! author thought of; a real body has what clients and upstreams send (members in their
//! order, long texts with escapes, nested usage, the vendors' error envelopes), and one
//! mutation away from it is where a reader of that body goes wrong: a member dropped,
//! repeated (the same value or another), retyped or set to `null`, an escape spliced into a
//! string, a member the gateway reads added; the targets' byte edits then cut or damage it.
//!
//! - [`REQUESTS`]: the training shapes' bodies (`shapes/bodies`, read at run time: the Nix
//!   test source has them, clippy's has not) and the agents' captured bodies.
//! - [`ANSWERS`]: every `data:` of the pinned streams in `translate/stream/golden.txt` (chat
//!   chunks with and without usage, Anthropic and Responses events, Gemini chunks, error
//!   events), the non-stream answers of each upstream dialect, and the vendors' error bodies.
//! - [`STREAMS`]: golden.txt's streams whole, as a client reads them.

use std::borrow::Cow;
use std::sync::LazyLock;

use proptest::prelude::*;
use proptest::sample::Index;
use serde::de::{MapAccess, Visitor};
use serde_json::value::RawValue;

use super::{json_value, text, J};
use crate::dialect::Dialect;

/// An object's members as written, repeats included.
pub(super) struct Members<'a>(pub(super) Vec<(Cow<'a, str>, &'a RawValue)>);

impl<'de: 'a, 'a> serde::Deserialize<'de> for Members<'a> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V<'a>(std::marker::PhantomData<&'a ()>);
        impl<'de: 'a, 'a> Visitor<'de> for V<'a> {
            type Value = Members<'a>;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("an object")
            }
            fn visit_map<M: MapAccess<'de>>(self, mut m: M) -> Result<Members<'a>, M::Error> {
                let mut out = Vec::new();
                while let Some(k) = m.next_key::<Cow<'de, str>>()? {
                    out.push((k, m.next_value::<&'de RawValue>()?));
                }
                Ok(Members(out))
            }
        }
        d.deserialize_map(V(std::marker::PhantomData))
    }
}

/// A JSON text as written: members in order, numbers as their text.
pub(super) fn parse(text: &str) -> J {
    let raw: &RawValue = serde_json::from_str(text).expect("a corpus document is JSON");
    from_raw(raw)
}

fn from_raw(raw: &RawValue) -> J {
    let t = raw.get().trim();
    match t.as_bytes().first() {
        Some(b'{') => {
            let Members(m) = serde_json::from_str(t).unwrap_or_else(|e| panic!("{e}: {t}"));
            J::Obj(
                m.into_iter()
                    .map(|(k, v)| (k.into_owned(), from_raw(v)))
                    .collect(),
            )
        }
        Some(b'[') => {
            let a: Vec<&RawValue> = serde_json::from_str(t).unwrap_or_else(|e| panic!("{e}: {t}"));
            J::Arr(a.into_iter().map(from_raw).collect())
        }
        Some(b'"') => J::Str(serde_json::from_str(t).unwrap_or_else(|e| panic!("{e}: {t}"))),
        _ => J::Raw(t.to_owned()),
    }
}

/// A request body's dialect by the name its shape or capture has.
fn dialect_of(name: &str) -> Dialect {
    for (prefix, d) in [
        ("chat", Dialect::Chat),
        ("messages", Dialect::Messages),
        ("responses", Dialect::Responses),
        ("gemini", Dialect::Gemini),
        ("claude-code", Dialect::Messages),
        ("codex", Dialect::Responses),
        ("opencode", Dialect::Chat),
    ] {
        if name.starts_with(prefix) {
            return d;
        }
    }
    panic!("{name}: no dialect for this corpus file")
}

/// Client request bodies with their dialect.
pub(super) static REQUESTS: LazyLock<Vec<(Dialect, J)>> = LazyLock::new(|| {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../shapes/bodies");
    let mut docs: Vec<(String, String)> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{dir}: {e} (the request corpus is the shapes' bodies)"))
        .map(|e| {
            let path = e.expect("a directory entry").path();
            let name = path.file_name().expect("a file").to_string_lossy().into();
            let text = std::fs::read_to_string(&path).expect("a shape body is text");
            (name, text)
        })
        .collect();
    macro_rules! agents {
        ($($name:literal),*) => {
            $(docs.push((
                $name.into(),
                include_str!(concat!("../../tests/fixtures/agents/", $name)).into(),
            ));)*
        };
    }
    agents!(
        "claude-code-claude.json",
        "claude-code-qwen.json",
        "codex.json",
        "gemini-cli.json",
        "opencode.json",
        "opencode-title.json"
    );
    assert!(docs.len() > 20, "{dir}: only {} request bodies", docs.len());
    // In one order whatever the directory's.
    docs.sort();
    docs.iter()
        .map(|(name, text)| (dialect_of(name), parse(text)))
        .collect()
});

/// The vendors' error bodies as their APIs send them (Google's messages end in a newline).
const ERRORS: [(Dialect, &str); 7] = [
    (
        Dialect::Chat,
        r#"{"error":{"message":"Incorrect API key provided: sk-****. You can find your API key at https://platform.openai.com/account/api-keys.","type":"invalid_request_error","param":null,"code":"invalid_api_key"}}"#,
    ),
    (
        Dialect::Chat,
        r#"{"error":{"message":"The response was filtered due to the prompt triggering Azure OpenAI's content management policy.","type":null,"param":"prompt","code":"content_filter","status":400,"innererror":{"code":"ResponsibleAIPolicyViolation","content_filter_result":{"hate":{"filtered":true,"severity":"high"}}}}}"#,
    ),
    (
        Dialect::Messages,
        r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"},"request_id":"req_011CSHoEeqs5C35K2UUqR7Fy"}"#,
    ),
    (
        Dialect::Messages,
        r#"{"type":"error","error":{"type":"invalid_request_error","message":"messages.1.content.0.tool_result: unexpected `tool_use_id` found in `tool_result` blocks: toolu_01. Each `tool_result` block must have a corresponding `tool_use` block in the previous message."}}"#,
    ),
    (
        Dialect::Gemini,
        r#"{"error":{"code":400,"message":"* GenerateContentRequest.contents[1].parts: contents.parts must not be empty.\n","status":"INVALID_ARGUMENT"}}"#,
    ),
    (
        Dialect::Gemini,
        r#"{"error":{"code":429,"message":"Resource has been exhausted (e.g. check quota).","status":"RESOURCE_EXHAUSTED","details":[{"@type":"type.googleapis.com/google.rpc.RetryInfo","retryDelay":"21s"}]}}"#,
    ),
    (
        Dialect::Chat,
        r#"{"message":"The security token included in the request is invalid."}"#,
    ),
];

/// Non-stream answers of each upstream dialect, as the vendors' APIs write them.
const ANSWERED: [(Dialect, &str); 3] = [
    (
        Dialect::Chat,
        r#"{"id":"chatcmpl-B9MHDbslfkBeAs8l4bebGdFOJ6PeG","object":"chat.completion","created":1741570283,"model":"gpt-4o-2024-08-06","choices":[{"index":0,"message":{"role":"assistant","content":"The image shows a wooden boardwalk path.","refusal":null,"annotations":[]},"logprobs":null,"finish_reason":"stop"}],"usage":{"prompt_tokens":1117,"completion_tokens":46,"total_tokens":1163,"prompt_tokens_details":{"cached_tokens":0,"audio_tokens":0},"completion_tokens_details":{"reasoning_tokens":0,"audio_tokens":0,"accepted_prediction_tokens":0,"rejected_prediction_tokens":0}},"service_tier":"default","system_fingerprint":"fp_fc9f1d7035"}"#,
    ),
    (
        Dialect::Messages,
        r#"{"id":"msg_01XFDUDYJgAACzvnptvVoYEL","type":"message","role":"assistant","model":"claude-sonnet-4-20250514","content":[{"type":"text","text":"I'll check.\n"},{"type":"tool_use","id":"toolu_01A09q90qw90lq917835lq9","name":"get_weather","input":{"location":"San Francisco, CA","unit":"celsius"}}],"stop_reason":"tool_use","stop_sequence":null,"usage":{"input_tokens":2095,"cache_creation_input_tokens":0,"cache_read_input_tokens":0,"cache_creation":{"ephemeral_5m_input_tokens":0,"ephemeral_1h_input_tokens":0},"output_tokens":503,"service_tier":"standard"}}"#,
    ),
    (
        Dialect::Gemini,
        r#"{"candidates":[{"content":{"parts":[{"text":"Hello! How can I help?\n"}],"role":"model"},"finishReason":"STOP","avgLogprobs":-0.0361}],"usageMetadata":{"promptTokenCount":2,"candidatesTokenCount":9,"totalTokenCount":11,"promptTokensDetails":[{"modality":"TEXT","tokenCount":2}],"candidatesTokensDetails":[{"modality":"TEXT","tokenCount":9}]},"modelVersion":"gemini-2.0-flash","responseId":"zYXzZ4vqLp2m1MkP6s-NiA0"}"#,
    ),
];

/// golden.txt's streams: (client dialect, the stream's bytes).
fn golden() -> Vec<(Dialect, Vec<u8>)> {
    include_str!("../translate/stream/golden.txt")
        .lines()
        .map(|line| {
            // `encoder sequence "output"`: the names have no spaces.
            let (name, out) = line.split_at(line.find(" \"").expect("name and output"));
            let out: String = serde_json::from_str(out).expect("a JSON string");
            let dialect = dialect_of(name);
            (dialect, out.into_bytes())
        })
        .collect()
}

/// Answers with the dialect of the upstream that sends them: every JSON `data:` of the
/// golden streams (each once), the non-stream answers and the error bodies.
pub(super) static ANSWERS: LazyLock<Vec<(Dialect, J)>> = LazyLock::new(|| {
    let mut seen = std::collections::HashSet::new();
    let mut out = Vec::new();
    for (dialect, stream) in golden() {
        let text = String::from_utf8(stream).expect("golden.txt is text");
        for data in text.lines().filter_map(|l| l.strip_prefix("data: ")) {
            // `[DONE]` is no JSON.
            let json = serde_json::from_str::<&RawValue>(data).is_ok();
            if json && data.starts_with('{') && seen.insert(data.to_owned()) {
                out.push((dialect, parse(data)));
            }
        }
    }
    for (dialect, text) in ANSWERED.iter().chain(&ERRORS) {
        out.push((*dialect, parse(text)));
    }
    out
});

/// The non-stream answers and the error bodies (the golden streams' error events too) as
/// trees, with the dialect of the upstream that sends them.
pub(super) fn whole_answers() -> Vec<(Dialect, serde_json::Value)> {
    let mut out: Vec<(Dialect, serde_json::Value)> = ANSWERED
        .iter()
        .chain(&ERRORS)
        .map(|(d, t)| (*d, serde_json::from_str(t).expect("JSON")))
        .collect();
    for (d, j) in ANSWERS.iter() {
        let v = value(j).expect("a corpus document is JSON");
        if v.get("error").is_some() {
            out.push((*d, v));
        }
    }
    out
}

/// A tree as serde_json's `Value` (a repeated member: the last); `None` where a mutation
/// wrote a number serde_json refuses (`01`).
pub(super) fn value(j: &J) -> Option<serde_json::Value> {
    let compact = super::Style {
        ws: vec![""],
        escape_every: 0,
    };
    serde_json::from_slice(&super::render(j, &compact)).ok()
}

/// The golden streams whole.
pub(super) static STREAMS: LazyLock<Vec<Vec<u8>>> =
    LazyLock::new(|| golden().into_iter().map(|(_, s)| s).collect());

/// What a mutation does at the member or element it reaches (or to the value it stops at).
#[derive(Debug, Clone)]
enum Op {
    Drop,
    /// Repeated next to itself.
    Duplicate,
    /// Its key again with this value, before it (`true`) or after it.
    Repeat(J, bool),
    /// The value replaced.
    Retype(J),
    Null,
    /// Text put into a string at a character.
    Splice(Index, &'static str),
    /// A member the gateway reads, added to the object here.
    Insert(String, J),
}

#[derive(Debug, Clone)]
struct Mutation {
    /// Each step picks a child by position; the last picks the member or element changed.
    path: Vec<Index>,
    op: Op,
}

/// Keys the gateway's readers look for.
const KEYS: [&str; 12] = [
    "model",
    "stream",
    "stream_options",
    "include_usage",
    "usage",
    "input_tokens",
    "prompt_tokens",
    "usageMetadata",
    "error",
    "message",
    "type",
    "text",
];

fn new_value() -> impl Strategy<Value = J> {
    prop_oneof![
        2 => Just(J::Raw("null".into())),
        1 => prop::sample::select(vec!["true", "false", "0", "1", "-1", "1e400", "01", "\"\"", "{}", "[]"])
            .prop_map(|s| J::Raw(s.into())),
        4 => json_value(2).prop_map(|v| J::from(&v)),
    ]
}

fn mutation() -> impl Strategy<Value = Mutation> {
    let op = prop_oneof![
        2 => Just(Op::Drop),
        2 => Just(Op::Duplicate),
        3 => (new_value(), any::<bool>()).prop_map(|(v, before)| Op::Repeat(v, before)),
        3 => new_value().prop_map(Op::Retype),
        3 => Just(Op::Null),
        3 => (
            any::<Index>(),
            prop::sample::select(vec![
                "\n", "\"", "\\", "/", "\u{0}", "\u{1f}", "\t", "\r\n", "é", "😀", "\u{2028}", "\u{ffff}",
            ])
        )
            .prop_map(|(i, s)| Op::Splice(i, s)),
        2 => (
            prop_oneof![3 => prop::sample::select(KEYS.to_vec()).prop_map(str::to_owned), 1 => text()],
            new_value()
        )
            .prop_map(|(k, v)| Op::Insert(k, v)),
    ];
    // The root's members most often: the head, the usage and the error are read there.
    let path = prop_oneof![
        3 => prop::collection::vec(any::<Index>(), 1..2),
        2 => prop::collection::vec(any::<Index>(), 2..4),
        1 => prop::collection::vec(any::<Index>(), 4..8),
    ];
    (path, op).prop_map(|(path, op)| Mutation { path, op })
}

/// `j` with `m` applied.
fn mutate(j: &mut J, m: &Mutation) {
    at(j, &m.path, &m.op);
}

fn at(j: &mut J, path: &[Index], op: &Op) {
    let len = match j {
        J::Arr(a) => a.len(),
        J::Obj(o) => o.len(),
        _ => 0,
    };
    let Some((step, rest)) = path.split_first().filter(|_| len > 0) else {
        return on_value(j, op);
    };
    let i = step.index(len);
    let deeper = !rest.is_empty();
    match j {
        J::Arr(a) if deeper && matches!(a[i], J::Arr(_) | J::Obj(_)) => at(&mut a[i], rest, op),
        J::Obj(o) if deeper && matches!(o[i].1, J::Arr(_) | J::Obj(_)) => at(&mut o[i].1, rest, op),
        J::Arr(a) => match op {
            Op::Drop => drop(a.remove(i)),
            Op::Duplicate => a.insert(i + 1, a[i].clone()),
            Op::Repeat(v, before) => a.insert(i + usize::from(!before), v.clone()),
            _ => on_value(&mut a[i], op),
        },
        J::Obj(o) => match op {
            Op::Drop => drop(o.remove(i)),
            Op::Duplicate => o.insert(i + 1, o[i].clone()),
            Op::Repeat(v, before) => {
                o.insert(i + usize::from(!before), (o[i].0.clone(), v.clone()))
            }
            Op::Insert(k, v) => o.insert(i, (k.clone(), v.clone())),
            _ => on_value(&mut o[i].1, op),
        },
        _ => unreachable!("a container"),
    }
}

fn on_value(j: &mut J, op: &Op) {
    match (op, &mut *j) {
        (Op::Retype(v), _) => *j = v.clone(),
        (Op::Null | Op::Drop, _) => *j = J::Raw("null".into()),
        (Op::Splice(i, s), J::Str(text)) => {
            let chars: Vec<usize> = text
                .char_indices()
                .map(|(b, _)| b)
                .chain([text.len()])
                .collect();
            text.insert_str(chars[i.index(chars.len())], s);
        }
        (Op::Insert(k, v), J::Obj(o)) => o.push((k.clone(), v.clone())),
        _ => {}
    }
}

/// The documents of `docs` whose dialect `keep` takes.
pub(super) fn docs(docs: &[(Dialect, J)], keep: impl Fn(Dialect) -> bool) -> Vec<J> {
    docs.iter()
        .filter(|(d, _)| keep(*d))
        .map(|(_, j)| j.clone())
        .collect()
}

/// One of `docs`, mutated up to three times. The smaller of two picks: the big documents
/// (the agents' 30 to 90 KB) cost a case ten times a small one's and are taken a quarter as
/// often, so a budget runs more cases.
pub(super) fn seeded(docs: Vec<J>) -> impl Strategy<Value = J> {
    assert!(!docs.is_empty(), "no document to start from");
    let mut docs = docs;
    docs.sort_by_cached_key(|j| {
        super::render(
            j,
            &super::Style {
                ws: vec![""],
                escape_every: 0,
            },
        )
        .len()
    });
    let picks = (any::<Index>(), any::<Index>());
    (picks, prop::collection::vec(mutation(), 0..4)).prop_map(move |((a, b), ms)| {
        let mut j = docs[a.index(docs.len()).min(b.index(docs.len()))].clone();
        for m in &ms {
            mutate(&mut j, m);
        }
        j
    })
}

#[test]
fn the_corpus_reads_back_as_written() {
    // Members in order, repeats kept, numbers as written.
    let compact = super::Style {
        ws: vec![""],
        escape_every: 0,
    };
    let sample = r#"{"b":1.50,"a":[null,"x\n",-0],"b":{}}"#;
    assert_eq!(super::render(&parse(sample), &compact), sample.as_bytes());
    for (_, j) in REQUESTS.iter().chain(ANSWERS.iter()) {
        assert!(value(j).is_some());
    }
    assert!(REQUESTS.len() > 20 && ANSWERS.len() > 50 && STREAMS.len() > 40);
}
