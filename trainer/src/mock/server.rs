//! The accept loop: HTTP/1.1 keep-alive connections with TCP_NODELAY, each its own task,
//! all aborted at shutdown (stalled streams would otherwise never end).

use std::sync::Arc;
use std::time::Duration;

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
    let service = service_fn(move |req| {
        let shared = Arc::clone(&shared);
        async move { Ok::<_, std::convert::Infallible>(shared.handle(req).await) }
    });
    // A client that hangs up mid-response is routine in tests; nothing to report.
    let _ = http1::Builder::new()
        .keep_alive(true)
        .serve_connection(TokioIo::new(stream), service)
        .await;
}
