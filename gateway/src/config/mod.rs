//! The gateway's TOML configuration: schema, loading and validation, one file per concern
//! (`server`, `targets`, `limits`, `keys`; a provider's own target keys are its home's,
//! `crate::providers`).
//!
//! Everything here runs once at start-up. Validation turns the raw file into a
//! [`Config`] whose tables the hot path can use without further checks
//! (see `crate::state` for the compiled form).

use std::path::Path;

use serde::Deserialize;

mod error;
mod keys;
mod limits;
mod server;
mod targets;
#[cfg(test)]
mod tests;

pub(crate) use crate::env::EnvError;
use error::invalid;
pub(crate) use error::{ConfigError, Invalid};
pub(crate) use keys::ApiKey;
pub(crate) use limits::{LimitsBackend, RateLimit, RateLimits, RedisLimits, WhenDown};
pub(crate) use server::{check_listeners, AccessLogSink, Observability, Runtime, Server, Upstream};
pub(crate) use targets::{BuiltinTools, Model, Translation};

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Config {
    #[serde(default)]
    pub(crate) server: Server,
    #[serde(default)]
    pub(crate) upstream: Upstream,
    #[serde(default)]
    pub(crate) observability: Observability,
    #[serde(default)]
    pub(crate) translation: Translation,
    #[serde(default)]
    pub(crate) rate_limits: RateLimits,
    /// Gateway API keys. None configured = no authentication (local use only).
    #[serde(default)]
    pub(crate) keys: Vec<ApiKey>,
    pub(crate) models: Vec<Model>,
}

impl Config {
    /// Reads, parses and validates a config file.
    pub(crate) fn load(path: &Path) -> Result<Config, ConfigError> {
        let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Read {
            path: path.to_owned(),
            source,
        })?;
        Config::parse(&text, path)
    }

    /// Parses and validates config text; `path` only names the file in errors.
    pub(crate) fn parse(text: &str, path: &Path) -> Result<Config, ConfigError> {
        let config: Config = toml::from_str(text).map_err(|e| ConfigError::Parse {
            path: path.to_owned(),
            message: describe_toml_error(&e),
        })?;
        config.validate(path)?;
        Ok(config)
    }

    fn validate(&self, path: &Path) -> Result<(), ConfigError> {
        self.check().map_err(|invalid| ConfigError::Invalid {
            path: path.to_owned(),
            invalid,
        })
    }
    fn check(&self) -> Result<(), Invalid> {
        if self.models.is_empty() {
            return Err(invalid("models", "at least one model is required"));
        }
        server::check(&self.server, &self.upstream, &self.translation)?;
        limits::check_rate_limits(&self.rate_limits)?;
        let names = targets::check_models(&self.models)?;
        keys::check_keys(&self.keys, &names)
    }
}

/// toml's errors already name the key and quote the line; keep them on one line.
fn describe_toml_error(e: &toml::de::Error) -> String {
    let msg = e.message().trim().to_owned();
    match e.span() {
        Some(span) => format!("{msg} (at byte {})", span.start),
        None => msg,
    }
}
