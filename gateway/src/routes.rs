//! Request routing: paths to handlers. Routes are matched by exact path, once per request;
//! Gemini's paths carry the model and the method (`/v1beta/models/{model}:{method}`).

use std::convert::Infallible;
use std::sync::Arc;
use std::time::Instant;

use bytes::Bytes;
use http::{header, HeaderValue, Request, Response};
use hyper::body::Incoming;

use crate::auth::{AuthOutcome, KeyEntry};
use crate::body::{full, GatewayBody};
use crate::conn::ConnState;
use crate::dialect::Dialect;
use crate::dialect::GeminiMethod;
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

/// `Upgrade: websocket` (any case, any position in a list).
fn is_websocket_upgrade(req: &Request<Incoming>) -> bool {
    req.headers()
        .get_all(header::UPGRADE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .any(|p| p.trim().eq_ignore_ascii_case("websocket"))
}

/// The main listener's service.
pub(crate) async fn route(
    gw: Arc<State>,
    req: Request<Incoming>,
    conn: Arc<ConnState>,
) -> Result<Response<GatewayBody>, Infallible> {
    let path = req.uri().path();
    if let Some(call) = crate::dialect::gemini_call(path, req.uri().query()) {
        let (op, route) = match call.method {
            GeminiMethod::CountTokens => (Op::CountTokens, Route::CountTokens),
            _ => (Op::Generate, Route::GenerateContent),
        };
        let id = request_id(&gw, &req);
        let mut c = Settlement::begin(gw, route, id);
        c.conn = Some(conn);
        return Ok(proxy::handle(c, Dialect::Gemini, op, req, Some(call)).await);
    }
    if let Some(which) = gemini_models_path(path, &req) {
        return Ok(gemini_models(gw, &req, which));
    }
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
    // Codex opens Responses over a WebSocket first and falls back to HTTP only on a 426.
    if path == "/v1/responses" && is_websocket_upgrade(&req) {
        let id = request_id(&gw, &req);
        let c = Settlement::begin(gw, Route::Responses, id);
        let msg = "WebSocket is not served here: the gateway serves Responses over HTTP (POST /v1/responses)";
        return Ok(proxy::fail(
            c,
            Dialect::Responses,
            ErrorKind::UpgradeRequired,
            msg,
        ));
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
        (Dialect::Gemini, _) => Route::GenerateContent,
    };
    let id = request_id(&gw, &req);
    let mut c = Settlement::begin(gw, route, id);
    c.conn = Some(conn);
    Ok(proxy::handle(c, dialect, op, req, None).await)
}

/// Gemini's model list (`/v1beta/models`, or `/v1/models` asked with a Google key, since
/// that path is OpenAI's otherwise) or one model (`Some(name)`).
fn gemini_models_path<'a>(path: &'a str, req: &Request<Incoming>) -> Option<Option<&'a str>> {
    if path == "/v1beta/models" || path == "/v1beta/models/" {
        return Some(None);
    }
    let google_key = req.headers().contains_key("x-goog-api-key")
        || crate::query::key(req.uri().query()).is_some();
    if path == "/v1/models" && google_key {
        return Some(None);
    }
    let name = path
        .strip_prefix("/v1beta/models/")
        .or_else(|| path.strip_prefix("/v1/models/"))?;
    (!name.is_empty() && !name.contains([':', '/'])).then_some(Some(name))
}

/// A model in Gemini's `Model` shape.
fn gemini_model(name: &str) -> serde_json::Value {
    serde_json::json!({
        "name": format!("models/{name}"),
        "baseModelId": name,
        "version": "gateway",
        "displayName": name,
        "supportedGenerationMethods": ["generateContent", "streamGenerateContent", "countTokens"],
    })
}

fn gemini_models(
    gw: Arc<State>,
    req: &Request<Incoming>,
    one: Option<&str>,
) -> Response<GatewayBody> {
    let id = request_id(&gw, req);
    let mut c = Settlement::begin(gw.clone(), Route::Models, id);
    if !is_get(req) {
        return proxy::method_not_allowed(
            c,
            Dialect::Gemini,
            GET_HEAD,
            "model listing requires GET",
        );
    }
    let key = match listing_key(&gw, req, &mut c) {
        Ok(k) => k,
        Err(()) => return listing_refused(c, Dialect::Gemini),
    };
    let visible = |i: usize| key.is_none_or(|k| k.may_use(i));
    let body = match one {
        Some(name) => {
            let name = name.strip_prefix("models/").unwrap_or(name);
            match gw.model_index.get(name) {
                Some(&i) if visible(i) => gemini_model(name),
                _ => {
                    let msg = format!("model {name:?} does not exist");
                    return proxy::fail(c, Dialect::Gemini, ErrorKind::ModelNotFound, msg);
                }
            }
        }
        None => {
            let models: Vec<_> = gw
                .models
                .iter()
                .enumerate()
                .filter(|(i, _)| visible(*i))
                .map(|(_, m)| gemini_model(&m.name))
                .collect();
            serde_json::json!({ "models": models })
        }
    };
    c.status = 200;
    let mut r = Response::new(full(Bytes::from(
        serde_json::to_vec(&body).expect("a JSON value serializes"),
    )));
    r.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    proxy::set_request_ids(r.headers_mut(), &c.request_id);
    r
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
    let body = match listing_key(&gw, req, &mut c) {
        Ok(None) => gw.models_json.clone(),
        Ok(Some(k)) => k.models_json.clone(),
        Err(()) => return listing_refused(c, Dialect::Chat),
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

/// A model listing's key: `Ok(None)` when the gateway is open; the key's index recorded.
fn listing_key<'g>(
    gw: &'g State,
    req: &Request<Incoming>,
    c: &mut Settlement,
) -> Result<Option<&'g KeyEntry>, ()> {
    match gw.keys.authenticate(req.headers(), req.uri().query()) {
        AuthOutcome::Open => Ok(None),
        AuthOutcome::Key(i, k) => {
            c.key = Some(i);
            Ok(Some(k))
        }
        AuthOutcome::Missing | AuthOutcome::Invalid => Err(()),
    }
}

fn listing_refused(c: Settlement, dialect: Dialect) -> Response<GatewayBody> {
    proxy::fail(
        c,
        dialect,
        ErrorKind::Authentication,
        "missing or invalid API key",
    )
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
