//! The throughput frontier: from one sweep, the highest rate whose step had no failed request
//! and a p99 within the bound.

use super::latency::LoadStep;

/// Max req/s over the steps with zero failures and p99 <= `bound_ms` (any p99 when `None`);
/// `None` when no step qualifies.
pub fn frontier(steps: &[LoadStep], bound_ms: Option<f64>) -> Option<f64> {
    steps
        .iter()
        .filter(|s| s.ok() && bound_ms.is_none_or(|b| s.p99_ms <= b))
        .map(|s| s.rps)
        .fold(None, |m: Option<f64>, x| Some(m.map_or(x, |m| m.max(x))))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn step(concurrency: u32, rps: f64, p99_ms: f64, failed: u64) -> LoadStep {
        LoadStep {
            concurrency,
            requests: 1000,
            failed,
            seconds: 1000.0 / rps,
            rps,
            p50_ms: p99_ms / 2.0,
            p99_ms,
            cpu_us_per_req: None,
            user_us_per_req: None,
            sys_us_per_req: None,
            failures: Vec::new(),
        }
    }

    #[test]
    fn bounds_pick_the_best_step_that_fits_and_failures_never_count() {
        let steps = [
            step(1, 4_000.0, 0.4, 0),
            step(4, 12_000.0, 0.9, 0),
            step(16, 20_000.0, 3.0, 0),
            step(64, 22_000.0, 12.0, 0),
            // Fast because its requests failed: never on the frontier.
            step(128, 90_000.0, 0.5, 3),
        ];
        assert_eq!(frontier(&steps, Some(1.0)), Some(12_000.0));
        assert_eq!(frontier(&steps, Some(5.0)), Some(20_000.0));
        assert_eq!(frontier(&steps, Some(10.0)), Some(20_000.0));
        assert_eq!(frontier(&steps, Some(50.0)), Some(22_000.0));
        assert_eq!(frontier(&steps, None), Some(22_000.0));
        assert_eq!(frontier(&steps, Some(0.1)), None);
        assert_eq!(frontier(&[], None), None);
    }
}
