//! What a target needs to know to encode a request for its upstream.

use super::policy;
use crate::dialect::Provider;

/// What a target needs to know to encode a request for its upstream.
#[derive(Debug, Clone, Copy)]
pub(crate) struct TargetInfo<'a> {
    pub(crate) provider: Provider,
    /// The upstream model name.
    pub(crate) model: &'a str,
    /// `max_tokens` to send to Anthropic when the client sent none.
    pub(crate) default_max_tokens: u64,
    /// Whether the upstream model takes a reasoning effort (`reasoning = true`).
    pub(crate) reasoning: bool,
    pub(crate) policy: policy::Policy,
}
