//! JSON string literals for the hand-rendered bodies (below `render` and `dialect`, which
//! both write them).

/// `s` as a JSON string literal, quotes included.
pub(crate) fn json_str(s: &str) -> String {
    serde_json::to_string(s).expect("a str always serializes")
}
