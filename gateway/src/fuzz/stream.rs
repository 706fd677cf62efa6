//! Stream translation (`translate::stream::Translator`: the SSE parser, each upstream
//! dialect's decoder, each client dialect's encoder) on random upstream streams: chat
//! chunks, Anthropic events, Gemini chunks, as lifecycles in order and out of it, with
//! foreign and broken events, cut at random byte points. No panic; the output is
//! well-formed SSE whose every `data:` is JSON or `[DONE]` (for a Gemini client without
//! `alt=sse`, one JSON array, closed once the answer is done); it does not depend on where
//! the input was cut; and it stays within a bounded multiple of the input.

use std::io::Write;

use proptest::prelude::*;
use proptest::sample::Index;
use serde_json::{json, Map, Value};

use super::corpus::{docs, seeded, value, ANSWERS};
use super::{cuts, fuzz, json_value, pieces, text};
use crate::dialect::{Dialect, Upstream};
use crate::sse::SseParser;
use crate::translate::hub::{ClientView, ToolKind};
use crate::translate::stream::Translator;

fn usage_chat() -> impl Strategy<Value = Value> {
    (0..100_000u64, 0..100_000u64, prop::option::of(0..1000u64)).prop_map(|(p, c, cached)| {
        let mut u = json!({"prompt_tokens": p, "completion_tokens": c, "total_tokens": p + c});
        if let Some(n) = cached {
            u["prompt_tokens_details"] = json!({"cached_tokens": n});
        }
        u
    })
}

fn tool_name() -> impl Strategy<Value = String> {
    prop_oneof![
        "[a-z_]{1,8}",
        Just("apply_patch".to_owned()),
        Just("mcp__files__read".to_owned())
    ]
}

/// A JSON fragment of tool arguments, as models stream them.
fn args_fragment() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("{\"a\":".to_owned()),
        Just("1}".to_owned()),
        Just("{\"input\":\"*** Begin Patch\\n".to_owned()),
        Just("\"}".to_owned()),
        Just("{}".to_owned()),
        text(),
    ]
}

fn chat_chunk() -> impl Strategy<Value = Value> {
    let tool_call = (
        prop_oneof![4 => 0..4u64, 1 => any::<u64>()],
        prop::option::of("call_[a-z0-9]{1,6}"),
        prop::option::of(tool_name()),
        prop::option::of(args_fragment()),
    )
        .prop_map(|(index, id, name, args)| {
            let mut f = Map::new();
            if let Some(n) = name {
                f.insert("name".into(), n.into());
            }
            if let Some(a) = args {
                f.insert("arguments".into(), a.into());
            }
            json!({"index": index, "id": id, "type": "function", "function": f})
        });
    let delta = (
        prop::option::of(text()),
        prop::option::weighted(0.1, text()),
        prop::collection::vec(tool_call, 0..3),
    )
        .prop_map(|(content, refusal, calls)| {
            let mut d = json!({"role": "assistant"});
            if let Some(c) = content {
                d["content"] = c.into();
            }
            if let Some(r) = refusal {
                d["refusal"] = r.into();
            }
            if !calls.is_empty() {
                d["tool_calls"] = calls.into();
            }
            d
        });
    let finish = prop::option::weighted(
        0.2,
        prop::sample::select(vec![
            "stop",
            "length",
            "tool_calls",
            "content_filter",
            "other",
        ]),
    );
    prop_oneof![
        8 => (delta, finish, prop::option::weighted(0.2, usage_chat())).prop_map(|(d, f, u)| {
            json!({"id": "c1", "object": "chat.completion.chunk", "model": "gpt",
                "choices": [{"index": 0, "delta": d, "finish_reason": f}], "usage": u})
        }),
        2 => usage_chat().prop_map(|u| json!({"id": "c1", "choices": [], "usage": u})),
        1 => text().prop_map(|m| json!({"error": {"message": m, "type": "server_error"}})),
        1 => Just(Value::String("[DONE]".into())),
    ]
}

fn anthropic_event() -> impl Strategy<Value = Value> {
    let usage = (0..100_000u64, 0..1000u64, 0..1000u64, 0..100_000u64).prop_map(|(i, r, c, o)| {
        json!({"input_tokens": i, "cache_read_input_tokens": r, "cache_creation_input_tokens": c, "output_tokens": o})
    });
    prop_oneof![
        1 => usage.clone().prop_map(|u| json!({"type": "message_start", "message": {
            "id": "msg_1", "type": "message", "role": "assistant", "model": "claude", "content": [], "usage": u}})),
        2 => (0..4u64, prop_oneof![
            text().prop_map(|t| json!({"type": "text", "text": t})),
            ("toolu_[a-z0-9]{1,6}", tool_name()).prop_map(|(id, name)| json!({"type": "tool_use", "id": id, "name": name, "input": {}})),
            Just(json!({"type": "thinking", "thinking": ""})),
        ])
            .prop_map(|(i, b)| json!({"type": "content_block_start", "index": i, "content_block": b})),
        6 => (0..4u64, prop_oneof![
            text().prop_map(|t| json!({"type": "text_delta", "text": t})),
            args_fragment().prop_map(|a| json!({"type": "input_json_delta", "partial_json": a})),
            text().prop_map(|t| json!({"type": "thinking_delta", "thinking": t})),
        ])
            .prop_map(|(i, d)| json!({"type": "content_block_delta", "index": i, "delta": d})),
        1 => (0..4u64).prop_map(|i| json!({"type": "content_block_stop", "index": i})),
        1 => (prop::sample::select(vec!["end_turn", "max_tokens", "tool_use", "stop_sequence", "refusal", "pause_turn"]), usage)
            .prop_map(|(r, u)| json!({"type": "message_delta", "delta": {"stop_reason": r, "stop_sequence": null}, "usage": u})),
        1 => Just(json!({"type": "message_stop"})),
        1 => Just(json!({"type": "ping"})),
        1 => text().prop_map(|m| json!({"type": "error", "error": {"type": "overloaded_error", "message": m}})),
    ]
}

fn gemini_chunk() -> impl Strategy<Value = Value> {
    let part = prop_oneof![
        4 => text().prop_map(|t| json!({"text": t})),
        1 => text().prop_map(|t| json!({"text": t, "thought": true})),
        2 => (prop::option::of("[a-z0-9]{0,6}"), prop::option::of(tool_name()),
              prop_oneof![4 => json_value(2).prop_map(|v| json!({"v": v})), 1 => json_value(1)],
              prop::option::of("[A-Za-z0-9+/]{4,8}"))
            .prop_map(|(id, name, args, sig)| {
                let mut p = json!({"functionCall": {"id": id, "name": name, "args": args}});
                if let Some(s) = sig {
                    p["thoughtSignature"] = s.into();
                }
                p
            }),
    ];
    let usage = (0..100_000u64, 0..100_000u64, 0..1000u64).prop_map(|(p, c, t)| {
        json!({"promptTokenCount": p, "candidatesTokenCount": c, "thoughtsTokenCount": t, "totalTokenCount": p + c + t})
    });
    prop_oneof![
        8 => (
            prop::collection::vec(part, 0..3),
            prop::option::weighted(0.2, prop::sample::select(vec!["STOP", "MAX_TOKENS", "SAFETY", "OTHER"])),
            prop::option::weighted(0.3, usage),
        )
            .prop_map(|(parts, finish, usage)| {
                json!({"candidates": [{"content": {"role": "model", "parts": parts}, "finishReason": finish, "index": 0}],
                    "usageMetadata": usage, "modelVersion": "gemini", "responseId": "r1"})
            }),
        1 => Just(json!({"promptFeedback": {"blockReason": "SAFETY"}})),
        1 => text().prop_map(|m| json!({"error": {"code": 500, "message": m, "status": "INTERNAL"}})),
    ]
}

/// One upstream event's SSE frame: its data (JSON, or anything), its name, its line ends.
#[derive(Debug, Clone)]
struct Frame {
    data: Value,
    raw: Option<String>,
    crlf: bool,
    comment: bool,
}

fn frame(upstream: Dialect) -> impl Strategy<Value = Frame> {
    let generated = match upstream {
        Dialect::Messages => anthropic_event().boxed(),
        Dialect::Gemini => gemini_chunk().boxed(),
        _ => chat_chunk().boxed(),
    };
    // The golden streams' events of this dialect (the corpus), mutated.
    let real = seeded(docs(&ANSWERS, |d| d == upstream)).prop_filter_map("not JSON", |j| value(&j));
    let event = prop_oneof![3 => generated, 1 => real];
    let raw = prop::option::weighted(
        0.05,
        prop_oneof![
            text(),
            json_value(2).prop_map(|v| v.to_string()),
            Just("{\"type\":".to_owned()),
        ],
    );
    (event, raw, any::<bool>(), prop::bool::weighted(0.05)).prop_map(
        |(data, raw, crlf, comment)| Frame {
            data,
            raw,
            crlf,
            comment,
        },
    )
}

fn render(upstream: Dialect, frames: &[Frame]) -> Vec<u8> {
    let mut out = Vec::new();
    for f in frames {
        let nl = if f.crlf { "\r\n" } else { "\n" };
        if f.comment {
            out.extend_from_slice(format!(": keepalive{nl}{nl}").as_bytes());
        }
        let data = match (&f.raw, &f.data) {
            // Raw text, one line of it (a line end would make it two events).
            (Some(r), _) => r.replace(['\n', '\r'], " "),
            (None, Value::String(s)) if s == "[DONE]" => s.clone(),
            (None, v) => v.to_string(),
        };
        if upstream == Dialect::Messages {
            let name = f.data["type"].as_str().unwrap_or("unknown");
            out.extend_from_slice(format!("event: {name}{nl}").as_bytes());
        }
        out.extend_from_slice(format!("data: {data}{nl}{nl}").as_bytes());
    }
    out
}

#[derive(Debug, Clone)]
struct Case {
    upstream: Dialect,
    client: Dialect,
    /// A Gemini client without `alt=sse`: one JSON array.
    json_array: bool,
    include_usage: bool,
    frames: Vec<Frame>,
    cuts: Vec<Index>,
}

fn case() -> impl Strategy<Value = Case> {
    let upstream = prop::sample::select(vec![Dialect::Chat, Dialect::Messages, Dialect::Gemini]);
    (
        upstream,
        prop::sample::select(Dialect::ALL.to_vec()),
        any::<bool>(),
        any::<bool>(),
    )
        .prop_flat_map(|(upstream, client, json_array, include_usage)| {
            (
                Just(upstream),
                Just(client),
                Just(json_array && client == Dialect::Gemini),
                Just(include_usage),
                prop::collection::vec(frame(upstream), 0..30),
                prop::collection::vec(any::<Index>(), 0..8),
            )
        })
        .prop_map(
            |(upstream, client, json_array, include_usage, frames, cuts)| Case {
                upstream,
                client,
                json_array,
                include_usage,
                frames,
                cuts,
            },
        )
}

fn view(json_array: bool) -> ClientView {
    ClientView {
        tools: vec![
            ("apply_patch".into(), ToolKind::Custom),
            (
                "mcp__files__read".into(),
                ToolKind::Namespaced {
                    namespace: "mcp__files".into(),
                    name: "read".into(),
                },
            ),
        ],
        echo: Map::new(),
        json_array_stream: json_array,
    }
}

/// The client bytes for `input` fed in `pieces`, and whether the translator finished.
fn translate(c: &Case, input: &[u8], cuts: &[usize]) -> (Vec<u8>, bool, bool) {
    let mut t = Translator::new(
        c.client,
        c.upstream.upstream(),
        c.include_usage,
        view(c.json_array),
    );
    let mut out = Vec::new();
    for piece in pieces(input, cuts) {
        t.feed(piece, &mut out);
    }
    let finished = t.finish(&mut out).is_ok();
    (out, finished, t.is_done())
}

/// Clock readings and the ids made from them zeroed: two runs a second apart are equal.
fn without_clock(v: &mut Value) {
    match v {
        Value::Object(o) => {
            for (k, x) in o.iter_mut() {
                if k == "created" || k == "created_at" {
                    *x = json!(0);
                } else {
                    without_clock(x);
                }
            }
        }
        Value::Array(a) => a.iter_mut().for_each(without_clock),
        Value::String(s) => {
            // Gemini calls without an id get `call_<secs>_<n>`, and the Responses items made
            // from them `fc_call_<secs>_<n>` / `ctc_call_<secs>_<n>`.
            for prefix in ["call_", "fc_call_", "ctc_call_"] {
                if let Some(rest) = s.strip_prefix(prefix) {
                    let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
                    if digits > 0 && rest.as_bytes().get(digits) == Some(&b'_') {
                        *s = format!("{prefix}T{}", &rest[digits..]);
                        break;
                    }
                }
            }
        }
        _ => {}
    }
}

/// The client's events (name, data as JSON), checking the framing on the way.
fn client_events(c: &Case, out: &[u8], done: bool) -> Result<Vec<(String, Value)>, TestCaseError> {
    if c.json_array {
        if out.is_empty() {
            return Ok(Vec::new());
        }
        // Each chunk goes out whole: the array is closed, or closing it here gives JSON.
        let closed = serde_json::from_slice::<Value>(out).is_ok();
        prop_assert!(
            closed || !done,
            "the answer is done, the array is not closed"
        );
        let text = if closed {
            out.to_vec()
        } else {
            [out, b"]"].concat()
        };
        let v: Value = serde_json::from_slice(&text).map_err(|e| {
            TestCaseError::fail(format!("not a JSON array ({e}): {}", out.escape_ascii()))
        })?;
        let Value::Array(items) = v else {
            return Err(TestCaseError::fail("not an array"));
        };
        return Ok(items
            .into_iter()
            .map(|mut x| {
                without_clock(&mut x);
                (String::new(), x)
            })
            .collect());
    }
    for line in out.split(|&b| b == b'\n') {
        let ok = line.is_empty()
            || line.starts_with(b"data: ")
            || line.starts_with(b"event: ")
            || line == b"\r";
        prop_assert!(ok, "not an SSE line: {}", line.escape_ascii());
    }
    let mut p = SseParser::new();
    let mut events = Vec::new();
    let mut bad = None;
    p.feed(out, |e| {
        let name = String::from_utf8_lossy(e.event).into_owned();
        if e.data == b"[DONE]" {
            events.push((name, Value::String("[DONE]".into())));
            return;
        }
        match serde_json::from_slice::<Value>(e.data) {
            Ok(mut v) => {
                without_clock(&mut v);
                events.push((name, v));
            }
            Err(_) => bad = Some(e.data.escape_ascii().to_string()),
        }
    });
    prop_assert!(bad.is_none(), "data that is not JSON: {:?}", bad);
    prop_assert!(!p.is_mid_event(), "the output stops inside an event");
    Ok(events)
}

/// Client bytes per upstream byte, at most, past a fixed allowance (the Responses opening
/// events, a chat usage chunk): a chunk naming a new tool call in ~10 bytes becomes a
/// client event of ~250, and the answer is bounded by `hub::MAX_TOOL_CALLS`.
const MAX_GROWTH: usize = 64;
const ALLOWANCE: usize = 16 * 1024;

fn check(c: Case) -> Result<(), TestCaseError> {
    let input = render(c.upstream, &c.frames);
    let (whole, finished, done) = translate(&c, &input, &[]);
    prop_assert!(
        whole.len() <= MAX_GROWTH * input.len() + ALLOWANCE,
        "{} bytes out of {} in",
        whole.len(),
        input.len()
    );
    if input.len() >= 1024 {
        // Bytes out per byte in, in thousandths: the largest is printed after the run.
        let growth = (whole.len() * 1000 / input.len()) as u64;
        MOST_GROWTH.fetch_max(growth, std::sync::atomic::Ordering::Relaxed);
    }
    let events = client_events(&c, &whole, done)?;
    prop_assert!(!done || finished, "done but not finished");
    // Cut anywhere, the same answer.
    let cuts = cuts(&c.cuts, input.len());
    let (cut, cut_finished, _) = translate(&c, &input, &cuts);
    prop_assert_eq!(cut_finished, finished);
    let cut_events = client_events(&c, &cut, done)?;
    prop_assert_eq!(cut_events, events, "cut at {:?}", cuts);
    Ok(())
}

#[test]
fn fuzz_stream_translation() {
    fuzz("stream_translation", case(), check);
    let most = MOST_GROWTH.load(std::sync::atomic::Ordering::Relaxed);
    let _ = writeln!(
        std::io::stderr(),
        "fuzz stream_translation: at most {:.1} bytes out per byte in (inputs of 1 KiB or more)",
        most as f64 / 1000.0
    );
}

static MOST_GROWTH: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

// Regressions: minimal inputs the target found, kept as plain tests.

/// A Gemini client's encoder ends the answer itself when a call's arguments are not a JSON
/// object (an error chunk; without `alt=sse`, the array's `]`), but wrote on when more
/// events came: chunks after the error, and after the closing bracket.
#[test]
fn regression_gemini_client_gets_nothing_after_its_error() {
    let stream = concat!(
        "data: {\"id\":\"c\",\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"id\":\"a\",\"function\":{\"name\":\"f\",\"arguments\":\"{\\\"a\\\":\"}}]}}]}\n\n",
        "data: {\"id\":\"c\",\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":1,\"id\":\"b\",\"function\":{\"name\":\"g\",\"arguments\":\"{}\"}}]}}]}\n\n",
        "data: {\"id\":\"c\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"more\"},\"finish_reason\":\"tool_calls\"}]}\n\n",
        "data: [DONE]\n\n",
    );
    for json_array in [true, false] {
        let mut t = Translator::new(Dialect::Gemini, Upstream::Chat, false, view(json_array));
        let mut out = Vec::new();
        t.feed(stream.as_bytes(), &mut out);
        let _ = t.finish(&mut out);
        if json_array {
            let v: Value = serde_json::from_slice(&out)
                .unwrap_or_else(|e| panic!("not one JSON array ({e}): {}", out.escape_ascii()));
            assert_eq!(v.as_array().map(Vec::len), Some(1), "{v}");
            assert!(v[0].get("error").is_some(), "{v}");
        } else {
            let mut events = Vec::new();
            SseParser::new().feed(&out, |e| events.push(e.data.to_vec()));
            assert_eq!(events.len(), 1, "{}", out.escape_ascii());
            assert!(
                events[0].starts_with(b"{\"error\""),
                "{}",
                out.escape_ascii()
            );
        }
    }
}
