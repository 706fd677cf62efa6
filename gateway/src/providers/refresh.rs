//! A value that expires (an access token) kept fresh by a background task, so that requests
//! never wait on a refresh while the value they would use is still valid.
//!
//! The task fetches at start, then again at `expires_at - margin`, where the margin is
//! `max(5 min, lifetime / 10)` but at most half the lifetime: an hour-long Google token is
//! refreshed 6 minutes early, a 4-second test token halfway. A failed fetch is retried after
//! 1 s, doubling to 30 s, while requests keep the old value until it expires. With no valid
//! value (start-up, every refresh failed, or the upstream refused the value), requests wait
//! for the next one up to a limit the caller chooses (the first-byte timeout). A value that
//! would live less than the operator's floor never gets here: the caller (credentials.rs)
//! makes it a failed fetch, so an issuer granting 0 s meets the backoff, not `MIN_INTERVAL`.

use std::sync::{Arc, RwLock};
use std::time::Duration;

use tokio::sync::{watch, Notify};
use tokio::time::Instant;

/// The earliest a value is refreshed before it expires, for long-lived values.
const MIN_MARGIN: Duration = Duration::from_secs(5 * 60);
/// Retries after a failed fetch: from the first to the largest, doubling.
const FIRST_BACKOFF: Duration = Duration::from_secs(1);
const MAX_BACKOFF: Duration = Duration::from_secs(30);
/// Never refresh more often than this, whatever lifetime the issuer claims.
const MIN_INTERVAL: Duration = Duration::from_millis(250);
/// A refused value is replaced at once, but fetches forced that way start at least this far
/// apart: a value the upstream keeps refusing must not turn every request into a fetch.
const FORCED_GAP: Duration = Duration::from_secs(1);

struct Fresh<T> {
    value: Arc<T>,
    expires_at: Instant,
}

pub(crate) struct Refreshing<T> {
    slot: RwLock<Option<Fresh<T>>>,
    /// Bumped on every store: what waiting requests watch.
    stored: watch::Sender<u64>,
    /// Asks the task for a fetch now (the upstream refused the current value).
    wake: Notify,
}

impl<T> std::fmt::Debug for Refreshing<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Refreshing([redacted])")
    }
}

impl<T> Default for Refreshing<T> {
    fn default() -> Self {
        Refreshing {
            slot: RwLock::new(None),
            stored: watch::channel(0).0,
            wake: Notify::new(),
        }
    }
}

/// How long after a fetch to fetch again, for a value that lives `lifetime`.
pub(crate) fn refresh_after(lifetime: Duration) -> Duration {
    let margin = MIN_MARGIN.max(lifetime / 10).min(lifetime / 2);
    (lifetime - margin).max(MIN_INTERVAL)
}

impl<T> Refreshing<T> {
    /// The value, if one is held and has not expired.
    pub(crate) fn current(&self) -> Option<Arc<T>> {
        let slot = self.slot.read().unwrap_or_else(|e| e.into_inner());
        slot.as_ref()
            .filter(|f| Instant::now() < f.expires_at)
            .map(|f| f.value.clone())
    }

    /// The valid value, waiting up to `limit` for one when none is held.
    pub(crate) async fn wait(&self, limit: Duration) -> Option<Arc<T>> {
        // Subscribed before looking, so a value stored in between is seen.
        let mut stored = self.stored.subscribe();
        let deadline = Instant::now() + limit;
        loop {
            if let Some(v) = self.current() {
                return Some(v);
            }
            match tokio::time::timeout_at(deadline, stored.changed()).await {
                Ok(Ok(())) => continue,
                _ => return self.current(),
            }
        }
    }

    /// The upstream refused `stale`: forget it (if it is still the current value, so that
    /// many requests refused at once cause one fetch) and fetch now.
    pub(crate) fn invalidate(&self, stale: &Arc<T>) {
        let mut slot = self.slot.write().unwrap_or_else(|e| e.into_inner());
        if slot.as_ref().is_some_and(|f| Arc::ptr_eq(&f.value, stale)) {
            *slot = None;
            drop(slot);
            self.wake.notify_one();
        }
    }

    pub(crate) fn store(&self, value: T, lifetime: Duration) {
        let fresh = Fresh {
            value: Arc::new(value),
            expires_at: Instant::now() + lifetime,
        };
        *self.slot.write().unwrap_or_else(|e| e.into_inner()) = Some(fresh);
        self.stored.send_modify(|n| *n += 1);
    }

    /// Keeps the value fresh until `stop` turns true or its sender is dropped. `fetch`
    /// returns a value and its lifetime, or why it could not (reported to `failed`, which
    /// logs it; it must not quote the secret).
    pub(crate) async fn run<F, Fut, E>(
        self: Arc<Self>,
        mut fetch: F,
        mut failed: impl FnMut(&E),
        mut stop: watch::Receiver<bool>,
    ) where
        F: FnMut() -> Fut,
        Fut: std::future::Future<Output = Result<(T, Duration), E>>,
    {
        let mut backoff = FIRST_BACKOFF;
        loop {
            if *stop.borrow() {
                return;
            }
            let started = Instant::now();
            let next = tokio::select! {
                r = fetch() => match r {
                    Ok((value, lifetime)) => {
                        self.store(value, lifetime);
                        backoff = FIRST_BACKOFF;
                        refresh_after(lifetime)
                    }
                    Err(e) => {
                        failed(&e);
                        let wait = backoff;
                        backoff = (backoff * 2).min(MAX_BACKOFF);
                        wait
                    }
                },
                _ = stop.changed() => return,
            };
            tokio::select! {
                _ = tokio::time::sleep(next) => {}
                _ = self.wake.notified() => {
                    tokio::select! {
                        _ = tokio::time::sleep_until(started + FORCED_GAP) => {}
                        _ = stop.changed() => return,
                    }
                }
                _ = stop.changed() => return,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicU32, Ordering::SeqCst};

    #[test]
    fn margins() {
        let s = Duration::from_secs;
        assert_eq!(refresh_after(s(3600)), s(3240));
        assert_eq!(refresh_after(s(600)), s(300));
        assert_eq!(refresh_after(s(4)), s(2));
        assert_eq!(refresh_after(s(0)), MIN_INTERVAL);
    }

    /// Values are refreshed before they expire, a valid value never waits, and the task
    /// ends when told to stop.
    #[tokio::test(start_paused = true)]
    async fn refreshes_early_and_stops() {
        let r = Arc::new(Refreshing::<u32>::default());
        let n = Arc::new(AtomicU32::new(0));
        let (stop_tx, stop) = watch::channel(false);
        let fetches = n.clone();
        let task = tokio::spawn(r.clone().run(
            move || {
                let k = fetches.fetch_add(1, SeqCst);
                async move { Ok::<_, ()>((k, Duration::from_secs(4))) }
            },
            |_| {},
            stop,
        ));
        assert_eq!(*r.wait(Duration::from_secs(1)).await.unwrap(), 0);
        for want in 1..4 {
            tokio::time::sleep(Duration::from_secs(2)).await;
            // The value in hand is always valid: nobody waits.
            assert!(r.current().is_some());
            assert!(*r.current().unwrap() >= want - 1);
        }
        assert!(n.load(SeqCst) >= 3, "{}", n.load(SeqCst));
        stop_tx.send(true).unwrap();
        tokio::time::timeout(Duration::from_secs(1), task)
            .await
            .expect("the task stops")
            .unwrap();
    }

    /// Failures back off and keep the old value while it lasts; with none, waiting requests
    /// give up at their limit.
    #[tokio::test(start_paused = true)]
    async fn failures_back_off_and_waits_are_bounded() {
        let r = Arc::new(Refreshing::<u32>::default());
        let n = Arc::new(AtomicU32::new(0));
        let fails = Arc::new(AtomicU32::new(0));
        let (_stop_tx, stop) = watch::channel(false);
        let (fetches, failed) = (n.clone(), fails.clone());
        tokio::spawn(r.clone().run(
            move || {
                let k = fetches.fetch_add(1, SeqCst);
                // One good value, then nothing but failures.
                async move {
                    match k {
                        0 => Ok((7, Duration::from_secs(10))),
                        _ => Err("down"),
                    }
                }
            },
            move |_| {
                failed.fetch_add(1, SeqCst);
            },
            stop,
        ));
        assert_eq!(*r.wait(Duration::from_secs(1)).await.unwrap(), 7);
        // Refresh due at 5 s; failures at 5, 6, 8 s (1 s, 2 s backoff); still valid at 9 s.
        tokio::time::sleep(Duration::from_millis(9_500)).await;
        assert_eq!(r.current().as_deref(), Some(&7));
        assert_eq!(fails.load(SeqCst), 3);
        // Expired at 10 s: a request waits its limit and gets nothing.
        tokio::time::sleep(Duration::from_secs(1)).await;
        let t = Instant::now();
        assert!(r.wait(Duration::from_secs(2)).await.is_none());
        assert_eq!(t.elapsed(), Duration::from_secs(2));
    }

    /// A refused value is dropped once and fetched again at once; waiters get the new one.
    #[tokio::test(start_paused = true)]
    async fn invalidate_fetches_now() {
        let r = Arc::new(Refreshing::<u32>::default());
        let n = Arc::new(AtomicU32::new(0));
        let (_stop_tx, stop) = watch::channel(false);
        let fetches = n.clone();
        tokio::spawn(r.clone().run(
            move || {
                let k = fetches.fetch_add(1, SeqCst);
                async move { Ok::<_, ()>((k, Duration::from_secs(3600))) }
            },
            |_| {},
            stop,
        ));
        let first = r.wait(Duration::from_secs(1)).await.unwrap();
        // Refused long after it was fetched: replaced at once.
        tokio::time::sleep(Duration::from_secs(10)).await;
        r.invalidate(&first);
        // A second refusal of the same value causes no second fetch.
        r.invalidate(&first);
        let t = Instant::now();
        let second = r.wait(Duration::from_secs(1)).await.unwrap();
        assert_eq!((*first, *second), (0, 1));
        assert!(t.elapsed() < Duration::from_millis(10));
        // Refused at once too: the next fetch waits out the gap since the last one.
        r.invalidate(&second);
        let third = r.wait(Duration::from_secs(5)).await.unwrap();
        assert_eq!(*third, 2);
        assert_eq!(t.elapsed(), FORCED_GAP);
        tokio::time::sleep(Duration::from_secs(5)).await;
        assert_eq!(n.load(SeqCst), 3);
    }
}
