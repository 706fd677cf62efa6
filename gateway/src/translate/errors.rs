//! The translation's errors, in one home: a client request that cannot be translated
//! ([`TranslateError`], a 400 or 413, naming every refused field), an upstream answer that
//! cannot ([`UpstreamShapeError`], a 502), and the upstream's own error answers re-rendered
//! in the client's envelope, status kept ([`translate`]: an SDK reads its own envelope only,
//! and picks its exception and retry policy by status).

use std::borrow::Cow;

use bytes::Bytes;
use serde::Deserialize;
use serde_json::json;
use serde_json::value::RawValue;

use super::json::budget::OverBudget;
use crate::dialect::{Dialect, Envelope, Upstream};

/// A client request that cannot be translated: answered with a 400 in the client's dialect.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum TranslateError {
    /// Fields with no equivalent in the target's API: dropping them would change the
    /// answer. Every one the request holds, each with its path.
    #[error("{}", describe(fields, upstream))]
    Unsupported {
        fields: Vec<Refusal>,
        upstream: &'static str,
    },
    /// A field of the wrong shape (the upstream would have refused it too).
    #[error("`{field}`: {why}")]
    Invalid { field: String, why: String },
    /// A document in the body over its node budget ([`super::json::budget`]): a 413, refused before
    /// its tree was built.
    #[error("the request is too large to translate: {0}")]
    TooLarge(OverBudget),
}

impl TranslateError {
    /// Whether this is a 413 ([`TranslateError::TooLarge`]) rather than a 400.
    pub(crate) fn too_large(&self) -> bool {
        matches!(self, TranslateError::TooLarge(_))
    }
}

/// An upstream answer that does not have the shape its dialect promises: a 502.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("the upstream answer could not be translated: {0}")]
pub(crate) struct UpstreamShapeError(pub String);

/// A field that cannot be translated, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Refusal {
    pub(crate) field: String,
    pub(crate) why: String,
}

/// The refusal text: one field as before, several as one list, each with its path.
pub(crate) fn describe(fields: &[Refusal], upstream: &str) -> String {
    match fields {
        [one] => format!(
            "`{}` is not supported by this model's upstream ({upstream} API): {}",
            one.field, one.why
        ),
        _ => {
            let list: Vec<String> = fields
                .iter()
                .map(|r| format!("`{}` ({})", r.field, r.why))
                .collect();
            format!(
                "{} fields are not supported by this model's upstream ({upstream} API): {}",
                fields.len(),
                list.join("; ")
            )
        }
    }
}

/// The 400 for a body that is not JSON, with serde_json's reason.
pub(super) fn not_json(e: Option<serde_json::Error>) -> TranslateError {
    TranslateError::Invalid {
        field: "body".into(),
        why: match e {
            Some(e) => format!("not valid JSON ({e})"),
            None => "not valid JSON".into(),
        },
    }
}

/// The 502 for an upstream document (`what`: answer, event, arguments) over its node budget,
/// naming the upstream's API.
pub(crate) fn over_budget(upstream: Upstream, what: &str, e: OverBudget) -> UpstreamShapeError {
    UpstreamShapeError(format!(
        "the {} upstream's {what} is refused unread: {e}",
        api_name(upstream)
    ))
}

/// The API name used in refusals.
pub(super) const fn api_name(d: Upstream) -> &'static str {
    match d {
        Upstream::Chat => "OpenAI chat completions",
        Upstream::Messages => "Anthropic messages",
        Upstream::Responses => "OpenAI responses",
        Upstream::Gemini => "Google Gemini",
        Upstream::Converse => "AWS Bedrock Converse",
    }
}

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
pub(crate) fn translate(client: Dialect, upstream: Upstream, status: u16, body: &[u8]) -> Bytes {
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
            serde_json::from_slice(&translate(Dialect::Chat, Upstream::Messages, 529, body))
                .unwrap();
        assert_eq!(v["error"]["message"], "Overloaded");
        assert_eq!(v["error"]["type"], "server_error");
    }

    #[test]
    fn openai_error_becomes_anthropic_envelope() {
        let body = br#"{"error":{"message":"bad key","type":"invalid_request_error","code":"invalid_api_key"}}"#;
        let v: Value =
            serde_json::from_slice(&translate(Dialect::Messages, Upstream::Chat, 401, body))
                .unwrap();
        assert_eq!(v["type"], "error");
        assert_eq!(v["error"]["type"], "authentication_error");
        assert_eq!(v["error"]["message"], "bad key");
        let v: Value = serde_json::from_slice(&translate(
            Dialect::Messages,
            Upstream::Chat,
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
            serde_json::from_slice(&translate(Dialect::Chat, Upstream::Gemini, 429, google))
                .unwrap();
        assert_eq!(v["error"]["message"], "Quota exceeded");
        assert_eq!(v["error"]["type"], "rate_limit_error");
        let body =
            br#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#;
        let v: Value =
            serde_json::from_slice(&translate(Dialect::Gemini, Upstream::Messages, 529, body))
                .unwrap();
        assert_eq!(
            v,
            json!({"error": {"code": 529, "message": "Overloaded", "status": "UNAVAILABLE"}})
        );
    }
}
