//! AWS Bedrock's Converse API, upstream only: hub requests encoded as a `ConverseRequest`
//! (the model is in the URI, not the body) and `ConverseResponse`s decoded into the hub.
//! No client speaks Converse, so there is no decoder of requests nor encoder of answers.
//! Field names from botocore's `bedrock-runtime/2023-09-30/service-2.json`
//! (docs/design/cloud-providers-plan.md 1.1).

use serde_json::{json, Map, Value};

use super::errors::{TranslateError, UpstreamShapeError};
use super::field::{invalid, push_turn, tool_call_input};
use super::hub::{Image, Output, Part, Request, Response, Role, StopReason, ToolChoice, Usage};

/// Encodes a hub request as a Converse body.
/// (The target's model is in the path; what it cannot take, the sampling rule dropped.)
pub(crate) fn encode_request(r: &Request) -> Result<Vec<u8>, TranslateError> {
    let mut messages: Vec<Value> = Vec::new();
    // Converse takes system text only at the top (and no empty text): mid-conversation
    // system turns join it, in order.
    let mut system: Vec<Value> = r
        .system
        .iter()
        .filter(|s| !s.is_empty())
        .map(|s| json!({"text": s}))
        .collect();
    for (i, m) in r.messages.iter().enumerate() {
        if m.role == Role::System {
            system.extend(
                m.texts()
                    .filter(|s| !s.is_empty())
                    .map(|s| json!({"text": s})),
            );
            continue;
        }
        let mut blocks = Vec::with_capacity(m.parts.len());
        for p in &m.parts {
            if matches!(p, Part::Text(t) if t.is_empty()) {
                continue;
            }
            blocks.push(encode_block(p, i)?);
        }
        if blocks.is_empty() {
            continue;
        }
        // Converse wants turns to alternate: consecutive turns of one role are merged.
        push_turn(&mut messages, m.role, blocks);
    }
    let mut o = Map::new();
    o.insert("messages".into(), Value::Array(messages));
    if !system.is_empty() {
        o.insert("system".into(), Value::Array(system));
    }
    let mut inference = Map::new();
    if let Some(n) = r.max_tokens {
        inference.insert("maxTokens".into(), json!(n));
    }
    if let Some(x) = &r.temperature {
        inference.insert("temperature".into(), Value::Number(x.clone()));
    }
    if let Some(x) = &r.top_p {
        inference.insert("topP".into(), Value::Number(x.clone()));
    }
    if !r.stop.is_empty() {
        inference.insert("stopSequences".into(), json!(r.stop));
    }
    if !inference.is_empty() {
        o.insert("inferenceConfig".into(), Value::Object(inference));
    }
    // Only Anthropic's models take it: the sampling rule dropped it for others (`sampling`).
    if let Some(k) = &r.top_k {
        o.insert(
            "additionalModelRequestFields".into(),
            json!({"top_k": Value::Number(k.clone())}),
        );
    }
    // Converse has no "none" choice: the tools are not sent at all then.
    if !r.tools.is_empty() && r.tool_choice != Some(ToolChoice::None) {
        let tools: Vec<Value> = r
            .tools
            .iter()
            .map(|t| {
                let mut spec = json!({"name": t.name, "inputSchema": {"json": t.parameters}});
                if let Some(d) = t.description.as_ref().filter(|d| !d.is_empty()) {
                    spec["description"] = json!(d);
                }
                // ToolSpecification's `strict` (structured output enforcement); `false`, its
                // default, goes unsaid.
                if t.strict.as_ref().is_some_and(|s| s.on) {
                    spec["strict"] = json!(true);
                }
                json!({"toolSpec": spec})
            })
            .collect();
        let mut config = json!({"tools": tools});
        match &r.tool_choice {
            Some(ToolChoice::Required) => config["toolChoice"] = json!({"any": {}}),
            Some(ToolChoice::Named(n)) => config["toolChoice"] = json!({"tool": {"name": n}}),
            Some(ToolChoice::Auto) => config["toolChoice"] = json!({"auto": {}}),
            None | Some(ToolChoice::None) => {}
        }
        o.insert("toolConfig".into(), config);
    }
    Ok(serde_json::to_vec(&Value::Object(o)).expect("a JSON value serializes"))
}

fn encode_block(p: &Part, i: usize) -> Result<Value, TranslateError> {
    Ok(match p {
        Part::Text(t) => json!({"text": t}),
        Part::Image(img) => json!({"image": image(img, i)?}),
        Part::ToolCall {
            id,
            name,
            arguments,
        } => {
            let input = tool_call_input(arguments, i, id)?;
            json!({"toolUse": {"toolUseId": id, "name": name, "input": input}})
        }
        Part::ToolResult {
            id,
            content,
            is_error,
        } => {
            let mut blocks = Vec::with_capacity(content.len());
            for c in content {
                match c {
                    Part::Text(t) => blocks.push(json!({"text": t})),
                    Part::Image(img) => blocks.push(json!({"image": image(img, i)?})),
                    _ => {}
                }
            }
            if blocks.is_empty() {
                // A result must say something; an empty one is an empty text.
                blocks.push(json!({"text": ""}));
            }
            let status = if *is_error { "error" } else { "success" };
            json!({"toolResult": {"toolUseId": id, "content": blocks, "status": status}})
        }
    })
}

/// The images Converse cannot take (a URL, a type it does not know), each by its message,
/// for the one 400 that names every refused field (`translate::encode_request`).
pub(crate) fn refused_images(r: &Request) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for (i, m) in r.messages.iter().enumerate() {
        let results = m.parts.iter().flat_map(|p| match p {
            Part::ToolResult { content, .. } => content.as_slice(),
            _ => &[],
        });
        for p in m.parts.iter().chain(results) {
            if let Part::Image(img) = p {
                if let Err(TranslateError::Invalid { field, why }) = image(img, i) {
                    out.push((field, why));
                }
            }
        }
    }
    out
}

/// A base64 image as Converse's `{format, source: {bytes}}`. Converse fetches no URLs (its
/// other source is S3), so a URL image is refused rather than sent broken.
fn image(img: &Image, i: usize) -> Result<Value, TranslateError> {
    match img {
        Image::Url(_) => Err(invalid(
            format!("messages[{i}] image"),
            "AWS Bedrock takes images as base64 data only, not URLs",
        )),
        Image::Base64 { media_type, data } => {
            let format = match media_type.as_str() {
                "image/png" => "png",
                "image/jpeg" | "image/jpg" => "jpeg",
                "image/gif" => "gif",
                "image/webp" => "webp",
                _ => {
                    return Err(invalid(
                        format!("messages[{i}] image"),
                        format!(
                            "AWS Bedrock takes png, jpeg, gif and webp images, not {media_type:?}"
                        ),
                    ))
                }
            };
            Ok(json!({"format": format, "source": {"bytes": data}}))
        }
    }
}

/// Converse's `stopReason` in hub terms. `malformed_*` are the model's own failures, read
/// as an end (the client gets what was produced, as Anthropic's `refusal`-less ends).
pub(crate) fn stop_from(reason: Option<&str>) -> StopReason {
    match reason {
        Some("max_tokens" | "model_context_window_exceeded") => StopReason::MaxTokens,
        Some("tool_use") => StopReason::ToolUse,
        Some("stop_sequence") => StopReason::StopSequence,
        Some("guardrail_intervened" | "content_filtered") => StopReason::ContentFilter,
        _ => StopReason::EndTurn,
    }
}

/// Converse's `usage` in hub terms. `inputTokens` is read as the uncached rest, as
/// Anthropic's (unverified on a real account: the plan's 1.1 flags it).
pub(crate) fn usage_from(u: &Value) -> Usage {
    let n = |k: &str| u.get(k).and_then(Value::as_u64).unwrap_or(0);
    let (cache_read, cache_creation) = (n("cacheReadInputTokens"), n("cacheWriteInputTokens"));
    Usage {
        input: n("inputTokens")
            .saturating_add(cache_read)
            .saturating_add(cache_creation),
        cache_read,
        cache_creation,
        output: n("outputTokens"),
    }
}

/// An id for an answer: Converse gives none, and clients expect one per answer.
pub(crate) fn answer_id() -> String {
    use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    format!("msg_bdrk_{nanos:08x}{:06x}", NEXT.fetch_add(1, Relaxed))
}

/// Decodes a `ConverseResponse`.
pub(crate) fn decode_response(body: &[u8]) -> Result<Response, UpstreamShapeError> {
    let v: Value = serde_json::from_slice(body)
        .map_err(|e| UpstreamShapeError(format!("not a Converse answer ({e})")))?;
    let content = v
        .pointer("/output/message/content")
        .and_then(Value::as_array)
        .ok_or_else(|| UpstreamShapeError("`output.message.content` is missing".into()))?;
    let missing = |k: &str| UpstreamShapeError(format!("`{k}` is missing or not a string"));
    let mut output = Vec::new();
    for b in content {
        if let Some(t) = b.get("text") {
            let t = t.as_str().ok_or_else(|| missing("text"))?;
            output.push(Output::Text(t.to_owned()));
        } else if let Some(u) = b.get("toolUse") {
            let s = |k: &str| {
                u.get(k)
                    .and_then(Value::as_str)
                    .map(str::to_owned)
                    .ok_or_else(|| missing(&format!("toolUse.{k}")))
            };
            output.push(Output::ToolCall {
                id: s("toolUseId")?,
                name: s("name")?,
                arguments: u
                    .get("input")
                    .map_or_else(|| "{}".to_owned(), Value::to_string),
            });
        }
        // Reasoning and citations are never asked for on a translated request.
    }
    Ok(Response {
        id: answer_id(),
        model: String::new(),
        output,
        stop: stop_from(v.get("stopReason").and_then(Value::as_str)),
        usage: v.get("usage").map(usage_from).unwrap_or_default(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dialect::{Dialect, Provider, Upstream};

    fn target(model: &str) -> crate::translate::TargetInfo<'_> {
        crate::translate::TargetInfo::plain(Provider::Bedrock, model, 4096)
    }

    fn encode(client: Dialect, body: Value, model: &str) -> Result<Value, TranslateError> {
        let hub = crate::translate::decode_lenient(client, Upstream::Converse, &body)?;
        let e = crate::translate::encode_request(Upstream::Converse, &hub, target(model))?;
        Ok(serde_json::from_slice(&e.body).unwrap())
    }

    /// A tool's `strict: true` is Converse's `toolSpec.strict` (it was dropped); `false`,
    /// the default, goes unsaid.
    #[test]
    fn tool_strict_reaches_the_tool_spec() {
        for (on, want) in [(true, json!(true)), (false, Value::Null)] {
            let body = json!({
                "model": "m", "max_tokens": 5, "messages": [{"role": "user", "content": "hi"}],
                "tools": [{"name": "f", "input_schema": {"type": "object"}, "strict": on}],
            });
            let sent = encode(
                Dialect::Messages,
                body,
                "us.anthropic.claude-sonnet-4-5-v1:0",
            )
            .unwrap();
            assert_eq!(
                sent["toolConfig"]["tools"][0]["toolSpec"]["strict"], want,
                "{sent}"
            );
        }
    }

    /// Golden: a chat request with system, tools, a tool round trip and sampling.
    #[test]
    fn chat_request_golden() {
        let body = json!({
            "model": "m",
            "messages": [
                {"role": "system", "content": "be brief"},
                {"role": "user", "content": "weather in Paris?"},
                {"role": "assistant", "content": null, "tool_calls": [
                    {"id": "call_1", "type": "function", "function": {"name": "get_weather", "arguments": "{\"city\":\"Paris\"}"}}
                ]},
                {"role": "tool", "tool_call_id": "call_1", "content": "18C"},
                {"role": "user", "content": [{"type": "text", "text": "and?"},
                    {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}}]}
            ],
            "tools": [{"type": "function", "function": {"name": "get_weather", "description": "Weather",
                "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}}],
            "tool_choice": "required",
            "max_tokens": 100, "temperature": 0.5, "top_p": 0.9, "stop": ["END"]
        });
        let want = json!({
            "messages": [
                {"role": "user", "content": [{"text": "weather in Paris?"}]},
                {"role": "assistant", "content": [{"toolUse": {"toolUseId": "call_1", "name": "get_weather", "input": {"city": "Paris"}}}]},
                {"role": "user", "content": [
                    {"toolResult": {"toolUseId": "call_1", "content": [{"text": "18C"}], "status": "success"}},
                    {"text": "and?"},
                    {"image": {"format": "png", "source": {"bytes": "AAAA"}}}
                ]}
            ],
            "system": [{"text": "be brief"}],
            "inferenceConfig": {"maxTokens": 100, "temperature": 0.5, "topP": 0.9, "stopSequences": ["END"]},
            "toolConfig": {
                "tools": [{"toolSpec": {"name": "get_weather", "description": "Weather",
                    "inputSchema": {"json": {"type": "object", "properties": {"city": {"type": "string"}}}}}}],
                "toolChoice": {"any": {}}
            }
        });
        assert_eq!(encode(Dialect::Chat, body, "m").unwrap(), want);
    }

    #[test]
    fn messages_request_and_refusals() {
        let body = json!({"model": "m", "max_tokens": 10, "system": "sys",
            "messages": [{"role": "user", "content": "hi"}],
            "tools": [{"name": "t", "input_schema": {"type": "object"}}],
            "tool_choice": {"type": "tool", "name": "t"}});
        let v = encode(Dialect::Messages, body, "anthropic.claude").unwrap();
        assert_eq!(
            v["toolConfig"]["toolChoice"],
            json!({"tool": {"name": "t"}})
        );
        assert_eq!(v["system"], json!([{"text": "sys"}]));
        assert!(v.get("model").is_none());
        // No "none" choice in Converse: the tools are left out.
        let body = json!({"model": "m", "messages": [{"role": "user", "content": "hi"}],
            "tools": [{"type": "function", "function": {"name": "t", "parameters": {}}}], "tool_choice": "none"});
        assert!(encode(Dialect::Chat, body, "m")
            .unwrap()
            .get("toolConfig")
            .is_none());
        // A URL image cannot be sent; the one 400 names it with the other refusals.
        let body = json!({"model": "m", "messages": [{"role": "user", "content": [
            {"type": "image_url", "image_url": {"url": "https://x/y.png"}},
            {"type": "image_url", "image_url": {"url": "data:image/bmp;base64,AAAA"}}]}],
            "tools": [{"type": "function", "function": {"name": "t", "parameters": {}}}],
            "parallel_tool_calls": false});
        let e = encode(Dialect::Chat, body, "m").unwrap_err().to_string();
        assert!(
            e.contains("base64 data only")
                && e.contains("image/bmp")
                && e.contains("parallel_tool_calls"),
            "{e}"
        );
        // parallel_tool_calls: false has no Converse field.
        let body = json!({"model": "m", "messages": [{"role": "user", "content": "hi"}],
            "tools": [{"type": "function", "function": {"name": "t", "parameters": {}}}],
            "parallel_tool_calls": false});
        let e = encode(Dialect::Chat, body, "m").unwrap_err();
        assert!(e.to_string().contains("parallel_tool_calls"), "{e}");
    }

    #[test]
    fn gemini_top_k_only_for_anthropic_models() {
        let body = json!({"contents": [{"role": "user", "parts": [{"text": "hi"}]}],
            "generationConfig": {"topK": 40, "maxOutputTokens": 5}});
        let v = encode(Dialect::Gemini, body.clone(), "us.anthropic.claude-x").unwrap();
        assert_eq!(v["additionalModelRequestFields"], json!({"top_k": 40}));
        let v = encode(Dialect::Gemini, body, "amazon.nova-pro-v1:0").unwrap();
        assert!(v.get("additionalModelRequestFields").is_none());
        assert_eq!(v["inferenceConfig"]["maxTokens"], 5);
    }

    /// Golden: a Converse answer with text and a tool call, in every client dialect.
    #[test]
    fn response_golden() {
        let body = json!({
            "output": {"message": {"role": "assistant", "content": [
                {"text": "Let me check."},
                {"toolUse": {"toolUseId": "tooluse_1", "name": "get_weather", "input": {"city": "Paris"}}}
            ]}},
            "stopReason": "tool_use",
            "usage": {"inputTokens": 10, "outputTokens": 5, "totalTokens": 15, "cacheReadInputTokens": 2},
            "metrics": {"latencyMs": 100}
        })
        .to_string();
        let r = decode_response(body.as_bytes()).unwrap();
        assert_eq!(r.stop, StopReason::ToolUse);
        assert_eq!(
            r.usage,
            Usage {
                input: 12,
                cache_read: 2,
                cache_creation: 0,
                output: 5
            }
        );
        assert_eq!(
            r.output[1],
            Output::ToolCall {
                id: "tooluse_1".into(),
                name: "get_weather".into(),
                arguments: r#"{"city":"Paris"}"#.into()
            }
        );
        let view = Default::default();
        let (chat, _) = crate::translate::translate_response(
            Dialect::Chat,
            Upstream::Converse,
            &view,
            body.as_bytes(),
        )
        .unwrap();
        let chat: Value = serde_json::from_slice(&chat).unwrap();
        assert_eq!(chat["choices"][0]["finish_reason"], "tool_calls");
        assert_eq!(chat["usage"]["prompt_tokens"], 12);
        let (m, _) = crate::translate::translate_response(
            Dialect::Messages,
            Upstream::Converse,
            &view,
            body.as_bytes(),
        )
        .unwrap();
        let m: Value = serde_json::from_slice(&m).unwrap();
        assert_eq!(m["stop_reason"], "tool_use");
        assert_eq!(m["usage"]["input_tokens"], 10);
        assert_eq!(m["content"][1]["input"], json!({"city": "Paris"}));
        for (reason, want) in [
            ("end_turn", StopReason::EndTurn),
            ("max_tokens", StopReason::MaxTokens),
            ("stop_sequence", StopReason::StopSequence),
            ("guardrail_intervened", StopReason::ContentFilter),
            ("content_filtered", StopReason::ContentFilter),
            ("model_context_window_exceeded", StopReason::MaxTokens),
        ] {
            assert_eq!(stop_from(Some(reason)), want);
        }
        assert!(decode_response(b"{}").is_err());
        assert!(decode_response(b"not json").is_err());
    }
}
