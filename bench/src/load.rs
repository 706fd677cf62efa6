//! The keep-alive load check: a fixed number of requests over N keep-alive connections
//! (32 by default) through one gateway, every response checked; passes only with no failed
//! request. Its rate and latencies are report-only figures.

use std::path::PathBuf;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::config::{bench_config, BENCH_KEY};
use crate::error::{io, BenchError};
use crate::upstream::MockThread;
use trainer::drive::{self, DriveOptions};
use trainer::launch::{GatewayProcess, Launch};
use trainer::shapes::Shape;

#[derive(Debug, Clone)]
pub struct LoadOptions {
    pub gateway: PathBuf,
    pub connections: u32,
    pub requests: u64,
    pub workers: usize,
    pub work_dir: PathBuf,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct LoadReport {
    pub binary: String,
    pub shape: String,
    pub connections: u32,
    pub workers: usize,
    pub requests: u64,
    pub ok: u64,
    pub(crate) failed: u64,
    pub(crate) seconds: f64,
    pub(crate) rps: f64,
    pub(crate) p50_ms: f64,
    pub(crate) p99_ms: f64,
    pub failures: Vec<String>,
}

impl LoadReport {
    pub fn pass(&self) -> bool {
        self.failed == 0 && self.ok == self.requests
    }
}

pub async fn run(shape: &Shape, opts: &LoadOptions) -> Result<LoadReport, BenchError> {
    std::fs::create_dir_all(&opts.work_dir)
        .map_err(io(format!("creating {}", opts.work_dir.display())))?;
    let mock = MockThread::start(Vec::new()).map_err(io("starting the mock upstream"))?;
    let config = opts.work_dir.join("load-gateway.toml");
    std::fs::write(
        &config,
        bench_config(shape, mock.base_url(), None, opts.workers),
    )
    .map_err(io(format!("writing {}", config.display())))?;
    let launch = Launch {
        bin: opts.gateway.clone(),
        config,
        args: Vec::new(),
        wrapper: Vec::new(),
        cpus: Vec::new(),
        env: Vec::new(),
        stderr: opts.work_dir.join("load-gateway.stderr"),
        ready_timeout: Duration::from_secs(60),
        healthz: true,
        preflight: true,
    };
    let gw = GatewayProcess::start(&launch).await?;
    let mut s = shape.clone();
    s.requests = opts.requests;
    s.concurrency = opts.connections;
    let d = DriveOptions::new(gw.base_url(), Some(BENCH_KEY.into()));
    let r = match drive::drive(&s, &d).await {
        Ok(r) => r,
        Err(e) => {
            gw.kill().await;
            return Err(BenchError::Failed(format!("drive: {e}")));
        }
    };
    gw.stop(Duration::from_secs(30)).await?;
    Ok(LoadReport {
        binary: opts.gateway.display().to_string(),
        shape: shape.name.clone(),
        connections: opts.connections,
        workers: opts.workers,
        requests: r.requests,
        ok: r.ok,
        failed: r.failed,
        seconds: r.elapsed.as_secs_f64(),
        rps: r.rate(),
        p50_ms: r.p50.as_secs_f64() * 1e3,
        p99_ms: r.p99.as_secs_f64() * 1e3,
        failures: r.failures,
    })
}
