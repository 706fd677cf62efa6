//! Process lifecycle: SIGTERM/SIGINT drain and exit 0, the grace period, `--check-config`,
//! `--version`, the separate metrics listener and the access-log sinks.

use std::process::Command;
use std::time::Duration;

use crate::support::*;
use http::StatusCode;
use http_body_util::BodyExt;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_lets_an_in_flight_stream_finish_then_exits_0() {
    stream_finishes_after_sigterm(&[]).await;
}

/// SIGTERM during a stream: new connections are refused, the stream completes, the exit is
/// 0 and the access log has the stream's line. `args`: the gateway's extra arguments.
pub(crate) async fn stream_finishes_after_sigterm(args: &[&str]) {
    // About 2 s of stream.
    let mock = MockUpstream::start(MockConfig {
        chunks: 40,
        chunk_delay: Duration::from_millis(50),
        ..MockConfig::default()
    })
    .await
    .unwrap();
    let mut gw = TestGateway::start_with_args(&two_models(&mock.base_url()), args).await;
    let addr = gw.addr;
    let resp = open(addr, post(MESSAGES, body(MESSAGES, "claude", true)))
        .await
        .unwrap();
    assert_eq!(resp.status(), StatusCode::OK);
    let mut body = resp.into_body();
    let first = body.frame().await.unwrap().unwrap().into_data().unwrap();
    gw.sigterm();
    // New connections are refused soon, while the stream goes on.
    let deadline = std::time::Instant::now() + PATIENCE;
    while tokio::net::TcpStream::connect(addr).await.is_ok() {
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
    let d = direct(&mock, MESSAGES, &body_up(MESSAGES, "claude")).await;
    assert_eq!(all, d.body.to_vec(), "the drained stream is incomplete");
    let status = gw.wait_exit(PATIENCE).await;
    assert!(status.success(), "exit status {status:?}");
    // The access log was flushed before the exit, usage included.
    let (input, output) = expected_usage(mock.config());
    let line = gw
        .wait_log("for the drained stream", |l| l["route"] == MESSAGES)
        .await;
    assert_eq!(line["status"], 200);
    assert!(line["error"].is_null(), "{line}");
    assert_eq!(line["input_tokens"], input);
    assert_eq!(line["output_tokens"], output);
}

fn body_up(path: &str, model: &str) -> String {
    body(path, &format!("up-{model}"), true)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_and_sigint_when_idle_exit_0() {
    let mock = MockUpstream::start(MockConfig::default()).await.unwrap();
    for sig in ["-TERM", "-INT"] {
        let mut gw = TestGateway::start(&two_models(&mock.base_url())).await;
        // A finished keep-alive connection stays open; it must not hold up the exit.
        let stream = tokio::net::TcpStream::connect(gw.addr).await.unwrap();
        let mut sender = trainer::http1::handshake(stream).await.unwrap();
        let req = http::Request::post(CHAT)
            .header("host", "gw")
            .body(http_body_util::Full::new(bytes::Bytes::from(body(
                CHAT, "gpt", false,
            ))))
            .unwrap();
        let r = sender.send_request(req).await.unwrap();
        r.into_body().collect().await.unwrap();
        signal(gw.pid(), sig);
        let status = gw.wait_exit(Duration::from_secs(5)).await;
        assert!(status.success(), "{sig}: exit status {status:?}");
        gw.wait_log("for the request", |l| l["route"] == CHAT).await;
        drop(sender);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_while_waiting_for_the_upstream_still_answers() {
    let mock = MockUpstream::start(MockConfig {
        first_byte_delay: Duration::from_millis(600),
        ..MockConfig::default()
    })
    .await
    .unwrap();
    let mut gw = TestGateway::start(&two_models(&mock.base_url())).await;
    let addr = gw.addr;
    let pending =
        tokio::spawn(
            async move { send(addr, post(RESPONSES, body(RESPONSES, "gpt", false))).await },
        );
    while mock.request_count() == 0 {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    gw.sigterm();
    let r = pending.await.unwrap();
    assert_eq!(r.status, StatusCode::OK);
    assert_eq!(r.json()["status"], "completed");
    let status = gw.wait_exit(PATIENCE).await;
    assert!(status.success(), "exit status {status:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn grace_period_ends_a_stalled_stream_and_still_exits_0() {
    let mock = stalling_mock().await;
    let (mut gw, mut body) = gateway_with_stalled_stream(&mock, 300).await;
    gw.sigterm();
    let status = gw.wait_exit(PATIENCE).await;
    assert!(status.success(), "exit status {status:?}");
    // The client sees a cut stream, not a clean end.
    let mut cut = false;
    while let Some(f) = tokio::time::timeout(PATIENCE, body.frame()).await.unwrap() {
        if f.is_err() {
            cut = true;
            break;
        }
    }
    assert!(cut, "the stalled stream ended as if complete");
    let stderr = gw.stderr_lines().join("\n");
    assert!(stderr.contains("grace"), "{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn separate_metrics_listener() {
    let mock = MockUpstream::start(MockConfig::default()).await.unwrap();
    let config = format!(
        "[server]\nmetrics_listen = \"127.0.0.1:0\"\n{}",
        two_models(&mock.base_url())
    );
    let gw = TestGateway::start(&config).await;
    let maddr = gw
        .metrics_addr
        .expect("the summary names the metrics listener");
    assert_ne!(maddr, gw.addr);
    // Not on the main listener any more.
    let r = gw.send(get("/metrics")).await;
    assert_openai_error(&r, 404);
    let r = gw
        .send(post(RESPONSES, body(RESPONSES, "gpt", false)))
        .await;
    assert_eq!(r.status, StatusCode::OK);
    let text = gw.wait_metric(&tokens_series("gpt", "input"), 17.0).await;
    assert_eq!(requests_total(&text, RESPONSES, "gpt", 200), 1.0);
    assert_eq!(requests_total(&text, "other", "", 404), 1.0, "{text}");
    assert!(text.contains("# TYPE gateway_requests_total counter"));
    assert!(text.contains("gateway_request_duration_seconds_bucket{"));
    assert!(text.contains("gateway_upstream_ttfb_seconds_count{model=\"gpt\"} 1"));
    // The metrics listener serves health, but no API routes.
    assert_eq!(send(maddr, get("/healthz")).await.status, StatusCode::OK);
    let r = send(maddr, post(CHAT, body(CHAT, "gpt", false))).await;
    assert_eq!(r.status, StatusCode::NOT_FOUND);
    assert_eq!(mock.request_count(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metrics_off_and_access_log_sinks() {
    let mock = MockUpstream::start(MockConfig::default()).await.unwrap();
    let models = two_models(&mock.base_url());

    let gw = TestGateway::start(&format!(
        "[observability]\nmetrics = false\naccess_log = \"off\"\n{models}"
    ))
    .await;
    assert_openai_error(&gw.send(get("/metrics")).await, 404);
    assert_eq!(
        gw.send(post(CHAT, body(CHAT, "gpt", false))).await.status,
        StatusCode::OK
    );
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert!(gw.access_log().is_empty(), "{:?}", gw.stdout_lines());

    let gw = TestGateway::start(&format!(
        "[observability]\naccess_log = \"stderr\"\n{models}"
    ))
    .await;
    assert_eq!(
        gw.send(post(CHAT, body(CHAT, "gpt", false))).await.status,
        StatusCode::OK
    );
    let deadline = std::time::Instant::now() + PATIENCE;
    loop {
        let found = gw.stderr_lines().iter().any(|l| {
            serde_json::from_str::<serde_json::Value>(l).is_ok_and(|v| v["route"] == CHAT)
        });
        if found {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "{:?}",
            gw.stderr_lines()
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert!(gw.access_log().is_empty());
}

fn check(config: &str, extra_env: &[(&str, &str)]) -> (bool, String, String) {
    let env: Vec<(&str, &str)> = [(UPSTREAM_KEY_ENV, UPSTREAM_KEY)]
        .into_iter()
        .chain(extra_env.iter().copied())
        .collect();
    check_config("check.toml", config, &env)
}

#[test]
fn check_config_accepts_a_good_file() {
    let (ok, stdout, stderr) = check(&two_models("http://127.0.0.1:9"), &[]);
    assert!(ok, "{stderr}");
    assert!(stdout.contains("ok"), "{stdout}");
    // The example config is good too, given its environment.
    let example = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../gateway.example.toml"
    ))
    .unwrap();
    let env = [
        ("OPENAI_API_KEY", "sk-x"),
        ("ANTHROPIC_API_KEY", "sk-ant-x"),
        ("GEMINI_API_KEY", "gm-x"),
        ("GATEWAY_KEY_TEAM_B", "gw-b"),
    ];
    let (ok, _, stderr) = check(&example, &env);
    assert!(ok, "{stderr}");
}

#[test]
fn check_config_names_the_bad_key() {
    let good = two_models("http://127.0.0.1:9");
    let cases = [
        (
            format!("{good}\n[server]\nlisten_addr = \"x\"\n"),
            "listen_addr",
        ),
        (
            good.replace("http://127.0.0.1:9", "ftp://x"),
            "models[0].targets[0].base_url",
        ),
        (good.replace("\"anthropic\"", "\"palm\""), "palm"),
        (
            good.replace(UPSTREAM_KEY_ENV, "GATEWAY_TEST_SURELY_UNSET"),
            "GATEWAY_TEST_SURELY_UNSET",
        ),
        (
            format!("[upstream]\nidle_timeout_ms = 0\n{good}"),
            "upstream.idle_timeout_ms",
        ),
        (
            format!("{good}\n[[keys]]\nname = \"a\"\nkey = \"k\"\nmodels = [\"nope\"]\n"),
            "keys[0].models[0]",
        ),
        ("[server]\nworkers = 1\n".to_owned(), "models"),
        ("this is not toml".to_owned(), "check.toml"),
    ];
    for (config, key) in cases {
        let (ok, _, stderr) = check(&config, &[]);
        assert!(!ok, "accepted a bad config ({key})");
        assert!(
            stderr.contains(key),
            "the error does not name {key:?}: {stderr}"
        );
        assert!(
            stderr.contains("check.toml"),
            "the error does not name the file: {stderr}"
        );
        // The upstream key itself never appears.
        assert!(!stderr.contains(UPSTREAM_KEY));
    }
}

#[test]
fn unreadable_config_is_named() {
    let path = scratch("missing.toml");
    let out = Command::new(env!("CARGO_BIN_EXE_gateway"))
        .arg("--config")
        .arg(&path)
        .output()
        .unwrap();
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains(&*path.to_string_lossy()), "{stderr}");
}

#[test]
fn version_flag() {
    let out = Command::new(env!("CARGO_BIN_EXE_gateway"))
        .arg("--version")
        .output()
        .unwrap();
    assert!(out.status.success());
    assert!(String::from_utf8_lossy(&out.stdout).contains(env!("CARGO_PKG_VERSION")));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn port_in_use_fails_with_a_message() {
    port_in_use_fails(&[]);
}

/// A listener already on the address: exit 1, the address named. `args`: extra arguments.
pub(crate) fn port_in_use_fails(args: &[&str]) {
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = taken.local_addr().unwrap().to_string();
    let path = scratch("busy.toml");
    std::fs::write(&path, two_models("http://127.0.0.1:9")).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_gateway"))
        .arg("--config")
        .arg(&path)
        .args(["--listen", &addr])
        .args(args)
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
