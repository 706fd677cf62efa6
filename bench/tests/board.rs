//! `bench board` for real, briefly, against the built gateway: one round with a control leg
//! and tiny steps, end to end through the markdown; then the same against a mock that fails
//! every request, which must count the failures and keep every figure that needs a clean step
//! empty. No timed assertions: speed is reported, not asserted.
//!
//! Needs a built gateway binary: `$GATEWAY_BIN`, or `gateway` in this test's own target
//! directory (see tests/bench.rs).

use std::path::PathBuf;
use std::time::Duration;

use bench::board::{self, BoardOptions, DIRECT};
use bench::variant::{Variant, CONTROL};
use trainer::launch::test_gateway_bin as gateway_bin;
use trainer::shapes;

fn tiny(name: &str) -> BoardOptions {
    let work = std::env::temp_dir().join(format!(
        "trainer-bench-test-board-{name}-{}",
        std::process::id()
    ));
    let mut o = BoardOptions::new(work, shapes::repo_dir());
    o.rounds = 1;
    o.latency_s = 0.1;
    o.step_s = 0.1;
    o.concurrency = vec![1, 4];
    o.cpu_concurrency = 4;
    o.xlat_concurrency = vec![4];
    o.stream_deltas = 8;
    o.stream_pace = Duration::from_millis(5);
    o.stream_samples = 1;
    o.stream_concurrency = vec![4];
    o.recover_max = Duration::from_millis(500);
    o
}

fn variants() -> Vec<Variant> {
    let bin = gateway_bin();
    vec![
        Variant {
            name: "plain".into(),
            path: bin.clone(),
        },
        Variant {
            name: "other".into(),
            path: bin,
        },
    ]
}

fn work(o: &BoardOptions) -> PathBuf {
    o.work_dir.clone()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_round_measures_every_figure() {
    let o = tiny("ok");
    let r = board::run(&variants(), &o).await.unwrap();
    // plain, control, other and the direct leg, once each.
    let names: Vec<&str> = r.legs.iter().map(|l| l.variant.as_str()).collect();
    assert_eq!(names, ["plain", CONTROL, "other", DIRECT]);
    for l in &r.legs {
        assert_eq!(l.failed, 0, "{}: {:?}", l.variant, l.failures);
    }
    let row = |k: &str| r.rows.iter().find(|r| r.metric.key == k).unwrap();
    for key in [
        "c1_p50_ms",
        "frontier_unbounded_rps",
        "xlat_max_rps",
        "stream_gap_p50_ms",
        "cpu_us_per_req",
        "cpu_user_us_per_req",
        "cpu_sys_us_per_req",
        "rss_idle_mib",
        "rss_steady_mib",
        "rss_recovered_mib",
    ] {
        for c in &row(key).cells {
            assert!(c.median.is_some(), "{key} {}", c.variant);
        }
    }
    // Every stream of the ladder carried: the top of the ladder.
    for c in &row("stream_carried").cells {
        assert_eq!(c.median, Some(4.0), "{}", c.variant);
    }
    assert!(row("frontier_unbounded_rps").band.is_some());
    assert!(r.rig.ceiling_rps.is_some());
    let md = board::report::markdown(&r);
    assert!(
        md.contains("| figure | unit | plain | control | other | control band | other / plain |"),
        "{md}"
    );
    assert!(md.contains("| added p50 latency, c=1 | ms |"), "{md}");
    // User and kernel CPU apart, with the share compiler optimization can reach.
    assert!(md.contains("**Where a request's CPU goes**"), "{md}");
    assert!(md.contains("reaches the user part only"), "{md}");
    // The JSON round-trips: `bench report` reads it back.
    let back: board::BoardReport =
        serde_json::from_str(&serde_json::to_string(&r).unwrap()).unwrap();
    assert_eq!(back.legs.len(), 4);
    let _ = std::fs::remove_dir_all(work(&o));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_request_is_a_failure_not_a_figure() {
    let mut o = tiny("fail");
    o.control = false;
    o.mock_fail_status = Some(500);
    let r = board::run(&variants()[..1], &o).await.unwrap();
    for l in &r.legs {
        assert!(l.failed > 0, "{}", l.variant);
        assert!(!l.failures.is_empty(), "{}", l.variant);
        // Fast error pages never make a latency, frontier or stream figure.
        for key in [
            "c1_p50_ms",
            "frontier_unbounded_rps",
            "xlat_max_rps",
            "stream_ttft_ms",
        ] {
            assert!(!l.raw.contains_key(key), "{} {key}", l.variant);
        }
    }
    assert!(r.failed["plain"] > 0 && r.failed[DIRECT] > 0);
    let md = board::report::markdown(&r);
    assert!(md.contains("First failures:"), "{md}");
    let _ = std::fs::remove_dir_all(work(&o));
}
