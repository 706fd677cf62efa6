//! Reads a client's request body into a `serde_json::Value`, for the translated path.
//!
//! serde_json finds a string's end with an eight-byte loop and builds the `Value` through
//! its visitor: on the 4 KB Anthropic body of `messages-stream-mid-via-openai` that was
//! ~17,500 instructions, the largest single cost translation adds to a request (callgrind,
//! issue 41). This reader finds string ends 32 bytes a step ([`super::scan`]) and builds the
//! same `Value` directly. Whatever it does not read exactly as serde_json does it leaves to
//! serde_json: a string with escapes (serde_json unescapes that literal), a number other
//! than a small non-negative integer (serde_json reads that token), and for the whole body
//! any syntax error, nesting deeper than [`MAX_DEPTH`] or serde_json's private `RawValue`
//! key. So [`read`] returns what `serde_json::from_str` returns, errors included (the
//! proptest below holds it to that), for any document within its node budget
//! ([`super::budget`]): one over it is refused ([`ReadError::Budget`]) before it is built
//! whole, counted as it is read (or by the budget's scan before serde_json reads it).

use std::ops::Range;

use serde_json::{Map, Number, Value};

use super::budget::{self, OverBudget, ARRAY_NODES, ITEM_NODES, OBJECT_NODES};
use super::scan::plain_len;

/// Nesting deeper than this is serde_json's, whose own limit (128) then applies.
const MAX_DEPTH: usize = 100;

/// The key serde_json reads as a raw JSON fragment (feature `raw_value`).
const RAW_KEY: &str = "$serde_json::private::RawValue";

/// Why a document was not read.
#[derive(Debug)]
pub(crate) enum ReadError {
    /// Not JSON (serde_json's reason).
    Json(serde_json::Error),
    /// Over its node budget: refused before its tree was built.
    Budget(OverBudget),
}

impl std::fmt::Display for ReadError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ReadError::Json(e) => e.fmt(f),
            ReadError::Budget(e) => e.fmt(f),
        }
    }
}

/// `serde_json::from_str::<Value>(s)`, faster, within the node budget.
pub(crate) fn read(s: &str) -> Result<Value, ReadError> {
    prescan(s)?;
    let mut r = Reader::new(s, &[]);
    match r.whole() {
        Some(v) => Ok(v),
        None => r.fallback(),
    }
}

/// The most members [`read_members`] looks for.
const MAX_NAMED: usize = 4;

/// [`read`], and where the root object's members called `names` are: the byte range of
/// each one's value in `s`, `None` when absent (or when the root is not an object).
///
/// `None` when this reader leaves `s` to serde_json (an error, deep nesting, a document
/// over its budget) or one of `names` is a repeated member: the caller reads the text as
/// it would without this.
pub(crate) fn read_members<const N: usize>(
    s: &str,
    names: [&str; N],
) -> Option<(Value, [Option<Range<usize>>; N])> {
    const { assert!(N <= MAX_NAMED) };
    prescan(s).ok()?;
    let mut r = Reader::new(s, &names);
    let v = r.whole()?;
    if r.repeated {
        return None;
    }
    Some((v, std::array::from_fn(|k| r.spans[k].clone())))
}

/// Documents longer than this are checked by the budget's scan before any tree is built:
/// the reader stops at the budget, but its tree up to there could be the floor's 4 MiB, 16
/// bytes a byte here. Shorter ones are counted as they are read, with no second pass over
/// the text (agent bodies are ~100 KB).
const PRESCAN: usize = 256 * 1024;

fn prescan(s: &str) -> Result<(), ReadError> {
    if s.len() > PRESCAN {
        budget::check_str(s).map_err(ReadError::Budget)?;
    }
    Ok(())
}

struct Reader<'a> {
    s: &'a str,
    b: &'a [u8],
    i: usize,
    /// Root members whose value spans are recorded (none for a plain [`read`]).
    names: &'a [&'a str],
    spans: [Option<Range<usize>>; MAX_NAMED],
    /// One of `names` came twice.
    repeated: bool,
    /// Nodes read so far ([`budget`]'s count), and the most the document may hold.
    nodes: usize,
    limit: usize,
}

impl<'a> Reader<'a> {
    fn new(s: &'a str, names: &'a [&'a str]) -> Self {
        Reader {
            s,
            b: s.as_bytes(),
            i: 0,
            names,
            spans: Default::default(),
            repeated: false,
            nodes: 0,
            limit: budget::limit(s.len()),
        }
    }

    /// Counts `n` nodes; `None` once the document is over its budget (its tree is dropped
    /// as the reader unwinds, before it is whole).
    fn count(&mut self, n: usize) -> Option<()> {
        self.nodes += n;
        (self.nodes <= self.limit).then_some(())
    }

    /// What `read` returns where this reader gave up: the budget's refusal, or serde_json's
    /// reading of a document the budget's scan passes.
    fn fallback(&self) -> Result<Value, ReadError> {
        if self.nodes > self.limit {
            return Err(ReadError::Budget(OverBudget {
                bytes: self.s.len(),
                limit: self.limit,
            }));
        }
        budget::check_str(self.s).map_err(ReadError::Budget)?;
        serde_json::from_str(self.s).map_err(ReadError::Json)
    }

    /// The whole text as one value; `None`: serde_json must read it.
    fn whole(&mut self) -> Option<Value> {
        let v = self.value(0)?;
        self.ws();
        (self.i == self.b.len()).then_some(v)
    }

    fn peek(&self) -> Option<u8> {
        self.b.get(self.i).copied()
    }

    fn ws(&mut self) {
        while let Some(b' ' | b'\n' | b'\r' | b'\t') = self.peek() {
            self.i += 1;
        }
    }

    /// `None`: serde_json must read the body.
    fn value(&mut self, depth: usize) -> Option<Value> {
        self.ws();
        Some(match self.peek()? {
            b'"' => Value::String(self.string()?),
            b'{' if depth < MAX_DEPTH => self.object(depth + 1)?,
            b'[' if depth < MAX_DEPTH => self.array(depth + 1)?,
            b't' => self.literal("true", Value::Bool(true))?,
            b'f' => self.literal("false", Value::Bool(false))?,
            b'n' => self.literal("null", Value::Null)?,
            b'-' | b'0'..=b'9' => Value::Number(self.number()?),
            _ => return None,
        })
    }

    fn literal(&mut self, word: &str, v: Value) -> Option<Value> {
        let hit = self.b[self.i..].starts_with(word.as_bytes());
        self.i += word.len();
        hit.then_some(v)
    }

    fn object(&mut self, depth: usize) -> Option<Value> {
        self.i += 1;
        self.count(OBJECT_NODES)?;
        let mut m = Map::new();
        self.ws();
        if self.peek() == Some(b'}') {
            self.i += 1;
            return Some(Value::Object(m));
        }
        loop {
            self.ws();
            if self.peek() != Some(b'"') {
                return None;
            }
            let key = self.string()?;
            if key == RAW_KEY {
                return None;
            }
            self.ws();
            if self.peek() != Some(b':') {
                return None;
            }
            self.i += 1;
            self.count(ITEM_NODES)?;
            let v = if depth == 1 && !self.names.is_empty() {
                self.root_member(&key)?
            } else {
                self.value(depth)?
            };
            // As serde_json's visitor: the last of duplicate keys wins.
            m.insert(key, v);
            self.ws();
            match self.peek()? {
                b',' => {
                    self.i += 1;
                    self.count(ITEM_NODES)?;
                }
                b'}' => {
                    self.i += 1;
                    return Some(Value::Object(m));
                }
                _ => return None,
            }
        }
    }

    /// A member of the root object, its span recorded when it is one of `names`.
    fn root_member(&mut self, key: &str) -> Option<Value> {
        self.ws();
        let start = self.i;
        let v = self.value(1)?;
        if let Some(k) = self.names.iter().position(|n| *n == key) {
            self.repeated |= self.spans[k].is_some();
            self.spans[k] = Some(start..self.i);
        }
        Some(v)
    }

    fn array(&mut self, depth: usize) -> Option<Value> {
        self.i += 1;
        self.count(ARRAY_NODES)?;
        let mut a = Vec::new();
        self.ws();
        if self.peek() == Some(b']') {
            self.i += 1;
            return Some(Value::Array(a));
        }
        loop {
            a.push(self.value(depth)?);
            self.ws();
            match self.peek()? {
                b',' => {
                    self.i += 1;
                    self.count(ITEM_NODES)?;
                }
                b']' => {
                    self.i += 1;
                    return Some(Value::Array(a));
                }
                _ => return None,
            }
        }
    }

    /// The string literal at the cursor (at its opening quote).
    fn string(&mut self) -> Option<String> {
        let start = self.i + 1;
        let end = start + plain_len(&self.b[start..]);
        if self.b.get(end) == Some(&b'"') {
            self.i = end + 1;
            return Some(self.s[start..end].to_owned());
        }
        // An escape (or a control byte, which serde_json refuses): find the literal's end,
        // serde_json unescapes (and checks) it.
        let mut j = end;
        loop {
            match *self.b.get(j)? {
                b'"' => break,
                b'\\' => j += 2,
                _ => j += 1,
            }
        }
        let literal = self.s.get(self.i..=j)?;
        self.i = j + 1;
        serde_json::from_str(literal).ok()
    }

    /// A number ([`super::scan::number`]'s grammar); serde_json reads all but small
    /// non-negative integers, so that floats and negative zero come out as it makes them.
    fn number(&mut self) -> Option<Number> {
        let from = self.i;
        let (end, integer) = super::scan::number(self.b, from)?;
        self.i = end;
        let token = &self.s[from..end];
        // Up to 19 digits always fit a u64.
        if integer && self.b[from] != b'-' && token.len() <= 19 {
            return token.parse::<u64>().ok().map(Number::from);
        }
        token.parse().ok()
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    /// Both agree: the same value (numbers of the same kind), or the same error.
    fn agrees(s: &str) -> Result<(), TestCaseError> {
        let want = serde_json::from_str::<Value>(s);
        match (read(s), want) {
            (Ok(got), Ok(want)) => {
                prop_assert_eq!(&got, &want, "{}", s);
                prop_assert_eq!(got.to_string(), want.to_string(), "{}", s);
            }
            (Err(got), Err(want)) => prop_assert_eq!(got.to_string(), want.to_string()),
            (got, want) => prop_assert!(false, "{s}: read {got:?}, serde_json {want:?}"),
        }
        Ok(())
    }

    #[test]
    fn reads_what_serde_json_reads() {
        for s in [
            r#"{"model":"m","max_tokens":512,"stream":true,"system":"s","messages":[{"role":"user","content":[{"type":"text","text":"hi \"there\"\n\u00e9"}]}]}"#,
            r#" [1, -0, -1, 0.5, 1e400, 18446744073709551615, 18446744073709551616, 1E-7, -9223372036854775808] "#,
            r#"{"a":1,"a":2}"#,
            r#"{"$serde_json::private::RawValue":"[1]"}"#,
            "\"\\ud800\"",
            "\"a\u{1}\"",
            "[1,]",
            "{\"a\":1,}",
            "01",
            "1.",
            "-",
            "nul",
            "[] x",
            "\"\\",
            "",
            &"[".repeat(130),
            &format!("{}{}", "[".repeat(120), "]".repeat(120)),
        ] {
            agrees(s).unwrap();
        }
    }

    /// A flood of tiny objects is refused by its count, before its tree is whole, and by
    /// the budget's scan where serde_json would read it (a string with an escape at the end
    /// makes the reader give up late; a trailing comma, at once).
    #[test]
    fn refuses_a_document_over_its_node_budget() {
        let flood = format!("[{}{{}}]", "{},".repeat(1 << 18));
        let over = |r: Result<Value, ReadError>| matches!(r, Err(ReadError::Budget(_)));
        assert!(over(read(&flood)));
        assert!(read_members(&flood, ["model"]).is_none());
        assert!(over(read(&format!("{flood}x"))));
        let within = format!("[{}{{}}]", "{},".repeat(1000));
        assert!(read(&within).is_ok());
        // Real bodies pass (the biggest agent capture; shapes/ is outside the lint source).
        let agent =
            include_str!("../../../tests/fixtures/agents/claude-code-claude-tool-result.json");
        assert!(read(agent).is_ok());
    }

    fn json() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            any::<u64>().prop_map(Value::from),
            any::<i64>().prop_map(Value::from),
            any::<f64>().prop_map(Value::from),
            "\\PC{0,40}|[a-z \"\\\\\\n\\x01-\\x1f]{0,12}".prop_map(Value::String),
        ];
        leaf.prop_recursive(4, 48, 6, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
                prop::collection::vec(("[a-z\"]{0,6}", inner), 0..6)
                    .prop_map(|kv| Value::Object(kv.into_iter().collect())),
            ]
        })
    }

    proptest! {
        /// Any document, compact or pretty, whole or cut or with one byte changed, reads
        /// as serde_json reads it.
        #[test]
        fn agrees_with_serde_json(v in json(), pretty: bool, cut in 0..400usize, byte: u8, at in 0..400usize) {
            let s = if pretty { serde_json::to_string_pretty(&v) } else { serde_json::to_string(&v) }.unwrap();
            agrees(&s)?;
            let mut cut = cut.min(s.len());
            while !s.is_char_boundary(cut) {
                cut -= 1;
            }
            agrees(&s[..cut])?;
            let mut bytes = s.into_bytes();
            if !bytes.is_empty() {
                let at = at % bytes.len();
                bytes[at] = byte;
            }
            if let Ok(s) = std::str::from_utf8(&bytes) {
                agrees(s)?;
            }
        }
    }
}
