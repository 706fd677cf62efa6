//! `drive` against the real gateway for every shape, training and holdout, at the shape's
//! full request count: one gateway lifetime per shape (as in training), every response
//! checked, and a clean exit 0 on SIGTERM.
//!
//! Needs a built gateway binary (see `support::gateway_bin`).

use std::time::Duration;

use trainer::drive::{drive, DriveOptions};
use trainer::launch::{GatewayProcess, Launch};
use trainer::mock::MockUpstream;
use trainer::shapes;
use trainer::workload::{gateway_config, mock_config, TrainingGateway, TRAINING_KEY};

use crate::support::gateway_bin;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_shape_drives_clean_through_the_gateway() {
    let bin = gateway_bin();
    let work = std::env::temp_dir().join(format!("trainer-gw-drive-{}", std::process::id()));
    let all = shapes::load_dir(&shapes::repo_dir()).unwrap();
    assert!(all.iter().any(|s| s.holdout));
    for shape in &all {
        let gw = TrainingGateway::start(
            &bin,
            shape,
            &work.join(&shape.name),
            Duration::from_secs(30),
        )
        .await
        .unwrap_or_else(|e| panic!("{}: {e}", shape.name));
        let report = drive(
            shape,
            &DriveOptions::new(gw.base_url(), Some(TRAINING_KEY.into())),
        )
        .await
        .unwrap();
        if !report.is_success() {
            let tail = gw.log_tail();
            gw.kill().await;
            panic!("{report}{tail}");
        }
        assert_eq!(report.ok, shape.requests);
        eprintln!("{report}");
        gw.stop(Duration::from_secs(30))
            .await
            .unwrap_or_else(|e| panic!("{}: {e}", shape.name));
    }
    let _ = std::fs::remove_dir_all(&work);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn wrong_key_fails_the_drive() {
    let bin = gateway_bin();
    let work = std::env::temp_dir().join(format!("trainer-gw-badkey-{}", std::process::id()));
    let mut shape = shapes::find(&shapes::repo_dir(), "chat-nonstream-minimal").unwrap();
    shape.requests = 10;
    shape.concurrency = 2;
    let gw = TrainingGateway::start(&bin, &shape, &work, Duration::from_secs(30))
        .await
        .unwrap();
    let report = drive(
        &shape,
        &DriveOptions::new(gw.base_url(), Some("wrong".into())),
    )
    .await
    .unwrap();
    gw.stop(Duration::from_secs(30)).await.unwrap();
    let _ = std::fs::remove_dir_all(&work);
    assert_eq!(report.failed, 10, "{report}");
    assert!(report.to_string().contains("status 401"), "{report}");
}

/// `trainer workload` end to end against the real gateway: every training shape of the
/// repository (trimmed to 40 requests), one gateway run each, exit 0. The gateway here is not
/// instrumented, so `LLVM_PROFILE_FILE` is set only to show it does no harm.
#[test]
fn workload_runs_the_real_gateway_over_every_training_shape() {
    let bin = gateway_bin();
    let root = std::env::temp_dir().join(format!("trainer-gw-workload-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&root);
    let dir = root.join("shapes");
    std::fs::create_dir_all(dir.join("bodies")).unwrap();
    std::fs::create_dir_all(root.join("tmp")).unwrap();
    let repo = shapes::repo_dir();
    for e in std::fs::read_dir(repo.join("bodies")).unwrap() {
        let p = e.unwrap().path();
        std::fs::copy(&p, dir.join("bodies").join(p.file_name().unwrap())).unwrap();
    }
    let all = shapes::load_dir(&repo).unwrap();
    for s in &all {
        let text = std::fs::read_to_string(repo.join(format!("{}.toml", s.name))).unwrap();
        let mut t: toml::Table = toml::from_str(&text).unwrap();
        t.insert("requests".into(), 40.into());
        t.insert(
            "concurrency".into(),
            i64::from(s.concurrency.min(40)).into(),
        );
        std::fs::write(
            dir.join(format!("{}.toml", s.name)),
            toml::to_string(&t).unwrap(),
        )
        .unwrap();
    }
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_trainer"))
        .arg("workload")
        .arg("--shapes")
        .arg(&dir)
        .arg(&bin)
        .env("TMPDIR", root.join("tmp"))
        .env("LLVM_PROFILE_FILE", root.join("gateway-%p.profraw"))
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "workload failed:\n{stderr}");
    let training = shapes::training(&all).len();
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        format!("trainer workload: {training} gateway runs\n"),
        "{stderr}"
    );
    assert_eq!(
        stderr.matches("40/40 requests ok").count(),
        training,
        "{stderr}"
    );
    let _ = std::fs::remove_dir_all(&root);
}

/// An HTTPS shape runs through the gateway's TLS client: the mock's certificate verifies only
/// against the CA made at its start (handed over in `upstream.extra_ca_file`), and with
/// `reconnect_every` the mock closes each connection after N responses, so the gateway opens
/// a new one, with its handshake, as often as the shape says.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn https_upstream_handshakes_every_reconnect() {
    let bin = gateway_bin();
    let work = std::env::temp_dir().join(format!("trainer-gw-tls-{}", std::process::id()));
    let mut shape = shapes::find(&shapes::repo_dir(), "chat-nonstream-minimal").unwrap();
    shape.requests = 20;
    shape.concurrency = 1;
    shape.upstream_tls = true;
    shape.reconnect_every = std::num::NonZeroU64::new(5);
    let gw = TrainingGateway::start(&bin, &shape, &work, Duration::from_secs(30))
        .await
        .unwrap();
    let report = drive(
        &shape,
        &DriveOptions::new(gw.base_url(), Some(TRAINING_KEY.into())),
    )
    .await
    .unwrap();
    let connections = gw.upstream_connections();
    let tail = gw.log_tail();
    gw.stop(Duration::from_secs(30)).await.unwrap();
    assert!(report.is_success(), "{report}{tail}");
    // One client connection, sequential requests: a new upstream connection every 5th.
    assert_eq!(connections, 4, "{tail}");
    let config = std::fs::read_to_string(work.join("gateway.toml")).unwrap();
    assert!(config.contains("extra_ca_file"), "{config}");
    assert!(config.contains("https://127.0.0.1:"), "{config}");

    // Without the CA the gateway refuses the mock's certificate: the TLS is real.
    let mock = MockUpstream::start(mock_config(&shape).unwrap())
        .await
        .unwrap();
    let untrusting = work.join("untrusting");
    std::fs::create_dir_all(&untrusting).unwrap();
    let config_path = untrusting.join("gateway.toml");
    std::fs::write(
        &config_path,
        gateway_config::render(&shape, &mock.base_url(), None, "127.0.0.1:0", TRAINING_KEY),
    )
    .unwrap();
    let launch = Launch::new(
        &bin,
        &config_path,
        &untrusting.join("gateway.stderr"),
        Duration::from_secs(30),
    );
    let gw = GatewayProcess::start(&launch).await.unwrap();
    shape.requests = 2;
    let report = drive(
        &shape,
        &DriveOptions::new(gw.base_url(), Some(TRAINING_KEY.into())),
    )
    .await
    .unwrap();
    gw.stop(Duration::from_secs(30)).await.unwrap();
    assert_eq!(report.failed, 2, "{report}");
    assert_eq!(mock.handshake_count(), 0);
    mock.shutdown().await;
    let _ = std::fs::remove_dir_all(&work);
}
