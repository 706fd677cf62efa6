//! The process's entry: command line, config, the runtime, the start-up summary and the
//! exit code. `main.rs` only sets the allocator and calls [`main`].

use std::process::ExitCode;
use std::time::{Duration, Instant};

use clap::Parser;

use crate::cli::Cli;
use crate::config::{self, Config, LimitsBackend, Runtime, WhenDown};
use crate::server::{self, Listeners, Signals};
use crate::upstream_url::redact_userinfo;

/// The whole process: parse the command line, load the config, serve until a signal.
pub fn main() -> ExitCode {
    let cli = Cli::parse();
    let mut config = match Config::load(&cli.config) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("gateway: {e}");
            return ExitCode::from(2);
        }
    };
    if let Some(addr) = cli.listen {
        config.server.listen = addr;
    }
    if let Some(w) = cli.workers {
        config.server.workers = w;
    }
    if let Some(r) = cli.runtime {
        config.server.runtime = r;
    }
    // `--listen` may have made the two listeners one.
    if let Err(e) = config::check_listeners(&config.server, &cli.config) {
        eprintln!("gateway: {e}");
        return ExitCode::from(2);
    }
    if cli.check_config {
        println!(
            "{}: ok ({} models, {} keys)",
            cli.config.display(),
            config.models.len(),
            config.keys.len()
        );
        return ExitCode::SUCCESS;
    }

    let workers = match config.server.workers {
        0 => std::thread::available_parallelism().map_or(1, |n| n.get()),
        n => n,
    };
    let runtime = config.server.runtime;
    // Thread-per-core: this thread's runtime runs the signals, the metrics listener and the
    // credential refreshers; each worker thread builds its own in `server::run`.
    let built = match runtime {
        Runtime::MultiThread => tokio::runtime::Builder::new_multi_thread()
            .worker_threads(workers)
            .enable_all()
            .build(),
        Runtime::ThreadPerCore => tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build(),
    };
    let rt = match built {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("gateway: cannot start the runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    let mut result = rt.block_on(async {
        // Everything that can fail on the config runs before anything listens.
        let prepared = server::prepare(&config)?;
        let signals = Signals::install()?;
        let listeners = Listeners::bind(&config, runtime, workers).await?;
        print_summary(&config, &listeners, workers);
        server::run(&config, prepared, listeners, &signals).await
    });
    // Dropping the runtime ends connection tasks the grace period left behind, and with
    // them the last access-log senders; then the writer flushes and `main` returns, which
    // is when an instrumented build writes its profile. Thread-per-core's workers end
    // their own runtimes the same way.
    if let Some(workers) = result.as_mut().ok().and_then(|s| s.workers.take()) {
        workers.finish();
    }
    rt.shutdown_timeout(Duration::from_secs(1));
    match result {
        Ok(stopped) => {
            // At least a moment to flush even when the drain used the whole grace.
            let deadline = stopped
                .deadline
                .max(Instant::now() + Duration::from_millis(500));
            let lost = stopped.writer.finish(deadline);
            if lost > 0 {
                eprintln!(
                    "gateway: access log: the sink did not take {lost} line(s) before the grace period ended; dropped"
                );
            }
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("gateway: {e}");
            ExitCode::from(e.exit_code())
        }
    }
}

fn print_summary(config: &Config, listeners: &Listeners, workers: usize) {
    let addr = listeners
        .main_addr()
        .map_or_else(|_| config.server.listen.to_string(), |a| a.to_string());
    // Tools (the trainer, tests) read the first line to learn the port.
    eprintln!(
        "gateway {}: listening on http://{addr}",
        env!("CARGO_PKG_VERSION")
    );
    let metrics = match (config.observability.metrics, listeners.metrics_addr()) {
        (false, _) => "off".to_owned(),
        (true, Some(a)) => format!("http://{a}/metrics"),
        (true, None) => "/metrics on the main listener".to_owned(),
    };
    eprintln!(
        "  workers: {workers} ({}); metrics: {metrics}; access log: {:?}",
        config.server.runtime.name(),
        config.observability.access_log
    );
    eprintln!(
        "  keys: {}",
        if config.keys.is_empty() {
            "none (open: local use only)".to_owned()
        } else {
            config.keys.len().to_string()
        }
    );
    if let (LimitsBackend::Redis, Some(r)) = (config.rate_limits.backend, &config.rate_limits.redis)
    {
        // The URL is never printed: it may carry a password.
        eprintln!(
            "  rate limits: shared in Redis ({}), prefix {:?}, when it is down: {} (after {} ms)",
            if r.url_env.is_some() {
                "url from the environment"
            } else {
                "url from the file"
            },
            r.key_prefix,
            match r.when_down {
                WhenDown::Open => "open",
                WhenDown::Closed => "closed",
                WhenDown::Memory => "this process's limits",
            },
            r.timeout_ms
        );
    }
    for m in &config.models {
        let targets: Vec<String> = m
            .targets
            .iter()
            .map(|t| {
                let url = redact_userinfo(&t.base_url());
                format!("{:?} {url} ({})", t.provider, t.model)
            })
            .collect();
        eprintln!("  model {}: {}", m.name, targets.join(" -> "));
    }
}
