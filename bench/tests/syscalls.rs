//! `bench syscalls` for real against the built gateway: strace attached over exact request
//! windows at c=1 on both paths. The gateway must stay near the floor (4 data calls and 2
//! epoll waits per request): before `conn::pacemaker`, tokio's time driver woke itself once
//! per request (an eventfd `write` and a spare `epoll_wait`, 7.5 calls per request), which
//! this bound fails. The same run against a bound under the floor must fail, naming it.
//!
//! Needs strace (scripts/test-deps.sh installs it) and a built gateway binary:
//! `$GATEWAY_BIN`, or `gateway` in this test's own target directory (see tests/bench.rs).

use bench::syscalls::{self, SyscallsOptions};
use bench::variant::Variant;
use trainer::launch::test_gateway_bin as gateway_bin;
use trainer::shapes;

/// The floor is 6 at c=1; a read that finds nothing yet (EAGAIN) now and then is timing, not
/// the runtime, so the bound leaves half a call.
const MAX_C1: f64 = 6.5;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_gateway_needs_no_more_than_the_floor_at_c1() {
    let work = std::env::temp_dir().join(format!(
        "trainer-bench-test-syscalls-{}",
        std::process::id()
    ));
    let mut o = SyscallsOptions::new(work.clone(), shapes::repo_dir());
    o.concurrency = vec![1];
    o.warmup = 100;
    o.requests_small = 100;
    o.requests_big = 600;
    o.max_c1 = Some(MAX_C1);
    let v = [Variant {
        name: "plain".into(),
        path: gateway_bin(),
    }];
    let mut r = syscalls::run(&v, &o).await.unwrap();
    assert_eq!(r.steps.len(), 2, "{r:?}");
    for s in &r.steps {
        // The four data calls are there, once each way.
        assert!(s.per_request["writev"].calls >= 1.99, "{s:?}");
        assert!(s.total >= 5.9, "{s:?}");
    }
    let md = syscalls::markdown(&r);
    assert!(syscalls::gate(&r).is_ok(), "{md}");
    // The same figures against a bound under the floor fail, naming the step.
    r.max_c1 = Some(5.0);
    let e = syscalls::gate(&r).unwrap_err();
    assert!(e.contains("plain passthrough c=1"), "{e}");
    let _ = std::fs::remove_dir_all(&work);
}
