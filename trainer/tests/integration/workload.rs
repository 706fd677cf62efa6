//! `trainer workload` fails closed: every way a gateway lifetime can go wrong makes it exit
//! non-zero with a message naming the shape and the cause, and a clean run exits 0 having
//! started one gateway per training shape with the caller's environment (`LLVM_PROFILE_FILE`
//! above all) passed through untouched.
//!
//! A stand-in gateway (`trainer-fake-gateway`) forwards to the in-process mock and misbehaves
//! on demand; `gateway_drive` runs the workload against the real gateway.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

const TRAINER: &str = env!("CARGO_BIN_EXE_trainer");
const FAKE_GATEWAY: &str = env!("CARGO_BIN_EXE_trainer-fake-gateway");

/// Two training shapes and one holdout, trimmed to 20 requests each, on plain HTTP.
struct Case {
    root: PathBuf,
}

impl Case {
    fn new(tag: &str) -> Case {
        let root = std::env::temp_dir().join(format!("trainer-wl-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        for d in ["shapes/bodies", "tmp", "profiles"] {
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
            // The stand-in forwards over plain HTTP; `gateway_drive` runs HTTPS through the
            // real gateway.
            shape.insert("upstream_tls".into(), false.into());
            std::fs::write(
                root.join("shapes").join(format!("{name}.toml")),
                toml::to_string(&shape).unwrap(),
            )
            .unwrap();
        }
        Case { root }
    }

    fn shapes(&self) -> PathBuf {
        self.root.join("shapes")
    }

    /// `trainer workload --shapes <shapes> <extra...> <fake gateway>` with `TMPDIR` private
    /// to the case and `FAKE_GATEWAY_MODE=mode`; `LLVM_PROFILE_FILE` is removed unless `env`
    /// sets it.
    fn run(&self, mode: &str, extra: &[&str], env: &[(&str, &str)]) -> Output {
        let mut cmd = Command::new(TRAINER);
        cmd.arg("workload").arg("--shapes").arg(self.shapes());
        if !extra.contains(&"--ready-timeout-secs") {
            cmd.args(["--ready-timeout-secs", "20"]);
        }
        cmd.args(["--exit-timeout-secs", "3"])
            .args(extra)
            .arg(FAKE_GATEWAY)
            .env_remove("LLVM_PROFILE_FILE")
            .env("TMPDIR", self.root.join("tmp"))
            .env("FAKE_GATEWAY_MODE", mode)
            .envs(env.iter().copied());
        cmd.output().unwrap()
    }

    /// Nothing left in the case's `TMPDIR`.
    fn assert_tmp_clean(&self, out: &Output) {
        let left: Vec<_> = std::fs::read_dir(self.root.join("tmp"))
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert!(left.is_empty(), "left in TMPDIR: {left:?}\n{}", stderr(out));
    }

    /// Non-zero exit, every one of `needles` in stderr, no summary line, a clean `TMPDIR`.
    fn assert_failed(&self, out: &Output, needles: &[&str]) {
        let err = stderr(out);
        assert!(!out.status.success(), "workload succeeded:\n{err}");
        assert_eq!(out.status.code(), Some(1), "{err}");
        for n in needles {
            assert!(err.contains(n), "stderr lacks {n:?}:\n{err}");
        }
        assert!(
            !String::from_utf8_lossy(&out.stdout).contains("gateway runs"),
            "summary printed on failure"
        );
        self.assert_tmp_clean(out);
    }
}

impl Drop for Case {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.root);
    }
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

fn succeeded(out: &Output) {
    assert!(
        out.status.success(),
        "workload failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn well_behaved_gateway_runs_once_per_training_shape() {
    let case = Case::new("ok");
    let out = case.run("ok", &[], &[]);
    succeeded(&out);
    let err = stderr(&out);
    for shape in ["chat-nonstream-minimal", "messages-stream-mid"] {
        let line = err
            .lines()
            .find(|l| l.starts_with(&format!("trainer workload: {shape}: ")))
            .unwrap_or_else(|| panic!("no line for {shape}:\n{err}"));
        assert!(line.contains("20/20 requests ok"), "{line}");
        assert!(line.contains(" req/s, "), "{line}");
        assert!(
            line.ends_with(" upstream connections (plain HTTP)"),
            "{line}"
        );
    }
    assert!(!err.contains("responses-stream-mid"), "holdout ran:\n{err}");
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "trainer workload: 2 gateway runs\n"
    );
    case.assert_tmp_clean(&out);
}

#[test]
fn llvm_profile_file_reaches_every_gateway_unchanged() {
    let case = Case::new("env");
    let pattern = case.root.join("profiles/gateway-%p.profraw");
    let pattern = pattern.to_str().unwrap();
    let env_out = case.root.join("env.txt");
    let out = case.run(
        "ok",
        &[],
        &[
            ("LLVM_PROFILE_FILE", pattern),
            ("FAKE_GATEWAY_ENV_OUT", env_out.to_str().unwrap()),
        ],
    );
    succeeded(&out);
    let seen = std::fs::read_to_string(&env_out).unwrap();
    let lines: Vec<(&str, &str)> = seen.lines().map(|l| l.split_once(' ').unwrap()).collect();
    assert_eq!(
        lines.len(),
        2,
        "one gateway process per training shape:\n{seen}"
    );
    assert_ne!(lines[0].0, lines[1].0, "distinct processes:\n{seen}");
    for (_, value) in &lines {
        assert_eq!(*value, pattern, "LLVM_PROFILE_FILE changed on the way");
    }
    // The fake gateway writes its profile where the pattern says, one file per process.
    let mut files: Vec<String> = std::fs::read_dir(case.root.join("profiles"))
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    files.sort();
    let mut want: Vec<String> = lines
        .iter()
        .map(|(pid, _)| format!("gateway-{pid}.profraw"))
        .collect();
    want.sort();
    assert_eq!(files, want);
}

#[test]
fn the_workload_sets_no_profile_variable_of_its_own() {
    let case = Case::new("noenv");
    let env_out = case.root.join("env.txt");
    let out = case.run(
        "ok",
        &[],
        &[("FAKE_GATEWAY_ENV_OUT", env_out.to_str().unwrap())],
    );
    succeeded(&out);
    let seen = std::fs::read_to_string(&env_out).unwrap();
    assert_eq!(seen.lines().count(), 2, "{seen}");
    assert!(
        seen.lines().all(|l| l.ends_with(" (unset)")),
        "LLVM_PROFILE_FILE appeared:\n{seen}"
    );
}

#[test]
fn gateway_exiting_nonzero_on_sigterm_fails() {
    let case = Case::new("exit3");
    let out = case.run("exit-nonzero", &[], &[]);
    case.assert_failed(
        &out,
        &[
            "shape chat-nonstream-minimal (1 of 2)",
            "exited with code 3 after SIGTERM",
        ],
    );
}

#[test]
fn gateway_killed_on_sigterm_fails() {
    let case = Case::new("sigkill");
    let out = case.run("sigkill-self", &[], &[]);
    case.assert_failed(
        &out,
        &["shape chat-nonstream-minimal", "killed by signal 9"],
    );
}

#[test]
fn gateway_ignoring_sigterm_is_killed_and_fails() {
    let case = Case::new("hang");
    let out = case.run("ignore-term", &[], &[]);
    case.assert_failed(
        &out,
        &["shape chat-nonstream-minimal", "did not exit within 3s"],
    );
}

#[test]
fn gateway_dying_before_ready_fails() {
    let case = Case::new("early");
    let out = case.run("die-early", &[], &[]);
    case.assert_failed(
        &out,
        &[
            "shape chat-nonstream-minimal",
            "exited with code 1 before /healthz",
            "dying early",
        ],
    );
}

#[test]
fn gateway_never_ready_fails() {
    let case = Case::new("notready");
    let out = case.run("never-ready", &["--ready-timeout-secs", "2"], &[]);
    case.assert_failed(
        &out,
        &[
            "shape chat-nonstream-minimal",
            "/healthz did not answer 200 within 2s",
            "status 503",
        ],
    );
}

#[test]
fn a_failing_request_fails() {
    let case = Case::new("failreq");
    let out = case.run("fail-requests", &[], &[]);
    case.assert_failed(
        &out,
        &[
            "shape chat-nonstream-minimal",
            "responses failed the check",
            "status 500",
        ],
    );
}

#[test]
fn a_malformed_response_fails() {
    let case = Case::new("corrupt");
    let out = case.run("corrupt-responses", &[], &[]);
    case.assert_failed(
        &out,
        &[
            "shape chat-nonstream-minimal",
            "responses failed the check",
            "not valid JSON",
        ],
    );
}

#[test]
fn a_failure_in_a_later_shape_names_it() {
    // The chat shape runs clean; the messages shape's streamed bodies get cut.
    let case = Case::new("later");
    let out = case.run("corrupt-responses:claude-sonnet", &[], &[]);
    case.assert_failed(
        &out,
        &[
            "trainer workload: chat-nonstream-minimal: 20/20 requests ok",
            "shape messages-stream-mid (2 of 2)",
            "responses failed the check",
            "truncated",
        ],
    );
}

#[test]
fn empty_shapes_dir_fails() {
    let case = Case::new("empty");
    for e in std::fs::read_dir(case.shapes()).unwrap() {
        let p = e.unwrap().path();
        if p.is_file() {
            std::fs::remove_file(p).unwrap();
        }
    }
    let out = case.run("ok", &[], &[]);
    case.assert_failed(&out, &["no shape files"]);
}

#[test]
fn holdout_only_shapes_dir_fails() {
    let case = Case::new("holdout");
    for name in ["chat-nonstream-minimal", "messages-stream-mid"] {
        std::fs::remove_file(case.shapes().join(format!("{name}.toml"))).unwrap();
    }
    let env_out = case.root.join("env.txt");
    let out = case.run(
        "ok",
        &[],
        &[("FAKE_GATEWAY_ENV_OUT", env_out.to_str().unwrap())],
    );
    case.assert_failed(&out, &["no training shapes", "every shape is a holdout"]);
    assert!(!env_out.exists(), "a gateway was started");
}

#[test]
fn invalid_shape_fails_before_any_gateway_starts() {
    let case = Case::new("invalid");
    std::fs::write(case.shapes().join("zz-broken.toml"), "dialect = 7\n").unwrap();
    let env_out = case.root.join("env.txt");
    let out = case.run(
        "ok",
        &[],
        &[("FAKE_GATEWAY_ENV_OUT", env_out.to_str().unwrap())],
    );
    case.assert_failed(&out, &["invalid shape file", "zz-broken.toml"]);
    assert!(!env_out.exists(), "a gateway was started");
}

#[test]
fn missing_gateway_binary_fails() {
    let case = Case::new("nobin");
    let missing = case.root.join("no-such-gateway");
    let out = Command::new(TRAINER)
        .arg("workload")
        .arg("--shapes")
        .arg(case.shapes())
        .arg(&missing)
        .env("TMPDIR", case.root.join("tmp"))
        .output()
        .unwrap();
    case.assert_failed(&out, &[&format!("gateway binary {}", missing.display())]);
}

#[test]
fn the_binary_is_required() {
    let case = Case::new("usage");
    let out = Command::new(TRAINER)
        .arg("workload")
        .arg("--shapes")
        .arg(case.shapes())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("GATEWAY_BIN"), "{}", stderr(&out));
    assert!(Path::new(FAKE_GATEWAY).is_file());
}

#[test]
fn sigterm_kills_the_running_gateway_and_fails() {
    // A caller's time limit (`timeout`) sends SIGTERM to the workload: the gateway it is
    // waiting on must not outlive it.
    let case = Case::new("term");
    let env_out = case.root.join("env.txt");
    let mut child = Command::new(TRAINER)
        .arg("workload")
        .arg("--shapes")
        .arg(case.shapes())
        .args(["--ready-timeout-secs", "120"])
        .arg(FAKE_GATEWAY)
        .env("TMPDIR", case.root.join("tmp"))
        .env("FAKE_GATEWAY_MODE", "never-ready")
        .env("FAKE_GATEWAY_ENV_OUT", &env_out)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    let gateway_pid: i32 = loop {
        let text = std::fs::read_to_string(&env_out).unwrap_or_default();
        if let Some((pid, _)) = text.lines().next().and_then(|l| l.split_once(' ')) {
            break pid.parse().unwrap();
        }
        assert!(std::time::Instant::now() < deadline, "no gateway started");
        std::thread::sleep(std::time::Duration::from_millis(20));
    };
    // SAFETY: signalling the child this test started.
    assert_eq!(unsafe { libc::kill(child.id() as i32, libc::SIGTERM) }, 0);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while child.try_wait().unwrap().is_none() {
        assert!(
            std::time::Instant::now() < deadline,
            "workload ignored SIGTERM"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let out = child.wait_with_output().unwrap();
    case.assert_failed(&out, &["interrupted by SIGTERM"]);
    // Gone, or a zombie awaiting its new parent's reaping: not running either way.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    loop {
        let stat = std::fs::read_to_string(format!("/proc/{gateway_pid}/stat")).unwrap_or_default();
        let state = stat.rsplit_once(") ").map(|(_, rest)| &rest[..1]);
        if matches!(state, None | Some("Z") | Some("X")) {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "gateway {gateway_pid} outlived the workload: {stat}"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

/// `trainer shapes --part`: a part of a fanned-out training (one shape, as nix/gateway trains
/// them) passes without a holdout and is refused holding one; the whole set still needs
/// exactly one holdout.
#[test]
fn shapes_part_trains_every_shape_it_holds() {
    let case = Case::new("part");
    let shapes = |extra: &[&str]| {
        Command::new(TRAINER)
            .arg("shapes")
            .arg("--shapes")
            .arg(case.shapes())
            .args(extra)
            .output()
            .unwrap()
    };
    // The case holds one holdout: fine as a whole, refused as a part.
    succeeded(&shapes(&[]));
    let out = shapes(&["--part"]);
    assert!(!out.status.success(), "a part holding a holdout passed");
    assert!(
        stderr(&out).contains("a training part holds 1 holdout shape(s)"),
        "{}",
        stderr(&out)
    );
    std::fs::remove_file(case.shapes().join("responses-stream-mid.toml")).unwrap();
    std::fs::remove_file(case.shapes().join("messages-stream-mid.toml")).unwrap();
    succeeded(&shapes(&["--part"]));
    let out = shapes(&[]);
    assert!(
        !out.status.success(),
        "a whole set without a holdout passed"
    );
    assert!(
        stderr(&out).contains("expected exactly one holdout shape, found 0"),
        "{}",
        stderr(&out)
    );
}
