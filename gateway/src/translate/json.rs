//! Small accessors over `serde_json::Value` that name the offending field in their errors.

use serde_json::{json, Map, Number, Value};

use super::hub::Role;
use super::TranslateError;

pub(crate) mod budget;
mod read;
pub(crate) mod scan;
pub(crate) use read::{read, read_members, ReadError};

pub(crate) fn invalid(field: impl Into<String>, why: impl Into<String>) -> TranslateError {
    TranslateError::Invalid {
        field: field.into(),
        why: why.into(),
    }
}

/// A tool call's `arguments` string as the value Anthropic's `input` and Converse's
/// `toolUse.input` take: an empty string means none (`{}`); text that is not JSON is
/// refused, naming the call (message `i`, call `id`).
pub(crate) fn tool_call_input(
    arguments: &str,
    i: usize,
    id: &str,
) -> Result<Value, TranslateError> {
    if arguments.trim().is_empty() {
        return Ok(Value::Object(Map::new()));
    }
    // A string in a body within its budget can still hold a flood of tiny objects.
    budget::check_str(arguments).map_err(TranslateError::TooLarge)?;
    serde_json::from_str(arguments).map_err(|_| {
        invalid(
            format!("messages[{i}] tool call {id:?} arguments"),
            "must be a JSON object",
        )
    })
}

/// Adds a user or assistant turn's `blocks` to Anthropic's or Converse's `messages` (a
/// system turn is the caller's: both take system text only at the top). Both want turns to
/// alternate, so blocks of the same role as the last turn join it.
pub(crate) fn push_turn(messages: &mut Vec<Value>, role: Role, blocks: Vec<Value>) {
    let role = if role == Role::User {
        "user"
    } else {
        "assistant"
    };
    match messages.last_mut() {
        Some(last) if last["role"] == role => last["content"]
            .as_array_mut()
            .expect("content is an array")
            .extend(blocks),
        _ => messages.push(json!({"role": role, "content": blocks})),
    }
}

pub(crate) fn object<'a>(
    v: &'a Value,
    field: &str,
) -> Result<&'a Map<String, Value>, TranslateError> {
    v.as_object()
        .ok_or_else(|| invalid(field, "must be an object"))
}

pub(crate) fn array<'a>(v: &'a Value, field: &str) -> Result<&'a Vec<Value>, TranslateError> {
    v.as_array()
        .ok_or_else(|| invalid(field, "must be an array"))
}

pub(crate) fn string(v: &Value, field: &str) -> Result<String, TranslateError> {
    v.as_str()
        .map(str::to_owned)
        .ok_or_else(|| invalid(field, "must be a string"))
}

pub(crate) fn boolean(v: &Value, field: &str) -> Result<bool, TranslateError> {
    v.as_bool()
        .ok_or_else(|| invalid(field, "must be a boolean"))
}

pub(crate) fn count(v: &Value, field: &str) -> Result<u64, TranslateError> {
    v.as_u64()
        .ok_or_else(|| invalid(field, "must be a non-negative integer"))
}

pub(crate) fn number(v: &Value, field: &str) -> Result<Number, TranslateError> {
    match v {
        Value::Number(n) => Ok(n.clone()),
        _ => Err(invalid(field, "must be a number")),
    }
}

/// A required key of an object.
/// `o[key]`, required; `at` is the object's path (a `&str`, or a closure formatting it
/// only for the error).
pub(crate) fn need<'a>(
    o: &'a Map<String, Value>,
    key: &str,
    at: impl At,
) -> Result<&'a Value, TranslateError> {
    o.get(key)
        .filter(|v| !v.is_null())
        .ok_or_else(|| invalid(format!("{}.{key}", at.path()), "is required"))
}

/// [`need`], for a value the caller takes parts of.
pub(crate) fn need_mut<'a>(
    o: &'a mut Map<String, Value>,
    key: &str,
    at: impl At,
) -> Result<&'a mut Value, TranslateError> {
    o.get_mut(key)
        .filter(|v| !v.is_null())
        .ok_or_else(|| invalid(format!("{}.{key}", at.path()), "is required"))
}

/// A field path, or what builds it.
pub(crate) trait At {
    fn path(&self) -> String;
}

impl At for &str {
    fn path(&self) -> String {
        (*self).to_owned()
    }
}

impl At for &String {
    fn path(&self) -> String {
        (*self).clone()
    }
}

impl<F: Fn() -> String> At for &F {
    fn path(&self) -> String {
        self()
    }
}

/// `stop`-style values: a string or an array of strings.
pub(crate) fn strings(v: &Value, field: &str) -> Result<Vec<String>, TranslateError> {
    match v {
        Value::String(s) => Ok(vec![s.clone()]),
        Value::Array(a) => a
            .iter()
            .enumerate()
            .map(|(i, s)| string(s, &format!("{field}[{i}]")))
            .collect(),
        _ => Err(invalid(field, "must be a string or an array of strings")),
    }
}

/// Whether a value is absent in effect (null, false, 0, empty string/array/object): such a
/// value of an untranslatable field changes nothing and is accepted.
pub(crate) fn is_inert(v: &Value) -> bool {
    match v {
        Value::Null => true,
        Value::Bool(b) => !b,
        Value::Number(n) => n.as_f64() == Some(0.0),
        Value::String(s) => s.is_empty(),
        Value::Array(a) => a.is_empty(),
        Value::Object(o) => o.is_empty(),
    }
}

/// Writes `s` as a JSON string literal, escaped exactly as serde_json escapes it. serde_json
/// looks each byte up in a table: the text of a translated request's messages cost ~6
/// instructions a byte that way; [`scan::plain_len`] skips plain runs 32 bytes a step.
pub(crate) fn write_str(out: &mut impl Sink, s: &str) {
    out.reserve(s.len() + 2);
    out.put("\"");
    let b = s.as_bytes();
    let mut start = 0;
    loop {
        let i = start + scan::plain_len(&b[start..]);
        // Special bytes are ASCII: `i` is a character boundary.
        out.put(&s[start..i]);
        let Some(&c) = b.get(i) else {
            break;
        };
        match c {
            b'"' => out.put("\\\""),
            b'\\' => out.put("\\\\"),
            b'\n' => out.put("\\n"),
            b'\r' => out.put("\\r"),
            b'\t' => out.put("\\t"),
            0x08 => out.put("\\b"),
            0x0c => out.put("\\f"),
            _ => {
                const HEX: &str = "0123456789abcdef";
                let (hi, lo) = (usize::from(c >> 4), usize::from(c & 0xf));
                out.put("\\u00");
                out.put(&HEX[hi..=hi]);
                out.put(&HEX[lo..=lo]);
            }
        }
        start = i + 1;
    }
    out.put("\"");
}

/// Where [`write_str`] writes.
pub(crate) trait Sink {
    fn reserve(&mut self, n: usize);
    fn put(&mut self, s: &str);
}

impl Sink for String {
    fn reserve(&mut self, n: usize) {
        String::reserve(self, n);
    }
    fn put(&mut self, s: &str) {
        self.push_str(s);
    }
}

impl Sink for Vec<u8> {
    fn reserve(&mut self, n: usize) {
        Vec::reserve(self, n);
    }
    fn put(&mut self, s: &str) {
        self.extend_from_slice(s.as_bytes());
    }
}

/// serde_json's marker for a raw JSON fragment (what `RawValue` serializes as): the
/// fragment is written verbatim.
const RAW_TOKEN: &str = "$serde_json::private::RawValue";

/// Serializes `json`, a whole JSON value, as it is (as `RawValue` does).
pub(crate) fn raw_fragment<S: serde::Serializer>(json: &str, ser: S) -> Result<S::Ok, S::Error> {
    use serde::ser::SerializeStruct;
    let mut st = ser.serialize_struct(RAW_TOKEN, 1)?;
    st.serialize_field(RAW_TOKEN, json)?;
    st.end()
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn push_turn_merges_consecutive_turns_of_one_role() {
        let mut m = Vec::new();
        push_turn(&mut m, Role::User, vec![json!(1)]);
        push_turn(&mut m, Role::User, vec![json!(2)]);
        push_turn(&mut m, Role::Assistant, vec![json!(3)]);
        push_turn(&mut m, Role::User, vec![json!(4)]);
        assert_eq!(
            m,
            [
                json!({"role": "user", "content": [1, 2]}),
                json!({"role": "assistant", "content": [3]}),
                json!({"role": "user", "content": [4]}),
            ]
        );
    }

    proptest! {
        #[test]
        fn write_str_escapes_as_serde_json(s in "\\PC*|[\\x00-\\x7f]{0,80}") {
            let mut out = String::new();
            write_str(&mut out, &s);
            prop_assert_eq!(out, serde_json::to_string(&s).unwrap());
        }
    }
}
