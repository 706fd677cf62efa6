//! One JSON line per request, written by a dedicated thread so the hot path never blocks on
//! I/O: requests hand a small record to a bounded channel and move on. If the writer falls
//! behind, lines are dropped and counted (`gateway_access_log_dropped_total`), never queued
//! without bound.

use std::io::Write;
use std::sync::mpsc::{sync_channel, Receiver, SyncSender, TrySendError};
use std::sync::Arc;
use std::thread::JoinHandle;

use serde::Serialize;

use crate::config::AccessLogSink;
use crate::metrics::Metrics;

const QUEUE: usize = 16 * 1024;

#[derive(Debug, Serialize)]
pub struct AccessRecord {
    /// Unix time of the request's arrival, in milliseconds.
    pub ts_ms: u64,
    pub request_id: Arc<str>,
    pub route: &'static str,
    pub model: Option<Arc<str>>,
    pub key: Option<Arc<str>>,
    pub status: u16,
    pub stream: bool,
    pub duration_ms: f64,
    pub upstream_ttfb_ms: Option<f64>,
    pub upstream_ms: Option<f64>,
    pub input_tokens: Option<u64>,
    pub output_tokens: Option<u64>,
    /// Set when the request ended abnormally (client gone, upstream timeout, ...).
    pub error: Option<&'static str>,
}

/// The sending half; cheap to clone into request handlers.
#[derive(Clone)]
pub struct AccessLog {
    tx: Option<SyncSender<AccessRecord>>,
    metrics: Arc<Metrics>,
}

/// Owns the writer thread; [`AccessLogWriter::finish`] flushes every queued line.
pub struct AccessLogWriter {
    thread: Option<JoinHandle<()>>,
}

impl AccessLog {
    pub fn start(sink: &AccessLogSink, metrics: Arc<Metrics>) -> (AccessLog, AccessLogWriter) {
        let out: Box<dyn Write + Send> = match sink {
            AccessLogSink::Off => {
                return (
                    AccessLog { tx: None, metrics },
                    AccessLogWriter { thread: None },
                )
            }
            AccessLogSink::Stdout => Box::new(std::io::stdout()),
            AccessLogSink::Stderr => Box::new(std::io::stderr()),
        };
        let (tx, rx) = sync_channel(QUEUE);
        let thread = std::thread::Builder::new()
            .name("access-log".into())
            .spawn(move || write_lines(rx, out))
            .expect("spawning the access-log thread");
        (
            AccessLog {
                tx: Some(tx),
                metrics,
            },
            AccessLogWriter {
                thread: Some(thread),
            },
        )
    }

    pub fn enabled(&self) -> bool {
        self.tx.is_some()
    }

    pub fn log(&self, record: AccessRecord) {
        if let Some(tx) = &self.tx {
            match tx.try_send(record) {
                Ok(()) => {}
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
    /// Waits until every sender is gone and every line written.
    pub fn finish(mut self) {
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

fn write_lines(rx: Receiver<AccessRecord>, out: Box<dyn Write + Send>) {
    let mut out = std::io::BufWriter::with_capacity(64 * 1024, out);
    while let Ok(first) = rx.recv() {
        let mut next = Some(first);
        // Drain what is queued, then flush once: one write(2) per burst, not per line.
        while let Some(rec) = next {
            if serde_json::to_writer(&mut out, &rec).is_ok() {
                let _ = out.write_all(b"\n");
            }
            next = rx.try_recv().ok();
        }
        let _ = out.flush();
    }
    let _ = out.flush();
}
