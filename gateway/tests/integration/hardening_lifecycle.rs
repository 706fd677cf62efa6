//! Shutdown and start-up under bad luck (issue 13): a stuck log reader, a second signal,
//! keys with stray whitespace or bytes, a shared listener address and credentials in URLs.

use std::process::Command;
use std::time::{Duration, Instant};

use crate::support::*;
use http::StatusCode;

// Item 3: with the access log on a pipe nobody reads, SIGTERM still exits within the grace
// period; the lines that could not be written are dropped and counted.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn blocked_access_log_does_not_hold_shutdown() {
    let mock = MockUpstream::start(MockConfig::default()).await.unwrap();
    let config = format!(
        "[server]\nshutdown_grace_ms = 1000\n{}",
        two_models(&mock.base_url())
    );
    let mut gw = TestGateway::start_opts(
        &config,
        StartOpts {
            stdout_unread: true,
            ..StartOpts::default()
        },
    )
    .await;
    // Far more log than a pipe buffer (64 KiB) holds: the writer thread blocks.
    let long_id = "r".repeat(120);
    for i in 0..700 {
        let r = gw
            .send(
                post(CHAT, body(CHAT, "gpt", false))
                    .header("x-request-id", format!("{}{i}", &long_id)),
            )
            .await;
        assert_eq!(r.status, StatusCode::OK);
    }
    let start = Instant::now();
    gw.sigterm();
    let status = gw.wait_exit(Duration::from_secs(6)).await;
    assert!(status.success(), "{status:?}");
    assert!(
        start.elapsed() < Duration::from_secs(4),
        "{:?}",
        start.elapsed()
    );
    let stderr = gw.stderr_lines().join("\n");
    assert!(stderr.contains("access log"), "{stderr}");
    assert!(stderr.contains("dropped"), "{stderr}");
}

// Item 4: a second SIGTERM/SIGINT during the drain forces a non-zero exit at once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn second_signal_forces_exit() {
    let mock = stalling_mock().await;
    for second in ["-TERM", "-INT"] {
        let (mut gw, _stream) = gateway_with_stalled_stream(&mock, 60_000).await;
        gw.sigterm();
        tokio::time::sleep(Duration::from_millis(300)).await;
        assert!(gw.is_running(), "exited before the stalled stream ended");
        let start = Instant::now();
        signal(gw.pid(), second);
        let status = gw.wait_exit(Duration::from_secs(5)).await;
        assert!(
            !status.success(),
            "{second}: a forced exit must be non-zero"
        );
        assert!(start.elapsed() < Duration::from_secs(3));
        let stderr = gw.stderr_lines().join("\n");
        assert!(stderr.contains("second signal"), "{stderr}");
    }
}

// Item 9: a gateway key read from the environment with a trailing newline or spaces
// matches the key without them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn key_from_the_environment_is_trimmed() {
    let mock = MockUpstream::start(MockConfig::default()).await.unwrap();
    let config = format!(
        "[[keys]]\nname = \"env\"\nkey_env = \"GATEWAY_TEST_KEY_WS\"\n{}",
        two_models(&mock.base_url())
    );
    let gw = TestGateway::start_opts(
        &config,
        StartOpts {
            env: vec![("GATEWAY_TEST_KEY_WS".into(), "gw-env-key \n".into())],
            ..StartOpts::default()
        },
    )
    .await;
    let r = gw
        .send(post(CHAT, body(CHAT, "gpt", false)).bearer("gw-env-key"))
        .await;
    assert_eq!(r.status, StatusCode::OK, "{:?}", r.body);
    // A key of whitespace only is not a key.
    let (code, _, stderr) = check_config(&config, &[("GATEWAY_TEST_KEY_WS", " \n")]);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(stderr.contains("keys[0].key_env"), "{stderr}");
}

fn check_config(config: &str, env: &[(&str, &str)]) -> (Option<i32>, String, String) {
    run_gateway(config, env, &["--check-config"])
}

fn run_gateway(config: &str, env: &[(&str, &str)], args: &[&str]) -> (Option<i32>, String, String) {
    let path = scratch("check.toml");
    std::fs::write(&path, config).unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_gateway"))
        .arg("--config")
        .arg(&path)
        .args(args)
        .env(UPSTREAM_KEY_ENV, UPSTREAM_KEY)
        .envs(env.iter().copied())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Bounded: a gateway that starts serving instead of failing is killed.
    let deadline = Instant::now() + Duration::from_secs(5);
    while child.try_wait().unwrap().is_none() {
        if Instant::now() > deadline {
            let _ = child.kill();
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let out = child.wait_with_output().unwrap();
    let _ = std::fs::remove_file(&path);
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

// Item 9: `--check-config` catches an upstream key that is not a valid header value and a
// metrics listener on the main listener's address; starting with either exits 2 before
// anything listens.
#[test]
fn check_config_catches_what_start_up_would_fail_on() {
    let good = two_models("http://127.0.0.1:9");
    let (code, _, stderr) = check_config(&good, &[(UPSTREAM_KEY_ENV, "sk-bad\u{1}key")]);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(stderr.contains("api_key_env"), "{stderr}");
    assert!(!stderr.contains("sk-bad"), "the key leaked: {stderr}");
    let (code, _, stderr) = run_gateway(
        &good,
        &[(UPSTREAM_KEY_ENV, "sk-bad\u{1}key")],
        &["--listen", "127.0.0.1:0"],
    );
    assert_eq!(code, Some(2), "{stderr}");
    assert!(!stderr.contains("listening on"), "{stderr}");

    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let shared = format!(
        "[server]\nlisten = \"127.0.0.1:{port}\"\nmetrics_listen = \"127.0.0.1:{port}\"\n{good}"
    );
    let (code, _, stderr) = check_config(&shared, &[]);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(stderr.contains("server.metrics_listen"), "{stderr}");
    let (code, _, stderr) = run_gateway(&shared, &[], &[]);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(!stderr.contains("listening on"), "{stderr}");
    // An upstream key with a trailing newline is trimmed, not rejected.
    let (code, _, stderr) = check_config(&good, &[(UPSTREAM_KEY_ENV, "sk-fine\n")]);
    assert_eq!(code, Some(0), "{stderr}");
}

// Item 9: credentials in a base_url are refused and never printed.
#[test]
fn base_url_credentials_are_refused_and_never_printed() {
    let config = two_models("http://user:hunter2@127.0.0.1:9");
    for args in [&["--check-config"][..], &["--listen", "127.0.0.1:0"][..]] {
        let (code, stdout, stderr) = run_gateway(&config, &[], args);
        assert_eq!(code, Some(2), "{stderr}");
        assert!(stderr.contains("base_url"), "{stderr}");
        assert!(
            !stderr.contains("hunter2") && !stdout.contains("hunter2"),
            "{stderr}"
        );
    }
}
