//! `--runtime thread-per-core`: one current-thread runtime and `SO_REUSEPORT` listener per
//! worker, sharing limits, metrics and the access log; plain, streamed and translated
//! requests, a rate limit counted over every worker, the drain, and a busy port. The whole
//! suite runs under it too with `GATEWAY_TEST_RUNTIME=thread-per-core`.

use crate::support::*;
use http::StatusCode;

const TPC: &[&str] = &["--runtime", "thread-per-core", "--workers", "2"];

/// The names of the process's threads.
fn thread_names(pid: u32) -> Vec<String> {
    let mut names = Vec::new();
    for task in std::fs::read_dir(format!("/proc/{pid}/task")).unwrap() {
        let comm = task.unwrap().path().join("comm");
        if let Ok(name) = std::fs::read_to_string(comm) {
            names.push(name.trim().to_owned());
        }
    }
    names
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn thread_per_core_serves_plain_streamed_and_translated_requests() {
    let mock = MockUpstream::start(MockConfig::default()).await.unwrap();
    let gw = TestGateway::start_with_args(&two_models(&mock.base_url()), TPC).await;
    assert!(
        gw.stderr_lines()
            .iter()
            .any(|l| l.contains("workers: 2 (thread-per-core)")),
        "{:?}",
        gw.stderr_lines()
    );
    let mut names = thread_names(gw.pid());
    names.sort();
    assert_eq!(
        names.iter().filter(|n| n.starts_with("gw-worker-")).count(),
        2,
        "{names:?}"
    );
    // Enough connections that the kernel gives both workers some.
    for _ in 0..8 {
        for (path, model, stream) in [
            (CHAT, "gpt", false),
            (CHAT, "gpt", true),
            // Anthropic client, OpenAI provider: translated both ways.
            (MESSAGES, "gpt", false),
            (MESSAGES, "gpt", true),
        ] {
            let r = gw.send(post(path, body(path, model, stream))).await;
            assert_eq!(r.status, StatusCode::OK, "{path} {model} stream={stream}");
            if !stream {
                let v = r.json();
                assert!(v["usage"].is_object(), "{v}");
            }
        }
    }
    let lines = gw
        .wait_logs("for every request", 32, |l| l["status"] == 200)
        .await;
    assert_eq!(lines.len(), 32);
    let text = gw.metrics().await;
    assert_eq!(requests_total(&text, CHAT, "gpt", 200), 16.0);
    assert_eq!(requests_total(&text, MESSAGES, "gpt", 200), 16.0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn thread_per_core_rate_limit_counts_over_every_worker() {
    let mock = MockUpstream::start(MockConfig::default()).await.unwrap();
    let config = format!(
        "[[keys]]\nname = \"k\"\nkey = \"gw-k\"\nrate_limit = {{ requests_per_minute = 5 }}\n\n{}",
        two_models(&mock.base_url())
    );
    let gw = TestGateway::start_with_args(&config, TPC).await;
    let mut statuses = Vec::new();
    // A connection per request: the kernel spreads them over both listeners.
    for _ in 0..12 {
        let r = gw
            .send(post(CHAT, body(CHAT, "gpt", false)).bearer("gw-k"))
            .await;
        statuses.push(r.status.as_u16());
    }
    assert_eq!(
        statuses.iter().filter(|s| **s == 200).count(),
        5,
        "{statuses:?}"
    );
    assert_eq!(
        statuses.iter().filter(|s| **s == 429).count(),
        7,
        "{statuses:?}"
    );
    assert_eq!(mock.request_count(), 5);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn thread_per_core_sigterm_lets_a_stream_finish_then_exits_0() {
    // Every worker's listener closes on the signal; the stream's worker drains it.
    crate::lifecycle::stream_finishes_after_sigterm(TPC).await;
}

#[test]
fn thread_per_core_port_in_use_fails_with_a_message() {
    // Bound without SO_REUSEPORT: the workers' listeners cannot share it.
    crate::lifecycle::port_in_use_fails(TPC);
}
