//! `trainer mock`: the mock upstream as a standalone process.

use std::io::Write;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use super::{MockConfig, MockUpstream};

#[derive(clap::Args, Debug)]
pub struct MockArgs {
    /// Address to bind; port 0 picks a free one.
    #[arg(long, default_value = "127.0.0.1:0")]
    pub listen: SocketAddr,
    /// Delay before the response head (time to first token), in milliseconds.
    #[arg(long, default_value_t = 0)]
    pub(crate) ttft_ms: u64,
    /// Text deltas per streamed response (words in a non-streamed text).
    #[arg(long, default_value_t = 4)]
    pub chunks: usize,
    /// Delay between streamed events, in milliseconds.
    #[arg(long, default_value_t = 0)]
    pub(crate) chunk_delay_ms: u64,
    /// Runtime worker threads; 1 runs a single-threaded runtime. Default: one per CPU.
    #[arg(long)]
    pub workers: Option<usize>,
    /// Write SSE streams in pieces of N bytes.
    #[arg(long)]
    pub write_fragment: Option<usize>,
    /// Answer every request with this status and an error body.
    #[arg(long)]
    pub fail_status: Option<u16>,
    /// Report this many of the input tokens as cache reads (at most the input count).
    #[arg(long, default_value_t = 0)]
    pub cached_tokens: u64,
    /// Write each request body received to DIR/NNN.json (001, 002, ... in arrival order);
    /// a capture of what a client sends, e.g. through a passthrough gateway model.
    #[arg(long, value_name = "DIR")]
    pub record_dir: Option<PathBuf>,
}

impl MockArgs {
    pub fn config(&self) -> MockConfig {
        MockConfig {
            first_byte_delay: Duration::from_millis(self.ttft_ms),
            chunks: self.chunks,
            chunk_delay: Duration::from_millis(self.chunk_delay_ms),
            write_fragment: self.write_fragment,
            fail_status: self.fail_status,
            cached_tokens: self.cached_tokens,
            record_dir: self.record_dir.clone(),
            ..MockConfig::default()
        }
    }
}

/// Runs until SIGTERM/SIGINT; prints exactly one line `listening on http://127.0.0.1:PORT`
/// to stdout (flushed) once bound.
pub fn run(args: MockArgs) -> Result<(), Box<dyn std::error::Error>> {
    let runtime = match args.workers {
        Some(1) => tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?,
        Some(n) => tokio::runtime::Builder::new_multi_thread()
            .worker_threads(n.max(1))
            .enable_all()
            .build()?,
        None => tokio::runtime::Builder::new_multi_thread()
            .enable_all()
            .build()?,
    };
    runtime.block_on(async {
        // Handlers first: a SIGTERM sent right after the line is read must not kill us.
        let termination = Termination::install()?;
        let mock = MockUpstream::start_on(args.listen, args.config()).await?;
        let mut stdout = std::io::stdout().lock();
        writeln!(stdout, "listening on {}", mock.base_url())?;
        stdout.flush()?;
        drop(stdout);
        termination.wait().await;
        mock.shutdown().await;
        Ok(())
    })
}

struct Termination {
    term: tokio::signal::unix::Signal,
    int: tokio::signal::unix::Signal,
}

impl Termination {
    fn install() -> std::io::Result<Termination> {
        use tokio::signal::unix::{signal, SignalKind};
        Ok(Termination {
            term: signal(SignalKind::terminate())?,
            int: signal(SignalKind::interrupt())?,
        })
    }

    async fn wait(mut self) {
        tokio::select! {
            _ = self.term.recv() => {}
            _ = self.int.recv() => {}
        }
    }
}
