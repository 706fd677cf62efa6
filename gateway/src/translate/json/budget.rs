//! The node budget: how much tree the gateway builds for one JSON document it did not write.
//!
//! Translation reads untrusted JSON (client bodies, upstream answers, events, error bodies,
//! tool-call arguments) into `serde_json::Value` trees or typed structs with vectors. Either
//! costs far more than the text for tiny objects: a `Value` object is a B-tree leaf of
//! ~640 bytes even for `{"a":1}`, so `[{},{},...]` grew ~200x its bytes (issue 49: an 8 MB
//! body cost +651 MiB). Each document is therefore measured in nodes before its tree is
//! built, and refused above the budget, [`limit`] of its length:
//!
//! - a node stands for [`NODE_BYTES`] of tree: each `{` counts [`OBJECT_NODES`] (its
//!   leaf), each `[` [`ARRAY_NODES`] (a vector's first four slots), each `:` and `,`
//!   [`ITEM_NODES`] (a member, or an element with the spare room of its vector);
//! - a document may hold `max(FLOOR_NODES, bytes / BYTES_PER_NODE)` nodes: at most 4 MiB of
//!   tree for any document, and beyond that at most 2 bytes of tree per byte read (with the
//!   text and its strings' copies, 4x the bytes read). The floor lets an answer of 1,024
//!   tool calls (the gateway's own bound, `hub::MAX_TOOL_CALLS`) through to that bound.
//!
//! Real traffic is far below it: the agent CLIs' captured bodies (gateway/tests/fixtures/
//! agents) and the shapes' bodies hold at most ~0.1 nodes a byte and 3,668 nodes, against a
//! floor of 131,072 nodes (and 1/16 a byte past 2 MiB).

use std::fmt;

/// The bytes of tree one node stands for.
pub(crate) const NODE_BYTES: usize = 32;
/// The nodes an object counts: a `BTreeMap` leaf is ~640 bytes (20 x 32).
pub(crate) const OBJECT_NODES: usize = 20;
/// The nodes an array counts: a vector's first allocation holds four `Value`s.
pub(crate) const ARRAY_NODES: usize = 4;
/// The nodes a member (`:`) or a further element or member (`,`) counts: a `Value` is 32
/// bytes, a vector's spare room up to as much again, a B-tree's half-full leaves more.
pub(crate) const ITEM_NODES: usize = 2;
/// Every document may hold this many nodes, whatever its length (4 MiB of tree).
pub(crate) const FLOOR_NODES: usize = 131_072;
/// Beyond the floor, one node per this many bytes (2 bytes of tree per byte read).
pub(crate) const BYTES_PER_NODE: usize = 16;

/// The most nodes a document of `len` bytes may hold.
pub(crate) const fn limit(len: usize) -> usize {
    let by_len = len / BYTES_PER_NODE;
    if by_len > FLOOR_NODES {
        by_len
    } else {
        FLOOR_NODES
    }
}

/// Documents this short cannot exceed the floor (a node-densest text, `[{},{},...]`,
/// holds at most 10 nodes a byte), so they are not scanned.
const UNSCANNED: usize = FLOOR_NODES / OBJECT_NODES * 2;

/// A document over its budget: refused before any tree is built.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct OverBudget {
    /// The document's length in bytes.
    pub(crate) bytes: usize,
    /// Its budget ([`limit`] of `bytes`); it holds more nodes than this.
    pub(crate) limit: usize,
}

impl fmt::Display for OverBudget {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "a JSON document of {} bytes holds more than {} nodes, the gateway's budget for it \
             (a node is ~{NODE_BYTES} bytes of tree: each object counts {OBJECT_NODES}, each \
             array {ARRAY_NODES}, each member and further element {ITEM_NODES}; the budget is \
             max({FLOOR_NODES}, bytes / {BYTES_PER_NODE}))",
            self.bytes, self.limit
        )
    }
}

/// Whether `b` (JSON text, valid or not) stays within its budget. Strings are skipped (their
/// commas and braces are text); nothing else is checked: the parser that follows does that.
pub(crate) fn check(b: &[u8]) -> Result<(), OverBudget> {
    if b.len() <= UNSCANNED {
        return Ok(());
    }
    let limit = limit(b.len());
    match nodes_until(b, limit) {
        Some(_) => Ok(()),
        None => Err(OverBudget {
            bytes: b.len(),
            limit,
        }),
    }
}

/// [`check`] of text.
pub(crate) fn check_str(s: &str) -> Result<(), OverBudget> {
    check(s.as_bytes())
}

/// The nodes `b` holds, or `None` as soon as they pass `limit`.
pub(crate) fn nodes_until(b: &[u8], limit: usize) -> Option<usize> {
    let mut nodes = 0usize;
    let mut i = 0;
    while let Some(&x) = b.get(i) {
        i += 1;
        match x {
            b'"' => i = string_end(b, i),
            b'{' => nodes += OBJECT_NODES,
            b',' | b':' => nodes += ITEM_NODES,
            b'[' => nodes += ARRAY_NODES,
            _ => continue,
        }
        if nodes > limit {
            return None;
        }
    }
    Some(nodes)
}

/// The index after the string whose text starts at `i` (after its opening quote); `b.len()`
/// when it never ends.
fn string_end(b: &[u8], mut i: usize) -> usize {
    loop {
        i += super::scan::plain_len(&b[i.min(b.len())..]);
        match b.get(i) {
            None => return b.len(),
            Some(b'"') => return i + 1,
            Some(b'\\') => i += 2,
            // A control byte: invalid JSON, the parser's to refuse; counted on as text.
            Some(_) => i += 1,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_objects_members_and_elements_outside_strings() {
        // 2 objects (40), 1 array (4), 2 colons and 2 commas (2 each); the string's `{,:[`
        // are text.
        let doc = br#"{"a":[1,{}],"b":"{,:[\"{"}"#;
        assert_eq!(nodes_until(doc, usize::MAX), Some(40 + 4 + 8));
        assert_eq!(nodes_until(doc, 51), None);
    }

    #[test]
    fn a_flood_of_tiny_objects_is_refused_and_real_bodies_pass() {
        let flood = format!("[{}{{}}]", "{},".repeat(1 << 20));
        let e = check(flood.as_bytes()).unwrap_err();
        assert_eq!(e.limit, limit(flood.len()));
        assert!(e.to_string().contains("budget"), "{e}");
        // The biggest agent fixture, and a megabyte of text in one string.
        let agent =
            include_str!("../../../tests/fixtures/agents/claude-code-claude-tool-result.json");
        assert!(check_str(agent).is_ok());
        let text = format!(r#"{{"a":"{}"}}"#, "x,{".repeat(1 << 20));
        assert!(check_str(&text).is_ok());
    }

    /// Every captured agent body and shape body is far within the floor (an eighth of it).
    #[test]
    fn real_bodies_are_far_within_the_floor() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
        let mut seen = 0;
        for dir in ["tests/fixtures/agents", "../shapes/bodies"] {
            for entry in std::fs::read_dir(root.join(dir)).unwrap() {
                let path = entry.unwrap().path();
                let body = std::fs::read(&path).unwrap();
                let n = nodes_until(&body, usize::MAX).unwrap();
                assert!(n <= FLOOR_NODES / 8, "{}: {n} nodes", path.display());
                seen += 1;
            }
        }
        assert!(seen >= 20, "{seen} bodies");
    }

    #[test]
    fn short_documents_cannot_pass_the_floor() {
        let densest = format!("[{}{{}}]", "{},".repeat(UNSCANNED / 3 - 2));
        assert!(densest.len() <= UNSCANNED);
        assert!(nodes_until(densest.as_bytes(), usize::MAX).unwrap() <= FLOOR_NODES);
        assert_eq!(limit(0), FLOOR_NODES);
        assert_eq!(limit(BYTES_PER_NODE * (FLOOR_NODES + 1)), FLOOR_NODES + 1);
    }
}
