//! No panic on any input: raw garbage, huge and odd headers, non-UTF-8 bodies, slow
//! clients. After each, the gateway still serves.

use std::time::Duration;

use crate::support::*;
use http::StatusCode;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

async fn setup(extra: &str) -> (MockUpstream, TestGateway) {
    let mock = MockUpstream::start(MockConfig::default()).await.unwrap();
    let config = format!(
        "{extra}\n[[keys]]\nname = \"a\"\nkey = \"gw-key\"\n{}",
        two_models(&mock.base_url())
    );
    let gw = TestGateway::start(&config).await;
    (mock, gw)
}

/// Writes `bytes` on a fresh connection, half-closes, and reads whatever comes back.
async fn raw(addr: std::net::SocketAddr, bytes: &[u8]) -> Vec<u8> {
    let mut s = tokio::net::TcpStream::connect(addr).await.unwrap();
    // The gateway may answer and close before reading everything: ignore write errors.
    let _ = s.write_all(bytes).await;
    let _ = s.shutdown().await;
    let mut out = Vec::new();
    let _ = tokio::time::timeout(PATIENCE, s.read_to_end(&mut out)).await;
    out
}

async fn assert_healthy(gw: &mut TestGateway) {
    assert!(gw.is_running(), "the gateway died: {:?}", gw.stderr_lines());
    let r = gw
        .send(post(CHAT, body(CHAT, "gpt", false)).bearer("gw-key"))
        .await;
    assert_eq!(r.status, StatusCode::OK);
    let stderr = gw.stderr_lines().join("\n");
    assert!(!stderr.contains("panicked"), "{stderr}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn raw_tcp_garbage() {
    let (_mock, mut gw) = setup("").await;
    let mut inputs: Vec<Vec<u8>> = vec![
        b"\x00\x01\x02\x03\xff\xfe\xfd".to_vec(),
        b"GET\r\n\r\n".to_vec(),
        b"GET / HTTP/9.9\r\n\r\n".to_vec(),
        b"POST /v1/chat/completions HTTP/1.1\r\ncontent-length: -5\r\n\r\n".to_vec(),
        b"POST /v1/chat/completions HTTP/1.1\r\ncontent-length: 99999999999999999999999\r\n\r\n"
            .to_vec(),
        b"POST /v1/chat/completions HTTP/1.1\r\ntransfer-encoding: chunked\r\n\r\nzz\r\n".to_vec(),
        b"POST /v1/chat/completions HTTP/1.1\r\ncontent-length: 10\r\ntransfer-encoding: chunked\r\n\r\n".to_vec(),
        b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03".to_vec(), // a TLS ClientHello
        b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".to_vec(),             // HTTP/2 preface
        b"GET /\xff\xfe HTTP/1.1\r\nhost: x\r\n\r\n".to_vec(),
        b"GET /healthz HTTP/1.1\r\nhost: \xff\r\nx-api-key: \xc3\x28\r\n\r\n".to_vec(),
        // Body shorter than declared, then the client half-closes.
        b"POST /v1/messages HTTP/1.1\r\nhost: x\r\nx-api-key: gw-key\r\ncontent-length: 100\r\n\r\n{\"model\":"
            .to_vec(),
    ];
    // Deterministic pseudo-random bytes.
    let mut x: u32 = 0x9e37_79b9;
    for len in [1usize, 17, 300, 5000, 70_000] {
        let mut v = Vec::with_capacity(len);
        for _ in 0..len {
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            v.push(x as u8);
        }
        inputs.push(v);
    }
    for input in &inputs {
        let out = raw(gw.addr, input).await;
        if !out.is_empty() {
            let text = String::from_utf8_lossy(&out);
            assert!(text.starts_with("HTTP/1.1 "), "{text}");
            assert!(!text.starts_with("HTTP/1.1 5"), "a 5xx for garbage: {text}");
        }
        assert!(gw.is_running(), "died on {input:?}");
    }
    assert_healthy(&mut gw).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn huge_and_odd_headers() {
    let (_mock, mut gw) = setup("").await;
    let b = body(CHAT, "gpt", false);
    // One huge header, many headers, a huge URI.
    let huge = format!(
        "POST /v1/chat/completions HTTP/1.1\r\nhost: x\r\nx-big: {}\r\ncontent-length: {}\r\n\r\n{b}",
        "a".repeat(1 << 20),
        b.len()
    );
    let out = raw(gw.addr, huge.as_bytes()).await;
    let text = String::from_utf8_lossy(&out);
    assert!(out.is_empty() || text.starts_with("HTTP/1.1 4"), "{text}");
    let mut many = String::from("GET /healthz HTTP/1.1\r\nhost: x\r\n");
    for i in 0..500 {
        many.push_str(&format!("x-h{i}: v\r\n"));
    }
    many.push_str("\r\n");
    let out = raw(gw.addr, many.as_bytes()).await;
    let text = String::from_utf8_lossy(&out);
    assert!(out.is_empty() || text.starts_with("HTTP/1.1 4"), "{text}");
    let uri = format!("GET /{} HTTP/1.1\r\nhost: x\r\n\r\n", "u".repeat(200_000));
    let out = raw(gw.addr, uri.as_bytes()).await;
    let text = String::from_utf8_lossy(&out);
    assert!(out.is_empty() || text.starts_with("HTTP/1.1 4"), "{text}");

    // Odd but valid header values: non-UTF-8 keys and request ids.
    let r = gw
        .send(post(CHAT, b.clone()).header("x-api-key", b"gw-\xff\xfe".as_slice()))
        .await;
    assert_openai_error(&r, 401);
    let r = gw
        .send(post(CHAT, b.clone()).header("authorization", b"Bearer \xe2\x82".as_slice()))
        .await;
    assert_openai_error(&r, 401);
    let r = gw
        .send(
            post(CHAT, b.clone())
                .bearer("gw-key")
                .header("x-request-id", b"id-\xff\x80".as_slice()),
        )
        .await;
    assert_eq!(r.status, StatusCode::OK);
    let id = r.header("x-gateway-request-id").unwrap();
    assert!(!id.is_empty() && id.is_ascii());
    let long_id = "i".repeat(4000);
    let r = gw
        .send(
            post(CHAT, b.clone())
                .bearer("gw-key")
                .header("x-request-id", &long_id),
        )
        .await;
    assert_eq!(r.status, StatusCode::OK);
    assert_ne!(r.header("x-gateway-request-id"), Some(long_id.as_str()));
    // Duplicate auth headers.
    let r = gw
        .send(
            post(CHAT, b.clone())
                .bearer("nope")
                .bearer("gw-key")
                .x_api_key("gw-key"),
        )
        .await;
    assert!(r.status == StatusCode::OK || r.status == StatusCode::UNAUTHORIZED);
    assert_healthy(&mut gw).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn non_utf8_and_hostile_bodies() {
    let (_mock, mut gw) = setup("[server]\nmax_body_bytes = 65536\n").await;
    let bodies: Vec<Vec<u8>> = vec![
        b"\xff\xfe\xfd".to_vec(),
        b"{\"model\":\"gp\xfft\"}".to_vec(),
        b"{\"model\":\"\xc3\"}".to_vec(),
        b"{\"model\":\"gpt\",\"messages\":\"\xff\"}".to_vec(),
        b"{\"model\":\"gpt\",\"x\":\"\\ud800\"}".to_vec(),
        b"{\"model\":\"\\ud800\"}".to_vec(),
        b"{\"model\":\"gpt\"".to_vec(),
        b"{\"model\":null}".to_vec(),
        b"{\"model\":\"gpt\",\"stream\":null}".to_vec(),
        b"\xef\xbb\xbf{\"model\":\"gpt\"}".to_vec(), // a BOM
        format!("{}1{}", "[".repeat(10_000), "]".repeat(10_000)).into_bytes(),
        format!(
            "{{\"model\":\"gpt\",\"x\":{}1{}}}",
            "[".repeat(10_000),
            "]".repeat(10_000)
        )
        .into_bytes(),
        format!("{{\"model\":\"{}\"}}", "m".repeat(60_000)).into_bytes(),
    ];
    for path in [CHAT, MESSAGES, RESPONSES] {
        for b in &bodies {
            let r = gw.send(post(path, b.clone()).bearer("gw-key")).await;
            let s = r.status.as_u16();
            assert!(
                (200..500).contains(&s),
                "{path} {:?}: {s} {:?}",
                String::from_utf8_lossy(b),
                r.body
            );
            if s >= 400 {
                assert_error(path, &r, s);
            }
        }
    }
    assert_healthy(&mut gw).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn slow_client_headers_time_out() {
    let (_mock, mut gw) = setup("[server]\nheader_read_timeout_ms = 300\n").await;
    let mut s = tokio::net::TcpStream::connect(gw.addr).await.unwrap();
    s.write_all(b"POST /v1/chat/completions HTTP/1.1\r\nhost: x\r\n")
        .await
        .unwrap();
    // The gateway gives up on the head and closes (perhaps after a 408).
    let mut out = Vec::new();
    let read = tokio::time::timeout(PATIENCE, s.read_to_end(&mut out)).await;
    assert!(read.is_ok(), "a half-sent head held the connection open");
    let text = String::from_utf8_lossy(&out);
    assert!(out.is_empty() || text.starts_with("HTTP/1.1 408"), "{text}");
    // Idle connections that never send anything are closed too.
    let mut idle = tokio::net::TcpStream::connect(gw.addr).await.unwrap();
    let mut buf = [0u8; 64];
    let r = tokio::time::timeout(PATIENCE, idle.read(&mut buf)).await;
    assert!(r.is_ok(), "an idle connection was held open");
    tokio::time::sleep(Duration::from_millis(10)).await;
    assert_healthy(&mut gw).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn invalid_utf8_anywhere_in_the_body_is_400() {
    let (mock, gw) = setup("").await;
    for path in [CHAT, RESPONSES] {
        let b = b"{\"model\":\"gpt\",\"input\":\"caf\xff\",\"messages\":[]}".to_vec();
        let r = gw.send(post(path, b).bearer("gw-key")).await;
        assert_openai_error(&r, 400);
    }
    assert_eq!(
        mock.request_count(),
        0,
        "malformed JSON reached the upstream"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn expect_continue_http10_and_reuse_after_an_error() {
    let (mock, mut gw) = setup("[server]\nmax_body_bytes = 4096\n").await;
    let b = body(CHAT, "gpt", false);

    // curl sends `Expect: 100-continue` for bodies over 1 KiB and waits for the go-ahead.
    let mut s = tokio::net::TcpStream::connect(gw.addr).await.unwrap();
    let head = format!(
        "POST /v1/chat/completions HTTP/1.1\r\nhost: x\r\nauthorization: Bearer gw-key\r\ncontent-type: application/json\r\ncontent-length: {}\r\nexpect: 100-continue\r\n\r\n",
        b.len()
    );
    s.write_all(head.as_bytes()).await.unwrap();
    let got = read_until(&mut s, b"\r\n\r\n").await;
    assert!(
        got.starts_with(b"HTTP/1.1 100"),
        "{:?}",
        String::from_utf8_lossy(&got)
    );
    s.write_all(b.as_bytes()).await.unwrap();
    let got = read_until(&mut s, b"\"usage\"").await;
    assert!(
        String::from_utf8_lossy(&got).contains("HTTP/1.1 200"),
        "{:?}",
        String::from_utf8_lossy(&got)
    );

    // HTTP/1.0, no keep-alive.
    let mut s = tokio::net::TcpStream::connect(gw.addr).await.unwrap();
    let req = format!(
        "POST /v1/chat/completions HTTP/1.0\r\nauthorization: Bearer gw-key\r\ncontent-length: {}\r\n\r\n{b}",
        b.len()
    );
    s.write_all(req.as_bytes()).await.unwrap();
    let mut out = Vec::new();
    tokio::time::timeout(PATIENCE, s.read_to_end(&mut out))
        .await
        .unwrap()
        .unwrap();
    let text = String::from_utf8_lossy(&out);
    assert!(
        text.starts_with("HTTP/1.0 200") || text.starts_with("HTTP/1.1 200"),
        "{text}"
    );
    assert!(text.contains("\"usage\""), "{text}");

    // A keep-alive connection after a 401 and a 404 still serves (both bodies were small).
    let stream = tokio::net::TcpStream::connect(gw.addr).await.unwrap();
    let mut sender = trainer::http1::handshake(stream).await.unwrap();
    for (key, model, status) in [
        ("nope", "gpt", 401u16),
        ("gw-key", "nope", 404),
        ("gw-key", "gpt", 200),
    ] {
        let req = http::Request::post(CHAT)
            .header("host", "gw")
            .header("authorization", format!("Bearer {key}"))
            .body(http_body_util::Full::new(bytes::Bytes::from(body(
                CHAT, model, false,
            ))))
            .unwrap();
        sender.ready().await.unwrap();
        let r = sender.send_request(req).await.unwrap();
        assert_eq!(r.status().as_u16(), status);
        http_body_util::BodyExt::collect(r.into_body())
            .await
            .unwrap();
    }
    assert_eq!(mock.request_count(), 3);
    assert_healthy(&mut gw).await;
}
