//! `[rate_limits]` and the `rate_limit` tables of models and keys.

use serde::Deserialize;

use super::error::{invalid, Invalid};
use crate::env::{env_secret, EnvError};

/// Requests and tokens per minute; either may be absent.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RateLimit {
    pub(crate) requests_per_minute: Option<u64>,
    pub(crate) tokens_per_minute: Option<u64>,
}

/// Where the rate limits' buckets live (`[rate_limits]`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum LimitsBackend {
    /// In this process: each replica grants the whole budget.
    #[default]
    Memory,
    /// In one Redis shared by every replica (`[rate_limits.redis]`).
    Redis,
}

/// What a request gets while Redis cannot be asked (down, slow, restarting).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum WhenDown {
    /// Admitted unlimited.
    Open,
    /// Refused: a 503 in the caller's dialect, with `Retry-After`.
    Closed,
    /// This process's own buckets apply (each replica grants the whole budget again).
    Memory,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub(crate) struct RateLimits {
    pub(crate) backend: LimitsBackend,
    pub(crate) redis: Option<RedisLimits>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub(crate) struct RedisLimits {
    /// `redis://host:port/db` or `redis+unix:///path`; credentials belong in `url_env`.
    pub(crate) url: Option<String>,
    /// Name of an environment variable holding the URL (it may carry a password).
    pub(crate) url_env: Option<String>,
    /// Prepended to every bucket's key (`<prefix>key:<name>`, `<prefix>model:<name>`).
    pub(crate) key_prefix: String,
    /// The longest a request waits on Redis (connect or answer) before `when_down` applies.
    pub(crate) timeout_ms: u64,
    pub(crate) when_down: WhenDown,
    /// After a failure, requests skip Redis (`when_down` applies at once) for this long
    /// before one asks again: an outage costs each request nothing, not `timeout_ms`.
    pub(crate) recheck_ms: u64,
}

impl Default for RedisLimits {
    fn default() -> Self {
        RedisLimits {
            url: None,
            url_env: None,
            key_prefix: "gateway:ratelimit:".to_owned(),
            timeout_ms: 100,
            when_down: WhenDown::Memory,
            recheck_ms: 1_000,
        }
    }
}

impl RedisLimits {
    /// The URL, from the file or its environment variable (validation checked one is set).
    pub(crate) fn url(&self) -> Result<String, EnvError> {
        match (&self.url, &self.url_env) {
            (Some(u), _) => Ok(u.clone()),
            (None, Some(var)) => env_secret(var),
            (None, None) => Err(EnvError::EmptyName),
        }
    }
}

/// `[rate_limits]`: a Redis backend needs its URL; a `[rate_limits.redis]` table without
/// `backend = "redis"` is a mistake worth naming (limits the operator thinks are shared).
pub(crate) fn check_rate_limits(rl: &RateLimits) -> Result<(), Invalid> {
    let redis = match (rl.backend, &rl.redis) {
        (LimitsBackend::Memory, None) => return Ok(()),
        (LimitsBackend::Memory, Some(_)) => {
            return Err(invalid(
                "rate_limits.backend",
                "set it to \"redis\" to use [rate_limits.redis], or remove that table",
            ))
        }
        (LimitsBackend::Redis, None) => {
            return Err(invalid(
                "rate_limits.redis",
                "backend \"redis\" needs a [rate_limits.redis] table with url or url_env",
            ))
        }
        (LimitsBackend::Redis, Some(r)) => r,
    };
    let url = match (&redis.url, &redis.url_env) {
        (Some(_), Some(_)) => {
            return Err(invalid("rate_limits.redis", "set url or url_env, not both"))
        }
        (None, None) => return Err(invalid("rate_limits.redis.url", "is required (or url_env)")),
        (Some(u), None) => u.clone(),
        (None, Some(var)) => {
            env_secret(var).map_err(|e| invalid("rate_limits.redis.url_env", e))?
        }
    };
    // Never quote the URL: it may carry a password.
    if !(["redis://", "redis+unix://", "unix://"]
        .iter()
        .any(|s| url.starts_with(s)))
    {
        return Err(invalid(
            "rate_limits.redis.url",
            "must start with redis://, redis+unix:// or unix:// (no TLS: keep Redis on a private network)",
        ));
    }
    for (k, v) in [
        ("rate_limits.redis.timeout_ms", redis.timeout_ms),
        ("rate_limits.redis.recheck_ms", redis.recheck_ms),
    ] {
        if v == 0 {
            return Err(invalid(k, "must be > 0 milliseconds"));
        }
    }
    Ok(())
}

pub(crate) fn check_rate_limit(rl: &RateLimit, at: &str) -> Result<(), Invalid> {
    if rl.requests_per_minute.is_none() && rl.tokens_per_minute.is_none() {
        return Err(invalid(
            at,
            "set requests_per_minute and/or tokens_per_minute",
        ));
    }
    for (k, v) in [
        ("requests_per_minute", rl.requests_per_minute),
        ("tokens_per_minute", rl.tokens_per_minute),
    ] {
        if v == Some(0) {
            return Err(invalid(format!("{at}.{k}"), "must be > 0"));
        }
    }
    Ok(())
}
