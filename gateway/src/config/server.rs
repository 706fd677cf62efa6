//! `[server]`, `[upstream]` and `[observability]`: listeners, sizes, timeouts.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};

use serde::Deserialize;

use super::error::{invalid, ConfigError, Invalid, Problem};
use super::targets::Translation;

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub(crate) struct Server {
    pub(crate) listen: SocketAddr,
    /// Serve `/metrics` on this address instead of the main listener.
    pub(crate) metrics_listen: Option<SocketAddr>,
    /// Tokio worker threads; 0 = one per core.
    pub(crate) workers: usize,
    /// How the workers share the connections: one work-stealing runtime, or one
    /// single-threaded runtime and listener per worker.
    pub(crate) runtime: Runtime,
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
            runtime: Runtime::MultiThread,
            max_body_bytes: 8 * 1024 * 1024,
            header_read_timeout_ms: 10_000,
            body_read_timeout_ms: 30_000,
            client_write_timeout_ms: 30_000,
            max_connections: 4096,
            shutdown_grace_ms: 30_000,
        }
    }
}

/// `server.runtime` (and `--runtime`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "kebab-case")]
pub(crate) enum Runtime {
    /// Tokio's work-stealing runtime: `workers` threads share every connection.
    MultiThread,
    /// One current-thread runtime per worker, each accepting on its own `SO_REUSEPORT`
    /// listener: a connection stays on the thread that accepted it.
    ThreadPerCore,
}

impl Runtime {
    pub(crate) fn name(self) -> &'static str {
        match self {
            Runtime::MultiThread => "multi-thread",
            Runtime::ThreadPerCore => "thread-per-core",
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

/// The sizes and timeouts: each > 0, the buffers' budget over one answer, the credential
/// floor at least a second, the CA file a file; the listeners apart.
pub(crate) fn check(
    server: &Server,
    upstream: &Upstream,
    translation: &Translation,
) -> Result<(), Invalid> {
    for (key, v) in [
        ("server.max_body_bytes", server.max_body_bytes),
        ("server.max_connections", server.max_connections),
        (
            "upstream.max_response_body_bytes",
            upstream.max_response_body_bytes,
        ),
        ("upstream.max_buffered_bytes", upstream.max_buffered_bytes),
    ] {
        if v == 0 {
            return Err(invalid(key, "must be > 0"));
        }
    }
    if upstream.max_buffered_bytes < upstream.max_response_body_bytes {
        return Err(invalid(
            "upstream.max_buffered_bytes",
            "must be at least upstream.max_response_body_bytes",
        ));
    }
    if translation.default_max_tokens == 0 {
        return Err(invalid("translation.default_max_tokens", "must be > 0"));
    }
    listeners(server)?;
    for (key, v) in [
        (
            "server.header_read_timeout_ms",
            server.header_read_timeout_ms,
        ),
        ("server.body_read_timeout_ms", server.body_read_timeout_ms),
        (
            "server.client_write_timeout_ms",
            server.client_write_timeout_ms,
        ),
        ("upstream.connect_timeout_ms", upstream.connect_timeout_ms),
        (
            "upstream.first_byte_timeout_ms",
            upstream.first_byte_timeout_ms,
        ),
        ("upstream.idle_timeout_ms", upstream.idle_timeout_ms),
        ("upstream.response_timeout_ms", upstream.response_timeout_ms),
    ] {
        if v == 0 {
            return Err(invalid(key, "must be > 0 milliseconds"));
        }
    }
    // Below a second the floor stops bounding the refresher's rate.
    if upstream.min_credential_lifetime_ms < 1_000 {
        return Err(invalid(
            "upstream.min_credential_lifetime_ms",
            "must be at least 1000 milliseconds",
        ));
    }
    if let Some(ca) = &upstream.extra_ca_file {
        if !ca.is_file() {
            return Err(invalid(
                "upstream.extra_ca_file",
                crate::providers::Problem::NotAFile(ca.clone()),
            ));
        }
    }
    Ok(())
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
