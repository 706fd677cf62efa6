//! The training stages fail closed: every way a training run can go wrong makes
//! `trainer profile` / `trainer bolt-profile` exit non-zero, name the shape and the cause,
//! and leave nothing at `<out>` (nor staging or work directories behind).
//!
//! A stand-in gateway (`trainer-fake-gateway`) forwards to the in-process mock and misbehaves
//! on demand; stand-in llvm-profdata and merge-fdata scripts keep these tests independent of
//! an LLVM installation. The real tools run in `tests/stage-e2e.sh`.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;

use trainer::train::Manifest;

const TRAINER: &str = env!("CARGO_BIN_EXE_trainer");
const FAKE_GATEWAY: &str = env!("CARGO_BIN_EXE_trainer-fake-gateway");

const FAKE_PROFDATA: &str = r#"#!/bin/sh
case "$1" in
--version) echo "LLVM (http://llvm.org/):"; echo "  LLVM version ${FAKE_LLVM_VERSION:-22.1.8}" ;;
merge) shift; out=""
  while [ $# -gt 0 ]; do
    case "$1" in -o) out="$2"; shift 2 ;; *) cat "$1" >> "$out" || exit 1; shift ;; esac
  done ;;
show) echo "Instrumentation level: IR"; echo "Total functions: 7" ;;
*) exit 2 ;;
esac
"#;

const BROKEN_PROFDATA: &str = r#"#!/bin/sh
case "$1" in
--version) echo "  LLVM version 22.1.8" ;;
*) echo "error: $2: unsupported instrumentation profile format version" >&2; exit 1 ;;
esac
"#;

const FAKE_MERGE_FDATA: &str = r#"#!/bin/sh
if [ "$1" = --version ]; then echo "  LLVM version 22.1.8"; exit 0; fi
out=""; files=""
while [ $# -gt 0 ]; do
  case "$1" in -o) out="$2"; shift 2 ;; *) files="$files $1"; shift ;; esac
done
cat $files > "$out"
"#;

/// Scripts are written once, before any test spawns a process: writing an executable while
/// another thread forks can make its exec fail with ETXTBSY.
fn tools() -> &'static Path {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let dir = std::env::temp_dir().join(format!("trainer-fc-tools-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        for (name, text) in [
            ("llvm-profdata", FAKE_PROFDATA),
            ("llvm-profdata-broken", BROKEN_PROFDATA),
            ("merge-fdata", FAKE_MERGE_FDATA),
        ] {
            let p = dir.join(name);
            std::fs::write(&p, text).unwrap();
            std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
        }
        dir
    })
}

struct Case {
    root: PathBuf,
}

impl Case {
    fn new(tag: &str) -> Case {
        tools();
        let root = std::env::temp_dir().join(format!("trainer-fc-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        for d in ["shapes/bodies", "tmp", "parent", "fdata"] {
            std::fs::create_dir_all(root.join(d)).unwrap();
        }
        let repo = trainer::shapes::repo_dir();
        for (name, body, holdout) in [
            ("chat-nonstream-minimal", "chat-minimal.json", false),
            ("messages-stream-mid", "messages-mid-stream.json", false),
            ("responses-stream-mid", "responses-mid-stream.json", true),
        ] {
            std::fs::copy(
                repo.join("bodies").join(body),
                root.join("shapes/bodies").join(body),
            )
            .unwrap();
            let text = std::fs::read_to_string(repo.join(format!("{name}.toml"))).unwrap();
            let mut shape: toml::Table = toml::from_str(&text).unwrap();
            shape.insert("requests".into(), 20.into());
            shape.insert("concurrency".into(), 2.into());
            shape.insert("holdout".into(), holdout.into());
            std::fs::write(
                root.join("shapes").join(format!("{name}.toml")),
                toml::to_string(&shape).unwrap(),
            )
            .unwrap();
        }
        Case { root }
    }

    fn out(&self) -> PathBuf {
        self.root.join("parent/out")
    }

    fn run(&self, stage: &str, mode: &str, extra: &[&str], env: &[(&str, &str)]) -> Output {
        let root = &self.root;
        let mut cmd = Command::new(TRAINER);
        cmd.arg(stage)
            .arg("--gateway-bin")
            .arg(FAKE_GATEWAY)
            .arg("--shapes")
            .arg(root.join("shapes"))
            .arg("--out")
            .arg(self.out())
            .args(["--min-shape-bytes", "1000", "--min-merged-bytes", "1000"])
            .args(["--ready-timeout-s", "20", "--exit-timeout-s", "3"])
            .env("TMPDIR", root.join("tmp"))
            .env("FAKE_GATEWAY_MODE", mode);
        if stage == "profile" {
            if !extra.contains(&"--llvm-profdata") {
                cmd.arg("--llvm-profdata")
                    .arg(tools().join("llvm-profdata"));
            }
        } else {
            let prefix = root.join("fdata/prof");
            cmd.arg("--merge-fdata")
                .arg(tools().join("merge-fdata"))
                .arg("--instrumentation-file")
                .arg(&prefix)
                .env("FAKE_FDATA_PREFIX", &prefix);
        }
        cmd.args(extra).envs(env.iter().copied());
        cmd.output().unwrap()
    }

    /// Non-zero exit, every `needles` in stderr, and no trace at `<out>` or in the
    /// scratch locations.
    fn assert_failed_closed(&self, out: &Output, needles: &[&str]) {
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "stage succeeded:\n{stderr}");
        for n in needles {
            assert!(stderr.contains(n), "stderr lacks {n:?}:\n{stderr}");
        }
        assert!(
            !self.out().exists(),
            "{} exists after a failure",
            self.out().display()
        );
        for scratch in ["parent", "tmp"] {
            let left: Vec<_> = std::fs::read_dir(self.root.join(scratch))
                .unwrap()
                .map(|e| e.unwrap().file_name())
                .collect();
            assert!(left.is_empty(), "left in {scratch}: {left:?}\n{stderr}");
        }
    }
}

impl Drop for Case {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.root);
    }
}

fn succeeded(out: &Output) {
    assert!(
        out.status.success(),
        "stage failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn pgo_stage_writes_profile_and_manifest() {
    let case = Case::new("pgo-ok");
    let out = case.run("profile", "ok", &[], &[]);
    succeeded(&out);
    let m = Manifest::read(&case.out().join("manifest.json")).unwrap();
    assert_eq!(m.kind, "pgo");
    assert_eq!(m.raw_files, 2, "one .profraw per training shape");
    assert_eq!(m.raw_bytes, 200_000);
    let names: Vec<_> = m.shapes.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(names, ["chat-nonstream-minimal", "messages-stream-mid"]);
    assert!(m.shapes.iter().all(|s| s.ok == 20 && s.files == 1));
    assert_eq!(m.holdout, ["responses-stream-mid"]);
    assert_eq!(m.functions, 7);
    assert_eq!(m.tool.tool_version, "22.1.8");
    let merged = case.out().join("gateway.profdata");
    assert_eq!(std::fs::metadata(&merged).unwrap().len(), m.merged_bytes);
    assert_eq!(
        trainer::train::sha256_file(&merged).unwrap(),
        m.merged_sha256
    );
    assert_eq!(
        trainer::train::sha256_file(Path::new(FAKE_GATEWAY)).unwrap(),
        m.gateway_bin_sha256
    );
    let mut files: Vec<_> = std::fs::read_dir(case.out())
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    files.sort();
    assert_eq!(files, ["gateway.profdata", "manifest.json"]);
    let tmp_left = std::fs::read_dir(case.root.join("tmp")).unwrap().count();
    assert_eq!(tmp_left, 0, "work directory not removed");
}

#[test]
fn bolt_stage_writes_fdata_and_manifest() {
    let case = Case::new("bolt-ok");
    let out = case.run("bolt-profile", "ok", &[], &[]);
    succeeded(&out);
    let m = Manifest::read(&case.out().join("manifest.json")).unwrap();
    assert_eq!(m.kind, "bolt");
    assert_eq!(m.merged_file, "gateway.fdata");
    assert_eq!(m.raw_files, 2);
    assert!(m.functions > 100, "{}", m.functions);
    // The gateway's .fdata files were moved out of the instrumentation directory.
    assert_eq!(
        std::fs::read_dir(case.root.join("fdata")).unwrap().count(),
        0
    );
}

#[test]
fn gateway_exiting_nonzero_on_sigterm_fails() {
    let case = Case::new("exit3");
    let out = case.run("profile", "exit-nonzero", &[], &[]);
    case.assert_failed_closed(
        &out,
        &["shape chat-nonstream-minimal", "exited with code 3"],
    );
}

#[test]
fn gateway_killed_before_flushing_fails() {
    let case = Case::new("sigkill");
    let out = case.run("profile", "sigkill-self", &[], &[]);
    case.assert_failed_closed(
        &out,
        &["shape chat-nonstream-minimal", "killed by signal 9"],
    );
}

#[test]
fn gateway_exiting_zero_without_profile_fails() {
    for stage in ["profile", "bolt-profile"] {
        let case = Case::new(&format!("noprof-{stage}"));
        let out = case.run(stage, "no-profile", &[], &[]);
        case.assert_failed_closed(&out, &["shape chat-nonstream-minimal", "wrote no"]);
    }
}

#[test]
fn profile_under_the_floor_fails() {
    let case = Case::new("small");
    let out = case.run("profile", "small-profile", &[], &[]);
    case.assert_failed_closed(&out, &["shape chat-nonstream-minimal", "under the floor"]);
}

#[test]
fn a_failing_request_fails() {
    let case = Case::new("failreq");
    let out = case.run("profile", "fail-requests", &[], &[]);
    case.assert_failed_closed(
        &out,
        &["shape chat-nonstream-minimal", "drive failed", "status 500"],
    );
}

#[test]
fn llvm_profdata_that_cannot_read_the_profile_fails() {
    let case = Case::new("badtool");
    let broken = tools().join("llvm-profdata-broken");
    let broken = broken.to_str().unwrap();
    let out = case.run("profile", "ok", &["--llvm-profdata", broken], &[]);
    case.assert_failed_closed(&out, &["merge", "unsupported instrumentation profile"]);
}

#[test]
fn real_llvm_profdata_rejects_a_garbage_profraw() {
    // The fake gateway's .profraw is not a profile; a real llvm-profdata must refuse it.
    let Some(tool) = [
        "/usr/bin/llvm-profdata-22",
        "/usr/lib/llvm-22/bin/llvm-profdata",
    ]
    .into_iter()
    .find(|p| Path::new(p).exists())
    .or(option_env!("LLVM_PROFDATA")) else {
        eprintln!("no llvm-profdata-22 here; covered by the stand-in test above");
        return;
    };
    let case = Case::new("garbage");
    let out = case.run("profile", "ok", &["--llvm-profdata", tool], &[]);
    case.assert_failed_closed(&out, &["merge"]);
}

#[test]
fn llvm_profdata_of_another_llvm_major_is_refused() {
    let case = Case::new("major");
    let out = case.run(
        "profile",
        "ok",
        &["--expect-llvm-major", "22"],
        &[("FAKE_LLVM_VERSION", "14.0.6")],
    );
    case.assert_failed_closed(&out, &["LLVM 14.0.6", "major is 22"]);
}

#[test]
fn empty_shapes_dir_fails() {
    let case = Case::new("empty");
    for e in std::fs::read_dir(case.root.join("shapes")).unwrap() {
        let p = e.unwrap().path();
        if p.is_file() {
            std::fs::remove_file(p).unwrap();
        }
    }
    for stage in ["profile", "bolt-profile"] {
        let out = case.run(stage, "ok", &[], &[]);
        case.assert_failed_closed(&out, &["no shape files"]);
    }
}

#[test]
fn gateway_ignoring_sigterm_is_killed_and_fails() {
    let case = Case::new("hang");
    let out = case.run("profile", "ignore-term", &[], &[]);
    case.assert_failed_closed(&out, &["shape chat-nonstream-minimal", "did not exit"]);
}

#[test]
fn gateway_dying_before_ready_fails() {
    let case = Case::new("early");
    let out = case.run("bolt-profile", "die-early", &[], &[]);
    case.assert_failed_closed(
        &out,
        &[
            "shape chat-nonstream-minimal",
            "before /healthz",
            "dying early",
        ],
    );
}

#[test]
fn existing_result_is_never_overwritten() {
    let case = Case::new("exists");
    std::fs::create_dir_all(case.out()).unwrap();
    std::fs::write(case.out().join("gateway.profdata"), "old").unwrap();
    let out = case.run("profile", "ok", &[], &[]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("refusing to overwrite"));
    assert_eq!(
        std::fs::read_to_string(case.out().join("gateway.profdata")).unwrap(),
        "old"
    );
}
