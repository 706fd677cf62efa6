//! The encoders' output, pinned: each dialect's encoder fed hub event sequences that reach
//! every event it writes (escapes, non-ASCII, errors, custom and namespaced tools), the
//! output compared with `golden.txt`, written by the encoders that built every event as a
//! `serde_json::Value`. The framing between events is compared byte for byte, each event's
//! JSON as a value (key order is free; its length must match too, which a duplicated key
//! would change). `GOLDEN_WRITE=1 cargo test -p gateway write_golden -- --ignored`
//! rewrites the file.

use super::{ChatEncoder, Encoder, GeminiEncoder, MessagesEncoder, ResponsesEncoder};
use crate::translate::hub::{ClientView, Event, StopReason, ToolKind, Usage};

fn start(id: &str, model: &str) -> Event {
    Event::Start {
        id: id.into(),
        model: model.into(),
    }
}

fn call(id: &str, name: &str) -> Event {
    Event::ToolCallStart {
        id: id.into(),
        name: name.into(),
    }
}

fn text(t: &str) -> Event {
    Event::Text(t.into())
}

fn args(a: &str) -> Event {
    Event::ToolArgs(a.into())
}

const USAGE: Usage = Usage {
    input: 20,
    cache_read: 5,
    cache_creation: 3,
    output: 7,
};

/// The hub event sequences every encoder is fed.
fn sequences() -> Vec<(&'static str, Vec<Event>)> {
    vec![
        (
            "text",
            vec![
                start("c1", "gpt-x"),
                text("Hi \"there\"\n\\ </tag>"),
                text("日本é\u{1}\u{7f}\u{2028}😀"),
                Event::Usage(USAGE),
                Event::Stop(StopReason::EndTurn),
                Event::End,
            ],
        ),
        (
            "tools",
            vec![
                start("c\"2", "m\u{e9}"),
                text("first"),
                call("call_1", "get"),
                args("{\"a\":"),
                args("\"x\\ny\"}"),
                call("call_2", "ns__f"),
                args("{}"),
                call("call_3", "run"),
                args("{\"input\":\"ls -la\"}"),
                text("after"),
                Event::Usage(USAGE),
                Event::Stop(StopReason::ToolUse),
                Event::End,
            ],
        ),
        (
            "no_start",
            vec![
                args("{\"stray\":1}"),
                text("x"),
                Event::Stop(StopReason::MaxTokens),
                Event::End,
            ],
        ),
        ("empty", vec![start("e", "m"), Event::End]),
        (
            "error",
            vec![
                start("c3", "gpt"),
                text("partial"),
                Event::Error {
                    kind: "overloaded_error".into(),
                    message: "try \"later\"\n".into(),
                },
            ],
        ),
        (
            "bad_args",
            vec![
                start("c4", "gpt"),
                call("call_9", "get"),
                args("[1,2]"),
                Event::Stop(StopReason::ContentFilter),
                Event::End,
            ],
        ),
        (
            "custom_raw",
            vec![
                start("c5", "gpt"),
                call("call_5", "run"),
                args("not json"),
                Event::Stop(StopReason::StopSequence),
                Event::End,
            ],
        ),
    ]
}

fn view() -> ClientView {
    let mut echo = serde_json::Map::new();
    echo.insert("instructions".into(), "be \"brief\"".into());
    echo.insert(
        "tools".into(),
        serde_json::json!([{"type": "custom", "name": "run"}]),
    );
    ClientView {
        tools: vec![
            ("run".into(), ToolKind::Custom),
            (
                "ns__f".into(),
                ToolKind::Namespaced {
                    namespace: "ns".into(),
                    name: "f".into(),
                },
            ),
        ],
        echo,
        json_array_stream: false,
    }
}

type MakeEncoder = fn() -> Encoder;

/// Every encoder configuration.
fn encoders() -> Vec<(&'static str, MakeEncoder)> {
    vec![
        ("chat", || Encoder::Chat(ChatEncoder::new(false))),
        ("chat+usage", || Encoder::Chat(ChatEncoder::new(true))),
        ("messages", || Encoder::Messages(MessagesEncoder::default())),
        ("responses", || {
            Encoder::Responses(ResponsesEncoder::new(ClientView::default()))
        }),
        ("responses+view", || {
            Encoder::Responses(ResponsesEncoder::new(view()))
        }),
        ("gemini", || Encoder::Gemini(GeminiEncoder::new(false))),
        ("gemini+array", || Encoder::Gemini(GeminiEncoder::new(true))),
    ]
}

/// `"created":N` and `"created_at":N` zeroed: the clock is not part of the bytes compared.
fn without_clock(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(at) = ["\"created\":", "\"created_at\":"]
        .iter()
        .filter_map(|k| rest.find(k).map(|i| (i, k.len())))
        .min()
    {
        let (i, k) = at;
        out.push_str(&rest[..i + k]);
        rest = rest[i + k..].trim_start_matches(|c: char| c.is_ascii_digit());
        out.push('0');
    }
    out.push_str(rest);
    out
}

/// One line per encoder and sequence: `encoder sequence <the output as a JSON string>`.
fn render() -> String {
    let mut lines = String::new();
    for (name, make) in encoders() {
        for (seq, events) in sequences() {
            let mut enc = make();
            let mut out = Vec::new();
            for e in &events {
                enc.encode(e, &mut out);
            }
            let out = without_clock(std::str::from_utf8(&out).expect("UTF-8 output"));
            lines.push_str(&format!(
                "{name} {seq} {}\n",
                serde_json::to_string(&out).unwrap()
            ));
        }
    }
    lines
}

/// A rendered output: the framing between JSON values (byte for byte), and each value with
/// its length in bytes.
#[derive(Debug, PartialEq)]
enum Piece {
    Frame(String),
    Json(serde_json::Value, usize),
}

fn pieces(s: &str) -> Vec<Piece> {
    let mut out = Vec::new();
    let mut frame = String::new();
    let mut rest = s;
    while let Some(c) = rest.chars().next() {
        if c != '{' {
            frame.push(c);
            rest = &rest[c.len_utf8()..];
            continue;
        }
        if !frame.is_empty() {
            out.push(Piece::Frame(std::mem::take(&mut frame)));
        }
        let mut values = serde_json::Deserializer::from_str(rest).into_iter();
        let v = values.next().expect("a JSON value").expect("valid JSON");
        let len = values.byte_offset();
        out.push(Piece::Json(v, len));
        rest = &rest[len..];
    }
    if !frame.is_empty() {
        out.push(Piece::Frame(frame));
    }
    out
}

#[test]
fn encoders_write_the_pinned_output() {
    let want = include_str!("golden.txt");
    let got = render();
    assert_eq!(got.lines().count(), want.lines().count());
    for (g, w) in got.lines().zip(want.lines()) {
        // `encoder sequence "output"`: the names have no spaces.
        let (g_name, g_out) = g.split_at(g.find(" \"").expect("name and output"));
        let (w_name, w_out) = w.split_at(w.find(" \"").expect("name and output"));
        assert_eq!(g_name, w_name);
        let g_out: String = serde_json::from_str(g_out).unwrap();
        let w_out: String = serde_json::from_str(w_out).unwrap();
        assert_eq!(pieces(&g_out), pieces(&w_out), "{g_name}");
    }
}

#[test]
#[ignore = "rewrites golden.txt, with GOLDEN_WRITE=1"]
fn write_golden() {
    if std::env::var_os("GOLDEN_WRITE").is_none_or(|v| v != "1") {
        return;
    }
    std::fs::write(
        concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/src/translate/stream/golden.txt"
        ),
        render(),
    )
    .unwrap();
}
