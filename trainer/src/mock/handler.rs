//! One request in, one response out: routing, recording, failure modes, headers.

use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

use bytes::Bytes;
use http::header::{HeaderValue, CACHE_CONTROL, CONTENT_TYPE};
use http::{Method, Request, Response, StatusCode};
use http_body_util::BodyExt;
use hyper::body::Incoming;

use super::answer::ToolCall;
use super::body::MockBody;
use super::cache::{self, AnswerCache, Rendered};
use super::conversation::{self, Turn, TOOL_RESULT_PREFIX};
use super::gemini;
use super::json::json_str;
use super::probe::probe;
use super::render::{self, Shape};
use super::structured::{self, Format};
use super::tool_call;
use super::{MockConfig, RecordedRequest, ERROR_MODEL_PREFIX};
use crate::dialect::{Dialect, GeminiCall, GeminiMethod};

const EVENT_STREAM: HeaderValue = HeaderValue::from_static("text/event-stream");

/// State shared by every connection of one server.
pub(crate) struct Shared {
    config: MockConfig,
    count: AtomicU64,
    /// Connections accepted, and TLS handshakes completed (server.rs counts both).
    pub(crate) connections: AtomicU64,
    pub(crate) handshakes: AtomicU64,
    recorded: Mutex<Vec<RecordedRequest>>,
    cache: AnswerCache,
}

impl Shared {
    pub(crate) fn new(config: MockConfig) -> Shared {
        Shared {
            cache: AnswerCache::new(config.clone()),
            config,
            count: AtomicU64::new(0),
            connections: AtomicU64::new(0),
            handshakes: AtomicU64::new(0),
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
        let path = parts.uri.path();
        let dialect = match parts.method {
            Method::POST => Dialect::from_path(path),
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
                    path: path.to_owned(),
                    query: parts.uri.query().map(str::to_owned),
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
        if parts.method == Method::POST {
            if let Some((model, stream)) = super::converse::call(path) {
                return self.answer_converse(&model, stream, body);
            }
        }
        let Some(dialect) = dialect else {
            return not_found(parts.method.as_str(), path);
        };
        let gemini = GeminiCall::parse(path).map(|call| (call, alt_sse(parts.uri.query())));
        let vertex_model = crate::dialect::vertex_anthropic_model(path);
        // What the real API refuses (issue 51): `refusals`.
        if let Some(why) = (body.as_ref().ok()).and_then(|b| {
            super::refusals::refused(dialect, gemini.as_ref().map(|g| &g.0), vertex_model, b)
        }) {
            return error(dialect, StatusCode::BAD_REQUEST, &why);
        }
        let mut response = self.answer(dialect, gemini, vertex_model, body);
        dialect.add_upstream_headers(response.headers_mut(), number);
        response
    }

    /// `gemini`: the call a Gemini path names, and whether the query asks for `alt=sse`;
    /// `vertex_model`: the model of a Claude-on-Vertex path.
    fn answer(
        &self,
        dialect: Dialect,
        gemini: Option<(GeminiCall<'_>, bool)>,
        vertex_model: Option<&str>,
        body: Result<Bytes, hyper::Error>,
    ) -> Response<MockBody> {
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
        if let Some((call, alt_sse)) = gemini {
            return self.answer_gemini(call, alt_sse, &body);
        }
        let request = match probe(&body, vertex_model) {
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
            json_array: false,
        };
        let format = request.format.format(dialect);
        self.answer_shape(shape, &request.model, request.has_tools, format, &body)
    }

    /// A Bedrock Converse call (the model is the path's): the usual text and usage in
    /// Converse's JSON, or its binary event stream. Tools are not answered with calls.
    fn answer_converse(
        &self,
        model: &str,
        stream: bool,
        body: Result<Bytes, hyper::Error>,
    ) -> Response<MockBody> {
        let status = match (self.config.fail_status, &body) {
            (Some(status), _) => Some((status, "mock upstream failure".to_owned())),
            (None, Err(e)) => Some((400, format!("request body: {e}"))),
            (None, Ok(b)) => match (super::converse::check_request(b), requested_error(model)) {
                (Err(e), _) => Some((400, e)),
                (Ok(()), Some(s)) => {
                    Some((s.as_u16(), format!("mock upstream error (model {model})")))
                }
                (Ok(()), None) => None,
            },
        };
        if let Some((status, message)) = status {
            let status = StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
            let mut response = Response::new(MockBody::full(super::converse::error_body(&message)));
            *response.status_mut() = status;
            let h = response.headers_mut();
            h.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
            h.insert(
                "x-amzn-errortype",
                HeaderValue::from_static(super::converse::error_type(status.as_u16())),
            );
            return response;
        }
        let config = &self.config;
        let deltas: Vec<&str> = super::text::deltas(config.chunks).collect();
        let tokens = config.tokens(deltas.len() as u64);
        if !stream {
            let mut response =
                Response::new(MockBody::full(super::converse::full_body(&deltas, tokens)));
            response
                .headers_mut()
                .insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
            return response;
        }
        let segments = match cache::stream(config, super::converse::stream_events(&deltas, tokens))
        {
            Rendered::Stream(segments) => segments,
            Rendered::Full(bytes) => vec![bytes].into(),
        };
        let body = MockBody::stream(
            segments,
            config.write_fragment,
            config.chunk_delay,
            config.stall_after_events.is_some(),
        );
        let mut response = Response::new(body);
        response.headers_mut().insert(
            CONTENT_TYPE,
            HeaderValue::from_static(super::converse::EVENT_STREAM),
        );
        response
    }

    /// A Gemini call: the model is the path's, the body is checked as Google checks it.
    fn answer_gemini(
        &self,
        call: GeminiCall<'_>,
        alt_sse: bool,
        body: &Bytes,
    ) -> Response<MockBody> {
        let dialect = Dialect::Gemini;
        let checked = match call.method {
            GeminiMethod::CountTokens => {
                gemini::check_count_tokens(body).map(|()| Default::default())
            }
            _ => gemini::check_request(body),
        };
        let checked = match checked {
            Ok(checked) => checked,
            Err(e) => return error(dialect, StatusCode::BAD_REQUEST, &e),
        };
        if let Some(status) = requested_error(call.model) {
            let message = format!(
                "mock upstream error {} (model {})",
                status.as_u16(),
                call.model
            );
            return error(dialect, status, &message);
        }
        let stream = match call.method {
            GeminiMethod::CountTokens => {
                return json_response(dialect, StatusCode::OK, gemini::count_tokens_body())
            }
            GeminiMethod::GenerateContent => false,
            GeminiMethod::StreamGenerateContent => true,
        };
        let shape = Shape {
            dialect,
            stream,
            include_usage: false,
            json_array: stream && !alt_sse,
        };
        let format = checked
            .generation_config
            .and_then(structured::gemini_format);
        self.answer_shape(shape, call.model, checked.has_tools, format, body)
    }

    /// The answer to a well-formed request: cached, unless it offers tools or asks for JSON
    /// output (`format`).
    fn answer_shape(
        &self,
        shape: Shape,
        model: &str,
        has_tools: bool,
        format: Option<Format<'_>>,
        body: &[u8],
    ) -> Response<MockBody> {
        let rendered = if has_tools {
            match conversation::next_turn(shape.dialect, body) {
                Ok(turn) => self.render_turn(shape, model, &turn, format.as_ref()),
                Err(e) => return error(shape.dialect, StatusCode::BAD_REQUEST, &e),
            }
        } else {
            self.ordinary(shape, model, format.as_ref())
        };
        self.respond(shape, rendered)
    }

    /// The ordinary answer: the cached prose, or the JSON a format asks for (rendered per
    /// request, never cached: the cache is keyed by shape and model only).
    fn ordinary(&self, shape: Shape, model: &str, format: Option<&Format<'_>>) -> Rendered {
        match format {
            None => self.cache.get(shape, model),
            Some(format) => {
                let text = format.text();
                let deltas = structured::deltas(&text, self.config.chunks);
                self.render_text(shape, model, &deltas)
            }
        }
    }

    /// A turn of a conversation with tools: rendered per request, never cached. Tool calls,
    /// quoted results and what the mock says keep their form under a JSON `format`; only
    /// the ordinary text turns into JSON.
    fn render_turn(
        &self,
        shape: Shape,
        model: &str,
        turn: &Turn,
        format: Option<&Format<'_>>,
    ) -> Rendered {
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
            Turn::Text => self.ordinary(shape, model, format),
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

    fn respond(&self, shape: Shape, rendered: Rendered) -> Response<MockBody> {
        match rendered {
            Rendered::Full(bytes) => json_response(shape.dialect, StatusCode::OK, bytes),
            Rendered::Stream(segments) => {
                let body = MockBody::stream(
                    segments,
                    self.config.write_fragment,
                    self.config.chunk_delay,
                    self.config.stall_after_events.is_some(),
                );
                let mut response = Response::new(body);
                let headers = response.headers_mut();
                if shape.json_array {
                    headers.insert(CONTENT_TYPE, shape.dialect.json_content_type());
                } else {
                    headers.insert(CONTENT_TYPE, EVENT_STREAM);
                    headers.insert(CACHE_CONTROL, HeaderValue::from_static("no-cache"));
                }
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

/// Whether a query asks for `alt=sse` (Gemini's SSE streams).
fn alt_sse(query: Option<&str>) -> bool {
    query.is_some_and(|q| q.split('&').any(|pair| pair == "alt=sse"))
}

/// The status a `mock-error-<status>` model asks for (400..=599; anything else is a model).
fn requested_error(model: &str) -> Option<StatusCode> {
    let status: u16 = model.strip_prefix(ERROR_MODEL_PREFIX)?.parse().ok()?;
    (400..=599)
        .contains(&status)
        .then(|| StatusCode::from_u16(status).ok())
        .flatten()
}

fn json_response(dialect: Dialect, status: StatusCode, bytes: Bytes) -> Response<MockBody> {
    let mut response = Response::new(MockBody::full(bytes));
    *response.status_mut() = status;
    response
        .headers_mut()
        .insert(CONTENT_TYPE, dialect.json_content_type());
    response
}

fn error(dialect: Dialect, status: StatusCode, message: &str) -> Response<MockBody> {
    let body = dialect.error_body(status.as_u16(), message);
    let mut response = json_response(dialect, status, body);
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
    json_response(Dialect::Chat, StatusCode::NOT_FOUND, Bytes::from(body))
}
