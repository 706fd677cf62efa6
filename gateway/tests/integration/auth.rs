//! Gateway API keys: both headers, rejections in the route's envelope, allow-lists,
//! `/v1/models` per key, and credentials never forwarded upstream.

use crate::support::*;
use http::StatusCode;

const ROUTES: [&str; 3] = [CHAT, MESSAGES, RESPONSES];

/// team-a: every model; team-b: only `claude`; env-key: its secret is in the environment.
async fn setup() -> (MockUpstream, TestGateway) {
    let mock = MockUpstream::start(MockConfig {
        record: true,
        ..MockConfig::default()
    })
    .await
    .unwrap();
    let base = mock.base_url();
    let config = format!(
        r#"
[[keys]]
name = "team-a"
key = "gw-key-a"

[[keys]]
name = "team-b"
key = "gw-key-b"
models = ["claude"]

[[keys]]
name = "env-key"
key_env = "{UPSTREAM_KEY_ENV}"
models = ["gpt"]

{}
{}
"#,
        two_models(&base),
        model("claude-2", &[("anthropic", &base)]),
    );
    let gw = TestGateway::start(&config).await;
    (mock, gw)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn missing_and_invalid_keys_get_401_in_the_route_envelope() {
    let (mock, gw) = setup().await;
    for path in ROUTES {
        let b = body(path, model_for(path), false);
        let cases = [
            ("no key", post(path, b.clone())),
            ("bad bearer", post(path, b.clone()).bearer("gw-key-x")),
            ("bad x-api-key", post(path, b.clone()).x_api_key("gw-key-")),
            (
                "prefix of a key",
                post(path, b.clone()).x_api_key("gw-key-a2"),
            ),
            (
                "empty bearer",
                post(path, b.clone()).header("authorization", "Bearer "),
            ),
            (
                "basic auth",
                post(path, b.clone()).header("authorization", "Basic Z3c6a2V5"),
            ),
        ];
        for (what, req) in cases {
            let r = gw.send(req).await;
            assert_error(path, &r, 401);
            if path == MESSAGES {
                assert_eq!(
                    assert_anthropic_error(&r, 401),
                    "authentication_error",
                    "{what}"
                );
            } else {
                let v = assert_openai_error(&r, 401);
                assert_eq!(v["error"]["code"], "invalid_api_key", "{what}");
            }
        }
    }
    assert_eq!(
        mock.request_count(),
        0,
        "rejected requests must not reach the upstream"
    );
    let text = gw.metrics().await;
    assert_eq!(requests_total(&text, CHAT, "", 401), 6.0, "{text}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn valid_keys_work_with_both_headers_on_every_route() {
    let (mock, gw) = setup().await;
    for path in ROUTES {
        for stream in [false, true] {
            let b = body(path, model_for(path), stream);
            let r = gw.send(post(path, b.clone()).bearer("gw-key-a")).await;
            assert_eq!(r.status, StatusCode::OK, "{path} bearer");
            let r = gw.send(post(path, b.clone()).x_api_key("gw-key-a")).await;
            assert_eq!(r.status, StatusCode::OK, "{path} x-api-key");
            // Scheme is case-insensitive.
            let r = gw
                .send(post(path, b).header("authorization", "bearer gw-key-a"))
                .await;
            assert_eq!(r.status, StatusCode::OK, "{path} lowercase bearer");
        }
    }
    // The client's credentials never reach the upstream; the upstream key does.
    for rec in mock.recorded() {
        let auth = rec
            .headers
            .get("authorization")
            .map(|v| v.to_str().unwrap());
        let xkey = rec.headers.get("x-api-key").map(|v| v.to_str().unwrap());
        for v in [auth, xkey].into_iter().flatten() {
            assert!(
                !v.contains("gw-key-a"),
                "{} forwarded the client key: {v}",
                rec.path
            );
        }
        if rec.path == MESSAGES {
            assert_eq!(xkey, Some(UPSTREAM_KEY));
            assert_eq!(auth, None);
        } else {
            assert_eq!(auth, Some(format!("Bearer {UPSTREAM_KEY}").as_str()));
            assert_eq!(xkey, None);
        }
    }
    assert_eq!(mock.recorded().len(), 18);
    // The key's name is in the access log, never its secret.
    let line = gw.wait_log("for team-a", |l| l["key"] == "team-a").await;
    for l in gw.stdout_lines() {
        assert!(!l.contains("gw-key-a") && !l.contains(UPSTREAM_KEY), "{l}");
    }
    assert_eq!(line["status"], 200);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn key_from_environment_works() {
    let (_mock, gw) = setup().await;
    let r = gw
        .send(post(CHAT, body(CHAT, "gpt", false)).bearer(UPSTREAM_KEY))
        .await;
    assert_eq!(r.status, StatusCode::OK);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn allow_list_gives_403_in_the_route_envelope() {
    let (mock, gw) = setup().await;
    // team-b may use `claude` only.
    let r = gw
        .send(post(MESSAGES, body(MESSAGES, "claude", false)).x_api_key("gw-key-b"))
        .await;
    assert_eq!(r.status, StatusCode::OK);
    let r = gw
        .send(post(MESSAGES, body(MESSAGES, "claude-2", false)).x_api_key("gw-key-b"))
        .await;
    assert_eq!(assert_anthropic_error(&r, 403), "permission_error");
    for path in [CHAT, RESPONSES] {
        for stream in [false, true] {
            let r = gw
                .send(post(path, body(path, "gpt", stream)).bearer("gw-key-b"))
                .await;
            let v = assert_openai_error(&r, 403);
            assert!(
                v["error"]["message"].as_str().unwrap().contains("gpt"),
                "{v}"
            );
        }
    }
    assert_eq!(mock.request_count(), 1);
    let text = gw.metrics().await;
    assert_eq!(
        requests_total(&text, MESSAGES, "claude-2", 403),
        1.0,
        "{text}"
    );
    assert_eq!(requests_total(&text, CHAT, "gpt", 403), 2.0, "{text}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn models_list_is_per_key() {
    let (_mock, gw) = setup().await;
    let ids = |r: &Reply| -> Vec<String> {
        assert_eq!(r.status, StatusCode::OK, "{:?}", r.body);
        let v = r.json();
        assert_eq!(v["object"], "list");
        v["data"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| {
                assert_eq!(m["object"], "model");
                m["id"].as_str().unwrap().to_owned()
            })
            .collect()
    };
    let a = gw.send(get("/v1/models").bearer("gw-key-a")).await;
    assert_eq!(ids(&a), ["gpt", "claude", "claude-2"]);
    let b = gw.send(get("/v1/models").x_api_key("gw-key-b")).await;
    assert_eq!(ids(&b), ["claude"]);
    let e = gw.send(get("/v1/models").bearer(UPSTREAM_KEY)).await;
    assert_eq!(ids(&e), ["gpt"]);
    assert_openai_error(&gw.send(get("/v1/models")).await, 401);
    assert_openai_error(&gw.send(get("/v1/models").bearer("nope")).await, 401);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn open_gateway_lists_every_model_and_needs_no_key() {
    let mock = MockUpstream::start(MockConfig {
        record: true,
        ..MockConfig::default()
    })
    .await
    .unwrap();
    let gw = TestGateway::start(&two_models(&mock.base_url())).await;
    let r = gw.send(get("/v1/models")).await;
    assert_eq!(r.status, StatusCode::OK);
    let v = r.json();
    let ids: Vec<_> = v["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["id"].clone())
        .collect();
    assert_eq!(ids, ["gpt", "claude"]);
    for path in ROUTES {
        // Any key (or none) is fine, and is still not forwarded.
        let r = gw
            .send(post(path, body(path, model_for(path), false)).bearer("whatever"))
            .await;
        assert_eq!(r.status, StatusCode::OK);
        let rec = mock.recorded().pop().unwrap();
        let auth = rec
            .headers
            .get("authorization")
            .map(|v| v.to_str().unwrap());
        assert_ne!(auth, Some("Bearer whatever"));
    }
}
