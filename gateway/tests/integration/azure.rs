//! Azure OpenAI targets (`provider = "azure-openai"`): the deployments URL with its
//! `api-version` or the v1 API, the `api-key` header or an Entra bearer token, the deployment
//! as the upstream model, any client dialect on it, config errors naming the field, the key
//! redacted, and the provider named in the access log and the metrics.

use crate::support::*;
use http::StatusCode;
use serde_json::{json, Value};
use tokio::io::AsyncWriteExt;
use trainer::mock::RecordedRequest;

const CLIENT_KEY: &str = "client-key-az";

/// One model `az` on an Azure target at `base`; `extra` adds target keys.
fn azure(base: &str, extra: &str) -> String {
    format!(
        "[[keys]]\nname = \"k\"\nkey = \"{CLIENT_KEY}\"\n[[models]]\nname = \"az\"\n[[models.targets]]\nprovider = \"azure-openai\"\nbase_url = \"{base}\"\nmodel = \"gpt-4o-mini\"\napi_key_env = \"{UPSTREAM_KEY_ENV}\"\n{extra}\n"
    )
}

async fn recording_mock() -> MockUpstream {
    MockUpstream::start(MockConfig {
        record: true,
        ..MockConfig::default()
    })
    .await
    .unwrap()
}

fn header<'a>(r: &'a RecordedRequest, name: &str) -> Option<&'a str> {
    r.headers.get(name).map(|v| v.to_str().unwrap())
}

fn body_of(r: &RecordedRequest) -> Value {
    serde_json::from_slice(&r.body).unwrap()
}

/// Chat and responses, streaming and not, from OpenAI clients: each reaches the mock on
/// `path(route)` with `query`, the deployment as the model and the key as `api-key` (or a
/// bearer token with `entra`), never both.
async fn openai_clients_reach(extra: &str, path: fn(&str) -> String, query: Option<&str>) {
    let mock = recording_mock().await;
    let gw = TestGateway::start(&azure(&mock.base_url(), extra)).await;
    let entra = extra.contains("entra");
    let mut n = 0;
    for route in [CHAT, RESPONSES] {
        for stream in [false, true] {
            // A client's query is never passed to Azure: the api-version is the operator's.
            let req = post(
                &format!("{route}?api-version=1999-01-01"),
                body(route, "az", stream),
            );
            let r = gw.send(req.bearer(CLIENT_KEY)).await;
            assert_eq!(r.status, StatusCode::OK, "{route} {stream}: {}", r.text());
            if stream {
                assert!(!sse_data(&r.body).is_empty(), "{route}");
            } else {
                assert!(r.json()["usage"].is_object(), "{route}: {}", r.text());
            }
            n += 1;
            let seen = mock.recorded();
            assert_eq!(seen.len(), n);
            let up = &seen[n - 1];
            assert_eq!(up.path, path(route), "{route}");
            assert_eq!(up.query.as_deref(), query, "{route}");
            assert_eq!(body_of(up)["model"], "dep-1", "{route}");
            if entra {
                let want = format!("Bearer {UPSTREAM_KEY}");
                assert_eq!(header(up, "authorization"), Some(want.as_str()));
                assert_eq!(header(up, "api-key"), None);
            } else {
                assert_eq!(header(up, "api-key"), Some(UPSTREAM_KEY));
                assert_eq!(
                    header(up, "authorization"),
                    None,
                    "no bearer leaks to Azure"
                );
            }
        }
    }
    let lines = gw
        .wait_logs("answered", 4, |l| l["model"] == "az" && l["status"] == 200)
        .await;
    for l in &lines {
        assert_eq!(l["provider"], "azure-openai", "{l}");
        assert!(l.get("translated").is_none(), "passthrough: {l}");
    }
    gw.wait_metric(
        "gateway_upstream_responses_total{model=\"az\",provider=\"azure-openai\"}",
        4.0,
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dated_api_version_uses_the_deployments_url_and_api_key() {
    openai_clients_reach(
        "deployment = \"dep-1\"\napi_version = \"2025-04-01-preview\"",
        |route| match route {
            CHAT => "/openai/deployments/dep-1/chat/completions".into(),
            _ => "/openai/responses".into(),
        },
        Some("api-version=2025-04-01-preview"),
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn v1_api_with_an_entra_token() {
    openai_clients_reach(
        "deployment = \"dep-1\"\napi_version = \"v1\"\nauth = \"entra\"",
        |route| format!("/openai{route}"),
        None,
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_deployment_defaults_to_the_model() {
    let mock = recording_mock().await;
    let gw = TestGateway::start(&azure(&mock.base_url(), "api_version = \"2024-10-21\"")).await;
    let r = gw
        .send(post(CHAT, body(CHAT, "az", false)).bearer(CLIENT_KEY))
        .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.text());
    let up = &mock.recorded()[0];
    assert_eq!(up.path, "/openai/deployments/gpt-4o-mini/chat/completions");
    assert_eq!(up.query.as_deref(), Some("api-version=2024-10-21"));
    assert_eq!(body_of(up)["model"], "gpt-4o-mini");
}

fn messages_with_tools(stream: bool) -> String {
    json!({
        "model": "az",
        "max_tokens": 64,
        "stream": stream,
        "messages": [{"role": "user", "content": "Weather in Paris?"}],
        "tools": [{
            "name": "get_weather",
            "description": "Current weather",
            "input_schema": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}
        }]
    })
    .to_string()
}

// An Anthropic client (Claude Code) on an Azure model: translated to chat on the
// deployments URL, tools both ways, streaming and not.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn anthropic_client_with_tools_on_azure() {
    let mock = recording_mock().await;
    let extra = "deployment = \"dep-1\"\napi_version = \"2024-10-21\"";
    let gw = TestGateway::start(&azure(&mock.base_url(), extra)).await;
    for (i, stream) in [false, true].into_iter().enumerate() {
        let req = post(MESSAGES, messages_with_tools(stream))
            .x_api_key(CLIENT_KEY)
            .header("anthropic-version", "2023-06-01");
        let r = gw.send(req).await;
        assert_eq!(r.status, StatusCode::OK, "{}", r.text());
        if stream {
            let events = sse_data(&r.body);
            let joined = events.join("\n");
            assert!(joined.contains("\"tool_use\""), "{joined}");
            assert!(joined.contains("get_weather"), "{joined}");
            assert!(joined.contains("message_stop"), "{joined}");
        } else {
            let v = r.json();
            assert_eq!(v["type"], "message", "{v}");
            assert_eq!(v["stop_reason"], "tool_use", "{v}");
            let call = v["content"]
                .as_array()
                .unwrap()
                .iter()
                .find(|b| b["type"] == "tool_use")
                .unwrap_or_else(|| panic!("no tool_use: {v}"));
            assert_eq!(call["name"], "get_weather");
            assert_eq!(call["input"]["city"], "mock city");
        }
        let up = &mock.recorded()[i];
        assert_eq!(up.path, "/openai/deployments/dep-1/chat/completions");
        assert_eq!(up.query.as_deref(), Some("api-version=2024-10-21"));
        assert_eq!(header(up, "api-key"), Some(UPSTREAM_KEY));
        assert_eq!(header(up, "authorization"), None);
        assert_eq!(header(up, "anthropic-version"), None);
        let sent = body_of(up);
        assert_eq!(sent["model"], "dep-1");
        assert_eq!(
            sent["tools"][0]["function"]["name"], "get_weather",
            "{sent}"
        );
        // Azure runs OpenAI's models: the newer token field, as for `openai`.
        assert_eq!(sent["max_completion_tokens"], 64, "{sent}");
        assert!(sent.get("max_tokens").is_none(), "{sent}");
    }
    let line = gw
        .wait_log("the translated line", |l| l["route"] == MESSAGES)
        .await;
    assert_eq!(line["provider"], "azure-openai", "{line}");
    assert_eq!(line["translated"], "messages->chat", "{line}");
}

// The Azure key echoed by the upstream never reaches the client or the gateway's output.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_azure_key_is_redacted() {
    let echo = format!(
        r#"{{"error":{{"code":"401","message":"Access denied: key {UPSTREAM_KEY} is invalid"}}}}"#
    );
    let up = FnUpstream::start(move |mut s, _| {
        let bytes = http_response(
            "401 Unauthorized",
            &[("content-type", "application/json")],
            echo.as_bytes(),
        );
        async move {
            let _ = s.write_all(&bytes).await;
            let _ = s.shutdown().await;
        }
    })
    .await;
    let gw = TestGateway::start(&azure(&up.base_url(), "api_version = \"v1\"")).await;
    for (route, req) in [
        (CHAT, post(CHAT, body(CHAT, "az", false)).bearer(CLIENT_KEY)),
        (
            MESSAGES,
            post(MESSAGES, body(MESSAGES, "az", false)).x_api_key(CLIENT_KEY),
        ),
    ] {
        let r = gw.send(req).await;
        assert_eq!(r.status, StatusCode::UNAUTHORIZED, "{route}");
        let text = String::from_utf8_lossy(&r.body).to_string();
        assert!(!text.contains(UPSTREAM_KEY), "{route}: {text}");
    }
    assert!(up.heads().iter().all(|h| h.contains("api-key:")));
    gw.wait_logs("refused", 2, |l| l["status"] == 401).await;
    for line in gw.stdout_lines().iter().chain(&gw.stderr_lines()) {
        assert!(!line.contains(UPSTREAM_KEY), "{line}");
    }
}

/// `--check-config` on `config`: whether it passed, and its stderr.
fn check(config: &str) -> (bool, String) {
    let (ok, _, stderr) = check_config("azure.toml", config, &[(UPSTREAM_KEY_ENV, UPSTREAM_KEY)]);
    (ok, stderr)
}

#[test]
fn config_errors_name_the_field() {
    let base = "https://res.openai.azure.com";
    let (ok, stderr) = check(&azure(base, "deployment = \"d\""));
    assert!(!ok);
    assert!(
        stderr.contains("models[0].targets[0].api_version") && stderr.contains("required"),
        "{stderr}"
    );
    for (extra, key) in [
        ("api_version = \"v1\"\ndeployment = \"a/b\"", "deployment"),
        ("api_version = \"2024-10-21&x=1\"", "api_version"),
        // A parse error: it names the values, not the key.
        ("api_version = \"v1\"\nauth = \"token\"", "`entra`"),
    ] {
        let (ok, stderr) = check(&azure(base, extra));
        assert!(!ok, "{extra}");
        assert!(stderr.contains(key), "{extra}: {stderr}");
        assert!(!stderr.contains(UPSTREAM_KEY), "{stderr}");
    }
    // The Azure keys mean nothing to another provider: refused, not ignored.
    let other = format!(
        "{}api_version = \"v1\"\n",
        model("gpt", &[("openai", "https://api.openai.com")])
    );
    let (ok, stderr) = check(&other);
    assert!(!ok);
    assert!(
        stderr.contains("models[0].targets[0].api_version") && stderr.contains("azure-openai"),
        "{stderr}"
    );
    let (ok, stderr) = check(&azure(
        base,
        "api_version = \"2024-10-21\"\nauth = \"entra\"",
    ));
    assert!(ok, "{stderr}");
}
