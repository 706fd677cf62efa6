//! Idle RSS: the gateway's `VmRSS` after start-up with a given config (the example config
//! by default), read from `/proc/PID/status` once `/healthz` answers and a settle delay passed.

use std::path::PathBuf;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use trainer::launch::{GatewayProcess, Launch, LaunchError};

#[derive(Debug, Clone)]
pub struct RssOptions {
    pub gateway: PathBuf,
    pub config: PathBuf,
    /// Environment the config needs (upstream and gateway keys read from variables).
    pub env: Vec<(String, String)>,
    pub settle: Duration,
    pub work_dir: PathBuf,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RssReport {
    pub binary: String,
    pub config: String,
    pub(crate) settle_ms: u64,
    pub vm_rss_kib: u64,
    pub vm_hwm_kib: u64,
    pub(crate) threads: Option<u64>,
}

#[derive(Debug, thiserror::Error)]
pub enum RssError {
    #[error(transparent)]
    Launch(#[from] LaunchError),
    #[error("cannot read /proc/{0}/status")]
    Status(u32),
    #[error("creating {path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
}

pub async fn run(opts: &RssOptions) -> Result<RssReport, RssError> {
    std::fs::create_dir_all(&opts.work_dir).map_err(|source| RssError::Io {
        path: opts.work_dir.clone(),
        source,
    })?;
    let launch = Launch {
        bin: opts.gateway.clone(),
        config: opts.config.clone(),
        // The example config names a fixed port; an ephemeral one never collides.
        args: vec!["--listen".into(), "127.0.0.1:0".into()],
        wrapper: Vec::new(),
        cpus: Vec::new(),
        env: opts.env.clone(),
        stderr: opts.work_dir.join("rss-gateway.stderr"),
        ready_timeout: Duration::from_secs(60),
        healthz: true,
        preflight: true,
    };
    let gw = GatewayProcess::start(&launch).await?;
    tokio::time::sleep(opts.settle).await;
    let mem = gw.memory_kib();
    let threads = std::fs::read_to_string(format!("/proc/{}/status", gw.pid()))
        .ok()
        .and_then(|t| trainer::launch::status_kib(&t, "Threads"));
    let pid = gw.pid();
    gw.stop(Duration::from_secs(30)).await?;
    let (rss, hwm) = mem.ok_or(RssError::Status(pid))?;
    Ok(RssReport {
        binary: opts.gateway.display().to_string(),
        config: opts.config.display().to_string(),
        settle_ms: opts.settle.as_millis() as u64,
        vm_rss_kib: rss,
        vm_hwm_kib: hwm,
        threads,
    })
}
