//! Rate limits shared across replicas on a real Redis (`[rate_limits] backend = "redis"`):
//! several gateway processes grant one budget between them, refuse the same way as one
//! process does, and do what `when_down` says while Redis is killed, paused or restarted.

use std::time::{Duration, Instant};

use http::StatusCode;

use crate::support::*;
use trainer::redis_server::RedisServer;

/// `[rate_limits]` on `redis`; `extra` goes into `[rate_limits.redis]`. A Redis wait of 1 s:
/// long enough that a loaded machine never turns a slow answer into a degraded decision, short
/// enough to see a paused Redis decided by `when_down` well within the tests' bounds.
fn shared(redis: &RedisServer, extra: &str) -> String {
    format!(
        "[rate_limits]\nbackend = \"redis\"\n\n[rate_limits.redis]\nurl = \"{}\"\ntimeout_ms = 1000\nrecheck_ms = 200\n{extra}\n\n",
        redis.url()
    )
}

/// One key, `team`, with `limit`, over [`two_models`].
fn team(limit: &str, base: &str) -> String {
    format!(
        "[[keys]]\nname = \"team\"\nkey = \"gw-team\"\nrate_limit = {{ {limit} }}\n\n{}",
        two_models(base)
    )
}

async fn start_replicas(config: &str, n: usize) -> Vec<TestGateway> {
    let mut v = Vec::new();
    for _ in 0..n {
        v.push(TestGateway::start(config).await);
    }
    v
}

/// A request of the `team` key: chat (non-streaming) or messages (streaming) by `i`.
fn team_request(i: usize) -> Req {
    if i.is_multiple_of(2) {
        post(CHAT, body(CHAT, "gpt", false)).bearer("gw-team")
    } else {
        post(MESSAGES, body(MESSAGES, "claude", true)).x_api_key("gw-team")
    }
}

/// The most a bucket of `per_minute` refills in `elapsed`.
fn refill(per_minute: f64, elapsed: Duration) -> f64 {
    per_minute * elapsed.as_secs_f64() / 60.0
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn replicas_share_one_request_budget() {
    let Some(redis) = RedisServer::start().await else {
        return;
    };
    let mock = MockUpstream::start(MockConfig::default()).await.unwrap();
    let config = format!(
        "{}{}",
        shared(&redis, ""),
        team("requests_per_minute = 10", &mock.base_url())
    );
    let gws = start_replicas(&config, 3).await;

    // 30 at once, 10 per replica: one process alone would admit all of them.
    let t0 = Instant::now();
    let mut tasks = Vec::new();
    for i in 0..30 {
        let addr = gws[i % 3].addr;
        tasks.push(tokio::spawn(async move {
            (i, send(addr, team_request(i)).await)
        }));
    }
    let mut ok = 0;
    for t in tasks {
        let (i, r) = t.await.unwrap();
        match r.status {
            StatusCode::OK => ok += 1,
            StatusCode::TOO_MANY_REQUESTS => {
                if i.is_multiple_of(2) {
                    assert_eq!(
                        assert_openai_error(&r, 429)["error"]["code"],
                        "rate_limit_exceeded"
                    );
                } else {
                    assert_eq!(assert_anthropic_error(&r, 429), "rate_limit_error");
                }
                assert_eq!(r.header("x-ratelimit-limit-requests"), Some("10"));
                assert_eq!(r.header("x-ratelimit-remaining-requests"), Some("0"));
                let retry: u64 = r.header("retry-after").unwrap().parse().unwrap();
                assert!((1..=6).contains(&retry), "Retry-After {retry}");
            }
            s => panic!("unexpected {s}: {:?}", r.text()),
        }
    }
    let allowed = 10.0 + refill(10.0, t0.elapsed()).floor();
    assert!(
        ok >= 10 && ok as f64 <= allowed,
        "{ok} admitted across 3 replicas, limit 10 (+{allowed})"
    );
    // Each replica counts its own refusals; together they are the rest.
    let mut refused = 0.0;
    for gw in &gws {
        let text = gw.metrics().await;
        for m in ["gpt", "claude"] {
            refused += metric(
                &text,
                &format!("gateway_rate_limited_total{{model=\"{m}\",scope=\"key\"}}"),
            )
            .unwrap();
        }
        assert_eq!(metric(&text, "gateway_ratelimit_backend_up"), Some(1.0));
        assert_eq!(metric(&text, "gateway_ratelimit_degraded_total"), Some(0.0));
    }
    assert_eq!(refused as usize, 30 - ok);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn replicas_share_one_token_budget() {
    let Some(redis) = RedisServer::start().await else {
        return;
    };
    let cfg = MockConfig {
        chunks: 1000,
        ..MockConfig::default()
    };
    let (input, output) = expected_usage(&cfg);
    let per_request = input + output;
    let mock = MockUpstream::start(cfg).await.unwrap();
    let config = format!(
        "{}{}",
        shared(&redis, ""),
        team("tokens_per_minute = 5000", &mock.base_url())
    );
    let gws = start_replicas(&config, 3).await;

    // One after another, round the replicas: the chat streams do not ask for usage (the
    // gateway asks for them). Each replica alone would admit its five.
    let t0 = Instant::now();
    let mut admitted = 0u64;
    let mut refused = 0;
    for i in 0..15usize {
        let req = if i.is_multiple_of(2) {
            post(
                CHAT,
                r#"{"model":"gpt","messages":[{"role":"user","content":"Say hi"}],"stream":true}"#,
            )
            .bearer("gw-team")
        } else {
            post(MESSAGES, body(MESSAGES, "claude", false)).x_api_key("gw-team")
        };
        let r = gws[i % 3].send(req).await;
        match r.status {
            StatusCode::OK => admitted += 1,
            StatusCode::TOO_MANY_REQUESTS => {
                refused += 1;
                assert_eq!(r.header("x-ratelimit-limit-tokens"), Some("5000"));
                assert_eq!(r.header("x-ratelimit-remaining-tokens"), Some("0"));
            }
            s => panic!("unexpected {s}: {:?}", r.text()),
        }
    }
    // Admitted while the shared bucket was out of debt: 5 of 1,017 tokens, plus the one whose
    // charge may still have been on its way, plus what refilled meanwhile.
    let bound = 5 + 1 + (refill(5000.0, t0.elapsed()) / per_request as f64).ceil() as u64;
    assert!(
        admitted >= 5 && admitted <= bound,
        "{admitted} admitted (bound {bound}), {refused} refused"
    );
    // The figures the limiter charged are the upstream's, on every replica.
    let mut charged = 0.0;
    for gw in &gws {
        let text = gw.metrics().await;
        for m in ["gpt", "claude"] {
            for d in ["input", "output"] {
                charged += metric(&text, &tokens_series(m, d)).unwrap();
            }
        }
    }
    assert_eq!(charged as u64, admitted * per_request);
}

/// Sends `team` requests to `gw` until its Redis answers again, or fails after PATIENCE.
async fn wait_shared(gw: &TestGateway) {
    let deadline = Instant::now() + PATIENCE;
    loop {
        let _ = gw.send(team_request(0)).await;
        if metric(&gw.metrics().await, "gateway_ratelimit_backend_up") == Some(1.0) {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "Redis never answered again: {:?}",
            gw.stderr_lines()
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Sends requests to `gw` until one is refused; returns how many were admitted (at most `max`).
async fn admitted_until_429(gw: &TestGateway, max: usize) -> usize {
    for n in 0..=max {
        let r = gw.send(team_request(n)).await;
        match r.status {
            StatusCode::OK => {}
            StatusCode::TOO_MANY_REQUESTS => return n,
            s => panic!("unexpected {s}: {:?}", r.text()),
        }
    }
    panic!("{} requests admitted, none refused", max + 1)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn redis_down_closed_answers_503_in_each_dialect_then_recovers() {
    let Some(mut redis) = RedisServer::start().await else {
        return;
    };
    let mock = MockUpstream::start(MockConfig::default()).await.unwrap();
    let config = format!(
        "{}{}",
        shared(&redis, "when_down = \"closed\""),
        team("requests_per_minute = 1000", &mock.base_url())
    );
    let gws = start_replicas(&config, 2).await;
    assert_eq!(gws[0].send(team_request(0)).await.status, StatusCode::OK);

    // Killed: refused at once, in the caller's envelope, with a retry hint.
    redis.kill().await;
    for (i, gw) in gws.iter().enumerate() {
        for n in 0..2 {
            let t = Instant::now();
            let r = gw.send(team_request(n)).await;
            // Never a hang: the Redis wait is 1 s; the bound is loose for a loaded machine.
            assert!(t.elapsed() < Duration::from_secs(5), "{:?}", t.elapsed());
            if n == 0 {
                assert_eq!(assert_openai_error(&r, 503)["error"]["code"], "overloaded");
            } else {
                assert_eq!(assert_anthropic_error(&r, 503), "overloaded_error");
            }
            assert_eq!(r.header("retry-after"), Some("1"), "replica {i}");
        }
        let text = gw.metrics().await;
        assert_eq!(metric(&text, "gateway_ratelimit_backend_up"), Some(0.0));
        assert!(
            metric(&text, "gateway_ratelimit_degraded_total").unwrap() >= 2.0,
            "{text}"
        );
        assert!(metric(&text, "gateway_ratelimit_backend_errors_total").unwrap() >= 1.0);
        let log = gw.stderr_lines().join("\n");
        assert!(log.contains("rate limits: Redis unavailable"), "{log}");
        assert!(log.contains("refused with 503"), "{log}");
        let line = gw
            .wait_log("refused with 503", |l| l["status"] == 503)
            .await;
        assert_eq!(line["error"], "overloaded", "replica {i}: {line}");
        assert!(
            !log.contains(&redis.url()),
            "the URL is never logged: {log}"
        );
    }
    assert_eq!(
        mock.request_count(),
        1,
        "nothing refused reached the upstream"
    );

    // Restarted (empty): both replicas reconnect and are admitted again.
    redis.restart().await;
    for gw in &gws {
        wait_shared(gw).await;
        assert_eq!(gw.send(team_request(1)).await.status, StatusCode::OK);
        assert!(gw
            .stderr_lines()
            .iter()
            .any(|l| l.contains("Redis answers again")));
    }

    // Paused (connections open, no answer): each request still ends within the bound.
    redis.pause();
    let t = Instant::now();
    let r = gws[1].send(team_request(0)).await;
    assert!(t.elapsed() < Duration::from_secs(5), "{:?}", t.elapsed());
    assert_openai_error(&r, 503);
    redis.resume();
    wait_shared(&gws[1]).await;
    assert_eq!(gws[1].send(team_request(0)).await.status, StatusCode::OK);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn redis_down_memory_limits_each_replica_alone_then_shares_again() {
    let Some(mut redis) = RedisServer::start().await else {
        return;
    };
    let mock = MockUpstream::start(MockConfig::default()).await.unwrap();
    // `when_down` defaults to "memory".
    let config = format!(
        "{}{}",
        shared(&redis, ""),
        team("requests_per_minute = 4", &mock.base_url())
    );
    let gws = start_replicas(&config, 2).await;
    // Shared: four between the two.
    for i in 0..4 {
        assert_eq!(
            gws[i % 2].send(team_request(i)).await.status,
            StatusCode::OK
        );
    }
    assert_eq!(
        gws[0].send(team_request(0)).await.status,
        StatusCode::TOO_MANY_REQUESTS
    );
    assert_eq!(
        gws[1].send(team_request(1)).await.status,
        StatusCode::TOO_MANY_REQUESTS
    );

    // Down: each replica's own bucket, four each (with its 429 and headers past that).
    redis.kill().await;
    for gw in &gws {
        assert_eq!(admitted_until_429(gw, 8).await, 4);
        let r = gw.send(team_request(0)).await;
        assert_openai_error(&r, 429);
        assert_eq!(r.header("x-ratelimit-limit-requests"), Some("4"));
        let text = gw.metrics().await;
        assert_eq!(metric(&text, "gateway_ratelimit_backend_up"), Some(0.0));
        assert!(metric(&text, "gateway_ratelimit_degraded_total").unwrap() >= 5.0);
        assert!(gw
            .stderr_lines()
            .iter()
            .any(|l| l.contains("limited by this process alone")));
    }

    // Back (empty): shared again, four between the two (less the probes that found it).
    redis.restart().await;
    wait_shared(&gws[0]).await;
    wait_shared(&gws[1]).await;
    let mut ok = 0;
    for i in 0..8 {
        if gws[i % 2].send(team_request(i)).await.status == StatusCode::OK {
            ok += 1;
        }
    }
    assert!(
        (2..=4).contains(&ok),
        "{ok} admitted after the restart, limit 4"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn redis_down_open_admits_then_limits_again() {
    let Some(mut redis) = RedisServer::start().await else {
        return;
    };
    let mock = MockUpstream::start(MockConfig::default()).await.unwrap();
    let config = format!(
        "{}{}",
        shared(&redis, "when_down = \"open\""),
        team("requests_per_minute = 2", &mock.base_url())
    );
    let gw = TestGateway::start(&config).await;
    assert_eq!(admitted_until_429(&gw, 4).await, 2);

    redis.kill().await;
    for i in 0..6 {
        assert_eq!(
            gw.send(team_request(i)).await.status,
            StatusCode::OK,
            "open while Redis is down"
        );
    }
    let text = gw.metrics().await;
    assert_eq!(metric(&text, "gateway_ratelimit_degraded_total"), Some(6.0));
    assert!(gw
        .stderr_lines()
        .iter()
        .any(|l| l.contains("admitted without limits")));

    redis.restart().await;
    wait_shared(&gw).await;
    assert!(admitted_until_429(&gw, 4).await <= 2);
}
