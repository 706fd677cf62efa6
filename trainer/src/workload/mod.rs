//! The training workload (`trainer workload --shapes DIR GATEWAY_BIN`): exercises a gateway
//! binary once per training shape and exits 0 only when every lifetime was clean.
//!
//! Per training shape (holdouts are skipped), in name order: start the in-process mock
//! upstream, write the gateway config for the shape's posture, start the gateway, wait for
//! `/healthz`, drive the shape with every response checked, SIGTERM, and require exit code 0
//! within a watchdog. Any failure stops the run with an error naming the shape and the cause.
//!
//! This is only the gateway-specific half of training. The gateway inherits the environment,
//! with only `GATEWAY_TRAINING_VERTEX_TOKEN` added (`crate::launch`): the caller sets `LLVM_PROFILE_FILE` (one file per process via `%p`), or hands
//! over a BOLT-instrumented binary that writes its own `.fdata` per process. Collecting,
//! checking and merging those files is generic and lives in the chain's stages
//! (`nix/lib/stages/pgo-profile.sh` and `nix/lib/stages/bolt-profile.sh`, under the contract of
//! `nix/lib/stages/workload.sh`), not here.

pub mod gateway_config;
mod process;

use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use crate::drive::{self, DriveOptions, DriveReport};
use crate::shapes::{self, Shape, ShapeError};
pub use process::{mock_config, write_ca, TrainingGateway, TRAINING_KEY};

#[derive(Debug, thiserror::Error)]
pub enum WorkloadError {
    #[error(transparent)]
    Shapes(#[from] ShapeError),
    #[error("no training shapes in {0}: every shape is a holdout")]
    NoTrainingShapes(PathBuf),
    #[error("gateway binary {path}: {what}")]
    GatewayBin { path: PathBuf, what: String },
    #[error("shape {shape} ({index} of {total}): {what}")]
    Shape {
        shape: String,
        index: usize,
        total: usize,
        what: String,
    },
    #[error("{what}: {source}")]
    Io {
        what: String,
        source: std::io::Error,
    },
}

/// What a workload run needs.
#[derive(Debug, Clone)]
pub struct WorkloadOptions {
    /// The gateway binary to exercise (instrumented or not; the workload does not care).
    pub gateway_bin: PathBuf,
    pub(crate) shapes_dir: PathBuf,
    /// Longest wait for `/healthz` to answer 200 after the gateway starts.
    pub ready_timeout: Duration,
    /// Longest wait for the gateway to exit after SIGTERM before it is killed (a failure).
    pub exit_timeout: Duration,
    /// Longest a single request may take before it counts as failed.
    pub request_timeout: Duration,
}

impl WorkloadOptions {
    pub fn new(gateway_bin: PathBuf, shapes_dir: PathBuf) -> WorkloadOptions {
        WorkloadOptions {
            gateway_bin,
            shapes_dir,
            ready_timeout: Duration::from_secs(60),
            exit_timeout: Duration::from_secs(60),
            request_timeout: Duration::from_secs(30),
        }
    }
}

/// What a successful run did.
#[derive(Debug, Clone)]
pub struct WorkloadSummary {
    /// One report per training shape, in run order; one gateway process each.
    pub runs: Vec<DriveReport>,
    /// Per run, the connections the gateway opened to the mock: each a TLS handshake on an
    /// HTTPS shape (`upstream_tls`), more than the shape's concurrency when the mock closes
    /// them (`reconnect_every`).
    pub upstream_connections: Vec<u64>,
    /// The holdout shapes that were skipped.
    pub holdout: Vec<String>,
}

/// The gateway's config and stderr log per shape, under `$TMPDIR`; removed however the run
/// ends (a failure's log tail is in its error).
struct WorkDir(PathBuf);

impl Drop for WorkDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Validates the shapes and the binary, then runs one gateway lifetime per training shape;
/// `on_shape` sees each shape, its report and its upstream connections as soon as its gateway
/// exited 0.
pub async fn run(
    opts: &WorkloadOptions,
    mut on_shape: impl FnMut(&Shape, &DriveReport, u64),
) -> Result<WorkloadSummary, WorkloadError> {
    let all = shapes::load_dir(&opts.shapes_dir)?;
    let training = shapes::training(&all);
    if training.is_empty() {
        return Err(WorkloadError::NoTrainingShapes(opts.shapes_dir.clone()));
    }
    let gateway_bin = check_gateway_bin(&opts.gateway_bin)?;

    let nanos = SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0);
    let work = WorkDir(
        std::env::temp_dir().join(format!("trainer-workload.{}.{nanos}", std::process::id())),
    );
    std::fs::create_dir_all(&work.0).map_err(|source| WorkloadError::Io {
        what: format!("creating {}", work.0.display()),
        source,
    })?;

    let mut runs = Vec::with_capacity(training.len());
    let mut upstream_connections = Vec::with_capacity(training.len());
    for (i, shape) in training.iter().enumerate() {
        let (report, connections) = run_shape(opts, &gateway_bin, shape, &work.0.join(&shape.name))
            .await
            .map_err(|what| WorkloadError::Shape {
                shape: shape.name.clone(),
                index: i + 1,
                total: training.len(),
                what,
            })?;
        on_shape(shape, &report, connections);
        runs.push(report);
        upstream_connections.push(connections);
    }
    Ok(WorkloadSummary {
        runs,
        upstream_connections,
        holdout: all
            .iter()
            .filter(|s| s.holdout)
            .map(|s| s.name.clone())
            .collect(),
    })
}

/// An existing regular file, made absolute so that a bare name is never looked up on `PATH`.
fn check_gateway_bin(path: &Path) -> Result<PathBuf, WorkloadError> {
    let bad = |what: String| WorkloadError::GatewayBin {
        path: path.to_owned(),
        what,
    };
    let meta = std::fs::metadata(path).map_err(|e| bad(e.to_string()))?;
    if !meta.is_file() {
        return Err(bad("not a regular file".into()));
    }
    std::path::absolute(path).map_err(|e| bad(format!("cannot resolve: {e}")))
}

/// One gateway lifetime: start, wait ready, drive (every response checked), SIGTERM, exit 0;
/// the report and the upstream connections the gateway opened.
async fn run_shape(
    opts: &WorkloadOptions,
    gateway_bin: &Path,
    shape: &Shape,
    dir: &Path,
) -> Result<(DriveReport, u64), String> {
    let gateway = TrainingGateway::start(gateway_bin, shape, dir, opts.ready_timeout).await?;
    let mut drive_opts = DriveOptions::new(gateway.base_url(), Some(TRAINING_KEY.into()));
    drive_opts.request_timeout = opts.request_timeout;
    let report = match drive::drive(shape, &drive_opts).await {
        Ok(r) if r.is_success() => r,
        Ok(r) => {
            let what = format!("responses failed the check: {r}{}", gateway.log_tail());
            gateway.kill().await;
            return Err(what);
        }
        Err(e) => {
            let what = format!("drive: {e}{}", gateway.log_tail());
            gateway.kill().await;
            return Err(what);
        }
    };
    let connections = gateway.upstream_connections();
    gateway.stop(opts.exit_timeout).await?;
    Ok((report, connections))
}
