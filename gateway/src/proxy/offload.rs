//! Work on a big body leaves the runtime's worker (translating, gunzipping), so that the
//! other requests it carries do not stall.

/// Work on a body this big (translating it, a client's request, an answer, an error body or
/// a stream's events; gunzipping a sixteenth of it) leaves the runtime's worker, which would
/// otherwise stall every other request it carries, the health check among them. Measured
/// (`bench responsive`, one worker): translation costs 6 to 60 ns a byte (a Messages answer
/// to 60 for a chat request with many messages, parsed, decoded and encoded), so 64 KiB
/// holds the worker a few ms; with 1 MiB (requests and error bodies were never moved),
/// /healthz waited 195-247 ms p99 under 4 clients' 1,000,000-byte requests, 17-32 ms now.
pub(crate) const OFF_RUNTIME_BYTES: usize = 64 << 10;

/// Runs `work` here when it is small, else on the blocking pool.
pub(crate) async fn off_runtime<T: Send + 'static>(
    big: bool,
    work: impl FnOnce() -> T + Send + 'static,
) -> T {
    if !big {
        return work();
    }
    match tokio::task::spawn_blocking(work).await {
        Ok(t) => t,
        Err(e) => std::panic::resume_unwind(e.into_panic()),
    }
}

/// Runs `work` in place, the worker's other tasks handed to another thread meanwhile (for
/// work on a body that cannot move: a stream's state). Only a multi-threaded runtime can
/// do that; on another (a `thread-per-core` worker), `work` just runs and the worker's other
/// connections wait for it: the fairness that runtime gives up (docs/gateway.md, "Runtimes").
pub(crate) fn blocking<T>(work: impl FnOnce() -> T) -> T {
    use tokio::runtime::{Handle, RuntimeFlavor};
    match Handle::try_current().map(|h| h.runtime_flavor()) {
        Ok(RuntimeFlavor::MultiThread) => tokio::task::block_in_place(work),
        _ => work(),
    }
}

/// [`blocking`] when `big`, else `work` right here.
pub(crate) fn blocking_if<T>(big: bool, work: impl FnOnce() -> T) -> T {
    if big {
        blocking(work)
    } else {
        work()
    }
}
