//! A deterministic generator of English-like text: the same seed gives the same bytes on every
//! platform (integer arithmetic only, no hashing, no clock).

use std::io::{self, Write};

/// SplitMix64: a tiny, fast PRNG with good statistical quality for its size.
#[derive(Debug, Clone)]
pub struct SplitMix64 {
    state: u64,
}

impl SplitMix64 {
    pub fn new(seed: u64) -> Self {
        SplitMix64 { state: seed }
    }

    pub fn next_u64(&mut self) -> u64 {
        self.state = self.state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in `0..n` (n > 0), by multiply-and-shift rather than a biased modulo.
    pub fn below(&mut self, n: u64) -> u64 {
        ((u128::from(self.next_u64()) * u128::from(n)) >> 64) as u64
    }

    /// True once in `n` draws on average.
    pub fn one_in(&mut self, n: u64) -> bool {
        self.below(n) == 0
    }

    /// An index into a list of `len` items, skewed towards the front so that the first words
    /// of `WORDS` are the most frequent, as in real text: mostly the smallest of three uniform
    /// draws, and one time in four a plain uniform draw so that the rare words do occur.
    fn skewed(&mut self, len: usize) -> usize {
        let n = len as u64;
        if self.one_in(4) {
            return self.below(n) as usize;
        }
        let a = self.below(n);
        let b = self.below(n);
        let c = self.below(n);
        a.min(b).min(c) as usize
    }
}

/// The vocabulary, most common first. The non-ASCII words only use letters whose upper and
/// lower case differ by one char, so the casing the generator applies can be undone;
/// `workload.sh` relies on that list of letters (É, Ï, Ü, Ö, Ç, Ñ, Å, À).
pub const WORDS: &[&str] = &[
    "the",
    "of",
    "and",
    "to",
    "a",
    "in",
    "is",
    "it",
    "that",
    "for",
    "was",
    "on",
    "with",
    "as",
    "data",
    "he",
    "be",
    "at",
    "by",
    "this",
    "had",
    "not",
    "are",
    "but",
    "from",
    "or",
    "have",
    "an",
    "they",
    "which",
    "one",
    "you",
    "were",
    "her",
    "all",
    "she",
    "there",
    "would",
    "their",
    "we",
    "him",
    "been",
    "has",
    "when",
    "who",
    "will",
    "more",
    "no",
    "if",
    "out",
    "so",
    "said",
    "what",
    "up",
    "its",
    "about",
    "into",
    "than",
    "them",
    "can",
    "only",
    "other",
    "new",
    "some",
    "could",
    "time",
    "these",
    "two",
    "may",
    "then",
    "do",
    "first",
    "any",
    "my",
    "now",
    "such",
    "like",
    "our",
    "over",
    "man",
    "me",
    "even",
    "most",
    "made",
    "after",
    "also",
    "did",
    "many",
    "before",
    "must",
    "through",
    "back",
    "years",
    "where",
    "much",
    "your",
    "way",
    "well",
    "down",
    "should",
    "because",
    "each",
    "just",
    "those",
    "people",
    "how",
    "too",
    "little",
    "state",
    "good",
    "very",
    "make",
    "world",
    "still",
    "own",
    "see",
    "men",
    "work",
    "long",
    "get",
    "here",
    "between",
    "both",
    "life",
    "being",
    "under",
    "never",
    "day",
    "same",
    "another",
    "know",
    "while",
    "last",
    "might",
    "us",
    "great",
    "old",
    "year",
    "off",
    "come",
    "since",
    "against",
    "go",
    "came",
    "right",
    "used",
    "take",
    "three",
    "theory",
    "weather",
    "together",
    "mother",
    "whether",
    "database",
    "metadata",
    "search",
    "index",
    "pattern",
    "string",
    "river",
    "mountain",
    "window",
    "garden",
    "letter",
    "number",
    "system",
    "question",
    "answer",
    "morning",
    "evening",
    "market",
    "station",
    "library",
    "engine",
    "profile",
    "compiler",
    "branch",
    "function",
    "memory",
    "cache",
    "thread",
    "signal",
    "don't",
    "it's",
    "we're",
    "well-known",
    "up-to-date",
    "snake_case",
    "café",
    "naïve",
    "zürich",
    "résumé",
    "façade",
    "jalapeño",
    "über",
    "köln",
    "ångström",
    "déjà",
];

const NUMBER_ONE_IN: u64 = 14;
const EMPTY_LINE_ONE_IN: u64 = 40;

/// Writes `lines` lines of text generated from `seed`.
pub fn write_corpus(seed: u64, lines: u64, out: &mut impl Write) -> io::Result<()> {
    let mut rng = SplitMix64::new(seed);
    let mut line = String::new();
    for _ in 0..lines {
        line.clear();
        generate_line(&mut rng, &mut line);
        line.push('\n');
        out.write_all(line.as_bytes())?;
    }
    Ok(())
}

/// One line: usually one sentence, sometimes more, now and then none at all.
pub fn generate_line(rng: &mut SplitMix64, line: &mut String) {
    if rng.one_in(EMPTY_LINE_ONE_IN) {
        return;
    }
    loop {
        generate_sentence(rng, line);
        if !rng.one_in(5) {
            break;
        }
        line.push(' ');
    }
}

fn generate_sentence(rng: &mut SplitMix64, line: &mut String) {
    let words = 3 + rng.below(12);
    for i in 0..words {
        if i > 0 {
            line.push(' ');
            if rng.one_in(50) {
                line.push_str("- ");
            }
        }
        let (open, close) = match rng.below(60) {
            0 => ("\"", "\""),
            1 => ("(", ")"),
            2 => ("'", "'"),
            _ => ("", ""),
        };
        line.push_str(open);
        if rng.one_in(NUMBER_ONE_IN) {
            push_number(rng, line);
        } else {
            push_word(rng, line, i == 0);
        }
        line.push_str(close);
        if i + 1 < words {
            match rng.below(40) {
                0..=3 => line.push(','),
                4 => line.push(';'),
                5 => line.push(':'),
                _ => {}
            }
        }
    }
    let end = match rng.below(20) {
        0..=2 => "!",
        3..=5 => "?",
        6 => "...",
        _ => ".",
    };
    line.push_str(end);
}

fn push_word(rng: &mut SplitMix64, line: &mut String, sentence_start: bool) {
    let word = WORDS[rng.skewed(WORDS.len())];
    if rng.one_in(30) {
        line.extend(word.chars().flat_map(char::to_uppercase));
    } else if sentence_start || rng.one_in(25) {
        let mut chars = word.chars();
        if let Some(first) = chars.next() {
            line.extend(first.to_uppercase());
            line.push_str(chars.as_str());
        }
    } else {
        line.push_str(word);
    }
}

fn push_number(rng: &mut SplitMix64, line: &mut String) {
    use std::fmt::Write as _;
    // Writing to a String cannot fail.
    let _ = match rng.below(4) {
        0 => write!(line, "{}", rng.below(1000)),
        1 => write!(line, "{}.{}", rng.below(100), rng.below(10)),
        2 => write!(line, "{}%", rng.below(101)),
        _ => write!(line, "{}", 1900 + rng.below(131)),
    };
}

#[cfg(test)]
mod tests {
    use super::*;

    fn corpus(seed: u64, lines: u64) -> String {
        let mut out = Vec::new();
        write_corpus(seed, lines, &mut out).unwrap();
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn splitmix_matches_reference_values() {
        // First outputs of the reference SplitMix64 for seed 0.
        let mut rng = SplitMix64::new(0);
        assert_eq!(rng.next_u64(), 0xE220_A839_7B1D_CDAF);
        assert_eq!(rng.next_u64(), 0x6E78_9E6A_A1B9_65F4);
    }

    #[test]
    fn below_stays_in_range() {
        let mut rng = SplitMix64::new(7);
        for n in [1, 2, 3, 10, 1000] {
            for _ in 0..1000 {
                assert!(rng.below(n) < n);
            }
        }
    }

    #[test]
    fn same_seed_same_text_other_seed_other_text() {
        assert_eq!(corpus(42, 200), corpus(42, 200));
        assert_ne!(corpus(42, 200), corpus(43, 200));
        assert!(corpus(42, 300).starts_with(&corpus(42, 200)));
    }

    #[test]
    fn corpus_has_the_requested_lines_and_variety() {
        let text = corpus(1, 2000);
        assert_eq!(text.lines().count(), 2000);
        assert!(text.lines().any(str::is_empty));
        for needle in ["café", "The", "THE", "the", ",", "?", "\""] {
            assert!(text.contains(needle), "no {needle:?}");
        }
        assert!(text.chars().any(|c| c.is_ascii_digit()));
        assert!(!text.contains("  "), "double space");
    }

    #[test]
    fn casing_round_trips_through_lowercase() {
        for word in WORDS {
            let upper: String = word.chars().flat_map(char::to_uppercase).collect();
            assert_eq!(crate::text::lowercase(&upper), *word);
            assert_eq!(upper.chars().count(), word.chars().count(), "{word}");
        }
    }
}
