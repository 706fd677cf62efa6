//! Request routing: paths to handlers. Routes are matched by exact path, once per request.

use std::convert::Infallible;
use std::sync::Arc;
use std::time::Instant;

use bytes::Bytes;
use http::{header, HeaderValue, Request, Response};
use hyper::body::Incoming;

use crate::auth::AuthOutcome;
use crate::body::{full, GatewayBody};
use crate::conn::ConnState;
use crate::dialect::Dialect;
use crate::error::ErrorKind;
use crate::metrics::{Metrics, Route};
use crate::proxy::{self, Op};
use crate::settle::Settlement;
use crate::state::State;

/// `Allow` of the read-only routes.
const GET_HEAD: &str = "GET, HEAD";

fn is_get(req: &Request<Incoming>) -> bool {
    req.method() == http::Method::GET || req.method() == http::Method::HEAD
}

/// The main listener's service.
pub(crate) async fn route(
    gw: Arc<State>,
    req: Request<Incoming>,
    conn: Arc<ConnState>,
) -> Result<Response<GatewayBody>, Infallible> {
    let path = req.uri().path();
    // `/` answers like `/healthz`: clients probe it (Claude Code sends `HEAD /`).
    let read_only = matches!(path, "/" | "/healthz" | "/v1/models")
        || (path == "/metrics" && gw.metrics_on_main);
    if read_only && !is_get(&req) {
        let id = request_id(&gw, &req);
        let route = match path {
            "/" | "/healthz" => Route::Health,
            "/metrics" => Route::Metrics,
            _ => Route::Models,
        };
        let c = Settlement::begin(gw, route, id);
        let msg = format!("{path} requires GET");
        return Ok(proxy::method_not_allowed(c, Dialect::Chat, GET_HEAD, msg));
    }
    let (dialect, op) = match path {
        "/v1/chat/completions" => (Dialect::Chat, Op::Generate),
        "/v1/messages" => (Dialect::Messages, Op::Generate),
        "/v1/messages/count_tokens" => (Dialect::Messages, Op::CountTokens),
        "/v1/responses" => (Dialect::Responses, Op::Generate),
        "/" | "/healthz" => return Ok(health(&gw.metrics)),
        "/metrics" if gw.metrics_on_main => return Ok(metrics(&gw.metrics)),
        "/v1/models" => return Ok(models(gw, &req)),
        _ => {
            let id = request_id(&gw, &req);
            let c = Settlement::begin(gw, Route::NotFound, id);
            let msg = format!("no route for {} {}", req.method(), req.uri().path());
            return Ok(proxy::fail(c, Dialect::Chat, ErrorKind::NotFound, msg));
        }
    };
    let route = match (dialect, op) {
        (_, Op::CountTokens) => Route::CountTokens,
        (Dialect::Chat, _) => Route::ChatCompletions,
        (Dialect::Messages, _) => Route::Messages,
        (Dialect::Responses, _) => Route::Responses,
    };
    let id = request_id(&gw, &req);
    let mut c = Settlement::begin(gw, route, id);
    c.conn = Some(conn);
    Ok(proxy::handle(c, dialect, op, req).await)
}

/// The separate metrics listener's service (`server.metrics_listen`).
pub(crate) async fn metrics_only(
    m: Arc<Metrics>,
    req: Request<Incoming>,
) -> Result<Response<GatewayBody>, Infallible> {
    Ok(match req.uri().path() {
        "/metrics" | "/healthz" if !is_get(&req) => {
            let mut r = Response::new(full(Bytes::from_static(b"method not allowed\n")));
            *r.status_mut() = http::StatusCode::METHOD_NOT_ALLOWED;
            r.headers_mut()
                .insert(header::ALLOW, HeaderValue::from_static(GET_HEAD));
            r
        }
        "/metrics" => metrics(&m),
        "/healthz" => health(&m),
        _ => {
            let mut r = Response::new(full(Bytes::from_static(b"not found\n")));
            *r.status_mut() = http::StatusCode::NOT_FOUND;
            r
        }
    })
}

fn health(m: &Metrics) -> Response<GatewayBody> {
    let start = Instant::now();
    let mut r = Response::new(full(Bytes::from_static(b"ok\n")));
    r.headers_mut()
        .insert(header::CONTENT_TYPE, HeaderValue::from_static("text/plain"));
    m.request(Route::Health, None).record(200, start.elapsed());
    r
}

fn metrics(m: &Metrics) -> Response<GatewayBody> {
    let start = Instant::now();
    let mut r = Response::new(full(m.render()));
    r.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/plain; version=0.0.4; charset=utf-8"),
    );
    m.request(Route::Metrics, None).record(200, start.elapsed());
    r
}

fn models(gw: Arc<State>, req: &Request<Incoming>) -> Response<GatewayBody> {
    let id = request_id(&gw, req);
    let mut c = Settlement::begin(gw.clone(), Route::Models, id);
    let body = match gw.keys.authenticate(req.headers()) {
        AuthOutcome::Open => gw.models_json.clone(),
        AuthOutcome::Key(i, k) => {
            c.key = Some(i);
            k.models_json.clone()
        }
        AuthOutcome::Missing | AuthOutcome::Invalid => {
            return proxy::fail(
                c,
                Dialect::Chat,
                ErrorKind::Authentication,
                "missing or invalid API key",
            )
        }
    };
    c.status = 200;
    let mut r = Response::new(full(body));
    r.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    proxy::set_request_ids(r.headers_mut(), &c.request_id);
    r
}

/// The client's `x-request-id` when it is a sane token, else a fresh one.
fn request_id(gw: &State, req: &Request<Incoming>) -> Arc<str> {
    match req.headers().get("x-request-id").map(HeaderValue::as_bytes) {
        Some(v) if (1..=128).contains(&v.len()) && v.iter().all(|b| b.is_ascii_graphic()) => {
            // All visible ASCII, so this is valid UTF-8.
            std::str::from_utf8(v).map_or_else(|_| gw.next_request_id(), Arc::from)
        }
        _ => gw.next_request_id(),
    }
}
