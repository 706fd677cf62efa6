//! Structured output: a request that asks for JSON (a schema, or a bare JSON object) is
//! answered with a JSON text instead of the ordinary prose, built from the schema alone.
//!
//! Where each dialect asks for it (read only when present, so the plain path stays cheap):
//!
//! - chat: `response_format` `{"type":"json_schema","json_schema":{"schema":S}}`, or
//!   `{"type":"json_object"}`;
//! - messages: `output_config.format` (or the older beta's top-level `output_format`)
//!   `{"type":"json_schema","schema":S}`;
//! - responses: `text.format` `{"type":"json_schema","schema":S}`, or `{"type":"json_object"}`;
//! - Gemini: `generationConfig` (or `generation_config`) `responseJsonSchema` /
//!   `responseSchema` (snake_case too) with `responseMimeType: "application/json"` (a schema
//!   with no mime type counts as well; another mime type does not), or that mime type alone.
//!
//! The answer to a schema is [`value_text`]'s; to a bare JSON object [`BARE_OBJECT`].

use serde::de::{MapAccess, Visitor};
use serde::{Deserialize, Deserializer};
use serde_json::value::RawValue;
use serde_json::Value;

use super::json::json_str;
use crate::dialect::Dialect;

/// The answer to a request for a JSON object without a schema.
pub(crate) const BARE_OBJECT: &str = r#"{"mock":"json"}"#;

/// Nesting past which a schema is answered with `null` (a self-similar schema cannot
/// recurse without end: the walk follows the schema's text, which is finite, but stays
/// shallow anyway).
const MAX_DEPTH: usize = 64;

/// What JSON a request asks for.
#[derive(Debug)]
pub(crate) enum Format<'a> {
    /// A value matching this JSON schema (its text as the client wrote it).
    Schema(&'a RawValue),
    /// Any JSON object.
    Object,
}

impl PartialEq for Format<'_> {
    fn eq(&self, other: &Self) -> bool {
        match (self, other) {
            (Format::Schema(a), Format::Schema(b)) => a.get() == b.get(),
            (Format::Object, Format::Object) => true,
            _ => false,
        }
    }
}

impl Format<'_> {
    /// The answer's text.
    pub(crate) fn text(&self) -> String {
        match self {
            Format::Schema(schema) => value_text(schema.get()),
            Format::Object => BARE_OBJECT.to_owned(),
        }
    }
}

/// The format fields of a non-Gemini request, as written (see `probe`).
#[derive(Debug, Default)]
pub(crate) struct Requested<'a> {
    /// chat `response_format`
    pub response_format: Option<&'a RawValue>,
    /// messages `output_config`
    pub output_config: Option<&'a RawValue>,
    /// messages (older beta) `output_format`
    pub output_format: Option<&'a RawValue>,
    /// responses `text`
    pub text: Option<&'a RawValue>,
}

/// By text (`RawValue` has no equality of its own).
impl PartialEq for Requested<'_> {
    fn eq(&self, other: &Self) -> bool {
        let text = |r: &Self| {
            [r.response_format, r.output_config, r.output_format, r.text]
                .map(|f| f.map(RawValue::get))
        };
        text(self) == text(other)
    }
}

impl Eq for Requested<'_> {}

impl<'a> Requested<'a> {
    /// What this request of `dialect` asks for; `None`: prose.
    pub(crate) fn format(&self, dialect: Dialect) -> Option<Format<'a>> {
        match dialect {
            Dialect::Chat => chat_format(self.response_format?),
            Dialect::Messages => {
                #[derive(Deserialize)]
                struct OutputConfig<'a> {
                    #[serde(borrow, default)]
                    format: Option<&'a RawValue>,
                }
                let nested = self
                    .output_config
                    .and_then(|c| serde_json::from_str::<OutputConfig>(c.get()).ok())
                    .and_then(|c| c.format);
                typed_format(nested.or(self.output_format)?, false)
            }
            Dialect::Responses => {
                #[derive(Deserialize)]
                struct Text<'a> {
                    #[serde(borrow, default)]
                    format: Option<&'a RawValue>,
                }
                let text: Text = serde_json::from_str(self.text?.get()).ok()?;
                typed_format(text.format?, true)
            }
            Dialect::Gemini => None,
        }
    }
}

/// `{"type": "json_schema", "schema": S}` (messages, responses); `json_object` counts when
/// the dialect has it.
fn typed_format(format: &RawValue, json_object: bool) -> Option<Format<'_>> {
    #[derive(Deserialize)]
    struct Typed<'a> {
        #[serde(rename = "type", default)]
        kind: Option<String>,
        #[serde(borrow, default)]
        schema: Option<&'a RawValue>,
    }
    let typed: Typed = serde_json::from_str(format.get()).ok()?;
    match typed.kind.as_deref()? {
        "json_schema" => Some(typed.schema.map_or(Format::Object, Format::Schema)),
        "json_object" if json_object => Some(Format::Object),
        _ => None,
    }
}

/// Chat's `response_format`: `json_schema` (the schema under `json_schema.schema`) or
/// `json_object`.
fn chat_format(format: &RawValue) -> Option<Format<'_>> {
    #[derive(Deserialize)]
    struct ResponseFormat<'a> {
        #[serde(rename = "type", default)]
        kind: Option<String>,
        #[serde(borrow, default)]
        json_schema: Option<JsonSchema<'a>>,
    }
    #[derive(Deserialize)]
    struct JsonSchema<'a> {
        #[serde(borrow, default)]
        schema: Option<&'a RawValue>,
    }
    let f: ResponseFormat = serde_json::from_str(format.get()).ok()?;
    match f.kind.as_deref()? {
        "json_schema" => Some(
            f.json_schema
                .and_then(|s| s.schema)
                .map_or(Format::Object, Format::Schema),
        ),
        "json_object" => Some(Format::Object),
        _ => None,
    }
}

/// What a Gemini `generationConfig` asks for.
pub(crate) fn gemini_format(generation_config: &RawValue) -> Option<Format<'_>> {
    #[derive(Deserialize)]
    struct GenerationConfig<'a> {
        #[serde(default, rename = "responseMimeType", alias = "response_mime_type")]
        mime: Option<String>,
        #[serde(
            borrow,
            default,
            rename = "responseJsonSchema",
            alias = "response_json_schema"
        )]
        json_schema: Option<&'a RawValue>,
        #[serde(borrow, default, rename = "responseSchema", alias = "response_schema")]
        schema: Option<&'a RawValue>,
    }
    let c: GenerationConfig = serde_json::from_str(generation_config.get()).ok()?;
    let json = c
        .mime
        .as_deref()
        .map(|mime| mime.trim().eq_ignore_ascii_case("application/json"));
    match (json, c.json_schema.or(c.schema)) {
        (Some(false), _) | (None, None) => None,
        (_, Some(schema)) => Some(Format::Schema(schema)),
        (Some(true), None) => Some(Format::Object),
    }
}

/// A JSON text matching `schema` (a JSON schema or Gemini's `Schema`, types in either case),
/// deterministic: an object has every property in `properties`, in the schema's order; a
/// string is `"mock <property>"` (an array's items take the array's property, the top level
/// `"mock mock"`), an integer or number its
/// `minimum` or 1, a boolean `true`, an array one item, `null` or an unknown type `null`; an
/// `enum` or `const` gives its (first) value; a `type` list takes its first non-null type;
/// `anyOf`/`oneOf` take their first non-null branch. Without a `type`, `properties` means an
/// object and `items` an array.
pub(crate) fn value_text(schema: &str) -> String {
    let mut out = String::new();
    write_value(schema, "mock", 0, &mut out);
    out
}

/// The properties of an object schema, in the order written.
struct Properties<'a>(Vec<(String, &'a RawValue)>);

impl<'de: 'a, 'a> Deserialize<'de> for Properties<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Ordered;
        impl<'de> Visitor<'de> for Ordered {
            type Value = Properties<'de>;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("an object of schemas")
            }
            fn visit_map<M: MapAccess<'de>>(self, mut map: M) -> Result<Self::Value, M::Error> {
                let mut out = Vec::new();
                while let Some((k, v)) = map.next_entry::<String, &'de RawValue>()? {
                    out.push((k, v));
                }
                Ok(Properties(out))
            }
        }
        d.deserialize_map(Ordered)
    }
}

#[derive(Deserialize, Default)]
struct Schema<'a> {
    #[serde(rename = "type", default)]
    kind: Option<Value>,
    #[serde(borrow, default)]
    properties: Option<Properties<'a>>,
    #[serde(borrow, default)]
    items: Option<&'a RawValue>,
    #[serde(rename = "enum", default)]
    choices: Option<Vec<Value>>,
    #[serde(rename = "const", default)]
    constant: Option<Value>,
    #[serde(default)]
    minimum: Option<Value>,
    #[serde(borrow, default, rename = "anyOf", alias = "any_of")]
    any_of: Option<Vec<&'a RawValue>>,
    #[serde(borrow, default, rename = "oneOf")]
    one_of: Option<Vec<&'a RawValue>>,
}

impl Schema<'_> {
    /// The type named, lower-cased: the first non-null of a list.
    fn kind(&self) -> Option<String> {
        let name = match self.kind.as_ref()? {
            Value::String(s) => s.as_str(),
            Value::Array(kinds) => kinds
                .iter()
                .filter_map(Value::as_str)
                .find(|k| !k.eq_ignore_ascii_case("null"))?,
            _ => return None,
        };
        Some(name.to_ascii_lowercase())
    }
}

/// Whether a schema only admits `null`.
fn is_null_schema(schema: &RawValue) -> bool {
    serde_json::from_str::<Schema>(schema.get())
        .ok()
        .and_then(|s| s.kind)
        .and_then(|k| k.as_str().map(|k| k.eq_ignore_ascii_case("null")))
        .unwrap_or(false)
}

fn write_value(schema: &str, name: &str, depth: usize, out: &mut String) {
    let schema: Schema = match serde_json::from_str(schema) {
        Ok(s) if depth < MAX_DEPTH => s,
        _ => return out.push_str("null"),
    };
    if let Some(constant) = &schema.constant {
        return out.push_str(&constant.to_string());
    }
    if let Some(first) = schema.choices.as_ref().and_then(|c| c.first()) {
        return out.push_str(&first.to_string());
    }
    let branch = schema
        .any_of
        .iter()
        .chain(&schema.one_of)
        .flatten()
        .find(|b| !is_null_schema(b));
    if schema.kind.is_none() {
        if let Some(branch) = branch {
            return write_value(branch.get(), name, depth + 1, out);
        }
    }
    let kind = schema.kind().or_else(|| {
        if schema.properties.is_some() {
            Some("object".into())
        } else if schema.items.is_some() {
            Some("array".into())
        } else {
            None
        }
    });
    match kind.as_deref() {
        Some("object") => {
            out.push('{');
            for (i, (key, property)) in schema.properties.iter().flat_map(|p| &p.0).enumerate() {
                if i > 0 {
                    out.push(',');
                }
                out.push_str(&json_str(key));
                out.push(':');
                write_value(property.get(), key, depth + 1, out);
            }
            out.push('}');
        }
        Some("array") => {
            out.push('[');
            if let Some(items) = schema.items {
                write_value(items.get(), name, depth + 1, out);
            }
            out.push(']');
        }
        Some("string") => out.push_str(&json_str(&format!("mock {name}"))),
        Some("integer") => {
            let n = schema
                .minimum
                .as_ref()
                .and_then(|m| m.as_i64().or_else(|| m.as_f64().map(|f| f.ceil() as i64)))
                .unwrap_or(1);
            out.push_str(&n.to_string());
        }
        Some("number") => {
            let n = schema
                .minimum
                .as_ref()
                .and_then(Value::as_f64)
                .unwrap_or(1.0);
            out.push_str(&serde_json::Number::from_f64(n).map_or("1.0".into(), |n| n.to_string()));
        }
        Some("boolean") => out.push_str("true"),
        _ => out.push_str("null"),
    }
}

/// `text` in `chunks` deltas (at least one, at most one per character), cut on character
/// boundaries, as even as the characters allow.
pub(crate) fn deltas(text: &str, chunks: usize) -> Vec<&str> {
    let chars = text.chars().count();
    let n = chunks.clamp(1, chars.max(1));
    let mut bounds: Vec<usize> = text.char_indices().map(|(i, _)| i).collect();
    bounds.push(text.len());
    (0..n)
        .map(|k| &text[bounds[k * chars / n]..bounds[(k + 1) * chars / n]])
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn raw(s: &str) -> Box<RawValue> {
        RawValue::from_string(s.to_owned()).unwrap()
    }

    #[test]
    fn gemini_router_schema_in_upper_case_types() {
        let schema = r#"{"type":"OBJECT","properties":{
            "complexity_reasoning":{"type":"STRING","description":"why"},
            "complexity_score":{"type":"INTEGER"}},
            "required":["complexity_reasoning","complexity_score"]}"#;
        assert_eq!(
            value_text(schema),
            r#"{"complexity_reasoning":"mock complexity_reasoning","complexity_score":1}"#
        );
    }

    #[test]
    fn every_type_in_schema_order() {
        let schema = r#"{"type":"object","properties":{
            "z":{"type":"string","enum":["b","a"]},
            "n":{"type":"number"},
            "m":{"type":"number","minimum":2.5},
            "i":{"type":"integer","minimum":3},
            "b":{"type":"Boolean"},
            "a":{"type":"array","items":{"type":"object","properties":{"x":{"type":"string"}}}},
            "t":{"type":["null","integer"]},
            "u":{"anyOf":[{"type":"null"},{"type":"string"}]},
            "c":{"const":"fixed"},
            "nul":{"type":"null"},
            "odd":{"type":"mystery"},
            "bare":{},
            "implied":{"properties":{"k":{"type":"boolean"}}},
            "list":{"items":{"type":"integer"}},
            "q\"":{"type":"string"}}}"#;
        let text = value_text(schema);
        assert_eq!(
            text,
            concat!(
                r#"{"z":"b","n":1.0,"m":2.5,"i":3,"b":true,"a":[{"x":"mock x"}],"t":1,"#,
                r#""u":"mock u","c":"fixed","nul":null,"odd":null,"bare":null,"#,
                r#""implied":{"k":true},"list":[1],"q\"":"mock q\""}"#
            )
        );
        serde_json::from_str::<Value>(&text).unwrap();
        assert_eq!(value_text(r#"{"type":"string"}"#), r#""mock mock""#);
        assert_eq!(value_text("7"), "null");
    }

    #[test]
    fn each_dialect_names_its_format() {
        let schema = r#"{"type":"object"}"#;
        let chat = Requested {
            response_format: Some(&raw(&format!(
                r#"{{"type":"json_schema","json_schema":{{"name":"r","schema":{schema}}}}}"#
            ))),
            ..Requested::default()
        };
        assert!(matches!(chat.format(Dialect::Chat), Some(Format::Schema(s)) if s.get() == schema));
        assert_eq!(chat.format(Dialect::Messages), None);
        let object = raw(r#"{"type":"json_object"}"#);
        let chat = Requested {
            response_format: Some(&object),
            ..Requested::default()
        };
        assert_eq!(chat.format(Dialect::Chat), Some(Format::Object));
        let text = raw(r#"{"type":"text"}"#);
        let chat = Requested {
            response_format: Some(&text),
            ..Requested::default()
        };
        assert_eq!(chat.format(Dialect::Chat), None);

        let config = raw(&format!(
            r#"{{"effort":"low","format":{{"type":"json_schema","schema":{schema}}}}}"#
        ));
        let messages = Requested {
            output_config: Some(&config),
            ..Requested::default()
        };
        assert!(matches!(
            messages.format(Dialect::Messages),
            Some(Format::Schema(_))
        ));
        let effort_only = raw(r#"{"effort":"low"}"#);
        let messages = Requested {
            output_config: Some(&effort_only),
            ..Requested::default()
        };
        assert_eq!(messages.format(Dialect::Messages), None);

        let text = raw(&format!(
            r#"{{"verbosity":"low","format":{{"type":"json_schema","name":"r","schema":{schema}}}}}"#
        ));
        let responses = Requested {
            text: Some(&text),
            ..Requested::default()
        };
        assert!(matches!(
            responses.format(Dialect::Responses),
            Some(Format::Schema(_))
        ));
        let plain = raw(r#"{"format":{"type":"text"}}"#);
        let responses = Requested {
            text: Some(&plain),
            ..Requested::default()
        };
        assert_eq!(responses.format(Dialect::Responses), None);
    }

    #[test]
    fn gemini_needs_a_schema_or_the_json_mime_type() {
        let s = r#"{"type":"OBJECT"}"#;
        for config in [
            format!(r#"{{"responseMimeType":"application/json","responseJsonSchema":{s}}}"#),
            format!(r#"{{"responseMimeType":"application/json","responseSchema":{s}}}"#),
            format!(r#"{{"response_mime_type":"application/json","response_json_schema":{s}}}"#),
            format!(r#"{{"response_schema":{s}}}"#),
        ] {
            let config = raw(&config);
            assert!(
                matches!(gemini_format(&config), Some(Format::Schema(r)) if r.get() == s),
                "{config}"
            );
        }
        let bare = raw(r#"{"responseMimeType":"application/json"}"#);
        assert_eq!(gemini_format(&bare), Some(Format::Object));
        for config in [
            r#"{"temperature":1}"#.to_owned(),
            r#"{"responseMimeType":"text/plain"}"#.to_owned(),
            format!(r#"{{"responseMimeType":"text/x.enum","responseSchema":{s}}}"#),
        ] {
            assert_eq!(gemini_format(&raw(&config)), None, "{config}");
        }
    }

    #[test]
    fn deltas_cut_on_characters_and_rejoin() {
        let text = r#"{"a":"mock é日本"}"#;
        for chunks in [0, 1, 3, 4, 100] {
            let d = deltas(text, chunks);
            assert_eq!(d.concat(), text);
            assert_eq!(d.len(), chunks.clamp(1, text.chars().count()));
            assert!(d.iter().all(|d| !d.is_empty()));
        }
        assert_eq!(deltas("", 4), vec![""]);
    }
}
