//! Splitting input into lines and words, and the case folding that `search` and `stats` share.
//!
//! Input is handled as bytes: invalid UTF-8 passes through untouched wherever it can, and is
//! decoded lossily only where a word has to become a string (word frequencies).

/// Whitespace as `wc -w` sees it in the C locale. Rust's `u8::is_ascii_whitespace` leaves out
/// the vertical tab, so it is spelled out here.
pub fn is_space(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | b'\r' | 0x0b | 0x0c)
}

/// A word constituent for whole-word matching: a letter, a digit or `_`, as in grep.
pub fn is_word_char(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

/// The lines of `input` without their `\n`. A last line without `\n` still counts; empty input
/// has no lines.
pub fn lines(input: &[u8]) -> impl Iterator<Item = &[u8]> {
    let body = input.strip_suffix(b"\n").unwrap_or(input);
    // `split` yields one empty piece for empty input, which is not a line.
    let skip = usize::from(input.is_empty());
    body.split(|&b| b == b'\n').skip(skip)
}

/// The number of lines `lines` yields, without splitting.
pub fn line_count(input: &[u8]) -> usize {
    let newlines = input.iter().filter(|&&b| b == b'\n').count();
    newlines + usize::from(!input.is_empty() && !input.ends_with(b"\n"))
}

/// Whitespace-delimited tokens, the words `wc -w` counts.
pub fn tokens(input: &[u8]) -> impl Iterator<Item = &[u8]> {
    input.split(|&b| is_space(b)).filter(|t| !t.is_empty())
}

/// Simple Unicode lowercase, one char at a time (no context rules such as the final sigma), so
/// that a pattern and the text it is searched in fold the same way.
pub fn lowercase(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    push_lowercase(s, &mut out);
    out
}

fn push_lowercase(s: &str, out: &mut String) {
    if s.is_ascii() {
        out.extend(s.bytes().map(|b| char::from(b.to_ascii_lowercase())));
    } else {
        out.extend(s.chars().flat_map(char::to_lowercase));
    }
}

/// Writes into `out` the key a token is counted under in word frequencies: the token without
/// leading and trailing chars that are not letters or digits, lowercased. Returns false when
/// nothing is left (a token of punctuation only).
pub fn normalize_word(token: &[u8], out: &mut String) -> bool {
    out.clear();
    let text = String::from_utf8_lossy(token);
    let trimmed = text.trim_matches(|c: char| !c.is_alphanumeric());
    push_lowercase(trimmed, out);
    !out.is_empty()
}

fn is_continuation(b: u8) -> bool {
    b & 0xC0 == 0x80
}

/// The char that ends just before byte `pos`, or None at the start or after invalid UTF-8.
pub fn char_before(bytes: &[u8], pos: usize) -> Option<char> {
    let last = *bytes.get(pos.checked_sub(1)?)?;
    if last.is_ascii() {
        return Some(char::from(last));
    }
    let lowest = pos.saturating_sub(4);
    let start = (lowest..pos).rev().find(|&i| !is_continuation(bytes[i]))?;
    // Everything after `start` is a continuation byte, so a valid slice is exactly one char.
    std::str::from_utf8(&bytes[start..pos]).ok()?.chars().next()
}

/// The char that starts at byte `pos`, or None at the end or at invalid UTF-8.
pub fn char_after(bytes: &[u8], pos: usize) -> Option<char> {
    let first = *bytes.get(pos)?;
    let len = match first {
        0x00..=0x7F => return Some(char::from(first)),
        0xC0..=0xDF => 2,
        0xE0..=0xEF => 3,
        0xF0..=0xF7 => 4,
        _ => return None,
    };
    std::str::from_utf8(bytes.get(pos..pos + len)?)
        .ok()?
        .chars()
        .next()
}

/// Lowercases a line for case-insensitive search and remembers where each folded byte came
/// from: lowercasing can change a char's UTF-8 length ('İ' takes 2 bytes, its lowercase 3;
/// the Kelvin sign 3, its lowercase 'k' 1), so offsets in the folded line are not offsets in
/// the original one.
#[derive(Debug, Default)]
pub struct Folder {
    folded: Vec<u8>,
    /// For each folded byte, the offset in the original line of the char it came from. Left
    /// empty for ASCII lines, whose offsets do not move.
    origin: Vec<usize>,
    ascii: bool,
    original_len: usize,
}

impl Folder {
    /// Folds `line`; the result is in `folded` until the next call. Invalid UTF-8 bytes are
    /// copied as they are.
    pub fn fold(&mut self, line: &[u8]) {
        self.folded.clear();
        self.origin.clear();
        self.original_len = line.len();
        self.ascii = line.is_ascii();
        if self.ascii {
            self.folded.extend(line.iter().map(u8::to_ascii_lowercase));
            return;
        }
        let mut offset = 0;
        for chunk in line.utf8_chunks() {
            for (i, c) in chunk.valid().char_indices() {
                if c.is_ascii() {
                    self.folded.push(c.to_ascii_lowercase() as u8);
                    self.origin.push(offset + i);
                    continue;
                }
                for lower in c.to_lowercase() {
                    let mut buf = [0; 4];
                    let encoded = lower.encode_utf8(&mut buf).as_bytes();
                    self.folded.extend_from_slice(encoded);
                    self.origin
                        .extend(std::iter::repeat_n(offset + i, encoded.len()));
                }
            }
            offset += chunk.valid().len();
            for &b in chunk.invalid() {
                self.folded.push(b);
                self.origin.push(offset);
                offset += 1;
            }
        }
    }

    pub fn folded(&self) -> &[u8] {
        &self.folded
    }

    /// Maps the folded range `start..end` back to the original line, widened to whole chars.
    pub fn original_range(&self, start: usize, end: usize) -> (usize, usize) {
        if self.ascii {
            return (start, end);
        }
        let original_start = self.origin.get(start).copied().unwrap_or(self.original_len);
        if end <= start {
            return (original_start, original_start);
        }
        let last = self.origin[end - 1];
        let original_end = self.origin[end..]
            .iter()
            .copied()
            .find(|&o| o != last)
            .unwrap_or(self.original_len);
        (original_start, original_end)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn collect_lines(input: &[u8]) -> Vec<&[u8]> {
        lines(input).collect()
    }

    #[test]
    fn lines_handle_trailing_newline_and_empty_input() {
        assert!(collect_lines(b"").is_empty());
        assert_eq!(collect_lines(b"\n"), vec![&b""[..]]);
        assert_eq!(collect_lines(b"a\nb\n"), vec![&b"a"[..], b"b"]);
        assert_eq!(collect_lines(b"a\n\nb"), vec![&b"a"[..], b"", b"b"]);
        for input in [&b""[..], b"\n", b"a\nb\n", b"a\n\nb", b"x"] {
            assert_eq!(line_count(input), lines(input).count(), "{input:?}");
        }
    }

    #[test]
    fn tokens_split_on_all_c_locale_whitespace() {
        let got: Vec<&[u8]> = tokens(b"  one\ttwo\x0bthree\x0cfour\r\nfive  ").collect();
        assert_eq!(got, vec![&b"one"[..], b"two", b"three", b"four", b"five"]);
        assert_eq!(tokens(b" \n\t ").count(), 0);
    }

    #[test]
    fn normalize_word_trims_punctuation_and_lowercases() {
        let mut key = String::new();
        assert!(normalize_word(b"\"Hello,\"", &mut key));
        assert_eq!(key, "hello");
        assert!(normalize_word("CAFÉ!".as_bytes(), &mut key));
        assert_eq!(key, "café");
        assert!(normalize_word(b"(don't)", &mut key));
        assert_eq!(key, "don't");
        assert!(!normalize_word(b"--...", &mut key));
        assert!(key.is_empty());
    }

    #[test]
    fn normalize_word_decodes_invalid_utf8_lossily() {
        let mut key = String::new();
        assert!(normalize_word(b"ab\xffCD", &mut key));
        assert_eq!(key, "ab\u{fffd}cd");
        assert!(!normalize_word(b"\xff\xfe", &mut key));
    }

    #[test]
    fn lowercase_is_per_char() {
        assert_eq!(lowercase("ZÜRICH Naïve"), "zürich naïve");
        // Per char, so a final capital sigma becomes σ, not the contextual ς.
        assert_eq!(lowercase("ΟΔΟΣ"), "οδοσ");
    }

    #[test]
    fn chars_around_a_position() {
        let s = "aé€😀b".as_bytes();
        assert_eq!(char_before(s, 0), None);
        assert_eq!(char_before(s, 1), Some('a'));
        assert_eq!(char_before(s, 3), Some('é'));
        assert_eq!(char_before(s, 6), Some('€'));
        assert_eq!(char_before(s, 10), Some('😀'));
        assert_eq!(char_after(s, 1), Some('é'));
        assert_eq!(char_after(s, 6), Some('😀'));
        assert_eq!(char_after(s, 10), Some('b'));
        assert_eq!(char_after(s, 11), None);
        assert_eq!(char_before(b"a\xff", 2), None);
        assert_eq!(char_after(b"\xc3", 0), None);
        assert_eq!(char_after(b"\x80", 0), None);
    }

    #[test]
    fn folder_maps_ascii_lines_one_to_one() {
        let mut folder = Folder::default();
        folder.fold(b"Hello World");
        assert_eq!(folder.folded(), b"hello world");
        assert_eq!(folder.original_range(6, 11), (6, 11));
    }

    #[test]
    fn folder_maps_length_changing_chars_back() {
        let mut folder = Folder::default();
        // 'İ' (2 bytes) folds to "i\u{307}" (3 bytes); the Kelvin sign (3 bytes) folds to 'k'.
        let line = "xİy\u{212a}z".as_bytes();
        folder.fold(line);
        let folded = folder.folded();
        assert_eq!(folded, "xi\u{307}ykz".as_bytes());
        let y = folded.iter().position(|&b| b == b'y').unwrap();
        let (s, e) = folder.original_range(y, y + 2);
        assert_eq!(&line[s..e], "y\u{212a}".as_bytes());
        // A match covering only part of an expansion widens to the whole original char.
        let (s, e) = folder.original_range(1, 2);
        assert_eq!(&line[s..e], "İ".as_bytes());
        assert_eq!(folder.original_range(folded.len(), folded.len()), (8, 8));
    }

    #[test]
    fn folder_keeps_invalid_bytes() {
        let mut folder = Folder::default();
        let line = b"\xffCAF\xc3\x89\xfe";
        folder.fold(line);
        assert_eq!(folder.folded(), b"\xffcaf\xc3\xa9\xfe");
        assert_eq!(folder.original_range(1, 6), (1, 6));
        assert_eq!(folder.original_range(6, 7), (6, 7));
    }
}
