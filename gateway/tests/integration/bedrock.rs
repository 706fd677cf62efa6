//! AWS Bedrock targets (`provider = "bedrock"`): every client dialect translated to Converse
//! on the trainer mock (which serves Converse and ConverseStream, the stream as AWS's
//! binary event stream), each request signed with SigV4 for the target's region (the mock
//! checks no signature: tests/sdk/test_bedrock.py checks them with botocore), the model id
//! percent-encoded in the path, a Bedrock API key as a bearer token, and the provider named
//! in the access log and the metrics.

use crate::support::*;
use http::StatusCode;
use serde_json::Value;

const CLIENT_KEY: &str = "client-key-br";
const MODEL_ID: &str = "anthropic.claude-3-5-sonnet-20240620-v1:0";
const AWS_SECRET: &str = "integration-aws-secret-key-0123";

fn bedrock(base: &str, extra: &str) -> String {
    format!(
        "[[keys]]\nname = \"k\"\nkey = \"{CLIENT_KEY}\"\n[[models]]\nname = \"br\"\n[[models.targets]]\nprovider = \"bedrock\"\nbase_url = \"{base}\"\nregion = \"eu-central-1\"\nmodel = \"{MODEL_ID}\"\n{extra}\n"
    )
}

fn aws_env() -> StartOpts {
    StartOpts {
        env: vec![
            ("AWS_ACCESS_KEY_ID".into(), "AKIDINTEGRATION01".into()),
            ("AWS_SECRET_ACCESS_KEY".into(), AWS_SECRET.into()),
            (
                "AWS_SESSION_TOKEN".into(),
                "integration-session-token".into(),
            ),
        ],
        ..StartOpts::default()
    }
}

#[tokio::test]
async fn every_dialect_streaming_and_not_signed() {
    let mock = MockUpstream::start(MockConfig {
        record: true,
        ..MockConfig::default()
    })
    .await
    .unwrap();
    let config = bedrock(&mock.base_url(), "aws_credentials = \"env\"");
    let gw = TestGateway::start_opts(&config, aws_env()).await;
    let text = expected_text(mock.config());
    let mut n = 0;
    for route in [CHAT, MESSAGES, RESPONSES] {
        for stream in [false, true] {
            let r = gw
                .send(post(route, body(route, "br", stream)).bearer(CLIENT_KEY))
                .await;
            assert_eq!(r.status, StatusCode::OK, "{route} {stream}: {}", r.text());
            let got = r.text();
            if stream {
                assert!(!sse_data(&r.body).is_empty(), "{route}");
            } else {
                let v: Value = r.json();
                assert!(
                    got.contains(&text) || v.to_string().contains(&text),
                    "{route}: {got}"
                );
            }
            n += 1;
            let seen = mock.recorded();
            let up = &seen[n - 1];
            let suffix = if stream {
                "converse-stream"
            } else {
                "converse"
            };
            assert_eq!(
                up.path,
                format!("/model/anthropic.claude-3-5-sonnet-20240620-v1%3A0/{suffix}")
            );
            let auth = up.headers["authorization"].to_str().unwrap();
            assert!(
                auth.starts_with("AWS4-HMAC-SHA256 Credential=AKIDINTEGRATION01/")
                    && auth.contains("/eu-central-1/bedrock/aws4_request")
                    && auth.contains(
                        "SignedHeaders=content-type;host;x-amz-date;x-amz-security-token"
                    ),
                "{auth}"
            );
            assert_eq!(
                up.headers["x-amz-security-token"],
                "integration-session-token"
            );
            let b: Value = serde_json::from_slice(&up.body).unwrap();
            assert!(b.get("model").is_none() && b["messages"].is_array(), "{b}");
        }
    }
    // Gemini clients too.
    let path = "/v1beta/models/br:streamGenerateContent?alt=sse";
    let r = gw
        .send(
            post(
                path,
                r#"{"contents":[{"role":"user","parts":[{"text":"hi"}]}]}"#,
            )
            .header("x-goog-api-key", CLIENT_KEY),
        )
        .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.text());
    // Gemini's events end with CRLF pairs, as Google's do.
    let got = r.text();
    assert!(
        got.contains("Bonjour") && got.contains("\"finishReason\":\"STOP\""),
        "{got}"
    );
    let records = gw
        .wait_logs("for model br", 7, |r| r["model"] == "br")
        .await;
    for r in &records {
        assert_eq!(r["provider"], "bedrock", "{r}");
        assert!(
            r["translated"].as_str().unwrap().ends_with("->converse"),
            "{r}"
        );
    }
    gw.wait_metric(
        "gateway_upstream_responses_total{model=\"br\",provider=\"bedrock\"}",
        7.0,
    )
    .await;
    let everything = format!("{:?}{:?}", gw.stdout_lines(), gw.stderr_lines());
    assert!(!everything.contains(AWS_SECRET) && !everything.contains("integration-session-token"));
}

#[tokio::test]
async fn api_key_and_errors_in_the_clients_envelope() {
    let mock = MockUpstream::start(MockConfig {
        record: true,
        ..MockConfig::default()
    })
    .await
    .unwrap();
    let config = bedrock(
        &mock.base_url(),
        &format!("api_key_env = \"{UPSTREAM_KEY_ENV}\""),
    )
    .replace(MODEL_ID, "mock-error-429");
    let gw = TestGateway::start(&config).await;
    let r = gw
        .send(post(CHAT, body(CHAT, "br", false)).bearer(CLIENT_KEY))
        .await;
    let v = assert_openai_error(&r, 429);
    assert_eq!(v["error"]["type"], "rate_limit_error");
    let r = gw
        .send(post(MESSAGES, body(MESSAGES, "br", true)).bearer(CLIENT_KEY))
        .await;
    assert_eq!(assert_anthropic_error(&r, 429), "rate_limit_error");
    let up = &mock.recorded()[0];
    assert_eq!(
        up.headers["authorization"],
        format!("Bearer {UPSTREAM_KEY}").as_str()
    );
    assert!(up.headers.get("x-amz-date").is_none());
}

/// Container credentials that cannot be had (the endpoint's port is closed): the client
/// gets a 503 in its envelope naming the provider and the target after the first-byte
/// timeout; the failed fetches are logged without a token; the gateway stops cleanly.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unreachable_container_credentials_are_a_503() {
    let closed = ClosedPort::new();
    let config = format!(
        "[upstream]\nfirst_byte_timeout_ms = 300\n{}",
        bedrock(closed.url(), "aws_credentials = \"container\"")
    );
    let opts = StartOpts {
        env: vec![
            (
                "AWS_CONTAINER_CREDENTIALS_FULL_URI".into(),
                format!("{}/creds", closed.url()),
            ),
            (
                "AWS_CONTAINER_AUTHORIZATION_TOKEN".into(),
                "container-secret-token".into(),
            ),
        ],
        ..StartOpts::default()
    };
    let mut gw = TestGateway::start_opts(&config, opts).await;
    let r = gw
        .send(post(MESSAGES, body(MESSAGES, "br", false)).bearer(CLIENT_KEY))
        .await;
    assert_eq!(assert_anthropic_error(&r, 503), "api_error");
    let text = r.text();
    assert!(
        text.contains("credentials unavailable") && text.contains("provider bedrock"),
        "{text}"
    );
    let line = gw.wait_log(MESSAGES, |l| l["route"] == MESSAGES).await;
    assert_eq!(line["status"], 503, "{line}");
    assert_eq!(line["error"], "credentials_unavailable", "{line}");
    let deadline = std::time::Instant::now() + PATIENCE;
    while !gw
        .stderr_lines()
        .iter()
        .any(|l| l.contains("AWS credentials refresh failed"))
    {
        assert!(
            std::time::Instant::now() < deadline,
            "{:?}",
            gw.stderr_lines()
        );
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    assert!(!format!("{:?}", gw.stderr_lines()).contains("container-secret-token"));
    gw.sigterm();
    let status = gw.wait_exit(PATIENCE).await;
    assert!(status.success(), "{status:?}: the refresher holds no exit");
}

/// Container credentials that expire as they are issued (or within the lifetime floor) are
/// a failed fetch: the fetches back off (1 s, 2 s, ...) as for an endpoint that is down,
/// instead of repeating every 250 ms, and each failure is logged; requests get the 503.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn aws_keys_under_the_lifetime_floor_are_a_failed_fetch() {
    let creds = FnUpstream::start(|mut s, _head| async move {
        let out = std::process::Command::new("date")
            .args(["-u", "+%Y-%m-%dT%H:%M:%SZ"])
            .output()
            .unwrap();
        let now = String::from_utf8(out.stdout).unwrap();
        let body = serde_json::json!({"AccessKeyId": "ASIAFLOOR", "SecretAccessKey": "floor-secret",
            "Token": "floor-session-token", "Expiration": now.trim()});
        let reply = http_response(
            "200 OK",
            &[
                ("content-type", "application/json"),
                ("connection", "close"),
            ],
            body.to_string().as_bytes(),
        );
        let _ = tokio::io::AsyncWriteExt::write_all(&mut s, &reply).await;
    })
    .await;
    let config = format!(
        "[upstream]\nfirst_byte_timeout_ms = 300\n{}",
        bedrock(&creds.base_url(), "aws_credentials = \"container\"")
    );
    let opts = StartOpts {
        env: vec![(
            "AWS_CONTAINER_CREDENTIALS_FULL_URI".into(),
            format!("{}/creds", creds.base_url()),
        )],
        ..StartOpts::default()
    };
    let gw = TestGateway::start_opts(&config, opts).await;
    let r = gw
        .send(post(MESSAGES, body(MESSAGES, "br", false)).bearer(CLIENT_KEY))
        .await;
    assert_eq!(assert_anthropic_error(&r, 503), "api_error");
    tokio::time::sleep(std::time::Duration::from_millis(3_500)).await;
    // Fetches at 0, 1 and 3 s (a few more if start-up was slow); 14 or more without the floor.
    let fetches = creds.heads().len();
    assert!((1..=4).contains(&fetches), "{fetches} fetches");
    let log = gw.stderr_lines().join("\n");
    assert!(
        log.contains("AWS credentials refresh failed: the credential granted lives 0 ms, under the 60000 ms minimum"),
        "{log}"
    );
    assert!(!log.contains("floor-secret") && !log.contains("floor-session-token"));
}
