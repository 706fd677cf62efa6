//! Reading the few fields the gateway needs from a client body, and rewriting the model.
//!
//! The body is parsed once, borrowed: `model` as raw JSON (so its byte span is known and
//! can be replaced in place), `stream` and chat's `stream_options` (so a stream that does
//! not ask for usage can be made to); every other field is skipped, not built into a tree,
//! and forwarded byte for byte.
//!
//! Where translation may need the whole body, [`parse`] reads it into a `Value` instead and
//! takes the head from that: one reading, not serde's scan for the head and then the whole
//! body again (on a 4 KB body the scan alone was ~14,700 instructions).

use std::borrow::Cow;
use std::ops::Range;

use bytes::{BufMut, Bytes, BytesMut};
use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::Value;

use crate::translate::json;

#[derive(Deserialize)]
struct Head<'a> {
    #[serde(borrow)]
    model: Option<&'a RawValue>,
    stream: Option<bool>,
    /// `Some` when present, `null` included: the usage rewrite replaces the member rather
    /// than add a second one.
    #[serde(borrow, default, deserialize_with = "present")]
    stream_options: Option<&'a RawValue>,
}

/// A member's raw value, `null` too (`Option`'s own reading takes `null` for absent).
fn present<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<&'de RawValue>, D::Error> {
    <&RawValue>::deserialize(d).map(Some)
}

#[derive(Deserialize)]
struct StreamOptions {
    include_usage: Option<bool>,
}

/// What the gateway needs to know about a request body.
#[derive(Debug, PartialEq)]
pub(crate) struct RequestHead<'a> {
    pub(crate) model: Cow<'a, str>,
    pub(crate) stream: bool,
    /// Chat's `stream_options.include_usage`: whether the client asked for the usage chunk.
    pub(crate) include_usage: bool,
    /// Byte range of the `model` value (quotes included) in the body; `None` for Gemini,
    /// whose model is in the path.
    model_span: Option<std::ops::Range<usize>>,
    /// Byte range of the `stream_options` value, when there is one.
    stream_options_span: Option<std::ops::Range<usize>>,
    /// The body, checked to be UTF-8 (and JSON): translation reads it without checking again.
    pub(crate) text: &'a str,
}

#[derive(Debug, PartialEq, Eq)]
pub(crate) enum HeadError {
    Json(String),
    MissingModel,
    ModelNotString,
}

impl std::fmt::Display for HeadError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            HeadError::Json(e) => write!(f, "request body is not valid JSON: {e}"),
            HeadError::MissingModel => f.write_str("request body has no `model` field"),
            HeadError::ModelNotString => f.write_str("`model` must be a string"),
        }
    }
}

/// Bodies up to this size are read whole by [`parse`] when asked to; a larger one gets the
/// head scan, so that a passthrough request does not build a tree of many megabytes.
pub(crate) const WHOLE_MAX: usize = 1 << 20;

/// The head, and with `whole` (and a body of at most [`WHOLE_MAX`]) the body as a `Value`,
/// from one reading. Heads and errors are exactly [`parse_head`]'s and [`gemini_head`]'s;
/// the `Value` is `None` where there is none to give (not asked, too large, no JSON tree).
pub(crate) fn parse<'a>(
    body: &'a [u8],
    gemini: Option<&'a GeminiCall>,
    whole: bool,
) -> Result<(RequestHead<'a>, Option<Value>), HeadError> {
    let scan = || match gemini {
        Some(call) => gemini_head(body, call),
        None => parse_head(body),
    };
    if !whole || body.len() > WHOLE_MAX {
        return Ok((scan()?, None));
    }
    let text = utf8(body)?;
    let fast = match gemini {
        Some(call) => json::read(text)
            .ok()
            .filter(Value::is_object)
            .map(|v| (gemini_request_head(text, call), v)),
        None => json::read_members(text, ["model", "stream", "stream_options"])
            .and_then(|(v, [model, _, options])| Some((head_of(text, &v, model, options)?, v))),
    };
    if let Some((head, v)) = fast {
        return Ok((head, Some(v)));
    }
    // The rare body that needs serde: an error (serde's own message), a repeated member.
    let head = scan()?;
    // No tree where a head is read but a tree is not (serde checks no escape in a string
    // it skips): translation reads it again and refuses it, passthrough forwards it.
    Ok((head, json::read(text).ok()))
}

/// The root object's first `model` member when its value is a string without escapes, found
/// by a scan that checks nothing else (`None` where it cannot tell). Only a guess of which
/// reading pays off: [`parse`] gives the same head either way, and a small passthrough body
/// costs less through the head scan than as a tree (~500 instructions against ~2,000).
pub(crate) fn model_hint(body: &[u8]) -> Option<&str> {
    let b = body;
    let ws = |mut i: usize| {
        while matches!(b.get(i), Some(b' ' | b'\n' | b'\r' | b'\t')) {
            i += 1;
        }
        i
    };
    let mut i = ws(0);
    if b.get(i) != Some(&b'{') {
        return None;
    }
    loop {
        i = ws(i + 1);
        let key_end = plain_string(b, i)?;
        let key = &b[i + 1..key_end - 1];
        i = ws(key_end);
        if b.get(i) != Some(&b':') {
            return None;
        }
        i = ws(i + 1);
        if key == b"model" {
            let end = plain_string(b, i)?;
            return std::str::from_utf8(&b[i + 1..end - 1]).ok();
        }
        i = ws(skip_value(b, i)?);
        if b.get(i) != Some(&b',') {
            return None;
        }
    }
}

/// The end (past the closing quote) of the string literal at `i` when it has no escape.
fn plain_string(b: &[u8], i: usize) -> Option<usize> {
    if b.get(i) != Some(&b'"') {
        return None;
    }
    let end = i + 1 + json::scan::plain_len(&b[i + 1..]);
    (b.get(end) == Some(&b'"')).then_some(end + 1)
}

/// Where the value at `i` ends (strings skipped 32 bytes a step; nothing checked).
fn skip_value(b: &[u8], mut i: usize) -> Option<usize> {
    let mut depth = 0usize;
    loop {
        match *b.get(i)? {
            b'"' => loop {
                i += 1;
                i += json::scan::plain_len(b.get(i..)?);
                match *b.get(i)? {
                    b'"' => break,
                    b'\\' => i += 1,
                    _ => {}
                }
            },
            b'{' | b'[' => depth += 1,
            b'}' | b']' if depth == 0 => return Some(i),
            b'}' | b']' => depth -= 1,
            b',' if depth == 0 => return Some(i),
            _ => {}
        }
        i += 1;
        if depth == 0 && matches!(b.get(i), Some(b',' | b'}' | b']')) {
            return Some(i);
        }
    }
}

/// The head of a body read into `v`, with the spans of its `model` and `stream_options`
/// values; `None` where serde's reading of [`Head`] would differ from a plain one (no
/// object, no string model, a `stream` that is no boolean): [`parse_head`] then says why.
fn head_of<'a>(
    text: &'a str,
    v: &Value,
    model_span: Option<Range<usize>>,
    stream_options_span: Option<Range<usize>>,
) -> Option<RequestHead<'a>> {
    let o = v.as_object()?;
    let stream = match o.get("stream") {
        None | Some(Value::Null) => false,
        Some(Value::Bool(b)) => *b,
        Some(_) => return None,
    };
    let Value::String(name) = o.get("model")? else {
        return None;
    };
    let raw = &text[model_span.clone()?];
    // Borrowed unless escaped, as serde's `Cow` is.
    let model = if raw.contains('\\') {
        Cow::Owned(name.clone())
    } else {
        Cow::Borrowed(&raw[1..raw.len() - 1])
    };
    let include_usage = stream_options_span
        .as_ref()
        .is_some_and(|r| asks_usage(&text[r.clone()]));
    Some(RequestHead {
        model,
        stream,
        include_usage,
        model_span,
        stream_options_span,
        text,
    })
}

pub(crate) fn parse_head(body: &[u8]) -> Result<RequestHead<'_>, HeadError> {
    let text = utf8(body)?;
    // serde's derive reads a struct from an array too (`["m",true]`: a model and a stream).
    if text.trim_start().starts_with('[') {
        return Err(HeadError::Json("the body must be a JSON object".into()));
    }
    let head: Head<'_> = serde_json::from_str(text).map_err(|e| HeadError::Json(e.to_string()))?;
    let raw = head.model.ok_or(HeadError::MissingModel)?;
    let model: Cow<'_, str> =
        serde_json::from_str(raw.get()).map_err(|_| HeadError::ModelNotString)?;
    Ok(RequestHead {
        model,
        stream: head.stream.unwrap_or(false),
        include_usage: head.stream_options.is_some_and(|o| asks_usage(o.get())),
        model_span: Some(span(body, raw)),
        stream_options_span: head.stream_options.map(|o| span(body, o)),
        text,
    })
}

/// The body as text. Parsed from `&str`: serde_json skips ignored strings without checking
/// their UTF-8, and a body that is not UTF-8 is not JSON.
fn utf8(body: &[u8]) -> Result<&str, HeadError> {
    std::str::from_utf8(body).map_err(|e| HeadError::Json(format!("body is not UTF-8 ({e})")))
}

/// Whether chat's `stream_options` (raw JSON) ask for the usage chunk.
fn asks_usage(options: &str) -> bool {
    serde_json::from_str::<StreamOptions>(options)
        .ok()
        .and_then(|o| o.include_usage)
        == Some(true)
}

#[cfg(test)]
use crate::dialect::gemini_call;
/// A Gemini body's head: the model and streaming come from the path; the body must be a
/// JSON object (passthrough forwards it as it is, so this is all the checking it gets).
pub(crate) use crate::dialect::{GeminiCall, GeminiMethod};

pub(crate) fn gemini_head<'a>(
    body: &'a [u8],
    call: &'a GeminiCall,
) -> Result<RequestHead<'a>, HeadError> {
    let text = utf8(body)?;
    // Checked without building a tree (IgnoredAny): only whether it is one JSON object.
    if !text.trim_start().starts_with('{') {
        return Err(HeadError::Json("the body must be a JSON object".into()));
    }
    serde_json::from_str::<serde::de::IgnoredAny>(text)
        .map_err(|e| HeadError::Json(e.to_string()))?;
    Ok(gemini_request_head(text, call))
}

fn gemini_request_head<'a>(text: &'a str, call: &'a GeminiCall) -> RequestHead<'a> {
    RequestHead {
        model: Cow::Borrowed(&call.model),
        stream: matches!(call.method, GeminiMethod::Stream { .. }),
        include_usage: false,
        model_span: None,
        stream_options_span: None,
        text,
    }
}

/// Where `raw` lies in `body`: `RawValue` borrows from it, so the offset is a pointer
/// difference.
fn span(body: &[u8], raw: &RawValue) -> std::ops::Range<usize> {
    let start = raw.get().as_ptr() as usize - body.as_ptr() as usize;
    start..start + raw.get().len()
}

/// The member that replaces `model` in a Claude-on-Vertex body (the version is
/// `providers::google::ANTHROPIC_VERSION`; a test holds them equal).
const VERTEX_MEMBER: &[u8] = br#""anthropic_version":"vertex-2023-10-16""#;

/// Where the key of the member whose value starts at `value_start` begins: back over
/// blanks, the colon, blanks, and the key's string (its opening quote is the first quote
/// before its closing one; a member key holds no escaped quote when it is `model`).
fn member_key_start(body: &[u8], value_start: usize) -> Option<usize> {
    let blank = |b: &u8| matches!(b, b' ' | b'\t' | b'\n' | b'\r');
    let mut i = value_start;
    while i > 0 && blank(&body[i - 1]) {
        i -= 1;
    }
    if i == 0 || body[i - 1] != b':' {
        return None;
    }
    i -= 1;
    while i > 0 && blank(&body[i - 1]) {
        i -= 1;
    }
    if i == 0 || body[i - 1] != b'"' {
        return None;
    }
    let close = i - 1;
    let open = body[..close].iter().rposition(|&b| b == b'"')?;
    Some(open)
}

/// What a chat stream's `stream_options` becomes when the gateway asks for usage.
const WITH_USAGE: &[u8] = br#"{"include_usage":true}"#;

impl RequestHead<'_> {
    /// The body with the model value replaced by `model_json` (an already-encoded JSON
    /// string); every other byte unchanged.
    pub(crate) fn rewrite_model(&self, body: &Bytes, model_json: &[u8]) -> Bytes {
        let Some(model_span) = self.model_span.clone() else {
            return body.clone();
        };
        if &body[model_span.clone()] == model_json {
            return body.clone();
        }
        let mut out = BytesMut::with_capacity(body.len() - model_span.len() + model_json.len());
        out.put_slice(&body[..model_span.start]);
        out.put_slice(model_json);
        out.put_slice(&body[model_span.end..]);
        out.freeze()
    }

    /// For Claude on Vertex: the `"model": ...` member becomes
    /// `"anthropic_version":"vertex-2023-10-16"` (the model is in the URL), as Anthropic's
    /// SDK writes it; every other byte unchanged.
    pub(crate) fn rewrite_model_as_vertex(&self, body: &Bytes) -> Bytes {
        let Some(value) = self.model_span.clone() else {
            return body.clone();
        };
        let Some(key_start) = member_key_start(body, value.start) else {
            return body.clone();
        };
        let mut out = BytesMut::with_capacity(body.len() + VERTEX_MEMBER.len());
        out.put_slice(&body[..key_start]);
        out.put_slice(VERTEX_MEMBER);
        out.put_slice(&body[value.end..]);
        out.freeze()
    }

    /// As [`Self::rewrite_model`], and the stream asks for usage although the client did
    /// not: `stream_options` is added (right after the opening brace) or, when the client
    /// sent one without `include_usage: true`, replaced with one that has it (its other
    /// members kept).
    pub(crate) fn rewrite_asking_usage(&self, body: &Bytes, model_json: &[u8]) -> Bytes {
        let (at, replacement): (std::ops::Range<usize>, Cow<'_, [u8]>) =
            match &self.stream_options_span {
                Some(span) => {
                    // Members kept as raw JSON: through `Value`, a float's last digit can
                    // change (serde_json's default float parse is not exact).
                    let mut o: std::collections::BTreeMap<String, &RawValue> =
                        serde_json::from_slice(&body[span.clone()]).unwrap_or_default();
                    let yes: &RawValue = serde_json::from_str("true").expect("JSON");
                    o.insert("include_usage".into(), yes);
                    let v = serde_json::to_vec(&o).expect("a JSON map serializes");
                    (span.clone(), Cow::Owned(v))
                }
                None => {
                    // The body is an object with a `model` member, so it has a first brace and
                    // something after it: the added member is followed by a comma.
                    let brace = body.iter().position(|&b| b == b'{').expect("an object");
                    let mut v = br#""stream_options":"#.to_vec();
                    v.extend_from_slice(WITH_USAGE);
                    v.push(b',');
                    (brace + 1..brace + 1, Cow::Owned(v))
                }
            };
        let Some(model_span) = self.model_span.clone() else {
            return body.clone();
        };
        let mut edits = [(model_span, model_json), (at, replacement.as_ref())];
        edits.sort_by_key(|(r, _)| r.start);
        let mut out = BytesMut::with_capacity(body.len() + model_json.len() + replacement.len());
        let mut pos = 0;
        for (r, bytes) in edits {
            out.put_slice(&body[pos..r.start]);
            out.put_slice(bytes);
            pos = r.end;
        }
        out.put_slice(&body[pos..]);
        out.freeze()
    }
}

#[cfg(test)]
mod tests;
