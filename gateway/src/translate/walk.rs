//! The walks the three request decoders (`chat`, `messages`, `responses`) share: over a
//! body's fields and over its `tools`; each dialect supplies only its own fields.

use serde_json::{json, Map, Value};

use super::errors::TranslateError;
use super::field::{array, object};
use super::hub::{Request, Strict, Tool};
use super::policy::Verdicts;

/// Decodes a request body: an object whose fields go to `field` one at a time, except
/// nulls (absent, in all three APIs) and `model` (the gateway chose the upstream's).
///
/// `field` may take what it keeps out of the value (a message's text) instead of copying
/// it: the body is decoded once and dropped.
pub(super) fn request(
    v: &mut Value,
    mut field: impl FnMut(&str, &mut Value, &mut Request) -> Result<(), TranslateError>,
) -> Result<Request, TranslateError> {
    let o = v
        .as_object_mut()
        .ok_or_else(|| super::field::invalid("body", "must be an object"))?;
    let mut r = Request::default();
    for (key, val) in o {
        if val.is_null() || key == "model" {
            continue;
        }
        field(key.as_str(), val, &mut r)?;
    }
    Ok(r)
}

/// Decodes `tools`: each entry an object (`tools[i]` in errors) that `tool` maps to hub
/// tools (none when it is dropped or refused; several for a namespace).
pub(super) fn tools<T: IntoIterator<Item = Tool>>(
    v: &Value,
    mut tool: impl FnMut(&str, &Map<String, Value>) -> Result<T, TranslateError>,
) -> Result<Vec<Tool>, TranslateError> {
    let mut out = Vec::new();
    for (i, t) in array(v, "tools")?.iter().enumerate() {
        let at = format!("tools[{i}]");
        out.extend(tool(&at, object(t, &at)?)?);
    }
    Ok(out)
}

/// A tool's `strict` at `field`: `None` when absent or null; not a boolean, a hint.
pub(super) fn strict(v: Option<&Value>, field: String, cx: &mut Verdicts) -> Option<Strict> {
    match v? {
        Value::Null => None,
        Value::Bool(on) => Some(Strict { on: *on, field }),
        _ => {
            cx.hint(&field);
            None
        }
    }
}

/// A tool's optional `description`.
pub(super) fn description(o: &Map<String, Value>) -> Option<String> {
    o.get("description")
        .and_then(Value::as_str)
        .map(str::to_owned)
}

/// The arguments schema of a tool that declares none: an object without properties.
pub(super) fn no_parameters() -> Value {
    json!({"type": "object", "properties": {}})
}
