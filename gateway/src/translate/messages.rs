//! Anthropic messages codec: client requests into the hub, the hub into upstream requests
//! (with Anthropic's turn rules), and answers both ways.

use serde_json::{json, Map, Value};

use super::errors::{TranslateError, UpstreamShapeError};
use super::field::{
    array, boolean, count, invalid, is_inert, need, need_mut, number, object, push_turn, string,
    strings, tool_call_input,
};
use super::hub::{
    CacheAt, Effort, Image, Message, Output, Part, Reasoning, Request, Response, ResponseFormat,
    Role, StopReason, Tool, ToolChoice, Usage,
};
use super::policy::Verdicts;
use super::target::TargetInfo;
use super::{walk, wire};
use serde_json::value::RawValue;
use std::borrow::Cow;

/// Decodes an Anthropic messages request body; each field's fate goes to `cx`.
pub(crate) fn decode_request(v: &mut Value, cx: &mut Verdicts) -> Result<Request, TranslateError> {
    let mut effort = None;
    let mut r = walk::request(v, |k, val, r| {
        match k {
            "messages" => decode_messages(val, r, cx)?,
            // Taken, not copied: the body is dropped once decoded.
            "system" => {
                r.system = match val {
                    Value::String(s) => vec![std::mem::take(s)],
                    _ => system_texts(val, "system", cx)?,
                }
            }
            "max_tokens" => r.max_tokens = Some(count(val, k)?),
            "stop_sequences" => r.stop = strings(val, k)?,
            "temperature" => r.temperature = Some(number(val, k)?),
            "top_p" => r.top_p = Some(number(val, k)?),
            // Gemini's topK; refused where no equivalent exists (`sampling`).
            "top_k" => r.top_k = Some(number(val, k)?),
            "stream" => r.stream = boolean(val, k)?,
            "tools" => r.tools = decode_tools(val, cx)?,
            "tool_choice" => decode_tool_choice(val, r)?,
            "metadata" => decode_metadata(val, r, cx)?,
            "service_tier" => cx.hint(k),
            "thinking" => decode_thinking(val, r)?,
            "output_config" => effort = decode_output_config(val, cx)?,
            // Clears old thinking blocks from the context: none come back through translation.
            "context_management" => {
                cx.client_side(k, "it edits thinking blocks, and none come back translated")
            }
            "container" | "mcp_servers" if is_inert(val) => {}
            _ => cx.refuse(k, "it has no equivalent there"),
        }
        Ok(())
    })?;
    // `output_config.effort` says how hard, over a `thinking` budget's reading.
    if let Some(effort) = effort {
        Reasoning::note(&mut r.reasoning, "output_config.effort", Some(effort));
    }
    Ok(r)
}

/// `metadata.user_id` is an end-user id for abuse tracking; Claude Code puts a JSON blob of
/// its device hash and session id there, which is no user id to any other provider.
fn decode_metadata(v: &Value, r: &mut Request, cx: &mut Verdicts) -> Result<(), TranslateError> {
    let m = object(v, "metadata")?;
    if let Some(u) = m.get("user_id").filter(|u| !u.is_null()) {
        let id = string(u, "metadata.user_id")?;
        if id.len() <= USER_ID_MAX && !id.starts_with('{') {
            r.user = Some(id);
        } else {
            cx.client_side(
                "metadata.user_id",
                "it holds a client session record, not a user id",
            );
        }
    }
    Ok(())
}

/// Longest `metadata.user_id` passed on as an end-user id (OpenAI's `safety_identifier` limit).
const USER_ID_MAX: usize = 64;

/// `thinking`: enabled (with a budget), adaptive (the model decides) or disabled.
fn decode_thinking(v: &Value, r: &mut Request) -> Result<(), TranslateError> {
    let o = object(v, "thinking")?;
    let effort = match o.get("type").and_then(Value::as_str) {
        Some("disabled") => return Ok(()),
        Some("enabled") => o
            .get("budget_tokens")
            .and_then(Value::as_u64)
            .map(Effort::from_budget),
        Some("adaptive") => None,
        _ => {
            return Err(invalid(
                "thinking.type",
                "must be enabled, adaptive or disabled",
            ))
        }
    };
    Reasoning::note(&mut r.reasoning, "thinking", effort);
    Ok(())
}

/// `output_config`: its `effort`, read after every field (it wins over a thinking budget).
fn decode_output_config(v: &Value, cx: &mut Verdicts) -> Result<Option<Effort>, TranslateError> {
    let mut effort = None;
    for (k, val) in object(v, "output_config")? {
        let at = format!("output_config.{k}");
        match k.as_str() {
            _ if val.is_null() => {}
            "effort" => {
                let name = string(val, &at)?;
                effort = Some(
                    Effort::from_anthropic(&name)
                        .ok_or_else(|| invalid(&at, "must be low, medium, high or max"))?,
                );
            }
            _ => cx.refuse(at, "it has no equivalent there"),
        }
    }
    Ok(effort)
}

/// `system`: a string or text blocks. Claude Code's first block is its billing line
/// (`x-anthropic-billing-header: cc_version=...`): Anthropic's accounting, noise in any
/// other model's prompt (and a per-version prefix that defeats its prompt caching).
fn system_texts(v: &Value, at: &str, cx: &mut Verdicts) -> Result<Vec<String>, TranslateError> {
    if let Some(s) = v.as_str() {
        return Ok(vec![s.to_owned()]);
    }
    let mut out = Vec::new();
    for (i, b) in array(v, at)?.iter().enumerate() {
        let at = format!("{at}[{i}]");
        let text = text_block(b, &at, cx)?;
        if text.starts_with(BILLING_LINE) {
            cx.hint(&format!("{at}.{}", BILLING_LINE.trim_end_matches(':')));
        } else {
            out.push(text);
        }
    }
    Ok(out)
}

const BILLING_LINE: &str = "x-anthropic-billing-header:";

/// A text block's text (its hints noted).
fn text_block(b: &Value, at: &str, cx: &mut Verdicts) -> Result<String, TranslateError> {
    let o = object(b, at)?;
    if o.get("type").and_then(Value::as_str) != Some("text") {
        return Err(invalid(
            format!("{at}.type"),
            "only text blocks are allowed here",
        ));
    }
    block_hints(o, at, cx);
    string(need(o, "text", at)?, &format!("{at}.text"))
}

/// `cache_control` on any block is a caching hint: it never changes the answer.
fn block_hints(o: &Map<String, Value>, at: &str, cx: &mut Verdicts) {
    if o.get("cache_control").is_some_and(|c| !c.is_null()) {
        cx.hint(&format!("{at}.cache_control"));
    }
}

/// Texts are taken out of `v`, not copied (the body is dropped once decoded).
fn decode_messages(
    v: &mut Value,
    r: &mut Request,
    cx: &mut Verdicts,
) -> Result<(), TranslateError> {
    let turns = v
        .as_array_mut()
        .ok_or_else(|| invalid("messages", "must be an array"))?;
    for (i, m) in turns.iter_mut().enumerate() {
        // Paths are formatted only where an error or a drop names them: a plain turn (a
        // string content) formats none (measured: two `format!` per turn were ~3% of a
        // translated request).
        let at = || format!("messages[{i}]");
        let o = m
            .as_object_mut()
            .ok_or_else(|| invalid(at(), "must be an object"))?;
        let role = match need(o, "role", &at)?.as_str() {
            Some("user") => Role::User,
            Some("assistant") => Role::Assistant,
            // Claude Code's mid-conversation system turns (its environment, deferred tools).
            Some("system") => Role::System,
            _ => {
                return Err(invalid(
                    format!("{}.role", at()),
                    "must be \"user\", \"assistant\" or \"system\"",
                ))
            }
        };
        let content = need_mut(o, "content", &at)?;
        if let Value::String(s) = content {
            r.messages.push(Message {
                role,
                parts: vec![Part::Text(std::mem::take(s))],
            });
            continue;
        }
        let parts = match content {
            _ if role == Role::System => system_texts(content, &format!("{}.content", at()), cx)?
                .into_iter()
                .map(Part::Text)
                .collect(),
            _ => {
                let blocks = content
                    .as_array_mut()
                    .ok_or_else(|| invalid(format!("{}.content", at()), "must be an array"))?;
                let mut parts = Vec::with_capacity(blocks.len());
                for (j, b) in blocks.iter_mut().enumerate() {
                    // The usual block, read as `decode_block` reads it without formatting
                    // its path.
                    if let Some(t) = plain_text(b) {
                        parts.push(Part::Text(t));
                    } else if let Some(p) = decode_block(b, &format!("{}.content[{j}]", at()), cx)?
                    {
                        parts.push(p);
                    }
                }
                parts
            }
        };
        r.messages.push(Message { role, parts });
    }
    Ok(())
}

/// The text of a text block with nothing else to note (no `cache_control`), taken out of
/// the block; `None` leaves the block as it was.
fn plain_text(b: &mut Value) -> Option<String> {
    let o = b.as_object_mut()?;
    if o.get("type")?.as_str()? != "text" || o.get("cache_control").is_some_and(|c| !c.is_null()) {
        return None;
    }
    match o.get_mut("text")? {
        Value::String(s) => Some(std::mem::take(s)),
        _ => None,
    }
}

/// One content block; `None` when it is dropped.
fn decode_block(b: &Value, at: &str, cx: &mut Verdicts) -> Result<Option<Part>, TranslateError> {
    let o = object(b, at)?;
    block_hints(o, at, cx);
    Ok(Some(match o.get("type").and_then(Value::as_str) {
        Some("text") => Part::Text(string(need(o, "text", at)?, &format!("{at}.text"))?),
        Some("image") => match decode_image(need(o, "source", at)?, &format!("{at}.source"), cx)? {
            Some(img) => Part::Image(img),
            None => return Ok(None),
        },
        Some("tool_use") => Part::ToolCall {
            id: string(need(o, "id", at)?, &format!("{at}.id"))?,
            name: string(need(o, "name", at)?, &format!("{at}.name"))?,
            arguments: serde_json::to_string(o.get("input").unwrap_or(&json!({})))
                .expect("a JSON value serializes"),
        },
        Some("tool_result") => {
            let mut content = Vec::new();
            match o.get("content").filter(|c| !c.is_null()) {
                None => {}
                Some(Value::String(s)) => content.push(Part::Text(s.clone())),
                Some(c) => {
                    for (k, b) in array(c, &format!("{at}.content"))?.iter().enumerate() {
                        let at = format!("{at}.content[{k}]");
                        match decode_block(b, &at, cx)? {
                            None => {}
                            Some(p @ (Part::Text(_) | Part::Image(_))) => content.push(p),
                            Some(_) => {
                                return Err(invalid(at, "a tool result holds text and images only"))
                            }
                        }
                    }
                }
            }
            Part::ToolResult {
                id: string(need(o, "tool_use_id", at)?, &format!("{at}.tool_use_id"))?,
                content,
                is_error: o.get("is_error").and_then(Value::as_bool).unwrap_or(false),
            }
        }
        // The model's own hidden reasoning from an earlier turn: no other model can read it
        // (it is signed for Anthropic), and none comes back through translation.
        Some(ty @ ("thinking" | "redacted_thinking")) => {
            cx.client_side(
                &format!("{at} ({ty})"),
                "earlier thinking is readable only by Anthropic's models",
            );
            return Ok(None);
        }
        other => {
            cx.refuse(
                format!("{at}.type"),
                format!(
                    "content block {:?} cannot be translated",
                    other.unwrap_or("(none)")
                ),
            );
            return Ok(None);
        }
    }))
}

/// An image source; `None` when it is refused (a Files API `file` source).
fn decode_image(src: &Value, at: &str, cx: &mut Verdicts) -> Result<Option<Image>, TranslateError> {
    let o = object(src, at)?;
    Ok(Some(match o.get("type").and_then(Value::as_str) {
        Some("base64") => Image::Base64 {
            media_type: string(need(o, "media_type", at)?, &format!("{at}.media_type"))?,
            data: string(need(o, "data", at)?, &format!("{at}.data"))?,
        },
        Some("url") => Image::Url(string(need(o, "url", at)?, &format!("{at}.url"))?),
        Some(_) => {
            cx.refuse(
                format!("{at}.type"),
                "only base64 and url image sources can be translated",
            );
            return Ok(None);
        }
        None => return Err(invalid(format!("{at}.type"), "is required")),
    }))
}

fn decode_tools(v: &Value, cx: &mut Verdicts) -> Result<Vec<Tool>, TranslateError> {
    walk::tools(v, |at, o| {
        match o.get("type").and_then(Value::as_str) {
            None | Some("custom") => {}
            // Server tools (web_search_*, web_fetch_*, code_execution_*) run on Anthropic;
            // bash_*, text_editor_*, computer_*, memory_* run on the client but have a
            // schema only Anthropic's models know.
            Some(ty) => {
                let field = format!("{at} ({ty})");
                if ANTHROPIC_DEFINED_CLIENT_TOOLS
                    .iter()
                    .any(|p| ty.starts_with(p))
                {
                    cx.refuse(
                        field,
                        "an Anthropic-defined tool: its schema is known only to Anthropic's models",
                    );
                } else {
                    cx.builtin_tool(&field, "a server tool that runs only on Anthropic");
                }
                return Ok(None);
            }
        }
        for (k, val) in o {
            let field = format!("{at}.{k}");
            match k.as_str() {
                // `strict`: `walk::strict` below.
                "name" | "description" | "input_schema" | "type" | "strict" => {}
                _ if val.is_null() => {}
                // Deferred loading and eager streaming shape how the tool is delivered, not
                // what it does.
                "cache_control" | "defer_loading" | "eager_input_streaming" => cx.hint(&field),
                "input_examples" => cx.client_side(&field, "no other API takes tool examples"),
                _ => cx.refuse(field, "it has no equivalent there"),
            }
        }
        Ok(Some(Tool {
            name: string(need(o, "name", at)?, &format!("{at}.name"))?,
            description: walk::description(o),
            parameters: need(o, "input_schema", at)?.clone(),
            strict: walk::strict(o.get("strict"), format!("{at}.strict"), cx),
        }))
    })
}

const ANTHROPIC_DEFINED_CLIENT_TOOLS: [&str; 4] = ["bash_", "text_editor_", "computer_", "memory_"];

fn decode_tool_choice(v: &Value, r: &mut Request) -> Result<(), TranslateError> {
    let o = object(v, "tool_choice")?;
    if o.get("disable_parallel_tool_use").and_then(Value::as_bool) == Some(true) {
        r.parallel_tool_calls = Some(false);
    }
    r.tool_choice = Some(match o.get("type").and_then(Value::as_str) {
        Some("auto") => ToolChoice::Auto,
        Some("any") => ToolChoice::Required,
        Some("none") => ToolChoice::None,
        Some("tool") => {
            ToolChoice::Named(string(need(o, "name", "tool_choice")?, "tool_choice.name")?)
        }
        _ => {
            return Err(invalid(
                "tool_choice.type",
                "must be auto, any, tool or none",
            ))
        }
    });
    Ok(())
}

/// Encodes a hub request for an Anthropic upstream: consecutive same-role messages merge
/// into one turn (Anthropic needs alternating turns); `max_tokens` falls back to the
/// configured default.
pub(crate) fn encode_request(r: &Request, t: TargetInfo<'_>) -> Result<Value, TranslateError> {
    let mut messages: Vec<Value> = Vec::new();
    // Anthropic takes system text only at the top: mid-conversation system turns join it,
    // in order.
    // Each text with the client's `cache_control` for it, if any.
    let mut system: Vec<(&str, Option<&Value>)> = r
        .system
        .iter()
        .enumerate()
        .map(|(k, s)| (s.as_str(), r.cache_at(CacheAt::System(k))))
        .collect();
    for (i, m) in r.messages.iter().enumerate() {
        let cache = |part| r.cache_at(CacheAt::Part { message: i, part });
        if m.role == Role::System {
            for (j, p) in m.parts.iter().enumerate() {
                if let Part::Text(t) = p {
                    system.push((t, cache(j)));
                }
            }
            continue;
        }
        let mut blocks: Vec<Value> = Vec::with_capacity(m.parts.len());
        for (j, p) in m.parts.iter().enumerate() {
            let control = cache(j);
            if matches!(p, Part::Text(t) if t.is_empty()) {
                // Not sent (Anthropic refuses empty text blocks): a breakpoint set on it
                // moves to the block before it, which ends the same prefix.
                if let (Some(c), Some(prev)) = (control, blocks.last_mut()) {
                    prev["cache_control"] = c.clone();
                }
                continue;
            }
            let mut block = encode_block(p, i)?;
            if let Some(c) = control {
                block["cache_control"] = c.clone();
            }
            blocks.push(block);
        }
        if blocks.is_empty() {
            continue;
        }
        push_turn(&mut messages, m.role, blocks);
    }
    let mut o = Map::new();
    o.insert("model".into(), json!(t.model));
    o.insert(
        "max_tokens".into(),
        json!(r.max_tokens.unwrap_or(t.default_max_tokens)),
    );
    o.insert("messages".into(), Value::Array(messages));
    if !system.is_empty() {
        let blocks: Vec<Value> = system
            .iter()
            .map(|&(text, cache)| {
                let mut b = json!({"type": "text", "text": text});
                if let Some(c) = cache {
                    b["cache_control"] = c.clone();
                }
                b
            })
            .collect();
        o.insert("system".into(), Value::Array(blocks));
    }
    let mut output_config = Map::new();
    if let Some(effort) = r.effort_for(t.reasoning) {
        output_config.insert("effort".into(), json!(effort.anthropic()));
    }
    // JSON output with a schema (a Gemini client's responseSchema); without one it was
    // refused (`translate::encode_request`).
    if let Some(ResponseFormat::Schema(s)) = &r.response_format {
        output_config.insert("format".into(), json!({"type": "json_schema", "schema": s}));
    }
    if !output_config.is_empty() {
        o.insert("output_config".into(), Value::Object(output_config));
    }
    if r.stream {
        o.insert("stream".into(), json!(true));
    }
    if !r.stop.is_empty() {
        o.insert("stop_sequences".into(), json!(r.stop));
    }
    if let Some(x) = &r.temperature {
        o.insert("temperature".into(), Value::Number(x.clone()));
    }
    if let Some(x) = &r.top_p {
        o.insert("top_p".into(), Value::Number(x.clone()));
    }
    if let Some(x) = &r.top_k {
        o.insert("top_k".into(), Value::Number(x.clone()));
    }
    if let Some(u) = &r.user {
        o.insert("metadata".into(), json!({"user_id": u}));
    }
    if !r.tools.is_empty() {
        let tools: Vec<Value> = r
            .tools
            .iter()
            .map(|t| {
                let mut v = json!({"name": t.name, "input_schema": t.parameters});
                if let Some(d) = &t.description {
                    v["description"] = json!(d);
                }
                // Strict tool use; `false` is Anthropic's default, so it goes unsaid.
                if t.strict.as_ref().is_some_and(|s| s.on) {
                    v["strict"] = json!(true);
                }
                v
            })
            .collect();
        o.insert("tools".into(), Value::Array(tools));
        let mut choice = match &r.tool_choice {
            None | Some(ToolChoice::Auto) => json!({"type": "auto"}),
            Some(ToolChoice::None) => json!({"type": "none"}),
            Some(ToolChoice::Required) => json!({"type": "any"}),
            Some(ToolChoice::Named(n)) => json!({"type": "tool", "name": n}),
        };
        if r.parallel_tool_calls == Some(false) && choice["type"] != "none" {
            choice["disable_parallel_tool_use"] = json!(true);
        }
        if r.tool_choice.is_some() || r.parallel_tool_calls == Some(false) {
            o.insert("tool_choice".into(), choice);
        }
    }
    Ok(Value::Object(o))
}

fn encode_block(p: &Part, i: usize) -> Result<Value, TranslateError> {
    Ok(match p {
        Part::Text(t) => json!({"type": "text", "text": t}),
        Part::Image(img) => json!({"type": "image", "source": image_source(img)}),
        Part::ToolCall {
            id,
            name,
            arguments,
        } => {
            let input = tool_call_input(arguments, i, id)?;
            json!({"type": "tool_use", "id": id, "name": name, "input": input})
        }
        Part::ToolResult {
            id,
            content,
            is_error,
        } => {
            let blocks: Vec<Value> = content
                .iter()
                .map(|c| match c {
                    Part::Image(img) => json!({"type": "image", "source": image_source(img)}),
                    Part::Text(t) => json!({"type": "text", "text": t}),
                    _ => Value::Null,
                })
                .filter(|v| !v.is_null())
                .collect();
            let mut v = json!({"type": "tool_result", "tool_use_id": id, "content": blocks});
            if *is_error {
                v["is_error"] = json!(true);
            }
            v
        }
    })
}

fn image_source(i: &Image) -> Value {
    match i {
        Image::Url(u) => json!({"type": "url", "url": u}),
        Image::Base64 { media_type, data } => {
            json!({"type": "base64", "media_type": media_type, "data": data})
        }
    }
}

pub(crate) fn stop_from(reason: Option<&str>) -> StopReason {
    match reason {
        Some("max_tokens" | "model_context_window_exceeded") => StopReason::MaxTokens,
        Some("tool_use") => StopReason::ToolUse,
        Some("stop_sequence") => StopReason::StopSequence,
        Some("refusal") => StopReason::ContentFilter,
        _ => StopReason::EndTurn,
    }
}

pub(crate) fn stop_reason(s: StopReason) -> &'static str {
    match s {
        StopReason::EndTurn => "end_turn",
        StopReason::StopSequence => "stop_sequence",
        StopReason::MaxTokens => "max_tokens",
        StopReason::ToolUse => "tool_use",
        StopReason::ContentFilter => "refusal",
    }
}

/// Decodes an upstream Anthropic message (typed: [`wire`]).
pub(crate) fn decode_response(body: &[u8]) -> Result<Response, UpstreamShapeError> {
    let v: wire::MessageIn<'_> = serde_json::from_slice(body)
        .map_err(|e| UpstreamShapeError(format!("not an Anthropic message ({e})")))?;
    let content = v
        .content
        .ok_or_else(|| UpstreamShapeError("`content` is missing".into()))?;
    let missing = |k: &str| UpstreamShapeError(format!("`{k}` is missing or not a string"));
    let mut output = Vec::new();
    for b in content {
        match b.ty.as_deref() {
            Some("text") => output.push(Output::Text(
                b.text.ok_or_else(|| missing("text"))?.into_owned(),
            )),
            Some("tool_use") => output.push(Output::ToolCall {
                id: b.id.ok_or_else(|| missing("id"))?.into_owned(),
                name: b.name.ok_or_else(|| missing("name"))?.into_owned(),
                arguments: b
                    .input
                    .map_or_else(|| "{}".to_owned(), |i| i.get().to_owned()),
            }),
            // Thinking blocks are never asked for on a translated request.
            _ => {}
        }
    }
    let u = v.usage.unwrap_or_default();
    let cache_read = u.cache_read_input_tokens.unwrap_or(0);
    let cache_creation = u.cache_creation_input_tokens.unwrap_or(0);
    Ok(Response {
        id: v.id.map_or_else(|| "msg".to_owned(), Cow::into_owned),
        model: v.model.map(Cow::into_owned).unwrap_or_default(),
        output,
        stop: stop_from(v.stop_reason.as_deref()),
        usage: Usage {
            input: u
                .input_tokens
                .unwrap_or(0)
                .saturating_add(cache_read)
                .saturating_add(cache_creation),
            cache_read,
            cache_creation,
            output: u.output_tokens.unwrap_or(0),
        },
    })
}

/// Encodes a hub answer as an Anthropic message.
pub(crate) fn encode_response(r: &Response) -> Vec<u8> {
    let content = r
        .output
        .iter()
        .map(|o| match o {
            Output::Text(t) => wire::BlockOut::Text { text: t },
            Output::ToolCall {
                id,
                name,
                arguments,
            } => wire::BlockOut::ToolUse {
                id,
                name,
                input: tool_input(arguments),
            },
        })
        .collect();
    let out = wire::MessageOut {
        id: &r.id,
        ty: "message",
        role: "assistant",
        model: &r.model,
        content,
        stop_reason: stop_reason(r.stop),
        stop_sequence: None,
        usage: wire::AnthropicUsageOut {
            input_tokens: r.usage.uncached_input(),
            output_tokens: r.usage.output,
            cache_read_input_tokens: r.usage.cache_read,
            cache_creation_input_tokens: r.usage.cache_creation,
        },
    };
    super::chat::to_bytes(&out)
}

/// Tool arguments from an OpenAI upstream as Anthropic's `input` object, as sent when they
/// are one. Models sometimes emit invalid JSON; it is kept under `_raw` rather than lost.
fn tool_input(arguments: &str) -> Cow<'_, RawValue> {
    let trimmed = arguments.trim();
    if trimmed.is_empty() {
        return Cow::Owned(RawValue::from_string("{}".to_owned()).expect("valid JSON"));
    }
    match serde_json::from_str::<&RawValue>(trimmed) {
        Ok(raw) if trimmed.starts_with('{') => Cow::Borrowed(raw),
        _ => Cow::Owned(
            serde_json::value::to_raw_value(&json!({"_raw": arguments}))
                .expect("a JSON value serializes"),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dialect::Provider;
    use crate::dialect::{Dialect, Upstream};

    fn decode(v: &Value) -> Result<Request, TranslateError> {
        crate::translate::decode_lenient(Dialect::Messages, Upstream::Chat, v)
    }

    fn target() -> TargetInfo<'static> {
        TargetInfo::plain(Provider::Anthropic, "claude-up", 777)
    }

    /// OpenAI's `safety_identifier` (the successor of `user`: a stable id of the end user)
    /// is Anthropic's `metadata.user_id` where no `user` came (it was dropped, a hint);
    /// `user` wins over it.
    #[test]
    fn safety_identifier_is_the_end_user() {
        use crate::translate::{decode_lenient, encode_request};
        let chat = json!({"model": "m", "messages": [{"role": "user", "content": "hi"}],
            "safety_identifier": "u-42"});
        let responses = json!({"model": "m", "input": "hi", "safety_identifier": "u-42"});
        for (client, body) in [(Dialect::Chat, chat), (Dialect::Responses, responses)] {
            let r = decode_lenient(client, Upstream::Messages, &body).unwrap();
            assert!(r.dropped.is_empty(), "{:?}", r.dropped);
            let out = encode_request(Upstream::Messages, &r, target()).unwrap();
            let sent: Value = serde_json::from_slice(&out.body).unwrap();
            assert_eq!(sent["metadata"]["user_id"], "u-42", "{sent}");
        }
        let both = json!({"model": "m", "messages": [{"role": "user", "content": "hi"}],
            "user": "u-1", "safety_identifier": "u-42"});
        let r = decode_lenient(Dialect::Chat, Upstream::Messages, &both).unwrap();
        assert_eq!(r.user.as_deref(), Some("u-1"));
    }

    /// A tool's `strict` (arguments held to the schema) is carried where the target's API
    /// has it: chat's `function.strict`, Anthropic's tool `strict`; a hint on Gemini (it was
    /// a hint everywhere).
    #[test]
    fn tool_strict_is_carried_where_the_target_has_it() {
        use crate::translate::encode_request;
        let body = json!({
            "model": "m", "max_tokens": 5, "messages": [{"role": "user", "content": "hi"}],
            "tools": [{"name": "f", "input_schema": {"type": "object"}, "strict": true}],
        });
        let r = decode(&body).unwrap();
        assert!(r.dropped.is_empty(), "{:?}", r.dropped);
        let chat = TargetInfo::plain(Provider::Openai, "gpt-4o", 4096);
        let out = encode_request(Upstream::Chat, &r, chat).unwrap();
        assert!(out.dropped.is_empty(), "{:?}", out.dropped);
        let sent: Value = serde_json::from_slice(&out.body).unwrap();
        assert_eq!(sent["tools"][0]["function"]["strict"], true, "{sent}");
        let gemini = TargetInfo::plain(Provider::Gemini, "gemini-2.5-pro", 4096);
        let out = encode_request(Upstream::Gemini, &r, gemini).unwrap();
        assert_eq!(out.dropped.len(), 1, "{:?}", out.dropped);
        assert!(out.dropped[0].contains("strict"), "{:?}", out.dropped);
        // From chat to Anthropic; `false`, Anthropic's default, goes unsaid.
        for (on, want) in [(true, json!(true)), (false, Value::Null)] {
            let chat_body = json!({
                "model": "m", "messages": [{"role": "user", "content": "hi"}],
                "tools": [{"type": "function", "function": {"name": "f", "parameters": {"type": "object"}, "strict": on}}],
            });
            let r = crate::translate::decode_lenient(Dialect::Chat, Upstream::Messages, &chat_body)
                .unwrap();
            assert!(r.dropped.is_empty(), "{:?}", r.dropped);
            let out = encode_request(Upstream::Messages, &r, target()).unwrap();
            let sent: Value = serde_json::from_slice(&out.body).unwrap();
            assert_eq!(sent["tools"][0]["strict"], want, "{sent}");
        }
    }

    #[test]
    fn request_decodes_blocks_tools_and_metadata() {
        let body = json!({
            "model": "c", "max_tokens": 50, "system": [{"type": "text", "text": "sys", "cache_control": {"type": "ephemeral"}}],
            "messages": [
                {"role": "user", "content": [
                    {"type": "text", "text": "hi"},
                    {"type": "image", "source": {"type": "base64", "media_type": "image/jpeg", "data": "QQ=="}},
                ]},
                {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "f", "input": {"x": 1}}]},
                {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "ok", "is_error": true}]},
            ],
            "stop_sequences": ["X"], "metadata": {"user_id": "u"},
            "tools": [{"name": "f", "input_schema": {"type": "object"}}],
            "tool_choice": {"type": "any", "disable_parallel_tool_use": true},
        });
        let r = decode(&body).unwrap();
        assert_eq!(r.system, vec!["sys"]);
        assert_eq!(r.user.as_deref(), Some("u"));
        assert_eq!(r.tool_choice, Some(ToolChoice::Required));
        assert_eq!(r.parallel_tool_calls, Some(false));
        assert_eq!(
            r.messages[1].parts[0],
            Part::ToolCall {
                id: "t1".into(),
                name: "f".into(),
                arguments: "{\"x\":1}".into()
            }
        );
        let chat = serde_json::to_value(super::super::chat::encode_request(
            &r,
            TargetInfo {
                max_completion_tokens: true,
                ..target()
            },
        ))
        .unwrap();
        assert_eq!(
            chat["messages"][1]["content"][1]["image_url"]["url"],
            "data:image/jpeg;base64,QQ=="
        );
        assert_eq!(chat["messages"][3]["content"], "Error: ok");
        assert_eq!(chat["stop"], json!(["X"]));
        assert_eq!(chat["user"], "u");
        assert_eq!(chat["tool_choice"], "required");
        assert_eq!(chat["parallel_tool_calls"], false);
    }

    #[test]
    fn encode_merges_turns_and_defaults_max_tokens() {
        let r = Request {
            messages: vec![
                Message {
                    role: Role::User,
                    parts: vec![Part::Text("a".into())],
                },
                Message {
                    role: Role::User,
                    parts: vec![Part::Text("b".into())],
                },
                Message {
                    role: Role::Assistant,
                    parts: vec![
                        Part::Text(String::new()),
                        Part::ToolCall {
                            id: "c".into(),
                            name: "f".into(),
                            arguments: String::new(),
                        },
                    ],
                },
                Message {
                    role: Role::User,
                    parts: vec![Part::ToolResult {
                        id: "c".into(),
                        content: vec![Part::Text("1".into())],
                        is_error: false,
                    }],
                },
                Message {
                    role: Role::User,
                    parts: vec![Part::ToolResult {
                        id: "d".into(),
                        content: vec![],
                        is_error: false,
                    }],
                },
            ],
            tools: vec![Tool {
                name: "f".into(),
                description: None,
                parameters: json!({}),
                strict: None,
            }],
            parallel_tool_calls: Some(false),
            ..Request::default()
        };
        let v = encode_request(&r, target()).unwrap();
        assert_eq!(v["max_tokens"], 777);
        let m = v["messages"].as_array().unwrap();
        assert_eq!(m.len(), 3);
        assert_eq!(m[0]["content"].as_array().unwrap().len(), 2);
        assert_eq!(
            m[1]["content"][0],
            json!({"type": "tool_use", "id": "c", "name": "f", "input": {}})
        );
        assert_eq!(m[2]["content"].as_array().unwrap().len(), 2);
        assert_eq!(
            v["tool_choice"],
            json!({"type": "auto", "disable_parallel_tool_use": true})
        );
    }

    #[test]
    fn bad_tool_arguments_are_refused() {
        let r = Request {
            messages: vec![Message {
                role: Role::Assistant,
                parts: vec![Part::ToolCall {
                    id: "c".into(),
                    name: "f".into(),
                    arguments: "{nope".into(),
                }],
            }],
            ..Request::default()
        };
        assert!(encode_request(&r, target())
            .unwrap_err()
            .to_string()
            .contains("arguments"));
    }

    #[test]
    fn untranslatable_fields_are_named() {
        let body = json!({"model": "m", "max_tokens": 1, "messages": [], "top_k": 5});
        assert!(decode(&body).unwrap_err().to_string().contains("`top_k`"));
        let body = json!({"model": "m", "max_tokens": 1, "messages": [], "tools": [{"type": "web_search_20250305", "name": "web_search"}]});
        let e = decode(&body).unwrap_err().to_string();
        assert!(e.contains("tools[0] (web_search_20250305)"), "{e}");
        assert!(e.contains("builtin_tools = \"drop\""), "{e}");
    }

    /// Anthropic's top_k reaches Gemini as topK (it was refused, "no equivalent there").
    #[test]
    fn top_k_is_carried_to_gemini() {
        let body = json!({"model": "m", "max_tokens": 1, "messages": [], "top_k": 5});
        let r =
            crate::translate::decode_lenient(Dialect::Messages, Upstream::Gemini, &body).unwrap();
        let t = TargetInfo::plain(Provider::Gemini, "gemini-2.5-pro", 8);
        let out = crate::translate::encode_request(Upstream::Gemini, &r, t).unwrap();
        let v: Value = serde_json::from_slice(&out.body).unwrap();
        assert_eq!(v["generationConfig"]["topK"], 5);
    }

    #[test]
    fn refused_blocks_are_named_with_the_rest() {
        let body = json!({"model": "m", "max_tokens": 1, "top_k": 5, "messages": [
            {"role": "user", "content": [
                {"type": "image", "source": {"type": "file", "file_id": "file_1"}},
                {"type": "document", "source": {"type": "text", "data": "x"}},
            ]},
        ]});
        let TranslateError::Unsupported { fields, .. } = decode(&body).unwrap_err() else {
            panic!("expected one refusal listing every field")
        };
        let names: Vec<&str> = fields.iter().map(|f| f.field.as_str()).collect();
        assert_eq!(
            names,
            [
                "messages[0].content[0].source.type",
                "messages[0].content[1].type",
                "top_k"
            ]
        );
    }

    #[test]
    fn cache_breakpoints_land_on_their_blocks() {
        use crate::translate::hub::{Cache, CacheAt};
        let eph = json!({"type": "ephemeral"});
        let mark = |at| Cache {
            at,
            control: eph.clone(),
            field: "messages[].cache_control",
        };
        let r = Request {
            system: vec!["a".into(), "b".into()],
            messages: vec![
                Message {
                    role: Role::User,
                    parts: vec![Part::Text("hi".into()), Part::Text(String::new())],
                },
                Message {
                    role: Role::System,
                    parts: vec![Part::Text("late".into())],
                },
            ],
            cache: vec![
                mark(CacheAt::System(1)),
                // On an empty text, which is not sent: the block before it.
                mark(CacheAt::Part {
                    message: 0,
                    part: 1,
                }),
                // A late system turn joins `system`, its breakpoint with it.
                mark(CacheAt::Part {
                    message: 1,
                    part: 0,
                }),
            ],
            ..Request::default()
        };
        let v = encode_request(&r, target()).unwrap();
        assert_eq!(
            v["system"],
            json!([
                {"type": "text", "text": "a"},
                {"type": "text", "text": "b", "cache_control": eph},
                {"type": "text", "text": "late", "cache_control": eph},
            ])
        );
        assert_eq!(
            v["messages"][0]["content"],
            json!([{"type": "text", "text": "hi", "cache_control": eph}])
        );
    }

    #[test]
    fn response_usage_counts_cache_in_input() {
        let up = json!({"id": "msg_1", "model": "c", "content": [{"type": "text", "text": "hi"}, {"type": "tool_use", "id": "t", "name": "f", "input": {"a": 1}}],
            "stop_reason": "max_tokens", "usage": {"input_tokens": 5, "output_tokens": 2, "cache_read_input_tokens": 10, "cache_creation_input_tokens": 1}});
        let r = decode_response(up.to_string().as_bytes()).unwrap();
        assert_eq!(
            r.usage,
            Usage {
                input: 16,
                cache_read: 10,
                cache_creation: 1,
                output: 2
            }
        );
        assert_eq!(r.stop, StopReason::MaxTokens);
        let back: Value = serde_json::from_slice(&encode_response(&r)).unwrap();
        assert_eq!(back["usage"]["input_tokens"], 5);
        assert_eq!(back["content"][1]["input"], json!({"a": 1}));
        assert_eq!(back["stop_reason"], "max_tokens");
        let chat: Value = serde_json::from_slice(&super::super::chat::encode_response(&r)).unwrap();
        assert_eq!(chat["usage"]["prompt_tokens"], 16);
        assert_eq!(chat["choices"][0]["finish_reason"], "length");
        assert_eq!(
            chat["choices"][0]["message"]["tool_calls"][0]["function"]["arguments"],
            "{\"a\":1}"
        );
    }
}
