//! One training gateway lifetime against an in-process mock upstream: start the mock, write
//! the shape's training config, start the gateway with `crate::launch` (ready on `/healthz`),
//! and stop both with SIGTERM under a watchdog. The workload and the integration tests share
//! it.
//!
//! The gateway inherits this process's environment as it is: nothing is added, removed or
//! overridden (in particular `LLVM_PROFILE_FILE`, which the caller sets).

use std::path::{Path, PathBuf};
use std::time::Duration;

use super::gateway_config;
use crate::launch::{GatewayProcess, Launch};
use crate::mock::{MockConfig, MockTls, MockUpstream};
use crate::shapes::Shape;

/// The gateway key every training config accepts and the driver sends.
pub const TRAINING_KEY: &str = "trainer-training-key";

/// The mock upstream a shape runs against: HTTPS with a CA made now when the shape says so,
/// closing connections every `reconnect_every` responses.
pub fn mock_config(shape: &Shape) -> Result<MockConfig, String> {
    Ok(MockConfig {
        tls: if shape.upstream_tls {
            Some(MockTls::generate()?)
        } else {
            None
        },
        close_every: shape.reconnect_every,
        ..MockConfig::default()
    })
}

/// Writes the CA of an HTTPS mock to `<dir>/upstream-ca.pem` (the gateway's
/// `upstream.extra_ca_file`); none for a plain-HTTP mock.
pub fn write_ca(mock: &MockUpstream, dir: &Path) -> Result<Option<PathBuf>, String> {
    let Some(tls) = &mock.config().tls else {
        return Ok(None);
    };
    let path = dir.join("upstream-ca.pem");
    std::fs::write(&path, tls.ca_pem()).map_err(|e| format!("writing {}: {e}", path.display()))?;
    Ok(Some(path))
}

/// A running gateway and the mock it forwards to.
pub struct TrainingGateway {
    gateway: GatewayProcess,
    mock: Option<MockUpstream>,
}

impl TrainingGateway {
    /// Starts the mock and `gateway_bin --config <dir>/gateway.toml` (the shape's posture,
    /// port 0) with the inherited environment, its stderr in `<dir>/gateway.stderr` and stdout
    /// discarded (the default posture's access log is not the point); waits until `/healthz`
    /// is 200.
    pub async fn start(
        gateway_bin: &Path,
        shape: &Shape,
        dir: &Path,
        ready_timeout: Duration,
    ) -> Result<TrainingGateway, String> {
        std::fs::create_dir_all(dir).map_err(|e| format!("creating {}: {e}", dir.display()))?;
        let mock = MockUpstream::start(mock_config(shape)?)
            .await
            .map_err(|e| format!("starting the mock upstream: {e}"))?;
        let ca_file = write_ca(&mock, dir)?;
        // Port 0: the gateway binds a free port and names it on its first stderr line.
        let config = gateway_config::render(
            shape,
            &mock.base_url(),
            ca_file.as_deref(),
            "127.0.0.1:0",
            TRAINING_KEY,
        );
        let config_path = dir.join("gateway.toml");
        std::fs::write(&config_path, config).map_err(|e| format!("writing config: {e}"))?;
        let launch = Launch::new(
            gateway_bin,
            &config_path,
            &dir.join("gateway.stderr"),
            ready_timeout,
        );
        let gateway = GatewayProcess::start(&launch)
            .await
            .map_err(|e| e.to_string())?;
        Ok(TrainingGateway {
            gateway,
            mock: Some(mock),
        })
    }

    /// `http://127.0.0.1:PORT`.
    pub fn base_url(&self) -> String {
        self.gateway.base_url()
    }

    /// The last lines of the gateway's stderr, formatted to append to an error.
    pub fn log_tail(&self) -> String {
        self.gateway.log_tail()
    }

    /// Kills the gateway (after a failure; no clean exit is expected).
    pub async fn kill(self) {
        self.gateway.kill().await;
    }

    /// The connections the gateway opened to the mock so far (each a TLS handshake on an
    /// HTTPS shape).
    pub fn upstream_connections(&self) -> u64 {
        self.mock.as_ref().map_or(0, |m| m.connection_count())
    }

    /// SIGTERM, then require exit code 0 within `timeout`; a gateway still running then is
    /// killed and that is a failure too. The mock stops after the gateway.
    pub async fn stop(mut self, timeout: Duration) -> Result<(), String> {
        let stopped = self.gateway.stop(timeout).await;
        if let Some(mock) = self.mock.take() {
            mock.shutdown().await;
        }
        stopped.map_err(|e| e.to_string())
    }
}
