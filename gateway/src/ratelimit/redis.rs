//! The shared buckets: the same buckets as `bucket.rs`, kept in one Redis for every replica.
//!
//! Each decision is one script (`admit.lua`, `charge.lua`) that Redis runs atomically, on
//! its own clock, so replicas neither race nor disagree about time. Redis is asked with a
//! bounded wait (`timeout_ms`); when it cannot answer, `when_down` decides (open, closed or
//! this process's own buckets), one log line says so, `gateway_ratelimit_backend_up` drops
//! to 0, and requests stop asking for `recheck_ms` so that an outage costs them nothing.
//! Redis restarted (its scripts and buckets gone) is reconnected to and reloaded at once.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::sync::Arc;
use std::time::{Duration, Instant};

use redis::aio::{ConnectionManager, ConnectionManagerConfig};
use redis::Script;

use super::{admit_here, Limiter, Refusal, Rejection, Snapshot, MAX_DEBT_MINUTES, MAX_WAIT};
use crate::config::{RedisLimits, WhenDown};
use crate::metrics::Metrics;

/// Why the Redis backend could not be set up (never quotes the URL: it may hold a password).
#[derive(Debug, thiserror::Error)]
pub(crate) enum RedisError {
    #[error("rate_limits.redis: {0}")]
    Url(#[from] crate::config::EnvError),
    #[error("rate_limits.redis.url is not a Redis URL the client accepts ({0})")]
    Client(&'static str),
}

#[derive(Clone)]
pub(super) struct Shared(Arc<Inner>);

struct Inner {
    conn: ConnectionManager,
    prefix: String,
    timeout: Duration,
    when_down: WhenDown,
    admit: Script,
    charge: Script,
    health: Health,
    metrics: Arc<Metrics>,
}

impl Shared {
    pub(super) fn connect(cfg: &RedisLimits, metrics: Arc<Metrics>) -> Result<Shared, RedisError> {
        let url = cfg.url()?;
        let client = redis::Client::open(url.as_str()).map_err(|e| RedisError::Client(kind(&e)))?;
        let timeout = Duration::from_millis(cfg.timeout_ms);
        // One connection attempt per try, each bounded: the breaker in `Health`, not the
        // client's back-off, spaces the attempts while Redis is away.
        let conn_cfg = ConnectionManagerConfig::new()
            .set_connection_timeout(Some(timeout))
            .set_response_timeout(Some(timeout))
            .set_number_of_retries(0);
        let conn = ConnectionManager::new_lazy_with_config(client, conn_cfg)
            .map_err(|e| RedisError::Client(kind(&e)))?;
        metrics.ratelimit_backend_up.store(1, Relaxed);
        Ok(Shared(Arc::new(Inner {
            conn,
            prefix: cfg.key_prefix.clone(),
            timeout,
            when_down: cfg.when_down,
            admit: Script::new(include_str!("admit.lua")),
            charge: Script::new(include_str!("charge.lua")),
            health: Health::new(Duration::from_millis(cfg.recheck_ms)),
            metrics,
        })))
    }

    pub(super) async fn admit(
        &self,
        key: Option<&Limiter>,
        model: Option<&Limiter>,
    ) -> Result<(), Refusal> {
        let s = &*self.0;
        if !s.health.should_try() {
            return s.degraded(key, model);
        }
        let limiters: Vec<&Limiter> = [key, model].into_iter().flatten().collect();
        let mut call = s.admit.prepare_invoke();
        for l in &limiters {
            call.key(format!("{}{}", s.prefix, l.name));
            call.arg(l.limit.requests_per_minute.unwrap_or(0));
            call.arg(l.limit.tokens_per_minute.unwrap_or(0));
        }
        let mut conn = s.conn.clone();
        let answer = tokio::time::timeout(s.timeout, call.invoke_async::<Vec<i64>>(&mut conn))
            .await
            .unwrap_or_else(|_| Err(timed_out()));
        match answer.map(|a| decision(&a, &limiters)) {
            Ok(Some(d)) => {
                s.health.answered(&s.metrics);
                d.map_err(Refusal::Limited)
            }
            Ok(None) => {
                s.health
                    .failed("a malformed script answer", s.when_down, &s.metrics);
                s.degraded(key, model)
            }
            Err(e) => {
                s.health.failed(&describe(&e), s.when_down, &s.metrics);
                s.degraded(key, model)
            }
        }
    }

    /// Starts charging `tokens` to the limiters that count tokens; returns at once.
    pub(super) fn charge(&self, key: Option<&Limiter>, model: Option<&Limiter>, tokens: u64) {
        let buckets: Vec<(String, u64, u64)> = [key, model]
            .into_iter()
            .flatten()
            .filter(|l| l.limit.tokens_per_minute.is_some())
            .map(|l| {
                let rpm = l.limit.requests_per_minute.unwrap_or(0);
                let tpm = l.limit.tokens_per_minute.unwrap_or(0);
                (format!("{}{}", self.0.prefix, l.name), rpm, tpm)
            })
            .collect();
        if buckets.is_empty() {
            return;
        }
        let unshared = move |s: &Inner| {
            s.metrics
                .ratelimit_unshared_tokens
                .fetch_add(tokens, Relaxed);
        };
        let Ok(rt) = tokio::runtime::Handle::try_current() else {
            return unshared(&self.0);
        };
        if !self.0.health.should_try() {
            return unshared(&self.0);
        }
        let this = self.clone();
        rt.spawn(async move {
            let s = &*this.0;
            let mut call = s.charge.prepare_invoke();
            for (name, rpm, tpm) in &buckets {
                call.key(name).arg(rpm).arg(tpm);
            }
            call.arg(tokens).arg(MAX_DEBT_MINUTES);
            let mut conn = s.conn.clone();
            match tokio::time::timeout(s.timeout, call.invoke_async::<i64>(&mut conn)).await {
                Ok(Ok(_)) => s.health.answered(&s.metrics),
                Ok(Err(e)) => {
                    s.health.failed(&describe(&e), s.when_down, &s.metrics);
                    unshared(s);
                }
                Err(_) => {
                    s.health
                        .failed(&describe(&timed_out()), s.when_down, &s.metrics);
                    unshared(s);
                }
            }
        });
    }
}

impl Inner {
    /// The decision while Redis cannot be asked.
    fn degraded(&self, key: Option<&Limiter>, model: Option<&Limiter>) -> Result<(), Refusal> {
        self.metrics.ratelimit_degraded.fetch_add(1, Relaxed);
        match self.when_down {
            WhenDown::Open => Ok(()),
            WhenDown::Closed => Err(Refusal::Unavailable),
            WhenDown::Memory => admit_here(key, model).map_err(Refusal::Limited),
        }
    }
}

/// `admit.lua`'s answer: `Some(Ok)` admitted, `Some(Err)` refused, `None` malformed.
fn decision(a: &[i64], limiters: &[&Limiter]) -> Option<Result<(), Rejection>> {
    match a {
        [1] => Some(Ok(())),
        [0, i, what, wait, rpm, r_left, r_full, tpm, t_left, t_full] => {
            let l = limiters.get(usize::try_from(*i).ok()?.checked_sub(1)?)?;
            let ms = |v: i64| Duration::from_millis(v.max(0) as u64).min(MAX_WAIT);
            let part = |limit: i64, left: i64, full: i64| {
                (limit > 0).then(|| (limit as u64, left.max(0) as u64, ms(full)))
            };
            Some(Err(Rejection {
                retry_after: ms(*wait),
                what: match what {
                    1 => "requests",
                    2 => "tokens",
                    _ => return None,
                },
                scope: l.scope,
                headers: Snapshot {
                    requests: part(*rpm, *r_left, *r_full),
                    tokens: part(*tpm, *t_left, *t_full),
                },
            }))
        }
        _ => None,
    }
}

fn timed_out() -> redis::RedisError {
    redis::RedisError::from(std::io::Error::new(
        std::io::ErrorKind::TimedOut,
        "no answer within rate_limits.redis.timeout_ms",
    ))
}

/// The error's words, without anything of the URL; for a refusal by the server its code
/// (`WRONGPASS`, `NOAUTH`, `READONLY`, ...), never its text, which may echo what was sent.
fn describe(e: &redis::RedisError) -> String {
    if e.is_timeout() {
        "no answer within rate_limits.redis.timeout_ms".to_owned()
    } else if let Some(io) = e.is_io_error().then(|| e.to_string()) {
        io
    } else if let Some(code) = e.code() {
        format!("Redis answered {code}")
    } else {
        // The kind's name only (`AuthenticationFailed`, ...): no text from the server.
        format!("{:?}", e.kind())
    }
}

fn kind(e: &redis::RedisError) -> &'static str {
    if e.is_connection_refusal() {
        "connection refused"
    } else if e.is_connection_dropped() {
        "connection dropped"
    } else if e.is_io_error() {
        "I/O error"
    } else {
        "Redis error"
    }
}

/// Up or down, with the breaker that keeps requests from waiting on a Redis that is away.
struct Health {
    start: Instant,
    recheck: Duration,
    down: AtomicBool,
    /// While down: when (ms since `start`) the next request may ask Redis again.
    retry_at_ms: AtomicU64,
}

impl Health {
    fn new(recheck: Duration) -> Health {
        Health {
            start: Instant::now(),
            recheck,
            down: AtomicBool::new(false),
            retry_at_ms: AtomicU64::new(0),
        }
    }

    fn now_ms(&self) -> u64 {
        self.start.elapsed().as_millis() as u64
    }

    /// Up: always. Down: one request per `recheck` probes; the others decide at once.
    fn should_try(&self) -> bool {
        if !self.down.load(Relaxed) {
            return true;
        }
        let now = self.now_ms();
        let at = self.retry_at_ms.load(Relaxed);
        now >= at
            && self
                .retry_at_ms
                .compare_exchange(at, now + self.recheck.as_millis() as u64, Relaxed, Relaxed)
                .is_ok()
    }

    fn answered(&self, metrics: &Metrics) {
        if self.down.swap(false, Relaxed) {
            metrics.ratelimit_backend_up.store(1, Relaxed);
            eprintln!("gateway: rate limits: Redis answers again; limits are shared");
        }
    }

    fn failed(&self, why: &str, when_down: WhenDown, metrics: &Metrics) {
        metrics.ratelimit_backend_errors.fetch_add(1, Relaxed);
        self.retry_at_ms
            .store(self.now_ms() + self.recheck.as_millis() as u64, Relaxed);
        if !self.down.swap(true, Relaxed) {
            metrics.ratelimit_backend_up.store(0, Relaxed);
            let mode = match when_down {
                WhenDown::Open => "admitted without limits (when_down = \"open\")",
                WhenDown::Closed => "refused with 503 (when_down = \"closed\")",
                WhenDown::Memory => "limited by this process alone (when_down = \"memory\")",
            };
            eprintln!("gateway: rate limits: Redis unavailable ({why}); requests are {mode} until it answers");
        }
    }
}
