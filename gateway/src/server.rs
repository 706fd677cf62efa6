//! Listeners, connections and graceful shutdown.
//!
//! On shutdown the accept loops stop, every connection finishes its in-flight request
//! (streams included) within the grace period, and `run` returns, so `main` returns and an
//! instrumented build writes its profile. This path is load-bearing for PGO training.

use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use http::{Request, Response};
use hyper::body::Incoming;
use hyper::service::service_fn;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::server::graceful::GracefulShutdown;
use tokio::net::TcpListener;
use tokio::sync::watch;

use crate::access_log::{AccessLog, AccessLogWriter};
use crate::body::GatewayBody;
use crate::config::Config;
use crate::metrics::Metrics;
use crate::routes;
use crate::state::Gateway;

#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    #[error("cannot listen on {addr}: {source}")]
    Bind {
        addr: SocketAddr,
        source: std::io::Error,
    },
    #[error("{0}")]
    Setup(String),
}

/// Bound listeners, so callers learn the real addresses (port 0 picks one) before serving.
pub struct Listeners {
    main: TcpListener,
    metrics: Option<TcpListener>,
}

impl Listeners {
    pub async fn bind(cfg: &Config) -> Result<Listeners, ServeError> {
        let bind = |addr: SocketAddr| async move {
            TcpListener::bind(addr)
                .await
                .map_err(|source| ServeError::Bind { addr, source })
        };
        let main = bind(cfg.server.listen).await?;
        let metrics = match cfg.server.metrics_listen {
            Some(a) if cfg.observability.metrics => Some(bind(a).await?),
            _ => None,
        };
        Ok(Listeners { main, metrics })
    }

    pub fn main_addr(&self) -> std::io::Result<SocketAddr> {
        self.main.local_addr()
    }

    pub fn metrics_addr(&self) -> Option<SocketAddr> {
        self.metrics.as_ref().and_then(|l| l.local_addr().ok())
    }
}

/// Serves until `shutdown` resolves, then drains. Returns the access-log writer, to be
/// finished once the runtime (and with it every leftover connection task) is gone.
pub async fn run(
    cfg: &Config,
    listeners: Listeners,
    shutdown: impl Future<Output = ()>,
) -> Result<AccessLogWriter, ServeError> {
    let names = cfg.models.iter().map(|m| m.name.clone()).collect();
    let metrics = Arc::new(Metrics::new(names));
    let (access_log, writer) = AccessLog::start(&cfg.observability.access_log, metrics.clone());
    let gw = Arc::new(Gateway::build(cfg, access_log, metrics.clone()).map_err(ServeError::Setup)?);

    let mut http = hyper::server::conn::http1::Builder::new();
    http.timer(TokioTimer::new())
        .header_read_timeout(Duration::from_millis(cfg.server.header_read_timeout_ms))
        .keep_alive(true);
    let grace = Duration::from_millis(cfg.server.shutdown_grace_ms);
    let (stop_tx, stop_rx) = watch::channel(false);

    let main = {
        let gw = gw.clone();
        accept_loop(
            listeners.main,
            http.clone(),
            stop_rx.clone(),
            grace,
            move |req| routes::route(gw.clone(), req),
        )
    };
    let metrics_loop = listeners.metrics.map(|l| {
        let m = metrics.clone();
        tokio::spawn(accept_loop(
            l,
            http.clone(),
            stop_rx.clone(),
            grace,
            move |req| routes::metrics_only(m.clone(), req),
        ))
    });
    drop(gw);

    let main = tokio::spawn(main);
    shutdown.await;
    let _ = stop_tx.send(true);
    let _ = main.await;
    if let Some(m) = metrics_loop {
        let _ = m.await;
    }
    Ok(writer)
}

async fn accept_loop<F, Fut>(
    listener: TcpListener,
    http: hyper::server::conn::http1::Builder,
    mut stop: watch::Receiver<bool>,
    grace: Duration,
    handler: F,
) where
    F: Fn(Request<Incoming>) -> Fut + Clone + Send + Sync + 'static,
    Fut: Future<Output = Result<Response<GatewayBody>, std::convert::Infallible>> + Send + 'static,
{
    let graceful = GracefulShutdown::new();
    loop {
        let accepted = tokio::select! {
            biased;
            _ = stop.changed() => break,
            a = listener.accept() => a,
        };
        let stream = match accepted {
            Ok((s, _)) => s,
            Err(e) => {
                // Out of file descriptors and the like: back off instead of spinning.
                eprintln!("gateway: accept failed: {e}");
                tokio::time::sleep(Duration::from_millis(50)).await;
                continue;
            }
        };
        let _ = stream.set_nodelay(true);
        let handler = handler.clone();
        let conn = http.serve_connection(TokioIo::new(stream), service_fn(handler));
        let conn = graceful.watch(conn);
        tokio::spawn(async move {
            let _ = conn.await;
        });
    }
    drop(listener);
    if tokio::time::timeout(grace, graceful.shutdown())
        .await
        .is_err()
    {
        eprintln!(
            "gateway: shutdown grace period of {grace:?} over; closing the remaining connections"
        );
    }
}

/// Resolves on the first SIGTERM or SIGINT.
pub async fn shutdown_signal() {
    use tokio::signal::unix::{signal, SignalKind};
    let mut term = signal(SignalKind::terminate()).expect("installing the SIGTERM handler");
    let mut int = signal(SignalKind::interrupt()).expect("installing the SIGINT handler");
    tokio::select! {
        _ = term.recv() => {}
        _ = int.recv() => {}
    }
}
