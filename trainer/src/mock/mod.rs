//! The mock upstream: one in-process test double that speaks the four dialects of
//! PROTOCOLS.md (OpenAI chat completions, Anthropic messages, OpenAI responses, Google's
//! Gemini API).
//!
//! Bodies are deterministic: the same request under the same [`MockConfig`] always gets
//! the same bytes (except the per-request id headers), and rendered bodies are cached per
//! (route, streaming mode, model) so the mock never becomes the bottleneck of a benchmark
//! (requests with tools or asking for JSON output are rendered per request instead).
//!
//! # The Gemini API
//!
//! `POST /{v1beta|v1}/models/{MODEL}:generateContent` (JSON),
//! `:streamGenerateContent?alt=sse` (SSE: `data: {chunk}\r\n\r\n`, each chunk a whole
//! `GenerateContentResponse` with the next text fragment, the last with `finishReason:
//! "STOP"` and the final `usageMetadata`, the earlier ones the prompt count only; no
//! `[DONE]`; without `alt=sse` the same chunks as one JSON array, as Google sends them) and
//! `:countTokens` (`{"totalTokens": INPUT_TOKENS}`). The model is the path's: everything
//! said here of "the model" means it. The body is checked as Google checks it: a top-level
//! field Google does not know (`model` excepted, `stream` included) or no `contents` is a
//! 400 `INVALID_ARGUMENT`. The key (`x-goog-api-key`) is not checked; [`RecordedRequest`]
//! keeps it, and the query. Errors are Google's envelope `{"error":{"code","message",
//! "status"}}` (`RESOURCE_EXHAUSTED` for 429, with a `RetryInfo` detail; `UNAVAILABLE` for
//! 503, ...). No request id or rate-limit headers; JSON is `application/json;
//! charset=UTF-8`. The usage is [`expected_usage`]'s: `promptTokenCount` the input,
//! `candidatesTokenCount` the output, `totalTokenCount` their sum.
//!
//! # Azure OpenAI
//!
//! Azure's paths are served as OpenAI's: `/openai/deployments/{deployment}/chat/completions`
//! and `/openai/v1/chat/completions` as `/v1/chat/completions`, `/openai/responses` and
//! `/openai/v1/responses` as `/v1/responses`. Neither the `api-version` query nor the
//! `api-key` header is checked; [`RecordedRequest`] keeps both.
//!
//! # Google Vertex AI
//!
//! Vertex's publisher paths are served as Google's and Anthropic's own:
//! `/v1/projects/{p}/locations/{l}/publishers/google/models/{model}:{method}` as
//! `/v1/models/{model}:{method}`, and `.../publishers/anthropic/models/{model}:rawPredict` /
//! `:streamRawPredict` as `/v1/messages` with the path's model. A Claude body must have no
//! `model` and `"anthropic_version": "vertex-2023-10-16"` (else 400). The bearer token is not
//! checked (tests/sdk/cloud_mock.py verifies tokens); [`RecordedRequest`] keeps it.
//!
//! # HTTPS and new connections
//!
//! [`MockConfig::tls`] ([`MockTls::generate`]: a CA and a certificate for `127.0.0.1` and
//! `localhost`, made at start) serves HTTPS, as every cloud provider does; the client trusts
//! [`MockTls::ca_pem`] (the gateway: `upstream.extra_ca_file`). [`MockConfig::close_every`]
//! closes each connection after N responses, so the client opens new ones (a handshake each
//! on HTTPS); [`MockUpstream::connection_count`] and [`MockUpstream::handshake_count`] count
//! them.
//!
//! # Answers on demand
//!
//! Deterministic triggers in the request, so a test (or a gateway config, which picks the
//! upstream model name) chooses the answer without configuring the mock:
//!
//! - **Errors:** the model `mock-error-<status>` (status 400..=599, e.g. `mock-error-429`,
//!   `mock-error-529`; Gemini: in the path, `/v1beta/models/mock-error-429:generateContent`)
//!   is answered with that status and an error body in the route's envelope (`Retry-After:
//!   1` on 429), like [`MockConfig::fail_status`] for one model.
//! - **Tool calls:** a request with a non-empty `tools` list is answered with a call of its
//!   first tool (chat `tool_calls` / `finish_reason: "tool_calls"`, Anthropic `tool_use` /
//!   `stop_reason: "tool_use"`, Responses `function_call`, Gemini a `functionCall` part with
//!   `finishReason: "STOP"`, as Gemini has no tool finish reason; streamed too), its
//!   arguments every `required` property of the tool's schema set to `"mock <property>"`
//!   (Gemini: the first of `tools[].functionDeclarations[]`, its schema in `parameters` or
//!   `parametersJsonSchema`; none declared, e.g. only `googleSearch`: the ordinary text).
//!   Every Gemini `functionCall` (id [`GEMINI_CALL_ID`]) part carries `"thoughtSignature":
//!   gemini_thought_signature(name)` ([`gemini_thought_signature`]: a function of the name
//!   only, the mock keeps no state), so a test can check that the next request sends it
//!   back byte for byte. When the last turn holds tool results instead (chat `role: tool`
//!   messages, Anthropic `tool_result` blocks, Responses `function_call_output` and
//!   `custom_tool_call_output` items, Gemini `functionResponse` parts in the last content
//!   when it is the user's), the answer is the text [`TOOL_RESULT_PREFIX`] followed by the
//!   results, in full, joined with `"; "` (a Gemini result: its `response` object as the
//!   JSON text the client wrote) (see `conversation`).
//! - **Directives:** with tools offered and no tool results to quote, the text of the last
//!   user turn (chat: the last `role: user` message, a string or `text` parts; messages: the
//!   last user turn, a string or `text` blocks; responses: a string `input`, or the last
//!   user `message` item's `input_text` parts; Gemini: the `text` parts of the last content
//!   whose role is `user` or absent) may choose the answer instead of the first
//!   tool; the last well-formed directive counts (clients put their own context before the
//!   user's prompt), a malformed one is prose. Real agent clients need this: the first
//!   tool Claude Code offers is `Agent`, which spawns agents.
//!   - `[mock: text]`: the ordinary text answer, as if no tools were offered.
//!   - `[mock: call NAME {JSON}]`: a call of tool NAME with exactly that JSON object (its
//!     text as written) as arguments; `[mock: call NAME]` calls it with `{}`. NAME must be
//!     offered (chat `tools[].function.name`, Anthropic `tools[].name`, Responses `name` of
//!     a `function` tool, Gemini `tools[].functionDeclarations[].name`); else the answer is
//!     the text `mock: tool NAME is not offered`, so that a test fails visibly.
//!
//!   Without tools a request gets the ordinary text whatever it says (the cached fast path
//!   never reads the messages).
//! - **Structured output:** a request that asks for JSON gets, instead of the prose, a JSON
//!   text built from its schema (see `structured`): chat `response_format` `{"type":
//!   "json_schema", "json_schema": {"schema": S}}`, Anthropic `output_config.format` (or the
//!   beta's top-level `output_format`) `{"type": "json_schema", "schema": S}`, Responses
//!   `text.format` `{"type": "json_schema", "schema": S}`, Gemini `generationConfig`
//!   `responseJsonSchema` or `responseSchema` (snake_case too) with `responseMimeType:
//!   "application/json"` (or none; another mime type is prose). An object has every property
//!   of `properties`, in the schema's order; a string is `"mock <property>"` (an `enum`'s
//!   first value, a `const` its value), an integer or number its `minimum` or 1 (`1.0`), a
//!   boolean `true`, an array one item of `items`, `null` or an unknown type `null`; type
//!   names in any case (Gemini's `OBJECT`, `STRING`), a type list its first non-null, an
//!   `anyOf`/`oneOf` its first non-null branch. Gemini CLI's router schema gets
//!   `{"complexity_reasoning":"mock complexity_reasoning","complexity_score":1}`. A JSON
//!   object without a schema (chat and Responses `{"type": "json_object"}`, Gemini's mime type
//!   alone) gets `{"mock":"json"}`. The JSON is delivered as the text is: whole, or streamed in
//!   [`MockConfig::chunks`] deltas (fewer if it has fewer characters, at least one), one
//!   output token each. Rendered per request, never from the cache.
//!
//!   Precedence, first match wins: an error model (or [`MockConfig::fail_status`]); tool
//!   results (quoted as text, schema or not); a directive; a call of the first tool; then
//!   the ordinary answer, which is the schema's JSON when one is asked for, else the prose.
//!   So with tools offered the JSON comes with `[mock: text]`, or on Gemini when no function
//!   is declared; a call, quoted results and `mock: tool NAME is not offered` keep their
//!   form.
//! - **Capture:** [`MockConfig::record_dir`] (`trainer mock --record-dir DIR`) writes each
//!   request's body, as received, to `DIR/NNN.json` (tests/agents/capture.sh turns them into
//!   fixtures).
//! - **Cached tokens:** [`MockConfig::cached_tokens`] (`trainer mock --cached-tokens N`)
//!   reports N of the input tokens as cache reads: chat
//!   `prompt_tokens_details.cached_tokens`, responses `input_tokens_details.cached_tokens`,
//!   Gemini `usageMetadata.cachedContentTokenCount` (all part of the input count) and
//!   Anthropic `cache_read_input_tokens` (on top of `input_tokens`, as Anthropic counts).

mod answer;
mod body;
mod cache;
pub mod cli;
mod conversation;
mod converse;
mod dialect;
mod gemini;
mod handler;
mod json;
mod probe;
mod refusals;
mod render;
mod server;
mod structured;
mod text;
mod tls;
mod tool_call;

use std::net::SocketAddr;
use std::num::NonZeroU64;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

pub use conversation::TOOL_RESULT_PREFIX;
pub use gemini::{thought_signature as gemini_thought_signature, CALL_ID as GEMINI_CALL_ID};
pub use text::{expected_text, expected_usage, INPUT_TOKENS};
pub use tls::MockTls;

/// The model-name prefix that asks for an error: `mock-error-<status>`.
pub(crate) const ERROR_MODEL_PREFIX: &str = "mock-error-";

/// How the mock answers; one value per server.
#[derive(Clone, Debug)]
pub struct MockConfig {
    /// Delay before the response head (time to first token).
    pub first_byte_delay: Duration,
    /// Text deltas per streamed response, and words in a non-streamed text.
    pub chunks: usize,
    /// Delay between streamed events.
    pub chunk_delay: Duration,
    /// Write the SSE stream in pieces of N bytes, each its own body frame. The delta text
    /// holds multi-byte characters, so small N splits UTF-8 sequences.
    pub write_fragment: Option<usize>,
    /// Answer every request on the dialects' routes with this status and an error body in
    /// the route's dialect envelope.
    pub fail_status: Option<u16>,
    /// Streaming: send N events, then go silent without closing the response.
    pub stall_after_events: Option<usize>,
    /// Keep every received request for [`MockUpstream::recorded`].
    pub record: bool,
    /// Input tokens reported as cache reads (at most [`INPUT_TOKENS`]).
    pub cached_tokens: u64,
    /// Write each request's body to `DIR/NNN.json` (NNN: the request's number from 001,
    /// in arrival order), whole or not at all: written to a temporary name, then renamed.
    pub record_dir: Option<PathBuf>,
    /// Serve HTTPS with this identity (its CA is what the client must trust).
    pub tls: Option<Arc<MockTls>>,
    /// Close each connection after every N responses (`Connection: close` on the Nth), so a
    /// client opens new connections, each with its handshake on TLS.
    pub close_every: Option<NonZeroU64>,
}

impl MockConfig {
    /// The usage of an answer with `output` tokens under this config.
    pub(crate) fn tokens(&self, output: u64) -> answer::Tokens {
        answer::Tokens {
            input: INPUT_TOKENS,
            cached: self.cached_tokens.min(INPUT_TOKENS),
            output,
        }
    }
}

impl Default for MockConfig {
    fn default() -> Self {
        MockConfig {
            first_byte_delay: Duration::ZERO,
            chunks: 4,
            chunk_delay: Duration::ZERO,
            write_fragment: None,
            fail_status: None,
            stall_after_events: None,
            record: false,
            cached_tokens: 0,
            record_dir: None,
            tls: None,
            close_every: None,
        }
    }
}

/// One request as the mock received it.
#[derive(Clone, Debug)]
pub struct RecordedRequest {
    pub method: http::Method,
    /// The path, without the query.
    pub path: String,
    /// The query (`alt=sse`), if any.
    pub query: Option<String>,
    pub headers: http::HeaderMap,
    pub body: bytes::Bytes,
}

/// A running mock upstream bound to a local address.
pub struct MockUpstream {
    addr: SocketAddr,
    shared: Arc<handler::Shared>,
    handle: Option<server::ServerHandle>,
}

impl MockUpstream {
    /// Binds 127.0.0.1 on an ephemeral port.
    pub async fn start(config: MockConfig) -> std::io::Result<MockUpstream> {
        Self::start_on(SocketAddr::from(([127, 0, 0, 1], 0)), config).await
    }

    pub async fn start_on(addr: SocketAddr, config: MockConfig) -> std::io::Result<MockUpstream> {
        let listener = tokio::net::TcpListener::bind(addr).await?;
        let addr = listener.local_addr()?;
        let shared = Arc::new(handler::Shared::new(config));
        let handle = server::spawn(listener, Arc::clone(&shared));
        Ok(MockUpstream {
            addr,
            shared,
            handle: Some(handle),
        })
    }

    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// `http://127.0.0.1:PORT` (`https://` when serving TLS), without a trailing slash.
    pub fn base_url(&self) -> String {
        let scheme = if self.config().tls.is_some() {
            "https"
        } else {
            "http"
        };
        format!("{scheme}://{}", self.addr)
    }

    /// Connections accepted so far.
    pub fn connection_count(&self) -> u64 {
        self.shared
            .connections
            .load(std::sync::atomic::Ordering::Relaxed)
    }

    /// TLS handshakes completed so far (0 without TLS).
    pub fn handshake_count(&self) -> u64 {
        self.shared
            .handshakes
            .load(std::sync::atomic::Ordering::Relaxed)
    }

    /// The config this server answers with.
    pub fn config(&self) -> &MockConfig {
        self.shared.config()
    }

    /// Requests received so far, on any path, failed or not.
    pub fn request_count(&self) -> u64 {
        self.shared.request_count()
    }

    /// Every request received so far, in arrival order; empty unless `record` is set.
    pub fn recorded(&self) -> Vec<RecordedRequest> {
        self.shared.recorded()
    }

    /// Stops accepting and closes every connection, stalled streams included.
    pub async fn shutdown(mut self) {
        if let Some(handle) = self.handle.take() {
            handle.shutdown().await;
        }
    }
}

impl Drop for MockUpstream {
    fn drop(&mut self) {
        if let Some(handle) = self.handle.take() {
            handle.abort();
        }
    }
}
