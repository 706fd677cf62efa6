//! AWS Bedrock's Converse and ConverseStream (`POST /model/{modelId}/converse` and
//! `/converse-stream`), for Bedrock training shapes: the same text and usage as every other
//! dialect's answer, in Converse's JSON, or as AWS's binary event stream (each frame:
//! prelude with its CRC-32, string headers, JSON payload, message CRC-32). Signatures are
//! never checked (training uses fixed keys; tests/sdk's mock checks them with botocore).

use bytes::{BufMut, Bytes, BytesMut};

use super::answer::Tokens;
use super::json::json_str;

pub(crate) const EVENT_STREAM: &str = "application/vnd.amazon.eventstream";

/// The model id and whether the call streams, of a Converse path; `None` for any other.
/// The id is percent-decoded (`%3A` is `:`), as AWS reads it.
pub(crate) fn call(path: &str) -> Option<(String, bool)> {
    let rest = path.strip_prefix("/model/")?;
    let (id, stream) = if let Some(id) = rest.strip_suffix("/converse-stream") {
        (id, true)
    } else {
        (rest.strip_suffix("/converse")?, false)
    };
    if id.is_empty() || id.contains('/') {
        return None;
    }
    Some((decode(id)?, stream))
}

fn decode(s: &str) -> Option<String> {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' {
            let hex = std::str::from_utf8(b.get(i + 1..i + 3)?).ok()?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

/// The body as AWS checks it, roughly: an object with a non-empty `messages` array and no
/// `model` (the model is in the URI).
pub(crate) fn check_request(body: &[u8]) -> Result<(), String> {
    let v: serde_json::Value =
        serde_json::from_slice(body).map_err(|e| format!("body is not JSON: {e}"))?;
    let o = v.as_object().ok_or("body is not a JSON object")?;
    if o.contains_key("model") || o.contains_key("modelId") {
        return Err("the model belongs in the URI, not the body".into());
    }
    match o.get("messages").and_then(|m| m.as_array()) {
        Some(m) if !m.is_empty() => Ok(()),
        _ => Err("messages: must be a non-empty array".into()),
    }
}

/// Converse's usage: `inputTokens` is the uncached rest, the cache read on top.
fn usage(tokens: Tokens) -> String {
    let uncached = tokens.input - tokens.cached;
    format!(
        r#"{{"inputTokens":{uncached},"outputTokens":{o},"totalTokens":{t},"cacheReadInputTokens":{c},"cacheWriteInputTokens":0}}"#,
        o = tokens.output,
        t = tokens.input + tokens.output,
        c = tokens.cached,
    )
}

/// A `ConverseResponse` with the text `deltas` joined.
pub(crate) fn full_body(deltas: &[&str], tokens: Tokens) -> Bytes {
    let text = json_str(&deltas.concat());
    Bytes::from(format!(
        r#"{{"output":{{"message":{{"role":"assistant","content":[{{"text":{text}}}]}}}},"stopReason":"end_turn","usage":{u},"metrics":{{"latencyMs":1}}}}"#,
        u = usage(tokens)
    ))
}

/// The ConverseStream frames of a text answer, one per event.
pub(crate) fn stream_events(deltas: &[&str], tokens: Tokens) -> Vec<Bytes> {
    let mut out = vec![event("messageStart", r#"{"role":"assistant"}"#)];
    for d in deltas {
        let payload = format!(
            r#"{{"contentBlockIndex":0,"delta":{{"text":{}}}}}"#,
            json_str(d)
        );
        out.push(event("contentBlockDelta", &payload));
    }
    out.push(event("contentBlockStop", r#"{"contentBlockIndex":0}"#));
    out.push(event("messageStop", r#"{"stopReason":"end_turn"}"#));
    let metadata = format!(
        r#"{{"usage":{},"metrics":{{"latencyMs":1}}}}"#,
        usage(tokens)
    );
    out.push(event("metadata", &metadata));
    out
}

/// An error as Bedrock sends it: `{"message"}`, the type in `x-amzn-ErrorType`.
pub(crate) fn error_body(message: &str) -> Bytes {
    Bytes::from(format!(r#"{{"message":{}}}"#, json_str(message)))
}

/// The error type Bedrock names for `status`.
pub(crate) fn error_type(status: u16) -> &'static str {
    match status {
        400 => "ValidationException",
        403 => "AccessDeniedException",
        404 => "ResourceNotFoundException",
        408 => "ModelTimeoutException",
        424 => "ModelErrorException",
        429 => "ThrottlingException",
        503 => "ServiceUnavailableException",
        _ => "InternalServerException",
    }
}

/// One event frame: `:event-type`, `:content-type`, `:message-type` headers, the payload.
fn event(name: &str, payload: &str) -> Bytes {
    let headers = [
        (":event-type", name),
        (":content-type", "application/json"),
        (":message-type", "event"),
    ];
    let mut h = BytesMut::new();
    for (k, v) in headers {
        h.put_u8(k.len() as u8);
        h.put_slice(k.as_bytes());
        h.put_u8(7); // string
        h.put_u16(v.len() as u16);
        h.put_slice(v.as_bytes());
    }
    let total = 12 + h.len() + payload.len() + 4;
    let mut f = BytesMut::with_capacity(total);
    f.put_u32(total as u32);
    f.put_u32(h.len() as u32);
    let prelude_crc = crc32fast::hash(&f[..8]);
    f.put_u32(prelude_crc);
    f.put_slice(&h);
    f.put_slice(payload.as_bytes());
    let crc = crc32fast::hash(&f);
    f.put_u32(crc);
    f.freeze()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths() {
        assert_eq!(
            call("/model/anthropic.claude-v1%3A0/converse"),
            Some(("anthropic.claude-v1:0".into(), false))
        );
        assert_eq!(
            call("/model/arn%3Aaws%3Ax%2Fy/converse-stream"),
            Some(("arn:aws:x/y".into(), true))
        );
        for bad in [
            "/model//converse",
            "/model/a/b/converse",
            "/model/a/invoke",
            "/v1/messages",
        ] {
            assert_eq!(call(bad), None, "{bad}");
        }
    }

    #[test]
    fn frames_are_well_formed() {
        let f = event("messageStart", r#"{"role":"assistant"}"#);
        let total = u32::from_be_bytes(f[..4].try_into().unwrap()) as usize;
        assert_eq!(total, f.len());
        assert_eq!(
            crc32fast::hash(&f[..8]),
            u32::from_be_bytes(f[8..12].try_into().unwrap())
        );
        assert_eq!(
            crc32fast::hash(&f[..total - 4]),
            u32::from_be_bytes(f[total - 4..].try_into().unwrap())
        );
        assert!(
            check_request(br#"{"messages":[{"role":"user","content":[{"text":"hi"}]}]}"#).is_ok()
        );
        assert!(check_request(br#"{"model":"m","messages":[{}]}"#).is_err());
        assert!(check_request(br#"{"messages":[]}"#).is_err());
    }
}
