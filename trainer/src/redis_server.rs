//! A real `redis-server` (Debian's package, installed by `.ci/run`) on a free loopback port,
//! for the gateway's shared rate limits (its tests and the soak, `bench/`): started, killed,
//! paused and restarted on the same port. Not part of training.
//!
//! A missing `redis-server` is an error, never a silent skip (that would hide a missing
//! install); set `GATEWAY_TEST_NO_REDIS=1` to skip knowingly ([`RedisServer::start`] is then
//! `None`).

use std::net::{SocketAddr, TcpListener};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use tokio::io::{AsyncReadExt, AsyncWriteExt};

use std::sync::atomic::{AtomicU64, Ordering};

/// How long Redis may take to answer its first PING.
const PATIENCE: Duration = Duration::from_secs(10);

pub struct RedisServer {
    child: Option<Child>,
    pub port: u16,
    dir: PathBuf,
}

impl RedisServer {
    /// `None` only when `GATEWAY_TEST_NO_REDIS=1` (the caller says it skipped).
    pub async fn start() -> Option<RedisServer> {
        if std::env::var_os("GATEWAY_TEST_NO_REDIS").is_some_and(|v| v == "1") {
            eprintln!("skipped: GATEWAY_TEST_NO_REDIS=1 (these tests need redis-server)");
            return None;
        }
        static RUNS: AtomicU64 = AtomicU64::new(0);
        let n = RUNS.fetch_add(1, Ordering::Relaxed);
        let dir = std::env::temp_dir().join(format!("redis-{}-{n}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        // A port nobody holds right now; another process may take it before Redis binds,
        // so a Redis that exits at once is retried on another.
        for _ in 0..5 {
            let port = TcpListener::bind("127.0.0.1:0")
                .and_then(|l| l.local_addr())
                .unwrap()
                .port();
            let mut r = RedisServer {
                child: None,
                port,
                dir: dir.clone(),
            };
            if r.spawn().await {
                return Some(r);
            }
        }
        panic!("redis-server did not start on any of 5 ports");
    }

    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}/0", self.port)
    }

    /// Starts the server on `self.port` and waits for PONG; false if it exited (port taken).
    async fn spawn(&mut self) -> bool {
        let child = Command::new("redis-server")
            .args(["--bind", "127.0.0.1", "--port", &self.port.to_string()])
            // No persistence: a restart loses every bucket, as a cache-only Redis would.
            .args(["--save", "", "--appendonly", "no", "--protected-mode", "no"])
            .arg("--dir")
            .arg(&self.dir)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn();
        let mut child = match child {
            Ok(c) => c,
            Err(e) => panic!(
                "cannot run redis-server ({e}): install Debian's redis-server package \
                 (.ci/run does), or set GATEWAY_TEST_NO_REDIS=1 to skip the Redis tests"
            ),
        };
        let deadline = Instant::now() + PATIENCE;
        loop {
            if ping(self.port).await {
                self.child = Some(child);
                return true;
            }
            if child.try_wait().unwrap().is_some() {
                return false;
            }
            assert!(
                Instant::now() < deadline,
                "redis-server never answered PING"
            );
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }

    /// Kills the server (SIGKILL: a crash, nothing flushed) and waits until it is gone.
    pub async fn kill(&mut self) {
        if let Some(mut c) = self.child.take() {
            c.kill().unwrap();
            c.wait().unwrap();
        }
        assert!(!ping(self.port).await, "Redis still answers after kill");
    }

    /// Starts it again on the same port, empty.
    pub async fn restart(&mut self) {
        assert!(self.child.is_none(), "restart after kill");
        assert!(self.spawn().await, "port {} was taken meanwhile", self.port);
    }

    /// SIGSTOP: connections stay open and nothing answers (a Redis that is slow).
    pub fn pause(&self) {
        self.signal(libc::SIGSTOP);
    }

    pub fn resume(&self) {
        self.signal(libc::SIGCONT);
    }

    fn signal(&self, sig: libc::c_int) {
        let pid = self.child.as_ref().expect("a running server").id();
        // SAFETY: kill(2) on our own child's pid, which `child` keeps from being reused.
        let rc = unsafe { libc::kill(pid as libc::pid_t, sig) };
        assert_eq!(rc, 0, "kill({pid}, {sig})");
    }
}

impl Drop for RedisServer {
    fn drop(&mut self) {
        if let Some(c) = &mut self.child {
            let _ = c.kill();
            let _ = c.wait();
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// One inline `PING`, answered `+PONG` within a second.
async fn ping(port: u16) -> bool {
    let attempt = async {
        let mut s = tokio::net::TcpStream::connect(SocketAddr::from(([127, 0, 0, 1], port)))
            .await
            .ok()?;
        s.write_all(b"PING\r\n").await.ok()?;
        let mut buf = [0u8; 7];
        s.read_exact(&mut buf).await.ok()?;
        (&buf == b"+PONG\r\n").then_some(())
    };
    tokio::time::timeout(Duration::from_secs(1), attempt)
        .await
        .ok()
        .flatten()
        .is_some()
}
