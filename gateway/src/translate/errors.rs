//! Upstream error answers re-rendered in the client's envelope, status kept: an SDK reads
//! its own envelope only, and picks its exception (and retry policy) by status.

use bytes::Bytes;
use serde_json::{json, Value};

use crate::dialect::{Dialect, Envelope};

/// The upstream's error type and message, from either envelope (or a plain-text body).
fn read(body: &[u8]) -> (Option<String>, String) {
    let Ok(v) = serde_json::from_slice::<Value>(body) else {
        let text = String::from_utf8_lossy(body).trim().to_owned();
        return (
            None,
            if text.is_empty() {
                "upstream error".into()
            } else {
                text
            },
        );
    };
    let err = v.get("error").unwrap_or(&v);
    // AWS services spell it `Message` in some errors (Bedrock's own use `message`).
    let message = err
        .get("message")
        .or_else(|| err.get("Message"))
        .and_then(Value::as_str)
        .or_else(|| err.as_str())
        .unwrap_or("upstream error")
        .to_owned();
    let ty = err.get("type").and_then(Value::as_str).map(str::to_owned);
    (ty, message)
}

/// Anthropic's error type for a status, when the upstream's own type is OpenAI's.
pub(crate) fn anthropic_type(status: u16) -> &'static str {
    match status {
        400 | 422 => "invalid_request_error",
        401 => "authentication_error",
        403 => "permission_error",
        404 => "not_found_error",
        413 => "request_too_large",
        429 => "rate_limit_error",
        503 | 529 => "overloaded_error",
        504 => "timeout_error",
        _ => "api_error",
    }
}

/// OpenAI's error type for a status, when the upstream's own type is Anthropic's.
pub(crate) fn openai_type(status: u16) -> &'static str {
    match status {
        401 => "authentication_error",
        403 => "permission_error",
        404 => "not_found_error",
        429 => "rate_limit_error",
        s if s >= 500 => "server_error",
        _ => "invalid_request_error",
    }
}

/// The upstream error `body` (from an `upstream` dialect target) in `client`'s envelope.
/// The upstream's own type is kept only within its family; otherwise it is mapped by status.
pub(crate) fn translate(client: Dialect, upstream: Dialect, status: u16, body: &[u8]) -> Bytes {
    let (ty, message) = read(body);
    let same = client.envelope() == upstream.envelope();
    let v = match client.envelope() {
        Envelope::Anthropic => {
            let ty = match ty {
                Some(t) if same => t,
                _ => anthropic_type(status).to_owned(),
            };
            json!({"type": "error", "error": {"type": ty, "message": message}})
        }
        Envelope::Openai => {
            let ty = match ty {
                Some(t) if same => t,
                _ => openai_type(status).to_owned(),
            };
            json!({"error": {"message": message, "type": ty, "param": null, "code": null}})
        }
        Envelope::Google => json!({"error": {
            "code": status, "message": message, "status": crate::error::google_status(status),
        }}),
    };
    Bytes::from(serde_json::to_vec(&v).expect("a JSON value serializes"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn anthropic_overloaded_becomes_openai_server_error() {
        let body =
            br#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#;
        let v: Value =
            serde_json::from_slice(&translate(Dialect::Chat, Dialect::Messages, 529, body))
                .unwrap();
        assert_eq!(v["error"]["message"], "Overloaded");
        assert_eq!(v["error"]["type"], "server_error");
    }

    #[test]
    fn openai_error_becomes_anthropic_envelope() {
        let body = br#"{"error":{"message":"bad key","type":"invalid_request_error","code":"invalid_api_key"}}"#;
        let v: Value =
            serde_json::from_slice(&translate(Dialect::Messages, Dialect::Chat, 401, body))
                .unwrap();
        assert_eq!(v["type"], "error");
        assert_eq!(v["error"]["type"], "authentication_error");
        assert_eq!(v["error"]["message"], "bad key");
        let v: Value = serde_json::from_slice(&translate(
            Dialect::Messages,
            Dialect::Chat,
            502,
            b"Bad Gateway",
        ))
        .unwrap();
        assert_eq!(v["error"]["message"], "Bad Gateway");
        assert_eq!(v["error"]["type"], "api_error");
    }

    #[test]
    fn google_errors_both_ways() {
        let google =
            br#"{"error":{"code":429,"message":"Quota exceeded","status":"RESOURCE_EXHAUSTED"}}"#;
        let v: Value =
            serde_json::from_slice(&translate(Dialect::Chat, Dialect::Gemini, 429, google))
                .unwrap();
        assert_eq!(v["error"]["message"], "Quota exceeded");
        assert_eq!(v["error"]["type"], "rate_limit_error");
        let body =
            br#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#;
        let v: Value =
            serde_json::from_slice(&translate(Dialect::Gemini, Dialect::Messages, 529, body))
                .unwrap();
        assert_eq!(
            v,
            json!({"error": {"code": 529, "message": "Overloaded", "status": "UNAVAILABLE"}})
        );
    }
}
