//! Gemini's schema dialect (an OpenAPI 3.0 subset: upper-case `type` names, `nullable`)
//! read as the JSON Schema the other dialects take.

use serde_json::{Map, Value};

/// `schema` with its `type` names lower-cased and `nullable: true` folded into the type,
/// in every nested schema; everything else as it was.
pub(crate) fn lowered(schema: &Value) -> Value {
    match schema {
        Value::Object(o) => {
            let mut out = Map::with_capacity(o.len());
            let nullable = o.get("nullable").and_then(Value::as_bool) == Some(true);
            for (k, v) in o {
                match k.as_str() {
                    "type" => {
                        let t = lower_type(v);
                        let t = match (nullable, t) {
                            (true, Value::String(s)) => Value::Array(vec![s.into(), "null".into()]),
                            (_, t) => t,
                        };
                        out.insert(k.clone(), t);
                    }
                    "nullable" => {}
                    // Maps of name -> schema.
                    "properties" | "$defs" | "definitions" => {
                        let m = v.as_object().map(|m| {
                            m.iter()
                                .map(|(n, s)| (n.clone(), lowered(s)))
                                .collect::<Map<_, _>>()
                        });
                        out.insert(k.clone(), m.map_or_else(|| v.clone(), Value::Object));
                    }
                    // A schema, or a list of them.
                    "items"
                    | "anyOf"
                    | "oneOf"
                    | "allOf"
                    | "not"
                    | "additionalProperties"
                    | "prefixItems" => {
                        out.insert(k.clone(), lowered(v));
                    }
                    _ => {
                        out.insert(k.clone(), v.clone());
                    }
                }
            }
            Value::Object(out)
        }
        Value::Array(a) => Value::Array(a.iter().map(lowered).collect()),
        other => other.clone(),
    }
}

fn lower_type(v: &Value) -> Value {
    match v {
        Value::String(s) => Value::String(s.to_ascii_lowercase()),
        Value::Array(a) => Value::Array(a.iter().map(lower_type).collect()),
        other => other.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn gemini_cli_router_schema() {
        let s = json!({"type": "OBJECT", "properties": {
            "reasoning": {"type": "STRING", "description": "why"},
            "model_choice": {"type": "STRING", "enum": ["flash", "pro"]},
            "tags": {"type": "ARRAY", "items": {"type": "STRING"}, "nullable": true}
        }, "required": ["reasoning", "model_choice"]});
        assert_eq!(
            lowered(&s),
            json!({"type": "object", "properties": {
                "reasoning": {"type": "string", "description": "why"},
                "model_choice": {"type": "string", "enum": ["flash", "pro"]},
                "tags": {"type": ["array", "null"], "items": {"type": "string"}}
            }, "required": ["reasoning", "model_choice"]})
        );
        // A property named `type` is a property, not a type name.
        let s = json!({"type": "object", "properties": {"type": {"type": "STRING"}}});
        assert_eq!(lowered(&s)["properties"]["type"], json!({"type": "string"}));
    }
}
