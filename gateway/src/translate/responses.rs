//! OpenAI Responses codec: client requests into the hub and hub answers into Responses
//! objects. No provider is translated *to* Responses, so there is no upstream side.

use serde_json::{json, Value};

use super::hub::{
    Image, Message, Output, Part, Request, Response, Role, StopReason, Tool, ToolChoice, Usage,
};
use super::json::{
    array, boolean, count, invalid, is_inert, need, number, object, string, unsupported,
};
use super::{walk, TranslateError};

/// Accepted and ignored: storage and billing hints that cannot change the answer (nothing
/// is stored by a translated request, so `previous_response_id` is refused instead).
const IGNORED: [&str; 7] = [
    "store",
    "metadata",
    "service_tier",
    "prompt_cache_key",
    "safety_identifier",
    "stream_options",
    "prompt_cache_retention",
];

/// Decodes a Responses request body.
pub(crate) fn decode_request(v: &Value, api: &'static str) -> Result<Request, TranslateError> {
    walk::request(v, |k, val, r| {
        match k {
            "input" => decode_input(val, r)?,
            "instructions" => r.system.insert(0, string(val, k)?),
            "stream" => r.stream = boolean(val, k)?,
            "max_output_tokens" => r.max_tokens = Some(count(val, k)?),
            "temperature" => r.temperature = Some(number(val, k)?),
            "top_p" => r.top_p = Some(number(val, k)?),
            "user" => r.user = Some(string(val, k)?),
            "tools" => r.tools = decode_tools(val, api)?,
            "tool_choice" => r.tool_choice = Some(decode_tool_choice(val, api)?),
            "parallel_tool_calls" => r.parallel_tool_calls = Some(boolean(val, k)?),
            "truncation" if val == "disabled" => {}
            "text" if text_is_plain(val) => {}
            "include" | "reasoning" | "top_logprobs" | "background" if is_inert(val) => {}
            k if IGNORED.contains(&k) => {}
            _ => return Err(unsupported(k, api, "it has no equivalent there")),
        }
        Ok(())
    })
}

/// `text` asking for plain text output (the default); a JSON schema cannot be translated.
fn text_is_plain(v: &Value) -> bool {
    v.get("format")
        .is_none_or(|f| f.get("type").and_then(Value::as_str) == Some("text"))
        && v.get("verbosity").is_none_or(Value::is_null)
}

fn decode_input(v: &Value, r: &mut Request) -> Result<(), TranslateError> {
    if let Some(s) = v.as_str() {
        r.messages.push(Message {
            role: Role::User,
            parts: vec![Part::Text(s.to_owned())],
        });
        return Ok(());
    }
    for (i, item) in array(v, "input")?.iter().enumerate() {
        let at = format!("input[{i}]");
        let o = object(item, &at)?;
        let ty = o.get("type").and_then(Value::as_str).unwrap_or("message");
        match ty {
            "message" => {
                let role = need(o, "role", &at)?.as_str().unwrap_or_default();
                let content = need(o, "content", &at)?;
                let parts = content_parts(content, &format!("{at}.content"))?;
                match role {
                    "system" | "developer" => {
                        for p in parts {
                            match p {
                                Part::Text(t) => r.system.push(t),
                                _ => {
                                    return Err(invalid(
                                        format!("{at}.content"),
                                        "system content must be text",
                                    ))
                                }
                            }
                        }
                    }
                    "user" => push(r, Role::User, parts),
                    "assistant" => push(r, Role::Assistant, parts),
                    _ => {
                        return Err(invalid(
                            format!("{at}.role"),
                            format!("role {role:?} cannot be translated"),
                        ))
                    }
                }
            }
            "function_call" => {
                let part = Part::ToolCall {
                    id: string(need(o, "call_id", &at)?, &format!("{at}.call_id"))?,
                    name: string(need(o, "name", &at)?, &format!("{at}.name"))?,
                    arguments: string(need(o, "arguments", &at)?, &format!("{at}.arguments"))?,
                };
                push(r, Role::Assistant, vec![part]);
            }
            "function_call_output" => {
                let output = need(o, "output", &at)?;
                let content = match output {
                    Value::String(s) => vec![Part::Text(s.clone())],
                    _ => content_parts(output, &format!("{at}.output"))?,
                };
                let part = Part::ToolResult {
                    id: string(need(o, "call_id", &at)?, &format!("{at}.call_id"))?,
                    content,
                    is_error: false,
                };
                push(r, Role::User, vec![part]);
            }
            other => {
                return Err(invalid(
                    format!("{at}.type"),
                    format!("input item {other:?} cannot be translated"),
                ))
            }
        }
    }
    Ok(())
}

/// Appends parts, joining a message of the same role (a run of function calls is one
/// assistant turn, as in chat's `tool_calls`).
fn push(r: &mut Request, role: Role, parts: Vec<Part>) {
    match r.messages.last_mut() {
        Some(m) if m.role == role && role == Role::Assistant => m.parts.extend(parts),
        _ => r.messages.push(Message { role, parts }),
    }
}

fn content_parts(v: &Value, at: &str) -> Result<Vec<Part>, TranslateError> {
    if let Some(s) = v.as_str() {
        return Ok(vec![Part::Text(s.to_owned())]);
    }
    let mut out = Vec::new();
    for (i, p) in array(v, at)?.iter().enumerate() {
        let at = format!("{at}[{i}]");
        let o = object(p, &at)?;
        match o.get("type").and_then(Value::as_str) {
            Some("input_text" | "output_text") => out.push(Part::Text(string(
                need(o, "text", &at)?,
                &format!("{at}.text"),
            )?)),
            Some("refusal") => out.push(Part::Text(string(
                need(o, "refusal", &at)?,
                &format!("{at}.refusal"),
            )?)),
            Some("input_image") => {
                let url = o.get("image_url").and_then(Value::as_str).ok_or_else(|| {
                    invalid(
                        format!("{at}.image_url"),
                        "is required (file_id images cannot be translated)",
                    )
                })?;
                out.push(Part::Image(Image::from_url(url)));
            }
            other => {
                return Err(invalid(
                    format!("{at}.type"),
                    format!(
                        "content part {:?} cannot be translated",
                        other.unwrap_or("(none)")
                    ),
                ))
            }
        }
    }
    Ok(out)
}

fn decode_tools(v: &Value, api: &'static str) -> Result<Vec<Tool>, TranslateError> {
    walk::tools(v, |at, o| {
        if o.get("type").and_then(Value::as_str) != Some("function") {
            return Err(unsupported(
                format!("{at}.type"),
                api,
                "built-in tools (web_search, file_search, ...) run only on OpenAI",
            ));
        }
        Ok(Tool {
            name: string(need(o, "name", at)?, &format!("{at}.name"))?,
            description: walk::description(o),
            parameters: o
                .get("parameters")
                .filter(|p| !p.is_null())
                .cloned()
                .unwrap_or_else(walk::no_parameters),
        })
    })
}

fn decode_tool_choice(v: &Value, api: &'static str) -> Result<ToolChoice, TranslateError> {
    match v {
        Value::String(s) => match s.as_str() {
            "auto" => Ok(ToolChoice::Auto),
            "none" => Ok(ToolChoice::None),
            "required" => Ok(ToolChoice::Required),
            _ => Err(invalid("tool_choice", format!("unknown value {s:?}"))),
        },
        Value::Object(o) if o.get("type").and_then(Value::as_str) == Some("function") => o
            .get("name")
            .and_then(Value::as_str)
            .map(|n| ToolChoice::Named(n.to_owned()))
            .ok_or_else(|| invalid("tool_choice.name", "is required")),
        _ => Err(unsupported(
            "tool_choice",
            api,
            "only auto, none, required and function choices translate",
        )),
    }
}

pub(crate) fn usage_json(u: &Usage) -> Value {
    json!({
        "input_tokens": u.input,
        "input_tokens_details": {"cached_tokens": u.cache_read},
        "output_tokens": u.output,
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": u.input.saturating_add(u.output),
    })
}

/// `status` and `incomplete_details` for a stop reason.
pub(crate) fn status(stop: StopReason) -> (&'static str, Value) {
    match stop {
        StopReason::MaxTokens => ("incomplete", json!({"reason": "max_output_tokens"})),
        StopReason::ContentFilter => ("incomplete", json!({"reason": "content_filter"})),
        _ => ("completed", Value::Null),
    }
}

/// The ids of output items, derived from the upstream's ids.
pub(crate) fn response_id(upstream_id: &str) -> String {
    format!("resp_{upstream_id}")
}

pub(crate) fn message_item_id(upstream_id: &str, index: usize) -> String {
    format!("msg_{upstream_id}_{index}")
}

pub(crate) fn call_item_id(call_id: &str) -> String {
    format!("fc_{call_id}")
}

pub(crate) fn text_item(id: &str, status: &str, text: &str) -> Value {
    json!({
        "type": "message", "id": id, "status": status, "role": "assistant",
        "content": [{"type": "output_text", "text": text, "annotations": [], "logprobs": []}],
    })
}

pub(crate) fn call_item(call_id: &str, name: &str, arguments: &str, status: &str) -> Value {
    json!({
        "type": "function_call", "id": call_item_id(call_id), "call_id": call_id,
        "name": name, "arguments": arguments, "status": status,
    })
}

/// A whole response object; `stop`/`usage` absent while it is in progress.
pub(crate) fn response_object(
    id: &str,
    model: &str,
    created: u64,
    output: Vec<Value>,
    end: Option<(StopReason, &Usage)>,
) -> Value {
    let (status, incomplete, usage) = match end {
        None => ("in_progress", Value::Null, Value::Null),
        Some((stop, u)) => {
            let (s, i) = status(stop);
            (s, i, usage_json(u))
        }
    };
    json!({
        "id": id, "object": "response", "created_at": created, "status": status,
        "error": null, "incomplete_details": incomplete, "instructions": null,
        "max_output_tokens": null, "model": model, "output": output,
        "parallel_tool_calls": true, "previous_response_id": null, "reasoning": null,
        "store": false, "temperature": null, "text": {"format": {"type": "text"}},
        "tool_choice": "auto", "tools": [], "top_p": null, "truncation": "disabled",
        "usage": usage, "metadata": {},
    })
}

/// Encodes a hub answer as a Responses object.
pub(crate) fn encode_response(r: &Response) -> Value {
    let output = r
        .output
        .iter()
        .enumerate()
        .map(|(i, o)| match o {
            Output::Text(t) => text_item(&message_item_id(&r.id, i), "completed", t),
            Output::ToolCall {
                id,
                name,
                arguments,
            } => call_item(id, name, arguments, "completed"),
        })
        .collect();
    response_object(
        &response_id(&r.id),
        &r.model,
        super::now_secs(),
        output,
        Some((r.stop, &r.usage)),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    const API: &str = "Anthropic messages";

    #[test]
    fn input_items_map_to_turns() {
        let body = json!({
            "model": "m", "instructions": "be brief", "max_output_tokens": 9,
            "input": [
                {"role": "developer", "content": "dev text"},
                {"type": "message", "role": "user", "content": [
                    {"type": "input_text", "text": "see"},
                    {"type": "input_image", "image_url": "https://x/i.png", "detail": "auto"},
                ]},
                {"type": "function_call", "call_id": "c1", "name": "f", "arguments": "{}"},
                {"type": "function_call", "call_id": "c2", "name": "g", "arguments": "{}"},
                {"type": "function_call_output", "call_id": "c1", "output": "1"},
                {"type": "function_call_output", "call_id": "c2", "output": "2"},
            ],
            "tools": [{"type": "function", "name": "f", "parameters": {"type": "object"}, "strict": true}],
            "tool_choice": {"type": "function", "name": "f"}, "store": true,
        });
        let r = decode_request(&body, API).unwrap();
        assert_eq!(r.system, vec!["be brief", "dev text"]);
        assert_eq!(r.max_tokens, Some(9));
        assert_eq!(r.messages.len(), 4);
        assert_eq!(r.messages[1].parts.len(), 2);
        assert_eq!(r.tool_choice, Some(ToolChoice::Named("f".into())));
        assert_eq!(
            r.messages[0].parts[1],
            Part::Image(Image::Url("https://x/i.png".into()))
        );
    }

    #[test]
    fn untranslatable_fields_are_named() {
        for (k, v) in [
            ("previous_response_id", json!("resp_1")),
            ("tools", json!([{"type": "web_search"}])),
            ("text", json!({"format": {"type": "json_schema"}})),
            ("reasoning", json!({"effort": "high"})),
        ] {
            let body = json!({"model": "m", "input": "x", k: v});
            let e = decode_request(&body, API).unwrap_err().to_string();
            assert!(e.contains(k), "{e}");
        }
    }

    #[test]
    fn response_object_has_status_and_usage() {
        let r = Response {
            id: "abc".into(),
            model: "m".into(),
            output: vec![
                Output::Text("hi".into()),
                Output::ToolCall {
                    id: "c".into(),
                    name: "f".into(),
                    arguments: "{}".into(),
                },
            ],
            stop: StopReason::MaxTokens,
            usage: Usage {
                input: 5,
                cache_read: 2,
                cache_creation: 0,
                output: 1,
            },
        };
        let v = encode_response(&r);
        assert_eq!(v["status"], "incomplete");
        assert_eq!(v["incomplete_details"]["reason"], "max_output_tokens");
        assert_eq!(v["output"][0]["content"][0]["text"], "hi");
        assert_eq!(v["output"][1]["call_id"], "c");
        assert_eq!(v["usage"]["input_tokens_details"]["cached_tokens"], 2);
        assert_eq!(v["usage"]["total_tokens"], 6);
    }
}
