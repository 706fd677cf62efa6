//! The response body type every handler returns.

use std::task::Poll;

use bytes::Bytes;
use http_body::Frame;
use http_body_util::{combinators::BoxBody, BodyExt, Full};

/// Boxed so passthrough streams, buffered JSON and errors share one type. The error type is
/// the upstream's, so a failed upstream read aborts the client connection (a truncated stream
/// is visible to the client, unlike a silently ended one).
pub(crate) type GatewayBody = BoxBody<Bytes, BodyError>;

pub(crate) type BodyError = Box<dyn std::error::Error + Send + Sync>;

/// What a response body's `poll_frame` returns (every body here has `Bytes` and [`BodyError`]).
pub(crate) type Polled = Poll<Option<Result<Frame<Bytes>, BodyError>>>;

pub(crate) fn full(bytes: impl Into<Bytes>) -> GatewayBody {
    Full::new(bytes.into())
        .map_err(|never| match never {})
        .boxed()
}
