//! `drive` against the real gateway for every shape, training and holdout, at the shape's
//! full request count: one gateway lifetime per shape (as in training), every response
//! checked, and a clean exit 0 on SIGTERM.
//!
//! Needs a built gateway binary: `$GATEWAY_BIN`, or `gateway` next to this test's own target
//! directory (`cargo test --workspace` builds it; with `-p trainer` alone run
//! `cargo build -p gateway` first).

mod common;
use common::gateway_bin;
use std::time::Duration;

use trainer::drive::{drive, DriveOptions};
use trainer::shapes;
use trainer::train::{GatewayProcess, TRAINING_KEY};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_shape_drives_clean_through_the_gateway() {
    let bin = gateway_bin();
    let work = std::env::temp_dir().join(format!("trainer-gw-drive-{}", std::process::id()));
    let all = shapes::load_dir(&shapes::repo_dir()).unwrap();
    assert!(all.iter().any(|s| s.holdout));
    for shape in &all {
        let gw = GatewayProcess::start(
            &bin,
            shape,
            &work.join(&shape.name),
            Vec::new(),
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
    let gw = GatewayProcess::start(&bin, &shape, &work, Vec::new(), Duration::from_secs(30))
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
