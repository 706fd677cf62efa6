//! One gateway lifetime against an in-process mock upstream: start with a training config,
//! wait until ready, and stop with SIGTERM under a watchdog. The workload, the integration
//! tests and the benchmarks share it.
//!
//! The gateway inherits this process's environment as it is: nothing is added, removed or
//! overridden (in particular `LLVM_PROFILE_FILE`, which the caller sets), and its working
//! directory is this process's, so a relative profile path resolves where the caller meant.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{ExitStatus, Stdio};
use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body_util::Empty;
use hyper_util::rt::TokioIo;

use super::gateway_config;
use crate::mock::{MockConfig, MockUpstream};
use crate::shapes::Shape;

/// The gateway key every training config accepts and the driver sends.
pub const TRAINING_KEY: &str = "trainer-training-key";

/// A running gateway and the mock it forwards to.
pub struct GatewayProcess {
    child: tokio::process::Child,
    pid: u32,
    addr: String,
    stderr: PathBuf,
    mock: Option<MockUpstream>,
}

impl GatewayProcess {
    /// Starts the mock and `gateway_bin --config <dir>/gateway.toml` (the shape's posture,
    /// port 0) with the inherited environment, its stderr in `<dir>/gateway.stderr` and stdout
    /// discarded (the default posture's access log is not the point); waits until `/healthz`
    /// is 200.
    pub async fn start(
        gateway_bin: &Path,
        shape: &Shape,
        dir: &Path,
        ready_timeout: Duration,
    ) -> Result<GatewayProcess, String> {
        std::fs::create_dir_all(dir).map_err(|e| format!("creating {}: {e}", dir.display()))?;
        let mock = MockUpstream::start(MockConfig::default())
            .await
            .map_err(|e| format!("starting the mock upstream: {e}"))?;
        // Port 0: the gateway binds a free port and names it on its first stderr line.
        let config = gateway_config::render(shape, &mock.base_url(), "127.0.0.1:0", TRAINING_KEY);
        let config_path = dir.join("gateway.toml");
        std::fs::write(&config_path, config).map_err(|e| format!("writing config: {e}"))?;
        let stderr_path = dir.join("gateway.stderr");
        let stderr = std::fs::File::create(&stderr_path)
            .map_err(|e| format!("creating {}: {e}", stderr_path.display()))?;

        let mut child = tokio::process::Command::new(gateway_bin)
            .arg("--config")
            .arg(&config_path)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(stderr)
            .kill_on_drop(true)
            .spawn()
            .map_err(|e| format!("starting {}: {e}", gateway_bin.display()))?;
        let Some(pid) = child.id() else {
            return Err("gateway exited at once".into());
        };
        match wait_ready(&mut child, &stderr_path, ready_timeout).await {
            Ok(addr) => Ok(GatewayProcess {
                child,
                pid,
                addr,
                stderr: stderr_path,
                mock: Some(mock),
            }),
            Err(what) => {
                let _ = child.kill().await;
                Err(format!("{what}{}", log_tail(&stderr_path)))
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
    pub async fn stop(mut self, timeout: Duration) -> Result<(), String> {
        // SAFETY: kill(2) on the pid of our own child, which has not been reaped yet.
        if unsafe { libc::kill(self.pid as libc::pid_t, libc::SIGTERM) } != 0 {
            let e = std::io::Error::last_os_error();
            let _ = self.child.kill().await;
            return Err(format!("sending SIGTERM: {e}{}", self.log_tail()));
        }
        let status = match tokio::time::timeout(timeout, self.child.wait()).await {
            Ok(Ok(status)) => status,
            Ok(Err(e)) => return Err(format!("waiting for exit: {e}{}", self.log_tail())),
            Err(_) => {
                let _ = self.child.kill().await;
                return Err(format!(
                    "gateway did not exit within {timeout:?} after SIGTERM (killed){}",
                    self.log_tail()
                ));
            }
        };
        if let Some(mock) = self.mock.take() {
            mock.shutdown().await;
        }
        if !status.success() {
            return Err(format!(
                "gateway {} after SIGTERM, expected exit code 0{}",
                describe(status),
                self.log_tail()
            ));
        }
        Ok(())
    }
}

/// Waits for the gateway to name its address on stderr and for `/healthz` to answer 200
/// there; returns the address.
async fn wait_ready(
    child: &mut tokio::process::Child,
    stderr: &Path,
    timeout: Duration,
) -> Result<String, String> {
    let deadline = Instant::now() + timeout;
    let mut listen = None;
    let mut last;
    loop {
        if let Some(status) = child.try_wait().map_err(|e| e.to_string())? {
            return Err(format!(
                "gateway {} before /healthz answered",
                describe(status)
            ));
        }
        if listen.is_none() {
            listen = std::fs::read_to_string(stderr)
                .ok()
                .and_then(|text| listening_address(&text));
        }
        match &listen {
            None => last = "no \"listening on http://\" line on stderr yet".to_owned(),
            Some(addr) => match get_status(addr, "/healthz").await {
                Ok(200) => return Ok(addr.clone()),
                Ok(code) => last = format!("status {code}"),
                Err(e) => last = e,
            },
        }
        if Instant::now() >= deadline {
            return Err(format!(
                "/healthz did not answer 200 within {timeout:?} (last: {last})"
            ));
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
}

/// The `host:port` of the gateway's `... listening on http://host:port` start-up line.
pub fn listening_address(stderr: &str) -> Option<String> {
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
pub async fn get_status(authority: &str, path: &str) -> Result<u16, String> {
    let attempt = async {
        let tcp = tokio::net::TcpStream::connect(authority)
            .await
            .map_err(|e| e.to_string())?;
        let (mut sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(tcp))
            .await
            .map_err(|e| e.to_string())?;
        tokio::spawn(conn);
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

/// The last lines of a gateway's stderr log, for error messages (the bench uses it too).
pub(crate) fn log_tail(path: &Path) -> String {
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

#[cfg(test)]
mod tests {
    use super::*;

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
