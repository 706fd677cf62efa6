//! BOLT: the instrumented gateway's runtime writes `<prefix>.<pid>.fdata` on a normal exit
//! (`<prefix>` alone without `-instrumentation-file-append-pid`); merge-fdata merges them
//! into `gateway.fdata`.
//!
//! The prefix is baked into the binary by `llvm-bolt -instrumentation-file=<prefix>` and the
//! runtime offers no way to change it, so it is read back from the binary's
//! `.note.bolt_info` (which holds the llvm-bolt command line) or given by the caller; the
//! runtime does not create its directory, so the stage does.

use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use super::manifest::{Floors, ToolInfo};
use super::pgo::file_name;
use super::{elf, llvm_version, run_tool, ProfileKind, TrainError};
use crate::shapes::Shape;

pub struct Bolt {
    /// Absolute path to merge-fdata.
    pub merge_fdata: PathBuf,
    /// The `-instrumentation-file` the binary was instrumented with, if the caller knows it.
    pub instrumentation_file: Option<PathBuf>,
    /// Whether the binary appends `.<pid>.fdata`; read from the binary when it says.
    pub append_pid: bool,
    resolved: std::sync::OnceLock<(PathBuf, bool)>,
}

impl Bolt {
    pub fn new(merge_fdata: PathBuf, instrumentation_file: Option<PathBuf>) -> Bolt {
        Bolt {
            merge_fdata,
            instrumentation_file,
            append_pid: true,
            resolved: std::sync::OnceLock::new(),
        }
    }

    fn prefix(&self) -> (PathBuf, bool) {
        self.resolved
            .get()
            .cloned()
            .expect("check_tools resolves the prefix first")
    }
}

/// The instrumentation prefix and append-pid flag from a `.note.bolt_info` string.
pub fn parse_bolt_info(note: &str) -> Option<(PathBuf, bool)> {
    let line = &note[note.find("command line:")? + "command line:".len()..];
    let mut file = None;
    let mut append_pid = false;
    for arg in line.split_whitespace() {
        let arg = arg.trim_start_matches('-');
        if let Some(v) = arg.strip_prefix("instrumentation-file=") {
            file = Some(PathBuf::from(v));
        } else if arg == "instrumentation-file-append-pid" {
            append_pid = true;
        }
    }
    if !line
        .split_whitespace()
        .any(|a| a.trim_start_matches('-') == "instrument")
    {
        return None;
    }
    // llvm-bolt's default when -instrumentation-file is not given.
    Some((file.unwrap_or_else(|| "/tmp/prof.fdata".into()), append_pid))
}

impl ProfileKind for Bolt {
    fn kind(&self) -> &'static str {
        "bolt"
    }

    fn merged_name(&self) -> &'static str {
        "gateway.fdata"
    }

    fn check_tools(&self, gateway_bin: &Path) -> Result<ToolInfo, TrainError> {
        let tool = &self.merge_fdata;
        if !tool.is_absolute() {
            return Err(TrainError::tool(tool, "must be an absolute path"));
        }
        let version_text = run_tool(tool, &[OsStr::new("--version")])?;
        let tool_version = llvm_version(&version_text).unwrap_or_else(|| "unknown".into());
        let note = elf::section_strings(gateway_bin, ".note.bolt_info").map_err(|e| {
            TrainError::tool(gateway_bin, format!("cannot read the gateway binary: {e}"))
        })?;
        let from_binary = note.iter().find_map(|n| parse_bolt_info(n));
        let (prefix, append_pid) = match (&self.instrumentation_file, from_binary) {
            (Some(given), Some((baked, pid))) => {
                if given != &baked {
                    return Err(TrainError::tool(
                        gateway_bin,
                        format!(
                            "was instrumented with -instrumentation-file={} but \
                             --instrumentation-file is {}",
                            baked.display(),
                            given.display()
                        ),
                    ));
                }
                (baked, pid)
            }
            (None, Some(baked)) => baked,
            (Some(given), None) => (given.clone(), self.append_pid),
            (None, None) => {
                return Err(TrainError::tool(
                    gateway_bin,
                    "has no .note.bolt_info naming its -instrumentation-file: not a BOLT \
                     -instrument output? Pass --instrumentation-file",
                ))
            }
        };
        let prefix = std::path::absolute(&prefix).map_err(|e| TrainError::Io {
            what: format!("resolving {}", prefix.display()),
            source: e,
        })?;
        if let Some(dir) = prefix.parent() {
            std::fs::create_dir_all(dir).map_err(|e| TrainError::Io {
                what: format!("creating the .fdata directory {}", dir.display()),
                source: e,
            })?;
        }
        let detail = format!(
            "instrumentation-file={}{}",
            file_name(&prefix),
            if append_pid { " append-pid" } else { "" }
        );
        let _ = self.resolved.set((prefix, append_pid));
        Ok(ToolInfo {
            tool: file_name(tool),
            tool_version,
            binary_llvm: "unknown".into(),
            detail: Some(detail),
        })
    }

    fn env(&self, _shape: &Shape, _work: &Path) -> Vec<(String, String)> {
        Vec::new()
    }

    fn collect(
        &self,
        shape: &Shape,
        pid: u32,
        started: SystemTime,
        _work: &Path,
        dest: &Path,
    ) -> Result<Vec<PathBuf>, String> {
        let (prefix, append_pid) = self.prefix();
        let written = if append_pid {
            let mut p = prefix.into_os_string();
            p.push(format!(".{pid}.fdata"));
            PathBuf::from(p)
        } else {
            prefix
        };
        let meta = match std::fs::metadata(&written) {
            Ok(m) => m,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => return Err(format!("{}: {e}", written.display())),
        };
        // A file from an earlier run (same pid, or no pid in the name) is not this shape's.
        let modified = meta.modified().map_err(|e| e.to_string())?;
        if modified + Duration::from_secs(1) < started {
            return Err(format!(
                "{} predates this shape's gateway: stale, not written by it",
                written.display()
            ));
        }
        let to = dest.join(format!("{}.fdata", shape.name));
        move_file(&written, &to).map_err(|e| format!("moving {}: {e}", written.display()))?;
        Ok(vec![to])
    }

    /// .fdata is text, one line per executed branch edge: its size grows with coverage.
    fn default_floors(&self) -> Floors {
        Floors {
            min_shape_bytes: 16 * 1024,
            min_merged_bytes: 16 * 1024,
        }
    }

    fn merge(&self, files: &[PathBuf], merged: &Path) -> Result<u64, TrainError> {
        let mut args: Vec<&OsStr> = files.iter().map(|f| f.as_os_str()).collect();
        args.push(OsStr::new("-o"));
        args.push(merged.as_os_str());
        run_tool(&self.merge_fdata, &args)?;
        let text = std::fs::read_to_string(merged).map_err(|e| TrainError::Io {
            what: format!("reading {}", merged.display()),
            source: e,
        })?;
        Ok(fdata_functions(&text))
    }
}

/// Distinct functions named in an fdata file. Branch lines are
/// `<is_sym> <from> <off> <is_sym> <to> <off> <mispred> <count>`; a name counts where its
/// `is_sym` is 1 (0 marks an address outside any known function, e.g. `[unknown]`).
pub fn fdata_functions(text: &str) -> u64 {
    let mut names = std::collections::HashSet::new();
    for line in text.lines() {
        let f: Vec<&str> = line.split_whitespace().collect();
        for at in [0, 3] {
            if f.get(at) == Some(&"1") {
                if let Some(name) = f.get(at + 1) {
                    names.insert(*name);
                }
            }
        }
    }
    names.len() as u64
}

/// Rename, or copy and remove across file systems (the prefix may be on another one).
fn move_file(from: &Path, to: &Path) -> std::io::Result<()> {
    if std::fs::rename(from, to).is_ok() {
        return Ok(());
    }
    std::fs::copy(from, to)?;
    std::fs::remove_file(from)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn note_gives_prefix_and_pid_flag() {
        let note = "BOLT revision: <unknown>, command line: llvm-bolt-22 a -instrument \
                    --runtime-instrumentation-lib=/usr/lib/llvm-22/lib/libbolt_rt_instr.a \
                    -instrumentation-file=/tmp/bt/fd/prof -instrumentation-file-append-pid -o a.inst";
        assert_eq!(
            parse_bolt_info(note),
            Some((PathBuf::from("/tmp/bt/fd/prof"), true))
        );
        let default = "BOLT revision: x, command line: llvm-bolt a -instrument -o b";
        assert_eq!(
            parse_bolt_info(default),
            Some((PathBuf::from("/tmp/prof.fdata"), false))
        );
        // An optimized (not instrumented) binary's note.
        let optimized = "BOLT revision: x, command line: llvm-bolt a -o b -data=x.fdata";
        assert_eq!(parse_bolt_info(optimized), None);
    }

    #[test]
    fn counts_distinct_functions() {
        let text = "1 main 12 1 main 1c 0 1\n1 main 1e 1 foo 0 0 3\n\
                    0 [unknown] 0 1 frame_dummy/1 0 0 1\n";
        assert_eq!(fdata_functions(text), 3);
        assert_eq!(fdata_functions(""), 0);
    }
}
