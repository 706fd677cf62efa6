//! The node budget (`translate::json::budget`, issue 49): deep and wide documents around the
//! budget's floor, read by the request reader (`json::read`, `json::read_members`) and
//! checked by the budget's scan (`budget::check`, before answers, events and arguments).
//!
//! - the scan counts what the document holds (an independent count over the generated tree);
//! - a document within its budget reads as serde_json reads it, and the tree built holds no
//!   more nodes than the budget, nor allocates more than they stand for (a counting
//!   allocator on the test thread: `NODE_BYTES` a node, plus the text's strings twice);
//! - a document over its budget is refused by the reader and by the scan, and the refusal
//!   allocated no more than the budget stands for: refused before its tree was built.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

use proptest::prelude::*;
use serde_json::Value;

use super::{fuzz, json_value, render, style, untimed, Style, J};
use crate::translate::json::budget::{
    self, ARRAY_NODES, BYTES_PER_NODE, FLOOR_NODES, ITEM_NODES, NODE_BYTES, OBJECT_NODES,
};
use crate::translate::json::{read, read_members, ReadError};

/// Counts the bytes the current thread has allocated and not freed, and their peak: the
/// lib's tests run on `System` through it (a reallocation counts its change in size only,
/// as one that grows in place).
struct Counting;

thread_local! {
    static LIVE: Cell<isize> = const { Cell::new(0) };
    static PEAK: Cell<isize> = const { Cell::new(0) };
}

fn moved(by: isize) {
    let _ = LIVE.try_with(|live| {
        let now = live.get() + by;
        live.set(now);
        let _ = PEAK.try_with(|p| p.set(p.get().max(now)));
    });
}

// SAFETY: every call is passed to `System` unchanged; the counters are plain thread-local
// cells with no destructor and no allocation.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: as `GlobalAlloc::alloc`'s caller promised.
        let p = unsafe { System.alloc(layout) };
        if !p.is_null() {
            moved(layout.size() as isize);
        }
        p
    }
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: as `GlobalAlloc::alloc_zeroed`'s caller promised.
        let p = unsafe { System.alloc_zeroed(layout) };
        if !p.is_null() {
            moved(layout.size() as isize);
        }
        p
    }
    unsafe fn dealloc(&self, p: *mut u8, layout: Layout) {
        // SAFETY: as `GlobalAlloc::dealloc`'s caller promised.
        unsafe { System.dealloc(p, layout) };
        moved(-(layout.size() as isize));
    }
    unsafe fn realloc(&self, p: *mut u8, layout: Layout, new: usize) -> *mut u8 {
        // SAFETY: as `GlobalAlloc::realloc`'s caller promised.
        let q = unsafe { System.realloc(p, layout, new) };
        if !q.is_null() {
            moved(new as isize - layout.size() as isize);
        }
        q
    }
}

#[global_allocator]
static COUNTING: Counting = Counting;

/// `f`'s result and the most bytes it held allocated at once, on this thread.
fn peak_of<T>(f: impl FnOnce() -> T) -> (T, usize) {
    let base = LIVE.with(Cell::get);
    PEAK.with(|p| p.set(base));
    let out = f();
    (out, (PEAK.with(Cell::get) - base).max(0) as usize)
}

/// The nodes a tree counts, as the budget defines them (the generated tree, so that the
/// scan's and the reader's counts are checked against a count of their own).
fn nodes(v: &J) -> usize {
    let items = |n: usize| n * ITEM_NODES;
    match v {
        J::Raw(_) | J::Str(_) => 0,
        J::Arr(a) => {
            ARRAY_NODES + items(a.len().saturating_sub(1)) + a.iter().map(nodes).sum::<usize>()
        }
        J::Obj(o) => {
            OBJECT_NODES
                + items(o.len())
                + items(o.len().saturating_sub(1))
                + o.iter().map(|(_, v)| nodes(v)).sum::<usize>()
        }
    }
}

/// The same count of a built `Value` (duplicate keys collapsed: at most the text's).
fn value_nodes(v: &Value) -> usize {
    match v {
        Value::Array(a) => {
            ARRAY_NODES
                + a.len().saturating_sub(1) * ITEM_NODES
                + a.iter().map(value_nodes).sum::<usize>()
        }
        Value::Object(o) => {
            OBJECT_NODES
                + (2 * o.len()).saturating_sub(1) * ITEM_NODES
                + o.values().map(value_nodes).sum::<usize>()
        }
        _ => 0,
    }
}

/// A document: `copies` of `unit` in an array (wide), inside `depth` wrappers that
/// alternate arrays and objects (deep).
#[derive(Debug, Clone)]
struct Doc {
    unit: Value,
    copies: usize,
    depth: usize,
    style: Style,
}

fn doc() -> impl Strategy<Value = Doc> {
    // Units dense in nested arrays and small objects (the floods), and any value.
    let unit = prop_oneof![
        3 => prop::sample::select(vec![
            "[]", "[[]]", "[[],[[]]]", "{}", r#"{"a":1}"#, r#"[{"a":[1]}]"#, r#"{"":[[],{}]}"#,
            "[1,2,3]", r#"[["x"],[{"b":[]}]]"#, r#"["a\"[,{",{"\\":"\"]"}]"#,
        ])
        .prop_map(|s| serde_json::from_str(s).expect("JSON")),
        2 => json_value(4),
    ];
    (unit, 0.5..2.0f64, 0..110usize, style()).prop_map(|(unit, scale, depth, style)| {
        // Copies enough to land near the floor: between half and twice it.
        let per = value_nodes(&unit) + ITEM_NODES;
        // At most ~256 KiB of text (the reader's own count, not its prescan, decides below
        // that), so that a case stays well within its CPU bound and a run gets many.
        let unit_len = serde_json::to_vec(&unit).map_or(1, |v| v.len() + 1);
        let copies = ((FLOOR_NODES as f64 * scale) as usize / per)
            .min((256 << 10) / unit_len)
            .max(1);
        Doc {
            unit,
            copies,
            depth,
            style,
        }
    })
}

fn build(d: &Doc) -> (J, Vec<u8>) {
    let unit = J::from(&d.unit);
    let mut v = J::Arr(vec![unit; d.copies]);
    for i in 0..d.depth {
        v = if i % 2 == 0 {
            J::Arr(vec![v])
        } else {
            J::Obj(vec![("k".into(), v)])
        };
    }
    let text = render(&v, &d.style);
    (v, text)
}

fn check(d: Doc) -> Result<(), TestCaseError> {
    let (tree, text) = untimed(|| build(&d));
    let Ok(text) = String::from_utf8(text) else {
        return Ok(());
    };
    let want = nodes(&tree);
    let limit = budget::limit(text.len());
    prop_assert_eq!(budget::nodes_until(text.as_bytes(), usize::MAX), Some(want));
    let over = want > limit;
    prop_assert_eq!(budget::check_str(&text).is_err(), over);
    // The most a read may hold: the budget's nodes (or the document's, if fewer), plus its
    // strings (keys and values copied out of the text, and an escaped one's scratch).
    let most = NODE_BYTES * want.min(limit) + 2 * text.len() + 4096;
    let (got, peak) = peak_of(|| read(&text).map(|v| value_nodes(&v)));
    prop_assert!(
        peak <= most,
        "read held {peak} bytes at once, over {most} ({want} nodes, budget {limit}, {} bytes)",
        text.len()
    );
    match got {
        Ok(n) => {
            prop_assert!(!over, "{want} nodes over a budget of {limit} were read");
            prop_assert!(n <= want, "the tree has {n} nodes, the text {want}");
        }
        Err(ReadError::Budget(e)) => {
            prop_assert!(over, "{want} nodes within {limit} refused: {e}");
            prop_assert_eq!(e.limit, limit);
        }
        // Within the budget, the reader refuses what serde_json refuses (its nesting
        // limit).
        Err(ReadError::Json(e)) => {
            prop_assert!(!over, "over the budget but refused as not JSON: {e}");
            let serde = serde_json::from_str::<serde::de::IgnoredAny>(&text);
            prop_assert!(serde.is_err(), "serde_json reads what read refused: {e}");
        }
    }
    let (members, peak) = peak_of(|| read_members(&text, ["k"]).is_some());
    prop_assert!(peak <= most, "read_members held {peak} bytes, over {most}");
    prop_assert!(
        !(members && over),
        "read_members read {want} nodes over {limit}"
    );
    Ok(())
}

#[test]
fn fuzz_node_budget() {
    fuzz("node_budget", doc(), check);
}

/// Documents past the reader's prescan length are refused by the scan alone, before any
/// tree: a read of an 8 MB flood holds no more than its budget's bytes (none, in fact).
#[test]
fn a_big_flood_is_refused_with_no_tree() {
    let flood = format!("[{}1]", r#"{"a":1},"#.repeat(1 << 20));
    let (r, peak) = peak_of(|| read(&flood));
    assert!(matches!(r, Err(ReadError::Budget(_))), "{r:?}");
    assert!(peak < 64 * 1024, "{peak} bytes");
    assert!(flood.len() / BYTES_PER_NODE > FLOOR_NODES);
}

/// `[{"a":1},...]` of about `n` bytes.
fn flood(n: usize) -> String {
    format!("[{}1]", r#"{"a":1},"#.repeat(n / 8))
}

/// The most a refused 2 MB document may cost to refuse (no tree: the error's text, the
/// encoder's buffers).
const REFUSAL: usize = 256 * 1024;

/// Each place an upstream's document was built whole into a tree, with a 2 MB flood (each
/// cost ~170 MiB, issue 49): now refused or read by borrowed fields, in well under a
/// megabyte.
#[test]
fn hostile_upstream_documents_cost_no_tree() {
    use crate::dialect::{Dialect, Upstream};
    use crate::translate::{errors, hub, stream::Translator, translate_response_of};
    let f = flood(2_000_000);
    // A translated error body: its message kept.
    let error = format!(r#"{{"error":{{"type":"invalid_request_error","message":"no","x":{f}}}}}"#);
    let (out, peak) =
        peak_of(|| errors::translate(Dialect::Chat, Upstream::Messages, 400, error.as_bytes()));
    assert!(peak < REFUSAL, "error body: {peak} bytes");
    assert!(String::from_utf8_lossy(&out).contains(r#""message":"no""#));
    // A Converse answer, and a Gemini one with a `parts` flood (typed, but a vector of parts).
    let converse = format!(
        r#"{{"output":{{"message":{{"role":"assistant","content":[{{"text":"hi"}}]}}}},"stopReason":"end_turn","x":{f}}}"#
    );
    let parts = format!(
        r#"{{"candidates":[{{"content":{{"role":"model","parts":[{{"text":"hi"}}{}]}}}}]}}"#,
        ",{}".repeat(600_000)
    );
    let view = hub::ClientView::default();
    for (upstream, body) in [(Upstream::Converse, &converse), (Upstream::Gemini, &parts)] {
        let (r, peak) =
            peak_of(|| translate_response_of(Dialect::Chat, upstream, &view, body.as_bytes(), "m"));
        let e = r.expect_err("refused");
        assert!(e.0.contains("budget"), "{e}");
        assert!(peak < REFUSAL, "{upstream:?} answer: {peak} bytes");
    }
    // One event-stream frame (ConverseStream), and an Anthropic SSE event.
    let payload = format!(r#"{{"contentBlockIndex":0,"delta":{{"text":"hi"}},"x":{f}}}"#);
    let frame =
        crate::translate::stream::eventstream::testing::event("contentBlockDelta", &payload);
    let sse = format!(
        "event: content_block_delta\ndata: {{\"type\":\"content_block_delta\",\"index\":0,\"delta\":{{\"type\":\"text_delta\",\"text\":\"hi\"}},\"x\":{f}}}\n\n"
    );
    for (upstream, bytes) in [
        (Upstream::Converse, frame),
        (Upstream::Messages, sse.into_bytes()),
    ] {
        let mut t = Translator::new(Dialect::Chat, upstream, false, view.clone());
        // The output's room is made before: only the event's reading counts.
        let mut out = Vec::with_capacity(64 * 1024);
        let ((), peak) = peak_of(|| t.feed(&bytes, &mut out));
        assert!(
            peak < REFUSAL + bytes.len(),
            "{upstream:?} event: {peak} bytes"
        );
        assert!(
            String::from_utf8_lossy(&out).contains("budget"),
            "{upstream:?}"
        );
    }
}

/// A tool call's arguments are a document of their own inside a string: a Gemini client's
/// `args` object is built from them, within the budget.
#[test]
fn tool_call_arguments_over_the_budget_are_refused_unbuilt() {
    let args = format!(r#"{{"x":{}}}"#, flood(2_000_000));
    let (r, peak) = peak_of(|| crate::translate::gemini::args_value(&args));
    assert!(r.is_err());
    assert!(peak < REFUSAL, "{peak} bytes");
}
