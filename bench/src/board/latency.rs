//! Non-streamed load through `trainer::drive` (keep-alive connections, every response
//! checked, a failed request counted, never retried): the concurrency-1 latency window and
//! the concurrency sweep. `drive` sends a fixed request count, so each step's count comes
//! from the previous step's rate to last about the asked duration.

use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::config::BENCH_KEY;
use trainer::drive::{self, DriveOptions};
use trainer::launch::GatewayProcess;
use trainer::shapes::Shape;

/// Requests of the warm-up before the concurrency-1 window (connections, caches, the
/// allocator's first arenas).
const WARMUP: u64 = 200;

/// One fixed-count drive at one concurrency.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct LoadStep {
    pub concurrency: u32,
    pub requests: u64,
    pub failed: u64,
    pub seconds: f64,
    pub rps: f64,
    pub p50_ms: f64,
    pub p99_ms: f64,
    /// Gateway user + system CPU over the step per request (gateway legs only).
    pub cpu_us_per_req: Option<f64>,
    /// Its user part (the gateway's own code: what compiler optimization can reach) and its
    /// kernel part (system calls, loopback TCP), from the same two /proc reads.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub user_us_per_req: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sys_us_per_req: Option<f64>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub failures: Vec<String>,
}

impl LoadStep {
    /// Counts only with every request answered well.
    pub fn ok(&self) -> bool {
        self.failed == 0 && self.requests > 0
    }

    pub(crate) fn rate(&self) -> f64 {
        self.rps
    }
}

/// Where the load goes, and the gateway whose CPU time a step reads (none: the mock).
pub(crate) struct Driver<'a> {
    pub url: String,
    pub timeout: Duration,
    pub gateway: Option<&'a GatewayProcess>,
}

impl Driver<'_> {
    pub(crate) async fn step(&self, shape: &Shape, concurrency: u32, requests: u64) -> LoadStep {
        let mut s = shape.clone();
        s.requests = requests.max(1);
        s.concurrency = concurrency.max(1);
        let mut d = DriveOptions::new(self.url.clone(), Some(BENCH_KEY.into()));
        d.request_timeout = self.timeout;
        let cpu0 = self.gateway.and_then(|g| g.cpu_split_seconds());
        match drive::drive(&s, &d).await {
            Ok(r) => {
                let per_req = |x: f64| x.max(0.0) * 1e6 / r.requests.max(1) as f64;
                let split = self
                    .gateway
                    .and_then(|g| g.cpu_split_seconds())
                    .zip(cpu0)
                    .map(|(b, a)| (per_req(b.user - a.user), per_req(b.system - a.system)));
                LoadStep {
                    concurrency: s.concurrency,
                    requests: r.requests,
                    failed: r.failed,
                    seconds: r.elapsed.as_secs_f64(),
                    rps: r.rate(),
                    p50_ms: r.p50.as_secs_f64() * 1e3,
                    p99_ms: r.p99.as_secs_f64() * 1e3,
                    cpu_us_per_req: split.map(|(u, k)| u + k),
                    user_us_per_req: split.map(|(u, _)| u),
                    sys_us_per_req: split.map(|(_, k)| k),
                    failures: r.failures,
                }
            }
            // The drive could not run at all (a bad URL, a task that died): every request
            // of the step is a failure.
            Err(e) => LoadStep {
                concurrency: s.concurrency,
                requests: s.requests,
                failed: s.requests,
                seconds: 0.0,
                rps: 0.0,
                p50_ms: 0.0,
                p99_ms: 0.0,
                cpu_us_per_req: None,
                user_us_per_req: None,
                sys_us_per_req: None,
                failures: vec![format!("{}: {e}", shape.name)],
            },
        }
    }
}

/// The request count that lasts about `secs` at `rate`, and a few per connection at least.
pub(crate) fn count(rate: f64, secs: f64, concurrency: u32) -> u64 {
    let n = if rate.is_finite() && rate > 0.0 {
        (rate * secs).round() as u64
    } else {
        0
    };
    n.max(4 * u64::from(concurrency)).max(20)
}

/// A warm-up, then one connection for about `secs`; the warm-up's failures count too.
pub(crate) async fn c1(d: &Driver<'_>, shape: &Shape, secs: f64) -> LoadStep {
    let warm = d.step(shape, 1, WARMUP).await;
    let mut s = d.step(shape, 1, count(warm.rate(), secs, 1)).await;
    s.failed += warm.failed;
    let room = 5usize.saturating_sub(s.failures.len());
    s.failures.extend(warm.failures.into_iter().take(room));
    s
}

/// One step per concurrency, ascending, each about `secs`.
pub(crate) async fn sweep(
    d: &Driver<'_>,
    shape: &Shape,
    concurrency: &[u32],
    secs: f64,
    start_rate: f64,
) -> Vec<LoadStep> {
    let mut rate = start_rate;
    let mut out = Vec::new();
    for &c in concurrency {
        let s = d.step(shape, c, count(rate, secs, c)).await;
        if s.ok() {
            rate = s.rate();
        }
        out.push(s);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_last_the_duration_with_a_floor() {
        assert_eq!(count(10_000.0, 1.5, 1), 15_000);
        assert_eq!(count(10.0, 1.0, 1), 20);
        assert_eq!(count(100.0, 1.0, 64), 256);
        assert_eq!(count(0.0, 1.0, 2), 20);
        assert_eq!(count(f64::NAN, 1.0, 2), 20);
    }
}
