//! OpenAI chat completions codec: client requests into the hub, the hub into upstream
//! requests (OpenAI and OpenAI-compatible servers), and answers both ways.

use serde_json::{json, Map, Value};

use super::errors::{TranslateError, UpstreamShapeError};
use super::field::{
    array, boolean, count, invalid, is_inert, need, number, object, string, strings, At,
};
use super::hub::{
    Cache, CacheAt, Effort, Image, Message, Output, Part, Reasoning, Request, Response,
    ResponseFormat, Role, StopReason, Tool, ToolChoice, Usage,
};
use super::policy::Verdicts;
use super::target::TargetInfo;
use super::{walk, wire};
use std::borrow::Cow;

/// Hints: they tune storage, billing or routing on OpenAI's side and cannot change the
/// answer's content (TRANSLATION.md); dropped.
const HINTS: [&str; 5] = [
    "store",
    "metadata",
    "service_tier",
    "prompt_cache_key",
    "prompt_cache_retention",
];

/// Decodes a chat completions request body; each field's fate goes to `cx`.
pub(crate) fn decode_request(v: &mut Value, cx: &mut Verdicts) -> Result<Request, TranslateError> {
    walk::request(v, |k, val, r| {
        match k {
            "messages" => decode_messages(val, r, cx)?,
            "stream" => r.stream = boolean(val, k)?,
            "stream_options" => {
                r.include_usage = object(val, k)?
                    .get("include_usage")
                    .and_then(Value::as_bool)
                    .unwrap_or(false)
            }
            "max_tokens" | "max_completion_tokens" => r.max_tokens = Some(count(val, k)?),
            "temperature" => r.temperature = Some(number(val, k)?),
            "top_p" => r.top_p = Some(number(val, k)?),
            "stop" => r.stop = strings(val, k)?,
            "user" => r.user = Some(string(val, k)?),
            // OpenAI's successor of `user` (a stable id of the end user, for abuse
            // detection): where the client sent no `user`, it is the user, as Anthropic's
            // `metadata.user_id` is ("Anthropic may use this id to help detect abuse").
            "safety_identifier" if r.user.is_none() => r.user = Some(string(val, k)?),
            "safety_identifier" => cx.hint(k),
            "tools" => r.tools = decode_tools(val, cx)?,
            "tool_choice" => r.tool_choice = decode_tool_choice(val, cx)?,
            "parallel_tool_calls" => r.parallel_tool_calls = Some(boolean(val, k)?),
            "reasoning_effort" => {
                let name = string(val, k)?;
                if name != "none" {
                    let effort = Effort::from_openai(&name).ok_or_else(|| {
                        invalid(k, "must be none, minimal, low, medium, high or xhigh")
                    })?;
                    Reasoning::note(&mut r.reasoning, "reasoning_effort", Some(effort));
                }
            }
            // How wordy the answer is (GPT-5): a style hint no other API takes.
            "verbosity" => cx.client_side(k, "no other API takes a verbosity"),
            "web_search_options" => {
                cx.builtin_tool(k, "web search runs only on OpenAI");
            }
            "n" if val.as_u64() == Some(1) => {}
            "n" => cx.refuse(k, "only one choice (n = 1) can be translated"),
            "response_format" if val.get("type").and_then(Value::as_str) == Some("text") => {}
            "modalities" if *val == json!(["text"]) => {}
            "frequency_penalty" | "presence_penalty" | "logprobs" | "top_logprobs"
            | "logit_bias"
                if is_inert(val) => {}
            k if HINTS.contains(&k) => cx.hint(k),
            _ => cx.refuse(k, "it has no equivalent there"),
        }
        Ok(())
    })
}

fn decode_messages(v: &Value, r: &mut Request, cx: &mut Verdicts) -> Result<(), TranslateError> {
    for (i, m) in array(v, "messages")?.iter().enumerate() {
        // Formatted only where an error names it (two `format!` per turn were ~3% of a
        // translated request).
        let path = || format!("messages[{i}]");
        let o = m
            .as_object()
            .ok_or_else(|| invalid(path(), "must be an object"))?;
        let role = need(o, "role", &path)?.as_str().unwrap_or_default();
        for (key, val) in o {
            let ok = matches!(key.as_str(), "role" | "content" | "name" | "cache_control")
                || (role == "assistant" && matches!(key.as_str(), "tool_calls" | "refusal"))
                || (role == "tool" && key == "tool_call_id");
            if !ok && !val.is_null() {
                cx.refuse(format!("{}.{key}", path()), "it has no equivalent there");
            }
        }
        let cache = cache_control(o, &path)?;
        let content = o.get("content").filter(|c| !c.is_null());
        if let (Some(Value::String(s)), "user") = (content, role) {
            r.messages.push(Message {
                role: Role::User,
                parts: vec![Part::Text(s.clone())],
            });
            mark_last(r, cache, false);
            continue;
        }
        let at = path();
        // Part-level `cache_control`s, by the index of the part (or text) they follow.
        let mut marks = Vec::new();
        let message = r.messages.len();
        match role {
            "system" | "developer" => {
                let c = content.ok_or_else(|| invalid(format!("{at}.content"), "is required"))?;
                let text = texts(c, &format!("{at}.content"), &mut marks)?.join("\n");
                // Before the first turn it is the system prompt; later, a turn in its place.
                // Either way its parts are one text: their breakpoints fall on it.
                let to = if r.messages.is_empty() {
                    r.system.push(text);
                    CacheAt::System(r.system.len() - 1)
                } else {
                    r.messages.push(Message {
                        role: Role::System,
                        parts: vec![Part::Text(text)],
                    });
                    CacheAt::Part { message, part: 0 }
                };
                mark_all(r, &marks, |_| to);
                mark_last(r, cache, matches!(to, CacheAt::System(_)));
                continue;
            }
            "user" => {
                let c = content.ok_or_else(|| invalid(format!("{at}.content"), "is required"))?;
                let parts = user_parts(c, &format!("{at}.content"), cx, &mut marks)?;
                r.messages.push(Message {
                    role: Role::User,
                    parts,
                });
            }
            "assistant" => {
                let mut parts = Vec::new();
                if let Some(c) = content {
                    parts.extend(
                        texts(c, &format!("{at}.content"), &mut marks)?
                            .into_iter()
                            .map(Part::Text),
                    );
                }
                if let Some(refusal) = o.get("refusal").and_then(Value::as_str) {
                    parts.push(Part::Text(refusal.to_owned()));
                }
                if let Some(calls) = o.get("tool_calls").filter(|c| !c.is_null()) {
                    for (j, c) in array(calls, &format!("{at}.tool_calls"))?
                        .iter()
                        .enumerate()
                    {
                        let at = format!("{at}.tool_calls[{j}]");
                        if let Some((call, cache)) = tool_call(c, &at, cx)? {
                            if let Some(control) = cache {
                                r.cache.push(Cache {
                                    at: CacheAt::Part {
                                        message,
                                        part: parts.len(),
                                    },
                                    control: control.clone(),
                                    field: "messages[].tool_calls[].cache_control",
                                });
                            }
                            parts.push(call);
                        }
                    }
                }
                r.messages.push(Message {
                    role: Role::Assistant,
                    parts,
                });
            }
            "tool" => {
                let id = string(need(o, "tool_call_id", &at)?, &format!("{at}.tool_call_id"))?;
                let c = content.ok_or_else(|| invalid(format!("{at}.content"), "is required"))?;
                let content = texts(c, &format!("{at}.content"), &mut marks)?
                    .into_iter()
                    .map(Part::Text)
                    .collect();
                // The texts are one tool result: their breakpoints fall on it.
                marks.iter_mut().for_each(|(k, _)| *k = 0);
                r.messages.push(Message {
                    role: Role::User,
                    parts: vec![Part::ToolResult {
                        id,
                        content,
                        is_error: false,
                    }],
                });
            }
            other => {
                cx.refuse(
                    format!("{at}.role"),
                    format!("role {other:?} cannot be translated"),
                );
                continue;
            }
        }
        mark_all(r, &marks, |part| CacheAt::Part { message, part });
        mark_last(r, cache, false);
    }
    Ok(())
}

/// An object's `cache_control` (chat clients copy Anthropic's): `None` when absent.
fn cache_control(o: &Map<String, Value>, at: impl At) -> Result<Option<&Value>, TranslateError> {
    match o.get("cache_control") {
        None | Some(Value::Null) => Ok(None),
        Some(c @ Value::Object(_)) => Ok(Some(c)),
        Some(_) => Err(invalid(
            format!("{}.cache_control", at.path()),
            "must be an object",
        )),
    }
}

/// A message's own `cache_control` falls on the last thing it became: the last system text
/// (`system`), else the last part of the last message (nothing when it has no part).
fn mark_last(r: &mut Request, control: Option<&Value>, system: bool) {
    let Some(control) = control else { return };
    let at = if system {
        r.system.len().checked_sub(1).map(CacheAt::System)
    } else {
        r.messages.last().and_then(|m| {
            m.parts.len().checked_sub(1).map(|part| CacheAt::Part {
                message: r.messages.len() - 1,
                part,
            })
        })
    };
    if let Some(at) = at {
        r.cache.push(Cache {
            at,
            control: control.clone(),
            field: "messages[].cache_control",
        });
    }
}

/// Part-level `cache_control`s (`marks`: the index of the part each follows), placed by `to`.
fn mark_all(r: &mut Request, marks: &[(usize, &Value)], to: impl Fn(usize) -> CacheAt) {
    r.cache.extend(marks.iter().map(|&(k, control)| Cache {
        at: to(k),
        control: control.clone(),
        field: "messages[].content[].cache_control",
    }));
}

/// One `tool_calls[j]` entry and its `cache_control`; `None` when it is refused.
fn tool_call<'v>(
    v: &'v Value,
    at: &str,
    cx: &mut Verdicts,
) -> Result<Option<(Part, Option<&'v Value>)>, TranslateError> {
    let co = object(v, at)?;
    // Custom tool calls (`type: "custom"`) answer custom tools, which are refused.
    if let Some(ty) = co.get("type").and_then(Value::as_str) {
        if ty != "function" {
            cx.refuse(
                format!("{at}.type"),
                format!("tool call type {ty:?} cannot be translated"),
            );
            return Ok(None);
        }
    }
    let f = object(need(co, "function", at)?, &format!("{at}.function"))?;
    for (key, val) in co {
        if !matches!(
            key.as_str(),
            "id" | "type" | "function" | "cache_control" | "extra_content"
        ) && !val.is_null()
        {
            cx.refuse(format!("{at}.{key}"), "it has no equivalent there");
        }
    }
    // Google's OpenAI-compatible API (and the AI SDK after it) carries a Gemini call's
    // signature here; the hub carries it in the id (`gemini::signature`).
    let mut signature = None;
    if let Some(extra) = co.get("extra_content").filter(|e| !e.is_null()) {
        signature = extra
            .pointer("/google/thought_signature")
            .and_then(Value::as_str);
        let only_that = extra.as_object().is_some_and(|o| o.len() == 1)
            && extra["google"].as_object().is_some_and(|g| g.len() == 1);
        if signature.is_none() || !only_that {
            cx.refuse(format!("{at}.extra_content"), "it has no equivalent there");
        }
    }
    for (key, val) in f {
        if !matches!(key.as_str(), "name" | "arguments") && !val.is_null() {
            cx.refuse(format!("{at}.function.{key}"), "it has no equivalent there");
        }
    }
    let id = string(need(co, "id", at)?, &format!("{at}.id"))?;
    let id = match signature {
        Some(sig) if super::gemini::signature::unfold(&id).1.is_none() => {
            super::gemini::signature::fold(&id, Some(sig))
        }
        _ => id,
    };
    let call = Part::ToolCall {
        id,
        name: string(need(f, "name", at)?, &format!("{at}.function.name"))?,
        arguments: f
            .get("arguments")
            .and_then(Value::as_str)
            .unwrap_or("{}")
            .to_owned(),
    };
    Ok(Some((call, cache_control(co, at)?)))
}

/// Text-only content: a string, or text (and refusal) parts; the `cache_control` of a part
/// goes to `marks` with the part's index.
fn texts<'v>(
    v: &'v Value,
    at: &str,
    marks: &mut Vec<(usize, &'v Value)>,
) -> Result<Vec<String>, TranslateError> {
    if let Some(s) = v.as_str() {
        return Ok(vec![s.to_owned()]);
    }
    let mut out = Vec::new();
    for (i, p) in array(v, at)?.iter().enumerate() {
        let at = format!("{at}[{i}]");
        let o = object(p, &at)?;
        match o.get("type").and_then(Value::as_str) {
            Some("text") => out.push(string(need(o, "text", &at)?, &format!("{at}.text"))?),
            Some("refusal") => {
                out.push(string(need(o, "refusal", &at)?, &format!("{at}.refusal"))?)
            }
            _ => {
                return Err(invalid(
                    format!("{at}.type"),
                    "only text parts are allowed here",
                ))
            }
        }
        if let Some(c) = cache_control(o, &at)? {
            marks.push((out.len() - 1, c));
        }
    }
    Ok(out)
}

/// A user message's parts (audio and file parts refused); `marks` as in [`texts`].
fn user_parts<'v>(
    v: &'v Value,
    at: &str,
    cx: &mut Verdicts,
    marks: &mut Vec<(usize, &'v Value)>,
) -> Result<Vec<Part>, TranslateError> {
    if let Some(s) = v.as_str() {
        return Ok(vec![Part::Text(s.to_owned())]);
    }
    let mut out = Vec::new();
    for (i, p) in array(v, at)?.iter().enumerate() {
        let at = format!("{at}[{i}]");
        let o = object(p, &at)?;
        match o.get("type").and_then(Value::as_str) {
            Some("text") => out.push(Part::Text(string(
                need(o, "text", &at)?,
                &format!("{at}.text"),
            )?)),
            Some("image_url") => {
                let img = need(o, "image_url", &at)?;
                // `detail` is a resolution hint; the image itself is what the model sees.
                let url = match img {
                    Value::String(s) => s.clone(),
                    _ => string(
                        need(object(img, &format!("{at}.image_url"))?, "url", &at)?,
                        &format!("{at}.image_url.url"),
                    )?,
                };
                out.push(Part::Image(Image::from_url(&url)));
            }
            other => {
                cx.refuse(
                    format!("{at}.type"),
                    format!(
                        "content part {:?} cannot be translated",
                        other.unwrap_or("(none)")
                    ),
                );
                continue;
            }
        }
        if let Some(c) = cache_control(o, &at)? {
            marks.push((out.len() - 1, c));
        }
    }
    Ok(out)
}

fn decode_tools(v: &Value, cx: &mut Verdicts) -> Result<Vec<Tool>, TranslateError> {
    walk::tools(v, |at, o| {
        if o.get("type").and_then(Value::as_str) != Some("function") {
            cx.refuse(
                format!("{at}.type"),
                "only function tools can be translated",
            );
            return Ok(None);
        }
        let f = object(need(o, "function", at)?, &format!("{at}.function"))?;
        let strict = walk::strict(f.get("strict"), format!("{at}.function.strict"), cx);
        Ok(Some(Tool {
            name: string(need(f, "name", at)?, &format!("{at}.function.name"))?,
            description: walk::description(f),
            parameters: f
                .get("parameters")
                .cloned()
                .unwrap_or_else(walk::no_parameters),
            strict,
        }))
    })
}

/// `None` when the choice is refused (`allowed_tools`, `custom`: no equivalent there).
fn decode_tool_choice(v: &Value, cx: &mut Verdicts) -> Result<Option<ToolChoice>, TranslateError> {
    match v {
        Value::String(s) => match s.as_str() {
            "auto" => Ok(Some(ToolChoice::Auto)),
            "none" => Ok(Some(ToolChoice::None)),
            "required" => Ok(Some(ToolChoice::Required)),
            _ => Err(invalid("tool_choice", format!("unknown value {s:?}"))),
        },
        Value::Object(o) => match o.get("type").and_then(Value::as_str) {
            None | Some("function") => o
                .get("function")
                .and_then(|f| f.get("name"))
                .and_then(Value::as_str)
                .map(|n| Some(ToolChoice::Named(n.to_owned())))
                .ok_or_else(|| invalid("tool_choice", "a named choice needs function.name")),
            Some(ty) => {
                cx.refuse(
                    "tool_choice.type",
                    format!("tool choice {ty:?} cannot be translated"),
                );
                Ok(None)
            }
        },
        _ => Err(invalid("tool_choice", "must be a string or an object")),
    }
}

/// Encodes a hub request for an OpenAI or OpenAI-compatible chat upstream (typed:
/// [`wire::ChatRequestOut`]).
pub(super) fn encode_request<'a>(r: &'a Request, t: TargetInfo<'a>) -> wire::ChatRequestOut<'a> {
    let mut messages = Vec::with_capacity(r.messages.len() + 1);
    if !r.system.is_empty() {
        messages.push(wire::ChatTurnOut::System {
            content: joined(r.system.iter().map(String::as_str), "\n\n"),
        });
    }
    for m in &r.messages {
        encode_message(m, &mut messages);
    }
    // OpenAI's newer models refuse `max_tokens`; compatible servers often only know it.
    let (max_completion_tokens, max_tokens) = if t.max_completion_tokens {
        (r.max_tokens, None)
    } else {
        (None, r.max_tokens)
    };
    let tools: Vec<wire::ChatToolOut<'_>> = r
        .tools
        .iter()
        .map(|t| wire::ChatToolOut {
            ty: "function",
            function: wire::ChatToolFunctionOut {
                name: &t.name,
                description: t.description.as_deref(),
                parameters: &t.parameters,
                strict: t.strict.as_ref().map(|s| s.on),
            },
        })
        .collect();
    wire::ChatRequestOut {
        model: t.model,
        messages: wire::ChatTurns(messages),
        stream: r.stream,
        // Always: the gateway needs the usage for accounting and for the client's dialect.
        stream_options: r.stream.then_some(wire::IncludeUsage {
            include_usage: true,
        }),
        max_completion_tokens,
        max_tokens,
        temperature: r.temperature.as_ref(),
        top_p: r.top_p.as_ref(),
        stop: &r.stop,
        reasoning_effort: r.effort_for(t.reasoning).map(Effort::openai),
        user: r.user.as_deref(),
        response_format: r.response_format.as_ref().map(|f| match f {
            ResponseFormat::Json => json!({"type": "json_object"}),
            ResponseFormat::Schema(s) => json!({"type": "json_schema",
                "json_schema": {"name": "response", "schema": s}}),
        }),
        parallel_tool_calls: r.parallel_tool_calls.filter(|_| !tools.is_empty()),
        tools,
        tool_choice: r.tool_choice.as_ref().map(|c| match c {
            ToolChoice::Auto => wire::ChatToolChoiceOut::Mode("auto"),
            ToolChoice::None => wire::ChatToolChoiceOut::Mode("none"),
            ToolChoice::Required => wire::ChatToolChoiceOut::Mode("required"),
            ToolChoice::Named(n) => wire::ChatToolChoiceOut::Named {
                ty: "function",
                function: wire::NameOut { name: n },
            },
        }),
    }
}

/// `parts` joined by `sep`, borrowed when there is only one.
fn joined<'a>(mut parts: impl Iterator<Item = &'a str>, sep: &str) -> Cow<'a, str> {
    let Some(first) = parts.next() else {
        return Cow::Borrowed("");
    };
    match parts.next() {
        None => Cow::Borrowed(first),
        Some(second) => {
            let mut s = String::with_capacity(first.len() + sep.len() + second.len());
            s.push_str(first);
            s.push_str(sep);
            s.push_str(second);
            for p in parts {
                s.push_str(sep);
                s.push_str(p);
            }
            Cow::Owned(s)
        }
    }
}

fn encode_message<'a>(m: &'a Message, out: &mut Vec<wire::ChatTurnOut<'a>>) {
    match m.role {
        Role::User => {
            let mut content = Vec::new();
            for p in &m.parts {
                match p {
                    Part::ToolResult {
                        id,
                        content: c,
                        is_error,
                    } => {
                        let text = joined(
                            c.iter().filter_map(|p| match p {
                                Part::Text(t) => Some(t.as_str()),
                                _ => None,
                            }),
                            "\n",
                        );
                        // Chat has no error flag on tool messages: say it in the content.
                        let content = if *is_error {
                            Cow::Owned(format!("Error: {text}"))
                        } else {
                            text
                        };
                        out.push(wire::ChatTurnOut::Tool {
                            tool_call_id: id,
                            content,
                        });
                    }
                    Part::Text(t) => content.push(wire::ChatUserPart::Text { text: t }),
                    Part::Image(i) => content.push(wire::ChatUserPart::ImageUrl {
                        image_url: wire::ImageUrlOut { url: i.to_url() },
                    }),
                    Part::ToolCall { .. } => {}
                }
            }
            match content.as_slice() {
                [] => {}
                [wire::ChatUserPart::Text { text }] => out.push(wire::ChatTurnOut::User {
                    content: wire::ChatUserContent::Text(text),
                }),
                _ => out.push(wire::ChatTurnOut::User {
                    content: wire::ChatUserContent::Parts(content),
                }),
            }
        }
        // In place: chat takes system messages anywhere in the conversation.
        Role::System => out.push(wire::ChatTurnOut::System {
            content: joined(m.texts(), "\n\n"),
        }),
        Role::Assistant => {
            let text: String = m.texts().collect();
            let tool_calls: Vec<wire::ChatToolCallOut<'_>> = m
                .parts
                .iter()
                .filter_map(|p| match p {
                    Part::ToolCall {
                        id,
                        name,
                        arguments,
                    } => Some(wire::ChatToolCallOut {
                        id,
                        ty: "function",
                        function: wire::ChatFunctionOut { name, arguments },
                    }),
                    _ => None,
                })
                .collect();
            let content = if text.is_empty() && !tool_calls.is_empty() {
                None
            } else {
                Some(text)
            };
            out.push(wire::ChatTurnOut::Assistant {
                content,
                tool_calls,
            });
        }
    }
}

/// Reads a chat `finish_reason`.
pub(crate) fn stop_from(reason: Option<&str>) -> StopReason {
    match reason {
        Some("length") => StopReason::MaxTokens,
        Some("tool_calls" | "function_call") => StopReason::ToolUse,
        Some("content_filter") => StopReason::ContentFilter,
        _ => StopReason::EndTurn,
    }
}

pub(crate) fn finish_reason(s: StopReason) -> &'static str {
    match s {
        StopReason::EndTurn | StopReason::StopSequence => "stop",
        StopReason::MaxTokens => "length",
        StopReason::ToolUse => "tool_calls",
        StopReason::ContentFilter => "content_filter",
    }
}

/// Reads a chat `usage` object.
pub(crate) fn usage_from(u: &wire::ChatUsageIn) -> Usage {
    Usage {
        input: u.prompt_tokens.unwrap_or(0),
        cache_read: u
            .prompt_tokens_details
            .as_ref()
            .and_then(|d| d.cached_tokens)
            .unwrap_or(0),
        cache_creation: 0,
        output: u.completion_tokens.unwrap_or(0),
    }
}

pub(super) fn usage_out(u: &Usage) -> wire::ChatUsageOut {
    wire::ChatUsageOut {
        prompt_tokens: u.input,
        completion_tokens: u.output,
        total_tokens: u.input.saturating_add(u.output),
        prompt_tokens_details: wire::CachedOut {
            cached_tokens: u.cache_read,
        },
    }
}

/// Decodes an upstream chat completion (typed: [`wire`]).
pub(crate) fn decode_response(body: &[u8]) -> Result<Response, UpstreamShapeError> {
    let v: wire::ChatCompletionIn<'_> = serde_json::from_slice(body)
        .map_err(|e| UpstreamShapeError(format!("not a chat completion ({e})")))?;
    let choice = v
        .choices
        .and_then(|c| c.into_iter().next())
        .ok_or_else(|| UpstreamShapeError("`choices` is empty".into()))?;
    let mut output = Vec::new();
    if let Some(msg) = choice.message {
        if let Some(t) = wire::raw_str(msg.content).filter(|t| !t.is_empty()) {
            output.push(Output::Text(t.into_owned()));
        }
        if let Some(t) = msg.refusal {
            output.push(Output::Text(t.into_owned()));
        }
        for c in msg.tool_calls.into_iter().flatten() {
            let missing = |k: &str| UpstreamShapeError(format!("`{k}` is missing or not a string"));
            let f = c.function.ok_or_else(|| missing("name"))?;
            output.push(Output::ToolCall {
                id: c.id.ok_or_else(|| missing("id"))?.into_owned(),
                name: f.name.ok_or_else(|| missing("name"))?.into_owned(),
                arguments: f.arguments.map_or_else(|| "{}".to_owned(), Cow::into_owned),
            });
        }
    }
    Ok(Response {
        id: v.id.map_or_else(|| "chatcmpl".to_owned(), Cow::into_owned),
        model: v.model.map(Cow::into_owned).unwrap_or_default(),
        output,
        stop: stop_from(choice.finish_reason.as_deref()),
        usage: v.usage.as_ref().map(usage_from).unwrap_or_default(),
    })
}

/// Encodes a hub answer as a chat completion.
pub(crate) fn encode_response(r: &Response) -> Vec<u8> {
    let mut text = String::new();
    let mut tool_calls = Vec::new();
    for o in &r.output {
        match o {
            Output::Text(t) => text.push_str(t),
            Output::ToolCall {
                id,
                name,
                arguments,
            } => tool_calls.push(wire::ChatToolCallOut {
                id,
                ty: "function",
                function: wire::ChatFunctionOut { name, arguments },
            }),
        }
    }
    let out = wire::ChatCompletionOut {
        id: &r.id,
        object: "chat.completion",
        created: super::hub::now_secs(),
        model: &r.model,
        choices: [wire::ChatChoiceOut {
            index: 0,
            message: wire::ChatMessageOut {
                role: "assistant",
                content: (!text.is_empty() || tool_calls.is_empty()).then_some(text),
                refusal: None,
                tool_calls,
            },
            logprobs: None,
            finish_reason: finish_reason(r.stop),
        }],
        usage: usage_out(&r.usage),
    };
    to_bytes(&out)
}

/// Serialized into a buffer sized for a typical answer: growing from empty cost measurable
/// reallocations per request.
pub(crate) fn to_bytes(v: &impl serde::Serialize) -> Vec<u8> {
    to_bytes_sized(v, 1024)
}

/// [`to_bytes`] into a buffer of `capacity` to start with.
pub(crate) fn to_bytes_sized(v: &impl serde::Serialize, capacity: usize) -> Vec<u8> {
    let mut out = Vec::with_capacity(capacity);
    serde_json::to_writer(&mut out, v).expect("a JSON value serializes");
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dialect::Provider;
    use crate::dialect::{Dialect, Upstream};

    fn decode(v: &Value) -> Result<Request, TranslateError> {
        crate::translate::decode_lenient(Dialect::Chat, Upstream::Messages, v)
    }

    #[test]
    fn request_round_trip_keeps_every_translated_field() {
        let body = json!({
            "model": "gpt",
            "messages": [
                {"role": "system", "content": "be brief"},
                {"role": "developer", "content": [{"type": "text", "text": "and kind"}]},
                {"role": "user", "content": [
                    {"type": "text", "text": "look"},
                    {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA", "detail": "low"}},
                ]},
                {"role": "assistant", "content": null, "tool_calls": [
                    {"id": "call_1", "type": "function", "function": {"name": "f", "arguments": "{\"a\":1}"}},
                ]},
                {"role": "tool", "tool_call_id": "call_1", "content": "42"},
            ],
            "max_completion_tokens": 100, "temperature": 0.5, "top_p": 1, "stop": "END",
            "user": "u1", "stream": true, "stream_options": {"include_usage": true},
            "tools": [{"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}}],
            "tool_choice": "required", "parallel_tool_calls": false, "n": 1, "store": false,
        });
        let r = decode(&body).unwrap();
        assert_eq!(r.system, vec!["be brief", "and kind"]);
        assert_eq!(r.max_tokens, Some(100));
        assert_eq!(r.stop, vec!["END"]);
        assert!(r.stream && r.include_usage);
        assert_eq!(r.tool_choice, Some(ToolChoice::Required));
        assert_eq!(r.parallel_tool_calls, Some(false));
        assert_eq!(r.messages.len(), 3);
        assert!(
            matches!(&r.messages[0].parts[1], Part::Image(Image::Base64 { media_type, .. }) if media_type == "image/png")
        );
        let t = TargetInfo::plain(Provider::OpenaiCompatible, "up", 1);
        let out = serde_json::to_value(encode_request(&r, t)).unwrap();
        assert_eq!(out["model"], "up");
        assert_eq!(out["max_tokens"], 100);
        assert_eq!(out["stream_options"]["include_usage"], true);
        assert_eq!(out["messages"][0]["content"], "be brief\n\nand kind");
        assert_eq!(
            out["messages"][1]["content"][1]["image_url"]["url"],
            "data:image/png;base64,AAAA"
        );
        assert_eq!(
            out["messages"][2]["tool_calls"][0]["function"]["arguments"],
            "{\"a\":1}"
        );
        assert_eq!(
            out["messages"][3],
            json!({"role": "tool", "tool_call_id": "call_1", "content": "42"})
        );
        assert_eq!(out["parallel_tool_calls"], false);
        let t = TargetInfo {
            max_completion_tokens: true,
            ..t
        };
        let out = serde_json::to_value(encode_request(&r, t)).unwrap();
        assert_eq!(out["max_completion_tokens"], 100);
        assert!(out.get("max_tokens").is_none());
    }

    #[test]
    fn untranslatable_fields_are_named() {
        for (k, v) in [
            ("n", json!(2)),
            ("logprobs", json!(true)),
            ("audio", json!({})),
            ("seed", json!(1)),
        ] {
            let body = json!({"model": "m", "messages": [], k: v});
            let e = decode(&body).unwrap_err();
            assert!(e.to_string().contains(&format!("`{k}`")), "{e}");
        }
        let body = json!({"model": "m", "messages": [{"role": "user", "content": [{"type": "input_audio"}]}]});
        assert!(decode(&body)
            .unwrap_err()
            .to_string()
            .contains("messages[0].content[0].type"));
        let inert =
            json!({"model": "m", "messages": [], "logprobs": false, "frequency_penalty": 0});
        assert!(decode(&inert).is_ok());
    }

    #[test]
    fn every_refused_field_is_named_in_one_error() {
        let body = json!({
            "model": "m",
            "messages": [
                {"role": "system", "content": "s", "x_trace": {"id": 1}},
                {"role": "user", "content": [
                    {"type": "text", "text": "hi"},
                    {"type": "input_audio", "input_audio": {"data": "", "format": "wav"}},
                ], "x_priority": 2},
                {"role": "assistant", "content": null, "tool_calls": [
                    {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}", "x_f": 1}, "x_call": true},
                    {"id": "c2", "type": "custom", "custom": {"name": "g", "input": "x"}},
                ]},
                {"role": "function", "name": "f", "content": "old"},
                {"role": "tool", "tool_call_id": "c1", "content": "ok", "x_null": null},
            ],
            "seed": 7,
            "tool_choice": {"type": "allowed_tools", "allowed_tools": {"mode": "auto", "tools": []}},
        });
        let TranslateError::Unsupported { fields, .. } = decode(&body).unwrap_err() else {
            panic!("expected one refusal listing every field")
        };
        let mut names: Vec<&str> = fields.iter().map(|f| f.field.as_str()).collect();
        names.sort_unstable();
        assert_eq!(
            names,
            [
                "messages[0].x_trace",
                "messages[1].content[1].type",
                "messages[1].x_priority",
                "messages[2].tool_calls[0].function.x_f",
                "messages[2].tool_calls[0].x_call",
                "messages[2].tool_calls[1].type",
                "messages[3].role",
                "seed",
                "tool_choice.type",
            ]
        );
    }

    #[test]
    fn tool_calls_are_checked_like_every_object() {
        let call = |extra: Value| {
            let mut c = json!({"id": "c", "type": "function", "function": {"name": "f", "arguments": "{}"}});
            c.as_object_mut()
                .unwrap()
                .extend(extra.as_object().unwrap().clone());
            json!({"model": "m", "messages": [{"role": "assistant", "tool_calls": [c]}]})
        };
        let e = decode(&call(json!({"made_up": 1})))
            .unwrap_err()
            .to_string();
        assert!(e.contains("`messages[0].tool_calls[0].made_up`"), "{e}");
        // Google's signature (the AI SDK echoes it) rides in the id; nothing else there.
        let r = decode(&call(
            json!({"extra_content": {"google": {"thought_signature": "c2ln"}}}),
        ))
        .unwrap();
        let Part::ToolCall { id, .. } = &r.messages[0].parts[0] else {
            panic!("{:?}", r.messages)
        };
        assert_eq!(
            crate::translate::gemini::signature::unfold(id),
            ("c", Some("c2ln".to_owned()))
        );
        let e = decode(&call(json!({"extra_content": {"other": 1}})))
            .unwrap_err()
            .to_string();
        assert!(e.contains("tool_calls[0].extra_content"), "{e}");
        // Null is absent; cache_control is a breakpoint, not an unknown key.
        let r = decode(&call(
            json!({"made_up": null, "cache_control": {"type": "ephemeral"}}),
        ))
        .unwrap();
        assert!(r.dropped.is_empty(), "{:?}", r.dropped);
        assert_eq!(r.cache.len(), 1);
    }

    /// What opencode sends for a Claude model: `cache_control` on the first system messages
    /// and on the last two turns (on a message, or on its last part).
    fn opencode_body() -> Value {
        let eph = json!({"type": "ephemeral"});
        json!({
            "model": "claude-sonnet",
            "messages": [
                {"role": "system", "content": "you are opencode", "cache_control": eph},
                {"role": "system", "content": [{"type": "text", "text": "env"}, {"type": "text", "text": "rules", "cache_control": {"type": "ephemeral", "ttl": "1h"}}]},
                {"role": "user", "content": "read a.txt"},
                {"role": "assistant", "content": "", "tool_calls": [
                    {"id": "c1", "type": "function", "function": {"name": "read", "arguments": "{}"}, "cache_control": eph},
                ]},
                {"role": "tool", "tool_call_id": "c1", "content": "hello", "cache_control": eph},
                {"role": "user", "content": [
                    {"type": "text", "text": "and"},
                    {"type": "text", "text": "now?", "cache_control": eph},
                ]},
                {"role": "user", "content": "last", "cache_control": eph},
            ],
        })
    }

    #[test]
    fn cache_control_maps_to_the_anthropic_block_and_is_dropped_elsewhere() {
        let r = decode(&opencode_body()).unwrap();
        assert!(r.dropped.is_empty(), "{:?}", r.dropped);
        let t = TargetInfo::plain(Provider::Anthropic, "up", 1);
        let enc = crate::translate::encode_request(Upstream::Messages, &r, t).unwrap();
        assert!(enc.dropped.is_empty(), "{:?}", enc.dropped);
        let out: Value = serde_json::from_slice(&enc.body).unwrap();
        let eph = json!({"type": "ephemeral"});
        assert_eq!(
            out["system"],
            json!([
                {"type": "text", "text": "you are opencode", "cache_control": eph},
                {"type": "text", "text": "env\nrules", "cache_control": {"type": "ephemeral", "ttl": "1h"}},
            ])
        );
        let m = &out["messages"];
        assert_eq!(
            m[0]["content"][0],
            json!({"type": "text", "text": "read a.txt"})
        );
        assert_eq!(m[1]["content"][0]["type"], "tool_use");
        assert_eq!(m[1]["content"][0]["cache_control"], eph);
        // The tool result and the next user turns merge into one user turn.
        let last = m[2]["content"].as_array().unwrap();
        let marks: Vec<(&str, bool)> = last
            .iter()
            .map(|b| {
                (
                    b["type"].as_str().unwrap(),
                    b.get("cache_control").is_some(),
                )
            })
            .collect();
        assert_eq!(
            marks,
            [
                ("tool_result", true),
                ("text", false),
                ("text", true),
                ("text", true)
            ]
        );
        assert_eq!(m.as_array().unwrap().len(), 3);

        // A chat target takes no breakpoints: dropped, named once per field.
        let t = TargetInfo {
            max_completion_tokens: false,
            ..t
        };
        let enc = crate::translate::encode_request(Upstream::Chat, &r, t).unwrap();
        assert_eq!(
            enc.dropped,
            [
                "messages[].cache_control",
                "messages[].content[].cache_control",
                "messages[].tool_calls[].cache_control"
            ]
        );
        assert!(!String::from_utf8_lossy(&enc.body).contains("cache_control"));
    }

    #[test]
    fn cache_control_must_be_an_object() {
        let body = json!({"model": "m", "messages": [{"role": "user", "content": "hi", "cache_control": "ephemeral"}]});
        let e = decode(&body).unwrap_err().to_string();
        assert!(e.contains("messages[0].cache_control"), "{e}");
    }

    #[test]
    fn response_maps_tool_calls_usage_and_finish() {
        let up = json!({
            "id": "chatcmpl-1", "model": "m",
            "choices": [{"index": 0, "finish_reason": "tool_calls", "message": {"role": "assistant", "content": null,
                "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}]}}],
            "usage": {"prompt_tokens": 10, "completion_tokens": 3, "prompt_tokens_details": {"cached_tokens": 4}},
        });
        let r = decode_response(up.to_string().as_bytes()).unwrap();
        assert_eq!(r.stop, StopReason::ToolUse);
        assert_eq!(
            r.usage,
            Usage {
                input: 10,
                cache_read: 4,
                cache_creation: 0,
                output: 3
            }
        );
        let back: Value = serde_json::from_slice(&encode_response(&r)).unwrap();
        assert_eq!(back["choices"][0]["finish_reason"], "tool_calls");
        assert_eq!(back["choices"][0]["message"]["tool_calls"][0]["id"], "c1");
        assert_eq!(back["usage"]["prompt_tokens_details"]["cached_tokens"], 4);
        assert_eq!(back["usage"]["total_tokens"], 13);
    }
}
