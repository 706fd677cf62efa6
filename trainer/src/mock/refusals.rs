//! What the real APIs refuse with a 400 and the mock would otherwise accept: a gateway that
//! forwards such a request must fail here as it would in production (issue 51). Each rule
//! cites the vendor's reference; the error texts are the vendors'.

use serde_json::Value;

use crate::dialect::{Dialect, GeminiCall};

/// Claude models that take `temperature` or `top_p`, not both: Anthropic's "Migrating to
/// Claude 4.5" (<https://platform.claude.com/docs/en/about-claude/models/migrating-to-claude-4>),
/// enforced since Opus 4.1; Bedrock and Vertex answer the same.
const ONE_SAMPLER: [&str; 6] = [
    "claude-opus-4-1",
    "claude-sonnet-4-5",
    "claude-haiku-4-5",
    "claude-opus-4-5",
    "claude-sonnet-4-6",
    "claude-opus-4-6",
];

/// Claude models that take no sampling parameters: Anthropic's "Migrating to Claude Opus
/// 4.7" (<https://platform.claude.com/docs/en/about-claude/models/migration-guide>).
const NO_SAMPLER: [&str; 1] = ["claude-opus-4-7"];

/// The 400 message the real API would answer `body` with, if any. `path` carries the model
/// for Gemini (and Claude on Vertex, `vertex_model`).
pub(crate) fn refused(
    dialect: Dialect,
    gemini: Option<&GeminiCall<'_>>,
    vertex_model: Option<&str>,
    body: &[u8],
) -> Option<String> {
    match (dialect, gemini) {
        (Dialect::Gemini, Some(call)) if needs_signatures(call.model) => {
            // Only a body with calls can break the rules: most requests skip the parse.
            if !contains(body, b"functionCall") {
                return None;
            }
            let v: Value = serde_json::from_slice(body).ok()?;
            gemini_calls(&v)
        }
        (Dialect::Messages, _) => {
            if !contains(body, b"\"temperature\"") && !contains(body, b"\"top_p\"") {
                return None;
            }
            let v: Value = serde_json::from_slice(body).ok()?;
            let model = vertex_model.or_else(|| v["model"].as_str())?;
            anthropic_sampling(model, &v)
        }
        (Dialect::Chat | Dialect::Responses, _) => {
            if !contains(body, b"\"temperature\"") && !contains(body, b"\"top_p\"") {
                return None;
            }
            let v: Value = serde_json::from_slice(body).ok()?;
            openai_sampling(v["model"].as_str()?, &v)
        }
        _ => None,
    }
}

/// OpenAI's reasoning models, which take `temperature` and `top_p` at their default (1)
/// only: OpenAI's reasoning guide, "Limitations"
/// (<https://platform.openai.com/docs/guides/reasoning>); the error text is its answer to
/// another value. Their chat models (`gpt-5-chat-latest`) take any.
const DEFAULT_SAMPLING_ONLY: [&str; 4] = ["o1", "o3", "o4-mini", "gpt-5"];

fn openai_sampling(model: &str, v: &Value) -> Option<String> {
    let reasoning = DEFAULT_SAMPLING_ONLY.iter().any(|m| {
        model
            .strip_prefix(m)
            .is_some_and(|rest| rest.is_empty() || rest.starts_with(['-', '.']))
    });
    if !reasoning || model.contains("-chat") {
        return None;
    }
    ["temperature", "top_p"].into_iter().find_map(|k| {
        let x = v.get(k).filter(|x| !x.is_null())?;
        (x.as_f64() != Some(1.0)).then(|| {
            format!("Unsupported value: '{k}' does not support {x} with this model. Only the default (1) value is supported.")
        })
    })
}

fn contains(body: &[u8], needle: &[u8]) -> bool {
    body.windows(needle.len()).any(|w| w == needle)
}

fn anthropic_sampling(model: &str, v: &Value) -> Option<String> {
    let has = |k: &str| v.get(k).is_some_and(|x| !x.is_null());
    if NO_SAMPLER.iter().any(|m| model.contains(m)) && has("temperature") {
        return Some("`temperature` is deprecated for this model.".into());
    }
    if ONE_SAMPLER.iter().any(|m| model.contains(m)) && has("temperature") && has("top_p") {
        return Some(
            "`temperature` and `top_p` cannot both be specified for this model. Please use only one."
                .into(),
        );
    }
    // Messages API reference: temperature "Ranges from 0.0 to 1.0".
    match v["temperature"].as_f64() {
        Some(t) if !(0.0..=1.0).contains(&t) => {
            Some("temperature: range: 0 <= temperature <= 1".into())
        }
        _ => None,
    }
}

/// Gemini 3 and later validate thought signatures
/// (<https://ai.google.dev/gemini-api/docs/thought-signatures>).
fn needs_signatures(model: &str) -> bool {
    model.contains("gemini-3") || model.contains("gemini-4")
}

/// Gemini 3's two rules on calls: the first call of each model turn carries a
/// `thoughtSignature` (Google's placeholder counts), and a turn of function responses
/// answers as many calls as the model turn before it made
/// (<https://ai.google.dev/gemini-api/docs/function-calling>).
fn gemini_calls(v: &Value) -> Option<String> {
    let contents = v["contents"].as_array()?;
    let mut calls_before = 0;
    for (i, c) in contents.iter().enumerate() {
        let parts = c["parts"].as_array().map(Vec::as_slice).unwrap_or_default();
        let calls: Vec<&Value> = parts
            .iter()
            .filter(|p| p.get("functionCall").is_some())
            .collect();
        let responses = parts
            .iter()
            .filter(|p| p.get("functionResponse").is_some())
            .count();
        if c["role"] == "model" {
            if let Some(first) = calls.first() {
                if first.get("thoughtSignature").is_none() {
                    let name = first["functionCall"]["name"].as_str().unwrap_or("");
                    return Some(format!(
                        "Function call `{name}` in the {} content block is missing a `thought_signature`.",
                        i + 1
                    ));
                }
            }
            calls_before = calls.len();
        } else if responses > 0 {
            if responses != calls_before {
                return Some("Please ensure that the number of function response parts is equal to the number of function call parts of the function call turn.".into());
            }
            calls_before = 0;
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn messages(v: Value) -> Option<String> {
        refused(Dialect::Messages, None, None, v.to_string().as_bytes())
    }

    #[test]
    fn claude_4_5_refuses_temperature_with_top_p() {
        let both = json!({"model": "claude-sonnet-4-5", "temperature": 1, "top_p": 0.95});
        assert!(messages(both.clone()).unwrap().contains("cannot both"));
        // On Vertex the model is the path's.
        let body = both.to_string();
        assert!(refused(
            Dialect::Messages,
            None,
            Some("claude-opus-4-5@20251101"),
            body.as_bytes()
        )
        .is_some());
        assert!(messages(json!({"model": "claude-sonnet-4-5", "temperature": 1})).is_none());
        assert!(
            messages(json!({"model": "claude-3-7-sonnet", "temperature": 1, "top_p": 0.9}))
                .is_none()
        );
        assert!(messages(json!({"model": "claude-opus-4-7", "temperature": 0.5})).is_some());
        assert!(messages(json!({"model": "claude-3-7-sonnet", "temperature": 1.5})).is_some());
    }

    #[test]
    fn openai_reasoning_models_refuse_other_than_the_default_sampling() {
        let chat = |v: Value| refused(Dialect::Chat, None, None, v.to_string().as_bytes());
        let cold = json!({"model": "gpt-5-mini", "temperature": 0.2, "messages": []});
        assert!(chat(cold.clone())
            .unwrap()
            .contains("Only the default (1) value is supported"));
        let body = json!({"model": "o3", "top_p": 0.9, "input": "hi"}).to_string();
        assert!(refused(Dialect::Responses, None, None, body.as_bytes()).is_some());
        assert!(chat(json!({"model": "o4-mini", "temperature": 1, "top_p": 1})).is_none());
        assert!(chat(json!({"model": "gpt-5-chat-latest", "temperature": 0.2})).is_none());
        assert!(chat(json!({"model": "gpt-4o", "temperature": 0.2})).is_none());
    }

    fn gemini(model: &str, contents: Value) -> Option<String> {
        let call = GeminiCall {
            version: "v1beta",
            model,
            method: crate::dialect::GeminiMethod::GenerateContent,
        };
        let body = json!({ "contents": contents }).to_string();
        refused(Dialect::Gemini, Some(&call), None, body.as_bytes())
    }

    #[test]
    fn gemini_3_refuses_unsigned_calls_and_unmatched_responses() {
        let call = |sig: Option<&str>| {
            let mut p = json!({"functionCall": {"name": "f", "args": {}}});
            if let Some(s) = sig {
                p["thoughtSignature"] = json!(s);
            }
            p
        };
        let answer = json!({"functionResponse": {"name": "f", "response": {}}});
        let turns = |first: Value, n: usize| {
            json!([{"role": "user", "parts": [{"text": "hi"}]},
                {"role": "model", "parts": [first, call(None)]},
                {"role": "user", "parts": vec![answer.clone(); n]}])
        };
        let unsigned = turns(call(None), 2);
        assert!(gemini("gemini-3-pro-preview", unsigned.clone())
            .unwrap()
            .contains("thought_signature"));
        assert!(gemini("gemini-2.5-pro", unsigned).is_none());
        let placeholder = call(Some("skip_thought_signature_validator"));
        assert!(gemini("gemini-3-pro-preview", turns(placeholder.clone(), 2)).is_none());
        assert!(gemini("gemini-3-pro-preview", turns(placeholder, 1))
            .unwrap()
            .contains("number of function response parts"));
    }
}
