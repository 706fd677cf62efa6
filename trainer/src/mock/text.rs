//! The deterministic assistant text and the usage the mock reports for it.

use super::MockConfig;

/// Input tokens the mock reports for every request, whatever its body.
pub const INPUT_TOKENS: u64 = 17;

// Multi-byte characters early on, so the default 4 chunks already put 2- and 3-byte UTF-8
// sequences in the stream for split-fragment tests. No character needs JSON escaping.
// Every word after the first starts with a space, also when the list wraps around.
const WORDS: [&str; 8] = [
    " bonjour",
    " café",
    " 日本",
    " world",
    " from",
    " the",
    " mock",
    " upstream",
];

/// The text delta number `index` (0-based).
pub(crate) fn delta(index: usize) -> &'static str {
    match index {
        0 => "Bonjour",
        _ => WORDS[index % WORDS.len()],
    }
}

/// The `chunks` deltas in order.
pub(crate) fn deltas(chunks: usize) -> impl Iterator<Item = &'static str> {
    (0..chunks).map(delta)
}

/// The full assistant text of any response under `config`: every delta concatenated.
pub fn expected_text(config: &MockConfig) -> String {
    deltas(config.chunks).collect()
}

/// Usage the mock reports for any request under `config`: (input tokens, output tokens),
/// one output token per delta.
pub fn expected_usage(config: &MockConfig) -> (u64, u64) {
    (INPUT_TOKENS, config.chunks as u64)
}
