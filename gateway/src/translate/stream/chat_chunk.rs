//! Chat chunks as the decoder reads them ([`Chunk`]), and a serde-free reader for the
//! common one: a chunk of text (or a finish reason) with scalar fields around it. Serde
//! spent ~3,400 instructions on such a chunk, most of them on keys and fields nobody
//! reads. The reader gives up (`None`) on anything else, serde then reads the chunk: tool
//! calls, errors, nested values it would skip, duplicate fields, more than one
//! choice, anything that is not strict JSON.

use std::borrow::Cow;

use crate::translate::json::scan::{self, plain_len};
use crate::translate::wire::{self, CachedIn, ChatUsageIn, ToolCallDeltaIn};

/// One chunk (its in-stream error aside: serde reads those).
#[derive(Debug, Default, PartialEq)]
pub(super) struct Chunk<'a> {
    pub(super) id: Option<Cow<'a, str>>,
    pub(super) model: Option<Cow<'a, str>>,
    /// The first choice, if any.
    pub(super) choice: Option<Choice<'a>>,
    pub(super) usage: Option<ChatUsageIn>,
}

#[derive(Debug, Default, PartialEq)]
pub(super) struct Choice<'a> {
    /// Only a string is text.
    pub(super) content: Option<Cow<'a, str>>,
    pub(super) refusal: Option<Cow<'a, str>>,
    pub(super) tool_calls: Vec<ToolCallDeltaIn<'a>>,
    pub(super) finish_reason: Option<Cow<'a, str>>,
}

impl<'a> From<wire::ChunkIn<'a>> for Chunk<'a> {
    fn from(v: wire::ChunkIn<'a>) -> Chunk<'a> {
        Chunk {
            id: v.id,
            model: v.model,
            choice: v.choices.into_iter().flatten().next().map(|c| {
                let (content, refusal, tool_calls) = match c.delta {
                    Some(d) => (
                        wire::raw_str(d.content),
                        d.refusal,
                        d.tool_calls.unwrap_or_default(),
                    ),
                    None => (None, None, Vec::new()),
                };
                Choice {
                    content,
                    refusal,
                    tool_calls,
                    finish_reason: c.finish_reason,
                }
            }),
            usage: v.usage,
        }
    }
}

/// What a stream's chunks repeat: the text of the last chunk read before its `choices`
/// key, and the fields seen in it. Chunks repeat `id`, `object`, `created`, `model`, ...
/// byte for byte, so a chunk that starts with it is read from there on.
#[derive(Debug, Default)]
pub(super) struct Head {
    text: String,
    seen: u8,
    /// The last plain text chunk around its text, which is all that differs from one
    /// such chunk to the next.
    around: Option<(String, String)>,
}

impl Head {
    /// The text of `s` when `s` is the last plain text chunk with other text: text
    /// without quotes, backslashes or control characters reads as the same tokens.
    fn text_of<'a>(&self, s: &'a str) -> Option<&'a str> {
        let (before, after) = self.around.as_ref()?;
        if s.len() < before.len() + after.len() || !s.starts_with(before.as_str()) {
            return None;
        }
        let text = s[before.len()..].strip_suffix(after.as_str())?;
        let b = text.as_bytes();
        let plain = plain_len(b) == b.len();
        plain.then_some(text)
    }
}

/// Reads a plain chunk; `None`: serde must. A chunk that starts with `head` (whose first
/// chunk was read) is read past it: its `id` and `model` are then `None`.
pub(super) fn read<'a>(s: &'a str, head: &mut Head) -> Option<Chunk<'a>> {
    if let Some(text) = head.text_of(s) {
        return Some(Chunk {
            choice: Some(Choice {
                content: Some(Cow::Borrowed(text)),
                ..Choice::default()
            }),
            ..Chunk::default()
        });
    }
    let mut r = Reader {
        s,
        i: 0,
        text: None,
    };
    let mut c = Chunk::default();
    let mut seen = 0u8;
    let resume = !head.text.is_empty() && s.starts_with(head.text.as_str());
    if resume {
        r.i = head.text.len();
        seen = head.seen;
    }
    let mut choices_at = None;
    r.object(resume, |r, key, at| {
        match key {
            "id" => c.id = r.once(&mut seen, 1)?.str_or_null()?,
            "model" => c.model = r.once(&mut seen, 2)?.str_or_null()?,
            "choices" => {
                choices_at = Some((at, seen));
                c.choice = r.once(&mut seen, 4)?.choices()?;
            }
            // Errors are serde's.
            "error" => r.once(&mut seen, 8)?.null()?,
            "usage" => c.usage = r.once(&mut seen, 16)?.usage()?,
            _ => r.scalar()?,
        }
        Some(())
    })?;
    r.ws();
    if r.i != s.len() {
        return None;
    }
    if !resume {
        let (at, seen) = choices_at.unwrap_or_default();
        head.text.clear();
        head.text.push_str(&s[..at]);
        head.seen = seen;
    }
    if let (Some((from, to)), Some(choice)) = (r.text, &c.choice) {
        if choice.refusal.is_none() && choice.finish_reason.is_none() && c.usage.is_none() {
            head.around = Some((s[..from].to_owned(), s[to..].to_owned()));
        }
    }
    Some(c)
}

struct Reader<'a> {
    s: &'a str,
    i: usize,
    /// Where the delta's text is, when it is a string without escapes.
    text: Option<(usize, usize)>,
}

impl<'a> Reader<'a> {
    fn peek(&self) -> Option<u8> {
        self.s.as_bytes().get(self.i).copied()
    }

    fn ws(&mut self) {
        while matches!(self.peek(), Some(b' ' | b'\n' | b'\r' | b'\t')) {
            self.i += 1;
        }
    }

    fn eat(&mut self, c: u8) -> bool {
        self.ws();
        let hit = self.peek() == Some(c);
        self.i += usize::from(hit);
        hit
    }

    /// A field seen twice is serde's (it refuses the chunk).
    fn once(&mut self, seen: &mut u8, bit: u8) -> Option<&mut Self> {
        if *seen & bit != 0 {
            return None;
        }
        *seen |= bit;
        Some(self)
    }

    /// `{ "key": value, ... }`, each value read by `field` (given the key's offset);
    /// `inside`: the cursor is already inside, at a key.
    fn object(
        &mut self,
        inside: bool,
        mut field: impl FnMut(&mut Self, &str, usize) -> Option<()>,
    ) -> Option<()> {
        if !inside {
            if !self.eat(b'{') {
                return None;
            }
            if self.eat(b'}') {
                return Some(());
            }
        }
        loop {
            self.ws();
            let at = self.i;
            let key = self.string()?;
            if !self.eat(b':') {
                return None;
            }
            // A key with escapes is rare: serde reads the chunk.
            let Cow::Borrowed(key) = key else {
                return None;
            };
            field(self, key, at)?;
            if self.eat(b'}') {
                return Some(());
            }
            if !self.eat(b',') {
                return None;
            }
        }
    }

    /// A string literal at the cursor, unescaped.
    fn string(&mut self) -> Option<Cow<'a, str>> {
        let b = self.s.as_bytes();
        if b.get(self.i) != Some(&b'"') {
            return None;
        }
        let start = self.i + 1;
        let mut at = start + plain_len(&b[start..]);
        let mut escaped = false;
        loop {
            match *b.get(at)? {
                b'"' => break,
                b'\\' => {
                    escaped = true;
                    at += 2;
                }
                // JSON strings hold no raw control characters.
                0..=0x1f => return None,
                _ => at += 1,
            }
        }
        self.i = at + 1;
        if escaped {
            // Rare in the fields read here: serde unescapes (and checks) the literal.
            return serde_json::from_str(&self.s[start - 1..=at]).ok();
        }
        let body = &self.s[start..at];
        Some(Cow::Borrowed(body))
    }

    fn literal(&mut self, word: &str) -> bool {
        let hit = self.s[self.i..].starts_with(word);
        if hit {
            self.i += word.len();
        }
        hit
    }

    fn null(&mut self) -> Option<()> {
        self.ws();
        self.literal("null").then_some(())
    }

    fn str_or_null(&mut self) -> Option<Option<Cow<'a, str>>> {
        self.ws();
        if self.literal("null") {
            return Some(None);
        }
        self.string().map(Some)
    }

    /// A string, number, boolean or null, skipped; anything else is serde's.
    fn scalar(&mut self) -> Option<()> {
        self.ws();
        match self.peek()? {
            b'"' => self.string().map(drop),
            b'n' => self.literal("null").then_some(()),
            b't' => self.literal("true").then_some(()),
            b'f' => self.literal("false").then_some(()),
            b'-' | b'0'..=b'9' => self.number(),
            _ => None,
        }
    }

    /// A number, skipped ([`scan::number`]'s grammar).
    fn number(&mut self) -> Option<()> {
        self.i = scan::number(self.s.as_bytes(), self.i)?.0;
        Some(())
    }

    /// `usage`: null, or the object (once a stream) with its counts as `u64`s or nulls;
    /// serde reads a usage of any other shape (and refuses the chunk as before). serde spent
    /// ~3,400 instructions on OpenAI's usage object, most on the keys it skips.
    fn usage(&mut self) -> Option<Option<ChatUsageIn>> {
        self.ws();
        if self.literal("null") {
            return Some(None);
        }
        let mut u = ChatUsageIn::default();
        let mut seen = 0u8;
        self.object(false, |r, key, _| {
            match key {
                "prompt_tokens" => u.prompt_tokens = r.once(&mut seen, 1)?.count()?,
                "completion_tokens" => u.completion_tokens = r.once(&mut seen, 2)?.count()?,
                "prompt_tokens_details" => {
                    r.once(&mut seen, 4)?.ws();
                    if !r.literal("null") {
                        let mut cached = CachedIn::default();
                        let mut seen = 0u8;
                        r.object(false, |r, key, _| {
                            match key {
                                "cached_tokens" => {
                                    cached.cached_tokens = r.once(&mut seen, 1)?.count()?;
                                }
                                _ => r.skip(0)?,
                            }
                            Some(())
                        })?;
                        u.prompt_tokens_details = Some(cached);
                    }
                }
                // `completion_tokens_details` and the like: objects of counts.
                _ => r.skip(0)?,
            }
            Some(())
        })?;
        Some(Some(u))
    }

    /// A count: null, or a number that is a `u64`.
    fn count(&mut self) -> Option<Option<u64>> {
        self.ws();
        if self.literal("null") {
            return Some(None);
        }
        let from = self.i;
        self.number()?;
        self.s[from..self.i].parse().ok().map(Some)
    }

    /// Any value, skipped: scalars, and objects and arrays up to a few levels deep.
    fn skip(&mut self, depth: u8) -> Option<()> {
        self.ws();
        match self.peek()? {
            b'{' if depth < 4 => self.object(false, |r, _, _| r.skip(depth + 1)),
            b'[' if depth < 4 => {
                self.i += 1;
                if self.eat(b']') {
                    return Some(());
                }
                loop {
                    self.skip(depth + 1)?;
                    if self.eat(b']') {
                        return Some(());
                    }
                    if !self.eat(b',') {
                        return None;
                    }
                }
            }
            _ => self.scalar(),
        }
    }

    /// `choices`: null, `[]` or one choice.
    fn choices(&mut self) -> Option<Option<Choice<'a>>> {
        self.ws();
        if self.literal("null") {
            return Some(None);
        }
        if !self.eat(b'[') {
            return None;
        }
        if self.eat(b']') {
            return Some(None);
        }
        let mut c = Choice::default();
        let mut seen = 0u8;
        self.object(false, |r, key, _| {
            match key {
                "delta" => r.once(&mut seen, 1)?.delta(&mut c)?,
                "finish_reason" => c.finish_reason = r.once(&mut seen, 2)?.str_or_null()?,
                _ => r.scalar()?,
            }
            Some(())
        })?;
        self.eat(b']').then_some(Some(c))
    }

    /// A delta of text: `content` and `refusal` strings (or null), other fields scalars.
    fn delta(&mut self, c: &mut Choice<'a>) -> Option<()> {
        self.ws();
        if self.literal("null") {
            return Some(());
        }
        let mut seen = 0u8;
        self.object(false, |r, key, _| {
            match key {
                "content" => {
                    r.once(&mut seen, 1)?.ws();
                    let from = r.i + 1;
                    c.content = r.str_or_null()?;
                    if let Some(Cow::Borrowed(_)) = c.content {
                        r.text = Some((from, r.i - 1));
                    }
                }
                "refusal" => c.refusal = r.once(&mut seen, 2)?.str_or_null()?,
                "tool_calls" => return None,
                _ => r.scalar()?,
            }
            Some(())
        })
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    fn is_json(s: &str) -> bool {
        serde_json::from_str::<serde::de::IgnoredAny>(s).is_ok()
    }

    /// What serde makes of a chunk without an error.
    fn by_serde(s: &str) -> Option<Chunk<'_>> {
        let v = serde_json::from_str::<wire::ChunkIn<'_>>(s).ok()?;
        if v.error.is_some_and(|e| e.get() != "null") {
            return None;
        }
        Some(v.into())
    }

    const PLAIN: &str = r#"{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1700000000,"model":"gpt-4o","service_tier":"default","system_fingerprint":"fp_1","choices":[{"index":0,"delta":{"content":"Hi \"there\"\n"},"logprobs":null,"finish_reason":null}],"usage":null}"#;

    #[test]
    fn plain_chunks_are_read_as_serde_reads_them() {
        let mut head = Head::default();
        let c = read(PLAIN, &mut head).expect("a plain chunk");
        assert_eq!(
            c.choice.as_ref().unwrap().content.as_deref(),
            Some("Hi \"there\"\n")
        );
        assert_eq!(Some(c), by_serde(PLAIN));
        // The next chunk is read past the head it repeats.
        assert!(PLAIN.starts_with(&head.text) && head.text.ends_with(','));
        let again = read(PLAIN, &mut head).unwrap();
        assert_eq!((again.id, again.model), (None, None));
        assert_eq!(again.choice, by_serde(PLAIN).unwrap().choice);
        let done = r#"{"id":"x","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}"#;
        assert_eq!(read(done, &mut head), by_serde(done));
        assert!(read(done, &mut Head::default())
            .unwrap()
            .choice
            .unwrap()
            .finish_reason
            .is_some());
        let usage = r#"{"id":"x","choices":[],"usage":{"prompt_tokens":1,"completion_tokens_details":{"a":[1]}}}"#;
        assert_eq!(read(usage, &mut Head::default()), by_serde(usage));
        assert!(by_serde(usage).unwrap().usage.is_some());
    }

    #[test]
    fn anything_else_is_left_to_serde() {
        for s in [
            r#"{"id":"x","choices":[{"delta":{"tool_calls":[]}}]}"#,
            r#"{"id":"x","choices":[],"usage":5}"#,
            r#"{"error":{"message":"m"}}"#,
            r#"{"id":"x","id":"y"}"#,
            r#"{"id":"x","logprobs":{"a":1}}"#,
            r#"{"id":"x","choices":[{},{}]}"#,
            r#"{"id":"x"} x"#,
            r#"{"id":"x","n":01}"#,
            r#"{"id":"x","n":1.}"#,
            "{\"id\":\"a\u{1}\"}",
            r#"{"id":"\x"}"#,
        ] {
            assert_eq!(read(s, &mut Head::default()), None, "{s}");
        }
    }

    fn scalar() -> impl Strategy<Value = String> {
        prop_oneof![
            Just("null".to_owned()),
            Just("true".to_owned()),
            Just("0".to_owned()),
            Just("-12.5e+3".to_owned()),
            Just("{}".to_owned()),
            Just("[1]".to_owned()),
            "\"[a-z \\\\\"\\\\n\\\\u00e9é]{0,6}\"",
            Just(r#"{"prompt_tokens":3,"x":{"y":[null]}}"#.to_owned()),
            Just(r#"{"prompt_tokens":3,"completion_tokens":null,"prompt_tokens_details":{"cached_tokens":1,"audio_tokens":0},"completion_tokens_details":{"reasoning_tokens":0,"a":[]}}"#.to_owned()),
            Just(r#"{"prompt_tokens":-1}"#.to_owned()),
            Just(r#"{"prompt_tokens":1.5,"completion_tokens":2}"#.to_owned()),
            Just(r#"{"prompt_tokens":1,"prompt_tokens":2}"#.to_owned()),
            Just(r#"{"prompt_tokens_details":null,"completion_tokens":18446744073709551616}"#.to_owned()),
            Just(r#"{"prompt_tokens_details":{"cached_tokens":"x"}}"#.to_owned()),
            Just(r#"{"x":[[[[[[1]]]]]]}"#.to_owned()),
        ]
    }

    fn chunk() -> impl Strategy<Value = String> {
        let field = |k: &'static str| {
            prop::option::of(scalar()).prop_map(move |v| v.map(|v| format!("\"{k}\":{v}")))
        };
        let delta = (field("content"), field("refusal"), field("role")).prop_map(|(a, b, c)| {
            let f: Vec<_> = [a, b, c].into_iter().flatten().collect();
            format!("{{{}}}", f.join(","))
        });
        let choice = (delta, field("finish_reason"), field("index")).prop_map(|(d, f, i)| {
            let f: Vec<_> = [Some(format!("\"delta\":{d}")), f, i]
                .into_iter()
                .flatten()
                .collect();
            format!("{{{}}}", f.join(","))
        });
        (
            field("id"),
            field("model"),
            field("created"),
            prop::option::of(prop::collection::vec(choice, 0..3)),
            field("usage"),
            field("id"),
            " ?",
        )
            .prop_map(|(id, model, created, choices, usage, id2, pad)| {
                let choices = choices.map(|c| format!("\"choices\":[{}]", c.join(",")));
                let f: Vec<_> = [id, model, created, choices, usage, id2]
                    .into_iter()
                    .flatten()
                    .collect();
                format!("{{{}}}{pad}", f.join(&format!(",{pad}")))
            })
    }

    proptest! {
        /// Whatever the reader reads, serde reads the same.
        #[test]
        fn the_reader_agrees_with_serde(s in chunk(), next in chunk(), cut in 0..200usize) {
            let mut head = Head::default();
            if let Some(c) = read(&s, &mut head) {
                prop_assert!(is_json(&s));
                prop_assert_eq!(Some(c), by_serde(&s));
                // Chunks read past what the stream repeats: all but `id` and `model` (then
                // `None`) as serde reads them.
                for n in [&s, &next, &s.replacen("\"content\":\"", "\"content\":\"x", 1)] {
                    if let Some(c) = read(n, &mut head) {
                        let want = by_serde(n).unwrap();
                        prop_assert!(c.id.is_none() || c.id == want.id);
                        prop_assert!(c.model.is_none() || c.model == want.model);
                        prop_assert_eq!((c.choice, c.usage), (want.choice, want.usage));
                    }
                }
            }
            let mut cut = cut.min(s.len());
            while !s.is_char_boundary(cut) {
                cut -= 1;
            }
            let cut = &s[..cut];
            if let Some(c) = read(cut, &mut Head::default()) {
                prop_assert_eq!(Some(c), by_serde(cut));
            }
        }
    }
}
