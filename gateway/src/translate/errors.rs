//! Upstream error answers re-rendered in the client's envelope, status kept: an SDK reads
//! its own envelope only, and picks its exception (and retry policy) by status.

use std::borrow::Cow;

use bytes::Bytes;
use serde::Deserialize;
use serde_json::json;
use serde_json::value::RawValue;

use crate::dialect::{Dialect, Envelope};

/// The members of an error envelope (or of its `error` object) that are read: borrowed as
/// raw text, every other member skipped unbuilt, so that a hostile body costs no tree (a
/// `Value` of a 2 MB body of tiny objects was +171 MiB, issue 49).
#[derive(Deserialize, Default)]
struct Fields<'a> {
    #[serde(borrow)]
    error: Option<&'a RawValue>,
    #[serde(borrow)]
    message: Option<&'a RawValue>,
    /// AWS services spell it `Message` in some errors (Bedrock's own use `message`).
    #[serde(borrow, rename = "Message")]
    aws_message: Option<&'a RawValue>,
    #[serde(borrow, rename = "type")]
    ty: Option<&'a RawValue>,
}

/// A member's string, `None` when it is anything else.
fn text(raw: Option<&RawValue>) -> Option<Cow<'_, str>> {
    let raw = raw?.get();
    raw.starts_with('"')
        .then(|| serde_json::from_str(raw).ok())
        .flatten()
}

/// An object's [`Fields`] (all absent for a value that is no object); `None`: not JSON.
fn fields(text: &str) -> Option<Fields<'_>> {
    let raw: &RawValue = serde_json::from_str(text).ok()?;
    if raw.get().starts_with('{') {
        serde_json::from_str(raw.get()).ok()
    } else {
        Some(Fields::default())
    }
}

/// The upstream's error type and message, from either envelope (or a plain-text body).
fn read(body: &[u8]) -> (Option<String>, String) {
    let Some(v) = std::str::from_utf8(body).ok().and_then(fields) else {
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
    // The `error` member when there is one (a string there is the message itself).
    let err = match v.error {
        Some(e) if e.get().starts_with('"') => return (None, owned(text(Some(e)))),
        Some(e) => fields(e.get()).unwrap_or_default(),
        None => v,
    };
    // As before: a `message` that is no string is not looked past for `Message`.
    let message = match err.message {
        Some(m) => text(Some(m)),
        None => text(err.aws_message),
    };
    (text(err.ty).map(Cow::into_owned), owned(message))
}

fn owned(message: Option<Cow<'_, str>>) -> String {
    message.map_or_else(|| "upstream error".to_owned(), Cow::into_owned)
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
    use serde_json::Value;

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
