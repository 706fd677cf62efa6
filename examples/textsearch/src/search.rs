//! Fixed-string search over lines, with grep's output conventions.

use std::io::{self, Write};

use crate::text::{self, Folder};

/// The search flags: `-i`, `-w`, `-o`, `-c` and `-n`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Options {
    pub ignore_case: bool,
    pub whole_word: bool,
    pub only_matching: bool,
    pub count: bool,
    pub line_numbers: bool,
}

/// Boyer-Moore-Horspool substring search over bytes.
#[derive(Debug, Clone)]
pub struct Finder {
    needle: Vec<u8>,
    /// How far the window may move when its last byte is the index.
    shift: [usize; 256],
}

impl Finder {
    pub fn new(needle: &[u8]) -> Self {
        let n = needle.len();
        let mut shift = [n.max(1); 256];
        for (i, &b) in needle.iter().enumerate().take(n.saturating_sub(1)) {
            shift[usize::from(b)] = n - 1 - i;
        }
        Finder {
            needle: needle.to_vec(),
            shift,
        }
    }

    pub fn len(&self) -> usize {
        self.needle.len()
    }

    /// The first occurrence in `haystack` that starts at `from` or later. The empty needle
    /// occurs at every position, the end included.
    pub fn find(&self, haystack: &[u8], from: usize) -> Option<usize> {
        let n = self.needle.len();
        if n == 0 {
            return (from <= haystack.len()).then_some(from);
        }
        if haystack.len() < n || from > haystack.len() - n {
            return None;
        }
        let last = n - 1;
        let last_byte = self.needle[last];
        if n == 1 {
            return haystack[from..]
                .iter()
                .position(|&b| b == last_byte)
                .map(|i| from + i);
        }
        let mut at = from;
        while at + n <= haystack.len() {
            let tail = haystack[at + last];
            if tail == last_byte && haystack[at..at + last] == self.needle[..last] {
                return Some(at);
            }
            at += self.shift[usize::from(tail)];
        }
        None
    }
}

/// A pattern with its matching rules (case, whole words), applied one line at a time.
#[derive(Debug)]
pub struct Matcher {
    finder: Finder,
    ignore_case: bool,
    whole_word: bool,
    folder: Folder,
}

impl Matcher {
    pub fn new(pattern: &str, ignore_case: bool, whole_word: bool) -> Self {
        let finder = if ignore_case {
            Finder::new(text::lowercase(pattern).as_bytes())
        } else {
            Finder::new(pattern.as_bytes())
        };
        Matcher {
            finder,
            ignore_case,
            whole_word,
            folder: Folder::default(),
        }
    }

    /// Calls `found` with the byte range of each match in `line`, leftmost first and not
    /// overlapping, until it returns false.
    pub fn each_match(&mut self, line: &[u8], mut found: impl FnMut(usize, usize) -> bool) {
        if self.ignore_case {
            self.folder.fold(line);
        }
        let haystack = if self.ignore_case {
            self.folder.folded()
        } else {
            line
        };
        let len = self.finder.len();
        let mut from = 0;
        while let Some(start) = self.finder.find(haystack, from) {
            let end = start + len;
            let (s, e) = if self.ignore_case {
                self.folder.original_range(start, end)
            } else {
                (start, end)
            };
            // Like grep -w, a candidate that is not a whole word does not end the search: a
            // later occurrence may be.
            if !self.whole_word || at_word_boundaries(line, s, e) {
                if !found(s, e) {
                    return;
                }
                from = end.max(start + 1);
            } else {
                from = start + 1;
            }
        }
    }

    pub fn is_match(&mut self, line: &[u8]) -> bool {
        let mut matched = false;
        self.each_match(line, |_, _| {
            matched = true;
            false
        });
        matched
    }
}

fn at_word_boundaries(line: &[u8], start: usize, end: usize) -> bool {
    let before = text::char_before(line, start).is_some_and(text::is_word_char);
    let after = text::char_after(line, end).is_some_and(text::is_word_char);
    !before && !after
}

/// Searches `input` for `pattern` and writes what grep would: the matching lines, each match
/// alone with `-o`, or only the number of matching lines with `-c` (which wins over `-o`).
/// Returns whether any line matched.
pub fn run(
    pattern: &str,
    options: Options,
    input: &[u8],
    out: &mut impl Write,
) -> io::Result<bool> {
    let mut matcher = Matcher::new(pattern, options.ignore_case, options.whole_word);
    let mut matching_lines: u64 = 0;
    for (index, line) in text::lines(input).enumerate() {
        let number = index + 1;
        if options.count || !options.only_matching {
            if matcher.is_match(line) {
                matching_lines += 1;
                if !options.count {
                    write_line(out, options.line_numbers, number, line)?;
                }
            }
            continue;
        }
        let mut any = false;
        let mut written = Ok(());
        matcher.each_match(line, |s, e| {
            any = true;
            // grep -o prints nothing for an empty match.
            if e > s {
                written = write_line(out, options.line_numbers, number, &line[s..e]);
            }
            written.is_ok()
        });
        written?;
        matching_lines += u64::from(any);
    }
    if options.count {
        writeln!(out, "{matching_lines}")?;
    }
    Ok(matching_lines > 0)
}

fn write_line(out: &mut impl Write, numbered: bool, number: usize, bytes: &[u8]) -> io::Result<()> {
    if numbered {
        write!(out, "{number}:")?;
    }
    out.write_all(bytes)?;
    out.write_all(b"\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn naive_find(haystack: &[u8], needle: &[u8], from: usize) -> Option<usize> {
        (from..=haystack.len().checked_sub(needle.len())?)
            .find(|&i| haystack[i..].starts_with(needle))
    }

    fn search(pattern: &str, options: Options, input: &str) -> (String, bool) {
        let mut out = Vec::new();
        let matched = run(pattern, options, input.as_bytes(), &mut out).unwrap();
        (String::from_utf8(out).unwrap(), matched)
    }

    fn matches(pattern: &str, ignore_case: bool, whole_word: bool, line: &str) -> Vec<String> {
        let mut matcher = Matcher::new(pattern, ignore_case, whole_word);
        let mut found = Vec::new();
        matcher.each_match(line.as_bytes(), |s, e| {
            found.push(line[s..e].to_string());
            true
        });
        found
    }

    #[test]
    fn horspool_agrees_with_naive_search() {
        let haystack = b"abracadabra abracadabra aaaaab the theme other";
        let needles: [&[u8]; 11] = [
            b"a", b"ab", b"abra", b"cad", b"aab", b"aaaab", b"the", b"her", b"zzz", b"", b"r",
        ];
        for needle in needles {
            let finder = Finder::new(needle);
            for from in 0..=haystack.len() + 1 {
                assert_eq!(
                    finder.find(haystack, from),
                    naive_find(haystack, needle, from),
                    "needle {needle:?} from {from}"
                );
            }
        }
    }

    #[test]
    fn horspool_handles_short_haystacks() {
        let finder = Finder::new(b"abc");
        assert_eq!(finder.find(b"", 0), None);
        assert_eq!(finder.find(b"ab", 0), None);
        assert_eq!(finder.find(b"abc", 0), Some(0));
        assert_eq!(finder.find(b"abc", 1), None);
        assert_eq!(Finder::new(b"").find(b"ab", 3), None);
    }

    #[test]
    fn matches_do_not_overlap() {
        assert_eq!(matches("aa", false, false, "aaaaa"), vec!["aa", "aa"]);
        assert_eq!(
            matches("the", false, false, "the theme"),
            vec!["the", "the"]
        );
    }

    #[test]
    fn ignore_case_folds_unicode_and_reports_original_text() {
        assert_eq!(
            matches("café", true, false, "CAFÉ and Café and café"),
            vec!["CAFÉ", "Café", "café"]
        );
        assert_eq!(matches("ZÜRICH", true, false, "in zürich"), vec!["zürich"]);
        assert_eq!(matches("k", true, false, "\u{212a}elvin"), vec!["\u{212a}"]);
        assert!(matches("café", false, false, "CAFÉ").is_empty());
    }

    #[test]
    fn whole_word_skips_embedded_occurrences() {
        assert_eq!(
            matches("the", false, true, "theme other the_x the, (the)"),
            vec!["the", "the"]
        );
        // Non-ASCII letters are word characters too.
        assert!(matches("caf", false, true, "café").is_empty());
        assert_eq!(matches("data", true, true, "metadata DATA"), vec!["DATA"]);
    }

    #[test]
    fn plain_search_prints_matching_lines() {
        let input = "the cat\na dog\nThe end\n";
        assert_eq!(
            search("the", Options::default(), input),
            ("the cat\n".into(), true)
        );
        let numbered = Options {
            ignore_case: true,
            line_numbers: true,
            ..Options::default()
        };
        assert_eq!(
            search("the", numbered, input),
            ("1:the cat\n3:The end\n".into(), true)
        );
    }

    #[test]
    fn only_matching_prints_each_match() {
        let options = Options {
            only_matching: true,
            line_numbers: true,
            ignore_case: true,
            ..Options::default()
        };
        let (out, matched) = search("ab", options, "xAbyab\nnone\nAB\n");
        assert!(matched);
        assert_eq!(out, "1:Ab\n1:ab\n3:AB\n");
    }

    #[test]
    fn count_counts_lines_and_wins_over_only_matching() {
        let options = Options {
            count: true,
            only_matching: true,
            ..Options::default()
        };
        assert_eq!(search("a", options, "aaa\nb\na\n"), ("2\n".into(), true));
        assert_eq!(search("zz", options, "aaa\n"), ("0\n".into(), false));
    }

    #[test]
    fn no_match_reports_false_and_prints_nothing() {
        assert_eq!(
            search("zebra", Options::default(), "a\nb\n"),
            (String::new(), false)
        );
        assert_eq!(search("a", Options::default(), ""), (String::new(), false));
    }

    #[test]
    fn empty_pattern_matches_every_line_but_prints_no_match() {
        assert_eq!(
            search("", Options::default(), "a\n\nb"),
            ("a\n\nb\n".into(), true)
        );
        let only = Options {
            only_matching: true,
            ..Options::default()
        };
        assert_eq!(search("", only, "a\nb\n"), (String::new(), true));
    }

    #[test]
    fn invalid_utf8_passes_through() {
        let mut out = Vec::new();
        let input = b"ok \xff line\nother\n";
        assert!(run("line", Options::default(), input, &mut out).unwrap());
        assert_eq!(out, b"ok \xff line\n");
        let mut out = Vec::new();
        let options = Options {
            ignore_case: true,
            whole_word: true,
            ..Options::default()
        };
        assert!(run("LINE", options, input, &mut out).unwrap());
        assert_eq!(out, b"ok \xff line\n");
    }
}
