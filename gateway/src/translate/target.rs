//! What a target needs to know to encode a request for its upstream.

use super::policy;
#[cfg(test)]
use crate::dialect::Provider;

/// What a target needs to know to encode a request for its upstream.
#[derive(Debug, Clone, Copy)]
pub(crate) struct TargetInfo<'a> {
    /// A chat limit goes in `max_completion_tokens`, not `max_tokens` (its provider's
    /// quirk: `crate::providers::Quirks`).
    pub(crate) max_completion_tokens: bool,
    /// The upstream model name.
    pub(crate) model: &'a str,
    /// `max_tokens` to send to Anthropic when the client sent none.
    pub(crate) default_max_tokens: u64,
    /// Whether the upstream model takes a reasoning effort (`reasoning = true`).
    pub(crate) reasoning: bool,
    /// Its model's sampling rule (`sampling`), compiled at start-up.
    pub(crate) sampling: super::sampling::Rule,
    pub(crate) policy: policy::Policy,
}

#[cfg(test)]
impl<'a> TargetInfo<'a> {
    /// A target of `provider` for unit tests: no reasoning control, the default policy.
    pub(crate) fn plain(provider: Provider, model: &'a str, default_max_tokens: u64) -> Self {
        TargetInfo {
            max_completion_tokens: crate::providers::home(provider)
                .quirks
                .max_completion_tokens,
            model,
            default_max_tokens,
            reasoning: false,
            sampling: super::sampling::Rule::of(crate::providers::home(provider).api, model, None),
            policy: policy::Policy::default(),
        }
    }
}
