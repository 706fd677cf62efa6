//! Refusing: every answer the gateway makes itself (an error in the route's dialect, the
//! access log told why) and the request ids every answer carries. The bottom step: the
//! others refuse through it.

use std::time::Duration;

use http::{header, HeaderMap, HeaderName, HeaderValue, Response, StatusCode};

use crate::body::GatewayBody;
use crate::buffer::BufferError;
use crate::dialect::Dialect;
use crate::error::{ApiError, ErrorKind};
use crate::metrics::UpstreamErrorKind;
use crate::settle::Settlement;
use crate::translate::TranslateError;

pub(crate) const X_REQUEST_ID: HeaderName = HeaderName::from_static("x-request-id");

const X_GATEWAY_REQUEST_ID: HeaderName = HeaderName::from_static("x-gateway-request-id");

/// Why a step refused a request before any upstream was called; [`Refused::answer`] says it
/// to the client.
pub(crate) enum Refused {
    /// A gateway-made error: its kind and message.
    Fail(ErrorKind, String),
    /// The request body did not arrive in time.
    BodyTimeout(Duration),
    /// The client went away mid-body.
    ClientGone,
    /// A rate limit said no.
    RateLimited(crate::ratelimit::Rejection),
    /// The rate limits' store cannot be asked and the policy is to refuse.
    LimitsUnavailable,
}

impl Refused {
    pub(crate) fn fail(kind: ErrorKind, message: impl Into<String>) -> Refused {
        Refused::Fail(kind, message.into())
    }

    /// The client's answer.
    pub(crate) fn answer(self, c: Settlement, dialect: Dialect) -> Response<GatewayBody> {
        match self {
            Refused::Fail(kind, msg) => fail(c, dialect, kind, msg),
            Refused::BodyTimeout(t) => {
                let msg = format!(
                    "the request body did not arrive within {} ms",
                    t.as_millis()
                );
                let mut r = fail(c, dialect, ErrorKind::RequestTimeout, msg);
                // The rest of the body may still come; the connection cannot be reused.
                r.headers_mut()
                    .insert(header::CONNECTION, HeaderValue::from_static("close"));
                r
            }
            Refused::ClientGone => client_gone(c, dialect),
            Refused::RateLimited(r) => rate_limited(c, dialect, &r),
            Refused::LimitsUnavailable => limits_unavailable(c, dialect),
        }
    }
}

/// A request translation refused: a 413 for a body over its node budget, else a 400.
pub(crate) fn refusal_kind(e: &TranslateError) -> ErrorKind {
    if e.too_large() {
        ErrorKind::TooLarge
    } else {
        ErrorKind::InvalidRequest
    }
}

/// `x-gateway-request-id` is always ours; `x-request-id` is the upstream's when it sent one
/// (what SDKs report and providers' support asks for), ours otherwise.
pub(crate) fn set_request_ids(h: &mut HeaderMap, request_id: &str) {
    if let Ok(v) = HeaderValue::from_str(request_id) {
        if !h.contains_key(X_REQUEST_ID) {
            h.insert(X_REQUEST_ID, v.clone());
        }
        h.insert(X_GATEWAY_REQUEST_ID, v);
    }
}

/// A gateway-made error in the route's dialect.
pub(crate) fn fail(
    mut c: Settlement,
    dialect: Dialect,
    kind: ErrorKind,
    message: impl Into<String>,
) -> Response<GatewayBody> {
    let err = ApiError::new(kind, message);
    c.status = err.status().as_u16();
    c.error = Some(error_label(kind));
    let mut resp = err.into_response(dialect.envelope());
    set_request_ids(resp.headers_mut(), &c.request_id);
    resp
}

/// 405 with `Allow`, in the route's dialect.
pub(crate) fn method_not_allowed(
    c: Settlement,
    dialect: Dialect,
    allow: &'static str,
    message: impl Into<String>,
) -> Response<GatewayBody> {
    let mut resp = fail(c, dialect, ErrorKind::MethodNotAllowed, message);
    resp.headers_mut()
        .insert(header::ALLOW, HeaderValue::from_static(allow));
    resp
}

/// The client left mid-body: recorded as nginx's 499. Nobody reads the answer, but should
/// the client still be there it gets a 400 in its envelope.
fn client_gone(mut c: Settlement, dialect: Dialect) -> Response<GatewayBody> {
    c.status = 499;
    c.error = Some("client_disconnected");
    let err = ApiError::new(ErrorKind::InvalidRequest, "the request body ended early");
    let mut resp = err.into_response(dialect.envelope());
    set_request_ids(resp.headers_mut(), &c.request_id);
    resp
}

/// `when_down = "closed"` while Redis cannot be asked: a 503 the client may retry soon.
fn limits_unavailable(c: Settlement, dialect: Dialect) -> Response<GatewayBody> {
    let msg = "rate limits cannot be checked right now (their store is unreachable); retry shortly";
    let mut resp = fail(c, dialect, ErrorKind::Overloaded, msg.to_owned());
    resp.headers_mut()
        .insert(http::header::RETRY_AFTER, http::HeaderValue::from(1u32));
    resp
}

fn rate_limited(
    c: Settlement,
    dialect: Dialect,
    r: &crate::ratelimit::Rejection,
) -> Response<GatewayBody> {
    let msg = format!(
        "rate limit exceeded ({} per minute); retry after {} s",
        r.what,
        r.retry_after.as_secs_f64().ceil()
    );
    let mut resp = fail(c, dialect, ErrorKind::RateLimited, msg);
    r.write_headers(resp.headers_mut());
    debug_assert_eq!(resp.status(), StatusCode::TOO_MANY_REQUESTS);
    resp
}

const fn error_label(kind: ErrorKind) -> &'static str {
    match kind {
        ErrorKind::InvalidRequest => "invalid_request",
        ErrorKind::Authentication => "authentication",
        ErrorKind::Permission => "permission",
        ErrorKind::NotFound => "not_found",
        ErrorKind::ModelNotFound => "model_not_found",
        ErrorKind::TooLarge => "too_large",
        ErrorKind::RateLimited => "rate_limited",
        ErrorKind::BadGateway => "bad_gateway",
        ErrorKind::GatewayTimeout => "gateway_timeout",
        ErrorKind::RequestTimeout => "body_read_timeout",
        ErrorKind::MethodNotAllowed => "method_not_allowed",
        ErrorKind::UpgradeRequired => "websocket_refused",
        ErrorKind::Overloaded => "overloaded",
        ErrorKind::UriTooLong => "uri_too_long",
        ErrorKind::HeadersTooLarge => "headers_too_large",
        ErrorKind::CredentialsUnavailable => "credentials_unavailable",
    }
}

/// The answer when a non-streaming upstream body could not be buffered (passthrough and
/// translated alike): a stall or read error counts as an upstream error of the model.
pub(crate) fn buffer_failed(
    c: Settlement,
    dialect: Dialect,
    e: BufferError,
) -> Response<GatewayBody> {
    let (kind, upstream) = match e {
        BufferError::Stalled | BufferError::Deadline => {
            (ErrorKind::GatewayTimeout, Some(UpstreamErrorKind::Timeout))
        }
        BufferError::Read => (ErrorKind::BadGateway, Some(UpstreamErrorKind::Read)),
        BufferError::TooLarge => (ErrorKind::BadGateway, None),
        BufferError::Overloaded => (ErrorKind::Overloaded, None),
    };
    if let (Some(u), Some(slot)) = (upstream, c.model_slot()) {
        slot.upstream_error(u);
    }
    fail(c, dialect, kind, e.to_string())
}

/// A client that asked for one JSON answer got a stream: relaying it would hand the client
/// what it cannot read (an SDK's JSON parser fed events), so it is refused, saying why.
pub(crate) fn stream_refused(c: Settlement, dialect: Dialect, ty: &str) -> Response<GatewayBody> {
    if let Some(slot) = c.model_slot() {
        slot.upstream_error(UpstreamErrorKind::Protocol);
    }
    let msg = format!(
        "the upstream answered a request for one JSON answer with a stream ({ty}); a stream is relayed only to a request that asks for one"
    );
    fail(c, dialect, ErrorKind::BadGateway, msg)
}
