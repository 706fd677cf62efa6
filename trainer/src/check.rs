//! Checks that one gateway response is complete and well formed for its dialect:
//! a JSON body with usage, or an SSE stream whose event sequence is complete and carries usage.
//! A Gemini stream is `data:` events only, each a whole `GenerateContentResponse`, the last
//! one with `finishReason` and the final `usageMetadata`, and no `[DONE]`.
//!
//! Bytes are parsed only after the whole body arrived, so an event split across reads or in
//! the middle of a UTF-8 character is reassembled before it is judged.

use serde_json::Value;

use crate::dialect::Dialect;

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CheckError {
    #[error("body is not valid JSON: {0}")]
    Json(String),
    #[error("SSE event {index} is not valid UTF-8")]
    Utf8 { index: usize },
    #[error("SSE event {index}: data is not valid JSON: {message}")]
    EventJson { index: usize, message: String },
    #[error("SSE stream does not end with a blank line (truncated)")]
    Truncated,
    #[error("{0}")]
    Shape(String),
}

/// Token usage as a dialect reports it (input/prompt, output/completion).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Usage {
    pub input: u64,
    pub output: u64,
}

/// One parsed server-sent event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Event {
    pub event: Option<String>,
    pub data: String,
}

fn shape(msg: impl Into<String>) -> CheckError {
    CheckError::Shape(msg.into())
}

/// Checks a non-streaming response body.
pub(crate) fn check_json(dialect: Dialect, body: &[u8]) -> Result<Usage, CheckError> {
    let v: Value = serde_json::from_slice(body).map_err(|e| CheckError::Json(e.to_string()))?;
    match dialect {
        Dialect::Chat => {
            expect_str(&v, "object", "chat.completion")?;
            let choices = v["choices"]
                .as_array()
                .filter(|c| !c.is_empty())
                .ok_or_else(|| shape("chat completion without choices"))?;
            if !choices[0]["message"].is_object() {
                return Err(shape("chat completion choice without message"));
            }
            usage(&v["usage"], "prompt_tokens", "completion_tokens", true)
        }
        Dialect::Messages => {
            expect_str(&v, "type", "message")?;
            if !v["content"].is_array() {
                return Err(shape("message without content array"));
            }
            if !v["stop_reason"].is_string() {
                return Err(shape("message without stop_reason"));
            }
            usage(&v["usage"], "input_tokens", "output_tokens", false)
        }
        Dialect::Responses => {
            expect_str(&v, "object", "response")?;
            expect_str(&v, "status", "completed")?;
            if v["output"].as_array().is_none_or(|o| o.is_empty()) {
                return Err(shape("response without output"));
            }
            usage(&v["usage"], "input_tokens", "output_tokens", true)
        }
        Dialect::Gemini => {
            let finished = gemini_chunk(&v, "generateContent answer")?;
            if !finished.parts {
                return Err(shape("generateContent answer without parts"));
            }
            if !finished.finish {
                return Err(shape("generateContent answer without finishReason"));
            }
            gemini_usage(&v["usageMetadata"])
        }
    }
}

/// Checks a streaming response body: a complete event sequence for the dialect, with usage.
pub(crate) fn check_sse(dialect: Dialect, body: &[u8]) -> Result<Usage, CheckError> {
    let events = parse_sse(body)?;
    match dialect {
        Dialect::Chat => check_chat_stream(&events),
        Dialect::Messages => check_messages_stream(&events),
        Dialect::Responses => check_responses_stream(&events),
        Dialect::Gemini => check_gemini_stream(&events),
    }
}

/// Splits a complete SSE body into events. Comment lines and `id:`/`retry:` are ignored;
/// multi-line data is joined with `\n` as the SSE spec says.
pub(crate) fn parse_sse(body: &[u8]) -> Result<Vec<Event>, CheckError> {
    let mut events = Vec::new();
    let mut rest = body;
    let mut index = 0;
    while !rest.is_empty() {
        let (block, after) = match find_blank_line(rest) {
            Some((end, next)) => (&rest[..end], &rest[next..]),
            None => {
                if rest.iter().all(|b| b.is_ascii_whitespace()) {
                    break;
                }
                return Err(CheckError::Truncated);
            }
        };
        rest = after;
        let text = std::str::from_utf8(block).map_err(|_| CheckError::Utf8 { index })?;
        let mut event = None;
        let mut data: Option<String> = None;
        for line in text.lines() {
            let line = line.strip_suffix('\r').unwrap_or(line);
            let (field, value) = match line.split_once(':') {
                Some((f, v)) => (f, v.strip_prefix(' ').unwrap_or(v)),
                None => (line, ""),
            };
            match field {
                "event" => event = Some(value.to_owned()),
                "data" => match &mut data {
                    Some(d) => {
                        d.push('\n');
                        d.push_str(value);
                    }
                    None => data = Some(value.to_owned()),
                },
                _ => {}
            }
        }
        if event.is_none() && data.is_none() {
            continue;
        }
        events.push(Event {
            event,
            data: data.unwrap_or_default(),
        });
        index += 1;
    }
    Ok(events)
}

/// The end of the first event block and the start of the next, for `\n\n` or `\r\n\r\n`.
fn find_blank_line(b: &[u8]) -> Option<(usize, usize)> {
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'\n' {
            if b.get(i + 1) == Some(&b'\n') {
                return Some((i, i + 2));
            }
            if b.get(i + 1) == Some(&b'\r') && b.get(i + 2) == Some(&b'\n') {
                return Some((i, i + 3));
            }
        }
        i += 1;
    }
    None
}

fn event_json(index: usize, e: &Event) -> Result<Value, CheckError> {
    serde_json::from_str(&e.data).map_err(|err| CheckError::EventJson {
        index,
        message: err.to_string(),
    })
}

fn check_chat_stream(events: &[Event]) -> Result<Usage, CheckError> {
    let (last, chunks) = events
        .split_last()
        .ok_or_else(|| shape("empty chat stream"))?;
    if last.data != "[DONE]" {
        return Err(shape("chat stream does not end with data: [DONE]"));
    }
    let mut finished = false;
    let mut found = None;
    for (i, e) in chunks.iter().enumerate() {
        if e.data == "[DONE]" {
            return Err(shape(format!(
                "chat stream: [DONE] at event {i} is not last"
            )));
        }
        let v = event_json(i, e)?;
        if v.get("error").is_some() {
            return Err(shape(format!("chat stream: error chunk at event {i}")));
        }
        expect_str(&v, "object", "chat.completion.chunk")?;
        let choices = v["choices"]
            .as_array()
            .ok_or_else(|| shape(format!("chat chunk {i} without choices array")))?;
        if choices.iter().any(|c| c["finish_reason"].is_string()) {
            finished = true;
        }
        if !v["usage"].is_null() && v.get("usage").is_some() {
            if !choices.is_empty() {
                return Err(shape("chat usage chunk must have \"choices\": []"));
            }
            if found.is_some() {
                return Err(shape("chat stream has two usage chunks"));
            }
            found = Some(usage(
                &v["usage"],
                "prompt_tokens",
                "completion_tokens",
                true,
            )?);
        }
    }
    if !finished {
        return Err(shape("chat stream: no chunk carries finish_reason"));
    }
    found.ok_or_else(|| shape("chat stream: no usage chunk"))
}

fn check_messages_stream(events: &[Event]) -> Result<Usage, CheckError> {
    let mut input = None;
    let mut output = None;
    let mut open_block: Option<u64> = None;
    let mut blocks = 0;
    let mut stage = 0; // 0: before message_start, 1: in message, 2: after message_delta, 3: stopped
    for (i, e) in events.iter().enumerate() {
        let v = event_json(i, e)?;
        let ty = v["type"]
            .as_str()
            .ok_or_else(|| shape(format!("messages event {i} without type")))?;
        if e.event.as_deref() != Some(ty) {
            return Err(shape(format!(
                "messages event {i}: event name {:?} differs from data type {ty:?}",
                e.event
            )));
        }
        if stage == 3 {
            return Err(shape(format!(
                "messages event {i} ({ty}) after message_stop"
            )));
        }
        match ty {
            "ping" => {}
            "error" => return Err(shape(format!("messages stream: error event at {i}"))),
            "message_start" if stage == 0 => {
                input = Some(u(&v["message"]["usage"], "input_tokens")?);
                stage = 1;
            }
            "content_block_start" if stage == 1 && open_block.is_none() => {
                open_block = Some(
                    v["index"]
                        .as_u64()
                        .ok_or_else(|| shape("block without index"))?,
                );
            }
            "content_block_delta" if stage == 1 && open_block.is_some() => {
                if v["index"].as_u64() != open_block {
                    return Err(shape(format!(
                        "messages event {i}: delta for a block not open"
                    )));
                }
            }
            "content_block_stop" if stage == 1 && open_block.is_some() => {
                if v["index"].as_u64() != open_block {
                    return Err(shape(format!(
                        "messages event {i}: stop for a block not open"
                    )));
                }
                open_block = None;
                blocks += 1;
            }
            "message_delta" if stage == 1 && open_block.is_none() => {
                if !v["delta"]["stop_reason"].is_string() {
                    return Err(shape("message_delta without stop_reason"));
                }
                output = Some(u(&v["usage"], "output_tokens")?);
                stage = 2;
            }
            "message_stop" if stage == 2 => stage = 3,
            other => return Err(shape(format!("messages event {i}: {other:?} out of order"))),
        }
    }
    if stage != 3 {
        return Err(shape("messages stream ends before message_stop"));
    }
    if blocks == 0 {
        return Err(shape("messages stream without content blocks"));
    }
    match (input, output) {
        (Some(input), Some(output)) => Ok(Usage { input, output }),
        _ => Err(shape("messages stream without usage")),
    }
}

fn check_responses_stream(events: &[Event]) -> Result<Usage, CheckError> {
    const ORDER_FIRST: [&str; 2] = ["response.created", "response.in_progress"];
    let mut last_seq: Option<u64> = None;
    let mut items_open = 0i64;
    let mut items_done = 0;
    let mut parts_open = 0i64;
    let mut parts_done = 0;
    let mut text_done = false;
    let mut completed = None;
    for (i, e) in events.iter().enumerate() {
        let v = event_json(i, e)?;
        let ty = v["type"]
            .as_str()
            .ok_or_else(|| shape(format!("responses event {i} without type")))?;
        if e.event.as_deref() != Some(ty) {
            return Err(shape(format!(
                "responses event {i}: event name {:?} differs from data type {ty:?}",
                e.event
            )));
        }
        if completed.is_some() {
            return Err(shape(format!(
                "responses event {i} ({ty}) after response.completed"
            )));
        }
        if let Some(seq) = v["sequence_number"].as_u64() {
            if last_seq.is_some_and(|l| seq <= l) {
                return Err(shape(format!(
                    "responses event {i}: sequence_number not increasing"
                )));
            }
            last_seq = Some(seq);
        }
        if i < ORDER_FIRST.len() && ty != ORDER_FIRST[i] {
            return Err(shape(format!(
                "responses event {i} is {ty:?}, expected {:?}",
                ORDER_FIRST[i]
            )));
        }
        match ty {
            "response.output_item.added" => items_open += 1,
            "response.output_item.done" => {
                items_open -= 1;
                items_done += 1;
                if items_open < 0 {
                    return Err(shape("responses: output_item.done without added"));
                }
            }
            "response.content_part.added" => parts_open += 1,
            "response.content_part.done" => {
                parts_open -= 1;
                parts_done += 1;
                if parts_open < 0 {
                    return Err(shape("responses: content_part.done without added"));
                }
            }
            "response.output_text.done" => text_done = true,
            "response.completed" => {
                expect_str(&v["response"], "status", "completed")?;
                completed = Some(usage(
                    &v["response"]["usage"],
                    "input_tokens",
                    "output_tokens",
                    true,
                )?);
            }
            "response.failed" | "response.incomplete" | "error" => {
                return Err(shape(format!("responses stream: {ty} at event {i}")))
            }
            _ => {}
        }
    }
    let usage =
        completed.ok_or_else(|| shape("responses stream ends before response.completed"))?;
    if items_open != 0 || items_done == 0 {
        return Err(shape(
            "responses stream: output items not all added and done",
        ));
    }
    if parts_open != 0 || parts_done == 0 {
        return Err(shape(
            "responses stream: content parts not all added and done",
        ));
    }
    if !text_done {
        return Err(shape("responses stream without response.output_text.done"));
    }
    Ok(usage)
}

/// What one Gemini `GenerateContentResponse` carries.
struct GeminiChunk {
    /// Some content part (text or a function call).
    parts: bool,
    /// `finishReason` on its candidate.
    finish: bool,
}

/// Checks one Gemini answer or stream chunk (`what` names it): no `error`, one candidate
/// (index 0) whose content is the model's, every part a text or a function call with a name
/// and object arguments.
fn gemini_chunk(v: &Value, what: &str) -> Result<GeminiChunk, CheckError> {
    if v.get("error").is_some() {
        return Err(shape(format!("{what}: an error")));
    }
    let Some(candidates) = v.get("candidates") else {
        // A usage-only chunk: allowed in a stream, never the last.
        if v["usageMetadata"].is_object() {
            return Ok(GeminiChunk {
                parts: false,
                finish: false,
            });
        }
        return Err(shape(format!("{what} without candidates")));
    };
    let candidate = match candidates.as_array().map(Vec::as_slice) {
        Some([candidate]) => candidate,
        _ => return Err(shape(format!("{what}: candidates is not one candidate"))),
    };
    if candidate
        .get("index")
        .is_some_and(|i| i.as_u64() != Some(0))
    {
        return Err(shape(format!("{what}: candidate index is not 0")));
    }
    let finish = match candidate.get("finishReason") {
        None | Some(Value::Null) => false,
        Some(Value::String(_)) => true,
        Some(_) => return Err(shape(format!("{what}: finishReason is not a string"))),
    };
    let mut parts = false;
    if let Some(content) = candidate.get("content") {
        if content.get("role").is_some_and(|r| r != "model") {
            return Err(shape(format!("{what}: content role is not \"model\"")));
        }
        let list = content["parts"]
            .as_array()
            .ok_or_else(|| shape(format!("{what}: content without parts array")))?;
        for part in list {
            let text = part.get("text");
            let call = part.get("functionCall");
            match (text, call) {
                (Some(Value::String(_)), None) => {}
                (None, Some(call)) => {
                    if call["name"].as_str().is_none_or(str::is_empty) {
                        return Err(shape(format!("{what}: functionCall without name")));
                    }
                    if call.get("args").is_some_and(|a| !a.is_object()) {
                        return Err(shape(format!("{what}: functionCall args not an object")));
                    }
                }
                _ => {
                    return Err(shape(format!(
                        "{what}: part is neither text nor functionCall"
                    )))
                }
            }
            if part.get("thoughtSignature").is_some_and(|s| !s.is_string()) {
                return Err(shape(format!("{what}: thoughtSignature is not a string")));
            }
            parts = true;
        }
    } else if !finish {
        return Err(shape(format!("{what}: candidate without content")));
    }
    Ok(GeminiChunk { parts, finish })
}

/// The final `usageMetadata`: prompt and candidate counts, the total their sum (with the
/// thought and tool-use prompt counts, when present).
fn gemini_usage(v: &Value) -> Result<Usage, CheckError> {
    if !v.is_object() {
        return Err(shape("no usageMetadata object"));
    }
    let optional = |key: &str| match v.get(key) {
        None => Ok(0),
        Some(_) => u(v, key),
    };
    let input = u(v, "promptTokenCount")?;
    let candidates = u(v, "candidatesTokenCount")?;
    let thoughts = optional("thoughtsTokenCount")?;
    let tool_prompt = optional("toolUsePromptTokenCount")?;
    if optional("cachedContentTokenCount")? > input {
        return Err(shape("cachedContentTokenCount exceeds promptTokenCount"));
    }
    if u(v, "totalTokenCount")? != input + candidates + thoughts + tool_prompt {
        return Err(shape(
            "usageMetadata totalTokenCount is not the sum of its counts",
        ));
    }
    Ok(Usage {
        input,
        output: candidates + thoughts,
    })
}

fn check_gemini_stream(events: &[Event]) -> Result<Usage, CheckError> {
    if events.is_empty() {
        return Err(shape("empty gemini stream"));
    }
    let last_index = events.len() - 1;
    let mut parts = false;
    let mut found = None;
    for (i, e) in events.iter().enumerate() {
        if let Some(name) = &e.event {
            return Err(shape(format!(
                "gemini stream event {i} is named {name:?} (Gemini sends data only)"
            )));
        }
        if e.data == "[DONE]" {
            return Err(shape(format!(
                "gemini stream: [DONE] at event {i} (Gemini sends none)"
            )));
        }
        let v = event_json(i, e)?;
        let chunk = gemini_chunk(&v, &format!("gemini stream event {i}"))?;
        parts |= chunk.parts;
        if chunk.finish != (i == last_index) {
            return Err(shape(if chunk.finish {
                format!("gemini stream: finishReason at event {i}, before the last")
            } else {
                "gemini stream: the last event carries no finishReason".to_owned()
            }));
        }
        if chunk.finish {
            found = Some(gemini_usage(&v["usageMetadata"])?);
        }
    }
    if !parts {
        return Err(shape("gemini stream without content parts"));
    }
    found.ok_or_else(|| shape("gemini stream without usage"))
}

fn expect_str(v: &Value, key: &str, want: &str) -> Result<(), CheckError> {
    match v[key].as_str() {
        Some(s) if s == want => Ok(()),
        other => Err(shape(format!("{key:?} is {other:?}, expected {want:?}"))),
    }
}

fn u(v: &Value, key: &str) -> Result<u64, CheckError> {
    v[key]
        .as_u64()
        .ok_or_else(|| shape(format!("usage without integer {key:?}")))
}

fn usage(v: &Value, input: &str, output: &str, total: bool) -> Result<Usage, CheckError> {
    if !v.is_object() {
        return Err(shape("no usage object"));
    }
    let usage = Usage {
        input: u(v, input)?,
        output: u(v, output)?,
    };
    if total && u(v, "total_tokens")? != usage.input + usage.output {
        return Err(shape("usage total_tokens is not input + output"));
    }
    Ok(usage)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sse(events: &[(Option<&str>, &str)]) -> Vec<u8> {
        let mut out = String::new();
        for (event, data) in events {
            if let Some(e) = event {
                out.push_str(&format!("event: {e}\n"));
            }
            out.push_str(&format!("data: {data}\n\n"));
        }
        out.into_bytes()
    }

    fn chat_events() -> Events {
        vec![
            (
                None,
                r#"{"object":"chat.completion.chunk","choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}],"usage":null}"#,
            ),
            (
                None,
                r#"{"object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":"Hi"},"finish_reason":null}],"usage":null}"#,
            ),
            (
                None,
                r#"{"object":"chat.completion.chunk","choices":[{"index":0,"delta":{},"finish_reason":"stop"}],"usage":null}"#,
            ),
            (
                None,
                r#"{"object":"chat.completion.chunk","choices":[],"usage":{"prompt_tokens":5,"completion_tokens":2,"total_tokens":7}}"#,
            ),
            (None, "[DONE]"),
        ]
    }

    fn messages_events() -> Events {
        vec![
            (
                Some("message_start"),
                r#"{"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","content":[],"usage":{"input_tokens":5,"output_tokens":1}}}"#,
            ),
            (
                Some("content_block_start"),
                r#"{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}"#,
            ),
            (Some("ping"), r#"{"type":"ping"}"#),
            (
                Some("content_block_delta"),
                r#"{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hi"}}"#,
            ),
            (
                Some("content_block_stop"),
                r#"{"type":"content_block_stop","index":0}"#,
            ),
            (
                Some("message_delta"),
                r#"{"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{"output_tokens":2}}"#,
            ),
            (Some("message_stop"), r#"{"type":"message_stop"}"#),
        ]
    }

    fn responses_events() -> Events {
        vec![
            (
                Some("response.created"),
                r#"{"type":"response.created","sequence_number":0,"response":{"status":"in_progress"}}"#,
            ),
            (
                Some("response.in_progress"),
                r#"{"type":"response.in_progress","sequence_number":1,"response":{"status":"in_progress"}}"#,
            ),
            (
                Some("response.output_item.added"),
                r#"{"type":"response.output_item.added","sequence_number":2,"output_index":0,"item":{"type":"message"}}"#,
            ),
            (
                Some("response.content_part.added"),
                r#"{"type":"response.content_part.added","sequence_number":3}"#,
            ),
            (
                Some("response.output_text.delta"),
                r#"{"type":"response.output_text.delta","sequence_number":4,"item_id":"m","output_index":0,"content_index":0,"delta":"Hi"}"#,
            ),
            (
                Some("response.output_text.done"),
                r#"{"type":"response.output_text.done","sequence_number":5,"text":"Hi"}"#,
            ),
            (
                Some("response.content_part.done"),
                r#"{"type":"response.content_part.done","sequence_number":6}"#,
            ),
            (
                Some("response.output_item.done"),
                r#"{"type":"response.output_item.done","sequence_number":7}"#,
            ),
            (
                Some("response.completed"),
                r#"{"type":"response.completed","sequence_number":8,"response":{"status":"completed","usage":{"input_tokens":5,"output_tokens":2,"total_tokens":7}}}"#,
            ),
        ]
    }

    fn gemini_events() -> Events {
        vec![
            (
                None,
                r#"{"candidates":[{"content":{"parts":[{"text":"H"}],"role":"model"},"index":0}],"usageMetadata":{"promptTokenCount":5,"totalTokenCount":5},"modelVersion":"g","responseId":"r"}"#,
            ),
            (
                None,
                r#"{"candidates":[{"content":{"parts":[{"text":"i"}],"role":"model"},"finishReason":"STOP","index":0}],"usageMetadata":{"promptTokenCount":5,"candidatesTokenCount":2,"totalTokenCount":7},"modelVersion":"g","responseId":"r"}"#,
            ),
        ]
    }

    type Events = Vec<(Option<&'static str>, &'static str)>;

    fn all() -> [(Dialect, Events); 4] {
        [
            (Dialect::Chat, chat_events()),
            (Dialect::Messages, messages_events()),
            (Dialect::Responses, responses_events()),
            (Dialect::Gemini, gemini_events()),
        ]
    }

    #[test]
    fn complete_streams_pass_with_usage() {
        for (d, ev) in all() {
            let u = check_sse(d, &sse(&ev)).unwrap_or_else(|e| panic!("{d}: {e}"));
            assert_eq!(
                u,
                Usage {
                    input: 5,
                    output: 2
                },
                "{d}"
            );
        }
    }

    #[test]
    fn crlf_and_multiline_data_parse() {
        let body = b"event: x\r\ndata: {\"a\":\r\ndata: 1}\r\n\r\n: comment\n\n";
        let ev = parse_sse(body).unwrap();
        assert_eq!(ev.len(), 1);
        assert_eq!(ev[0].event.as_deref(), Some("x"));
        assert_eq!(ev[0].data, "{\"a\":\n1}");
    }

    #[test]
    fn any_missing_required_event_fails() {
        for (d, ev) in all() {
            for skip in 0..ev.len() {
                // Optional: pings, the chat role and content chunks, text deltas (a text
                // may be empty).
                let optional = ev[skip].0 == Some("ping")
                    || ev[skip].0 == Some("content_block_delta")
                    || ev[skip].0 == Some("response.output_text.delta")
                    || (d == Dialect::Chat && skip < 2)
                    || (d == Dialect::Gemini && skip + 1 < ev.len());
                if optional {
                    assert!(check_sse(
                        d,
                        &sse(&{
                            let mut cut = ev.clone();
                            cut.remove(skip);
                            cut
                        })
                    )
                    .is_ok());
                    continue;
                }
                let mut cut = ev.clone();
                cut.remove(skip);
                assert!(
                    check_sse(d, &sse(&cut)).is_err(),
                    "{d}: passed without event {skip}"
                );
            }
        }
    }

    #[test]
    fn truncated_stream_fails() {
        for (d, ev) in all() {
            let full = sse(&ev);
            let cut = &full[..full.len() - 3];
            assert!(check_sse(d, cut).is_err(), "{d}");
        }
    }

    #[test]
    fn chat_usage_chunk_must_have_empty_choices() {
        let mut ev = chat_events();
        ev[3].1 = r#"{"object":"chat.completion.chunk","choices":[{"index":0,"delta":{},"finish_reason":null}],"usage":{"prompt_tokens":5,"completion_tokens":2,"total_tokens":7}}"#;
        let e = check_sse(Dialect::Chat, &sse(&ev)).unwrap_err().to_string();
        assert!(e.contains("choices"), "{e}");
    }

    #[test]
    fn error_events_fail() {
        let mut ev = messages_events();
        ev.insert(
            3,
            (
                Some("error"),
                r#"{"type":"error","error":{"type":"overloaded_error","message":"x"}}"#,
            ),
        );
        assert!(check_sse(Dialect::Messages, &sse(&ev)).is_err());
        let mut ev = responses_events();
        ev.push((Some("error"), r#"{"type":"error","sequence_number":9}"#));
        assert!(check_sse(Dialect::Responses, &sse(&ev)).is_err());
    }

    #[test]
    fn responses_sequence_must_increase() {
        let mut ev = responses_events();
        ev[5].1 = r#"{"type":"response.output_text.done","sequence_number":2,"text":"Hi"}"#;
        assert!(check_sse(Dialect::Responses, &sse(&ev)).is_err());
    }

    /// `gemini_events` with event `i` replaced by `data`.
    fn gemini_with(i: usize, data: &str) -> Vec<u8> {
        let mut ev: Vec<(Option<&str>, &str)> = gemini_events();
        ev[i].1 = data;
        sse(&ev)
    }

    #[test]
    fn gemini_streams_are_checked_strictly() {
        // Google frames with CRLF.
        let crlf = String::from_utf8(sse(&gemini_events()))
            .unwrap()
            .replace('\n', "\r\n");
        assert!(check_sse(Dialect::Gemini, crlf.as_bytes()).is_ok());
        // A function call, whole, in the one chunk that ends the stream.
        let call = sse(&[(
            None,
            r#"{"candidates":[{"content":{"parts":[{"functionCall":{"name":"f","args":{"a":1}},"thoughtSignature":"c2ln"}],"role":"model"},"finishReason":"STOP","index":0}],"usageMetadata":{"promptTokenCount":5,"candidatesTokenCount":2,"thoughtsTokenCount":3,"totalTokenCount":10}}"#,
        )]);
        assert_eq!(
            check_sse(Dialect::Gemini, &call).unwrap(),
            Usage {
                input: 5,
                output: 5
            }
        );
        let last = gemini_events()[1].1;
        let bad: [(&str, Vec<u8>); 10] = [
            ("[DONE]", {
                let mut ev = gemini_events();
                ev.push((None, "[DONE]"));
                sse(&ev)
            }),
            ("named", {
                let mut ev = gemini_events();
                ev[0].0 = Some("message");
                sse(&ev)
            }),
            ("early finish", gemini_with(0, last)),
            (
                "error",
                gemini_with(
                    0,
                    r#"{"error":{"code":500,"message":"x","status":"INTERNAL"}}"#,
                ),
            ),
            ("total", gemini_with(1, &last.replace(":7}", ":8}"))),
            (
                "no candidates count",
                gemini_with(1, &last.replace(r#""candidatesTokenCount":2,"#, "")),
            ),
            (
                "role",
                gemini_with(
                    0,
                    r#"{"candidates":[{"content":{"parts":[{"text":"H"}],"role":"user"},"index":0}]}"#,
                ),
            ),
            (
                "nameless call",
                gemini_with(
                    0,
                    r#"{"candidates":[{"content":{"parts":[{"functionCall":{"args":{}}}],"role":"model"},"index":0}]}"#,
                ),
            ),
            (
                "unknown part",
                gemini_with(
                    0,
                    r#"{"candidates":[{"content":{"parts":[{"executableCode":{}}],"role":"model"},"index":0}]}"#,
                ),
            ),
            (
                "two candidates",
                gemini_with(
                    0,
                    r#"{"candidates":[{"content":{"parts":[{"text":"a"}]}},{"content":{"parts":[{"text":"b"}]}}]}"#,
                ),
            ),
        ];
        for (what, body) in bad {
            assert!(check_sse(Dialect::Gemini, &body).is_err(), "{what}");
        }
        // A stream that only finishes carries no content.
        let empty = sse(&[(
            None,
            r#"{"candidates":[{"finishReason":"STOP","index":0}],"usageMetadata":{"promptTokenCount":5,"candidatesTokenCount":0,"totalTokenCount":5}}"#,
        )]);
        assert!(check_sse(Dialect::Gemini, &empty).is_err());
    }

    #[test]
    fn gemini_answers_need_parts_finish_and_usage() {
        let text = r#"{"candidates":[{"content":{"parts":[{"text":"Hi"}],"role":"model"},"finishReason":"STOP","index":0}],"usageMetadata":{"promptTokenCount":5,"candidatesTokenCount":2,"totalTokenCount":7,"cachedContentTokenCount":3},"modelVersion":"g","responseId":"r"}"#;
        let want = Usage {
            input: 5,
            output: 2,
        };
        assert_eq!(check_json(Dialect::Gemini, text.as_bytes()).unwrap(), want);
        let call = text.replace(
            r#"{"text":"Hi"}"#,
            r#"{"functionCall":{"id":"c","name":"f","args":{}},"thoughtSignature":"c2ln"}"#,
        );
        assert_eq!(check_json(Dialect::Gemini, call.as_bytes()).unwrap(), want);
        for (what, bad) in [
            ("no finish", text.replace(r#""finishReason":"STOP","#, "")),
            ("no parts", text.replace(r#"{"text":"Hi"}"#, "")),
            ("no usage", text.replace("usageMetadata", "usage")),
            (
                "cached",
                text.replace(
                    r#""cachedContentTokenCount":3"#,
                    r#""cachedContentTokenCount":6"#,
                ),
            ),
            ("args", call.replace(r#""args":{}"#, r#""args":"{}""#)),
            ("signature", call.replace(r#""c2ln""#, "7")),
            (
                "envelope",
                r#"{"error":{"code":429,"message":"x","status":"RESOURCE_EXHAUSTED"}}"#.into(),
            ),
        ] {
            assert!(
                check_json(Dialect::Gemini, bad.as_bytes()).is_err(),
                "{what}"
            );
        }
    }

    #[test]
    fn json_bodies_need_usage() {
        let chat = br#"{"id":"c","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"Hi"},"finish_reason":"stop"}],"usage":{"prompt_tokens":5,"completion_tokens":2,"total_tokens":7}}"#;
        let msg = br#"{"id":"msg_1","type":"message","role":"assistant","content":[{"type":"text","text":"Hi"}],"stop_reason":"end_turn","stop_sequence":null,"usage":{"input_tokens":5,"output_tokens":2}}"#;
        let resp = br#"{"id":"resp_1","object":"response","status":"completed","output":[{"type":"message"}],"usage":{"input_tokens":5,"output_tokens":2,"total_tokens":7}}"#;
        let want = Usage {
            input: 5,
            output: 2,
        };
        assert_eq!(check_json(Dialect::Chat, chat).unwrap(), want);
        assert_eq!(check_json(Dialect::Messages, msg).unwrap(), want);
        assert_eq!(check_json(Dialect::Responses, resp).unwrap(), want);
        for (d, body) in [
            (Dialect::Chat, &chat[..]),
            (Dialect::Messages, &msg[..]),
            (Dialect::Responses, &resp[..]),
        ] {
            let text = std::str::from_utf8(body).unwrap();
            let no_usage = text.replace("\"usage\"", "\"usagex\"");
            assert!(check_json(d, no_usage.as_bytes()).is_err(), "{d}");
            assert!(check_json(d, &body[..body.len() - 1]).is_err(), "{d}");
        }
        let err = br#"{"error":{"message":"x","type":"server_error","param":null,"code":null}}"#;
        assert!(check_json(Dialect::Chat, err).is_err());
    }
}
