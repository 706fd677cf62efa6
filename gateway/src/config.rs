//! The gateway's TOML configuration: schema, loading and validation.
//!
//! Everything here runs once at start-up. Validation turns the raw file into a
//! [`Config`] whose tables the hot path can use without further checks
//! (see `crate::state` for the compiled form).

use std::collections::HashSet;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};

use serde::Deserialize;

use crate::dialect::Provider;
use crate::headers::ForwardError;
use crate::providers::{AzureAuth, KeyHeader};
use crate::upstream_url::UrlError;

/// Where a configuration error was found, and what is wrong.
#[derive(Debug, thiserror::Error)]
pub(crate) enum ConfigError {
    #[error("cannot read config file {path}: {source}")]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("invalid config file {path}: {message}")]
    Parse { path: PathBuf, message: String },
    #[error("invalid config file {path}: {invalid}")]
    Invalid { path: PathBuf, invalid: Invalid },
}

/// One invalid key: its dotted path (`models[0].targets[1].base_url`) and what is wrong.
#[derive(Debug, thiserror::Error)]
#[error("`{key}`: {problem}")]
pub(crate) struct Invalid {
    key: String,
    problem: Problem,
}

fn invalid(key: impl Into<String>, problem: impl Into<Problem>) -> Invalid {
    Invalid {
        key: key.into(),
        problem: problem.into(),
    }
}

/// What is wrong with a key's value.
#[derive(Debug, thiserror::Error)]
pub(crate) enum Problem {
    /// A rule the value breaks, e.g. "must be > 0".
    #[error("{0}")]
    Rule(&'static str),
    #[error("{} is not a readable file", .0.display())]
    NotAFile(PathBuf),
    #[error("duplicate model name {0:?}")]
    DuplicateModel(String),
    #[error("duplicate key name {0:?}")]
    DuplicateKey(String),
    #[error("unknown model {0:?}")]
    UnknownModel(String),
    #[error("{0} is also server.listen; use another address or leave it unset")]
    SameListener(SocketAddr),
    #[error(transparent)]
    Url(#[from] UrlError),
    #[error(transparent)]
    Header(#[from] ForwardError),
    #[error(transparent)]
    Env(#[from] EnvError),
    /// Never quotes the key itself.
    #[error("the key in environment variable {0} is not a valid HTTP header value")]
    UpstreamKey(String),
    /// AWS keys that cannot be read: names the variable, file and profile, never a value.
    #[error(transparent)]
    AwsKeys(#[from] crate::providers::aws_creds::AwsCredsError),
    /// A service-account key file that does not serve: names the field, never its value.
    #[error("{}: {source}", path.display())]
    KeyFile {
        path: PathBuf,
        source: crate::providers::google::KeyFileError,
    },
}

/// A service-account key file, read and parsed (its key too).
pub(crate) fn read_service_account(
    path: &Path,
) -> Result<crate::providers::google::ServiceAccount, Problem> {
    let bytes = std::fs::read(path).map_err(|_| Problem::NotAFile(path.to_owned()))?;
    crate::providers::google::ServiceAccount::from_json(&bytes).map_err(|source| Problem::KeyFile {
        path: path.to_owned(),
        source,
    })
}

impl From<&'static str> for Problem {
    fn from(rule: &'static str) -> Problem {
        Problem::Rule(rule)
    }
}

/// Why a secret could not be read from its environment variable (never quotes a value).
#[derive(Debug, thiserror::Error)]
pub(crate) enum EnvError {
    #[error("environment variable name must not be empty")]
    EmptyName,
    #[error("environment variable {0} is empty")]
    Empty(String),
    #[error("environment variable {0} is not set")]
    NotSet(String),
}

/// Knobs of the translation between dialects (`[translation]`).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub(crate) struct Translation {
    /// `max_tokens` sent to an Anthropic target when a translated client sent none
    /// (Anthropic requires it; OpenAI clients may omit it). A model may override it.
    pub(crate) default_max_tokens: u64,
    /// Refuse the client-side fields the default policy drops (`context_management`,
    /// `client_metadata`, ...; TRANSLATION.md). A model may override it.
    pub(crate) strict: bool,
    /// What becomes of tools only the client's provider runs (`web_search`, ...).
    pub(crate) builtin_tools: BuiltinTools,
}

impl Default for Translation {
    fn default() -> Self {
        Translation {
            default_max_tokens: 4096,
            strict: false,
            builtin_tools: BuiltinTools::Refuse,
        }
    }
}

/// `builtin_tools`: a 400 naming each (`refuse`, the default) or removed (`drop`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum BuiltinTools {
    Refuse,
    Drop,
}

/// `sampling` on a target: which of `temperature`, `top_p`, `top_k` its model takes
/// (translated requests; what it does not take is dropped, or refused under `strict`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum Sampling {
    /// All three (where the API has them).
    All,
    /// Temperature and top_p, no top_k.
    TemperatureAndTopP,
    /// Temperature or top_p, not both (Claude 4.5 and later): top_p goes when both came.
    TemperatureOrTopP,
    /// None of them.
    None,
}

/// Requests and tokens per minute; either may be absent.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RateLimit {
    pub(crate) requests_per_minute: Option<u64>,
    pub(crate) tokens_per_minute: Option<u64>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Target {
    pub(crate) provider: Provider,
    /// Scheme, host, port and optional path prefix, e.g. `https://api.openai.com`. Vertex
    /// targets may leave it out: the default is the location's host ([`Target::base_url`]).
    base_url: Option<String>,
    /// The model name sent upstream.
    pub(crate) model: String,
    /// Name of the environment variable holding the upstream key (the key itself is never in
    /// the file, in logs or in errors). Absent: no key is sent.
    pub(crate) api_key_env: Option<String>,
    /// Whether the upstream model takes a reasoning effort (translated clients' `thinking`,
    /// `output_config.effort`, `reasoning_effort`, `reasoning.effort` then map to it);
    /// otherwise they are dropped.
    #[serde(default)]
    pub(crate) reasoning: bool,
    /// Which sampling parameters the upstream model takes, for a model TRANSLATION.md's
    /// sampling table does not know (absent: the table's rule).
    pub(crate) sampling: Option<Sampling>,
    /// Azure OpenAI: the deployment (default: `model`), in the URL of a dated API version
    /// and the body's `model`.
    pub(crate) deployment: Option<String>,
    /// Azure OpenAI (required there): `"v1"` (`/openai/v1/...`) or a dated version such as
    /// `"2024-10-21"` (`/openai/deployments/{deployment}/...?api-version=...`).
    pub(crate) api_version: Option<String>,
    /// Azure OpenAI: what `api_key_env` holds, a resource key (`"api-key"`, the default) or
    /// a Microsoft Entra ID token (`"entra"`, sent as a bearer token).
    pub(crate) auth: Option<AzureAuth>,
    /// Vertex (required there): the location, `us-central1`, `global`, `us`, `eu`...
    pub(crate) location: Option<String>,
    /// Vertex: the Google Cloud project (default: the service account's `project_id`).
    pub(crate) project: Option<String>,
    /// Vertex: a service-account key file (JSON), whose tokens the gateway fetches and
    /// refreshes itself ...
    pub(crate) credentials_file: Option<PathBuf>,
    /// ... or the environment variable naming that file (`GOOGLE_APPLICATION_CREDENTIALS`) ...
    pub(crate) credentials_file_env: Option<String>,
    /// ... or the environment variable holding an access token minted elsewhere (sent as
    /// it is, never refreshed).
    pub(crate) access_token_env: Option<String>,
    /// Bedrock (required there): the AWS region signed for, and the default host's
    /// (`bedrock-runtime.REGION.amazonaws.com`).
    pub(crate) region: Option<String>,
    /// Bedrock: where the AWS keys come from (`default`: the environment, else the shared
    /// credentials file). Ignored with `api_key_env` (a Bedrock API key, sent as a bearer).
    pub(crate) aws_credentials: Option<crate::providers::aws_creds::AwsSource>,
    /// Bedrock: the section of the shared credentials file (default: `AWS_PROFILE`, else
    /// `default`).
    pub(crate) aws_profile: Option<String>,
}

/// The Vertex-only keys, for the errors that name them on other providers.
const VERTEX_KEYS: [&str; 5] = [
    "location",
    "project",
    "credentials_file",
    "credentials_file_env",
    "access_token_env",
];

impl Target {
    /// The model name sent upstream: an Azure target's deployment.
    pub(crate) fn upstream_model(&self) -> &str {
        self.deployment.as_deref().unwrap_or(&self.model)
    }

    pub(crate) fn key_header(&self) -> KeyHeader {
        KeyHeader::of(self.provider, self.auth)
    }

    /// The base URL: the configured one, else (Vertex) the location's host, (Bedrock) the
    /// region's.
    pub(crate) fn base_url(&self) -> std::borrow::Cow<'_, str> {
        match (&self.base_url, &self.location) {
            (Some(u), _) => u.as_str().into(),
            (None, _) if self.provider == Provider::Bedrock => format!(
                "https://bedrock-runtime.{}.amazonaws.com",
                self.region.as_deref().unwrap_or_default()
            )
            .into(),
            (None, Some(l)) if self.provider.is_vertex() => {
                crate::providers::google::default_base_url(l).into()
            }
            (None, _) => "".into(),
        }
    }

    /// Where a Vertex target's service-account key is, when it has one (the env var is
    /// read here; validation checked it is set).
    pub(crate) fn credentials_path(&self) -> Result<Option<PathBuf>, EnvError> {
        match (&self.credentials_file, &self.credentials_file_env) {
            (Some(p), _) => Ok(Some(p.clone())),
            (None, Some(var)) => env_secret(var).map(|p| Some(PathBuf::from(p))),
            (None, None) => Ok(None),
        }
    }

    /// The Vertex keys: required or refused by provider; exactly one credential source;
    /// the key file readable and a service account's; the names URL-safe. The key's
    /// project is the default `project`.
    fn check_vertex(&self, at: &str) -> Result<(), Invalid> {
        if !self.provider.is_vertex() {
            let set = [
                self.location.is_some(),
                self.project.is_some(),
                self.credentials_file.is_some(),
                self.credentials_file_env.is_some(),
                self.access_token_env.is_some(),
            ];
            return match set.iter().position(|s| *s) {
                Some(k) => Err(invalid(
                    format!("{at}.{}", VERTEX_KEYS[k]),
                    "applies only to providers \"vertex\" and \"vertex-anthropic\"",
                )),
                None => Ok(()),
            };
        }
        let Some(location) = &self.location else {
            return Err(invalid(
                format!("{at}.location"),
                "is required for Vertex: a region such as \"us-central1\", or \"global\", \"us\", \"eu\"",
            ));
        };
        if location.is_empty()
            || !location
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        {
            return Err(invalid(
                format!("{at}.location"),
                "may hold only lowercase letters, digits and '-'",
            ));
        }
        if self.api_key_env.is_some() {
            return Err(invalid(
                format!("{at}.api_key_env"),
                "does not apply to Vertex: use credentials_file, credentials_file_env or access_token_env",
            ));
        }
        crate::providers::google::check_path_segment(&self.model)
            .map_err(|e| invalid(format!("{at}.model"), e))?;
        let sources = [
            self.credentials_file.is_some(),
            self.credentials_file_env.is_some(),
            self.access_token_env.is_some(),
        ];
        if sources.iter().filter(|s| **s).count() != 1 {
            return Err(invalid(
                at,
                "a Vertex target needs exactly one of credentials_file, credentials_file_env and access_token_env",
            ));
        }
        let mut project = self.project.clone();
        if let Some(var) = &self.access_token_env {
            check_upstream_key(var, self.key_header())
                .map_err(|e| invalid(format!("{at}.access_token_env"), e))?;
        } else {
            let key = if self.credentials_file.is_some() {
                "credentials_file"
            } else {
                "credentials_file_env"
            };
            let path = self
                .credentials_path()
                .map_err(|e| invalid(format!("{at}.{key}"), e))?
                .expect("one source is set");
            let sa = read_service_account(&path).map_err(|e| invalid(format!("{at}.{key}"), e))?;
            project = project.or(sa.project_id);
        }
        let Some(project) = project else {
            return Err(invalid(
                format!("{at}.project"),
                "is required (the credentials name no project_id)",
            ));
        };
        crate::providers::google::check_path_segment(&project)
            .map_err(|e| invalid(format!("{at}.project"), e))?;
        Ok(())
    }

    /// The Azure-only keys: required or refused by provider, their values URL-safe.
    /// Where a Bedrock target signing with SigV4 gets its AWS keys (none with a Bedrock
    /// API key).
    pub(crate) fn aws_keys(
        &self,
    ) -> Result<Option<crate::providers::aws_creds::Keys>, crate::providers::aws_creds::AwsCredsError>
    {
        if self.provider != Provider::Bedrock || self.api_key_env.is_some() {
            return Ok(None);
        }
        crate::providers::aws_creds::resolve(
            self.aws_credentials.unwrap_or_default(),
            self.aws_profile.as_deref(),
            self.region.as_deref().unwrap_or_default(),
            &|k| std::env::var(k).ok(),
        )
        .map(Some)
    }

    /// The Bedrock keys: required or refused by provider; the region a name; the keys
    /// readable now (start-up fails naming the source, never a value).
    fn check_bedrock(&self, at: &str) -> Result<(), Invalid> {
        if self.provider != Provider::Bedrock {
            let set = [
                ("region", self.region.is_some()),
                ("aws_credentials", self.aws_credentials.is_some()),
                ("aws_profile", self.aws_profile.is_some()),
            ];
            return match set.iter().find(|(_, s)| *s) {
                Some((k, _)) => Err(invalid(
                    format!("{at}.{k}"),
                    "applies only to provider \"bedrock\"",
                )),
                None => Ok(()),
            };
        }
        let Some(region) = &self.region else {
            return Err(invalid(
                format!("{at}.region"),
                "is required for Bedrock: an AWS region such as \"us-east-1\"",
            ));
        };
        if region.is_empty()
            || !region
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        {
            return Err(invalid(
                format!("{at}.region"),
                "may hold only lowercase letters, digits and '-'",
            ));
        }
        if self.model.len() > 2048 {
            return Err(invalid(
                format!("{at}.model"),
                "is longer than a Bedrock model id or ARN may be (2048)",
            ));
        }
        if self.api_key_env.is_some()
            && (self.aws_credentials.is_some() || self.aws_profile.is_some())
        {
            return Err(invalid(
                at,
                "a Bedrock target takes either api_key_env (a Bedrock API key) or AWS keys (aws_credentials, aws_profile), not both",
            ));
        }
        self.aws_keys()
            .map_err(|e| invalid(format!("{at}.aws_credentials"), e))?;
        Ok(())
    }

    fn check_azure(&self, at: &str) -> Result<(), Invalid> {
        if self.provider != Provider::AzureOpenai {
            let set = [
                ("deployment", self.deployment.is_some()),
                ("api_version", self.api_version.is_some()),
                ("auth", self.auth.is_some()),
            ];
            return match set.iter().find(|(_, s)| *s) {
                Some((k, _)) => Err(invalid(
                    format!("{at}.{k}"),
                    "applies only to provider \"azure-openai\"",
                )),
                None => Ok(()),
            };
        }
        let Some(version) = &self.api_version else {
            return Err(invalid(
                format!("{at}.api_version"),
                "is required for provider \"azure-openai\": \"v1\" (the v1 API) or a dated version such as \"2024-10-21\"",
            ));
        };
        crate::providers::check_url_token(version)
            .map_err(|e| invalid(format!("{at}.api_version"), e))?;
        if let Some(d) = &self.deployment {
            crate::providers::check_url_token(d)
                .map_err(|e| invalid(format!("{at}.deployment"), e))?;
        } else {
            crate::providers::check_url_token(&self.model).map_err(|_| {
                invalid(
                    format!("{at}.deployment"),
                    "is required when model is not a valid deployment name (letters, digits, '-', '_', '.')",
                )
            })?;
        }
        Ok(())
    }
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Model {
    /// The client-facing model name.
    pub(crate) name: String,
    /// Tried in order: on connect failure or a 5xx before the first response byte, the next.
    pub(crate) targets: Vec<Target>,
    pub(crate) rate_limit: Option<RateLimit>,
    /// Client headers forwarded to this model's targets on top of the fixed allow-list
    /// (`crate::headers`). Credentials, framing and hop-by-hop headers are refused.
    #[serde(default)]
    pub(crate) forward_headers: Vec<String>,
    /// Overrides `translation.default_max_tokens` for this model.
    pub(crate) default_max_tokens: Option<u64>,
    /// Overrides `translation.strict` for this model.
    pub(crate) strict: Option<bool>,
    /// Overrides `translation.builtin_tools` for this model.
    pub(crate) builtin_tools: Option<BuiltinTools>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct ApiKey {
    /// A label for logs and metrics; never the key.
    pub(crate) name: String,
    /// The key itself, or ...
    pub(crate) key: Option<String>,
    /// ... the name of an environment variable holding it.
    pub(crate) key_env: Option<String>,
    /// Models this key may use; absent = all.
    pub(crate) models: Option<Vec<String>>,
    pub(crate) rate_limit: Option<RateLimit>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub(crate) struct Server {
    pub(crate) listen: SocketAddr,
    /// Serve `/metrics` on this address instead of the main listener.
    pub(crate) metrics_listen: Option<SocketAddr>,
    /// Tokio worker threads; 0 = one per core.
    pub(crate) workers: usize,
    pub(crate) max_body_bytes: usize,
    pub(crate) header_read_timeout_ms: u64,
    /// The longest a request body may take to arrive, from the end of its head: stalled or
    /// trickled uploads get 408 instead of holding a connection and its buffer for ever.
    pub(crate) body_read_timeout_ms: u64,
    /// The longest a client may go without accepting any bytes the gateway has to write:
    /// a client that stops reading is disconnected, releasing its stream and upstream.
    pub(crate) client_write_timeout_ms: u64,
    /// Open client connections at most (clamped to what the fd limit allows); the next
    /// one gets a 503 and is closed.
    pub(crate) max_connections: usize,
    /// How long in-flight requests (streams too) may run after SIGTERM/SIGINT.
    pub(crate) shutdown_grace_ms: u64,
}

impl Default for Server {
    fn default() -> Self {
        Server {
            listen: SocketAddr::from(([127, 0, 0, 1], 8080)),
            metrics_listen: None,
            workers: 0,
            max_body_bytes: 8 * 1024 * 1024,
            header_read_timeout_ms: 10_000,
            body_read_timeout_ms: 30_000,
            client_write_timeout_ms: 30_000,
            max_connections: 4096,
            shutdown_grace_ms: 30_000,
        }
    }
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub(crate) struct Upstream {
    pub(crate) connect_timeout_ms: u64,
    /// Time from sending the request to the response head.
    pub(crate) first_byte_timeout_ms: u64,
    /// Longest silence allowed between two body chunks. Streams deliberately have no
    /// total-duration cap: it would cut long answers.
    pub(crate) idle_timeout_ms: u64,
    /// Longest a buffered (non-streaming) answer may take from its head to its last byte:
    /// an upstream trickling a byte at a time beats the idle timeout for ever otherwise.
    pub(crate) response_timeout_ms: u64,
    /// Idle pooled connections per upstream host.
    pub(crate) pool_max_idle_per_host: usize,
    /// Extra PEM CA bundle trusted for HTTPS upstreams (private CAs).
    pub(crate) extra_ca_file: Option<PathBuf>,
    /// Largest non-streaming upstream body buffered (to read its usage); larger: 502.
    pub(crate) max_response_body_bytes: usize,
    /// Non-streaming upstream bytes buffered at once, over every request; a response that
    /// does not fit gets 503 rather than growing memory without bound.
    pub(crate) max_buffered_bytes: usize,
    /// The shortest lifetime a fetched credential (a Vertex access token, fetched AWS keys)
    /// may have: a shorter one is a failed fetch, retried with the outage backoff, so that an
    /// issuer answering `expires_in: 0` cannot turn the refresher into a loop.
    pub(crate) min_credential_lifetime_ms: u64,
}

impl Default for Upstream {
    fn default() -> Self {
        Upstream {
            connect_timeout_ms: 5_000,
            first_byte_timeout_ms: 120_000,
            idle_timeout_ms: 120_000,
            response_timeout_ms: 600_000,
            pool_max_idle_per_host: 256,
            extra_ca_file: None,
            max_response_body_bytes: 64 * 1024 * 1024,
            max_buffered_bytes: 256 * 1024 * 1024,
            // Real issuers grant far more (Google an hour, STS at least 15 minutes); less
            // than a minute is a broken issuer or a clock off by the lifetime.
            min_credential_lifetime_ms: 60_000,
        }
    }
}

/// Where the rate limits' buckets live (`[rate_limits]`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum LimitsBackend {
    /// In this process: each replica grants the whole budget.
    #[default]
    Memory,
    /// In one Redis shared by every replica (`[rate_limits.redis]`).
    Redis,
}

/// What a request gets while Redis cannot be asked (down, slow, restarting).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum WhenDown {
    /// Admitted unlimited.
    Open,
    /// Refused: a 503 in the caller's dialect, with `Retry-After`.
    Closed,
    /// This process's own buckets apply (each replica grants the whole budget again).
    Memory,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub(crate) struct RateLimits {
    pub(crate) backend: LimitsBackend,
    pub(crate) redis: Option<RedisLimits>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub(crate) struct RedisLimits {
    /// `redis://host:port/db` or `redis+unix:///path`; credentials belong in `url_env`.
    pub(crate) url: Option<String>,
    /// Name of an environment variable holding the URL (it may carry a password).
    pub(crate) url_env: Option<String>,
    /// Prepended to every bucket's key (`<prefix>key:<name>`, `<prefix>model:<name>`).
    pub(crate) key_prefix: String,
    /// The longest a request waits on Redis (connect or answer) before `when_down` applies.
    pub(crate) timeout_ms: u64,
    pub(crate) when_down: WhenDown,
    /// After a failure, requests skip Redis (`when_down` applies at once) for this long
    /// before one asks again: an outage costs each request nothing, not `timeout_ms`.
    pub(crate) recheck_ms: u64,
}

impl Default for RedisLimits {
    fn default() -> Self {
        RedisLimits {
            url: None,
            url_env: None,
            key_prefix: "gateway:ratelimit:".to_owned(),
            timeout_ms: 100,
            when_down: WhenDown::Memory,
            recheck_ms: 1_000,
        }
    }
}

impl RedisLimits {
    /// The URL, from the file or its environment variable (validation checked one is set).
    pub(crate) fn url(&self) -> Result<String, EnvError> {
        match (&self.url, &self.url_env) {
            (Some(u), _) => Ok(u.clone()),
            (None, Some(var)) => env_secret(var),
            (None, None) => Err(EnvError::EmptyName),
        }
    }
}

/// Where access-log lines go.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum AccessLogSink {
    Stdout,
    Stderr,
    Off,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub(crate) struct Observability {
    pub(crate) access_log: AccessLogSink,
    pub(crate) metrics: bool,
}

impl Default for Observability {
    fn default() -> Self {
        Observability {
            access_log: AccessLogSink::Stdout,
            metrics: true,
        }
    }
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Config {
    #[serde(default)]
    pub(crate) server: Server,
    #[serde(default)]
    pub(crate) upstream: Upstream,
    #[serde(default)]
    pub(crate) observability: Observability,
    #[serde(default)]
    pub(crate) translation: Translation,
    #[serde(default)]
    pub(crate) rate_limits: RateLimits,
    /// Gateway API keys. None configured = no authentication (local use only).
    #[serde(default)]
    pub(crate) keys: Vec<ApiKey>,
    pub(crate) models: Vec<Model>,
}

impl Config {
    /// Reads, parses and validates a config file.
    pub(crate) fn load(path: &Path) -> Result<Config, ConfigError> {
        let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Read {
            path: path.to_owned(),
            source,
        })?;
        Config::parse(&text, path)
    }

    /// Parses and validates config text; `path` only names the file in errors.
    pub(crate) fn parse(text: &str, path: &Path) -> Result<Config, ConfigError> {
        let config: Config = toml::from_str(text).map_err(|e| ConfigError::Parse {
            path: path.to_owned(),
            message: describe_toml_error(&e),
        })?;
        config.validate(path)?;
        Ok(config)
    }

    fn validate(&self, path: &Path) -> Result<(), ConfigError> {
        self.check().map_err(|invalid| ConfigError::Invalid {
            path: path.to_owned(),
            invalid,
        })
    }

    fn check(&self) -> Result<(), Invalid> {
        if self.models.is_empty() {
            return Err(invalid("models", "at least one model is required"));
        }
        for (key, v) in [
            ("server.max_body_bytes", self.server.max_body_bytes),
            ("server.max_connections", self.server.max_connections),
            (
                "upstream.max_response_body_bytes",
                self.upstream.max_response_body_bytes,
            ),
            (
                "upstream.max_buffered_bytes",
                self.upstream.max_buffered_bytes,
            ),
        ] {
            if v == 0 {
                return Err(invalid(key, "must be > 0"));
            }
        }
        if self.upstream.max_buffered_bytes < self.upstream.max_response_body_bytes {
            return Err(invalid(
                "upstream.max_buffered_bytes",
                "must be at least upstream.max_response_body_bytes",
            ));
        }
        if self.translation.default_max_tokens == 0 {
            return Err(invalid("translation.default_max_tokens", "must be > 0"));
        }
        listeners(&self.server)?;
        for (key, v) in [
            (
                "server.header_read_timeout_ms",
                self.server.header_read_timeout_ms,
            ),
            (
                "server.body_read_timeout_ms",
                self.server.body_read_timeout_ms,
            ),
            (
                "server.client_write_timeout_ms",
                self.server.client_write_timeout_ms,
            ),
            (
                "upstream.connect_timeout_ms",
                self.upstream.connect_timeout_ms,
            ),
            (
                "upstream.first_byte_timeout_ms",
                self.upstream.first_byte_timeout_ms,
            ),
            ("upstream.idle_timeout_ms", self.upstream.idle_timeout_ms),
            (
                "upstream.response_timeout_ms",
                self.upstream.response_timeout_ms,
            ),
        ] {
            if v == 0 {
                return Err(invalid(key, "must be > 0 milliseconds"));
            }
        }
        // Below a second the floor stops bounding the refresher's rate.
        if self.upstream.min_credential_lifetime_ms < 1_000 {
            return Err(invalid(
                "upstream.min_credential_lifetime_ms",
                "must be at least 1000 milliseconds",
            ));
        }
        if let Some(ca) = &self.upstream.extra_ca_file {
            if !ca.is_file() {
                return Err(invalid(
                    "upstream.extra_ca_file",
                    Problem::NotAFile(ca.clone()),
                ));
            }
        }

        check_rate_limits(&self.rate_limits)?;

        let mut names = HashSet::new();
        for (i, m) in self.models.iter().enumerate() {
            let at = format!("models[{i}]");
            if m.name.is_empty() {
                return Err(invalid(format!("{at}.name"), "must not be empty"));
            }
            if !names.insert(m.name.as_str()) {
                return Err(invalid(
                    format!("{at}.name"),
                    Problem::DuplicateModel(m.name.clone()),
                ));
            }
            if m.targets.is_empty() {
                return Err(invalid(
                    format!("{at}.targets"),
                    "at least one target is required",
                ));
            }
            if let Some(rl) = &m.rate_limit {
                check_rate_limit(rl, &format!("{at}.rate_limit"))?;
            }
            if m.default_max_tokens == Some(0) {
                return Err(invalid(format!("{at}.default_max_tokens"), "must be > 0"));
            }
            for (j, h) in m.forward_headers.iter().enumerate() {
                crate::headers::check_extra_forward(h)
                    .map_err(|e| invalid(format!("{at}.forward_headers[{j}]"), e))?;
            }
            for (j, t) in m.targets.iter().enumerate() {
                let at = format!("{at}.targets[{j}]");
                if t.base_url.is_none()
                    && !t.provider.is_vertex()
                    && t.provider != Provider::Bedrock
                {
                    return Err(invalid(format!("{at}.base_url"), "is required"));
                }
                t.check_vertex(&at)?;
                t.check_bedrock(&at)?;
                if let Err(e) = crate::upstream_url::UpstreamUrl::parse(&t.base_url()) {
                    return Err(invalid(format!("{at}.base_url"), e));
                }
                if t.model.is_empty() {
                    return Err(invalid(format!("{at}.model"), "must not be empty"));
                }
                t.check_azure(&at)?;
                if let Some(var) = &t.api_key_env {
                    check_upstream_key(var, t.key_header())
                        .map_err(|e| invalid(format!("{at}.api_key_env"), e))?;
                }
            }
        }

        let mut key_names = HashSet::new();
        for (i, k) in self.keys.iter().enumerate() {
            let at = format!("keys[{i}]");
            if !key_names.insert(k.name.as_str()) {
                return Err(invalid(
                    format!("{at}.name"),
                    Problem::DuplicateKey(k.name.clone()),
                ));
            }
            match (&k.key, &k.key_env) {
                (Some(_), Some(_)) => {
                    return Err(invalid(at.clone(), "set `key` or `key_env`, not both"))
                }
                (None, None) => return Err(invalid(at.clone(), "set `key` or `key_env`")),
                (Some(key), None) if key.is_empty() => {
                    return Err(invalid(format!("{at}.key"), "must not be empty"))
                }
                (None, Some(var)) => {
                    check_env_var(var).map_err(|e| invalid(format!("{at}.key_env"), e))?
                }
                _ => {}
            }
            if let Some(models) = &k.models {
                for (j, m) in models.iter().enumerate() {
                    if !names.contains(m.as_str()) {
                        return Err(invalid(
                            format!("{at}.models[{j}]"),
                            Problem::UnknownModel(m.clone()),
                        ));
                    }
                }
            }
            if let Some(rl) = &k.rate_limit {
                check_rate_limit(rl, &format!("{at}.rate_limit"))?;
            }
        }
        Ok(())
    }
}

impl ApiKey {
    /// The key's secret: inline, or read from its environment variable.
    pub(crate) fn secret(&self) -> Option<String> {
        match (&self.key, &self.key_env) {
            (Some(k), _) => Some(k.clone()),
            (None, Some(var)) => env_secret(var).ok(),
            (None, None) => None,
        }
    }
}

/// A secret from an environment variable, without surrounding whitespace: `echo key >
/// file`-style values end in a newline that is never part of the key.
pub(crate) fn env_secret(var: &str) -> Result<String, EnvError> {
    if var.is_empty() {
        return Err(EnvError::EmptyName);
    }
    match std::env::var(var) {
        Ok(v) if !v.trim().is_empty() => Ok(v.trim().to_owned()),
        Ok(_) => Err(EnvError::Empty(var.to_owned())),
        Err(_) => Err(EnvError::NotSet(var.to_owned())),
    }
}

fn check_env_var(var: &str) -> Result<(), EnvError> {
    env_secret(var).map(|_| ())
}

/// The upstream key must become a header value; the message never quotes the key.
fn check_upstream_key(var: &str, header: KeyHeader) -> Result<(), Problem> {
    let key = env_secret(var)?;
    crate::providers::upstream_auth(header, &key)
        .map(|_| ())
        .map_err(|_| Problem::UpstreamKey(var.to_owned()))
}

/// `metrics_listen` must not be the main listener's address, checked again once the command
/// line may have changed `listen`; `path` names the file in the error.
pub(crate) fn check_listeners(server: &Server, path: &Path) -> Result<(), ConfigError> {
    listeners(server).map_err(|invalid| ConfigError::Invalid {
        path: path.to_owned(),
        invalid,
    })
}

/// `metrics_listen` must not be the main listener's address (port 0 picks two ports).
fn listeners(server: &Server) -> Result<(), Invalid> {
    match server.metrics_listen {
        Some(m) if m == server.listen && m.port() != 0 => {
            Err(invalid("server.metrics_listen", Problem::SameListener(m)))
        }
        _ => Ok(()),
    }
}

/// `[rate_limits]`: a Redis backend needs its URL; a `[rate_limits.redis]` table without
/// `backend = "redis"` is a mistake worth naming (limits the operator thinks are shared).
fn check_rate_limits(rl: &RateLimits) -> Result<(), Invalid> {
    let redis = match (rl.backend, &rl.redis) {
        (LimitsBackend::Memory, None) => return Ok(()),
        (LimitsBackend::Memory, Some(_)) => {
            return Err(invalid(
                "rate_limits.backend",
                "set it to \"redis\" to use [rate_limits.redis], or remove that table",
            ))
        }
        (LimitsBackend::Redis, None) => {
            return Err(invalid(
                "rate_limits.redis",
                "backend \"redis\" needs a [rate_limits.redis] table with url or url_env",
            ))
        }
        (LimitsBackend::Redis, Some(r)) => r,
    };
    let url = match (&redis.url, &redis.url_env) {
        (Some(_), Some(_)) => {
            return Err(invalid("rate_limits.redis", "set url or url_env, not both"))
        }
        (None, None) => return Err(invalid("rate_limits.redis.url", "is required (or url_env)")),
        (Some(u), None) => u.clone(),
        (None, Some(var)) => {
            env_secret(var).map_err(|e| invalid("rate_limits.redis.url_env", e))?
        }
    };
    // Never quote the URL: it may carry a password.
    if !(["redis://", "redis+unix://", "unix://"]
        .iter()
        .any(|s| url.starts_with(s)))
    {
        return Err(invalid(
            "rate_limits.redis.url",
            "must start with redis://, redis+unix:// or unix:// (no TLS: keep Redis on a private network)",
        ));
    }
    for (k, v) in [
        ("rate_limits.redis.timeout_ms", redis.timeout_ms),
        ("rate_limits.redis.recheck_ms", redis.recheck_ms),
    ] {
        if v == 0 {
            return Err(invalid(k, "must be > 0 milliseconds"));
        }
    }
    Ok(())
}

fn check_rate_limit(rl: &RateLimit, at: &str) -> Result<(), Invalid> {
    if rl.requests_per_minute.is_none() && rl.tokens_per_minute.is_none() {
        return Err(invalid(
            at,
            "set requests_per_minute and/or tokens_per_minute",
        ));
    }
    for (k, v) in [
        ("requests_per_minute", rl.requests_per_minute),
        ("tokens_per_minute", rl.tokens_per_minute),
    ] {
        if v == Some(0) {
            return Err(invalid(format!("{at}.{k}"), "must be > 0"));
        }
    }
    Ok(())
}

/// toml's errors already name the key and quote the line; keep them on one line.
fn describe_toml_error(e: &toml::de::Error) -> String {
    let msg = e.message().trim().to_owned();
    match e.span() {
        Some(span) => format!("{msg} (at byte {})", span.start),
        None => msg,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<Config, ConfigError> {
        Config::parse(text, Path::new("test.toml"))
    }

    const MINIMAL: &str = r#"
[[models]]
name = "gpt-4o-mini"
[[models.targets]]
provider = "openai"
base_url = "http://127.0.0.1:9"
model = "gpt-4o-mini-2024-07-18"
"#;

    #[test]
    fn minimal_config_gets_defaults() {
        let c = parse(MINIMAL).unwrap();
        assert_eq!(c.server.max_body_bytes, 8 * 1024 * 1024);
        assert_eq!(c.server.workers, 0);
        assert!(c.observability.metrics);
        assert_eq!(c.models[0].targets[0].provider, Provider::Openai);
    }

    #[test]
    fn credential_lifetime_floor_is_a_minute_and_at_least_a_second() {
        assert_eq!(
            parse(MINIMAL).unwrap().upstream.min_credential_lifetime_ms,
            60_000
        );
        let text = format!("[upstream]\nmin_credential_lifetime_ms = 999\n{MINIMAL}");
        let e = parse(&text).unwrap_err().to_string();
        assert!(e.contains("upstream.min_credential_lifetime_ms"), "{e}");
        let text = format!("[upstream]\nmin_credential_lifetime_ms = 1000\n{MINIMAL}");
        assert_eq!(
            parse(&text).unwrap().upstream.min_credential_lifetime_ms,
            1_000
        );
    }

    #[test]
    fn missing_models_is_named() {
        let e = parse("[server]\nworkers = 1\n").unwrap_err().to_string();
        assert!(e.contains("test.toml") && e.contains("models"), "{e}");
    }

    #[test]
    fn unknown_key_is_named() {
        let e = parse(&format!("{MINIMAL}\n[server]\nlisten_addr = \"x\"\n"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("listen_addr"), "{e}");
    }

    #[test]
    fn bad_provider_is_named() {
        let e = parse(&MINIMAL.replace("\"openai\"", "\"palm\""))
            .unwrap_err()
            .to_string();
        assert!(e.contains("palm") && e.contains("test.toml"), "{e}");
    }

    #[test]
    fn bad_base_url_is_named() {
        let e = parse(&MINIMAL.replace("http://127.0.0.1:9", "ftp://x"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("models[0].targets[0].base_url"), "{e}");
    }

    #[test]
    fn duplicate_model_is_rejected() {
        let text = format!("{MINIMAL}{}", MINIMAL);
        let e = parse(&text).unwrap_err().to_string();
        assert!(
            e.contains("models[1].name") && e.contains("duplicate"),
            "{e}"
        );
    }

    #[test]
    fn key_allow_list_must_name_known_models() {
        let text = format!("{MINIMAL}\n[[keys]]\nname = \"a\"\nkey = \"k\"\nmodels = [\"nope\"]\n");
        let e = parse(&text).unwrap_err().to_string();
        assert!(e.contains("keys[0].models[0]") && e.contains("nope"), "{e}");
    }

    #[test]
    fn key_needs_exactly_one_source() {
        let both = format!("{MINIMAL}\n[[keys]]\nname = \"a\"\nkey = \"k\"\nkey_env = \"HOME\"\n");
        assert!(parse(&both).unwrap_err().to_string().contains("not both"));
        let none = format!("{MINIMAL}\n[[keys]]\nname = \"a\"\n");
        assert!(parse(&none).unwrap_err().to_string().contains("keys[0]"));
    }

    #[test]
    fn unset_env_var_is_named_without_value() {
        let text = MINIMAL.replace(
            "model = \"gpt-4o-mini-2024-07-18\"",
            "model = \"m\"\napi_key_env = \"GATEWAY_TEST_SURELY_UNSET_VAR\"",
        );
        let e = parse(&text).unwrap_err().to_string();
        assert!(e.contains("api_key_env") && e.contains("not set"), "{e}");
    }

    #[test]
    fn openai_compatible_and_translation_knobs() {
        let text = MINIMAL
            .replace("\"openai\"", "\"openai-compatible\"")
            .replace(
                "name = \"gpt-4o-mini\"\n",
                "name = \"gpt-4o-mini\"\ndefault_max_tokens = 512\n",
            );
        let c = parse(&format!("[translation]\ndefault_max_tokens = 1000\n{text}")).unwrap();
        assert_eq!(c.models[0].targets[0].provider, Provider::OpenaiCompatible);
        assert_eq!(c.models[0].default_max_tokens, Some(512));
        assert_eq!(c.translation.default_max_tokens, 1000);
        assert_eq!(parse(MINIMAL).unwrap().translation.default_max_tokens, 4096);
        let e = parse(&format!("[translation]\ndefault_max_tokens = 0\n{MINIMAL}"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("translation.default_max_tokens"), "{e}");
    }

    #[test]
    fn messages_keep_their_text() {
        // Clients and scripts match these; the typed errors render them byte for byte.
        let text = MINIMAL.replace(
            "model = \"gpt-4o-mini-2024-07-18\"",
            "model = \"m\"\napi_key_env = \"GATEWAY_TEST_SURELY_UNSET_VAR\"",
        );
        assert_eq!(
            parse(&text).unwrap_err().to_string(),
            "invalid config file test.toml: `models[0].targets[0].api_key_env`: \
             environment variable GATEWAY_TEST_SURELY_UNSET_VAR is not set"
        );
        let text = MINIMAL.replace(
            "name = \"gpt-4o-mini\"\n",
            "name = \"gpt-4o-mini\"\nrate_limit = {}\n",
        );
        assert_eq!(
            parse(&text).unwrap_err().to_string(),
            "invalid config file test.toml: `models[0].rate_limit`: \
             set requests_per_minute and/or tokens_per_minute"
        );
        let mut server = Server::default();
        server.listen = "127.0.0.1:9000".parse().unwrap();
        server.metrics_listen = Some(server.listen);
        assert_eq!(
            check_listeners(&server, Path::new("g.toml"))
                .unwrap_err()
                .to_string(),
            "invalid config file g.toml: `server.metrics_listen`: 127.0.0.1:9000 is also \
             server.listen; use another address or leave it unset"
        );
    }

    #[test]
    fn zero_rate_limit_is_rejected() {
        let text = MINIMAL.replace(
            "name = \"gpt-4o-mini\"\n",
            "name = \"gpt-4o-mini\"\nrate_limit = { requests_per_minute = 0 }\n",
        );
        let e = parse(&text).unwrap_err().to_string();
        assert!(e.contains("requests_per_minute"), "{e}");
    }

    #[test]
    fn rate_limits_backend_is_checked_without_quoting_the_url() {
        let with = |table: &str| parse(&format!("{table}\n{MINIMAL}"));
        let c = with("[rate_limits]\nbackend = \"redis\"\n[rate_limits.redis]\nurl = \"redis://127.0.0.1:6379/0\"").unwrap();
        let r = c.rate_limits.redis.unwrap();
        assert_eq!(
            (r.timeout_ms, r.recheck_ms, r.when_down),
            (100, 1_000, WhenDown::Memory)
        );
        assert_eq!(c.rate_limits.backend, LimitsBackend::Redis);
        assert_eq!(
            parse(MINIMAL).unwrap().rate_limits.backend,
            LimitsBackend::Memory
        );
        for (table, says) in [
            ("[rate_limits]\nbackend = \"redis\"", "needs a [rate_limits.redis] table"),
            ("[rate_limits.redis]\nurl = \"redis://h\"", "set it to \"redis\""),
            ("[rate_limits]\nbackend = \"redis\"\n[rate_limits.redis]\ntimeout_ms = 5", "`rate_limits.redis.url`: is required"),
            ("[rate_limits]\nbackend = \"redis\"\n[rate_limits.redis]\nurl = \"http://:hunter2@h\"", "must start with redis://"),
            ("[rate_limits]\nbackend = \"redis\"\n[rate_limits.redis]\nurl = \"redis://h\"\ntimeout_ms = 0", "`rate_limits.redis.timeout_ms`: must be > 0"),
            ("[rate_limits]\nbackend = \"redis\"\n[rate_limits.redis]\nurl_env = \"GATEWAY_TEST_UNSET_REDIS_URL\"", "GATEWAY_TEST_UNSET_REDIS_URL is not set"),
            ("[rate_limits]\nbackend = \"redis\"\n[rate_limits.redis]\nurl = \"redis://h\"\nwhen_down = \"maybe\"", "unknown variant `maybe`"),
            ("[rate_limits]\nbackend = \"memcached\"", "unknown variant `memcached`"),
        ] {
            let e = with(table).unwrap_err().to_string();
            assert!(e.contains(says), "{table}: {e}");
            assert!(!e.contains("hunter2"), "{e}");
        }
    }

    #[test]
    fn example_config_is_valid() {
        let text = include_str!("../../gateway.example.toml");
        // The example names env vars for upstream keys; validation requires them set.
        std::env::set_var("OPENAI_API_KEY", "sk-test");
        std::env::set_var("ANTHROPIC_API_KEY", "sk-ant-test");
        std::env::set_var("GEMINI_API_KEY", "gm-test");
        std::env::set_var("GATEWAY_KEY_TEAM_B", "gw-test");
        parse(text).unwrap();
        // The commented-out Azure and Vertex models, uncommented, are valid too.
        let block = |from: &str, to: &str| -> String {
            text.lines()
                .skip_while(|l| !l.starts_with(from))
                .take_while(|l| !l.starts_with(to))
                .filter_map(|l| l.strip_prefix("# "))
                .filter(|l| l.starts_with('[') || (l.contains(" = ") && !l.starts_with('#')))
                .map(|l| format!("{l}\n"))
                .collect()
        };
        let azure = block("# Azure OpenAI:", "# Google Vertex AI:");
        assert!(azure.contains("provider = \"azure-openai\""), "{azure}");
        std::env::set_var("AZURE_OPENAI_API_KEY", "az-test");
        let c = parse(&format!("{text}\n{azure}")).unwrap();
        let t = &c.models.last().unwrap().targets[0];
        assert_eq!(t.provider, Provider::AzureOpenai);
        assert_eq!(t.upstream_model(), "gpt-4o-mini-prod");
        let vertex = block("# Google Vertex AI:", "# AWS Bedrock:");
        assert!(
            vertex.contains("provider = \"vertex-anthropic\""),
            "{vertex}"
        );
        // Lines commented twice stay comments: the block names one credential source.
        assert!(!vertex.contains("access_token_env"), "{vertex}");
        let Some(pem) = crate::providers::google::tests::fresh_pem() else {
            panic!("the Vertex tests need the openssl CLI (scripts/test-deps.sh installs it)");
        };
        let key =
            std::env::temp_dir().join(format!("gateway-example-sa-{}.json", std::process::id()));
        let sa = serde_json::json!({"type": "service_account", "project_id": "example-project",
            "private_key_id": "k1", "private_key": pem, "client_email": "sa@example-project.iam.gserviceaccount.com",
            "token_uri": "https://oauth2.googleapis.com/token"});
        std::fs::write(&key, sa.to_string()).unwrap();
        std::env::set_var("GOOGLE_APPLICATION_CREDENTIALS", &key);
        let c = parse(&format!("{text}\n{vertex}"));
        std::fs::remove_file(&key).ok();
        let c = c.unwrap();
        let n = c.models.len();
        let (g, a) = (&c.models[n - 2].targets[0], &c.models[n - 1].targets[0]);
        assert_eq!(
            (g.provider, a.provider),
            (Provider::Vertex, Provider::VertexAnthropic)
        );
        assert_eq!(
            g.base_url(),
            "https://us-central1-aiplatform.googleapis.com"
        );
        assert_eq!(a.base_url(), "https://us-east5-aiplatform.googleapis.com");
        let bedrock = block("# AWS Bedrock:", "# END");
        assert!(bedrock.contains("provider = \"bedrock\""), "{bedrock}");
        assert!(!bedrock.contains("api_key_env"), "{bedrock}");
        std::env::set_var("AWS_ACCESS_KEY_ID", "AKIDEXAMPLE");
        std::env::set_var("AWS_SECRET_ACCESS_KEY", "example-secret");
        let c = parse(&format!("{text}\n{bedrock}")).unwrap();
        let b = &c.models.last().unwrap().targets[0];
        assert_eq!(b.provider, Provider::Bedrock);
        assert_eq!(
            b.base_url(),
            "https://bedrock-runtime.us-east-1.amazonaws.com"
        );
        assert!(matches!(
            b.aws_keys().unwrap().unwrap(),
            crate::providers::aws_creds::Keys::Static(k) if k.access_key_id == "AKIDEXAMPLE"
        ));
    }

    #[test]
    fn bedrock_targets_are_checked() {
        let with = |t: &str| {
            parse(&format!(
                "[[models]]\nname = \"m\"\n[[models.targets]]\n{t}"
            ))
        };
        std::env::set_var("GATEWAY_TEST_BEDROCK_KEY", "bedrock-key");
        let ok = with("provider = \"bedrock\"\nregion = \"eu-west-1\"\nmodel = \"amazon.nova-pro-v1:0\"\napi_key_env = \"GATEWAY_TEST_BEDROCK_KEY\"").unwrap();
        assert_eq!(
            ok.models[0].targets[0].base_url(),
            "https://bedrock-runtime.eu-west-1.amazonaws.com"
        );
        for (t, says) in [
            ("provider = \"bedrock\"\nmodel = \"m\"\napi_key_env = \"GATEWAY_TEST_BEDROCK_KEY\"", "`models[0].targets[0].region`: is required"),
            ("provider = \"bedrock\"\nregion = \"US East\"\nmodel = \"m\"\napi_key_env = \"GATEWAY_TEST_BEDROCK_KEY\"", "lowercase letters"),
            ("provider = \"openai\"\nbase_url = \"http://h\"\nmodel = \"m\"\nregion = \"us-east-1\"", "applies only to provider \"bedrock\""),
            ("provider = \"openai\"\nbase_url = \"http://h\"\nmodel = \"m\"\naws_profile = \"p\"", "`models[0].targets[0].aws_profile`"),
            ("provider = \"bedrock\"\nregion = \"us-east-1\"\nmodel = \"m\"\napi_key_env = \"GATEWAY_TEST_BEDROCK_KEY\"\naws_credentials = \"env\"", "not both"),
            ("provider = \"bedrock\"\nregion = \"us-east-1\"\nmodel = \"m\"\naws_credentials = \"sso\"", "unknown variant `sso`"),
            ("provider = \"bedrock\"\nregion = \"us-east-1\"\nmodel = \"m\"\naws_credentials = \"profile\"\naws_profile = \"gateway-test-surely-missing\"", "aws_credentials`"),
        ] {
            let e = with(t).unwrap_err().to_string();
            assert!(e.contains(says), "{t}: {e}");
            assert!(!e.contains("bedrock-key"), "{e}");
        }
    }
}
