//! The only changes a passthrough stream's bytes go through, both on identity-encoded
//! streams only: the usage chunk the gateway asked for comes out again
//! (`usage_chunk.rs`), and the upstream key is redacted (`crate::redact`). Each may hold
//! back the bytes of an event or key not yet complete; `finish` releases them.

use std::sync::Arc;

use bytes::Bytes;

use super::usage_chunk::UsageChunkFilter;
use crate::redact::StreamRedactor;

pub(super) struct Rewrites {
    strip_usage: Option<UsageChunkFilter>,
    redact: Option<StreamRedactor>,
}

impl Rewrites {
    /// `None` when there is nothing to change: the stream's frames then pass as they are.
    pub(super) fn new(strip_usage: bool, secret: Option<&Arc<[u8]>>) -> Option<Box<Rewrites>> {
        if !strip_usage && secret.is_none() {
            return None;
        }
        Some(Box::new(Rewrites {
            strip_usage: strip_usage.then(UsageChunkFilter::new),
            redact: secret.map(|s| StreamRedactor::new(s.clone())),
        }))
    }

    /// What of `data` (and of what was held back) goes on now.
    pub(super) fn feed(&mut self, data: &Bytes) -> Bytes {
        let data = match &mut self.strip_usage {
            Some(f) => f.feed(data),
            None => data.clone(),
        };
        match &mut self.redact {
            Some(r) => r.feed(data),
            None => data,
        }
    }

    /// The end of the stream: everything held back.
    pub(super) fn finish(&mut self) -> Bytes {
        let tail = match &mut self.strip_usage {
            Some(f) => f.finish(),
            None => Bytes::new(),
        };
        match &mut self.redact {
            Some(r) => {
                let mut out = r.feed(tail).to_vec();
                out.extend_from_slice(&r.finish());
                Bytes::from(out)
            }
            None => tail,
        }
    }
}
