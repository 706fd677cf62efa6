//! `manifest.json`: what a training run did, written next to the merged profile.
//!
//! Paths are recorded by file name only: in Nix a store path in the manifest would make the
//! profile's output reference the instrumented binary and the tools.

use std::path::Path;

use serde::{Deserialize, Serialize};

use super::TrainError;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolInfo {
    /// The merge tool's file name (`llvm-profdata-22`, `merge-fdata`).
    pub tool: String,
    /// Its `--version` line (e.g. `LLVM version 22.1.8`), or `unknown`.
    pub tool_version: String,
    /// The LLVM version the instrumented binary was built with, or `unknown`.
    pub binary_llvm: String,
    /// Kind-specific facts (e.g. the BOLT instrumentation file prefix).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ShapeRecord {
    pub name: String,
    pub dialect: String,
    /// The provider the shape's model was routed to (absent in older manifests).
    #[serde(default)]
    pub upstream: String,
    pub stream: bool,
    pub posture: String,
    pub requests: u64,
    pub concurrency: u32,
    /// Responses that passed the driver's checks (always `requests` in a written manifest).
    pub ok: u64,
    /// Requests per second through the instrumented gateway (informational).
    pub rate: f64,
    /// Profile files this shape's gateway wrote (.profraw or .fdata), and their bytes.
    pub files: u64,
    pub bytes: u64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Floors {
    pub min_shape_bytes: u64,
    pub min_merged_bytes: u64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Manifest {
    /// `pgo` or `bolt`.
    pub kind: String,
    pub gateway_bin: String,
    pub gateway_bin_sha256: String,
    pub tool: ToolInfo,
    /// The training shapes, in training order.
    pub shapes: Vec<ShapeRecord>,
    /// Shapes that were deliberately not trained.
    pub holdout: Vec<String>,
    /// All per-shape profile files (.profraw or .fdata) and their total bytes.
    pub raw_files: u64,
    pub raw_bytes: u64,
    /// `gateway.profdata` or `gateway.fdata`.
    pub merged_file: String,
    pub merged_bytes: u64,
    pub merged_sha256: String,
    /// Functions with profile data in the merged file.
    pub functions: u64,
    pub floors: Floors,
    /// Wall time of the whole stage.
    pub seconds: f64,
}

impl Manifest {
    pub fn to_json(&self) -> String {
        let mut s = serde_json::to_string_pretty(self).expect("manifest serializes");
        s.push('\n');
        s
    }

    pub fn write(&self, path: &Path) -> Result<(), TrainError> {
        std::fs::write(path, self.to_json()).map_err(|source| TrainError::Io {
            what: format!("writing {}", path.display()),
            source,
        })
    }

    pub fn read(path: &Path) -> Result<Manifest, TrainError> {
        let text = std::fs::read_to_string(path).map_err(|source| TrainError::Io {
            what: format!("reading {}", path.display()),
            source,
        })?;
        serde_json::from_str(&text).map_err(|e| TrainError::Output {
            path: path.to_owned(),
            what: format!("not a manifest: {e}"),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Manifest {
        Manifest {
            kind: "pgo".into(),
            gateway_bin: "gateway".into(),
            gateway_bin_sha256: "ab".repeat(32),
            tool: ToolInfo {
                tool: "llvm-profdata-22".into(),
                tool_version: "22.1.8".into(),
                binary_llvm: "unknown".into(),
                detail: None,
            },
            shapes: vec![ShapeRecord {
                name: "chat-nonstream-minimal".into(),
                dialect: "chat".into(),
                upstream: "openai".into(),
                stream: false,
                posture: "default".into(),
                requests: 2000,
                concurrency: 4,
                ok: 2000,
                rate: 1234.5,
                files: 1,
                bytes: 100_000,
            }],
            holdout: vec!["responses-stream-mid".into()],
            raw_files: 1,
            raw_bytes: 100_000,
            merged_file: "gateway.profdata".into(),
            merged_bytes: 50_000,
            merged_sha256: "cd".repeat(32),
            functions: 42,
            floors: Floors {
                min_shape_bytes: 4096,
                min_merged_bytes: 4096,
            },
            seconds: 1.5,
        }
    }

    #[test]
    fn manifest_round_trips_through_a_file() {
        let m = sample();
        let path =
            std::env::temp_dir().join(format!("trainer-manifest-{}.json", std::process::id()));
        m.write(&path).unwrap();
        let back = Manifest::read(&path).unwrap();
        std::fs::remove_file(&path).unwrap();
        assert_eq!(back, m);
    }

    #[test]
    fn manifest_has_the_contract_fields() {
        let v: serde_json::Value = serde_json::from_str(&sample().to_json()).unwrap();
        for key in [
            "kind",
            "gateway_bin_sha256",
            "shapes",
            "raw_files",
            "raw_bytes",
            "merged_bytes",
            "merged_sha256",
            "functions",
        ] {
            assert!(v.get(key).is_some(), "missing {key}");
        }
        assert_eq!(v["tool"]["tool_version"], "22.1.8");
        assert_eq!(v["shapes"][0]["requests"], 2000);
        // No detail key when there is none.
        assert!(v["tool"].get("detail").is_none());
    }
}
