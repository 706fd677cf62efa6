//! Proxying an API request: authenticate, read the few fields needed, apply limits, forward
//! to the model's targets in failover order, and pass the answer back.

pub mod client;
pub mod request;
mod stream;

use std::sync::atomic::Ordering::Relaxed;
use std::time::Instant;

use bytes::Bytes;
use http::{header, HeaderMap, HeaderName, HeaderValue, Method, Request, Response, StatusCode};
use http_body_util::{BodyExt, Full, Limited};
use hyper::body::Incoming;

pub use client::UpstreamUrl;

use crate::auth::AuthOutcome;
use crate::body::{full, GatewayBody};
use crate::completion::Completion;
use crate::dialect::Dialect;
use crate::error::{ApiError, ErrorKind};
use crate::state::Target;
use stream::AccountedStream;

/// Largest non-streaming upstream body the gateway buffers (to read its usage).
const MAX_UPSTREAM_BODY: usize = 64 * 1024 * 1024;

/// Client request headers forwarded upstream. An allow-list: the client's credentials
/// (`authorization`, `x-api-key`), cookies and hop-by-hop headers never leave the gateway,
/// and `accept-encoding` stays behind so upstream bodies arrive uncompressed for accounting.
const FORWARDED: [HeaderName; 9] = [
    header::CONTENT_TYPE,
    header::ACCEPT,
    header::USER_AGENT,
    HeaderName::from_static("anthropic-version"),
    HeaderName::from_static("anthropic-beta"),
    HeaderName::from_static("openai-organization"),
    HeaderName::from_static("openai-project"),
    HeaderName::from_static("openai-beta"),
    HeaderName::from_static("idempotency-key"),
];

const X_REQUEST_ID: HeaderName = HeaderName::from_static("x-request-id");
const X_GATEWAY_REQUEST_ID: HeaderName = HeaderName::from_static("x-gateway-request-id");

pub async fn handle(
    mut c: Completion,
    dialect: Dialect,
    req: Request<Incoming>,
) -> Response<GatewayBody> {
    let gw = c.gateway().clone();
    let (parts, body) = req.into_parts();

    let key = match gw.keys.authenticate(&parts.headers) {
        AuthOutcome::Open => None,
        AuthOutcome::Key(i, k) => {
            c.key = Some(i);
            Some(k)
        }
        AuthOutcome::Missing => {
            return fail(
                c,
                dialect,
                ErrorKind::Authentication,
                "missing API key: send `Authorization: Bearer <key>` or `x-api-key: <key>`",
            )
        }
        AuthOutcome::Invalid => {
            return fail(c, dialect, ErrorKind::Authentication, "invalid API key")
        }
    };
    if parts.method != Method::POST {
        return fail(
            c,
            dialect,
            ErrorKind::InvalidRequest,
            format!("{} requires POST", dialect.path()),
        );
    }

    let body = match read_body(&parts.headers, body, gw.max_body_bytes).await {
        Ok(b) => b,
        Err(e) => return fail(c, dialect, e.kind, e.message),
    };
    let head = match request::parse_head(&body) {
        Ok(h) => h,
        Err(e) => return fail(c, dialect, ErrorKind::InvalidRequest, e.to_string()),
    };
    c.stream = head.stream;
    let Some(&mi) = gw.model_index.get(&*head.model) else {
        let msg = format!("model {:?} does not exist", head.model);
        return fail(c, dialect, ErrorKind::ModelNotFound, msg);
    };
    c.model = Some(mi);
    if let Some(k) = key {
        if !k.may_use(mi) {
            let msg = format!("this API key may not use model {:?}", head.model);
            return fail(c, dialect, ErrorKind::Permission, msg);
        }
    }
    let model = &gw.models[mi];
    let targets = &model.targets[dialect.index()];
    if targets.is_empty() {
        let msg = format!(
            "model {:?} is not served on {}: its provider speaks another API",
            head.model,
            dialect.path()
        );
        return fail(c, dialect, ErrorKind::InvalidRequest, msg);
    }

    // Rate limits: key first, then model; a model refusal refunds the key's request.
    let key_limiter = key.and_then(|k| k.limiter.as_ref());
    if let Some(l) = key_limiter {
        if let Err(r) = l.admit() {
            gw.metrics.model(mi).rate_limited_key.fetch_add(1, Relaxed);
            return rate_limited(c, dialect, &r);
        }
    }
    if let Some(l) = &model.limiter {
        if let Err(r) = l.admit() {
            if let Some(kl) = key_limiter {
                kl.refund();
            }
            gw.metrics
                .model(mi)
                .rate_limited_model
                .fetch_add(1, Relaxed);
            return rate_limited(c, dialect, &r);
        }
    }

    forward(c, dialect, &parts.headers, &body, &head, targets).await
}

async fn forward(
    mut c: Completion,
    dialect: Dialect,
    client_headers: &HeaderMap,
    body: &Bytes,
    head: &request::RequestHead<'_>,
    targets: &[Target],
) -> Response<GatewayBody> {
    let gw = c.gateway().clone();
    let mi = c.model.expect("forward is called with a resolved model");
    let slot = gw.metrics.model(mi);
    let mut failure = (ErrorKind::BadGateway, "no upstream target answered");
    for (i, target) in targets.iter().enumerate() {
        let last = i + 1 == targets.len();
        if i > 0 {
            slot.failovers.fetch_add(1, Relaxed);
        }
        let req = upstream_request(
            target,
            client_headers,
            head.rewrite_model(body, &target.model_json),
            &c.request_id,
        );
        let start = Instant::now();
        c.upstream_start = Some(start);
        let resp = match tokio::time::timeout(gw.timeouts.first_byte, gw.client.request(req)).await
        {
            Ok(Ok(resp)) => resp,
            Ok(Err(e)) => {
                failure = if is_timeout(&e) {
                    slot.upstream_timeouts.fetch_add(1, Relaxed);
                    (ErrorKind::GatewayTimeout, "upstream connect timed out")
                } else {
                    slot.upstream_connect_errors.fetch_add(1, Relaxed);
                    (ErrorKind::BadGateway, "upstream connection failed")
                };
                continue;
            }
            Err(_) => {
                slot.upstream_timeouts.fetch_add(1, Relaxed);
                failure = (ErrorKind::GatewayTimeout, "upstream did not answer in time");
                continue;
            }
        };
        if resp.status().is_server_error() && !last {
            continue;
        }
        c.upstream_ttfb = Some(start.elapsed());
        return respond(c, dialect, resp).await;
    }
    fail(c, dialect, failure.0, failure.1)
}

fn upstream_request(
    target: &Target,
    client_headers: &HeaderMap,
    body: Bytes,
    request_id: &str,
) -> Request<Full<Bytes>> {
    let mut req = Request::new(Full::new(body));
    *req.method_mut() = Method::POST;
    *req.uri_mut() = target.uri.clone();
    let h = req.headers_mut();
    for name in &FORWARDED {
        for v in client_headers.get_all(name) {
            h.append(name.clone(), v.clone());
        }
    }
    if !h.contains_key(header::CONTENT_TYPE) {
        h.insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        );
    }
    if target.provider == crate::config::Provider::Anthropic && !h.contains_key("anthropic-version")
    {
        h.insert("anthropic-version", HeaderValue::from_static("2023-06-01"));
    }
    if let Some((name, value)) = &target.auth {
        h.insert(name.clone(), value.clone());
    }
    if let Ok(v) = HeaderValue::from_str(request_id) {
        h.insert(X_REQUEST_ID, v);
    }
    req
}

/// Passes the upstream response back: status, the headers clients rely on, and the body
/// (streamed through as it arrives, or buffered when it is a plain JSON body).
async fn respond(
    mut c: Completion,
    dialect: Dialect,
    resp: Response<Incoming>,
) -> Response<GatewayBody> {
    let gw = c.gateway().clone();
    let (parts, upstream_body) = resp.into_parts();
    let mut out = Response::new(full(Bytes::new()));
    *out.status_mut() = parts.status;
    let h = out.headers_mut();
    for (name, value) in &parts.headers {
        if passes_back(name) {
            h.append(name.clone(), value.clone());
        }
    }
    set_request_ids(h, &c.request_id);
    c.status = parts.status.as_u16();

    let is_sse = parts
        .headers
        .get(header::CONTENT_TYPE)
        .is_some_and(|v| v.as_bytes().starts_with(b"text/event-stream"));
    if is_sse {
        c.stream = true;
        *out.body_mut() = http_body_util::BodyExt::boxed(AccountedStream::new(
            upstream_body,
            c,
            gw.timeouts.idle,
        ));
        return out;
    }

    match read_upstream(upstream_body, gw.timeouts.idle).await {
        Ok(bytes) => {
            if parts.status.is_success() {
                c.usage = crate::usage::from_body(&bytes).unwrap_or_default();
            }
            *out.body_mut() = full(bytes);
            out
        }
        Err(kind) => {
            let msg = match kind {
                ErrorKind::GatewayTimeout => "upstream body stalled",
                _ => "upstream body could not be read",
            };
            fail(c, dialect, kind, msg)
        }
    }
}

async fn read_upstream(mut body: Incoming, idle: std::time::Duration) -> Result<Bytes, ErrorKind> {
    let mut first: Option<Bytes> = None;
    let mut buf = Vec::new();
    loop {
        let frame = match tokio::time::timeout(idle, body.frame()).await {
            Err(_) => return Err(ErrorKind::GatewayTimeout),
            Ok(None) => break,
            Ok(Some(Err(_))) => return Err(ErrorKind::BadGateway),
            Ok(Some(Ok(f))) => f,
        };
        let Ok(data) = frame.into_data() else {
            continue;
        };
        // The common case is one frame: keep it without copying.
        match first.take() {
            None if buf.is_empty() => first = Some(data),
            prev => {
                if let Some(p) = prev {
                    buf.extend_from_slice(&p);
                }
                buf.extend_from_slice(&data);
                if buf.len() > MAX_UPSTREAM_BODY {
                    return Err(ErrorKind::BadGateway);
                }
            }
        }
    }
    Ok(first.unwrap_or_else(|| Bytes::from(buf)))
}

fn passes_back(name: &HeaderName) -> bool {
    let n = name.as_str();
    n == "content-type"
        // Only set if an upstream compresses although we never ask it to; the client must
        // know, or it gets bytes it cannot read.
        || n == "content-encoding"
        || n == "retry-after"
        || n == "request-id"
        || n == "x-request-id"
        || n.starts_with("x-ratelimit-")
        || n.starts_with("anthropic-ratelimit-")
        || n.starts_with("openai-")
}

/// `x-gateway-request-id` is always ours; `x-request-id` is the upstream's when it sent one
/// (what SDKs report and providers' support asks for), ours otherwise.
pub fn set_request_ids(h: &mut HeaderMap, request_id: &str) {
    if let Ok(v) = HeaderValue::from_str(request_id) {
        if !h.contains_key(X_REQUEST_ID) {
            h.insert(X_REQUEST_ID, v.clone());
        }
        h.insert(X_GATEWAY_REQUEST_ID, v);
    }
}

struct BodyError {
    kind: ErrorKind,
    message: String,
}

async fn read_body(headers: &HeaderMap, body: Incoming, max: usize) -> Result<Bytes, BodyError> {
    let too_large = || BodyError {
        kind: ErrorKind::TooLarge,
        message: format!("request body is larger than {max} bytes"),
    };
    let declared = headers
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    if declared.is_some_and(|n| n > max as u64) {
        return Err(too_large());
    }
    match Limited::new(body, max).collect().await {
        Ok(c) => Ok(c.to_bytes()),
        Err(e) if e.is::<http_body_util::LengthLimitError>() => Err(too_large()),
        Err(_) => Err(BodyError {
            kind: ErrorKind::InvalidRequest,
            message: "request body could not be read".into(),
        }),
    }
}

fn is_timeout(e: &hyper_util::client::legacy::Error) -> bool {
    let mut source: Option<&(dyn std::error::Error + 'static)> = std::error::Error::source(e);
    while let Some(s) = source {
        if let Some(io) = s.downcast_ref::<std::io::Error>() {
            if io.kind() == std::io::ErrorKind::TimedOut {
                return true;
            }
        }
        source = s.source();
    }
    false
}

/// A gateway-made error in the route's dialect.
pub fn fail(
    mut c: Completion,
    dialect: Dialect,
    kind: ErrorKind,
    message: impl Into<String>,
) -> Response<GatewayBody> {
    let err = ApiError::new(kind, message);
    c.status = err.status().as_u16();
    c.error = Some(error_label(kind));
    let mut resp = err.into_response(dialect.is_anthropic());
    set_request_ids(resp.headers_mut(), &c.request_id);
    resp
}

fn rate_limited(
    c: Completion,
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
        ErrorKind::Internal => "internal",
    }
}
