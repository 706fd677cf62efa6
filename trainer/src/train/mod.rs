//! The fail-closed training stages: one generic loop over the training shapes, two profile
//! kinds (`pgo`: LLVM .profraw merged by llvm-profdata; `bolt`: BOLT .fdata merged by
//! merge-fdata).
//!
//! Per training shape: start the in-process mock upstream, write the gateway config for the
//! shape's posture, start the instrumented gateway, wait for `/healthz`, drive the shape
//! (every response checked), SIGTERM, require exit 0 within a watchdog, and require the
//! shape's profile file over a size floor. Then merge, check the merged file, and publish
//! `<out>/<merged>` and `<out>/manifest.json` by renaming a staging directory built next to
//! `<out>`: until that rename nothing exists at `<out>`, and any failure removes the staging
//! and work directories.

pub mod bolt;
pub mod elf;
pub mod gateway_config;
pub mod manifest;
pub mod pgo;
pub mod process;

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant, SystemTime};

use sha2::{Digest, Sha256};

use crate::drive::{self, DriveOptions};
use crate::shapes::{self, Shape, ShapeError};
pub use manifest::{Manifest, ShapeRecord};
use process::describe;
pub use process::{GatewayProcess, TRAINING_KEY};

#[derive(Debug, thiserror::Error)]
pub enum TrainError {
    #[error(transparent)]
    Shapes(#[from] ShapeError),
    #[error("no training shapes in {0}: every shape is a holdout")]
    NoTrainingShapes(PathBuf),
    #[error("shape {shape}: {what}")]
    Shape { shape: String, what: String },
    #[error("{tool}: {what}")]
    Tool { tool: String, what: String },
    #[error("output {path}: {what}")]
    Output { path: PathBuf, what: String },
    #[error("{what}: {source}")]
    Io {
        what: String,
        source: std::io::Error,
    },
}

impl TrainError {
    fn shape(shape: &Shape, what: impl Into<String>) -> TrainError {
        TrainError::Shape {
            shape: shape.name.clone(),
            what: what.into(),
        }
    }

    fn tool(tool: &Path, what: impl Into<String>) -> TrainError {
        TrainError::Tool {
            tool: tool.display().to_string(),
            what: what.into(),
        }
    }
}

fn io(what: impl Into<String>) -> impl FnOnce(std::io::Error) -> TrainError {
    let what = what.into();
    move |source| TrainError::Io { what, source }
}

/// What the generic loop needs from a profile kind.
pub trait ProfileKind {
    /// `pgo` or `bolt`, recorded in the manifest.
    fn kind(&self) -> &'static str;
    /// The merged file's name in `<out>`.
    fn merged_name(&self) -> &'static str;
    /// The merge tool, its version line, and what the binary tells about the toolchain;
    /// refuses a tool that cannot match the binary.
    fn check_tools(&self, gateway_bin: &Path) -> Result<manifest::ToolInfo, TrainError>;
    /// Environment for the gateway process of one shape.
    fn env(&self, shape: &Shape, work: &Path) -> Vec<(String, String)>;
    /// Called after the gateway of `shape` (process id `pid`, started at `started`) exited 0:
    /// moves the profile files it wrote into `dest` and returns them.
    fn collect(
        &self,
        shape: &Shape,
        pid: u32,
        started: SystemTime,
        work: &Path,
        dest: &Path,
    ) -> Result<Vec<PathBuf>, String>;
    /// Merges the per-shape files into `merged`; returns the profiled function count.
    fn merge(&self, files: &[PathBuf], merged: &Path) -> Result<u64, TrainError>;
    /// The size floors used unless the caller overrides them.
    fn default_floors(&self) -> manifest::Floors;
}

/// Options of a training run that do not depend on the profile kind.
#[derive(Debug, Clone)]
pub struct TrainOptions {
    pub gateway_bin: PathBuf,
    pub shapes_dir: PathBuf,
    pub out: PathBuf,
    /// Smallest acceptable profile file of one shape (default: the kind's).
    pub min_shape_bytes: Option<u64>,
    /// Smallest acceptable merged profile (default: the kind's).
    pub min_merged_bytes: Option<u64>,
    /// Longest wait for `/healthz` to answer 200 after the gateway starts.
    pub ready_timeout: Duration,
    /// Longest wait for the gateway to exit after SIGTERM before it is killed.
    pub exit_timeout: Duration,
}

impl TrainOptions {
    pub fn new(gateway_bin: PathBuf, shapes_dir: PathBuf, out: PathBuf) -> TrainOptions {
        TrainOptions {
            gateway_bin,
            shapes_dir,
            out,
            min_shape_bytes: None,
            min_merged_bytes: None,
            ready_timeout: Duration::from_secs(60),
            exit_timeout: Duration::from_secs(60),
        }
    }
}

/// Removes the staging and work directories unless the run succeeded.
struct Scratch {
    dirs: Vec<PathBuf>,
}

impl Drop for Scratch {
    fn drop(&mut self) {
        for d in &self.dirs {
            let _ = std::fs::remove_dir_all(d);
        }
    }
}

/// Runs the training stage for `kind`; on success `<out>` holds the merged profile and
/// `manifest.json`, on failure nothing is at `<out>` that was not there before.
pub async fn run(kind: &dyn ProfileKind, opts: &TrainOptions) -> Result<Manifest, TrainError> {
    let started = Instant::now();
    let defaults = kind.default_floors();
    let floors = manifest::Floors {
        min_shape_bytes: opts.min_shape_bytes.unwrap_or(defaults.min_shape_bytes),
        min_merged_bytes: opts.min_merged_bytes.unwrap_or(defaults.min_merged_bytes),
    };
    let out = absolute(&opts.out)?;
    let out_name = out
        .file_name()
        .and_then(|n| n.to_str())
        .ok_or_else(|| TrainError::Output {
            path: out.clone(),
            what: "has no file name".into(),
        })?
        .to_owned();
    check_out_free(&out)?;

    let all = shapes::load_dir(&opts.shapes_dir)?;
    let training = shapes::training(&all);
    if training.is_empty() {
        return Err(TrainError::NoTrainingShapes(opts.shapes_dir.clone()));
    }
    let tools = kind.check_tools(&opts.gateway_bin)?;
    let gateway_sha256 = sha256_file(&opts.gateway_bin)?;

    let parent = out.parent().unwrap_or(Path::new("/")).to_owned();
    std::fs::create_dir_all(&parent).map_err(io(format!("creating {}", parent.display())))?;
    let tag = format!("{}.{}", std::process::id(), unique());
    let staging = parent.join(format!(".{out_name}.trainer-staging.{tag}"));
    let work = std::env::temp_dir().join(format!("trainer-{}-work.{tag}", kind.kind()));
    let mut scratch = Scratch {
        dirs: vec![staging.clone(), work.clone()],
    };
    let raw_dir = work.join("profiles");
    for d in [&staging, &work, &raw_dir] {
        std::fs::create_dir_all(d).map_err(io(format!("creating {}", d.display())))?;
    }

    let mut records = Vec::new();
    let mut files = Vec::new();
    for shape in &training {
        let (record, shape_files) =
            train_shape(kind, opts, &floors, shape, &work, &raw_dir).await?;
        eprintln!(
            "trainer {}: {}: {} files, {} bytes",
            kind.kind(),
            record.name,
            record.files,
            record.bytes
        );
        records.push(record);
        files.extend(shape_files);
    }

    let merged = staging.join(kind.merged_name());
    let functions = kind.merge(&files, &merged)?;
    let merged_bytes = file_len(&merged)?;
    if merged_bytes < floors.min_merged_bytes {
        return Err(TrainError::Tool {
            tool: tools.tool.clone(),
            what: format!(
                "merged profile is {merged_bytes} bytes, under the floor of {}",
                floors.min_merged_bytes
            ),
        });
    }
    if functions == 0 {
        return Err(TrainError::Tool {
            tool: tools.tool.clone(),
            what: "merged profile has no profiled functions".into(),
        });
    }
    let manifest = Manifest {
        kind: kind.kind().to_owned(),
        gateway_bin: opts
            .gateway_bin
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default(),
        gateway_bin_sha256: gateway_sha256,
        tool: tools,
        shapes: records,
        holdout: all
            .iter()
            .filter(|s| s.holdout)
            .map(|s| s.name.clone())
            .collect(),
        raw_files: files.len() as u64,
        raw_bytes: files.iter().map(|f| file_len(f).unwrap_or(0)).sum(),
        merged_file: kind.merged_name().to_owned(),
        merged_bytes,
        merged_sha256: sha256_file(&merged)?,
        functions,
        floors,
        seconds: started.elapsed().as_secs_f64(),
    };
    manifest.write(&staging.join("manifest.json"))?;

    publish(&staging, &out)?;
    scratch.dirs.retain(|d| d != &staging);
    drop(scratch);
    Ok(manifest)
}

/// One gateway lifetime: start, wait ready, drive, SIGTERM, exit 0, collect the profile.
async fn train_shape(
    kind: &dyn ProfileKind,
    opts: &TrainOptions,
    floors: &manifest::Floors,
    shape: &Shape,
    work: &Path,
    raw_dir: &Path,
) -> Result<(ShapeRecord, Vec<PathBuf>), TrainError> {
    let fail = |what: String| TrainError::shape(shape, what);
    let gateway = GatewayProcess::start(
        &opts.gateway_bin,
        shape,
        &work.join(&shape.name),
        kind.env(shape, work),
        opts.ready_timeout,
    )
    .await
    .map_err(fail)?;
    let pid = gateway.pid();
    let spawned_at = gateway.spawned_at;

    let mut drive_opts = DriveOptions::new(gateway.base_url(), Some(TRAINING_KEY.into()));
    drive_opts.request_timeout = Duration::from_secs(30);
    let report = match drive::drive(shape, &drive_opts).await {
        Ok(r) if r.is_success() => r,
        Ok(r) => {
            let what = format!("drive failed: {r}{}", gateway.log_tail());
            gateway.kill().await;
            return Err(fail(what));
        }
        Err(e) => {
            let what = format!("drive: {e}{}", gateway.log_tail());
            gateway.kill().await;
            return Err(fail(what));
        }
    };
    gateway.stop(opts.exit_timeout).await.map_err(fail)?;

    let dest = raw_dir.join(&shape.name);
    std::fs::create_dir_all(&dest)
        .map_err(|e| fail(format!("creating {}: {e}", dest.display())))?;
    let files = kind
        .collect(shape, pid, spawned_at, work, &dest)
        .map_err(|what| fail(format!("collecting the profile: {what}")))?;
    if files.is_empty() {
        return Err(fail(format!(
            "gateway exited 0 but wrote no {} profile",
            kind.kind()
        )));
    }
    let mut bytes = 0;
    for f in &files {
        let len = file_len(f).map_err(|e| fail(e.to_string()))?;
        if len < floors.min_shape_bytes {
            return Err(fail(format!(
                "profile {} is {len} bytes, under the floor of {}",
                f.display(),
                floors.min_shape_bytes
            )));
        }
        bytes += len;
    }
    let record = ShapeRecord {
        name: shape.name.clone(),
        dialect: shape.dialect.as_str().to_owned(),
        upstream: shape.upstream.as_str().to_owned(),
        stream: shape.stream,
        posture: shape.posture.as_str().to_owned(),
        requests: shape.requests,
        concurrency: shape.concurrency,
        ok: report.ok,
        rate: (report.rate() * 10.0).round() / 10.0,
        files: files.len() as u64,
        bytes,
    };
    Ok((record, files))
}

fn unique() -> u128 {
    SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0)
}

fn absolute(p: &Path) -> Result<PathBuf, TrainError> {
    std::path::absolute(p).map_err(io(format!("resolving {}", p.display())))
}

/// `<out>` must not exist, or be an empty directory: never overwrite a result.
fn check_out_free(out: &Path) -> Result<(), TrainError> {
    match std::fs::read_dir(out) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Ok(mut entries) => match entries.next() {
            None => Ok(()),
            Some(_) => Err(TrainError::Output {
                path: out.to_owned(),
                what: "exists and is not empty; refusing to overwrite".into(),
            }),
        },
        Err(e) => Err(TrainError::Output {
            path: out.to_owned(),
            what: format!("exists but cannot be read as a directory: {e}"),
        }),
    }
}

fn publish(staging: &Path, out: &Path) -> Result<(), TrainError> {
    check_out_free(out)?;
    if out.exists() {
        std::fs::remove_dir(out).map_err(io(format!("removing empty {}", out.display())))?;
    }
    std::fs::rename(staging, out).map_err(io(format!(
        "renaming {} to {}",
        staging.display(),
        out.display()
    )))
}

pub fn file_len(path: &Path) -> Result<u64, TrainError> {
    Ok(std::fs::metadata(path)
        .map_err(io(format!("reading {}", path.display())))?
        .len())
}

pub fn sha256_file(path: &Path) -> Result<String, TrainError> {
    let mut f = std::fs::File::open(path).map_err(io(format!("opening {}", path.display())))?;
    let mut h = Sha256::new();
    let mut buf = vec![0u8; 1 << 16];
    loop {
        let n = f
            .read(&mut buf)
            .map_err(io(format!("reading {}", path.display())))?;
        if n == 0 {
            break;
        }
        h.update(&buf[..n]);
    }
    Ok(hex(&h.finalize()))
}

pub fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Runs a tool to completion; its stdout, or an error naming it with its stderr.
pub fn run_tool(tool: &Path, args: &[&std::ffi::OsStr]) -> Result<String, TrainError> {
    let out = std::process::Command::new(tool)
        .args(args)
        .stdin(Stdio::null())
        .output()
        .map_err(|e| TrainError::tool(tool, format!("cannot run: {e}")))?;
    if !out.status.success() {
        let args: Vec<_> = args.iter().map(|a| a.to_string_lossy()).collect();
        return Err(TrainError::tool(
            tool,
            format!(
                "`{}` {}: {}",
                args.join(" "),
                describe(out.status),
                String::from_utf8_lossy(&out.stderr).trim()
            ),
        ));
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// The `X.Y.Z` after "LLVM version " in a tool's `--version` output.
pub fn llvm_version(text: &str) -> Option<String> {
    let rest = &text[text.find("LLVM version ")? + "LLVM version ".len()..];
    let v: String = rest
        .chars()
        .take_while(|c| c.is_ascii_digit() || *c == '.')
        .collect();
    (!v.is_empty()).then_some(v)
}

pub fn major(version: &str) -> Option<u32> {
    version.split('.').next()?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn llvm_versions_parse() {
        let debian = "Debian LLVM version 22.1.8\n  Optimized build.\n";
        assert_eq!(llvm_version(debian).as_deref(), Some("22.1.8"));
        let upstream = "LLVM (http://llvm.org/):\n  LLVM version 19.1.7\n";
        assert_eq!(llvm_version(upstream).as_deref(), Some("19.1.7"));
        assert_eq!(llvm_version("BOLT revision x"), None);
        assert_eq!(major("22.1.8"), Some(22));
    }

    #[test]
    fn out_must_be_free() {
        let d = std::env::temp_dir().join(format!("trainer-out-free-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        assert!(check_out_free(&d).is_ok());
        std::fs::create_dir_all(&d).unwrap();
        assert!(check_out_free(&d).is_ok());
        std::fs::write(d.join("x"), "").unwrap();
        assert!(check_out_free(&d).is_err());
        std::fs::remove_dir_all(&d).unwrap();
    }
}
