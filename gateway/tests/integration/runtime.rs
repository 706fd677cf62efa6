//! `--runtime thread-per-core`: one current-thread runtime and `SO_REUSEPORT` listener per
//! worker, sharing limits, metrics and the access log; plain, streamed and translated
//! requests, a rate limit counted over every worker, the drain, and a busy port. The whole
//! suite runs under it too with `GATEWAY_TEST_RUNTIME=thread-per-core`.

use std::process::Command;
use std::time::Duration;

use crate::support::*;
use http::StatusCode;
use http_body_util::BodyExt;

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
    // About 1 s of stream.
    let mock = MockUpstream::start(MockConfig {
        chunks: 20,
        chunk_delay: Duration::from_millis(50),
        ..MockConfig::default()
    })
    .await
    .unwrap();
    let want = direct(&mock, MESSAGES, &body(MESSAGES, "up-claude", true)).await;
    let mut gw = TestGateway::start_with_args(&two_models(&mock.base_url()), TPC).await;
    let addr = gw.addr;
    let resp = open(addr, post(MESSAGES, body(MESSAGES, "claude", true)))
        .await
        .unwrap();
    assert_eq!(resp.status(), StatusCode::OK);
    let mut body = resp.into_body();
    let first = body.frame().await.unwrap().unwrap().into_data().unwrap();
    gw.sigterm();
    // Every worker's listener closes, while the stream goes on.
    let deadline = std::time::Instant::now() + PATIENCE;
    let mut refused_in_a_row = 0;
    while refused_in_a_row < 8 {
        match tokio::net::TcpStream::connect(addr).await {
            Ok(_) => refused_in_a_row = 0,
            Err(_) => refused_in_a_row += 1,
        }
        assert!(
            std::time::Instant::now() < deadline,
            "still accepting after SIGTERM"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let mut all = first.to_vec();
    while let Some(f) = body.frame().await {
        let f = f.expect("the stream was cut by the shutdown");
        if let Ok(d) = f.into_data() {
            all.extend_from_slice(&d);
        }
    }
    assert_eq!(all, want.body.to_vec(), "the drained stream is incomplete");
    let status = gw.wait_exit(PATIENCE).await;
    assert!(status.success(), "exit status {status:?}");
    // The access log was flushed before the exit.
    let line = gw
        .wait_log("for the drained stream", |l| l["route"] == MESSAGES)
        .await;
    assert_eq!(line["status"], 200);
}

#[test]
fn thread_per_core_port_in_use_fails_with_a_message() {
    // Bound without SO_REUSEPORT: the workers' listeners cannot share it.
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = taken.local_addr().unwrap().to_string();
    let path = scratch("busy-tpc.toml");
    std::fs::write(&path, two_models("http://127.0.0.1:9")).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_gateway"))
        .arg("--config")
        .arg(&path)
        .args(["--listen", &addr])
        .args(TPC)
        .env(UPSTREAM_KEY_ENV, UPSTREAM_KEY)
        .output()
        .unwrap();
    let _ = std::fs::remove_file(&path);
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(&format!("cannot listen on {addr}")),
        "{stderr}"
    );
}
