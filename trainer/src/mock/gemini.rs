//! The mock's Gemini API (PROTOCOLS.md, the fourth dialect): the request checks Google makes,
//! and the bodies of `generateContent`, `streamGenerateContent` and `countTokens`.
//!
//! - The model is in the path (`/{v1beta|v1}/models/{model}:{method}`), the body has none to
//!   read; a top-level field Google does not know (`stream`, `messages`, ...) is refused with
//!   400 `INVALID_ARGUMENT`, as Google refuses it, and so is a body without `contents`.
//! - A text answer is `candidates[0].content.parts[0].text` with `finishReason: "STOP"`; a
//!   tool call is one `functionCall` part (with an id) carrying a `thoughtSignature`
//!   ([`thought_signature`]), also with `"STOP"`: Gemini has no tool finish reason.
//! - `usageMetadata.promptTokenCount` includes `cachedContentTokenCount`, as Google counts.
//! - A stream (`?alt=sse`) is `data: {chunk}\r\n\r\n` events, each a whole
//!   `GenerateContentResponse` with the next text fragment; the last one carries
//!   `finishReason` and the final usage, the earlier ones the prompt count only; a function
//!   call comes whole in one chunk; no `[DONE]`. Without `alt=sse` Google writes the same
//!   chunks as one JSON array, in pieces, and so does the mock.
//!
//! The mock remembers nothing between requests: the signature of a call is a function of the
//! tool's name only, so a test can check that the next request carries it back byte for byte.

use std::borrow::Cow;

use bytes::Bytes;
use serde::de::IgnoredAny;
use serde::Deserialize;
use serde_json::value::RawValue;

use super::answer::{Tokens, ToolCall};
use super::json::json_str;
use super::text::INPUT_TOKENS;

/// The `responseId` of every answer.
pub(super) const RESPONSE_ID: &str = "mockResp0001";
/// The `functionCall.id` of every call the mock makes.
pub const CALL_ID: &str = "mock-call-0001";

/// The `thoughtSignature` the mock puts on its call of tool `name`: the standard base64 (with
/// padding) of `mock-signature-<name>`. Deterministic and stateless, so that a test can
/// check that the client's next request carries it back, byte for byte, on that
/// `functionCall` part.
pub fn thought_signature(name: &str) -> String {
    base64(format!("mock-signature-{name}").as_bytes())
}

fn base64(bytes: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let b = [
            chunk[0],
            chunk.get(1).copied().unwrap_or(0),
            chunk.get(2).copied().unwrap_or(0),
        ];
        let n = u32::from(b[0]) << 16 | u32::from(b[1]) << 8 | u32::from(b[2]);
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(ALPHABET[(n >> (18 - 6 * i) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

/// The top-level fields of a `GenerateContentRequest` (Google accepts the proto's
/// snake_case names too); any other is refused, as Google refuses it.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct GenerateContentRequest<'a> {
    #[serde(default)]
    contents: Option<IgnoredAny>,
    /// Counted, never built: `IgnoredAny` is zero-sized, so the Vec does not allocate.
    #[serde(default)]
    tools: Option<Vec<IgnoredAny>>,
    #[serde(default, rename = "toolConfig", alias = "tool_config")]
    _tool_config: Option<IgnoredAny>,
    #[serde(default, rename = "systemInstruction", alias = "system_instruction")]
    _system_instruction: Option<IgnoredAny>,
    /// Kept as written: it may ask for JSON output (`structured`).
    #[serde(
        borrow,
        default,
        rename = "generationConfig",
        alias = "generation_config"
    )]
    generation_config: Option<&'a RawValue>,
    #[serde(default, rename = "safetySettings", alias = "safety_settings")]
    _safety_settings: Option<IgnoredAny>,
    #[serde(default, rename = "cachedContent", alias = "cached_content")]
    _cached_content: Option<IgnoredAny>,
    /// The proto's `model` (the path's, `models/...`); ignored, the path's counts.
    #[serde(default, rename = "model")]
    _model: Option<IgnoredAny>,
}

/// What a checked `generateContent` body asks for.
#[derive(Debug, Default)]
pub(super) struct Checked<'a> {
    /// A non-empty `tools` list.
    pub has_tools: bool,
    /// `generationConfig`, as written.
    pub generation_config: Option<&'a RawValue>,
}

/// Checks a `generateContent` body as Google would. The error is Google's message.
pub(super) fn check_request(body: &[u8]) -> Result<Checked<'_>, String> {
    let request: GenerateContentRequest = serde_json::from_slice(body).map_err(|e| {
        let e = e.to_string();
        match e.strip_prefix("unknown field `") {
            Some(rest) => format!(
                "Invalid JSON payload received. Unknown name \"{}\": Cannot find field.",
                rest.split('`').next().unwrap_or_default()
            ),
            None => format!("Invalid JSON payload received. {e}"),
        }
    })?;
    if request.contents.is_none() {
        return Err("* GenerateContentRequest.contents: contents is not specified".into());
    }
    Ok(Checked {
        has_tools: request.tools.is_some_and(|t| !t.is_empty()),
        generation_config: request.generation_config,
    })
}

/// Checks a `countTokens` body: a JSON object (`contents` or a `generateContentRequest`).
pub(super) fn check_count_tokens(body: &[u8]) -> Result<(), String> {
    let v: serde_json::Map<String, serde_json::Value> =
        serde_json::from_slice(body).map_err(|e| format!("Invalid JSON payload received. {e}"))?;
    if !v.contains_key("contents") && !v.contains_key("generateContentRequest") {
        return Err("* CountTokensRequest: contents or generateContentRequest is required".into());
    }
    Ok(())
}

/// The `countTokens` answer: the mock's input count.
pub(super) fn count_tokens_body() -> Bytes {
    Bytes::from(format!(
        r#"{{"totalTokens":{INPUT_TOKENS},"promptTokensDetails":[{{"modality":"TEXT","tokenCount":{INPUT_TOKENS}}}]}}"#
    ))
}

/// Google's status name for an HTTP status.
pub(super) fn status_name(status: u16) -> &'static str {
    match status {
        400 => "INVALID_ARGUMENT",
        401 => "UNAUTHENTICATED",
        403 => "PERMISSION_DENIED",
        404 => "NOT_FOUND",
        409 => "ABORTED",
        429 => "RESOURCE_EXHAUSTED",
        499 => "CANCELLED",
        501 => "UNIMPLEMENTED",
        502 | 503 | 529 => "UNAVAILABLE",
        504 => "DEADLINE_EXCEEDED",
        405..=499 => "FAILED_PRECONDITION",
        _ => "INTERNAL",
    }
}

/// Google's error envelope; a 429 says when to retry (`google.rpc.RetryInfo`), as Google's
/// do and Gemini CLI reads. `message` is a JSON string literal.
pub(super) fn error_body(status: u16, message: &str) -> String {
    let details = if status == 429 {
        r#","details":[{"@type":"type.googleapis.com/google.rpc.RetryInfo","retryDelay":"1s"}]"#
    } else {
        ""
    };
    format!(
        r#"{{"error":{{"code":{status},"message":{message},"status":"{}"{details}}}}}"#,
        status_name(status)
    )
}

/// The final `usageMetadata`.
fn usage(tokens: Tokens) -> String {
    let cached = if tokens.cached > 0 {
        Cow::Owned(format!(
            r#","cachedContentTokenCount":{c},"cacheTokensDetails":[{{"modality":"TEXT","tokenCount":{c}}}]"#,
            c = tokens.cached
        ))
    } else {
        Cow::Borrowed("")
    };
    format!(
        concat!(
            r#"{{"promptTokenCount":{i},"candidatesTokenCount":{o},"totalTokenCount":{t}{cached},"#,
            r#""promptTokensDetails":[{{"modality":"TEXT","tokenCount":{i}}}]}}"#
        ),
        i = tokens.input,
        o = tokens.output,
        t = tokens.input + tokens.output,
        cached = cached,
    )
}

/// The `usageMetadata` of a chunk before the last: the prompt only.
fn partial_usage(tokens: Tokens) -> String {
    let cached = if tokens.cached > 0 {
        Cow::Owned(format!(r#","cachedContentTokenCount":{}"#, tokens.cached))
    } else {
        Cow::Borrowed("")
    };
    format!(
        r#"{{"promptTokenCount":{i},"totalTokenCount":{i}{cached}}}"#,
        i = tokens.input
    )
}

/// One `GenerateContentResponse`; `model` is a JSON string literal, `parts` JSON parts.
fn response(model: &str, parts: &str, finished: bool, usage: &str) -> String {
    let finish = if finished {
        r#","finishReason":"STOP""#
    } else {
        ""
    };
    format!(
        concat!(
            r#"{{"candidates":[{{"content":{{"parts":[{parts}],"role":"model"}}{finish},"index":0}}],"#,
            r#""usageMetadata":{usage},"modelVersion":{model},"responseId":"{id}"}}"#
        ),
        parts = parts,
        finish = finish,
        usage = usage,
        model = model,
        id = RESPONSE_ID,
    )
}

fn text_part(text: &str) -> String {
    format!(r#"{{"text":{}}}"#, json_str(text))
}

fn call_part(call: &ToolCall) -> String {
    format!(
        r#"{{"functionCall":{{"id":"{CALL_ID}","name":{},"args":{}}},"thoughtSignature":"{}"}}"#,
        json_str(call.name),
        call.arguments,
        thought_signature(call.name)
    )
}

/// How a stream's chunks are framed: SSE events, or (without `alt=sse`) one JSON array.
fn frames(chunks: Vec<String>, array: bool) -> Vec<Bytes> {
    if !array {
        return chunks
            .into_iter()
            .map(|c| Bytes::from(format!("data: {c}\r\n\r\n")))
            .collect();
    }
    let mut out: Vec<Bytes> = chunks
        .into_iter()
        .enumerate()
        .map(|(i, c)| Bytes::from(format!("{}{c}\n", if i == 0 { "[" } else { ",\r\n" })))
        .collect();
    out.push(Bytes::from_static(b"]"));
    out
}

/// The non-streamed body of a text answer; `model` (the path's) is a JSON string literal.
pub(super) fn text_body(model: &str, deltas: &[&str], tokens: Tokens) -> String {
    response(model, &text_part(&deltas.concat()), true, &usage(tokens))
}

/// The chunks of a streamed text answer, one per delta (one empty one for no delta);
/// `model` is a JSON string literal.
pub(super) fn text_stream(model: &str, deltas: &[&str], tokens: Tokens, array: bool) -> Vec<Bytes> {
    let deltas = if deltas.is_empty() { &[""][..] } else { deltas };
    let partial = partial_usage(tokens);
    let last = deltas.len() - 1;
    let chunks = deltas
        .iter()
        .enumerate()
        .map(|(i, d)| {
            if i == last {
                response(model, &text_part(d), true, &usage(tokens))
            } else {
                response(model, &text_part(d), false, &partial)
            }
        })
        .collect();
    frames(chunks, array)
}

/// The non-streamed body of a tool call; `model` is a JSON string literal.
pub(super) fn call_body(model: &str, call: &ToolCall, tokens: Tokens) -> String {
    response(model, &call_part(call), true, &usage(tokens))
}

/// A streamed tool call: the call whole, in one chunk that also ends the answer.
pub(super) fn call_stream(model: &str, call: &ToolCall, tokens: Tokens, array: bool) -> Vec<Bytes> {
    let chunk = response(model, &call_part(call), true, &usage(tokens));
    frames(vec![chunk], array)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base64_matches_the_standard_alphabet_with_padding() {
        for (plain, encoded) in [
            ("", ""),
            ("f", "Zg=="),
            ("fo", "Zm8="),
            ("foo", "Zm9v"),
            ("foob", "Zm9vYg=="),
            ("fooba", "Zm9vYmE="),
            ("foobar", "Zm9vYmFy"),
        ] {
            assert_eq!(base64(plain.as_bytes()), encoded, "{plain}");
        }
        assert_eq!(
            thought_signature("read_file"),
            "bW9jay1zaWduYXR1cmUtcmVhZF9maWxl"
        );
    }

    #[test]
    fn requests_are_checked_as_google_does() {
        let plain = check_request(br#"{"contents":[]}"#).unwrap();
        assert!(!plain.has_tools && plain.generation_config.is_none());
        let full = check_request(
            br#"{"contents":[],"system_instruction":{},"generationConfig":{"topK":1},"tools":[{}]}"#,
        )
        .unwrap();
        assert!(full.has_tools);
        assert_eq!(full.generation_config.unwrap().get(), r#"{"topK":1}"#);
        let snake = check_request(br#"{"contents":[],"generation_config":{}}"#).unwrap();
        assert!(snake.generation_config.is_some());
        let e = check_request(br#"{"contents":[],"stream":true}"#).unwrap_err();
        assert!(e.contains(r#"Unknown name "stream""#), "{e}");
        let e = check_request(br#"{"tools":[]}"#).unwrap_err();
        assert!(e.contains("contents is not specified"), "{e}");
        assert!(check_request(b"{not json").is_err());
        assert!(check_count_tokens(br#"{"contents":[]}"#).is_ok());
        assert!(check_count_tokens(br#"{"generateContentRequest":{}}"#).is_ok());
        assert!(check_count_tokens(br#"{}"#).is_err());
    }

    #[test]
    fn cached_tokens_are_part_of_the_prompt_count() {
        let tokens = Tokens {
            input: 17,
            cached: 5,
            output: 4,
        };
        let v: serde_json::Value = serde_json::from_str(&usage(tokens)).unwrap();
        assert_eq!(v["promptTokenCount"], 17);
        assert_eq!(v["cachedContentTokenCount"], 5);
        assert_eq!(v["totalTokenCount"], 21);
        let v: serde_json::Value = serde_json::from_str(&usage(Tokens {
            cached: 0,
            ..tokens
        }))
        .unwrap();
        assert!(v.get("cachedContentTokenCount").is_none());
    }

    #[test]
    fn array_framing_is_one_json_array() {
        let chunks = text_stream(
            r#""m""#,
            &["a", "b"],
            Tokens {
                input: 1,
                cached: 0,
                output: 2,
            },
            true,
        );
        let v: serde_json::Value = serde_json::from_slice(&chunks.concat()).unwrap();
        assert_eq!(v.as_array().unwrap().len(), 2);
        assert_eq!(v[1]["candidates"][0]["finishReason"], "STOP");
    }
}
