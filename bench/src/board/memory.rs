//! The gateway's resident memory from `/proc/PID/status`: a reading once it stopped falling
//! (idle after start, recovered after the load), and the peak sampled while load runs.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

const POLL: Duration = Duration::from_millis(100);

pub(crate) fn rss_kib(pid: u32) -> Option<u64> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    trainer::launch::status_kib(&text, "VmRSS")
}

/// VmRSS once it has not fallen by more than 1% for `window` (allocators hand memory back on
/// their own timers), or the last reading at `max`.
pub(crate) async fn settled(pid: u32, window: Duration, max: Duration) -> Option<u64> {
    let start = Instant::now();
    let mut reference = (Instant::now(), rss_kib(pid)?);
    loop {
        tokio::time::sleep(POLL).await;
        let now = rss_kib(pid)?;
        if (now as f64) < reference.1 as f64 * 0.99 {
            reference = (Instant::now(), now);
        } else if reference.0.elapsed() >= window || start.elapsed() >= max {
            return Some(now);
        }
    }
}

/// The highest VmRSS seen while it runs, sampled on its own thread (the load's runtime stays
/// busy with the load).
pub(crate) struct Sampler {
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<Option<u64>>>,
}

impl Sampler {
    pub(crate) fn start(pid: u32) -> Sampler {
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let thread = std::thread::Builder::new()
            .name("bench-rss".into())
            .spawn(move || {
                let mut peak = rss_kib(pid);
                while !flag.load(Ordering::Relaxed) {
                    std::thread::sleep(POLL);
                    peak = peak.max(rss_kib(pid));
                }
                peak
            })
            .ok();
        Sampler { stop, thread }
    }

    pub(crate) fn finish(mut self) -> Option<u64> {
        self.stop.store(true, Ordering::Relaxed);
        self.thread.take()?.join().ok().flatten()
    }
}

impl Drop for Sampler {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}
