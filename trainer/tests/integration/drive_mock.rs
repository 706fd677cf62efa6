//! The driver against the mock upstream itself (it speaks the same four dialects): every
//! shape's responses pass the checks, and a failing upstream fails every request.

use trainer::drive::{drive, DriveOptions};
use trainer::mock::{MockConfig, MockUpstream};
use trainer::shapes::{self, Shape};

fn small(mut s: Shape) -> Shape {
    s.requests = 40;
    s.concurrency = 3;
    s
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_shape_passes_against_the_mock() {
    let mock = MockUpstream::start(MockConfig::default()).await.unwrap();
    for shape in shapes::load_dir(&shapes::repo_dir()).unwrap() {
        let shape = small(shape);
        let report = drive(&shape, &DriveOptions::new(mock.base_url(), None))
            .await
            .unwrap();
        assert!(report.is_success(), "{report}");
        assert_eq!(report.ok, 40);
    }
    mock.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn split_utf8_streams_still_pass() {
    let config = MockConfig {
        write_fragment: Some(3),
        ..MockConfig::default()
    };
    let mock = MockUpstream::start(config).await.unwrap();
    for shape in shapes::load_dir(&shapes::repo_dir()).unwrap() {
        if shape.stream {
            let report = drive(&small(shape), &DriveOptions::new(mock.base_url(), None))
                .await
                .unwrap();
            assert!(report.is_success(), "{report}");
        }
    }
    mock.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn failing_upstream_fails_every_request() {
    let config = MockConfig {
        fail_status: Some(500),
        ..MockConfig::default()
    };
    let mock = MockUpstream::start(config).await.unwrap();
    let shape = small(shapes::find(&shapes::repo_dir(), "chat-nonstream-minimal").unwrap());
    let report = drive(&shape, &DriveOptions::new(mock.base_url(), None))
        .await
        .unwrap();
    assert!(!report.is_success());
    assert_eq!(report.failed, 40);
    assert!(report.to_string().contains("status 500"), "{report}");
    mock.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn nothing_listening_fails_every_request() {
    // Bound but never listening: connects are refused, and the port stays ours (a port
    // released right away could go to a parallel test's mock).
    let closed = tokio::net::TcpSocket::new_v4().unwrap();
    closed.bind("127.0.0.1:0".parse().unwrap()).unwrap();
    let port = closed.local_addr().unwrap().port();
    let shape = small(shapes::find(&shapes::repo_dir(), "messages-stream-mid").unwrap());
    let report = drive(
        &shape,
        &DriveOptions::new(format!("http://127.0.0.1:{port}"), None),
    )
    .await
    .unwrap();
    assert_eq!(report.failed, 40);
    assert_eq!(report.ok, 0);
}

/// Gemini answers the shapes' bodies do not provoke pass the checks too: a function call
/// (JSON and SSE) and the text quoting function responses; Google's error envelope fails.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn gemini_tool_calls_pass_and_google_errors_fail() {
    let mock = MockUpstream::start(MockConfig::default()).await.unwrap();
    let call = br#"{"contents":[{"role":"user","parts":[{"text":"Read it."}]}],
        "tools":[{"functionDeclarations":[{"name":"read_file","parameters":{"type":"OBJECT",
        "properties":{"absolute_path":{"type":"STRING"}},"required":["absolute_path"]}}]}]}"#;
    for name in ["gemini-nonstream-minimal", "gemini-stream-mid"] {
        let mut shape = small(shapes::find(&shapes::repo_dir(), name).unwrap());
        shape.body = call.to_vec();
        let report = drive(&shape, &DriveOptions::new(mock.base_url(), None))
            .await
            .unwrap();
        assert!(report.is_success(), "{report}");
        shape.model = "mock-error-429".into();
        let report = drive(&shape, &DriveOptions::new(mock.base_url(), None))
            .await
            .unwrap();
        assert_eq!(report.failed, 40, "{report}");
        assert!(
            report.to_string().contains("RESOURCE_EXHAUSTED"),
            "{report}"
        );
    }
    mock.shutdown().await;
}
