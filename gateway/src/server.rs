//! Listeners, connections and shutdown.
//!
//! On the first SIGTERM/SIGINT the accept loops stop, every connection finishes its
//! in-flight request (streams included) within the grace period, and `run` returns, so
//! `main` returns and an instrumented build writes its profile. This path is load-bearing
//! for PGO training. A second signal during the drain makes `run` return at once with
//! [`ServeError::Forced`].
//!
//! Connections are capped (`server.max_connections`, clamped below the fd limit) so a
//! flood is refused with a 503 instead of exhausting file descriptors.

use std::future::Future;
use std::net::SocketAddr;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;
use std::time::{Duration, Instant};

use http::{Request, Response};
use hyper::body::Incoming;
use hyper::service::service_fn;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::server::graceful::GracefulShutdown;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{oneshot, watch, OwnedSemaphorePermit, Semaphore};

use crate::access_log::{AccessLog, AccessLogWriter};
use crate::body::GatewayBody;
use crate::config::{Config, Runtime};
use crate::conn::{ClientIo, ConnState};
use crate::error::{ApiError, ErrorKind};
use crate::metrics::Metrics;
use crate::routes;
use crate::state::{SetupError, State};

#[derive(Debug, thiserror::Error)]
pub(crate) enum ServeError {
    #[error("cannot listen on {addr}: {source}")]
    Bind {
        addr: SocketAddr,
        source: std::io::Error,
    },
    #[error(transparent)]
    Setup(#[from] SetupError),
    #[error("cannot install signal handlers: {0}")]
    Signals(std::io::Error),
    #[error("cannot start worker {worker}: {source}")]
    Worker {
        worker: usize,
        source: std::io::Error,
    },
    #[error(
        "second signal ({signal}) during the drain: exiting now, cutting {open} open connection(s)"
    )]
    Forced { signal: &'static str, open: i64 },
}

impl ServeError {
    /// The exit code: 2 for set-up errors (a config problem validation could not see),
    /// 128 + signal number for a forced exit, 1 otherwise.
    pub(crate) fn exit_code(&self) -> u8 {
        match self {
            ServeError::Setup(_) => 2,
            ServeError::Forced { signal, .. } => 128 + signal_number(signal),
            _ => 1,
        }
    }
}

fn signal_number(name: &str) -> u8 {
    if name == "SIGINT" {
        2
    } else {
        15
    }
}

/// Bound listeners, so callers learn the real addresses (port 0 picks one) before serving.
pub(crate) struct Listeners {
    main: Main,
    metrics: Option<TcpListener>,
}

/// The main listener: one for the work-stealing runtime, one per worker (all on the same
/// address through `SO_REUSEPORT`, the kernel spreading connections over them) for
/// thread-per-core. Those stay std listeners until their worker's runtime registers them.
enum Main {
    Shared(TcpListener),
    PerWorker(Vec<std::net::TcpListener>),
}

impl Listeners {
    pub(crate) async fn bind(
        cfg: &Config,
        runtime: Runtime,
        workers: usize,
    ) -> Result<Listeners, ServeError> {
        let bind = |addr: SocketAddr| async move {
            TcpListener::bind(addr)
                .await
                .map_err(|source| ServeError::Bind { addr, source })
        };
        let main = match runtime {
            Runtime::MultiThread => Main::Shared(bind(cfg.server.listen).await?),
            Runtime::ThreadPerCore => Main::PerWorker(bind_reuseport(cfg.server.listen, workers)?),
        };
        let metrics = match cfg.server.metrics_listen {
            Some(a) if cfg.observability.metrics => Some(bind(a).await?),
            _ => None,
        };
        Ok(Listeners { main, metrics })
    }

    pub(crate) fn main_addr(&self) -> std::io::Result<SocketAddr> {
        match &self.main {
            Main::Shared(l) => l.local_addr(),
            Main::PerWorker(ls) => ls
                .first()
                .ok_or_else(|| std::io::Error::other("no listener"))?
                .local_addr(),
        }
    }

    pub(crate) fn metrics_addr(&self) -> Option<SocketAddr> {
        self.metrics.as_ref().and_then(|l| l.local_addr().ok())
    }
}

/// `n` listeners on `addr` with `SO_REUSEPORT`; port 0 becomes the port the first one got,
/// so every worker listens on the address the summary prints.
fn bind_reuseport(addr: SocketAddr, n: usize) -> Result<Vec<std::net::TcpListener>, ServeError> {
    let mut out: Vec<std::net::TcpListener> = Vec::with_capacity(n);
    for _ in 0..n.max(1) {
        let at = match out.first() {
            Some(l) => l.local_addr().unwrap_or(addr),
            None => addr,
        };
        let l = reuseport_listener(at).map_err(|source| ServeError::Bind { addr: at, source })?;
        out.push(l);
    }
    Ok(out)
}

fn reuseport_listener(addr: SocketAddr) -> std::io::Result<std::net::TcpListener> {
    use socket2::{Domain, Protocol, Socket, Type};
    let s = Socket::new(Domain::for_address(addr), Type::STREAM, Some(Protocol::TCP))?;
    // What tokio's `TcpListener::bind` sets too: a restart need not wait out TIME_WAIT.
    s.set_reuse_address(true)?;
    // Linux lets only sockets of the same user share the port.
    s.set_reuse_port(true)?;
    s.set_nonblocking(true)?;
    s.bind(&addr.into())?;
    s.listen(1024)?;
    Ok(s.into())
}

/// The compiled gateway and its access log, built before anything listens so a set-up
/// failure exits before `listening on` is printed.
pub(crate) struct Prepared {
    gw: Arc<State>,
    metrics: Arc<Metrics>,
    writer: AccessLogWriter,
}

pub(crate) fn prepare(cfg: &Config) -> Result<Prepared, ServeError> {
    let names = cfg.models.iter().map(|m| m.name.clone()).collect();
    let metrics = Arc::new(Metrics::new(names));
    let (access_log, writer) = AccessLog::start(&cfg.observability.access_log, metrics.clone());
    let gw = Arc::new(State::build(cfg, access_log, metrics.clone())?);
    Ok(Prepared {
        gw,
        metrics,
        writer,
    })
}

/// What `run` hands back after a clean drain.
pub(crate) struct Stopped {
    /// To be finished once the runtime (and every leftover connection task) is gone.
    pub(crate) writer: AccessLogWriter,
    /// The end of the grace period: the access log gets until then to flush.
    pub(crate) deadline: Instant,
    /// Thread-per-core's worker threads, to be finished before the access log.
    pub(crate) workers: Option<Workers>,
}

/// Thread-per-core's worker threads. Each keeps driving its runtime after its drain (its
/// pooled upstream connections, or the Redis connection, may serve another worker's last
/// requests) until [`Workers::finish`], which ends them as dropping the work-stealing
/// runtime does.
pub(crate) struct Workers {
    release: Option<watch::Sender<()>>,
    threads: Vec<std::thread::JoinHandle<()>>,
}

impl Workers {
    pub(crate) fn finish(mut self) {
        drop(self.release.take());
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
    }
}

/// SIGTERM and SIGINT, counted: the first starts the drain, the second forces the exit.
pub(crate) struct Signals {
    rx: watch::Receiver<(u32, &'static str)>,
}

impl Signals {
    /// Installs the handlers (inside the runtime).
    pub(crate) fn install() -> Result<Signals, ServeError> {
        use tokio::signal::unix::{signal, SignalKind};
        let mut term = signal(SignalKind::terminate()).map_err(ServeError::Signals)?;
        let mut int = signal(SignalKind::interrupt()).map_err(ServeError::Signals)?;
        let (tx, rx) = watch::channel((0, ""));
        tokio::spawn(async move {
            loop {
                let name = tokio::select! {
                    _ = term.recv() => "SIGTERM",
                    _ = int.recv() => "SIGINT",
                };
                tx.send_modify(|(n, s)| {
                    *n += 1;
                    *s = name;
                });
            }
        });
        Ok(Signals { rx })
    }

    /// Resolves once `n` signals have arrived, with the name of the last.
    pub(crate) async fn nth(&self, n: u32) -> &'static str {
        let mut rx = self.rx.clone();
        let name = match rx.wait_for(|(count, _)| *count >= n).await {
            Ok(v) => Some(v.1),
            Err(_) => None,
        };
        match name {
            Some(name) => name,
            // The sender lives as long as the runtime; never reached in practice.
            None => std::future::pending().await,
        }
    }
}

/// Serves until the first signal, then drains for the grace period (or until a second
/// signal).
pub(crate) async fn run(
    cfg: &Config,
    prepared: Prepared,
    listeners: Listeners,
    signals: &Signals,
) -> Result<Stopped, ServeError> {
    let Prepared {
        gw,
        metrics,
        writer,
    } = prepared;
    let mut http = hyper::server::conn::http1::Builder::new();
    http.timer(TokioTimer::new())
        .header_read_timeout(Duration::from_millis(cfg.server.header_read_timeout_ms))
        .keep_alive(true);
    let grace = Duration::from_millis(cfg.server.shutdown_grace_ms);
    let (stop_tx, stop_rx) = watch::channel(false);
    // Credential refreshers run until the drain is over (requests still in flight may
    // need a fresh token): they stop when `run` returns and drops this sender.
    let (_refresh_stop, refresh_rx) = watch::channel(false);
    let tasks = std::mem::take(&mut *gw.refresh_tasks.lock().unwrap_or_else(|e| e.into_inner()));
    for task in tasks {
        tokio::spawn(task(refresh_rx.clone()));
    }
    // No per-request self-wake of a runtime (see `conn::pacemaker`): one on this runtime, and
    // one on each thread-per-core worker's (each has its own timer driver).
    let pacemaker = crate::conn::pacemaker_period(cfg);
    tokio::spawn(crate::conn::pacemaker(pacemaker));
    let cap = connection_cap(cfg.server.max_connections);
    let write_timeout = Duration::from_millis(cfg.server.client_write_timeout_ms);
    let limits = |n: usize| ConnLimits {
        slots: Arc::new(Semaphore::new(n)),
        rejecting: Arc::new(Semaphore::new(REJECTING)),
        write_timeout,
        metrics: metrics.clone(),
    };

    let handler = {
        let gw = gw.clone();
        move |req, conn| routes::route(gw.clone(), req, conn)
    };
    let mut done = Vec::new();
    let mut workers = None;
    match listeners.main {
        Main::Shared(listener) => {
            let (tx, rx) = oneshot::channel();
            let serve = accept_loop(
                listener,
                http.clone(),
                stop_rx.clone(),
                grace,
                limits(cap),
                handler,
            );
            tokio::spawn(async move {
                let _ = tx.send(serve.await);
            });
            done.push(rx);
        }
        Main::PerWorker(listeners) => {
            // One cap over all workers, as with one runtime.
            let shared = limits(cap);
            let (release, released) = watch::channel(());
            let mut threads = Vec::with_capacity(listeners.len());
            for (worker, listener) in listeners.into_iter().enumerate() {
                let (tx, rx) = oneshot::channel();
                let (http, stop, limits, handler) = (
                    http.clone(),
                    stop_rx.clone(),
                    shared.clone(),
                    handler.clone(),
                );
                let mut released = released.clone();
                let client = gw.pools.client();
                let rt = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                    .map_err(|source| ServeError::Worker { worker, source })?;
                // Within the 15 bytes Linux keeps of a thread's name.
                let thread = std::thread::Builder::new()
                    .name(format!("gw-worker-{worker}"))
                    .spawn(move || {
                        crate::client::adopt(client);
                        rt.block_on(async move {
                            tokio::spawn(crate::conn::pacemaker(pacemaker));
                            // Registered with this thread's runtime, so inside it.
                            let grace_over = match TcpListener::from_std(listener) {
                                Ok(l) => accept_loop(l, http, stop, grace, limits, handler).await,
                                Err(e) => {
                                    eprintln!("gateway: worker {worker} cannot serve: {e}");
                                    false
                                }
                            };
                            let _ = tx.send(grace_over);
                            // Err once `Workers::finish` drops the sender.
                            let _ = released.changed().await;
                        });
                        rt.shutdown_timeout(Duration::from_secs(1));
                    })
                    .map_err(|source| ServeError::Worker { worker, source })?;
                threads.push(thread);
                done.push(rx);
            }
            workers = Some(Workers {
                release: Some(release),
                threads,
            });
        }
    }
    let metrics_loop = listeners.metrics.map(|l| {
        let m = metrics.clone();
        tokio::spawn(accept_loop(
            l,
            http.clone(),
            stop_rx.clone(),
            grace,
            limits(cap.min(METRICS_CONNECTIONS)),
            move |req, _conn| routes::metrics_only(m.clone(), req),
        ))
    });

    let first = signals.nth(1).await;
    let started = Instant::now();
    eprintln!("gateway: {first}: draining for up to {grace:?}; a second signal exits at once");
    let _ = stop_tx.send(true);
    let drain = async {
        let mut grace_over = false;
        for rx in done {
            grace_over |= rx.await.unwrap_or(false);
        }
        if let Some(m) = metrics_loop {
            grace_over |= m.await.unwrap_or(false);
        }
        grace_over
    };
    tokio::select! {
        grace_over = drain => {
            if grace_over {
                // Streams dropped from here on were cut by the shutdown, not by clients.
                gw.grace_over.store(true, Relaxed);
            }
        }
        signal = signals.nth(2) => {
            gw.grace_over.store(true, Relaxed);
            return Err(ServeError::Forced {
                signal,
                open: metrics.open_connections.load(Relaxed),
            });
        }
    }
    Ok(Stopped {
        writer,
        deadline: started + grace,
        workers,
    })
}

/// Connections being refused at once at most; beyond that a refused connection is just
/// closed, so refusing never needs more than this many extra descriptors.
const REJECTING: usize = 16;

/// The metrics listener's own connection cap.
const METRICS_CONNECTIONS: usize = 64;

/// Descriptors kept for everything but client connections (listeners, the runtime, the
/// log, refusals in progress).
const FD_RESERVE: u64 = 64 + REJECTING as u64;

#[derive(Clone)]
struct ConnLimits {
    slots: Arc<Semaphore>,
    rejecting: Arc<Semaphore>,
    write_timeout: Duration,
    metrics: Arc<Metrics>,
}

/// Held for a connection's lifetime: its slot and its place in `gateway_open_connections`.
struct ConnGuard {
    _slot: OwnedSemaphorePermit,
    metrics: Arc<Metrics>,
}

impl Drop for ConnGuard {
    fn drop(&mut self) {
        self.metrics.open_connections.fetch_sub(1, Relaxed);
    }
}

/// Returns whether the grace period ran out with connections still open.
async fn accept_loop<F, Fut>(
    listener: TcpListener,
    http: hyper::server::conn::http1::Builder,
    mut stop: watch::Receiver<bool>,
    grace: Duration,
    limits: ConnLimits,
    handler: F,
) -> bool
where
    F: Fn(Request<Incoming>, Arc<ConnState>) -> Fut + Clone + Send + Sync + 'static,
    Fut: Future<Output = Result<Response<GatewayBody>, std::convert::Infallible>> + Send + 'static,
{
    let graceful = GracefulShutdown::new();
    let mut accept_errors = AcceptErrors::default();
    loop {
        let accepted = tokio::select! {
            biased;
            _ = stop.changed() => break,
            a = listener.accept() => a,
        };
        let stream = match accepted {
            Ok((s, _)) => s,
            Err(e) => {
                // Out of file descriptors and the like: back off instead of spinning, and
                // report once in a while rather than per attempt.
                accept_errors.report(&e);
                tokio::time::sleep(Duration::from_millis(50)).await;
                continue;
            }
        };
        let Ok(slot) = limits.slots.clone().try_acquire_owned() else {
            limits.metrics.connections_rejected.fetch_add(1, Relaxed);
            if let Ok(permit) = limits.rejecting.clone().try_acquire_owned() {
                tokio::spawn(refuse(stream, permit));
            }
            continue;
        };
        limits.metrics.open_connections.fetch_add(1, Relaxed);
        let guard = ConnGuard {
            _slot: slot,
            metrics: limits.metrics.clone(),
        };
        let _ = stream.set_nodelay(true);
        let state = Arc::new(ConnState::default());
        let io = TokioIo::new(ClientIo::new(stream, state.clone(), limits.write_timeout));
        let handler = handler.clone();
        let conn = http.serve_connection(io, service_fn(move |req| handler(req, state.clone())));
        let conn = graceful.watch(conn);
        tokio::spawn(async move {
            let _ = conn.await;
            drop(guard);
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
        return true;
    }
    false
}

/// Answers a connection over the cap with a 503 and closes it.
async fn refuse(mut stream: TcpStream, _permit: OwnedSemaphorePermit) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let body = ApiError::new(
        ErrorKind::Overloaded,
        "too many open connections (server.max_connections); retry later",
    )
    .body(crate::dialect::Envelope::Openai);
    let mut out = format!(
        "HTTP/1.1 503 Service Unavailable\r\ncontent-type: application/json\r\ncontent-length: {}\r\nretry-after: 1\r\nconnection: close\r\n\r\n",
        body.len()
    )
    .into_bytes();
    out.extend_from_slice(&body);
    let _ = tokio::time::timeout(Duration::from_secs(1), async {
        stream.write_all(&out).await?;
        stream.shutdown().await?;
        // Read what the client already sent, briefly: closing with unread bytes would
        // reset the connection and could discard the answer before the client reads it.
        let mut sink = [0u8; 4096];
        let _ = tokio::time::timeout(Duration::from_millis(100), async {
            while stream.read(&mut sink).await? > 0 {}
            Ok::<_, std::io::Error>(())
        })
        .await;
        Ok::<_, std::io::Error>(())
    })
    .await;
}

/// Rate-limits accept-error reports to one per [`AcceptErrors::EVERY`].
#[derive(Default)]
struct AcceptErrors {
    last: Option<Instant>,
    suppressed: u64,
}

impl AcceptErrors {
    const EVERY: Duration = Duration::from_secs(10);

    fn report(&mut self, e: &std::io::Error) {
        if self.last.is_some_and(|t| t.elapsed() < Self::EVERY) {
            self.suppressed += 1;
            return;
        }
        if self.suppressed > 0 {
            eprintln!(
                "gateway: accept failed: {e} ({} more since the last report)",
                self.suppressed
            );
        } else {
            eprintln!("gateway: accept failed: {e}");
        }
        self.last = Some(Instant::now());
        self.suppressed = 0;
    }
}

/// `server.max_connections`, clamped to what the open-file limit allows (each client
/// connection may need an upstream socket too). The soft limit is raised to the hard one
/// first, as servers do.
fn connection_cap(configured: usize) -> usize {
    let Some(limit) = raise_nofile_limit() else {
        return configured;
    };
    let fits = (limit.saturating_sub(FD_RESERVE) / 2).max(1);
    let fits = usize::try_from(fits).unwrap_or(usize::MAX);
    if fits < configured {
        eprintln!(
            "gateway: server.max_connections {configured} lowered to {fits}: the open-file limit is {limit}"
        );
        return fits;
    }
    configured
}

fn raise_nofile_limit() -> Option<u64> {
    let mut rl = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit/setrlimit only read and write the struct passed.
    unsafe {
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut rl) != 0 {
            return None;
        }
        let want = rl.rlim_max.min(1 << 20);
        if rl.rlim_cur < want {
            let raised = libc::rlimit {
                rlim_cur: want,
                rlim_max: rl.rlim_max,
            };
            if libc::setrlimit(libc::RLIMIT_NOFILE, &raised) == 0 {
                rl.rlim_cur = want;
            }
        }
    }
    Some(rl.rlim_cur)
}
