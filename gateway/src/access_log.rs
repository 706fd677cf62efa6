//! One JSON line per request, written by a dedicated thread so the hot path never blocks on
//! I/O: requests hand a small record to a bounded channel and move on. If the writer falls
//! behind, lines are dropped and counted (`gateway_access_log_dropped_total`), never queued
//! without bound. At exit the writer gets until a deadline to flush: a log nobody reads
//! (a full pipe) must not hold the process, so what is still unwritten then is dropped
//! and counted too.

use std::io::Write;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::mpsc::{sync_channel, Receiver, SyncSender, TrySendError};
use std::sync::Arc;
use std::time::Instant;

use serde::Serialize;

use crate::config::AccessLogSink;
use crate::metrics::Metrics;

const QUEUE: usize = 16 * 1024;

#[derive(Debug, Serialize)]
pub(crate) struct AccessRecord {
    /// Unix time of the request's arrival, in milliseconds.
    pub(crate) ts_ms: u64,
    pub(crate) request_id: Arc<str>,
    pub(crate) route: &'static str,
    pub(crate) model: Option<Arc<str>>,
    pub(crate) key: Option<Arc<str>>,
    pub(crate) status: u16,
    pub(crate) stream: bool,
    pub(crate) duration_ms: f64,
    pub(crate) upstream_ttfb_ms: Option<f64>,
    pub(crate) upstream_ms: Option<f64>,
    pub(crate) input_tokens: Option<u64>,
    pub(crate) output_tokens: Option<u64>,
    /// The token figures are (partly) the gateway's estimate, not the upstream's report;
    /// absent when they are the upstream's.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub(crate) tokens_estimated: bool,
    /// Set when the request ended abnormally (client gone, upstream timeout, ...).
    pub(crate) error: Option<&'static str>,
    /// The provider of the target that answered (`openai`, `azure-openai`, ...); absent when
    /// no upstream answered.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) provider: Option<&'static str>,
    /// `client->upstream` dialects when the request was translated (`messages->chat`);
    /// absent on passthrough lines, which keep their format.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) translated: Option<&'static str>,
    /// Fields translation dropped; absent when none were.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub(crate) dropped: Vec<String>,
}

/// The sending half; cheap to clone into request handlers.
#[derive(Clone)]
pub(crate) struct AccessLog {
    tx: Option<SyncSender<AccessRecord>>,
    metrics: Arc<Metrics>,
    progress: Arc<Progress>,
}

/// Lines queued and lines written (flushed), to count what is lost at a forced exit.
#[derive(Default)]
struct Progress {
    queued: AtomicU64,
    written: AtomicU64,
}

/// Owns the writer thread; [`AccessLogWriter::finish`] flushes the queued lines.
pub(crate) struct AccessLogWriter {
    done: Option<Receiver<()>>,
    metrics: Arc<Metrics>,
    progress: Arc<Progress>,
}

impl AccessLog {
    pub(crate) fn start(
        sink: &AccessLogSink,
        metrics: Arc<Metrics>,
    ) -> (AccessLog, AccessLogWriter) {
        let progress = Arc::new(Progress::default());
        let out: Box<dyn Write + Send> = match sink {
            AccessLogSink::Off => {
                return (
                    AccessLog {
                        tx: None,
                        metrics: metrics.clone(),
                        progress: progress.clone(),
                    },
                    AccessLogWriter {
                        done: None,
                        metrics,
                        progress,
                    },
                )
            }
            AccessLogSink::Stdout => Box::new(std::io::stdout()),
            AccessLogSink::Stderr => Box::new(std::io::stderr()),
        };
        let (tx, rx) = sync_channel(QUEUE);
        let (done_tx, done_rx) = sync_channel(1);
        let p = progress.clone();
        std::thread::Builder::new()
            .name("access-log".into())
            .spawn(move || {
                write_lines(rx, out, &p);
                let _ = done_tx.send(());
            })
            .expect("spawning the access-log thread");
        (
            AccessLog {
                tx: Some(tx),
                metrics: metrics.clone(),
                progress: progress.clone(),
            },
            AccessLogWriter {
                done: Some(done_rx),
                metrics,
                progress,
            },
        )
    }

    pub(crate) fn enabled(&self) -> bool {
        self.tx.is_some()
    }

    pub(crate) fn log(&self, record: AccessRecord) {
        if let Some(tx) = &self.tx {
            match tx.try_send(record) {
                Ok(()) => {
                    self.progress.queued.fetch_add(1, Relaxed);
                }
                Err(TrySendError::Full(_)) | Err(TrySendError::Disconnected(_)) => {
                    self.metrics
                        .access_log_dropped
                        .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                }
            }
        }
    }
}

impl AccessLogWriter {
    /// Waits until every sender is gone and every line is written, or until `deadline`.
    /// Returns the lines dropped because the sink would not take them in time (also
    /// counted in `gateway_access_log_dropped_total`); the blocked thread is left behind
    /// and ends with the process.
    pub(crate) fn finish(self, deadline: Instant) -> u64 {
        let Some(done) = self.done else { return 0 };
        let left = deadline.saturating_duration_since(Instant::now());
        if done.recv_timeout(left).is_ok() {
            return 0;
        }
        let lost = self
            .progress
            .queued
            .load(Relaxed)
            .saturating_sub(self.progress.written.load(Relaxed));
        self.metrics.access_log_dropped.fetch_add(lost, Relaxed);
        lost
    }
}

fn write_lines(rx: Receiver<AccessRecord>, out: Box<dyn Write + Send>, progress: &Progress) {
    let mut out = std::io::BufWriter::with_capacity(64 * 1024, out);
    while let Ok(first) = rx.recv() {
        let mut next = Some(first);
        let mut burst = 0;
        // Drain what is queued, then flush once: one write(2) per burst, not per line.
        while let Some(rec) = next {
            if serde_json::to_writer(&mut out, &rec).is_ok() {
                let _ = out.write_all(b"\n");
            }
            burst += 1;
            next = rx.try_recv().ok();
        }
        let _ = out.flush();
        progress.written.fetch_add(burst, Relaxed);
    }
    let _ = out.flush();
}
