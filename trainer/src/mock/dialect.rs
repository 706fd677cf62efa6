//! The mock's side of each dialect: its response headers (request id, rate limits) and its
//! error envelope. Which dialect a path speaks is `crate::dialect`.
//!
//! Google's Gemini API sends neither a request id header (the body's `responseId` is the id)
//! nor rate-limit headers; its JSON is `application/json; charset=UTF-8`.

use bytes::Bytes;
use http::header::{HeaderMap, HeaderName, HeaderValue};

use super::json::json_str;
use crate::dialect::Dialect;

// Inherent methods on the crate's one `Dialect` (crate::dialect): what only the mock's
// side of a route needs, kept beside the mock.
impl Dialect {
    /// The header carrying the upstream request id: `request-id` for Anthropic,
    /// `x-request-id` for OpenAI, none for Gemini.
    pub(crate) fn request_id_header(self) -> Option<HeaderName> {
        match self {
            Dialect::Messages => Some(HeaderName::from_static("request-id")),
            Dialect::Chat | Dialect::Responses => Some(HeaderName::from_static("x-request-id")),
            Dialect::Gemini => None,
        }
    }

    /// The `Content-Type` of this dialect's JSON bodies.
    pub(crate) fn json_content_type(self) -> HeaderValue {
        match self {
            Dialect::Gemini => HeaderValue::from_static("application/json; charset=UTF-8"),
            _ => HeaderValue::from_static("application/json"),
        }
    }

    /// Adds the request id and realistic rate-limit headers for this dialect.
    pub(crate) fn add_upstream_headers(self, headers: &mut HeaderMap, request_number: u64) {
        let id = match self {
            Dialect::Messages => format!("req_mock{request_number:016x}"),
            _ => format!("req_mock{request_number:032x}"),
        };
        if let Some(name) = self.request_id_header() {
            headers.insert(
                name,
                HeaderValue::from_str(&id).expect("hex id is a valid header value"),
            );
        }
        let static_headers: &[(&str, &str)] = match self {
            Dialect::Messages => &[
                ("anthropic-ratelimit-requests-limit", "4000"),
                ("anthropic-ratelimit-requests-remaining", "3999"),
                ("anthropic-ratelimit-requests-reset", "2026-01-01T00:00:01Z"),
                ("anthropic-ratelimit-tokens-limit", "400000"),
                ("anthropic-ratelimit-tokens-remaining", "399000"),
                ("anthropic-ratelimit-tokens-reset", "2026-01-01T00:00:01Z"),
            ],
            Dialect::Chat | Dialect::Responses => &[
                ("openai-processing-ms", "1"),
                ("x-ratelimit-limit-requests", "10000"),
                ("x-ratelimit-remaining-requests", "9999"),
                ("x-ratelimit-reset-requests", "6ms"),
                ("x-ratelimit-limit-tokens", "2000000"),
                ("x-ratelimit-remaining-tokens", "1999000"),
                ("x-ratelimit-reset-tokens", "30ms"),
            ],
            Dialect::Gemini => &[
                ("server-timing", "gfet4t7; dur=1"),
                ("vary", "Origin, X-Origin, Referer"),
                ("x-content-type-options", "nosniff"),
            ],
        };
        for (name, value) in static_headers {
            headers.insert(
                HeaderName::from_static(name),
                HeaderValue::from_static(value),
            );
        }
    }

    /// An error body in this dialect's envelope.
    pub(crate) fn error_body(self, status: u16, message: &str) -> Bytes {
        let message = json_str(message);
        let body = match self {
            Dialect::Messages => format!(
                r#"{{"type":"error","error":{{"type":"{}","message":{message}}}}}"#,
                anthropic_error_type(status)
            ),
            Dialect::Chat | Dialect::Responses => {
                let (kind, code) = openai_error_type(status);
                format!(
                    r#"{{"error":{{"message":{message},"type":"{kind}","param":null,"code":{code}}}}}"#
                )
            }
            Dialect::Gemini => super::gemini::error_body(status, &message),
        };
        Bytes::from(body)
    }
}

fn anthropic_error_type(status: u16) -> &'static str {
    match status {
        400 => "invalid_request_error",
        401 => "authentication_error",
        402 => "billing_error",
        403 => "permission_error",
        404 => "not_found_error",
        413 => "request_too_large",
        429 => "rate_limit_error",
        504 => "timeout_error",
        529 => "overloaded_error",
        _ => "api_error",
    }
}

/// (`type`, `code` as JSON) of an OpenAI error for `status`.
fn openai_error_type(status: u16) -> (&'static str, &'static str) {
    match status {
        401 => ("invalid_request_error", r#""invalid_api_key""#),
        403 => (
            "invalid_request_error",
            r#""unsupported_country_region_territory""#,
        ),
        404 => ("invalid_request_error", r#""model_not_found""#),
        429 => ("requests", r#""rate_limit_exceeded""#),
        400..=499 => ("invalid_request_error", "null"),
        _ => ("server_error", "null"),
    }
}
