//! Token usage, read from non-streaming bodies and from stream events of the dialects that
//! name it `usage` (chat, responses, messages; Gemini's `usageMetadata` is [`GeminiUsage`]).
//!
//! Parsing is narrow: only `usage` objects are deserialized; every other field is skipped
//! by serde without building a tree.

use serde::Deserialize;

use crate::sse::SseEvent;

/// Input and output tokens of one request, as the upstream reported them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Usage {
    pub(crate) input: Option<u64>,
    pub(crate) output: Option<u64>,
}

impl Usage {
    pub(crate) fn total(&self) -> u64 {
        // Saturating: usage comes from the upstream and may be absurd.
        self.input
            .unwrap_or(0)
            .saturating_add(self.output.unwrap_or(0))
    }

    /// Later reports win field by field: Anthropic sends input tokens in `message_start`
    /// and the final cumulative output tokens in `message_delta`.
    fn merge(&mut self, later: Usage) {
        if later.input.is_some() {
            self.input = later.input;
        }
        if later.output.is_some() {
            self.output = later.output;
        }
    }
}

/// Both naming schemes: OpenAI chat (`prompt_tokens`/`completion_tokens`) and
/// Anthropic/Responses (`input_tokens`/`output_tokens`).
#[derive(Deserialize, Default, Debug, PartialEq, Eq)]
struct UsageFields {
    prompt_tokens: Option<u64>,
    completion_tokens: Option<u64>,
    input_tokens: Option<u64>,
    output_tokens: Option<u64>,
    /// Anthropic counts cached prompt tokens apart from `input_tokens`; OpenAI's prompt
    /// figures include them. Input is the whole prompt everywhere, so a request costs the
    /// same tokens whichever provider (or translation) served it.
    cache_read_input_tokens: Option<u64>,
    cache_creation_input_tokens: Option<u64>,
}

impl From<UsageFields> for Usage {
    fn from(u: UsageFields) -> Usage {
        let anthropic_input = u.input_tokens.map(|n| {
            n.saturating_add(u.cache_read_input_tokens.unwrap_or(0))
                .saturating_add(u.cache_creation_input_tokens.unwrap_or(0))
        });
        Usage {
            input: u.prompt_tokens.or(anthropic_input),
            output: u.completion_tokens.or(u.output_tokens),
        }
    }
}

#[derive(Deserialize)]
struct WithUsage {
    usage: Option<UsageFields>,
}

/// A stream event: usage at the top (chat usage chunk, `message_delta`), or inside
/// `message` (`message_start`) or `response` (`response.completed`).
#[derive(Deserialize)]
struct EventUsage {
    usage: Option<UsageFields>,
    message: Option<WithUsage>,
    response: Option<WithUsage>,
}

/// Usage of a complete non-streaming response body; `None` if absent or unreadable.
pub(crate) fn from_body(body: &[u8]) -> Option<Usage> {
    match from_body_tail(body) {
        Tail::Found(usage) => usage,
        Tail::Absent => None,
        Tail::Unproven => {
            let parsed: WithUsage = serde_json::from_slice(body).ok()?;
            parsed.usage.map(Usage::from)
        }
    }
}

enum Tail {
    Found(Option<Usage>),
    Absent,
    Unproven,
}

/// The three dialects that name it put `usage` among the last members of the body, after the
/// content that makes up most of its bytes. So the last `"usage"` key is read where it stands, and
/// only what follows it is checked: when that closes the object holding the key and nothing
/// but whitespace follows, the object was the root. Anything else (a nested `usage`, a key
/// whose quote is escaped, no literal key in a body with `\u` escapes, a long tail) is left
/// to the full parse. Like that parse, the read needs the body to be JSON only as far as it
/// reads it: the members before `usage` are not checked.
fn from_body_tail(body: &[u8]) -> Tail {
    /// Past this many bytes after the usage object, a full parse is as cheap as the check.
    const MAX_TAIL: usize = 4096;
    // Forward and vectorized (memchr's reverse search is not): the last match is the one.
    let Some(at) = usage_finder().find_iter(body).last() else {
        // A key may spell its name in escapes (`"\u0075sage"`): only a body without any
        // `\u` surely has no usage key.
        return match memchr::memmem::find(body, b"\\u") {
            Some(_) => Tail::Unproven,
            None => Tail::Absent,
        };
    };
    // In `\\"usage"` the quote is escaped: a string holding `"usage` ends there, not a key.
    let backslashes = body[..at].iter().rev().take_while(|&&b| b == b'\\').count();
    if backslashes % 2 == 1 {
        return Tail::Unproven;
    }
    let after_key = skip_ws(body, at + USAGE_KEY.len());
    if body.get(after_key) != Some(&b':') {
        return Tail::Unproven;
    }
    let value = &body[after_key + 1..];
    let (usage, len) = match scan_usage(value) {
        Some((fields, len)) => (Some(fields), len),
        None => {
            let mut values =
                serde_json::Deserializer::from_slice(value).into_iter::<Option<UsageFields>>();
            let Some(Ok(usage)) = values.next() else {
                return Tail::Unproven;
            };
            (usage, values.byte_offset())
        }
    };
    let tail = &value[len..];
    if tail.len() > MAX_TAIL || !closes_root(tail) {
        return Tail::Unproven;
    }
    Tail::Found(usage.map(Usage::from))
}

/// The tail read alone, for the fuzz target (`crate::fuzz::usage`): `Some` where it decided
/// without the full parse.
#[cfg(test)]
pub(crate) fn tail_read(body: &[u8]) -> Option<Option<Usage>> {
    match from_body_tail(body) {
        Tail::Found(u) => Some(u),
        Tail::Absent | Tail::Unproven => None,
    }
}

/// [`scan_usage`]'s answer for the fuzz target: the six fields, in declaration order, and the
/// bytes read.
#[cfg(test)]
pub(crate) fn scan_fields(value: &[u8]) -> Option<([Option<u64>; 6], usize)> {
    scan_usage(value).map(|(u, n)| {
        let f = [
            u.prompt_tokens,
            u.completion_tokens,
            u.input_tokens,
            u.output_tokens,
            u.cache_read_input_tokens,
            u.cache_creation_input_tokens,
        ];
        (f, n)
    })
}

/// How deep [`scan_usage`] follows objects and arrays inside the usage object: the dialects
/// nest one level (`prompt_tokens_details`); deeper is left to serde.
const SCAN_DEPTH: u8 = 4;

/// The usage object at the start of `value` (after whitespace) read by hand, with the bytes
/// it took: serde's derive, key by key through `parse_str` and the `*_details` objects through
/// `ignore_value`, costs half as much again (callgrind, chat-nonstream-minimal). It reads only
/// the compact shapes upstreams send (no whitespace inside; keys and strings without escapes,
/// control or non-ASCII bytes; unsigned integers, `null`, booleans; objects and arrays of
/// those) and answers `None` for anything else, which serde then decides. Where it answers,
/// it agrees with serde's `Option<UsageFields>` on the fields and the length, and it refuses
/// what serde would refuse (a known key twice, a leading zero, a fraction).
fn scan_usage(value: &[u8]) -> Option<(UsageFields, usize)> {
    let mut s = Scan {
        bytes: value,
        at: 0,
    };
    let mut fields = UsageFields::default();
    // The derive refuses a known key seen twice, even after a `null`.
    let mut seen = 0u8;
    s.ws();
    s.object(|s, key| {
        let (bit, field) = match key {
            b"prompt_tokens" => (1, &mut fields.prompt_tokens),
            b"completion_tokens" => (2, &mut fields.completion_tokens),
            b"input_tokens" => (4, &mut fields.input_tokens),
            b"output_tokens" => (8, &mut fields.output_tokens),
            b"cache_read_input_tokens" => (16, &mut fields.cache_read_input_tokens),
            b"cache_creation_input_tokens" => (32, &mut fields.cache_creation_input_tokens),
            _ => return s.skip(SCAN_DEPTH),
        };
        if seen & bit != 0 {
            return None;
        }
        seen |= bit;
        *field = if s.peek()? == b'n' {
            s.literal(b"null")?;
            None
        } else {
            Some(s.uint()?)
        };
        Some(())
    })?;
    Some((fields, s.at))
}

/// A cursor over JSON for [`scan_usage`]; every method answers `None` where serde must decide.
struct Scan<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl<'a> Scan<'a> {
    fn peek(&self) -> Option<u8> {
        self.bytes.get(self.at).copied()
    }

    fn ws(&mut self) {
        self.at = skip_ws(self.bytes, self.at);
    }

    fn eat(&mut self, b: u8) -> Option<()> {
        (self.peek()? == b).then(|| self.at += 1)
    }

    fn literal(&mut self, word: &[u8]) -> Option<()> {
        self.bytes[self.at..]
            .starts_with(word)
            .then(|| self.at += word.len())
    }

    /// A string without escapes, control or non-ASCII bytes: its contents. Eight bytes at a
    /// time: the keys are most of the usage object's bytes.
    fn plain_str(&mut self) -> Option<&'a [u8]> {
        self.eat(b'"')?;
        let start = self.at;
        let mut at = start;
        let end = loop {
            match self.bytes.get(at..at + 8) {
                Some(word) => {
                    let word = u64::from_le_bytes(word.try_into().expect("eight bytes"));
                    match first_special(word) {
                        Some(i) => break at + i,
                        None => at += 8,
                    }
                }
                None => break at + self.bytes[at..].iter().position(|&b| is_special(b))?,
            }
        };
        if self.bytes[end] != b'"' {
            return None;
        }
        self.at = end + 1;
        Some(&self.bytes[start..end])
    }

    /// An unsigned integer that fits a u64. What follows is the caller's to check: a
    /// fraction or exponent then fails as the separator it is not.
    fn uint(&mut self) -> Option<u64> {
        let start = self.at;
        let mut n = 0u64;
        while let Some(d @ b'0'..=b'9') = self.peek() {
            n = n.checked_mul(10)?.checked_add(u64::from(d - b'0'))?;
            self.at += 1;
        }
        let digits = &self.bytes[start..self.at];
        // JSON has no leading zeros (serde refuses `01`).
        match digits {
            [] | [b'0', _, ..] => None,
            _ => Some(n),
        }
    }

    /// A compact object's members, each value read by `member` from after the colon.
    fn object(&mut self, mut member: impl FnMut(&mut Self, &'a [u8]) -> Option<()>) -> Option<()> {
        self.eat(b'{')?;
        if self.eat(b'}').is_some() {
            return Some(());
        }
        loop {
            let key = self.plain_str()?;
            self.eat(b':')?;
            member(self, key)?;
            match self.peek()? {
                b',' => self.at += 1,
                b'}' => {
                    self.at += 1;
                    return Some(());
                }
                _ => return None,
            }
        }
    }

    /// The value of a member the usage does not keep, checked as serde checks what it ignores.
    fn skip(&mut self, depth: u8) -> Option<()> {
        match self.peek()? {
            b'"' => self.plain_str().map(drop),
            b'0'..=b'9' => self.uint().map(drop),
            b'n' => self.literal(b"null"),
            b't' => self.literal(b"true"),
            b'f' => self.literal(b"false"),
            b'{' if depth > 0 => self.object(|s, _| s.skip(depth - 1)),
            b'[' if depth > 0 => {
                self.at += 1;
                if self.eat(b']').is_some() {
                    return Some(());
                }
                loop {
                    self.skip(depth - 1)?;
                    match self.peek()? {
                        b',' => self.at += 1,
                        b']' => {
                            self.at += 1;
                            return Some(());
                        }
                        _ => return None,
                    }
                }
            }
            _ => None,
        }
    }
}

/// A byte that ends a plain string, or makes it not plain: a quote, a backslash, a control
/// byte or a non-ASCII one.
fn is_special(b: u8) -> bool {
    b == b'"' || b == b'\\' || !(0x20..0x80).contains(&b)
}

/// The index of the first [`is_special`] byte among the eight of `word` (little-endian), by
/// the zero-byte trick: a lane's high bit is set where its byte is special, and wrongly set
/// only in lanes above one that is, so the lowest set lane is the answer.
fn first_special(word: u64) -> Option<usize> {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGH: u64 = 0x8080_8080_8080_8080;
    let zero_at = |x: u64| x.wrapping_sub(ONES) & !x;
    let quote = zero_at(word ^ (ONES * u64::from(b'"')));
    let backslash = zero_at(word ^ (ONES * u64::from(b'\\')));
    // Below 0x20 borrows into the high bit; from 0x80 has it already.
    let control_or_high = word.wrapping_sub(ONES * 0x20) | word;
    let special = (quote | backslash | control_or_high) & HIGH;
    (special != 0).then(|| special.trailing_zeros() as usize / 8)
}

/// Whether `tail`, the bytes after a member's value, is the rest of the object holding that
/// member (more members, then its closing brace) and then ends, whitespace aside: in JSON,
/// the object whose closing brace ends the text is the root. The members are checked as the
/// full parse checks them, so a body broken after `usage` is refused by both; where that
/// would take long to say (nesting past [`TAIL_DEPTH`], half a surrogate pair, a key with
/// escapes, which could be a second `usage`), the answer is no and the full parse decides.
fn closes_root(tail: &[u8]) -> bool {
    let mut j = Json { bytes: tail, at: 0 };
    let mut members = || -> Option<()> {
        loop {
            j.ws();
            match j.bump()? {
                b'}' => {
                    j.ws();
                    return (j.at == tail.len()).then_some(());
                }
                b',' => {
                    j.ws();
                    if j.string()? {
                        return None;
                    }
                    j.ws();
                    j.eat(b':')?;
                    j.ws();
                    j.value(TAIL_DEPTH)?;
                }
                _ => return None,
            }
        }
    };
    members().is_some()
}

/// How deep [`closes_root`] follows the values after `usage` (serde's limit is 128).
const TAIL_DEPTH: u8 = 16;

/// A cursor that checks JSON for [`closes_root`]; `None` where serde might not accept it.
struct Json<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl Json<'_> {
    fn ws(&mut self) {
        self.at = skip_ws(self.bytes, self.at);
    }

    fn peek(&self) -> Option<u8> {
        self.bytes.get(self.at).copied()
    }

    fn bump(&mut self) -> Option<u8> {
        let b = self.peek()?;
        self.at += 1;
        Some(b)
    }

    fn eat(&mut self, b: u8) -> Option<()> {
        (self.bump()? == b).then_some(())
    }

    fn value(&mut self, depth: u8) -> Option<()> {
        match self.peek()? {
            b'"' => self.string().map(drop),
            b'{' | b'[' if depth > 0 => {
                let close = if self.bump()? == b'{' { b'}' } else { b']' };
                self.ws();
                if self.peek()? == close {
                    self.at += 1;
                    return Some(());
                }
                loop {
                    if close == b'}' {
                        self.string()?;
                        self.ws();
                        self.eat(b':')?;
                        self.ws();
                    }
                    self.value(depth - 1)?;
                    self.ws();
                    match self.bump()? {
                        b',' => self.ws(),
                        b if b == close => return Some(()),
                        _ => return None,
                    }
                }
            }
            b't' => self.word(b"true"),
            b'f' => self.word(b"false"),
            b'n' => self.word(b"null"),
            b'-' | b'0'..=b'9' => self.number(),
            _ => None,
        }
    }

    fn word(&mut self, w: &[u8]) -> Option<()> {
        self.bytes[self.at..]
            .starts_with(w)
            .then(|| self.at += w.len())
    }

    fn digits(&mut self) -> usize {
        let start = self.at;
        while self.peek().is_some_and(|b| b.is_ascii_digit()) {
            self.at += 1;
        }
        self.at - start
    }

    /// JSON's number grammar; what follows is the caller's to check.
    fn number(&mut self) -> Option<()> {
        if self.peek()? == b'-' {
            self.at += 1;
        }
        match self.bump()? {
            b'0' => {}
            b'1'..=b'9' => drop(self.digits()),
            _ => return None,
        }
        if self.peek() == Some(b'.') {
            self.at += 1;
            (self.digits() > 0).then_some(())?;
        }
        if let Some(b'e' | b'E') = self.peek() {
            self.at += 1;
            if let Some(b'+' | b'-') = self.peek() {
                self.at += 1;
            }
            (self.digits() > 0).then_some(())?;
        }
        Some(())
    }

    /// A string: UTF-8, no control bytes, valid escapes (a surrogate only in a pair).
    /// Whether it had escapes.
    fn string(&mut self) -> Option<bool> {
        self.eat(b'"')?;
        let start = self.at;
        let (mut ascii, mut escaped) = (true, false);
        loop {
            match self.bump()? {
                b'"' => break,
                b'\\' => {
                    escaped = true;
                    match self.bump()? {
                        b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't' => {}
                        b'u' => match self.hex4()? {
                            0xD800..=0xDBFF => {
                                self.eat(b'\\')?;
                                self.eat(b'u')?;
                                (0xDC00..=0xDFFF).contains(&self.hex4()?).then_some(())?;
                            }
                            0xDC00..=0xDFFF => return None,
                            _ => {}
                        },
                        _ => return None,
                    }
                }
                0..=0x1f => return None,
                0x80.. => ascii = false,
                _ => {}
            }
        }
        (ascii || std::str::from_utf8(&self.bytes[start..self.at - 1]).is_ok()).then_some(escaped)
    }

    fn hex4(&mut self) -> Option<u16> {
        let digits = self.bytes.get(self.at..self.at + 4)?;
        let mut n = 0u16;
        for &d in digits {
            n = n * 16 + (d as char).to_digit(16)? as u16;
        }
        self.at += 4;
        Some(n)
    }
}

fn skip_ws(bytes: &[u8], mut at: usize) -> usize {
    while bytes.get(at).is_some_and(|&b| is_json_ws(b)) {
        at += 1;
    }
    at
}

/// JSON's whitespace (RFC 8259): not form feed, unlike `u8::is_ascii_whitespace`.
fn is_json_ws(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | b'\r')
}

/// Bytes of request JSON per token in estimates: English prose and code run at about four
/// characters per token in every current tokenizer, JSON punctuation included.
const BYTES_PER_TOKEN: usize = 4;

/// The estimated prompt tokens of a request body of `len` bytes.
pub(crate) fn estimate_prompt(len: usize) -> u64 {
    len.div_ceil(BYTES_PER_TOKEN) as u64
}

/// Gemini's usage object: cumulative in every chunk that has it.
#[derive(Deserialize, Debug, Default)]
#[serde(rename_all = "camelCase")]
struct GeminiUsage {
    prompt_token_count: Option<u64>,
    tool_use_prompt_token_count: Option<u64>,
    candidates_token_count: Option<u64>,
    thoughts_token_count: Option<u64>,
}

impl From<GeminiUsage> for Usage {
    fn from(u: GeminiUsage) -> Usage {
        // The prompt count includes cached tokens; thought tokens are billed as output.
        let output = match (u.candidates_token_count, u.thoughts_token_count) {
            (None, None) => None,
            (c, t) => Some(c.unwrap_or(0).saturating_add(t.unwrap_or(0))),
        };
        Usage {
            input: u
                .prompt_token_count
                .map(|p| p.saturating_add(u.tool_use_prompt_token_count.unwrap_or(0))),
            output,
        }
    }
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct WithGeminiUsage {
    usage_metadata: Option<GeminiUsage>,
}

/// Usage of a complete Gemini answer: an object, or (`streamGenerateContent` without
/// `alt=sse`) an array of chunks, whose last report counts.
pub(crate) fn from_gemini_body(body: &[u8]) -> Option<Usage> {
    if body.trim_ascii_start().first() == Some(&b'[') {
        let chunks: Vec<WithGeminiUsage> = serde_json::from_slice(body).ok()?;
        return chunks
            .into_iter()
            .rev()
            .find_map(|c| c.usage_metadata)
            .map(Usage::from);
    }
    let v: WithGeminiUsage = serde_json::from_slice(body).ok()?;
    v.usage_metadata.map(Usage::from)
}

/// Accumulates usage over the events of one stream.
#[derive(Debug, Default)]
pub(crate) struct StreamUsage {
    usage: Usage,
    /// Events seen: the estimate of the output (one token each) when no usage comes.
    events: u64,
    /// A Gemini stream (`usageMetadata`, not `usage`).
    gemini: bool,
    /// The upstream sent an error event (the client gets it as it is; the log says so).
    error_event: bool,
}

impl StreamUsage {
    pub(crate) fn new(gemini: bool) -> StreamUsage {
        StreamUsage {
            gemini,
            ..StreamUsage::default()
        }
    }

    pub(crate) fn observe(&mut self, event: &SseEvent<'_>) {
        self.events += 1;
        self.error_event |= is_error_event(event);
        if self.gemini {
            if gemini_finder().find(event.data).is_some() {
                if let Ok(v) = serde_json::from_slice::<WithGeminiUsage>(event.data) {
                    if let Some(u) = v.usage_metadata {
                        self.usage.merge(u.into());
                    }
                }
            }
            return;
        }
        // Most events are text deltas: skip them without parsing.
        if !contains_usage(event.data) {
            return;
        }
        let Ok(ev) = serde_json::from_slice::<EventUsage>(event.data) else {
            return;
        };
        for u in [
            ev.usage,
            ev.message.and_then(|m| m.usage),
            ev.response.and_then(|r| r.usage),
        ]
        .into_iter()
        .flatten()
        {
            self.usage.merge(u.into());
        }
    }

    pub(crate) fn usage(&self) -> Usage {
        self.usage
    }

    pub(crate) fn events(&self) -> u64 {
        self.events
    }

    /// Whether the upstream sent an error event in the stream.
    pub(crate) fn error_event(&self) -> bool {
        self.error_event
    }
}

/// An in-stream error in any dialect: Anthropic's and Responses' `event: error`, Responses'
/// `response.failed`, or a data line that is an error object (chat, Gemini).
fn is_error_event(event: &SseEvent<'_>) -> bool {
    if matches!(event.event, b"error" | b"response.failed") {
        return true;
    }
    let Some(rest) = event.data.strip_prefix(b"{") else {
        return false;
    };
    let at = skip_ws(rest, 0);
    rest[at..].starts_with(b"\"error\"")
}

const USAGE_KEY: &[u8] = b"\"usage\"";

/// Built once: a finder's set-up costs as much as searching a short event.
fn usage_finder() -> &'static memchr::memmem::Finder<'static> {
    static FINDER: std::sync::LazyLock<memchr::memmem::Finder<'static>> =
        std::sync::LazyLock::new(|| memchr::memmem::Finder::new(USAGE_KEY));
    &FINDER
}

fn gemini_finder() -> &'static memchr::memmem::Finder<'static> {
    static FINDER: std::sync::LazyLock<memchr::memmem::Finder<'static>> =
        std::sync::LazyLock::new(|| memchr::memmem::Finder::new(b"\"usageMetadata\""));
    &FINDER
}

fn contains_usage(haystack: &[u8]) -> bool {
    usage_finder().find(haystack).is_some()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sse::SseParser;

    fn stream_usage(stream: &str) -> Usage {
        let mut p = SseParser::new();
        let mut u = StreamUsage::default();
        p.feed(stream.as_bytes(), |e| u.observe(&e));
        u.usage()
    }

    #[test]
    fn chat_body() {
        let b = br#"{"id":"x","choices":[{"message":{"content":"usage"}}],"usage":{"prompt_tokens":12,"completion_tokens":5,"total_tokens":17}}"#;
        assert_eq!(
            from_body(b),
            Some(Usage {
                input: Some(12),
                output: Some(5)
            })
        );
    }

    #[test]
    fn anthropic_and_responses_body() {
        let b = br#"{"type":"message","usage":{"input_tokens":3,"output_tokens":9}}"#;
        assert_eq!(
            from_body(b),
            Some(Usage {
                input: Some(3),
                output: Some(9)
            })
        );
    }

    #[test]
    fn anthropic_cache_tokens_count_as_input() {
        let b = br#"{"usage":{"input_tokens":3,"cache_read_input_tokens":10,"cache_creation_input_tokens":2,"output_tokens":9}}"#;
        assert_eq!(
            from_body(b),
            Some(Usage {
                input: Some(15),
                output: Some(9)
            })
        );
    }

    #[test]
    fn gemini_usage() {
        let body = br#"{"candidates":[],"usageMetadata":{"promptTokenCount":10,"candidatesTokenCount":3,"thoughtsTokenCount":2,"cachedContentTokenCount":4,"totalTokenCount":15}}"#;
        let want = Usage {
            input: Some(10),
            output: Some(5),
        };
        assert_eq!(from_gemini_body(body), Some(want));
        let array = br#"[{"usageMetadata":{"promptTokenCount":10}},
,{"usageMetadata":{"promptTokenCount":10,"candidatesTokenCount":5}}]"#;
        assert_eq!(
            from_gemini_body(&array[..]),
            None,
            "not JSON: a stray comma"
        );
        let array = br#"[{"usageMetadata":{"promptTokenCount":10}}
,{"usageMetadata":{"promptTokenCount":10,"candidatesTokenCount":5}}]"#;
        assert_eq!(from_gemini_body(array), Some(want));
        let mut s = StreamUsage::new(true);
        let mut p = SseParser::new();
        p.feed(
            b"data: {\"usageMetadata\":{\"promptTokenCount\":10}}\r\n\r\ndata: {\"usageMetadata\":{\"promptTokenCount\":10,\"candidatesTokenCount\":5}}\r\n\r\n",
            |ev| s.observe(&ev),
        );
        assert_eq!(s.usage(), want);
    }

    #[test]
    fn error_events_of_every_dialect() {
        let ev = |event: &'static [u8], data: &'static [u8]| SseEvent { event, data };
        for e in [
            ev(
                b"error",
                br#"{"type":"error","error":{"type":"overloaded_error"}}"#,
            ),
            ev(b"response.failed", br#"{"type":"response.failed"}"#),
            ev(b"", br#"{"error":{"message":"boom"}}"#),
            ev(b"", b"{ \n \"error\": {\"code\": 500}}"),
        ] {
            let mut u = StreamUsage::new(false);
            u.observe(&e);
            assert!(u.error_event(), "{e:?}");
        }
        let mut u = StreamUsage::new(true);
        for e in [
            ev(
                b"",
                br#"{"candidates":[{"content":{"parts":[{"text":"\"error\""}]}}]}"#,
            ),
            ev(
                b"content_block_delta",
                br#"{"type":"content_block_delta","delta":{"text":"error"}}"#,
            ),
            ev(b"", b"[DONE]"),
        ] {
            u.observe(&e);
        }
        assert!(!u.error_event());
    }

    #[test]
    fn total_saturates() {
        let u = Usage {
            input: Some(u64::MAX),
            output: Some(5),
        };
        assert_eq!(u.total(), u64::MAX);
    }

    #[test]
    fn body_without_usage() {
        assert_eq!(from_body(br#"{"id":"x"}"#), None);
        assert_eq!(from_body(b"not json \"usage\""), None);
    }

    /// The tail read must agree with the full parse on every body, proven or not.
    #[test]
    fn tail_read_agrees_with_the_full_parse() {
        let full = |b: &[u8]| {
            serde_json::from_slice::<WithUsage>(b)
                .ok()
                .and_then(|p| p.usage.map(Usage::from))
        };
        // Where the dialects put usage: read from the tail, no full parse.
        let tail_read: Vec<String> = vec![
            // chat: usage, then two more members
            r#"{"id":"c","choices":[{"message":{"content":"the usage"}}],"usage":{"prompt_tokens":9,"completion_tokens":2,"prompt_tokens_details":{"cached_tokens":0}},"service_tier":"default","system_fingerprint":"fp"}"#.into(),
            // Anthropic: usage last
            r#"{"id":"m","content":[{"type":"text","text":"hi"}],"stop_reason":"end_turn","usage":{"input_tokens":3,"output_tokens":4}}"#.into(),
            // pretty-printed
            "{\n  \"usage\" : {\"input_tokens\": 1, \"output_tokens\": 2} ,\n  \"user\": null\n}\n".into(),
            // brackets and quotes inside the members after usage
            r#"{"usage":{"prompt_tokens":4},"note":"}\"]{","list":[1,{"a":"]"}],"n":null}"#.into(),
            // the dialects' usage objects as upstreams send them (the mock's, OpenAI's)
            r#"{"id":"c","object":"chat.completion","choices":[],"usage":{"prompt_tokens":19,"completion_tokens":10,"total_tokens":29,"prompt_tokens_details":{"cached_tokens":0,"audio_tokens":0},"completion_tokens_details":{"reasoning_tokens":0,"audio_tokens":0,"accepted_prediction_tokens":0,"rejected_prediction_tokens":0}},"service_tier":"default","system_fingerprint":"fp_mock"}"#.into(),
            r#"{"id":"m","type":"message","content":[],"stop_reason":"end_turn","stop_sequence":null,"usage":{"input_tokens":25,"cache_creation_input_tokens":3,"cache_read_input_tokens":100,"output_tokens":7,"service_tier":"standard","server_tool_use":null,"cache_creation":{"ephemeral_5m_input_tokens":0,"ephemeral_1h_input_tokens":0}}}"#.into(),
            r#"{"id":"r","object":"response","status":"completed","output":[],"usage":{"input_tokens":5,"input_tokens_details":{"cached_tokens":2},"output_tokens":6,"output_tokens_details":{"reasoning_tokens":4},"total_tokens":11},"user":null,"metadata":{}}"#.into(),
            // unusual whitespace everywhere JSON allows it
            "{\"usage\"\t:\r\n{ \"prompt_tokens\" :\t1 ,\n\"completion_tokens\":\r2\t,\"details\" : { \"a\" : [ 1 , true , false , null , \"s\" , [ ] , { } ] } }\n}\r\n".into(),
            // nulls, missing and empty
            r#"{"usage":{"prompt_tokens":null,"completion_tokens":3,"prompt_tokens_details":null}}"#.into(),
            r#"{"usage":{"output_tokens":0}}"#.into(),
            r#"{"usage":{}}"#.into(),
            r#"{"usage":{"total_tokens":18446744073709551615,"input_tokens":18446744073709551615,"cache_read_input_tokens":1}}"#.into(),
            // escapes and non-ASCII in the members around usage (serde reads the usage)
            r#"{"content":"caf\u00e9 \"usage\" \\","usage":{"prompt_tokens":1,"x":"\"\\"},"n":"é"}"#.into(),
            r#"{"usage":{"prompt_tokens":1,"note":"déjà","prompt\u005ftokens_x":2}}"#.into(),
        ];
        let long = "x".repeat(5000);
        // And where they do not, or not provably.
        let others: Vec<String> = vec![
            // Responses: a nested `usage` key after the root's (in metadata)
            r#"{"output":[],"usage":{"input_tokens":5,"output_tokens":6},"metadata":{"usage":"theirs"}}"#.into(),
            // usage at the end of a nested object, and a root object closed by a bracket
            r#"{"a":[{"usage":{"prompt_tokens":1}}]}"#.into(),
            r#"{"usage":{"prompt_tokens":1}]"#.into(),
            // only a nested usage
            r#"{"choices":[{"usage":{"prompt_tokens":1}}],"id":"x"}"#.into(),
            r#"{"choices":[],"meta":{"usage":{"prompt_tokens":1}}}"#.into(),
            // usage as a string value, and inside strings
            r#"{"content":"usage","usage":{"prompt_tokens":8}}"#.into(),
            r#"{"content":"say \"usage\": {}"}"#.into(),
            r#"{"usage":{"prompt_tokens":2},"content":"x\"usage\":{\"prompt_tokens\":99}}"}"#.into(),
            // a key that ends in an escaped quote before usage
            r#"{"a\"usage":{"prompt_tokens":7},"usage":{"prompt_tokens":1}}"#.into(),
            r#"{"a\"usage":{"prompt_tokens":7}}"#.into(),
            // usage first, then a long content: the full parse reads it
            format!(r#"{{"usage":{{"output_tokens":3}},"content":"{long}"}}"#),
            // null, wrong types, a root array, a truncated body
            r#"{"id":"x","usage":null}"#.into(),
            r#"{"usage":5}"#.into(),
            r#"{"usage":{"prompt_tokens":"many"}}"#.into(),
            r#"[{"usage":{"prompt_tokens":1}}]"#.into(),
            r#"{"usage":{"prompt_tokens":1},"id":"#.into(),
            r#"{"usage":{"prompt_tokens":1}}}"#.into(),
            // what the derive refuses: a key twice (even after null), numbers u64 cannot hold
            r#"{"usage":{"prompt_tokens":1,"prompt_tokens":2}}"#.into(),
            r#"{"usage":{"prompt_tokens":null,"prompt_tokens":2}}"#.into(),
            r#"{"usage":{"prompt_tokens":01}}"#.into(),
            r#"{"usage":{"prompt_tokens":1.5}}"#.into(),
            r#"{"usage":{"prompt_tokens":-1}}"#.into(),
            r#"{"usage":{"prompt_tokens":18446744073709551616}}"#.into(),
            r#"{"usage":{"prompt_tokens":true}}"#.into(),
            r#"{"usage":{"completion_tokens":1e0}}"#.into(),
            // broken JSON inside the usage object
            r#"{"usage":{"prompt_tokens":1,}}"#.into(),
            r#"{"usage":{"prompt_tokens":1 "completion_tokens":2}}"#.into(),
            r#"{"usage":{"details":{"a":nul}}}"#.into(),
            r#"{"usage":{"details":[1,]}}"#.into(),
            r#"{"usage":{"details":"a"#.into(),
            r#"{"usage":{"prompt_tokens":1"#.into(),
        ];
        for b in tail_read.iter().chain(&others) {
            assert_eq!(from_body(b.as_bytes()), full(b.as_bytes()), "body: {b}");
        }
        for b in &tail_read {
            assert!(
                matches!(from_body_tail(b.as_bytes()), Tail::Found(Some(_))),
                "not read from the tail: {b}"
            );
        }
    }

    /// Where the hand scan answers, serde's `Option<UsageFields>` answers the same, with the
    /// same length; the dialects' usage objects are all scanned by hand.
    #[test]
    fn scan_agrees_with_serde() {
        let serde_read = |v: &[u8]| {
            let mut values =
                serde_json::Deserializer::from_slice(v).into_iter::<Option<UsageFields>>();
            match values.next() {
                Some(Ok(u)) => Some((u, values.byte_offset())),
                _ => None,
            }
        };
        let scanned = [
            r#"{"prompt_tokens":19,"completion_tokens":10,"total_tokens":29,"prompt_tokens_details":{"cached_tokens":0,"audio_tokens":0},"completion_tokens_details":{"reasoning_tokens":0,"audio_tokens":0,"accepted_prediction_tokens":0,"rejected_prediction_tokens":0}}"#,
            r#"{"input_tokens":25,"cache_creation_input_tokens":0,"cache_read_input_tokens":0,"output_tokens":7}"#,
            r#"{"input_tokens":5,"input_tokens_details":{"cached_tokens":2},"output_tokens":6,"output_tokens_details":{"reasoning_tokens":4},"total_tokens":11}"#,
            " \n{} ,",
            r#"{"prompt_tokens":null,"x":[[],{},[true,false,null,"s",0]]}"#,
            r#"{"prompt_tokens":0}   "#,
            r#"{"prompt_tokens":18446744073709551615}"#,
        ];
        let refused = [
            // whitespace inside: upstreams send compact JSON
            "{ }",
            r#"{"prompt_tokens":0 }"#,
            r#"{"prompt_tokens": 0}"#,
            "null",
            "[1,2,3,4,5,6]",
            r#"{"prompt_tokens":1,"prompt_tokens":1}"#,
            r#"{"prompt_tokens":00}"#,
            r#"{"prompt_tokens":-0}"#,
            r#"{"prompt_tokens":1e3}"#,
            r#"{"prompt_tokens":1.0}"#,
            r#"{"prompt_tokens":18446744073709551616}"#,
            r#"{"prompt_tokens":"1"}"#,
            r#"{"prompt\u005ftokens":1}"#,
            r#"{"x":"\""}"#,
            r#"{"x":"é"}"#,
            "{\"x\":\"\t\"}",
            r#"{"x":nullx}"#,
            r#"{"x":1.5}"#,
            r#"{"x":[[[[[1]]]]]}"#,
            r#"{"x":1,}"#,
            r#"{"x":[1,]}"#,
            r#"{"x":1"#,
            r#"{"x""#,
            "{",
            "",
        ];
        for v in scanned {
            let read = scan_usage(v.as_bytes());
            assert!(read.is_some(), "not scanned: {v}");
            assert_eq!(
                read.map(|(u, n)| (Some(u), n)),
                serde_read(v.as_bytes()),
                "{v}"
            );
        }
        for v in refused {
            assert!(scan_usage(v.as_bytes()).is_none(), "scanned: {v}");
        }
        // Every prefix of the scanned objects: a truncated body is never read differently.
        for v in scanned {
            for end in 0..v.len() {
                let v = &v.as_bytes()[..end];
                if let Some((u, n)) = scan_usage(v) {
                    assert_eq!(Some((Some(u), n)), serde_read(v), "{v:?}");
                }
            }
        }
    }

    /// The word-at-a-time search finds what the byte-at-a-time one does: every byte value at
    /// every lane, alone and below or above another special byte.
    #[test]
    fn first_special_is_the_first_special_byte() {
        let bytewise = |w: [u8; 8]| w.iter().position(|&b| is_special(b));
        for b in 0..=255u8 {
            for lane in 0..8 {
                for other in [None, Some((b'"', 7)), Some((0x1f, 0)), Some((0x80, 4))] {
                    let mut w = [b'a'; 8];
                    if let Some((o, at)) = other {
                        w[at] = o;
                    }
                    w[lane] = b;
                    assert_eq!(first_special(u64::from_le_bytes(w)), bytewise(w), "{w:?}");
                }
            }
        }
    }

    #[test]
    fn chat_stream_usage_chunk() {
        let s = "data: {\"choices\":[{\"delta\":{\"content\":\"hi\"}}],\"usage\":null}\n\n\
                 data: {\"choices\":[],\"usage\":{\"prompt_tokens\":7,\"completion_tokens\":2}}\n\n\
                 data: [DONE]\n\n";
        assert_eq!(
            stream_usage(s),
            Usage {
                input: Some(7),
                output: Some(2)
            }
        );
    }

    #[test]
    fn anthropic_stream_merges_start_and_delta() {
        let s = "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"usage\":{\"input_tokens\":25,\"output_tokens\":1}}}\n\n\
                 event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"delta\":{\"text\":\"x\"}}\n\n\
                 event: message_delta\ndata: {\"type\":\"message_delta\",\"usage\":{\"output_tokens\":15}}\n\n\
                 event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n";
        assert_eq!(
            stream_usage(s),
            Usage {
                input: Some(25),
                output: Some(15)
            }
        );
    }

    #[test]
    fn responses_stream_completed() {
        let s = "event: response.completed\ndata: {\"type\":\"response.completed\",\"response\":{\"id\":\"r\",\"usage\":{\"input_tokens\":4,\"output_tokens\":6,\"total_tokens\":10}}}\n\n";
        assert_eq!(
            stream_usage(s),
            Usage {
                input: Some(4),
                output: Some(6)
            }
        );
    }
}
