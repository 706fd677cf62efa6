//! OpenAI Responses codec: client requests into the hub and hub answers into Responses
//! objects. No provider is translated *to* Responses, so there is no upstream side.

use serde_json::{json, Map, Value};

use super::errors::TranslateError;
use super::field::{array, boolean, count, invalid, is_inert, need, number, object, string};
use super::hub::{
    ClientView, Effort, Image, Message, Output, Part, Reasoning, Request, Response, Role,
    StopReason, Tool, ToolChoice, ToolKind, Usage, CUSTOM_INPUT,
};
use super::policy::Verdicts;
use super::walk;

/// Hints: storage and billing that cannot change the answer (nothing is stored by a
/// translated request, which is why `previous_response_id` is refused); dropped.
const HINTS: [&str; 6] = [
    "store",
    "metadata",
    "service_tier",
    "prompt_cache_key",
    "stream_options",
    "prompt_cache_retention",
];

/// Request fields a response object repeats back, as the client sent them.
const ECHOED: [&str; 7] = [
    "tools",
    "tool_choice",
    "parallel_tool_calls",
    "instructions",
    "max_output_tokens",
    "temperature",
    "top_p",
];

/// Decodes a Responses request body; each field's fate goes to `cx`.
pub(crate) fn decode_request(v: &mut Value, cx: &mut Verdicts) -> Result<Request, TranslateError> {
    let mut r = walk::request(v, |k, val, r| {
        match k {
            "input" => decode_input(val, r, cx)?,
            "instructions" => r.system.insert(0, string(val, k)?),
            "stream" => r.stream = boolean(val, k)?,
            "max_output_tokens" => r.max_tokens = Some(count(val, k)?),
            "temperature" => r.temperature = Some(number(val, k)?),
            "top_p" => r.top_p = Some(number(val, k)?),
            "user" => r.user = Some(string(val, k)?),
            // OpenAI's successor of `user` (a stable id of the end user, for abuse
            // detection): where the client sent no `user`, it is the user, as Anthropic's
            // `metadata.user_id` is ("Anthropic may use this id to help detect abuse").
            "safety_identifier" if r.user.is_none() => r.user = Some(string(val, k)?),
            "safety_identifier" => cx.hint(k),
            "tools" => r.tools = decode_tools(val, &mut r.view, cx)?,
            "tool_choice" => r.tool_choice = decode_tool_choice(val, cx)?,
            "parallel_tool_calls" => r.parallel_tool_calls = Some(boolean(val, k)?),
            "reasoning" => decode_reasoning(val, r, cx)?,
            "include" => decode_include(val, cx)?,
            "text" => decode_text(val, cx)?,
            // Codex's ids of its thread, turn and window, for its own telemetry.
            "client_metadata" => cx.client_side(k, "it is the client's own session metadata"),
            "truncation" if val == "disabled" => {}
            "top_logprobs" | "background" | "max_tool_calls" if is_inert(val) => {}
            k if HINTS.contains(&k) => cx.hint(k),
            _ => cx.refuse(k, "it has no equivalent there"),
        }
        Ok(())
    })?;
    if let Some(o) = v.as_object() {
        for k in ECHOED {
            if let Some(val) = o.get(k) {
                r.view.echo.insert(k.to_owned(), val.clone());
            }
        }
    }
    Ok(r)
}

/// `reasoning`: `effort` maps where the target takes it; `summary` asks for a summary of
/// the reasoning, which never comes back through translation.
fn decode_reasoning(v: &Value, r: &mut Request, cx: &mut Verdicts) -> Result<(), TranslateError> {
    for (k, val) in object(v, "reasoning")? {
        let at = format!("reasoning.{k}");
        match k.as_str() {
            _ if val.is_null() => {}
            "effort" => {
                let name = string(val, &at)?;
                if name != "none" {
                    let effort = Effort::from_openai(&name).ok_or_else(|| {
                        invalid(&at, "must be none, minimal, low, medium, high or xhigh")
                    })?;
                    Reasoning::note(&mut r.reasoning, "reasoning.effort", Some(effort));
                }
            }
            "summary" | "generate_summary" => {
                cx.client_side(&at, "no reasoning summary comes back translated")
            }
            _ => cx.refuse(at, "it has no equivalent there"),
        }
    }
    Ok(())
}

/// `include`: extra output the client wants. Encrypted reasoning (to send back next turn)
/// and the results of hosted tools never exist in a translated answer.
fn decode_include(v: &Value, cx: &mut Verdicts) -> Result<(), TranslateError> {
    for (i, item) in array(v, "include")?.iter().enumerate() {
        let at = format!("include[{i}]");
        match item.as_str() {
            Some("reasoning.encrypted_content") => cx.client_side(
                &format!("include ({})", "reasoning.encrypted_content"),
                "no encrypted reasoning comes back translated",
            ),
            Some(
                x @ ("web_search_call.results"
                | "web_search_call.action.sources"
                | "file_search_call.results"
                | "code_interpreter_call.outputs"
                | "computer_call_output.output.image_url"
                | "message.input_image.image_url"),
            ) => cx.hint(&format!("include ({x})")),
            Some(x) => cx.refuse(format!("{at} ({x})"), "it has no equivalent there"),
            None => return Err(invalid(at, "must be a string")),
        }
    }
    Ok(())
}

/// `text`: plain text output (the default) translates; a JSON schema does not.
fn decode_text(v: &Value, cx: &mut Verdicts) -> Result<(), TranslateError> {
    for (k, val) in object(v, "text")? {
        let at = format!("text.{k}");
        match k.as_str() {
            _ if val.is_null() => {}
            "format" if val.get("type").and_then(Value::as_str) == Some("text") => {}
            // How wordy the answer is (GPT-5): a style hint no other API takes.
            "verbosity" => cx.client_side(&at, "no other API takes a verbosity"),
            _ => cx.refuse(at, "it has no equivalent there"),
        }
    }
    Ok(())
}

fn decode_input(v: &Value, r: &mut Request, cx: &mut Verdicts) -> Result<(), TranslateError> {
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
                let parts = content_parts(content, &format!("{at}.content"), cx)?;
                match role {
                    "system" | "developer" => {
                        let mut texts = Vec::new();
                        for p in parts {
                            match p {
                                Part::Text(t) => texts.push(t),
                                _ => {
                                    return Err(invalid(
                                        format!("{at}.content"),
                                        "system content must be text",
                                    ))
                                }
                            }
                        }
                        // Before the first turn it is the system prompt; later, a turn in
                        // its place.
                        if r.messages.is_empty() {
                            r.system.extend(texts);
                        } else {
                            let parts = texts.into_iter().map(Part::Text).collect();
                            r.messages.push(Message {
                                role: Role::System,
                                parts,
                            });
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
                let name = string(need(o, "name", &at)?, &format!("{at}.name"))?;
                let name = match o.get("namespace").and_then(Value::as_str) {
                    Some(ns) => flat_name(ns, &name),
                    None => name,
                };
                let part = Part::ToolCall {
                    id: string(need(o, "call_id", &at)?, &format!("{at}.call_id"))?,
                    name,
                    arguments: string(need(o, "arguments", &at)?, &format!("{at}.arguments"))?,
                };
                push(r, Role::Assistant, vec![part]);
            }
            "custom_tool_call" => {
                let input = string(need(o, "input", &at)?, &format!("{at}.input"))?;
                let part = Part::ToolCall {
                    id: string(need(o, "call_id", &at)?, &format!("{at}.call_id"))?,
                    name: string(need(o, "name", &at)?, &format!("{at}.name"))?,
                    arguments: json!({ CUSTOM_INPUT: input }).to_string(),
                };
                push(r, Role::Assistant, vec![part]);
            }
            "function_call_output" | "custom_tool_call_output" => {
                let output = need(o, "output", &at)?;
                let content = match output {
                    Value::String(s) => vec![Part::Text(s.clone())],
                    _ => content_parts(output, &format!("{at}.output"), cx)?,
                };
                let part = Part::ToolResult {
                    id: string(need(o, "call_id", &at)?, &format!("{at}.call_id"))?,
                    content,
                    is_error: false,
                };
                push(r, Role::User, vec![part]);
            }
            // An earlier turn's reasoning, encrypted for OpenAI's models only.
            "reasoning" => cx.client_side(
                &format!("{at} (reasoning)"),
                "earlier reasoning is readable only by OpenAI's models",
            ),
            other => cx.refuse(
                format!("{at}.type"),
                format!("input item {other:?} cannot be translated"),
            ),
        }
    }
    Ok(())
}

/// The upstream name of function `name` in namespace `ns` (upstream names are flat).
pub(crate) fn flat_name(ns: &str, name: &str) -> String {
    if ns.ends_with('_') {
        format!("{ns}{name}")
    } else {
        format!("{ns}__{name}")
    }
}

/// Appends parts, joining a message of the same role (a run of function calls is one
/// assistant turn, as in chat's `tool_calls`).
fn push(r: &mut Request, role: Role, parts: Vec<Part>) {
    match r.messages.last_mut() {
        Some(m) if m.role == role && role == Role::Assistant => m.parts.extend(parts),
        _ => r.messages.push(Message { role, parts }),
    }
}

/// Content parts; those that cannot be translated are refused (`cx`) and left out.
fn content_parts(v: &Value, at: &str, cx: &mut Verdicts) -> Result<Vec<Part>, TranslateError> {
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
            Some("input_image") => match o.get("image_url").and_then(Value::as_str) {
                Some(url) => out.push(Part::Image(Image::from_url(url))),
                None if o.get("file_id").is_some_and(|f| !f.is_null()) => cx.refuse(
                    format!("{at}.file_id"),
                    "file_id images cannot be translated",
                ),
                None => return Err(invalid(format!("{at}.image_url"), "is required")),
            },
            other => cx.refuse(
                format!("{at}.type"),
                format!(
                    "content part {:?} cannot be translated",
                    other.unwrap_or("(none)")
                ),
            ),
        }
    }
    Ok(out)
}

fn decode_tools(
    v: &Value,
    view: &mut ClientView,
    cx: &mut Verdicts,
) -> Result<Vec<Tool>, TranslateError> {
    walk::tools(v, |at, o| {
        let ty = o.get("type").and_then(Value::as_str).unwrap_or_default();
        Ok(match ty {
            "function" => vec![function_tool(at, o, cx)?],
            // A freeform tool (Codex's `apply_patch`): upstream, a function taking the text
            // as one string; its format (a grammar) goes into the description.
            "custom" => {
                let name = string(need(o, "name", at)?, &format!("{at}.name"))?;
                view.tools.push((name.clone(), ToolKind::Custom));
                vec![Tool {
                    name,
                    description: Some(custom_description(o)),
                    parameters: json!({
                        "type": "object",
                        "properties": {CUSTOM_INPUT: {"type": "string", "description": "The tool's freeform input."}},
                        "required": [CUSTOM_INPUT],
                    }),
                    strict: None,
                }]
            }
            // A group of function tools: flattened, each call renamed back for the client.
            "namespace" => {
                let ns = string(need(o, "name", at)?, &format!("{at}.name"))?;
                let mut out = Vec::new();
                for (j, t) in array(need(o, "tools", at)?, &format!("{at}.tools"))?
                    .iter()
                    .enumerate()
                {
                    let at = format!("{at}.tools[{j}]");
                    let mut tool = function_tool(&at, object(t, &at)?, cx)?;
                    let flat = flat_name(&ns, &tool.name);
                    view.tools.push((
                        flat.clone(),
                        ToolKind::Namespaced {
                            namespace: ns.clone(),
                            name: std::mem::replace(&mut tool.name, flat),
                        },
                    ));
                    out.push(tool);
                }
                out
            }
            // Codex's search over its deferred tools, run by the client: the translated
            // request offers the tools the client sends, and the search's results would
            // have to become tools of the next request.
            "tool_search" => {
                cx.client_side(
                    &format!("{at} (tool_search)"),
                    "deferred tool discovery cannot be translated",
                );
                Vec::new()
            }
            _ if HOSTED_TOOLS.contains(&ty) => {
                cx.builtin_tool(
                    &format!("{at} ({ty})"),
                    "a hosted tool that runs only on OpenAI",
                );
                Vec::new()
            }
            _ => {
                cx.refuse(
                    format!("{at}.type"),
                    format!("{ty:?} is an OpenAI-defined tool: its schema is known only to OpenAI's models"),
                );
                Vec::new()
            }
        })
    })
}

/// Tools OpenAI runs itself (the rest of its tool types run on the client).
const HOSTED_TOOLS: [&str; 7] = [
    "web_search",
    "web_search_preview",
    "web_search_2025_08_26",
    "file_search",
    "code_interpreter",
    "image_generation",
    "mcp",
];

fn function_tool(
    at: &str,
    o: &Map<String, Value>,
    cx: &mut Verdicts,
) -> Result<Tool, TranslateError> {
    if o.get("defer_loading").is_some_and(|s| !s.is_null()) {
        // Deferred loading changes when, not what, is offered.
        cx.hint(&format!("{at}.defer_loading"));
    }
    Ok(Tool {
        strict: walk::strict(o.get("strict"), format!("{at}.strict"), cx),
        name: string(need(o, "name", at)?, &format!("{at}.name"))?,
        description: walk::description(o),
        parameters: o
            .get("parameters")
            .filter(|p| !p.is_null())
            .cloned()
            .unwrap_or_else(walk::no_parameters),
    })
}

/// A custom tool's description with its input format appended, so the model still knows
/// what the input must look like.
fn custom_description(o: &Map<String, Value>) -> String {
    let mut d = walk::description(o).unwrap_or_default();
    if let Some(f) = o
        .get("format")
        .filter(|f| f.get("type").and_then(Value::as_str) == Some("grammar"))
    {
        let syntax = f.get("syntax").and_then(Value::as_str).unwrap_or("grammar");
        if let Some(def) = f.get("definition").and_then(Value::as_str) {
            d.push_str(&format!(
                "\n\nThe `{CUSTOM_INPUT}` argument must match this {syntax} grammar:\n{def}"
            ));
        }
    }
    d
}

fn decode_tool_choice(v: &Value, cx: &mut Verdicts) -> Result<Option<ToolChoice>, TranslateError> {
    Ok(Some(match v {
        Value::String(s) => match s.as_str() {
            "auto" => ToolChoice::Auto,
            "none" => ToolChoice::None,
            "required" => ToolChoice::Required,
            _ => return Err(invalid("tool_choice", format!("unknown value {s:?}"))),
        },
        Value::Object(o)
            if matches!(
                o.get("type").and_then(Value::as_str),
                Some("function" | "custom")
            ) =>
        {
            let name = o
                .get("name")
                .and_then(Value::as_str)
                .ok_or_else(|| invalid("tool_choice.name", "is required"))?;
            ToolChoice::Named(name.to_owned())
        }
        _ => {
            cx.refuse(
                "tool_choice",
                "only auto, none, required, function and custom choices translate",
            );
            return Ok(None);
        }
    }))
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

pub(crate) fn custom_item_id(call_id: &str) -> String {
    format!("ctc_{call_id}")
}

/// A tool call as the client declared the tool: a `function_call` (with its `namespace` for
/// a namespaced one) or a `custom_tool_call` carrying the freeform input.
pub(crate) fn tool_call_item(
    view: &ClientView,
    call_id: &str,
    name: &str,
    arguments: &str,
    status: &str,
) -> Value {
    match view.kind(name) {
        None => call_item(call_id, name, arguments, status),
        Some(ToolKind::Namespaced { namespace, name }) => {
            let mut item = call_item(call_id, name, arguments, status);
            item["namespace"] = json!(namespace);
            item
        }
        Some(ToolKind::Custom) => json!({
            "type": "custom_tool_call", "id": custom_item_id(call_id), "call_id": call_id,
            "name": name, "input": custom_input(arguments), "status": status,
        }),
    }
}

/// The freeform input of a custom tool's call: its one string argument. Arguments of any
/// other shape (a model that ignored the schema) are passed on as they are.
pub(crate) fn custom_input(arguments: &str) -> String {
    // Arguments over the node budget are not built into a tree: passed on as they are.
    if super::json::budget::check_str(arguments).is_err() {
        return arguments.to_owned();
    }
    match serde_json::from_str::<Value>(arguments) {
        Ok(Value::Object(mut o)) if o.len() == 1 => match o.remove(CUSTOM_INPUT) {
            Some(Value::String(s)) => s,
            _ => arguments.to_owned(),
        },
        _ => arguments.to_owned(),
    }
}

/// A whole response object; `stop`/`usage` absent while it is in progress. The request's
/// own settings (`tools`, `tool_choice`, ...) are repeated from `view` as the client sent
/// them.
pub(crate) fn response_object(
    id: &str,
    model: &str,
    created: u64,
    output: Vec<Value>,
    end: Option<(StopReason, &Usage)>,
    view: &ClientView,
) -> Value {
    let (status, incomplete, usage) = match end {
        None => ("in_progress", Value::Null, Value::Null),
        Some((stop, u)) => {
            let (s, i) = status(stop);
            (s, i, usage_json(u))
        }
    };
    let mut v = json!({
        "id": id, "object": "response", "created_at": created, "status": status,
        "error": null, "incomplete_details": incomplete, "instructions": null,
        "max_output_tokens": null, "model": model, "output": output,
        "parallel_tool_calls": true, "previous_response_id": null, "reasoning": null,
        "store": false, "temperature": null, "text": {"format": {"type": "text"}},
        "tool_choice": "auto", "tools": [], "top_p": null, "truncation": "disabled",
        "usage": usage, "metadata": {},
    });
    for (k, val) in &view.echo {
        v[k.as_str()] = val.clone();
    }
    v
}

/// Encodes a hub answer as a Responses object.
pub(crate) fn encode_response(r: &Response, view: &ClientView) -> Value {
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
            } => tool_call_item(view, id, name, arguments, "completed"),
        })
        .collect();
    response_object(
        &response_id(&r.id),
        &r.model,
        super::hub::now_secs(),
        output,
        Some((r.stop, &r.usage)),
        view,
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dialect::{Dialect, Upstream};

    fn decode(v: &Value) -> Result<Request, TranslateError> {
        crate::translate::decode_lenient(Dialect::Responses, Upstream::Messages, v)
    }

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
        let r = decode(&body).unwrap();
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
            ("include", json!(["message.output_text.logprobs"])),
        ] {
            let body = json!({"model": "m", "input": "x", k: v});
            let e = decode(&body).unwrap_err().to_string();
            assert!(e.contains(k), "{e}");
        }
    }

    #[test]
    fn refused_parts_are_named_with_the_rest() {
        let body = json!({"model": "m", "top_logprobs": 3, "input": [
            {"role": "user", "content": [
                {"type": "input_image", "file_id": "file_1"},
                {"type": "input_file", "file_id": "file_2"},
                {"type": "input_text", "text": "see"},
            ]},
        ]});
        let TranslateError::Unsupported { fields, .. } = decode(&body).unwrap_err() else {
            panic!("expected one refusal listing every field")
        };
        let names: Vec<&str> = fields.iter().map(|f| f.field.as_str()).collect();
        assert_eq!(
            names,
            [
                "input[0].content[0].file_id",
                "input[0].content[1].type",
                "top_logprobs"
            ]
        );
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
        let v = encode_response(&r, &ClientView::default());
        assert_eq!(v["status"], "incomplete");
        assert_eq!(v["incomplete_details"]["reason"], "max_output_tokens");
        assert_eq!(v["output"][0]["content"][0]["text"], "hi");
        assert_eq!(v["output"][1]["call_id"], "c");
        assert_eq!(v["usage"]["input_tokens_details"]["cached_tokens"], 2);
        assert_eq!(v["usage"]["total_tokens"], 6);
    }
}
