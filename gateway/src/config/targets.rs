//! `[[models]]`, their `[[models.targets]]` and `[translation]`: names unique, targets
//! present, each target's keys checked (its provider's own by the provider,
//! `crate::providers`).

use std::collections::HashSet;

use serde::Deserialize;

use super::error::{invalid, Invalid, Problem};
use super::limits::{check_rate_limit, RateLimit};
use crate::providers::KeyError;
pub(crate) use crate::providers::Target;

/// Knobs of the translation between dialects (`[translation]`).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub(crate) struct Translation {
    /// `max_tokens` sent to an Anthropic target when a translated client sent none
    /// (Anthropic requires it; OpenAI clients may omit it). A model may override it.
    pub(crate) default_max_tokens: u64,
    /// Refuse the client-side fields the default policy drops (`context_management`,
    /// `client_metadata`, ...; TRANSLATION.md). A model may override it.
    pub(crate) strict: bool,
    /// What becomes of tools only the client's provider runs (`web_search`, ...).
    pub(crate) builtin_tools: BuiltinTools,
}

impl Default for Translation {
    fn default() -> Self {
        Translation {
            default_max_tokens: 4096,
            strict: false,
            builtin_tools: BuiltinTools::Refuse,
        }
    }
}

/// `builtin_tools`: a 400 naming each (`refuse`, the default) or removed (`drop`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum BuiltinTools {
    Refuse,
    Drop,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Model {
    /// The client-facing model name.
    pub(crate) name: String,
    /// Tried in order: on connect failure or a 5xx before the first response byte, the next.
    pub(crate) targets: Vec<Target>,
    pub(crate) rate_limit: Option<RateLimit>,
    /// Client headers forwarded to this model's targets on top of the fixed allow-list
    /// (`crate::headers`). Credentials, framing and hop-by-hop headers are refused.
    #[serde(default)]
    pub(crate) forward_headers: Vec<String>,
    /// Overrides `translation.default_max_tokens` for this model.
    pub(crate) default_max_tokens: Option<u64>,
    /// Overrides `translation.strict` for this model.
    pub(crate) strict: Option<bool>,
    /// Overrides `translation.builtin_tools` for this model.
    pub(crate) builtin_tools: Option<BuiltinTools>,
}

/// Every model and target; the model names, for the keys' allow-lists.
pub(crate) fn check_models(models: &[Model]) -> Result<HashSet<&str>, Invalid> {
    let mut names = HashSet::new();
    for (i, m) in models.iter().enumerate() {
        let at = format!("models[{i}]");
        if m.name.is_empty() {
            return Err(invalid(format!("{at}.name"), "must not be empty"));
        }
        if !names.insert(m.name.as_str()) {
            return Err(invalid(
                format!("{at}.name"),
                Problem::DuplicateModel(m.name.clone()),
            ));
        }
        if m.targets.is_empty() {
            return Err(invalid(
                format!("{at}.targets"),
                "at least one target is required",
            ));
        }
        if let Some(rl) = &m.rate_limit {
            check_rate_limit(rl, &format!("{at}.rate_limit"))?;
        }
        if m.default_max_tokens == Some(0) {
            return Err(invalid(format!("{at}.default_max_tokens"), "must be > 0"));
        }
        for (j, h) in m.forward_headers.iter().enumerate() {
            crate::headers::check_extra_forward(h)
                .map_err(|e| invalid(format!("{at}.forward_headers[{j}]"), e))?;
        }
        for (j, t) in m.targets.iter().enumerate() {
            check_target(t, &format!("{at}.targets[{j}]"))?;
        }
    }
    Ok(names)
}

/// One target: the keys every provider reads, and its provider's own (refused on others').
fn check_target(t: &Target, at: &str) -> Result<(), Invalid> {
    let home = crate::providers::home(t.provider);
    if t.base_url.is_none() && home.default_base_url.is_none() {
        return Err(invalid(format!("{at}.base_url"), "is required"));
    }
    if t.model.is_empty() {
        return Err(invalid(format!("{at}.model"), "must not be empty"));
    }
    crate::providers::check_keys(t).map_err(|KeyError { key, problem }| {
        let key = match key {
            "" => at.to_owned(),
            k => format!("{at}.{k}"),
        };
        invalid(key, problem)
    })?;
    if let Err(e) = crate::upstream_url::UpstreamUrl::parse(&t.base_url()) {
        return Err(invalid(format!("{at}.base_url"), e));
    }
    if let Some(var) = &t.api_key_env {
        crate::providers::target::check_upstream_key(var, t.key_header())
            .map_err(|e| invalid(format!("{at}.api_key_env"), e))?;
    }
    Ok(())
}
