//! Line, word and byte counts, and word frequencies.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, DefaultHasher};
use std::io::{self, Write};

use crate::text;

pub const DEFAULT_TOP: usize = 10;

/// What `stats` prints besides the counts: the `top` most frequent words and the count of
/// each of `words` (`--word`, repeatable).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Options {
    pub top: usize,
    pub words: Vec<String>,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            top: DEFAULT_TOP,
            words: Vec::new(),
        }
    }
}

/// SipHash with fixed keys instead of `RandomState`: two runs over the same input then execute
/// the same instructions, which the instruction-count bench relies on. The input is the
/// user's own text, so hash flooding is not a concern.
type Frequencies = HashMap<String, u64, BuildHasherDefault<DefaultHasher>>;

/// Counts over one input. `words` counts whitespace-delimited tokens as `wc -w` does; the
/// frequencies count each token under its normalized form (`text::normalize_word`), so a
/// token of punctuation only is a word but has no frequency entry.
#[derive(Debug)]
pub struct Stats {
    pub lines: usize,
    pub words: usize,
    pub bytes: usize,
    frequencies: Frequencies,
}

impl Stats {
    pub fn compute(input: &[u8]) -> Self {
        let mut frequencies = Frequencies::default();
        let mut key = String::new();
        let mut words = 0;
        for token in text::tokens(input) {
            words += 1;
            if !text::normalize_word(token, &mut key) {
                continue;
            }
            // Look up by &str first so that only a new word allocates.
            match frequencies.get_mut(key.as_str()) {
                Some(count) => *count += 1,
                None => {
                    frequencies.insert(key.clone(), 1);
                }
            }
        }
        Stats {
            lines: text::line_count(input),
            words,
            bytes: input.len(),
            frequencies,
        }
    }

    /// How often `word` occurs, normalized the way tokens are.
    pub fn count_of(&self, word: &str) -> u64 {
        let mut key = String::new();
        if !text::normalize_word(word.as_bytes(), &mut key) {
            return 0;
        }
        self.frequencies.get(&key).copied().unwrap_or(0)
    }

    /// The `n` most frequent words, by count descending, then by word (byte order) ascending.
    pub fn top(&self, n: usize) -> Vec<(&str, u64)> {
        let mut entries: Vec<(&str, u64)> = self
            .frequencies
            .iter()
            .map(|(word, &count)| (word.as_str(), count))
            .collect();
        let order = |a: &(&str, u64), b: &(&str, u64)| b.1.cmp(&a.1).then_with(|| a.0.cmp(b.0));
        if n == 0 {
            return Vec::new();
        }
        if n < entries.len() {
            // Only the first n need sorting: partition them off first.
            entries.select_nth_unstable_by(n - 1, order);
            entries.truncate(n);
        }
        entries.sort_unstable_by(order);
        entries
    }
}

/// Prints `lines L`, `words W`, `bytes B`, then `COUNT WORD` for the top words, then
/// `word W COUNT` for each requested word.
pub fn run(options: &Options, input: &[u8], out: &mut impl Write) -> io::Result<()> {
    let stats = Stats::compute(input);
    writeln!(out, "lines {}", stats.lines)?;
    writeln!(out, "words {}", stats.words)?;
    writeln!(out, "bytes {}", stats.bytes)?;
    for (word, count) in stats.top(options.top) {
        writeln!(out, "{count} {word}")?;
    }
    for word in &options.words {
        writeln!(out, "word {word} {}", stats.count_of(word))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_lines_words_and_bytes() {
        let stats = Stats::compute("One fish, two fish.\nRed fish -- blue FISH!\nlast".as_bytes());
        assert_eq!(stats.lines, 3);
        assert_eq!(stats.words, 10);
        assert_eq!(stats.bytes, 47);
        assert_eq!(stats.count_of("fish"), 4);
        assert_eq!(stats.count_of("FISH?"), 4);
        assert_eq!(stats.count_of("--"), 0);
        assert_eq!(stats.count_of("salmon"), 0);
        assert_eq!(stats.top(usize::MAX).len(), 6);
    }

    #[test]
    fn top_sorts_by_count_then_word() {
        let stats = Stats::compute(b"b a c b a d b e");
        assert_eq!(stats.top(3), vec![("b", 3), ("a", 2), ("c", 1)]);
        assert_eq!(stats.top(100).len(), 5);
        assert!(stats.top(0).is_empty());
        // Byte order puts non-ASCII words after ASCII ones.
        let stats = Stats::compute("é z a".as_bytes());
        assert_eq!(stats.top(3), vec![("a", 1), ("z", 1), ("é", 1)]);
    }

    #[test]
    fn top_of_a_large_vocabulary_matches_a_full_sort() {
        let mut input = String::new();
        for i in 0..500u32 {
            for _ in 0..(i * 7919 % 13) {
                input.push_str(&format!("w{i} "));
            }
        }
        let stats = Stats::compute(input.as_bytes());
        let full = stats.top(usize::MAX);
        for n in [1, 7, 50, 499] {
            assert_eq!(stats.top(n), full[..n.min(full.len())].to_vec(), "top {n}");
        }
    }

    #[test]
    fn empty_input_has_no_counts() {
        let mut out = Vec::new();
        run(&Options::default(), b"", &mut out).unwrap();
        assert_eq!(out, b"lines 0\nwords 0\nbytes 0\n");
    }

    #[test]
    fn run_prints_requested_words() {
        let mut out = Vec::new();
        let options = Options {
            top: 1,
            words: vec!["Café".into(), "tea".into()],
        };
        run(&options, "café CAFÉ tea\n".as_bytes(), &mut out).unwrap();
        let out = String::from_utf8(out).unwrap();
        assert_eq!(
            out,
            "lines 1\nwords 3\nbytes 16\n2 café\nword Café 2\nword tea 1\n"
        );
    }
}
