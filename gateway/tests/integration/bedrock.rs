//! AWS Bedrock targets (`provider = "bedrock"`): every client dialect translated to Converse
//! on the trainer mock (which serves Converse and ConverseStream, the stream as AWS's
//! binary event stream), each request signed with SigV4 for the target's region (the mock
//! checks no signature: tests/sdk/test_bedrock.py checks them with botocore), the model id
//! percent-encoded in the path, a Bedrock API key as a bearer token, and the provider named
//! in the access log.

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
