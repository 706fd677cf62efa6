//! The HTTP/1 client connection every client in this crate (and in the bench and the
//! gateway's tests) opens: hyper's handshake on a stream, its connection task spawned.

use hyper::body::Body;
use hyper::client::conn::http1::SendRequest;
use hyper_util::rt::TokioIo;
use tokio::io::{AsyncRead, AsyncWrite};

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
