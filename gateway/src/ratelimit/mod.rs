//! Rate limits: requests and tokens per minute, per API key and per model.
//!
//! Requests are charged on admission. Tokens are only known once the response reports its
//! usage, so a request is admitted while the token bucket is not in debt and charged
//! afterwards (the bucket may go negative; later requests wait until it refills).
//!
//! Where the buckets live is the `[rate_limits]` backend: `bucket.rs`, in this process, or
//! `redis.rs`, one Redis shared by every replica (the same rules, in `admit.lua` and
//! `charge.lua`, run atomically by Redis). Both answer a refusal the same way: a 429 with
//! `Retry-After` and the `x-ratelimit-*` headers of [`Rejection::write_headers`].

mod bucket;
mod redis;

use std::sync::Arc;
use std::time::Duration;

use http::{HeaderMap, HeaderName, HeaderValue};

pub(crate) use bucket::Limiter;
pub(crate) use redis::RedisError;

use crate::config::RateLimits;
use crate::metrics::Metrics;

/// The deepest a token bucket can go into debt, in minutes of refill. Usage comes from the
/// upstream: an absurd report (1.8e19 tokens) must lock a key out for a bounded time, not
/// for ever, and must keep every figure finite.
const MAX_DEBT_MINUTES: f64 = 60.0;

/// The longest wait ever reported (`Retry-After`, `x-ratelimit-reset-*`).
const MAX_WAIT: Duration = Duration::from_secs(24 * 3600);

/// Whose limit refused a request (the `scope` label of `gateway_rate_limited_total`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Scope {
    Key,
    Model,
}

impl Scope {
    const fn label(self) -> &'static str {
        match self {
            Scope::Key => "key",
            Scope::Model => "model",
        }
    }
}

/// Why a request was refused, with what the 429's headers report.
#[derive(Debug, Clone)]
pub(crate) struct Rejection {
    pub(crate) retry_after: Duration,
    pub(crate) what: &'static str,
    pub(crate) scope: Scope,
    headers: Snapshot,
}

/// The refusing bucket's limit, remaining budget and time until full, for `x-ratelimit-*`.
#[derive(Debug, Clone, Default)]
struct Snapshot {
    requests: Option<(u64, u64, Duration)>,
    tokens: Option<(u64, u64, Duration)>,
}

/// Why [`Limits::admit`] said no.
#[derive(Debug)]
pub(crate) enum Refusal {
    /// Over a limit: a 429.
    Limited(Rejection),
    /// Redis cannot be asked and `when_down = "closed"`: a 503.
    Unavailable,
}

/// The rate limits' backend (`[rate_limits]`).
pub(crate) struct Limits {
    /// `None`: in this process only.
    shared: Option<redis::Shared>,
}

impl Limits {
    /// Connects lazily: a Redis that is down at start-up is the same as one that goes down.
    pub(crate) fn build(cfg: &RateLimits, metrics: &Arc<Metrics>) -> Result<Limits, RedisError> {
        let shared = match (&cfg.backend, &cfg.redis) {
            (crate::config::LimitsBackend::Redis, Some(r)) => {
                Some(redis::Shared::connect(r, metrics.clone())?)
            }
            _ => None,
        };
        Ok(Limits { shared })
    }

    /// Admits a request under its key's and its model's limits (either may be absent), or
    /// says why not. Nothing is taken from either when one refuses.
    pub(crate) async fn admit(
        &self,
        key: Option<&Limiter>,
        model: Option<&Limiter>,
    ) -> Result<(), Refusal> {
        if key.is_none() && model.is_none() {
            return Ok(());
        }
        match &self.shared {
            None => admit_here(key, model).map_err(Refusal::Limited),
            Some(s) => s.admit(key, model).await,
        }
    }

    /// Charges the tokens a finished request used. With Redis this only starts the update:
    /// it is called from the request's settlement, which must not wait.
    pub(crate) fn charge(&self, key: Option<&Limiter>, model: Option<&Limiter>, tokens: u64) {
        if tokens == 0 {
            return;
        }
        // This process's buckets are charged with Redis too: they decide while Redis is down
        // (`when_down = "memory"`) and should know what this replica spent.
        for l in [key, model].into_iter().flatten() {
            l.charge_tokens(tokens);
        }
        if let Some(s) = &self.shared {
            s.charge(key, model, tokens);
        }
    }
}

/// The in-process decision: the key's limiter, then the model's; a model refusal refunds
/// the key's request.
fn admit_here(key: Option<&Limiter>, model: Option<&Limiter>) -> Result<(), Rejection> {
    if let Some(k) = key {
        k.admit()?;
    }
    if let Some(m) = model {
        if let Err(r) = m.admit() {
            if let Some(k) = key {
                k.refund();
            }
            return Err(r);
        }
    }
    Ok(())
}

impl Rejection {
    /// `Retry-After` (whole seconds, rounded up) and the OpenAI-style `x-ratelimit-*` set.
    pub(crate) fn write_headers(&self, h: &mut HeaderMap) {
        let secs = self.retry_after.as_secs() + u64::from(self.retry_after.subsec_nanos() > 0);
        h.insert(http::header::RETRY_AFTER, HeaderValue::from(secs.max(1)));
        let mut put = |name: &'static str, v: String| {
            if let Ok(v) = HeaderValue::try_from(v) {
                h.insert(HeaderName::from_static(name), v);
            }
        };
        if let Some((limit, remaining, reset)) = self.headers.requests {
            put("x-ratelimit-limit-requests", limit.to_string());
            put("x-ratelimit-remaining-requests", remaining.to_string());
            put(
                "x-ratelimit-reset-requests",
                format!("{:.3}s", reset.as_secs_f64()),
            );
        }
        if let Some((limit, remaining, reset)) = self.headers.tokens {
            put("x-ratelimit-limit-tokens", limit.to_string());
            put("x-ratelimit-remaining-tokens", remaining.to_string());
            put(
                "x-ratelimit-reset-tokens",
                format!("{:.3}s", reset.as_secs_f64()),
            );
        }
    }
}
