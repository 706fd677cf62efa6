//! A WebSocket upgrade on `/v1/responses` (Codex tries Responses over a WebSocket first, and
//! falls back to HTTP only when the upgrade is answered 426), asked by a real client.

use crate::support::*;
use tokio_tungstenite::tungstenite::Error;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_websocket_upgrade_on_responses_is_answered_426_saying_http_is_served() {
    let mock = MockUpstream::start(MockConfig::default()).await.unwrap();
    let gw = TestGateway::start(&model("gpt", &[("openai", &mock.base_url())])).await;
    let url = format!("ws://{}/v1/responses", gw.addr);
    let resp = match tokio_tungstenite::connect_async(url).await {
        Err(Error::Http(resp)) => resp,
        Err(e) => panic!("expected an HTTP answer to the upgrade, got {e}"),
        Ok(_) => panic!("the upgrade was accepted"),
    };
    assert_eq!(resp.status(), 426);
    let body = String::from_utf8(resp.body().clone().unwrap_or_default()).unwrap();
    assert!(body.contains("HTTP (POST /v1/responses)"), "{body}");
    assert!(body.contains("upgrade_required"), "{body}");
    assert_eq!(mock.request_count(), 0, "nothing goes upstream");
    // The same path over HTTP is served as before.
    let r = gw.send(post("/v1/responses", body_for_responses())).await;
    assert_eq!(r.status, 200, "{}", r.text());
}

fn body_for_responses() -> String {
    body("/v1/responses", "gpt", false)
}
