//! Starting and stopping one gateway process: the one launcher of the workload, the tests
//! and the bench. It starts `BIN --config CONFIG` (optionally under a wrapper such as
//! valgrind, optionally pinned to CPUs), waits until it is ready (its announced address is
//! its own listener, and `/healthz` answers 200 unless the caller counts requests exactly),
//! and stops it with SIGTERM, requiring exit code 0 within a watchdog.
//!
//! Waits are bounded by their condition (polled every 25 ms up to a deadline), never a fixed
//! sleep. The gateway inherits this process's environment with `Launch::env` added (the
//! workload adds nothing, so `LLVM_PROFILE_FILE` passes through), and its working directory
//! is this process's, so a relative profile path resolves where the caller meant.

use std::ffi::OsString;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{ExitStatus, Stdio};
use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body_util::Empty;

use crate::http1;

#[derive(Debug, thiserror::Error)]
pub enum LaunchError {
    #[error("{what}: {source}")]
    Io {
        what: String,
        source: std::io::Error,
    },
    /// What went wrong, then the tail of the gateway's stderr (see [`log_tail`]).
    #[error("{what}{log}")]
    Gateway { what: String, log: String },
}

/// How to start one gateway.
#[derive(Debug, Clone)]
pub struct Launch {
    pub bin: PathBuf,
    pub config: PathBuf,
    /// Extra arguments after `--config`, e.g. `--listen 127.0.0.1:0`.
    pub args: Vec<OsString>,
    /// Program and arguments the gateway runs under (valgrind); empty: run it directly.
    pub wrapper: Vec<OsString>,
    /// CPUs the gateway (and the wrapper) may run on; empty: no pinning.
    pub cpus: Vec<usize>,
    /// Added to the inherited environment.
    pub env: Vec<(String, String)>,
    /// Where the gateway's stderr goes (it names the address there).
    pub stderr: PathBuf,
    pub ready_timeout: Duration,
    /// Ready on `/healthz` 200; without it, ready when the address is announced (and, with
    /// `preflight`, its listener is ours). Callgrind runs skip `/healthz` so that the counted
    /// requests are exactly the driven ones.
    pub healthz: bool,
    /// Require that the announced port is this process's listener (see [`preflight`]): a
    /// measurement must not measure a stale gateway.
    pub preflight: bool,
}

impl Launch {
    /// `bin --config config`, stderr to `stderr`, ready on `/healthz`, no wrapper, pinning,
    /// added environment or preflight: the training case.
    pub fn new(bin: &Path, config: &Path, stderr: &Path, ready_timeout: Duration) -> Launch {
        Launch {
            bin: bin.to_owned(),
            config: config.to_owned(),
            args: Vec::new(),
            wrapper: Vec::new(),
            cpus: Vec::new(),
            env: Vec::new(),
            stderr: stderr.to_owned(),
            ready_timeout,
            healthz: true,
            preflight: false,
        }
    }
}

/// The environment variable a Vertex shape's target reads its access token from
/// (`access_token_env`), set on every gateway the trainer starts: the mock checks no token,
/// so training needs no Google credentials and generates no key.
pub const VERTEX_TOKEN_ENV: &str = "GATEWAY_TRAINING_VERTEX_TOKEN";
const VERTEX_TOKEN: &str = "ya29.training-mock-token";

/// The AWS keys a Bedrock shape's target signs with (`aws_credentials = "env"`), set on
/// every gateway the trainer starts (over any the caller has: training never reaches AWS);
/// the mock checks no signature, so training needs no AWS account.
pub const BEDROCK_ENV: [(&str, &str); 2] = [
    ("AWS_ACCESS_KEY_ID", "AKIDTRAININGMOCK0001"),
    ("AWS_SECRET_ACCESS_KEY", "training-mock-secret-key"),
];

/// A running gateway process (killed when dropped).
pub struct GatewayProcess {
    child: tokio::process::Child,
    pid: u32,
    addr: String,
    stderr: PathBuf,
}

impl GatewayProcess {
    pub async fn start(l: &Launch) -> Result<GatewayProcess, LaunchError> {
        let stderr = std::fs::File::create(&l.stderr).map_err(|source| LaunchError::Io {
            what: format!("creating {}", l.stderr.display()),
            source,
        })?;
        let mut cmd = match l.wrapper.split_first() {
            Some((prog, rest)) => {
                let mut c = tokio::process::Command::new(prog);
                c.args(rest).arg(&l.bin);
                c
            }
            None => tokio::process::Command::new(&l.bin),
        };
        cmd.arg("--config")
            .arg(&l.config)
            .args(&l.args)
            .env(VERTEX_TOKEN_ENV, VERTEX_TOKEN)
            .envs(BEDROCK_ENV)
            // Temporary keys from the caller's environment would not match the fixed ones.
            .env_remove("AWS_SESSION_TOKEN")
            .envs(l.env.iter().cloned())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(stderr)
            .kill_on_drop(true);
        if !l.cpus.is_empty() {
            let cpus = l.cpus.clone();
            // SAFETY: between fork and exec only async-signal-safe calls are allowed;
            // sched_setaffinity is a plain syscall on a stack-built set.
            unsafe {
                cmd.pre_exec(move || pin_current(&cpus));
            }
        }
        let fail = |what: String| LaunchError::Gateway {
            what,
            log: log_tail(&l.stderr),
        };
        let mut child = cmd
            .spawn()
            .map_err(|e| fail(format!("starting {}: {e}", l.bin.display())))?;
        let Some(pid) = child.id() else {
            return Err(fail("gateway exited at once".into()));
        };
        match wait_ready(&mut child, pid, l).await {
            Ok(addr) => Ok(GatewayProcess {
                child,
                pid,
                addr,
                stderr: l.stderr.clone(),
            }),
            Err(what) => {
                let _ = child.kill().await;
                Err(fail(what))
            }
        }
    }

    pub fn pid(&self) -> u32 {
        self.pid
    }

    /// `http://127.0.0.1:PORT`.
    pub fn base_url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// User + system CPU seconds of the whole process so far (all threads).
    pub fn cpu_seconds(&self) -> Option<f64> {
        let text = std::fs::read_to_string(format!("/proc/{}/stat", self.pid)).ok()?;
        cpu_seconds_from_stat(&text, clock_ticks())
    }

    /// User and system (kernel) CPU seconds of the whole process so far, apart: compiler
    /// optimization reaches only the user part.
    pub fn cpu_split_seconds(&self) -> Option<CpuSplit> {
        let text = std::fs::read_to_string(format!("/proc/{}/stat", self.pid)).ok()?;
        cpu_split_from_stat(&text, clock_ticks())
    }

    /// `VmRSS` and `VmHWM` in KiB.
    pub fn memory_kib(&self) -> Option<(u64, u64)> {
        let text = std::fs::read_to_string(format!("/proc/{}/status", self.pid)).ok()?;
        Some((
            status_kib(&text, "VmRSS")?,
            status_kib(&text, "VmHWM").unwrap_or(0),
        ))
    }

    /// The last lines of the gateway's stderr, formatted to append to an error.
    pub fn log_tail(&self) -> String {
        log_tail(&self.stderr)
    }

    /// Kills the gateway (after a failure; no clean exit is expected).
    pub async fn kill(mut self) {
        let _ = self.child.kill().await;
    }

    /// SIGTERM, then require exit code 0 within `timeout`; a gateway still running then is
    /// killed and that is a failure too.
    pub async fn stop(mut self, timeout: Duration) -> Result<(), LaunchError> {
        let fail = |what: String, stderr: &Path| LaunchError::Gateway {
            what,
            log: log_tail(stderr),
        };
        // SAFETY: kill(2) on the pid of our own child, which has not been reaped yet.
        if unsafe { libc::kill(self.pid as libc::pid_t, libc::SIGTERM) } != 0 {
            let e = std::io::Error::last_os_error();
            let _ = self.child.kill().await;
            return Err(fail(format!("sending SIGTERM: {e}"), &self.stderr));
        }
        match tokio::time::timeout(timeout, self.child.wait()).await {
            Ok(Ok(status)) if status.success() => Ok(()),
            Ok(Ok(status)) => Err(fail(
                format!(
                    "gateway {} after SIGTERM, expected exit code 0",
                    describe(status)
                ),
                &self.stderr,
            )),
            Ok(Err(e)) => Err(fail(format!("waiting for exit: {e}"), &self.stderr)),
            Err(_) => {
                let _ = self.child.kill().await;
                Err(fail(
                    format!("gateway did not exit within {timeout:?} after SIGTERM (killed)"),
                    &self.stderr,
                ))
            }
        }
    }
}

/// Waits for the gateway to name its address on stderr (a listener of its own, with
/// `preflight`) and, with `healthz`, for `/healthz` to answer 200 there; returns the address.
async fn wait_ready(
    child: &mut tokio::process::Child,
    pid: u32,
    l: &Launch,
) -> Result<String, String> {
    let deadline = Instant::now() + l.ready_timeout;
    let mut addr: Option<String> = None;
    let mut last = String::from("no \"listening on http://\" line on stderr yet");
    loop {
        if let Some(status) = child.try_wait().map_err(|e| e.to_string())? {
            let before = if l.healthz {
                "/healthz answered"
            } else {
                "it named its address"
            };
            return Err(format!("gateway {} before {before}", describe(status)));
        }
        if addr.is_none() {
            addr = std::fs::read_to_string(&l.stderr)
                .ok()
                .and_then(|t| listening_address(&t));
            if let Some(a) = addr.as_deref().filter(|_| l.preflight) {
                // A port announced by a stale gateway (or anything else) would make us
                // measure the wrong process.
                preflight(pid, a)?;
            }
        }
        if let Some(a) = &addr {
            if !l.healthz {
                return Ok(a.clone());
            }
            match get_status(a, "/healthz").await {
                Ok(200) => return Ok(a.clone()),
                Ok(code) => last = format!("status {code}"),
                Err(e) => last = e,
            }
        }
        if Instant::now() >= deadline {
            let what = if l.healthz {
                "/healthz did not answer 200"
            } else {
                "no address named"
            };
            return Err(format!(
                "{what} within {:?} (last: {last})",
                l.ready_timeout
            ));
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
}

/// The `host:port` of the gateway's `... listening on http://host:port` start-up line.
pub(crate) fn listening_address(stderr: &str) -> Option<String> {
    // Complete lines only: eprintln! may take several writes, and a line read half-written
    // ("...http://127.0.0.1:4") would be taken for the address and never read again.
    stderr
        .split_inclusive('\n')
        .filter(|l| l.ends_with('\n'))
        .find_map(|l| {
            let rest = &l[l.find("listening on http://")? + "listening on http://".len()..];
            let addr: String = rest.chars().take_while(|c| !c.is_whitespace()).collect();
            let addr = addr.trim_end_matches('/').to_owned();
            (!addr.is_empty()).then_some(addr)
        })
}

/// `GET path` on a fresh connection; the status code.
pub(crate) async fn get_status(authority: &str, path: &str) -> Result<u16, String> {
    let attempt = async {
        let mut sender = http1::connect(authority).await?;
        let req = http::Request::get(path)
            .header(http::header::HOST, authority)
            .body(Empty::<Bytes>::new())
            .map_err(|e| e.to_string())?;
        let resp = sender.send_request(req).await.map_err(|e| e.to_string())?;
        Ok(resp.status().as_u16())
    };
    tokio::time::timeout(Duration::from_secs(2), attempt)
        .await
        .unwrap_or_else(|_| Err("timed out".into()))
}

fn describe(status: ExitStatus) -> String {
    use std::os::unix::process::ExitStatusExt;
    match (status.code(), status.signal()) {
        (Some(code), _) => format!("exited with code {code}"),
        (None, Some(sig)) => format!("was killed by signal {sig}"),
        _ => format!("ended with {status}"),
    }
}

/// The built gateway a test runs (the trainer's and the bench's integration tests):
/// `$GATEWAY_BIN`, or `gateway` in the calling test binary's own target profile directory (a
/// test binary is `<target>/<profile>/deps/<name>-<hash>`). Panics, saying how to build it,
/// when there is none.
pub fn test_gateway_bin() -> PathBuf {
    if let Some(p) = std::env::var_os("GATEWAY_BIN") {
        return p.into();
    }
    let exe = std::env::current_exe().expect("the test binary's path");
    let p = exe
        .parent()
        .and_then(Path::parent)
        .expect("a test binary under <target>/<profile>/deps")
        .join("gateway");
    assert!(
        p.is_file(),
        "no gateway binary at {}: `cargo build -p gateway` into the same target directory \
         (`cargo test --workspace` does; bench/: `--target-dir` the root target/), or set \
         GATEWAY_BIN",
        p.display()
    );
    p
}

/// The last lines of a gateway's stderr log, formatted to append to an error.
pub fn log_tail(path: &Path) -> String {
    let mut text = String::new();
    if let Ok(mut f) = std::fs::File::open(path) {
        let _ = f.read_to_string(&mut text);
    }
    let lines: Vec<&str> = text.lines().collect();
    if lines.is_empty() {
        return String::new();
    }
    let tail = &lines[lines.len().saturating_sub(10)..];
    format!(
        "\n  gateway stderr (last lines):\n    {}",
        tail.join("\n    ")
    )
}

/// Requires that a socket listening on `addr`'s port is an open file of process `pid`.
pub fn preflight(pid: u32, addr: &str) -> Result<(), String> {
    let port: u16 = addr
        .rsplit(':')
        .next()
        .and_then(|p| p.parse().ok())
        .ok_or_else(|| format!("announced address {addr:?} has no port"))?;
    let mut inodes = Vec::new();
    for table in ["/proc/net/tcp", "/proc/net/tcp6"] {
        if let Ok(text) = std::fs::read_to_string(table) {
            inodes.extend(listening_inodes(&text, port));
        }
    }
    if inodes.is_empty() {
        return Err(format!("nothing listens on port {port}"));
    }
    let fds = std::fs::read_dir(format!("/proc/{pid}/fd"))
        .map_err(|e| format!("reading /proc/{pid}/fd: {e}"))?;
    for fd in fds.flatten() {
        if let Ok(target) = std::fs::read_link(fd.path()) {
            if let Some(inode) = socket_inode(&target.to_string_lossy()) {
                if inodes.contains(&inode) {
                    return Ok(());
                }
            }
        }
    }
    Err(format!(
        "port {port} is listened on by another process than the gateway just started (pid {pid})"
    ))
}

/// Inodes of the LISTEN sockets on `port` in a `/proc/net/tcp{,6}` table.
pub(crate) fn listening_inodes(table: &str, port: u16) -> Vec<u64> {
    const LISTEN: &str = "0A";
    table
        .lines()
        .skip(1)
        .filter_map(|line| {
            let f: Vec<&str> = line.split_whitespace().collect();
            // sl local_address rem_address st tx:rx tr:when retrnsmt uid timeout inode
            let local = f.get(1)?;
            let p = u16::from_str_radix(local.rsplit(':').next()?, 16).ok()?;
            (p == port && *f.get(3)? == LISTEN).then(|| f.get(9)?.parse().ok())?
        })
        .collect()
}

/// `socket:[12345]` -> 12345.
pub(crate) fn socket_inode(link: &str) -> Option<u64> {
    link.strip_prefix("socket:[")?
        .strip_suffix(']')?
        .parse()
        .ok()
}

/// utime + stime (fields 14 and 15) of a `/proc/PID/stat` line, in seconds. The command
/// name in parentheses may hold spaces, so fields are counted after the last `)`.
pub(crate) fn cpu_seconds_from_stat(stat: &str, ticks_per_s: f64) -> Option<f64> {
    cpu_split_from_stat(stat, ticks_per_s).map(|c| c.user + c.system)
}

/// A process's CPU seconds, user and system apart.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CpuSplit {
    pub user: f64,
    pub system: f64,
}

pub(crate) fn cpu_split_from_stat(stat: &str, ticks_per_s: f64) -> Option<CpuSplit> {
    let rest = &stat[stat.rfind(')')? + 1..];
    let f: Vec<&str> = rest.split_whitespace().collect();
    // After ")": state is field 3, so utime (14) is index 11 and stime (15) index 12.
    let utime: f64 = f.get(11)?.parse().ok()?;
    let stime: f64 = f.get(12)?.parse().ok()?;
    Some(CpuSplit {
        user: utime / ticks_per_s,
        system: stime / ticks_per_s,
    })
}

/// A `Name:   1234 kB` value of `/proc/PID/status`, in KiB.
pub fn status_kib(status: &str, name: &str) -> Option<u64> {
    status.lines().find_map(|l| {
        let rest = l.strip_prefix(name)?.strip_prefix(':')?;
        rest.split_whitespace().next()?.parse().ok()
    })
}

fn clock_ticks() -> f64 {
    // SAFETY: sysconf has no preconditions.
    let t = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    if t > 0 {
        t as f64
    } else {
        100.0
    }
}

/// Restricts the calling thread (and the threads it creates later) to `cpus`.
pub fn pin_current(cpus: &[usize]) -> std::io::Result<()> {
    // SAFETY: cpu_set_t is plain data; CPU_ZERO/CPU_SET only write inside it.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_ZERO(&mut set);
        for &c in cpus {
            libc::CPU_SET(c, &mut set);
        }
        if libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) != 0 {
            return Err(std::io::Error::last_os_error());
        }
    }
    Ok(())
}

/// `0,2-3` -> [0, 2, 3].
pub fn parse_cpus(s: &str) -> Result<Vec<usize>, String> {
    let mut out = Vec::new();
    for part in s.split(',').filter(|p| !p.is_empty()) {
        let bad = || format!("bad CPU list {s:?} (expected e.g. 0,2-3)");
        match part.split_once('-') {
            Some((a, b)) => {
                let (a, b): (usize, usize) =
                    (a.parse().map_err(|_| bad())?, b.parse().map_err(|_| bad())?);
                if a > b {
                    return Err(bad());
                }
                out.extend(a..=b);
            }
            None => out.push(part.parse().map_err(|_| bad())?),
        }
    }
    if out.is_empty() {
        return Err(format!("empty CPU list {s:?}"));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn proc_net_tcp_listeners() {
        let table = "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n   0: 0100007F:1F90 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 4242 1 0000000000000000 100 0 0 10 0\n   1: 0100007F:1F90 0100007F:C350 01 00000000:00000000 00:00000000 00000000     0        0 4243 1 0000000000000000 20 4 30 10 -1\n   2: 0100007F:1F91 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 4244 1 0000000000000000 100 0 0 10 0\n";
        assert_eq!(listening_inodes(table, 8080), vec![4242]);
        assert_eq!(listening_inodes(table, 8081), vec![4244]);
        assert!(listening_inodes(table, 9).is_empty());
        assert_eq!(socket_inode("socket:[4242]"), Some(4242));
        assert_eq!(socket_inode("pipe:[4242]"), None);
    }

    #[test]
    fn preflight_sees_our_own_listener_and_refuses_others() {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = l.local_addr().unwrap().to_string();
        assert!(preflight(std::process::id(), &addr).is_ok());
        // PID 1 does not hold our socket.
        assert!(preflight(1, &addr).is_err());
        drop(l);
        assert!(preflight(std::process::id(), &addr).is_err());
    }

    #[test]
    fn stat_and_status_parse() {
        let stat =
            "1234 (my gw (x)) S 1 1234 1234 0 -1 4194560 500 0 0 0 250 50 0 0 20 0 3 0 100 0 0";
        assert_eq!(cpu_seconds_from_stat(stat, 100.0), Some(3.0));
        assert_eq!(
            cpu_split_from_stat(stat, 100.0),
            Some(CpuSplit {
                user: 2.5,
                system: 0.5
            })
        );
        let status = "Name:\tgateway\nVmHWM:\t   12000 kB\nVmRSS:\t    9876 kB\n";
        assert_eq!(status_kib(status, "VmRSS"), Some(9876));
        assert_eq!(status_kib(status, "VmHWM"), Some(12000));
        assert_eq!(status_kib(status, "VmSwap"), None);
    }

    #[test]
    fn cpu_lists() {
        assert_eq!(parse_cpus("0").unwrap(), vec![0]);
        assert_eq!(parse_cpus("0,2-3").unwrap(), vec![0, 2, 3]);
        assert!(parse_cpus("3-1").is_err());
        assert!(parse_cpus("x").is_err());
        assert!(parse_cpus("").is_err());
    }

    #[test]
    fn listening_line_gives_the_address() {
        let text = "gateway 0.1.0: listening on http://127.0.0.1:41234\n  workers: 2\n";
        assert_eq!(listening_address(text).as_deref(), Some("127.0.0.1:41234"));
        assert_eq!(listening_address("starting\n"), None);
        assert_eq!(
            listening_address("gateway: listening on http://127.0.0.1:4"),
            None
        );
    }
}
