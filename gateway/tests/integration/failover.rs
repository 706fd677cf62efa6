//! Failover: connect failures and 5xx before the first byte move to the next target; other
//! answers (and the last target's) pass through.

use crate::support::*;
use http::StatusCode;

const ROUTES: [&str; 3] = [CHAT, MESSAGES, RESPONSES];

fn provider(path: &str) -> &'static str {
    if path == MESSAGES {
        "anthropic"
    } else {
        "openai"
    }
}

/// `gpt` and `claude`, each with the given targets (the provider follows the model).
fn config(targets: &[&str]) -> String {
    let t = |p: &'static str| targets.iter().map(move |b| (p, *b)).collect::<Vec<_>>();
    format!(
        "{}{}",
        model("gpt", &t("openai")),
        model("claude", &t("anthropic"))
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn closed_port_fails_over_to_the_second_target() {
    let mock = MockUpstream::start(MockConfig::default()).await.unwrap();
    let closed = ClosedPort::new();
    let gw = TestGateway::start(&config(&[closed.url(), &mock.base_url()])).await;
    for path in ROUTES {
        for stream in [false, true] {
            let b = body(path, model_for(path), stream);
            let r = gw.send(post(path, b.clone())).await;
            assert_eq!(r.status, StatusCode::OK, "{path}: {:?}", r.body);
            assert!(r.body_error.is_none());
        }
    }
    assert_eq!(mock.request_count(), 6);
    let text = gw.metrics().await;
    assert_eq!(
        metric(&text, "gateway_upstream_failovers_total{model=\"gpt\"}"),
        Some(4.0),
        "{text}"
    );
    assert_eq!(
        metric(&text, "gateway_upstream_failovers_total{model=\"claude\"}"),
        Some(2.0)
    );
    assert_eq!(
        metric(
            &text,
            "gateway_upstream_errors_total{model=\"gpt\",kind=\"connect\"}"
        ),
        Some(4.0)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn failover_answer_is_the_second_targets_bytes() {
    let good = MockUpstream::start(MockConfig::default()).await.unwrap();
    let closed = ClosedPort::new();
    let gw = TestGateway::start(&config(&[closed.url(), &good.base_url()])).await;
    for path in ROUTES {
        let model = model_for(path);
        let r = gw.send(post(path, body(path, model, true))).await;
        let d = direct(&good, path, &body(path, &format!("up-{model}"), true)).await;
        assert_eq!(r.text(), d.text(), "{path}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn upstream_503_fails_over_to_the_second_target() {
    let failing = MockUpstream::start(MockConfig {
        fail_status: Some(503),
        ..MockConfig::default()
    })
    .await
    .unwrap();
    let good = MockUpstream::start(MockConfig {
        record: true,
        ..MockConfig::default()
    })
    .await
    .unwrap();
    let gw = TestGateway::start(&config(&[&failing.base_url(), &good.base_url()])).await;
    for path in ROUTES {
        for stream in [false, true] {
            let model = model_for(path);
            let b = body(path, model, stream);
            let r = gw.send(post(path, b)).await;
            assert_eq!(r.status, StatusCode::OK, "{path}");
            let d = direct(&good, path, &body(path, &format!("up-{model}"), stream)).await;
            assert_eq!(r.text(), d.text(), "{path} stream={stream}");
            // The second target got the same rewritten body and the upstream key.
            let rec = good.recorded();
            let rec = rec.iter().rev().nth(1).unwrap();
            assert_eq!(rec.path, path);
            let key_header = if provider(path) == "anthropic" {
                "x-api-key"
            } else {
                "authorization"
            };
            assert!(rec.headers[key_header]
                .to_str()
                .unwrap()
                .contains(UPSTREAM_KEY));
        }
    }
    assert_eq!(failing.request_count(), 6);
    let text = gw.metrics().await;
    assert_eq!(
        metric(&text, "gateway_upstream_failovers_total{model=\"gpt\"}"),
        Some(4.0)
    );
    assert_eq!(requests_total(&text, CHAT, "gpt", 200), 2.0);
    assert_eq!(requests_total(&text, CHAT, "gpt", 503), 0.0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn last_targets_5xx_passes_through_in_its_envelope() {
    let failing = MockUpstream::start(MockConfig {
        fail_status: Some(503),
        ..MockConfig::default()
    })
    .await
    .unwrap();
    let closed = ClosedPort::new();
    let gw = TestGateway::start(&config(&[closed.url(), &failing.base_url()])).await;
    for path in ROUTES {
        let r = gw
            .send(post(path, body(path, model_for(path), false)))
            .await;
        assert_error(path, &r, 503);
        assert!(r.text().contains("mock upstream failure"), "{}", r.text());
    }
    assert_eq!(failing.request_count(), 3);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn client_errors_do_not_fail_over() {
    for status in [400u16, 429] {
        let first = MockUpstream::start(MockConfig {
            fail_status: Some(status),
            ..MockConfig::default()
        })
        .await
        .unwrap();
        let second = MockUpstream::start(MockConfig::default()).await.unwrap();
        let gw = TestGateway::start(&config(&[&first.base_url(), &second.base_url()])).await;
        for path in ROUTES {
            let r = gw
                .send(post(path, body(path, model_for(path), false)))
                .await;
            assert_error(path, &r, status);
            if status == 429 {
                // The upstream's Retry-After comes back.
                assert_eq!(r.header("retry-after"), Some("1"));
            }
        }
        assert_eq!(first.request_count(), 3);
        assert_eq!(second.request_count(), 0, "a {status} must not fail over");
    }
}
