//! The only change a passthrough stream's bytes go through here, on identity-encoded streams
//! only: the usage chunk the gateway asked for comes out again (`usage_chunk.rs`). It may
//! hold back the bytes of an event not yet complete; `finish` releases them. (Secrets are
//! redacted from every answer in one place: `crate::redact::answer`.)

use bytes::Bytes;

use super::usage_chunk::UsageChunkFilter;

pub(super) struct Rewrites {
    strip_usage: UsageChunkFilter,
}

impl Rewrites {
    /// `None` when there is nothing to change: the stream's frames then pass as they are.
    pub(super) fn new(strip_usage: bool) -> Option<Box<Rewrites>> {
        strip_usage.then(|| {
            Box::new(Rewrites {
                strip_usage: UsageChunkFilter::new(),
            })
        })
    }

    /// What of `data` (and of what was held back) goes on now.
    pub(super) fn feed(&mut self, data: &Bytes) -> Bytes {
        self.strip_usage.feed(data)
    }

    /// The end of the stream: everything held back.
    pub(super) fn finish(&mut self) -> Bytes {
        self.strip_usage.finish()
    }
}
