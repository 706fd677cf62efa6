//! The compiled gateway: everything the hot path needs, built once from the config.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http::{HeaderName, HeaderValue, Uri};

use crate::access_log::AccessLog;
use crate::auth::{Keys, UnsetSecret};
use crate::buffer::BufferBudget;
use crate::client::{self, ClientError, UpstreamClient};
use crate::config::{self, Config};
use crate::dialect::{Dialect, Provider, Upstream};
use crate::headers::ForwardError;
use crate::metrics::Metrics;
use crate::providers::gemini::GeminiUris;
use crate::providers::{home, Quirks, RouteInput, Routes, UpstreamAuth};
use crate::ratelimit::{Limiter, Limits, RedisError, Scope};
use crate::translate::policy::{BuiltinTools, Policy};
use crate::translate::sampling::Rule;
use crate::upstream_url::{UpstreamUrl, UrlError};

/// One upstream target for one dialect, with everything precomputed.
pub(crate) struct Target {
    pub(crate) uri: Uri,
    /// The `Host` header for `uri` (`headers::host`), sent so the client need not format it.
    pub(crate) host: Option<HeaderValue>,
    /// The upstream model name (for translated bodies).
    pub(crate) model: Box<str>,
    /// The upstream model name, already JSON-encoded for splicing into bodies.
    pub(crate) model_json: Bytes,
    /// The credential sent upstream (shared by the target's copies, one per client dialect).
    pub(crate) auth: Arc<UpstreamAuth>,
    pub(crate) provider: Provider,
    /// The API this target is sent: the client's own (passthrough, the fast path) or the
    /// provider's, the request and answer being translated (`crate::translate`).
    pub(crate) upstream: Upstream,
    /// The upstream model takes a reasoning effort (`reasoning = true`).
    pub(crate) reasoning: bool,
    /// How requests are shaped for its provider (`crate::providers`).
    pub(crate) quirks: Quirks,
    /// Its model's sampling rule on `upstream` (TRANSLATION.md's table, or `sampling = "..."`
    /// over it), compiled here once rather than from the model id on each request.
    pub(crate) sampling: Rule,
    /// A Gemini upstream's URIs, one per method (`uri` is `generateContent`'s).
    pub(crate) gemini: Option<Arc<GeminiUris>>,
    /// Where streamed requests go when that is another URI than `uri` (Claude on Vertex:
    /// `:streamRawPredict`, `uri` being `:rawPredict`).
    pub(crate) stream_uri: Option<Uri>,
}

impl Target {
    /// Whether a request of `client` dialect is translated for this target.
    pub(crate) fn translates(&self, client: Dialect) -> bool {
        self.upstream != client
    }
}

pub(crate) struct ModelEntry {
    pub(crate) name: Arc<str>,
    pub(crate) limiter: Option<Limiter>,
    /// Every target, once per client dialect (indexed by `Dialect::index`), in failover
    /// order; each knows whether it passes that dialect through or translates it.
    pub(crate) targets: [Vec<Target>; Dialect::COUNT],
    /// Per client dialect: whether any target translates it (the request is then parsed
    /// up front, so a field that cannot be translated is refused before any upstream).
    pub(crate) translates: [bool; Dialect::COUNT],
    /// `max_tokens` for an Anthropic target when a translated client sent none.
    pub(crate) default_max_tokens: u64,
    /// What translation drops or refuses for this model.
    pub(crate) policy: Policy,
    /// Client headers forwarded on top of the fixed allow-list (`forward_headers`).
    pub(crate) forward_headers: Vec<HeaderName>,
}

pub(crate) struct Timeouts {
    pub(crate) first_byte: Duration,
    pub(crate) idle: Duration,
    /// A whole buffered upstream answer, from its head.
    pub(crate) response: Duration,
    /// Whole request body, from the end of its head.
    pub(crate) body_read: Duration,
}

/// What compiling the config can still hit although validation passed: the environment
/// changed in between (an env var unset), or a file that exists does not parse.
#[derive(Debug, thiserror::Error)]
pub(crate) enum SetupError {
    #[error(transparent)]
    Url(#[from] UrlError),
    #[error(transparent)]
    Header(#[from] ForwardError),
    #[error(transparent)]
    Keys(#[from] UnsetSecret),
    #[error(transparent)]
    Client(#[from] ClientError),
    #[error(transparent)]
    Limits(#[from] RedisError),
    #[error(transparent)]
    Credential(#[from] crate::credentials::CredentialError),
}

pub(crate) struct State {
    /// Looked up once per request with the client's model name: foldhash, not std's SipHash
    /// (a fixed table from the config; lookups insert nothing, so flooding it is not a risk).
    pub(crate) model_index: foldhash::HashMap<Box<str>, usize>,
    pub(crate) models: Vec<ModelEntry>,
    /// Per client dialect: whether some model translates it. Its bodies are then read whole
    /// at once (`proxy::request::parse`), the head taken from the same reading.
    pub(crate) translating: [bool; Dialect::COUNT],
    pub(crate) keys: Keys,
    /// Where the key's and model's limiters keep their buckets.
    pub(crate) limits: Limits,
    /// `/v1/models` when no keys are configured.
    pub(crate) models_json: Bytes,
    pub(crate) metrics: Arc<Metrics>,
    pub(crate) access_log: AccessLog,
    pub(crate) client: UpstreamClient,
    /// Builds each thread-per-core worker's own client.
    pub(crate) pools: client::Pools,
    pub(crate) max_body_bytes: usize,
    /// Largest non-streaming upstream body buffered.
    pub(crate) max_response_body_bytes: usize,
    /// Non-streaming upstream bytes buffered at once, over all requests.
    pub(crate) buffer_budget: Arc<BufferBudget>,
    pub(crate) timeouts: Timeouts,
    pub(crate) metrics_on_main: bool,
    /// Set when the shutdown grace period ran out: streams dropped after that were cut by
    /// the shutdown, not by their clients.
    pub(crate) grace_over: AtomicBool,
    /// The credential refreshers, taken and started by the server (so that building the
    /// state spawns nothing and a failed start leaves nothing running).
    pub(crate) refresh_tasks: std::sync::Mutex<Vec<crate::credentials::RefreshTask>>,
    request_ids: RequestIds,
}

impl State {
    /// Compiles a validated config. Fails only on what validation cannot see (a CA file that
    /// does not parse, a key whose env var vanished).
    pub(crate) fn build(
        cfg: &Config,
        access_log: AccessLog,
        metrics: Arc<Metrics>,
    ) -> Result<State, SetupError> {
        let model_index: foldhash::HashMap<Box<str>, usize> = cfg
            .models
            .iter()
            .enumerate()
            .map(|(i, m)| (m.name.as_str().into(), i))
            .collect();
        let pools = client::build(&cfg.upstream)?;
        let client = pools.client();
        // A token fetch gets as long as an upstream's first byte.
        let fetch_timeout = Duration::from_millis(cfg.upstream.first_byte_timeout_ms);
        let min_lifetime = Duration::from_millis(cfg.upstream.min_credential_lifetime_ms);
        let mut sources =
            crate::credentials::Sources::new(&client, metrics.clone(), fetch_timeout, min_lifetime);
        let mut models = Vec::with_capacity(cfg.models.len());
        for m in &cfg.models {
            let mut targets: [Vec<Target>; Dialect::COUNT] = Default::default();
            for (j, t) in m.targets.iter().enumerate() {
                let base = UpstreamUrl::parse(&t.base_url())?;
                let compiled = crate::credentials::compile(&m.name, j, t, &mut sources)?;
                let auth = Arc::new(compiled.auth);
                let upstream_model = t.upstream_model();
                let model_json =
                    Bytes::from(serde_json::to_vec(upstream_model).expect("a string serializes"));
                let home = home(t.provider);
                let project = t.project.as_ref().or(compiled.key_project.as_ref());
                let routes = (home.routes)(&RouteInput {
                    target: t,
                    base: &base,
                    project: project.map(|p| p.as_str()),
                });
                let (gemini, stream_uri) = match &routes {
                    Routes::Gemini(g) => (Some(g.clone()), None),
                    Routes::Pair { stream, .. } => (None, Some(stream.clone())),
                    Routes::PerDialect(_) => (None, None),
                };
                for d in Dialect::ALL {
                    let upstream = crate::providers::upstream_for(d, t.provider);
                    let uri = match &routes {
                        Routes::Gemini(g) => g.generate.clone(),
                        Routes::Pair { answer, .. } => answer.clone(),
                        Routes::PerDialect(path) => base.join(&path(t, upstream)),
                    };
                    targets[d.index()].push(Target {
                        host: crate::headers::host(&uri),
                        uri,
                        model: upstream_model.into(),
                        model_json: model_json.clone(),
                        auth: auth.clone(),
                        provider: t.provider,
                        upstream,
                        reasoning: t.reasoning,
                        quirks: home.quirks,
                        sampling: Rule::of(upstream, &t.model, t.sampling),
                        gemini: gemini.clone(),
                        stream_uri: stream_uri.clone(),
                    });
                }
            }
            let translates =
                Dialect::ALL.map(|d| targets[d.index()].iter().any(|t| t.translates(d)));
            models.push(ModelEntry {
                name: m.name.as_str().into(),
                limiter: m.rate_limit.map(|l| Limiter::new(l, Scope::Model, &m.name)),
                targets,
                translates,
                default_max_tokens: m
                    .default_max_tokens
                    .unwrap_or(cfg.translation.default_max_tokens),
                policy: Policy {
                    strict: m.strict.unwrap_or(cfg.translation.strict),
                    builtin_tools: match m.builtin_tools.unwrap_or(cfg.translation.builtin_tools) {
                        config::BuiltinTools::Refuse => BuiltinTools::Refuse,
                        config::BuiltinTools::Drop => BuiltinTools::Drop,
                    },
                },
                forward_headers: m
                    .forward_headers
                    .iter()
                    .map(|h| crate::headers::check_extra_forward(h))
                    .collect::<Result<_, _>>()?,
            });
        }
        let refresh_tasks = sources.tasks;
        let names: Vec<&str> = cfg.models.iter().map(|m| m.name.as_str()).collect();
        let models_json = render_models(&names, None);
        let keys = Keys::compile(
            &cfg.keys,
            |n| model_index[n],
            names.len(),
            |allowed| render_models(&names, allowed),
        )?;
        let limits = Limits::build(&cfg.rate_limits, &metrics)?;
        let translating = Dialect::ALL.map(|d| models.iter().any(|m| m.translates[d.index()]));
        Ok(State {
            model_index,
            models,
            translating,
            keys,
            limits,
            models_json,
            metrics,
            access_log,
            client,
            pools,
            max_body_bytes: cfg.server.max_body_bytes,
            max_response_body_bytes: cfg.upstream.max_response_body_bytes,
            buffer_budget: Arc::new(BufferBudget::new(cfg.upstream.max_buffered_bytes)),
            timeouts: Timeouts {
                first_byte: Duration::from_millis(cfg.upstream.first_byte_timeout_ms),
                response: Duration::from_millis(cfg.upstream.response_timeout_ms),
                idle: Duration::from_millis(cfg.upstream.idle_timeout_ms),
                body_read: Duration::from_millis(cfg.server.body_read_timeout_ms),
            },
            metrics_on_main: cfg.observability.metrics && cfg.server.metrics_listen.is_none(),
            grace_over: AtomicBool::new(false),
            refresh_tasks: std::sync::Mutex::new(refresh_tasks),
            request_ids: RequestIds::new(),
        })
    }

    pub(crate) fn next_request_id(&self) -> Arc<str> {
        self.request_ids.next()
    }
}

/// The OpenAI model list; `allowed` filters by index.
fn render_models(names: &[&str], allowed: Option<&[bool]>) -> Bytes {
    let data: Vec<_> = names
        .iter()
        .enumerate()
        .filter(|(i, _)| allowed.is_none_or(|a| a[*i]))
        .map(|(_, n)| serde_json::json!({"id": n, "object": "model", "created": 0, "owned_by": "gateway"}))
        .collect();
    Bytes::from(
        serde_json::to_vec(&serde_json::json!({"object": "list", "data": data}))
            .expect("a JSON value serializes"),
    )
}

/// Request ids: a per-process random prefix and a counter; unique without coordination.
struct RequestIds {
    /// `req_` and the process's 16 hex digits, the same in every id.
    prefix: [u8; PREFIX_LEN],
    counter: AtomicU64,
}

const PREFIX_LEN: usize = 4 + 16;

impl RequestIds {
    fn new() -> RequestIds {
        use std::hash::{BuildHasher, Hasher};
        // RandomState is seeded from the OS; enough to tell processes apart.
        let mut h = std::collections::hash_map::RandomState::new().build_hasher();
        h.write_u32(std::process::id());
        let mut prefix = [0; PREFIX_LEN];
        prefix[..4].copy_from_slice(b"req_");
        prefix[4..].copy_from_slice(h.finish().to_be_bytes().map(hex_pair).as_flattened());
        RequestIds {
            prefix,
            counter: AtomicU64::new(0),
        }
    }

    /// `req_`, the prefix's 16 hex digits and the counter's, at least 8 (the format
    /// `req_{prefix:016x}{n:08x}`). Written by hand: `format!` costs a tenth of a request's
    /// instructions in the gateway's own code.
    fn next(&self) -> Arc<str> {
        let n = self.counter.fetch_add(1, Relaxed);
        let mut id = [0u8; PREFIX_LEN + 16];
        id[..PREFIX_LEN].copy_from_slice(&self.prefix);
        let digits = n.to_be_bytes().map(hex_pair);
        let digits = digits.as_flattened();
        // Leading zeros dropped down to 8 digits; `| 1` keeps a zero counter at 8.
        let skip = ((n | 1).leading_zeros() as usize / 4).min(8);
        let counter = &digits[skip..];
        id[PREFIX_LEN..PREFIX_LEN + counter.len()].copy_from_slice(counter);
        let id = &id[..PREFIX_LEN + counter.len()];
        Arc::from(std::str::from_utf8(id).expect("hex digits are ASCII"))
    }
}

/// A byte's two lowercase hex digits.
fn hex_pair(b: u8) -> [u8; 2] {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    [DIGITS[usize::from(b >> 4)], DIGITS[usize::from(b & 0xf)]]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn request_ids_read_as_formatted() {
        for prefix in [0, 1, 0x0123_4567_89ab_cdef, u64::MAX] {
            for n in [
                0,
                1,
                0xff,
                0xffff_ffff,
                0x1_0000_0000,
                0x00ab_cdef_0123_4567,
                u64::MAX,
            ] {
                let mut ids = RequestIds::new();
                ids.prefix[4..].copy_from_slice(prefix.to_be_bytes().map(hex_pair).as_flattened());
                ids.counter.store(n, Relaxed);
                assert_eq!(&*ids.next(), format!("req_{prefix:016x}{n:08x}"));
            }
        }
    }
}
