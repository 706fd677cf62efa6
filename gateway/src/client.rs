//! The pooled upstream HTTP(S) client (compiled state: built once from `[upstream]`).

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::Full;
use hyper_rustls::HttpsConnector;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::client::legacy::{Client, ResponseFuture};
use hyper_util::rt::{TokioExecutor, TokioTimer};

use crate::config::Upstream;

pub(crate) type UpstreamClient = Client<HttpsConnector<HttpConnector>, Full<Bytes>>;

/// Why the client could not be built (the extra CA file, or rustls itself).
#[derive(Debug, thiserror::Error)]
pub(crate) enum ClientError {
    #[error("upstream.extra_ca_file {}: {source}", path.display())]
    CaFile {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("upstream.extra_ca_file {}: {source}", path.display())]
    CaCert {
        path: PathBuf,
        source: rustls::Error,
    },
    #[error("upstream.extra_ca_file {}: no PEM certificates found", .0.display())]
    NoCerts(PathBuf),
    #[error("TLS set-up: {0}")]
    Tls(rustls::Error),
}

/// Builds the client: keep-alive pool, TCP_NODELAY (Nagle + delayed ACK would add ~40 ms),
/// connect timeout, and rustls with the webpki roots plus an optional extra CA file.
pub(crate) fn build(cfg: &Upstream) -> Result<Pools, ClientError> {
    let mut roots = rustls::RootCertStore::empty();
    roots.extend(webpki_roots::TLS_SERVER_ROOTS.iter().cloned());
    if let Some(path) = &cfg.extra_ca_file {
        let ca_file = |source| ClientError::CaFile {
            path: path.clone(),
            source,
        };
        let pem = std::fs::read(path).map_err(ca_file)?;
        let mut added = 0;
        for cert in rustls_pemfile::certs(&mut &pem[..]) {
            roots
                .add(cert.map_err(ca_file)?)
                .map_err(|source| ClientError::CaCert {
                    path: path.clone(),
                    source,
                })?;
            added += 1;
        }
        if added == 0 {
            return Err(ClientError::NoCerts(path.clone()));
        }
    }
    let tls = rustls::ClientConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .map_err(ClientError::Tls)?
    .with_root_certificates(roots)
    .with_no_client_auth();

    let mut http = HttpConnector::new();
    http.enforce_http(false);
    http.set_nodelay(true);
    http.set_connect_timeout(Some(Duration::from_millis(cfg.connect_timeout_ms)));
    let https = hyper_rustls::HttpsConnectorBuilder::new()
        .with_tls_config(tls)
        .https_or_http()
        .enable_http1()
        .wrap_connector(http);
    Ok(Pools {
        connector: https,
        max_idle_per_host: cfg.pool_max_idle_per_host,
    })
}

/// What builds a client with its own pool: the process's, and one per thread-per-core
/// worker, whose upstream connections then live on that worker's thread (a shared pool
/// hands a worker connections driven by another thread, each request a cross-thread wake).
#[derive(Clone)]
pub(crate) struct Pools {
    connector: HttpsConnector<HttpConnector>,
    max_idle_per_host: usize,
}

impl Pools {
    pub(crate) fn client(&self) -> UpstreamClient {
        Client::builder(TokioExecutor::new())
            .timer(TokioTimer::new())
            .pool_timer(TokioTimer::new())
            .pool_idle_timeout(Duration::from_secs(90))
            .pool_max_idle_per_host(self.max_idle_per_host)
            .build(self.connector.clone())
    }
}

thread_local! {
    /// This worker thread's own client (thread-per-core), set once when the thread starts.
    static WORKER_CLIENT: std::cell::OnceCell<UpstreamClient> = const { std::cell::OnceCell::new() };
}

/// Makes `client` this thread's: [`send`] uses it instead of the shared one.
pub(crate) fn adopt(client: UpstreamClient) {
    WORKER_CLIENT.with(|c| {
        let _ = c.set(client);
    });
}

/// Sends `req` through this thread's client if it has one, else through `shared`.
pub(crate) fn send(shared: &UpstreamClient, req: http::Request<Full<Bytes>>) -> ResponseFuture {
    WORKER_CLIENT.with(|c| c.get().unwrap_or(shared).request(req))
}
