//! Errors the gateway itself answers with, rendered in the route's dialect envelope.

use bytes::Bytes;
use http::{header, HeaderValue, Response, StatusCode};

use crate::body::{full, GatewayBody};
use crate::dialect::Envelope;

/// What went wrong, independent of the dialect that reports it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ErrorKind {
    InvalidRequest,
    Authentication,
    Permission,
    NotFound,
    ModelNotFound,
    TooLarge,
    RateLimited,
    BadGateway,
    GatewayTimeout,
    /// The request body did not arrive within `server.body_read_timeout_ms`.
    RequestTimeout,
    MethodNotAllowed,
    /// A WebSocket upgrade where only HTTP is served (`/v1/responses`): 426.
    UpgradeRequired,
    /// A gateway-wide bound was hit (connections, buffered upstream bytes).
    Overloaded,
    UriTooLong,
    HeadersTooLarge,
    /// A target's credentials could not be had (its token endpoint failed or is slow).
    CredentialsUnavailable,
}

impl ErrorKind {
    pub(crate) const fn status(self) -> StatusCode {
        match self {
            ErrorKind::InvalidRequest => StatusCode::BAD_REQUEST,
            ErrorKind::Authentication => StatusCode::UNAUTHORIZED,
            ErrorKind::Permission => StatusCode::FORBIDDEN,
            ErrorKind::NotFound | ErrorKind::ModelNotFound => StatusCode::NOT_FOUND,
            ErrorKind::TooLarge => StatusCode::PAYLOAD_TOO_LARGE,
            ErrorKind::RateLimited => StatusCode::TOO_MANY_REQUESTS,
            ErrorKind::BadGateway => StatusCode::BAD_GATEWAY,
            ErrorKind::GatewayTimeout => StatusCode::GATEWAY_TIMEOUT,
            ErrorKind::RequestTimeout => StatusCode::REQUEST_TIMEOUT,
            ErrorKind::MethodNotAllowed => StatusCode::METHOD_NOT_ALLOWED,
            ErrorKind::UpgradeRequired => StatusCode::UPGRADE_REQUIRED,
            ErrorKind::Overloaded | ErrorKind::CredentialsUnavailable => {
                StatusCode::SERVICE_UNAVAILABLE
            }
            ErrorKind::UriTooLong => StatusCode::URI_TOO_LONG,
            ErrorKind::HeadersTooLarge => StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE,
        }
    }

    /// Anthropic's `error.type` values.
    const fn anthropic_type(self) -> &'static str {
        match self {
            ErrorKind::InvalidRequest
            | ErrorKind::RequestTimeout
            | ErrorKind::MethodNotAllowed
            | ErrorKind::UpgradeRequired
            | ErrorKind::UriTooLong
            | ErrorKind::HeadersTooLarge => "invalid_request_error",
            ErrorKind::Overloaded => "overloaded_error",
            ErrorKind::Authentication => "authentication_error",
            ErrorKind::Permission => "permission_error",
            ErrorKind::NotFound | ErrorKind::ModelNotFound => "not_found_error",
            ErrorKind::TooLarge => "request_too_large",
            ErrorKind::RateLimited => "rate_limit_error",
            ErrorKind::GatewayTimeout => "timeout_error",
            ErrorKind::BadGateway | ErrorKind::CredentialsUnavailable => "api_error",
        }
    }

    /// OpenAI's `error.type` and `error.code` values.
    const fn openai_type_code(self) -> (&'static str, Option<&'static str>) {
        match self {
            ErrorKind::InvalidRequest => ("invalid_request_error", None),
            ErrorKind::Authentication => ("invalid_request_error", Some("invalid_api_key")),
            ErrorKind::Permission => ("invalid_request_error", Some("model_not_allowed")),
            ErrorKind::NotFound => ("invalid_request_error", Some("not_found")),
            ErrorKind::ModelNotFound => ("invalid_request_error", Some("model_not_found")),
            ErrorKind::TooLarge => ("invalid_request_error", Some("request_too_large")),
            ErrorKind::RateLimited => ("requests", Some("rate_limit_exceeded")),
            ErrorKind::BadGateway => ("server_error", Some("bad_gateway")),
            ErrorKind::GatewayTimeout => ("server_error", Some("timeout")),
            ErrorKind::RequestTimeout => ("invalid_request_error", Some("request_timeout")),
            ErrorKind::MethodNotAllowed => ("invalid_request_error", Some("method_not_allowed")),
            ErrorKind::UpgradeRequired => ("invalid_request_error", Some("upgrade_required")),
            ErrorKind::Overloaded => ("server_error", Some("overloaded")),
            ErrorKind::UriTooLong => ("invalid_request_error", Some("uri_too_long")),
            ErrorKind::HeadersTooLarge => ("invalid_request_error", Some("headers_too_large")),
            ErrorKind::CredentialsUnavailable => {
                ("server_error", Some("upstream_credentials_unavailable"))
            }
        }
    }
}

/// Google's `error.status` (a google.rpc.Code name) for an HTTP status: what Google's SDKs
/// and Gemini CLI read beside the code.
pub(crate) const fn google_status(status: u16) -> &'static str {
    match status {
        400 | 405 | 408 | 411 | 413 | 414 | 422 | 431 => "INVALID_ARGUMENT",
        401 => "UNAUTHENTICATED",
        403 => "PERMISSION_DENIED",
        404 => "NOT_FOUND",
        409 => "ABORTED",
        429 => "RESOURCE_EXHAUSTED",
        499 => "CANCELLED",
        501 => "UNIMPLEMENTED",
        503 | 529 => "UNAVAILABLE",
        504 => "DEADLINE_EXCEEDED",
        s if s >= 500 => "INTERNAL",
        _ => "UNKNOWN",
    }
}

/// An error answered by the gateway (not passed through from an upstream).
#[derive(Debug, Clone)]
pub(crate) struct ApiError {
    pub(crate) kind: ErrorKind,
    pub(crate) message: String,
}

impl ApiError {
    pub(crate) fn new(kind: ErrorKind, message: impl Into<String>) -> ApiError {
        ApiError {
            kind,
            message: message.into(),
        }
    }

    pub(crate) fn status(&self) -> StatusCode {
        self.kind.status()
    }

    /// The JSON body in `envelope`.
    pub(crate) fn body(&self, envelope: Envelope) -> Bytes {
        let v = match envelope {
            Envelope::Anthropic => serde_json::json!({
                "type": "error",
                "error": { "type": self.kind.anthropic_type(), "message": self.message },
            }),
            Envelope::Openai => {
                let (ty, code) = self.kind.openai_type_code();
                serde_json::json!({
                    "error": { "message": self.message, "type": ty, "param": null, "code": code },
                })
            }
            Envelope::Google => {
                let code = self.status().as_u16();
                serde_json::json!({
                    "error": { "code": code, "message": self.message, "status": google_status(code) },
                })
            }
        };
        Bytes::from(serde_json::to_vec(&v).expect("serializing a JSON value cannot fail"))
    }

    pub(crate) fn into_response(self, envelope: Envelope) -> Response<GatewayBody> {
        let mut resp = Response::new(full(self.body(envelope)));
        *resp.status_mut() = self.status();
        resp.headers_mut().insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        );
        resp
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn openai_envelope() {
        let e = ApiError::new(ErrorKind::ModelNotFound, "model `x` does not exist");
        let v: serde_json::Value = serde_json::from_slice(&e.body(Envelope::Openai)).unwrap();
        assert_eq!(v["error"]["message"], "model `x` does not exist");
        assert_eq!(v["error"]["type"], "invalid_request_error");
        assert_eq!(v["error"]["code"], "model_not_found");
        assert!(v["error"]["param"].is_null());
        assert_eq!(e.status(), StatusCode::NOT_FOUND);
    }

    #[test]
    fn anthropic_envelope() {
        let e = ApiError::new(ErrorKind::RateLimited, "slow down");
        let v: serde_json::Value = serde_json::from_slice(&e.body(Envelope::Anthropic)).unwrap();
        assert_eq!(v["type"], "error");
        assert_eq!(v["error"]["type"], "rate_limit_error");
        assert_eq!(v["error"]["message"], "slow down");
    }

    #[test]
    fn google_envelope() {
        let e = ApiError::new(ErrorKind::RateLimited, "slow down");
        let v: serde_json::Value = serde_json::from_slice(&e.body(Envelope::Google)).unwrap();
        assert_eq!(
            v,
            serde_json::json!({"error": {"code": 429, "message": "slow down", "status": "RESOURCE_EXHAUSTED"}})
        );
        assert_eq!(google_status(401), "UNAUTHENTICATED");
        assert_eq!(google_status(502), "INTERNAL");
    }
}
