//! The mock upstream on its own runtime and thread: the bench client's runtime then never
//! queues the mock's work behind its own (or the other way round), and under callgrind the
//! mock stays outside valgrind because only the gateway process runs under it.

use std::sync::mpsc;
use std::thread::JoinHandle;

use tokio::sync::oneshot;

use trainer::mock::{MockConfig, MockUpstream};

pub(crate) struct MockThread {
    base_url: String,
    stop: Option<oneshot::Sender<()>>,
    thread: Option<JoinHandle<()>>,
}

impl MockThread {
    /// Starts the default mock on a current-thread runtime in a new thread, pinned to `cpus`
    /// when not empty.
    pub(crate) fn start(cpus: Vec<usize>) -> std::io::Result<MockThread> {
        MockThread::start_with(MockConfig::default(), cpus, 1)
    }

    /// `config` on its own thread, pinned to `cpus` when not empty, on a runtime of `threads`
    /// workers (1: a current-thread runtime; more: the multi-core layout, whose workers
    /// inherit the pinning of the thread that builds them).
    pub(crate) fn start_with(
        config: MockConfig,
        cpus: Vec<usize>,
        threads: usize,
    ) -> std::io::Result<MockThread> {
        let (ready_tx, ready_rx) = mpsc::channel::<std::io::Result<String>>();
        let (stop_tx, stop_rx) = oneshot::channel::<()>();
        let thread = std::thread::Builder::new()
            .name("bench-mock".into())
            .spawn(move || {
                if !cpus.is_empty() {
                    if let Err(e) = trainer::launch::pin_current(&cpus) {
                        let _ = ready_tx.send(Err(e));
                        return;
                    }
                }
                let rt = if threads > 1 {
                    tokio::runtime::Builder::new_multi_thread()
                        .worker_threads(threads)
                        .enable_all()
                        .build()
                } else {
                    tokio::runtime::Builder::new_current_thread()
                        .enable_all()
                        .build()
                };
                let rt = match rt {
                    Ok(rt) => rt,
                    Err(e) => {
                        let _ = ready_tx.send(Err(e));
                        return;
                    }
                };
                rt.block_on(async move {
                    match MockUpstream::start(config).await {
                        Ok(mock) => {
                            let _ = ready_tx.send(Ok(mock.base_url()));
                            let _ = stop_rx.await;
                            mock.shutdown().await;
                        }
                        Err(e) => {
                            let _ = ready_tx.send(Err(e));
                        }
                    }
                });
            })?;
        let base_url = ready_rx
            .recv()
            .map_err(|_| std::io::Error::other("mock thread ended before it was ready"))??;
        Ok(MockThread {
            base_url,
            stop: Some(stop_tx),
            thread: Some(thread),
        })
    }

    pub(crate) fn base_url(&self) -> &str {
        &self.base_url
    }
}

impl Drop for MockThread {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}
