//! One request in, one response out: routing, recording, failure modes, headers.

use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

use bytes::Bytes;
use http::header::{HeaderValue, CACHE_CONTROL, CONTENT_TYPE};
use http::{Method, Request, Response, StatusCode};
use http_body_util::BodyExt;
use hyper::body::Incoming;

use super::body::MockBody;
use super::cache::{self, AnswerCache, Rendered};
use super::conversation::{self, Turn, TOOL_RESULT_PREFIX};
use super::json::json_str;
use super::probe::probe;
use super::render::{self, Shape};
use super::tool_call::{self, ToolCall};
use super::{MockConfig, RecordedRequest, ERROR_MODEL_PREFIX};
use crate::dialect::Dialect;

const JSON: HeaderValue = HeaderValue::from_static("application/json");
const EVENT_STREAM: HeaderValue = HeaderValue::from_static("text/event-stream");

/// State shared by every connection of one server.
pub(crate) struct Shared {
    config: MockConfig,
    count: AtomicU64,
    recorded: Mutex<Vec<RecordedRequest>>,
    cache: AnswerCache,
}

impl Shared {
    pub(crate) fn new(config: MockConfig) -> Shared {
        Shared {
            cache: AnswerCache::new(config.clone()),
            config,
            count: AtomicU64::new(0),
            recorded: Mutex::new(Vec::new()),
        }
    }

    pub(crate) fn config(&self) -> &MockConfig {
        &self.config
    }

    pub(crate) fn request_count(&self) -> u64 {
        self.count.load(Ordering::Relaxed)
    }

    pub(crate) fn recorded(&self) -> Vec<RecordedRequest> {
        self.recorded
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    pub(crate) async fn handle(&self, req: Request<Incoming>) -> Response<MockBody> {
        let number = self.count.fetch_add(1, Ordering::Relaxed) + 1;
        let (parts, body) = req.into_parts();
        let dialect = match parts.method {
            Method::POST => Dialect::from_path(parts.uri.path()),
            _ => None,
        };
        // A body that fails mid-read is answered like malformed JSON.
        let body = body.collect().await.map(|b| b.to_bytes());
        if self.config.record {
            self.recorded
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .push(RecordedRequest {
                    method: parts.method.clone(),
                    path: parts.uri.path().to_owned(),
                    headers: parts.headers.clone(),
                    body: body.as_ref().cloned().unwrap_or_default(),
                });
        }
        if let (Some(dir), Ok(body)) = (&self.config.record_dir, &body) {
            // A capture aid, not part of the answer: a failed write is reported, not fatal.
            if let Err(e) = write_atomically(dir, number, body) {
                eprintln!("mock: recording request {number} in {}: {e}", dir.display());
            }
        }
        if !self.config.first_byte_delay.is_zero() {
            tokio::time::sleep(self.config.first_byte_delay).await;
        }
        let Some(dialect) = dialect else {
            return not_found(parts.method.as_str(), parts.uri.path());
        };
        let mut response = self.answer(dialect, body);
        dialect.add_upstream_headers(response.headers_mut(), number);
        response
    }

    fn answer(&self, dialect: Dialect, body: Result<Bytes, hyper::Error>) -> Response<MockBody> {
        if let Some(status) = self.config.fail_status {
            let status = StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
            let message = format!("mock upstream failure ({})", status.as_u16());
            return error(dialect, status, &message);
        }
        let body = match body {
            Ok(body) => body,
            Err(e) => {
                return error(
                    dialect,
                    StatusCode::BAD_REQUEST,
                    &format!("request body: {e}"),
                )
            }
        };
        let request = match probe(&body) {
            Ok(request) => request,
            Err(e) => return error(dialect, StatusCode::BAD_REQUEST, &e.to_string()),
        };
        if let Some(status) = requested_error(&request.model) {
            let message = format!(
                "mock upstream error {} (model {})",
                status.as_u16(),
                request.model
            );
            return error(dialect, status, &message);
        }
        let shape = Shape {
            dialect,
            stream: request.stream,
            include_usage: dialect == Dialect::Chat && request.stream && request.include_usage,
        };
        let rendered = if request.has_tools {
            match conversation::next_turn(dialect, &body) {
                Ok(turn) => self.render_turn(shape, &request.model, &turn),
                Err(e) => return error(dialect, StatusCode::BAD_REQUEST, &e),
            }
        } else {
            self.cache.get(shape, &request.model)
        };
        self.respond(rendered)
    }

    /// A turn of a conversation with tools: rendered per request, never cached.
    fn render_turn(&self, shape: Shape, model: &str, turn: &Turn) -> Rendered {
        let config = &self.config;
        match turn {
            Turn::CallTool { name, arguments } => {
                let call = ToolCall { name, arguments };
                let tokens = config.tokens(tool_call::FRAGMENTS);
                if shape.stream {
                    cache::stream(
                        config,
                        tool_call::stream_events(shape, model, &call, tokens),
                    )
                } else {
                    Rendered::Full(tool_call::full_body(shape.dialect, model, &call, tokens))
                }
            }
            Turn::AnswerResults(results) => {
                let joined = results.join("; ");
                self.render_text(shape, model, &[TOOL_RESULT_PREFIX, joined.as_str()])
            }
            Turn::Text => self.cache.get(shape, model),
            Turn::Say(text) => self.render_text(shape, model, &[text]),
        }
    }

    /// A text answer of `deltas`, one output token each.
    fn render_text(&self, shape: Shape, model: &str, deltas: &[&str]) -> Rendered {
        let config = &self.config;
        let tokens = config.tokens(deltas.len() as u64);
        if shape.stream {
            cache::stream(config, render::stream_events(shape, model, deltas, tokens))
        } else {
            Rendered::Full(render::full_body(shape.dialect, model, deltas, tokens))
        }
    }

    fn respond(&self, rendered: Rendered) -> Response<MockBody> {
        match rendered {
            Rendered::Full(bytes) => json_response(StatusCode::OK, bytes),
            Rendered::Stream(segments) => {
                let body = MockBody::stream(
                    segments,
                    self.config.write_fragment,
                    self.config.chunk_delay,
                    self.config.stall_after_events.is_some(),
                );
                let mut response = Response::new(body);
                let headers = response.headers_mut();
                headers.insert(CONTENT_TYPE, EVENT_STREAM);
                headers.insert(CACHE_CONTROL, HeaderValue::from_static("no-cache"));
                response
            }
        }
    }
}

/// `body` as `dir/NNN.json`, written to a dot-file first and renamed, so a reader never
/// sees half a body.
fn write_atomically(dir: &Path, number: u64, body: &[u8]) -> std::io::Result<()> {
    let name = format!("{number:03}.json");
    let tmp = dir.join(format!(".{name}.tmp"));
    std::fs::write(&tmp, body)?;
    std::fs::rename(&tmp, dir.join(name))
}

/// The status a `mock-error-<status>` model asks for (400..=599; anything else is a model).
fn requested_error(model: &str) -> Option<StatusCode> {
    let status: u16 = model.strip_prefix(ERROR_MODEL_PREFIX)?.parse().ok()?;
    (400..=599)
        .contains(&status)
        .then(|| StatusCode::from_u16(status).ok())
        .flatten()
}

fn json_response(status: StatusCode, bytes: Bytes) -> Response<MockBody> {
    let mut response = Response::new(MockBody::full(bytes));
    *response.status_mut() = status;
    response.headers_mut().insert(CONTENT_TYPE, JSON);
    response
}

fn error(dialect: Dialect, status: StatusCode, message: &str) -> Response<MockBody> {
    let mut response = json_response(status, dialect.error_body(status.as_u16(), message));
    if status == StatusCode::TOO_MANY_REQUESTS {
        response
            .headers_mut()
            .insert(http::header::RETRY_AFTER, HeaderValue::from_static("1"));
    }
    response
}

fn not_found(method: &str, path: &str) -> Response<MockBody> {
    let message = json_str(&format!("no route for {method} {path}"));
    let body = format!(
        r#"{{"error":{{"message":{message},"type":"invalid_request_error","param":null,"code":"unknown_url"}}}}"#
    );
    json_response(StatusCode::NOT_FOUND, Bytes::from(body))
}
