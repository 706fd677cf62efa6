//! Buffering non-streaming upstream bodies (to read their usage) within bounds: one body
//! may not exceed `upstream.max_response_body_bytes`, and all bodies buffered at once may
//! not exceed `upstream.max_buffered_bytes`. A reservation is held until the client has
//! been sent the body, since that is how long the bytes stay in memory.

use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use http_body::{Body, Frame, SizeHint};
use http_body_util::BodyExt;
use hyper::body::Incoming;

use crate::body::{BodyError, Polled};

/// The gateway-wide budget of buffered upstream bytes.
#[derive(Debug)]
pub(crate) struct BufferBudget {
    used: AtomicUsize,
    max: usize,
}

/// Bytes taken from a [`BufferBudget`]; given back on drop.
#[derive(Debug)]
pub(crate) struct Reservation {
    budget: Arc<BufferBudget>,
    bytes: usize,
}

impl BufferBudget {
    pub(crate) fn new(max: usize) -> BufferBudget {
        BufferBudget {
            used: AtomicUsize::new(0),
            max,
        }
    }

    #[cfg(test)]
    fn used(&self) -> usize {
        self.used.load(Ordering::Relaxed)
    }

    fn take(&self, n: usize) -> bool {
        self.used
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |u| {
                u.checked_add(n).filter(|&t| t <= self.max)
            })
            .is_ok()
    }

    pub(crate) fn reserve(self: &Arc<Self>, n: usize) -> Option<Reservation> {
        self.take(n).then(|| Reservation {
            budget: self.clone(),
            bytes: n,
        })
    }
}

impl Reservation {
    /// Grows the reservation to `total` bytes.
    fn grow_to(&mut self, total: usize) -> bool {
        if total <= self.bytes {
            return true;
        }
        if self.budget.take(total - self.bytes) {
            self.bytes = total;
            true
        } else {
            false
        }
    }
}

impl Drop for Reservation {
    fn drop(&mut self) {
        self.budget.used.fetch_sub(self.bytes, Ordering::AcqRel);
    }
}

/// Why an upstream body could not be buffered.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub(crate) enum BufferError {
    #[error("upstream body stalled")]
    Stalled,
    #[error("upstream body took longer than upstream.response_timeout_ms")]
    Deadline,
    #[error("upstream body could not be read")]
    Read,
    #[error("upstream body is larger than upstream.max_response_body_bytes")]
    TooLarge,
    #[error("the gateway is buffering too many upstream bytes; retry later")]
    Overloaded,
}

/// Reads a whole upstream body within the per-body limit and the shared budget, with at
/// most `idle` between frames and `deadline` for all of it.
pub(crate) async fn read(
    mut body: Incoming,
    idle: Duration,
    deadline: Duration,
    max: usize,
    budget: &Arc<BufferBudget>,
) -> Result<(Bytes, Reservation), BufferError> {
    // A declared length is reserved up front, so a refusal comes before any byte is read.
    let declared = body.size_hint().exact().map(|n| n as usize);
    if declared.is_some_and(|n| n > max) {
        return Err(BufferError::TooLarge);
    }
    let mut reservation = budget
        .reserve(declared.unwrap_or(0))
        .ok_or(BufferError::Overloaded)?;
    let until = tokio::time::Instant::now() + deadline;
    let mut first: Option<Bytes> = None;
    let mut buf = Vec::new();
    let mut len = 0usize;
    loop {
        let frame =
            match tokio::time::timeout_at(until, tokio::time::timeout(idle, body.frame())).await {
                Err(_) => return Err(BufferError::Deadline),
                Ok(Err(_)) => return Err(BufferError::Stalled),
                Ok(Ok(None)) => break,
                Ok(Ok(Some(Err(_)))) => return Err(BufferError::Read),
                Ok(Ok(Some(Ok(f)))) => f,
            };
        let Ok(data) = frame.into_data() else {
            continue;
        };
        len += data.len();
        if len > max {
            return Err(BufferError::TooLarge);
        }
        if !reservation.grow_to(len) {
            return Err(BufferError::Overloaded);
        }
        // The common case is one frame: keep it without copying.
        match first.take() {
            None if buf.is_empty() => first = Some(data),
            prev => {
                if let Some(p) = prev {
                    buf.extend_from_slice(&p);
                }
                buf.extend_from_slice(&data);
            }
        }
    }
    Ok((first.unwrap_or_else(|| Bytes::from(buf)), reservation))
}

/// A buffered body that keeps its reservation until it is sent (or dropped).
pub(crate) struct BufferedBody {
    data: Option<Bytes>,
    _reservation: Reservation,
}

impl BufferedBody {
    pub(crate) fn new(data: Bytes, reservation: Reservation) -> BufferedBody {
        BufferedBody {
            data: (!data.is_empty()).then_some(data),
            _reservation: reservation,
        }
    }
}

impl Body for BufferedBody {
    type Data = Bytes;
    type Error = BodyError;

    fn poll_frame(mut self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Polled {
        Poll::Ready(self.data.take().map(|d| Ok(Frame::data(d))))
    }

    fn is_end_stream(&self) -> bool {
        self.data.is_none()
    }

    fn size_hint(&self) -> SizeHint {
        SizeHint::with_exact(self.data.as_ref().map_or(0, |d| d.len() as u64))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn budget_is_shared_and_returned() {
        let b = Arc::new(BufferBudget::new(100));
        let mut r1 = b.reserve(60).unwrap();
        assert!(b.reserve(50).is_none());
        assert!(r1.grow_to(90));
        assert!(!r1.grow_to(101));
        drop(r1);
        assert_eq!(b.used(), 0);
        assert!(b.reserve(100).is_some());
    }
}
