//! The HTTP/1 client connection every client in this crate (and in the bench and the
//! gateway's tests) opens: hyper's handshake on a stream, its connection task spawned.

use hyper::body::Body;
use hyper::client::conn::http1::SendRequest;
use hyper_util::rt::TokioIo;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::{TcpStream, ToSocketAddrs};

/// An HTTP/1 client on `io`, its connection driven by a spawned task. A connection's end
/// shows up as an error on the sender's next request, so the task's own result is dropped.
pub async fn handshake<T, B>(io: T) -> hyper::Result<SendRequest<B>>
where
    T: AsyncRead + AsyncWrite + Send + Unpin + 'static,
    B: Body + Send + 'static,
    B::Data: Send,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    let (sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(io)).await?;
    tokio::spawn(async move {
        let _ = conn.await;
    });
    Ok(sender)
}

/// [`handshake`] on a fresh TCP connection to `addr`, Nagle off (requests are small and
/// latency-bound). The error names the step that failed and the address.
pub async fn connect<A, B>(addr: A) -> Result<SendRequest<B>, String>
where
    A: ToSocketAddrs + std::fmt::Display,
    B: Body + Send + 'static,
    B::Data: Send,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    let tcp = TcpStream::connect(&addr)
        .await
        .map_err(|e| format!("connect {addr}: {e}"))?;
    tcp.set_nodelay(true)
        .map_err(|e| format!("connect {addr}: {e}"))?;
    handshake(tcp)
        .await
        .map_err(|e| format!("handshake with {addr}: {e}"))
}
