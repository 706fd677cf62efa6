//! Small accessors over `serde_json::Value` that name the offending field in their errors,
//! and the JSON pieces two codecs build alike.

use serde_json::{json, Map, Number, Value};

use super::errors::TranslateError;
use super::hub::Role;
use super::json::budget;

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

#[cfg(test)]
mod tests {
    use super::*;

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
}
