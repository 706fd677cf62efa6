//! The in-process buckets: one [`Limiter`] per key and per model, in this process's memory.
//! `redis.rs` keeps the same buckets, by the same rules, in Redis.

use std::sync::Mutex;
use std::time::{Duration, Instant};

use super::{Rejection, Scope, Snapshot, MAX_DEBT_MINUTES, MAX_WAIT};
use crate::config::RateLimit;

#[derive(Debug)]
struct Bucket {
    capacity: f64,
    per_sec: f64,
    tokens: f64,
    last: Instant,
}

impl Bucket {
    fn new(per_minute: u64, now: Instant) -> Bucket {
        Bucket {
            capacity: per_minute as f64,
            per_sec: per_minute as f64 / 60.0,
            tokens: per_minute as f64,
            last: now,
        }
    }

    fn refill(&mut self, now: Instant) {
        let dt = now.saturating_duration_since(self.last).as_secs_f64();
        self.tokens = (self.tokens + dt * self.per_sec).min(self.capacity);
        self.last = now;
    }

    /// Time until the bucket holds `need` tokens (bounded, never a panic on odd floats).
    fn wait_for(&self, need: f64) -> Duration {
        let secs = ((need - self.tokens) / self.per_sec).max(0.0);
        Duration::try_from_secs_f64(secs).map_or(MAX_WAIT, |d| d.min(MAX_WAIT))
    }

    /// Takes `n` tokens, going at most [`MAX_DEBT_MINUTES`] of refill into debt.
    fn charge(&mut self, n: u64) {
        let floor = -self.capacity * MAX_DEBT_MINUTES;
        self.tokens = (self.tokens - n as f64).max(floor);
    }

    /// Time until the bucket is full again (the `reset` headers).
    fn until_full(&self) -> Duration {
        self.wait_for(self.capacity)
    }
}

#[derive(Debug)]
struct State {
    requests: Option<Bucket>,
    tokens: Option<Bucket>,
}

/// One policy instance (one key's, or one model's).
#[derive(Debug)]
pub(crate) struct Limiter {
    state: Mutex<State>,
    pub(super) limit: RateLimit,
    pub(super) scope: Scope,
    /// `key:<name>` or `model:<name>`: the bucket's name in Redis, after the prefix.
    pub(super) name: Box<str>,
}

impl Limiter {
    pub(crate) fn new(limit: RateLimit, scope: Scope, name: &str) -> Limiter {
        Limiter::new_at(limit, scope, name, Instant::now())
    }

    fn new_at(limit: RateLimit, scope: Scope, name: &str, now: Instant) -> Limiter {
        Limiter {
            state: Mutex::new(State {
                requests: limit.requests_per_minute.map(|n| Bucket::new(n, now)),
                tokens: limit.tokens_per_minute.map(|n| Bucket::new(n, now)),
            }),
            limit,
            scope,
            name: format!("{}:{name}", scope.label()).into(),
        }
    }

    /// Takes one request from the bucket, or says how long to wait.
    pub(super) fn admit(&self) -> Result<(), Rejection> {
        self.admit_at(Instant::now())
    }

    fn admit_at(&self, now: Instant) -> Result<(), Rejection> {
        let mut s = self.state.lock().unwrap_or_else(|p| p.into_inner());
        let s = &mut *s;
        if let Some(b) = &mut s.requests {
            b.refill(now);
        }
        if let Some(b) = &mut s.tokens {
            b.refill(now);
        }
        if let Some(b) = &s.requests {
            if b.tokens < 1.0 {
                return Err(self.reject(s, b.wait_for(1.0), "requests"));
            }
        }
        if let Some(b) = &s.tokens {
            if b.tokens <= 0.0 {
                // Admit again once the debt is paid and at least one token is back.
                return Err(self.reject(s, b.wait_for(1.0), "tokens"));
            }
        }
        if let Some(b) = &mut s.requests {
            b.tokens -= 1.0;
        }
        Ok(())
    }

    /// Gives back a request admitted here but refused by another limiter.
    pub(super) fn refund(&self) {
        let mut s = self.state.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(b) = &mut s.requests {
            b.tokens = (b.tokens + 1.0).min(b.capacity);
        }
    }

    /// Charges the tokens a finished request used.
    pub(super) fn charge_tokens(&self, tokens: u64) {
        if tokens == 0 || self.limit.tokens_per_minute.is_none() {
            return;
        }
        let mut s = self.state.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(b) = &mut s.tokens {
            b.refill(Instant::now());
            b.charge(tokens);
        }
    }

    fn reject(&self, s: &State, retry_after: Duration, what: &'static str) -> Rejection {
        let snap = |b: &Option<Bucket>, limit: Option<u64>| {
            b.as_ref()
                .zip(limit)
                .map(|(b, l)| (l, b.tokens.max(0.0) as u64, b.until_full()))
        };
        Rejection {
            retry_after,
            what,
            scope: self.scope,
            headers: Snapshot {
                requests: snap(&s.requests, self.limit.requests_per_minute),
                tokens: snap(&s.tokens, self.limit.tokens_per_minute),
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use http::HeaderMap;

    use super::*;

    fn limiter(limit: RateLimit, t0: Instant) -> Limiter {
        Limiter::new_at(limit, Scope::Key, "k", t0)
    }

    fn rl(rpm: Option<u64>, tpm: Option<u64>) -> RateLimit {
        RateLimit {
            requests_per_minute: rpm,
            tokens_per_minute: tpm,
        }
    }

    #[test]
    fn requests_bucket_empties_then_refills() {
        let t0 = Instant::now();
        let l = limiter(rl(Some(60), None), t0);
        for _ in 0..60 {
            l.admit_at(t0).unwrap();
        }
        let r = l.admit_at(t0).unwrap_err();
        assert_eq!(r.what, "requests");
        assert!(
            r.retry_after > Duration::from_millis(900) && r.retry_after <= Duration::from_secs(1)
        );
        // One request per second refills.
        l.admit_at(t0 + Duration::from_millis(1001)).unwrap();
        assert!(l.admit_at(t0 + Duration::from_millis(1002)).is_err());
    }

    #[test]
    fn tokens_are_charged_after_and_block_until_repaid() {
        let t0 = Instant::now();
        let l = limiter(rl(None, Some(600)), t0);
        l.admit_at(t0).unwrap();
        l.charge_tokens(1000); // 400 in debt
        let r = l.admit_at(t0).unwrap_err();
        assert_eq!(r.what, "tokens");
        let mut h = HeaderMap::new();
        r.write_headers(&mut h);
        assert_eq!(h["x-ratelimit-limit-tokens"], "600");
        assert_eq!(h["x-ratelimit-remaining-tokens"], "0");
        assert!(h.contains_key("retry-after"));
        // 10 tokens/s: the debt (~400, minus refill since t0) takes ~40 s.
        assert!(l.admit_at(t0 + Duration::from_secs(45)).is_ok());
    }

    #[test]
    fn absurd_charges_stay_finite_and_bounded() {
        let t0 = Instant::now();
        let l = limiter(rl(None, Some(1000)), t0);
        l.admit_at(t0).unwrap();
        l.charge_tokens(u64::MAX);
        l.charge_tokens(18_000_000_000_000_000_000);
        for _ in 0..3 {
            let r = l.admit_at(t0).unwrap_err();
            assert!(
                r.retry_after <= Duration::from_secs(3601),
                "{:?}",
                r.retry_after
            );
            let mut h = HeaderMap::new();
            r.write_headers(&mut h);
            assert!(h.contains_key("retry-after"));
        }
        // The debt is at most an hour of refill.
        assert!(l.admit_at(t0 + Duration::from_secs(3602)).is_ok());
    }

    #[test]
    fn refund_returns_a_request() {
        let t0 = Instant::now();
        let l = limiter(rl(Some(1), None), t0);
        l.admit_at(t0).unwrap();
        assert!(l.admit_at(t0).is_err());
        l.refund();
        assert!(l.admit_at(t0).is_ok());
    }
}
