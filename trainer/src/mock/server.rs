//! The accept loop: HTTP/1.1 keep-alive connections with TCP_NODELAY, each its own task,
//! all aborted at shutdown (stalled streams would otherwise never end); over TLS when the
//! config has it, and closed after every `close_every` responses when set (so the client opens
//! a new connection, and handshakes again, as production's upstreams make it do).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use hyper::rt::{Read, Write};
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::oneshot;
use tokio::task::{JoinHandle, JoinSet};

use super::handler::Shared;

/// Stops the accept loop started by [`spawn`].
pub(crate) struct ServerHandle {
    stop: oneshot::Sender<()>,
    task: JoinHandle<()>,
}

impl ServerHandle {
    /// Stops accepting, then aborts every connection and waits until they are closed.
    pub(crate) async fn shutdown(self) {
        let _ = self.stop.send(());
        let _ = self.task.await;
    }

    /// Like `shutdown`, without waiting: dropping the task's `JoinSet` aborts the connections.
    pub(crate) fn abort(self) {
        self.task.abort();
    }
}

pub(crate) fn spawn(listener: TcpListener, shared: Arc<Shared>) -> ServerHandle {
    let (stop, stopped) = oneshot::channel();
    let task = tokio::spawn(accept_loop(listener, shared, stopped));
    ServerHandle { stop, task }
}

async fn accept_loop(
    listener: TcpListener,
    shared: Arc<Shared>,
    mut stopped: oneshot::Receiver<()>,
) {
    let mut connections = JoinSet::new();
    loop {
        tokio::select! {
            _ = &mut stopped => break,
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => {
                    connections.spawn(serve(stream, Arc::clone(&shared)));
                }
                // Out of file descriptors and the like: back off instead of spinning.
                Err(_) => tokio::time::sleep(Duration::from_millis(5)).await,
            },
            Some(_) = connections.join_next(), if !connections.is_empty() => {}
        }
    }
    drop(listener);
    connections.shutdown().await;
}

async fn serve(stream: TcpStream, shared: Arc<Shared>) {
    let _ = stream.set_nodelay(true);
    shared.connections.fetch_add(1, Ordering::Relaxed);
    match shared.config().tls.clone() {
        None => serve_http(TokioIo::new(stream), shared).await,
        Some(tls) => {
            // A client that gives up mid-handshake is no request; nothing to report.
            if let Ok(stream) = tls.acceptor.accept(stream).await {
                shared.handshakes.fetch_add(1, Ordering::Relaxed);
                serve_http(TokioIo::new(stream), shared).await;
            }
        }
    }
}

async fn serve_http<I>(io: I, shared: Arc<Shared>)
where
    I: Read + Write + Unpin + Send + 'static,
{
    let close_every = shared.config().close_every;
    let served = Arc::new(AtomicU64::new(0));
    let service = service_fn(move |req| {
        let shared = Arc::clone(&shared);
        let served = Arc::clone(&served);
        async move {
            let mut response = shared.handle(req).await;
            let n = served.fetch_add(1, Ordering::Relaxed) + 1;
            // hyper closes the connection after a response that says so; the client then
            // knows not to reuse it (no race with a request already on its way).
            if close_every.is_some_and(|every| n.is_multiple_of(every.get())) {
                response.headers_mut().insert(
                    http::header::CONNECTION,
                    http::HeaderValue::from_static("close"),
                );
            }
            Ok::<_, std::convert::Infallible>(response)
        }
    });
    // A client that hangs up mid-response is routine in tests; nothing to report.
    let _ = http1::Builder::new()
        .keep_alive(true)
        .serve_connection(io, service)
        .await;
}
