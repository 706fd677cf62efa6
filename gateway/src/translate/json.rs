//! Small accessors over `serde_json::Value` that name the offending field in their errors.

use serde_json::{Map, Number, Value};

use super::TranslateError;

pub(crate) fn invalid(field: impl Into<String>, why: impl Into<String>) -> TranslateError {
    TranslateError::Invalid {
        field: field.into(),
        why: why.into(),
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
