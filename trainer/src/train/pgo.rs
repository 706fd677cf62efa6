//! PGO: the instrumented gateway writes `<work>/<shape>/<shape>-%p-%m.profraw` on a normal
//! exit; llvm-profdata merges them into `gateway.profdata`.

use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use super::manifest::{Floors, ToolInfo};
use super::{elf, llvm_version, major, run_tool, ProfileKind, TrainError};
use crate::shapes::Shape;

pub struct Pgo {
    /// Absolute path to an llvm-profdata of the binary's LLVM major version.
    pub llvm_profdata: PathBuf,
    /// The LLVM major the binary was built with, when the caller knows it (`rustc -vV`).
    pub expect_llvm_major: Option<u32>,
}

impl ProfileKind for Pgo {
    fn kind(&self) -> &'static str {
        "pgo"
    }

    fn merged_name(&self) -> &'static str {
        "gateway.profdata"
    }

    fn check_tools(&self, gateway_bin: &Path) -> Result<ToolInfo, TrainError> {
        let tool = &self.llvm_profdata;
        if !tool.is_absolute() {
            return Err(TrainError::tool(
                tool,
                "must be an absolute path (a PATH lookup may find another LLVM's llvm-profdata)",
            ));
        }
        // LLVM <= 14 answers only `<command> --version`.
        let version_text = run_tool(tool, &[OsStr::new("--version")])
            .or_else(|_| run_tool(tool, &[OsStr::new("merge"), OsStr::new("--version")]))?;
        let tool_version = llvm_version(&version_text).ok_or_else(|| {
            TrainError::tool(
                tool,
                format!("no LLVM version in {:?}", version_text.trim()),
            )
        })?;
        let tool_major = major(&tool_version);
        let comment = elf::section_strings(gateway_bin, ".comment").map_err(|e| {
            TrainError::tool(gateway_bin, format!("cannot read the gateway binary: {e}"))
        })?;
        let binary_llvm = elf::rustc_llvm_version(&comment);
        let wanted = [
            (
                "the gateway binary's",
                binary_llvm.as_deref().and_then(major),
            ),
            ("--expect-llvm-major", self.expect_llvm_major),
        ];
        for (source, want) in wanted {
            if let Some(want) = want {
                if tool_major != Some(want) {
                    return Err(TrainError::tool(
                        tool,
                        format!(
                            "is LLVM {tool_version} but {source} LLVM major is {want}; \
                             use the llvm-profdata of the LLVM rustc was built with"
                        ),
                    ));
                }
            }
        }
        Ok(ToolInfo {
            tool: file_name(tool),
            tool_version,
            binary_llvm: binary_llvm.unwrap_or_else(|| "unknown".into()),
            detail: None,
        })
    }

    fn env(&self, shape: &Shape, work: &Path) -> Vec<(String, String)> {
        let pattern = work
            .join(&shape.name)
            .join(format!("{}-%p-%m.profraw", shape.name));
        vec![(
            "LLVM_PROFILE_FILE".into(),
            pattern.to_string_lossy().into_owned(),
        )]
    }

    fn collect(
        &self,
        shape: &Shape,
        pid: u32,
        _started: SystemTime,
        work: &Path,
        dest: &Path,
    ) -> Result<Vec<PathBuf>, String> {
        let dir = work.join(&shape.name);
        let prefix = format!("{}-{pid}-", shape.name);
        let mut files = Vec::new();
        let entries = std::fs::read_dir(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        for entry in entries {
            let path = entry.map_err(|e| e.to_string())?.path();
            let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
            if name.starts_with(&prefix) && name.ends_with(".profraw") {
                let to = dest.join(name);
                std::fs::rename(&path, &to).map_err(|e| format!("moving {name}: {e}"))?;
                files.push(to);
            }
        }
        files.sort();
        Ok(files)
    }

    /// An instrumented gateway's .profraw is ~1.3 MB whatever it ran (counters for every
    /// function); 64 KiB only catches truncated or foreign files. Coverage is checked by
    /// `Total functions` instead.
    fn default_floors(&self) -> Floors {
        Floors {
            min_shape_bytes: 64 * 1024,
            min_merged_bytes: 64 * 1024,
        }
    }

    fn merge(&self, files: &[PathBuf], merged: &Path) -> Result<u64, TrainError> {
        let mut args: Vec<&OsStr> = vec![OsStr::new("merge"), OsStr::new("-o"), merged.as_os_str()];
        args.extend(files.iter().map(|f| f.as_os_str()));
        run_tool(&self.llvm_profdata, &args)?;
        let show = run_tool(
            &self.llvm_profdata,
            &[OsStr::new("show"), merged.as_os_str()],
        )?;
        total_functions(&show).ok_or_else(|| {
            TrainError::tool(
                &self.llvm_profdata,
                "`show` printed no \"Total functions:\" line",
            )
        })
    }
}

/// The `Total functions: N` of `llvm-profdata show`.
pub fn total_functions(show: &str) -> Option<u64> {
    show.lines()
        .find_map(|l| l.trim().strip_prefix("Total functions:"))
        .and_then(|n| n.trim().parse().ok())
}

pub(super) fn file_name(p: &Path) -> String {
    p.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn total_functions_parses() {
        let show = "Instrumentation level: IR  entry_first = 0\nTotal functions: 1234\nMaximum function count: 9\n";
        assert_eq!(total_functions(show), Some(1234));
        assert_eq!(total_functions("nothing"), None);
    }
}
