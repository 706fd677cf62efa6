//! Admission: what a request must pass before any upstream is called: a key the gateway
//! knows, a body within bounds and in time, a head naming a model the key may use, a
//! translation that can be made, and the rate limits. Each step says why it refuses
//! ([`Refused`]); the handler answers.

use std::sync::atomic::Ordering::Relaxed;
use std::time::Duration;

use bytes::Bytes;
use http::{header, HeaderMap};
use http_body_util::{BodyExt, Limited};
use hyper::body::Incoming;
use serde_json::Value;

use super::offload::{blocking_if, OFF_RUNTIME_BYTES};
use super::refuse::{refusal_kind, Refused};
use super::request::{self, GeminiCall, RequestHead};
use crate::auth::{AuthOutcome, KeyEntry};
use crate::dialect::Dialect;
use crate::error::ErrorKind;
use crate::ratelimit::{Refusal, Scope};
use crate::settle::Settlement;
use crate::state::{ModelEntry, State, Target};
use crate::translate::{self, hub, TranslateError};

/// The client's key, when the gateway has keys (its index goes to the settlement).
pub(crate) fn authenticate<'g>(
    c: &mut Settlement,
    gw: &'g State,
    dialect: Dialect,
    parts: &http::request::Parts,
) -> Result<Option<&'g KeyEntry>, Refused> {
    match gw.keys.authenticate(&parts.headers, parts.uri.query()) {
        AuthOutcome::Open => Ok(None),
        AuthOutcome::Key(i, k) => {
            c.key = Some(i);
            Ok(Some(k))
        }
        AuthOutcome::Missing => {
            let msg = if dialect == Dialect::Gemini {
                "missing API key: send `x-goog-api-key: <key>`, `?key=<key>` or `Authorization: Bearer <key>`"
            } else {
                "missing API key: send `Authorization: Bearer <key>` or `x-api-key: <key>`"
            };
            Err(Refused::fail(ErrorKind::Authentication, msg))
        }
        AuthOutcome::Invalid => Err(Refused::fail(ErrorKind::Authentication, "invalid API key")),
    }
}

/// The whole body, within the size and time bounds.
pub(crate) async fn body(
    gw: &State,
    headers: &HeaderMap,
    body: Incoming,
) -> Result<Bytes, Refused> {
    match read_body(headers, body, gw.max_body_bytes, gw.timeouts.body_read).await {
        Ok(b) => Ok(b),
        Err(RequestBodyError::ClientGone) => Err(Refused::ClientGone),
        Err(RequestBodyError::Timeout(t)) => Err(Refused::BodyTimeout(t)),
        Err(e) => Err(Refused::fail(e.kind(), e.to_string())),
    }
}

/// The request's head, and its JSON tree where translation will read it.
///
/// A body that translation will read is read once, whole, the head from it too; others
/// get the head scan, cheaper for small bodies. The model decides, guessed before the
/// head is read (from the path for Gemini).
pub(crate) fn head<'a>(
    gw: &State,
    dialect: Dialect,
    body: &'a Bytes,
    gemini: Option<&'a GeminiCall>,
) -> Result<(RequestHead<'a>, Option<Value>), Refused> {
    let translates = |m: &str| {
        gw.model_index
            .get(m)
            .is_some_and(|&mi| gw.models[mi].translates[dialect.index()])
    };
    let whole = gw.translating[dialect.index()]
        && match gemini {
            Some(call) => translates(&call.model),
            None => request::model_hint(body).is_none_or(translates),
        };
    // Reading a big body whole, then translating it, takes milliseconds: off the worker.
    let big = body.len() >= OFF_RUNTIME_BYTES;
    blocking_if(big && whole, || request::parse(body, gemini, whole))
        .map_err(|e| Refused::fail(ErrorKind::InvalidRequest, e.to_string()))
}

/// The model the head names, when it exists and the key may use it.
pub(crate) fn model(
    c: &mut Settlement,
    gw: &State,
    key: Option<&KeyEntry>,
    head: &RequestHead<'_>,
) -> Result<usize, Refused> {
    let Some(&mi) = gw.model_index.get(&*head.model) else {
        let msg = format!("model {:?} does not exist", head.model);
        return Err(Refused::fail(ErrorKind::ModelNotFound, msg));
    };
    c.model = Some(mi);
    if let Some(k) = key {
        if !k.may_use(mi) {
            let msg = format!("this API key may not use model {:?}", head.model);
            return Err(Refused::fail(ErrorKind::Permission, msg));
        }
    }
    Ok(mi)
}

/// The request in hub form where some target translates it (or why it cannot be, where a
/// passthrough target may still serve it); `None` for a passthrough-only model.
///
/// It is decoded once, here, so a field that cannot be translated is refused before any
/// rate limit is charged or upstream is called.
pub(crate) fn translation(
    dialect: Dialect,
    model: &ModelEntry,
    targets: &[Target],
    head: &RequestHead<'_>,
    value: Option<Value>,
    gemini: Option<&GeminiCall>,
    big: bool,
) -> Result<Option<Result<hub::Request, TranslateError>>, Refused> {
    if !model.translates[dialect.index()] {
        // A passthrough model of a translating dialect: the tree is not kept for the answer.
        drop(value);
        return Ok(None);
    }
    let first = targets.iter().find(|t| t.translates(dialect));
    let first = match first {
        Some(t) => translate::FirstTarget {
            upstream: t.upstream,
            reasoning: t.reasoning,
            sampling: t.sampling,
        },
        // (`translates` says some target does.)
        None => translate::FirstTarget {
            upstream: dialect.upstream(),
            reasoning: false,
            sampling: translate::sampling::Rule::of(dialect.upstream(), "", None),
        },
    };
    let decoded = blocking_if(big, || match value {
        Some(v) => translate::decode_request_value(dialect, first, v, model.policy),
        None => translate::decode_request_text(dialect, first, head.text, model.policy),
    });
    match decoded {
        Ok(mut h) => {
            if let Some(call) = gemini {
                // Gemini says in its path what others say in the body.
                h.stream = head.stream;
                h.view.json_array_stream =
                    call.method == (request::GeminiMethod::Stream { sse: false });
            }
            Ok(Some(Ok(h)))
        }
        Err(e) if targets.iter().all(|t| t.translates(dialect)) => {
            Err(Refused::fail(refusal_kind(&e), e.to_string()))
        }
        // A passthrough target may still serve it.
        Err(e) => Ok(Some(Err(e))),
    }
}

/// Rate limits: the key's and the model's, both or neither charged.
pub(crate) async fn admit(
    gw: &State,
    key: Option<&KeyEntry>,
    model: &ModelEntry,
    mi: usize,
) -> Result<(), Refused> {
    let key_limiter = key.and_then(|k| k.limiter.as_ref());
    match gw.limits.admit(key_limiter, model.limiter.as_ref()).await {
        Ok(()) => Ok(()),
        Err(Refusal::Limited(r)) => {
            let slot = gw.metrics.model(mi);
            let counter = match r.scope {
                Scope::Key => &slot.rate_limited_key,
                Scope::Model => &slot.rate_limited_model,
            };
            counter.fetch_add(1, Relaxed);
            Err(Refused::RateLimited(r))
        }
        Err(Refusal::Unavailable) => Err(Refused::LimitsUnavailable),
    }
}

/// Why a client body could not be read.
#[derive(Debug, thiserror::Error)]
enum RequestBodyError {
    #[error("request body is larger than {0} bytes")]
    TooLarge(usize),
    #[error("request body did not arrive within {0:?}")]
    Timeout(Duration),
    /// The client went away mid-body: nobody is left to answer.
    #[error("client disconnected")]
    ClientGone,
    #[error("request body could not be read (malformed framing)")]
    Malformed,
}

impl RequestBodyError {
    fn kind(&self) -> ErrorKind {
        match self {
            RequestBodyError::TooLarge(_) => ErrorKind::TooLarge,
            RequestBodyError::Timeout(_) => ErrorKind::RequestTimeout,
            RequestBodyError::ClientGone | RequestBodyError::Malformed => ErrorKind::InvalidRequest,
        }
    }
}

/// Reads the whole body within `max` bytes and `timeout` (for the whole body, so a
/// trickle is cut as surely as a stall).
async fn read_body(
    headers: &HeaderMap,
    body: Incoming,
    max: usize,
    timeout: Duration,
) -> Result<Bytes, RequestBodyError> {
    let declared = headers
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    if declared.is_some_and(|n| n > max as u64) {
        return Err(RequestBodyError::TooLarge(max));
    }
    let declared = declared.map_or(0, |n| n as usize);
    match tokio::time::timeout(timeout, collect(Limited::new(body, max), declared)).await {
        Err(_) => Err(RequestBodyError::Timeout(timeout)),
        Ok(Ok(b)) => Ok(b),
        Ok(Err(e)) if e.is::<http_body_util::LengthLimitError>() => {
            Err(RequestBodyError::TooLarge(max))
        }
        Ok(Err(e)) if client_left(&*e) => Err(RequestBodyError::ClientGone),
        Ok(Err(_)) => Err(RequestBodyError::Malformed),
    }
}

/// The body's bytes in one buffer. A body that came in one frame is that frame; others are
/// copied frame by frame into a buffer of the declared length, each frame freed as it is
/// copied: collecting every frame first and joining them held the body twice (an 8 MB body
/// cost +15 MiB passed through, issue 49).
async fn collect(
    mut body: Limited<Incoming>,
    declared: usize,
) -> Result<Bytes, Box<dyn std::error::Error + Send + Sync>> {
    let mut first: Option<Bytes> = None;
    let mut joined = bytes::BytesMut::new();
    while let Some(frame) = body.frame().await {
        let Ok(data) = frame?.into_data() else {
            continue;
        };
        match first.take() {
            None if joined.is_empty() => first = Some(data),
            Some(f) => {
                joined.reserve(declared.max(f.len() + data.len()));
                joined.extend_from_slice(&f);
                joined.extend_from_slice(&data);
            }
            None => joined.extend_from_slice(&data),
        }
    }
    Ok(match first {
        Some(f) => f,
        None => joined.freeze(),
    })
}

/// Whether a body read failed because the client went away (the connection ended or was
/// reset mid-body), rather than because the body's framing was bad.
fn client_left(e: &(dyn std::error::Error + 'static)) -> bool {
    let mut source = Some(e);
    while let Some(s) = source {
        if let Some(h) = s.downcast_ref::<hyper::Error>() {
            if h.is_incomplete_message() {
                return true;
            }
        }
        if let Some(io) = s.downcast_ref::<std::io::Error>() {
            use std::io::ErrorKind as K;
            return matches!(
                io.kind(),
                K::UnexpectedEof | K::ConnectionReset | K::ConnectionAborted | K::BrokenPipe
            );
        }
        source = s.source();
    }
    false
}
