//! Google Vertex AI targets (`provider = "vertex"` for Gemini, `"vertex-anthropic"` for
//! Claude): the service-account token exchange (an RS256 JWT the mock verifies with the
//! key's public half), Vertex's exact URLs, the Claude body splice, streaming, refresh before
//! expiry without stalls, one retry on a refused token, 503 when no token can be had, the
//! token redacted, and the provider named in the log and metrics.
//!
//! The mock here is Vertex as far as the gateway can tell: a token endpoint that checks
//! what Google checks, and publisher routes that take only live tokens it issued. Its keys
//! are made with `openssl` at test time; none is committed.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering::SeqCst};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use bytes::Bytes;
use http::{Request, Response, StatusCode};
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use ring::signature::{RsaKeyPair, UnparsedPublicKey, RSA_PKCS1_2048_8192_SHA256};
use serde_json::{json, Value};

use crate::support::*;

const CLIENT_KEY: &str = "client-key-vx";
const PROJECT: &str = "proj-vx";
const KID: &str = "kid-0123";
const EMAIL: &str = "gw@proj-vx.iam.gserviceaccount.com";
const SCOPE: &str = "https://www.googleapis.com/auth/cloud-platform";
const AUD: &str = "https://oauth2.googleapis.com/token";
const GEMINI_MODEL: &str = "gemini-2.5-flash";
const CLAUDE_MODEL: &str = "claude-sonnet-4-5@20250929";
const GEMINI_PATH: &str =
    "/v1/projects/proj-vx/locations/us-central1/publishers/google/models/gemini-2.5-flash";
const CLAUDE_PATH: &str = "/v1/projects/proj-vx/locations/us-east5/publishers/anthropic/models/claude-sonnet-4-5@20250929";

/// A fresh RSA key (PKCS#8 PEM) from openssl.
fn fresh_pem() -> String {
    let out = Command::new("openssl")
        .args([
            "genpkey",
            "-algorithm",
            "RSA",
            "-pkeyopt",
            "rsa_keygen_bits:2048",
        ])
        .stderr(Stdio::null())
        .output()
        .expect("the Vertex tests need the openssl CLI (scripts/test-deps.sh installs it)");
    assert!(out.status.success());
    String::from_utf8(out.stdout).unwrap()
}

/// The public half of a PEM private key, as ring verifies with it.
fn public_der(pem: &str) -> Vec<u8> {
    let der = rustls_pemfile::pkcs8_private_keys(&mut pem.as_bytes())
        .next()
        .unwrap()
        .unwrap();
    let key = RsaKeyPair::from_pkcs8(der.secret_pkcs8_der()).unwrap();
    use ring::signature::KeyPair;
    key.public_key().as_ref().to_vec()
}

/// One recorded Vertex call.
#[derive(Clone, Debug)]
struct Seen {
    path: String,
    query: Option<String>,
    headers: http::HeaderMap,
    body: Value,
    status: u16,
}

#[derive(Default)]
struct MockState {
    public_key: Vec<u8>,
    /// Issued tokens and when they expire.
    tokens: Mutex<HashMap<String, Instant>>,
    exchanges: AtomicU32,
    /// Assertions refused (bad signature or claims).
    refused: AtomicU32,
    lifetime_s: AtomicU32,
    /// Token requests answer 500 (the endpoint is down).
    token_down: AtomicBool,
    /// Token requests are never answered (the endpoint hangs).
    token_hangs: AtomicBool,
    seen: Mutex<Vec<Seen>>,
    /// The claims of the last assertion accepted.
    last_claims: Mutex<Option<Value>>,
}

struct VertexMock {
    addr: SocketAddr,
    state: Arc<MockState>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for VertexMock {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl VertexMock {
    async fn start(pem: &str, lifetime_s: u32) -> VertexMock {
        let state = Arc::new(MockState {
            public_key: public_der(pem),
            lifetime_s: AtomicU32::new(lifetime_s),
            ..MockState::default()
        });
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let st = state.clone();
        let task = tokio::spawn(async move {
            loop {
                let Ok((s, _)) = listener.accept().await else {
                    continue;
                };
                let st = st.clone();
                tokio::spawn(async move {
                    let svc = hyper::service::service_fn(move |req| {
                        let st = st.clone();
                        async move { Ok::<_, std::convert::Infallible>(serve(&st, req).await) }
                    });
                    let _ = hyper::server::conn::http1::Builder::new()
                        .serve_connection(hyper_util::rt::TokioIo::new(s), svc)
                        .await;
                });
            }
        });
        VertexMock { addr, state, task }
    }

    fn base_url(&self) -> String {
        format!("http://{}", self.addr)
    }

    fn exchanges(&self) -> u32 {
        self.state.exchanges.load(SeqCst)
    }

    fn seen(&self) -> Vec<Seen> {
        self.state.seen.lock().unwrap().clone()
    }

    /// Every issued token stops working (Vertex would say it expired or was revoked).
    fn revoke_all(&self) {
        self.state.tokens.lock().unwrap().clear();
    }

    /// A service-account key file for this mock's token endpoint.
    fn key_file(&self, pem: &str) -> std::path::PathBuf {
        let path = scratch("sa.json");
        let sa = json!({
            "type": "service_account", "project_id": PROJECT, "private_key_id": KID,
            "private_key": pem, "client_email": EMAIL,
            "token_uri": format!("{}/token", self.base_url()),
            "client_id": "1", "auth_uri": "https://accounts.google.com/o/oauth2/auth",
        });
        std::fs::write(&path, sa.to_string()).unwrap();
        path
    }
}

fn reply(status: u16, ty: &str, body: impl Into<Bytes>) -> Response<Full<Bytes>> {
    Response::builder()
        .status(status)
        .header("content-type", ty)
        .body(Full::new(body.into()))
        .unwrap()
}

fn now_s() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs()
}

/// Checks an assertion as Google does: the RS256 signature with the account's public key,
/// then the header and the claims. `Err` says what is wrong.
fn verify_assertion(public_key: &[u8], jwt: &str) -> Result<Value, String> {
    let parts: Vec<&str> = jwt.split('.').collect();
    let [h, c, s] = parts[..] else {
        return Err("not three segments".into());
    };
    let sig = URL_SAFE_NO_PAD
        .decode(s)
        .map_err(|_| "signature not base64url")?;
    UnparsedPublicKey::new(&RSA_PKCS1_2048_8192_SHA256, public_key)
        .verify(format!("{h}.{c}").as_bytes(), &sig)
        .map_err(|_| "Invalid JWT Signature.")?;
    let seg = |x: &str| -> Result<Value, String> {
        let b = URL_SAFE_NO_PAD
            .decode(x)
            .map_err(|_| "segment not base64url")?;
        serde_json::from_slice(&b).map_err(|_| "segment not JSON".into())
    };
    let (header, claims) = (seg(h)?, seg(c)?);
    if header != json!({"alg": "RS256", "typ": "JWT", "kid": KID}) {
        return Err(format!("header {header}"));
    }
    let (iat, exp) = (claims["iat"].as_u64(), claims["exp"].as_u64());
    let (Some(iat), Some(exp)) = (iat, exp) else {
        return Err("iat/exp".into());
    };
    if claims["iss"] != EMAIL
        || claims["scope"] != SCOPE
        || claims["aud"] != AUD
        || exp != iat + 3600
        || iat.abs_diff(now_s()) > 60
        || claims.as_object().unwrap().len() != 5
    {
        return Err(format!("claims {claims}"));
    }
    Ok(claims)
}

async fn serve(st: &MockState, req: Request<Incoming>) -> Response<Full<Bytes>> {
    let (parts, body) = req.into_parts();
    let body = body.collect().await.unwrap().to_bytes();
    let path = parts.uri.path().to_owned();
    if path == "/token" {
        if st.token_hangs.load(SeqCst) {
            std::future::pending::<()>().await;
        }
        return token(st, &parts.headers, &body);
    }
    let bearer = parts
        .headers
        .get("authorization")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .unwrap_or("")
        .to_owned();
    let live = st
        .tokens
        .lock()
        .unwrap()
        .get(&bearer)
        .is_some_and(|exp| Instant::now() < *exp);
    let json_body: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    let (status, resp) = if !live {
        let e = json!({"error": {"code": 401, "status": "UNAUTHENTICATED",
            "message": "Request had invalid authentication credentials."}});
        (401, reply(401, "application/json", e.to_string()))
    } else if let Some(m) = path.strip_prefix(&format!("{GEMINI_PATH}:")) {
        gemini(m, &json_body, &bearer)
    } else if let Some(m) = path.strip_prefix(&format!("{CLAUDE_PATH}:")) {
        claude(m, &parts.headers, &json_body)
    } else {
        (
            404,
            reply(
                404,
                "application/json",
                r#"{"error":{"code":404,"status":"NOT_FOUND","message":"no such route"}}"#,
            ),
        )
    };
    st.seen.lock().unwrap().push(Seen {
        path,
        query: parts.uri.query().map(str::to_owned),
        headers: parts.headers,
        body: json_body,
        status,
    });
    resp
}

fn token(st: &MockState, headers: &http::HeaderMap, body: &[u8]) -> Response<Full<Bytes>> {
    if st.token_down.load(SeqCst) {
        return reply(500, "application/json", r#"{"error":"internal_failure"}"#);
    }
    let form = std::str::from_utf8(body).unwrap_or("");
    let field = |k: &str| {
        form.split('&')
            .find_map(|kv| kv.strip_prefix(&format!("{k}=")))
            .unwrap_or("")
            .to_owned()
    };
    let ct_ok = headers
        .get("content-type")
        .is_some_and(|v| v == "application/x-www-form-urlencoded");
    let grant_ok = field("grant_type") == "urn%3Aietf%3Aparams%3Aoauth%3Agrant-type%3Ajwt-bearer";
    let checked = if ct_ok && grant_ok {
        verify_assertion(&st.public_key, &field("assertion"))
    } else {
        Err("unsupported_grant_type".into())
    };
    match checked {
        Ok(claims) => {
            let n = st.exchanges.fetch_add(1, SeqCst) + 1;
            let life = st.lifetime_s.load(SeqCst);
            let tok = format!("ya29.mock-{n}");
            st.tokens.lock().unwrap().insert(
                tok.clone(),
                Instant::now() + Duration::from_secs(life.into()),
            );
            *st.last_claims.lock().unwrap() = Some(claims);
            let a = json!({"access_token": tok, "expires_in": life, "token_type": "Bearer"});
            reply(200, "application/json", a.to_string())
        }
        Err(why) => {
            st.refused.fetch_add(1, SeqCst);
            let e = json!({"error": "invalid_grant", "error_description": why});
            reply(400, "application/json", e.to_string())
        }
    }
}

fn gemini(method: &str, body: &Value, bearer: &str) -> (u16, Response<Full<Bytes>>) {
    if body.get("contents").is_none() || body.get("model").is_some() {
        return (
            400,
            reply(
                400,
                "application/json",
                r#"{"error":{"code":400,"status":"INVALID_ARGUMENT","message":"bad body"}}"#,
            ),
        );
    }
    // A prompt asking for it gets the credentials echoed in an error (a leak to redact).
    if body.to_string().contains("echo the token") {
        let e = json!({"error": {"code": 400, "status": "INVALID_ARGUMENT",
            "message": format!("bad request with Bearer {bearer}")}});
        return (400, reply(400, "application/json", e.to_string()));
    }
    let chunk = |text: &str, last: bool| {
        let mut c = json!({"candidates": [{"content": {"role": "model", "parts": [{"text": text}]}, "index": 0}],
            "usageMetadata": {"promptTokenCount": 5}, "modelVersion": GEMINI_MODEL});
        if last {
            c["candidates"][0]["finishReason"] = "STOP".into();
            c["usageMetadata"] =
                json!({"promptTokenCount": 5, "candidatesTokenCount": 3, "totalTokenCount": 8});
        }
        c
    };
    match method {
        "countTokens" => (200, reply(200, "application/json", r#"{"totalTokens":7}"#)),
        "generateContent" => (
            200,
            reply(
                200,
                "application/json",
                chunk("Hello from Vertex", true).to_string(),
            ),
        ),
        "streamGenerateContent" => {
            let sse = format!(
                "data: {}\r\n\r\ndata: {}\r\n\r\n",
                chunk("Hello from ", false),
                chunk("Vertex", true)
            );
            (200, reply(200, "text/event-stream", sse))
        }
        _ => (404, reply(404, "application/json", "{}")),
    }
}

fn claude(method: &str, headers: &http::HeaderMap, body: &Value) -> (u16, Response<Full<Bytes>>) {
    // What the Anthropic SDK sends Vertex: the version in the body, no model, no header.
    if body.get("model").is_some()
        || body["anthropic_version"] != "vertex-2023-10-16"
        || headers.contains_key("anthropic-version")
    {
        let e = json!({"type": "error", "error": {"type": "invalid_request_error", "message": "not a Vertex body"}});
        return (400, reply(400, "application/json", e.to_string()));
    }
    let stream = body["stream"] == true;
    match (method, stream) {
        ("rawPredict", false) => {
            let m = json!({"id": "msg_vx", "type": "message", "role": "assistant", "model": CLAUDE_MODEL,
                "content": [{"type": "text", "text": "Hello from Claude"}], "stop_reason": "end_turn",
                "stop_sequence": null, "usage": {"input_tokens": 5, "output_tokens": 3}});
            (200, reply(200, "application/json", m.to_string()))
        }
        ("streamRawPredict", true) => {
            let ev = |name: &str, data: Value| format!("event: {name}\ndata: {data}\n\n");
            let sse = [
                ev("message_start", json!({"type": "message_start", "message": {"id": "msg_vx", "type": "message", "role": "assistant", "model": CLAUDE_MODEL, "content": [], "stop_reason": null, "stop_sequence": null, "usage": {"input_tokens": 5, "output_tokens": 1}}})),
                ev("content_block_start", json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}})),
                ev("content_block_delta", json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "Hello from Claude"}})),
                ev("content_block_stop", json!({"type": "content_block_stop", "index": 0})),
                ev("message_delta", json!({"type": "message_delta", "delta": {"stop_reason": "end_turn", "stop_sequence": null}, "usage": {"output_tokens": 3}})),
                ev("message_stop", json!({"type": "message_stop"})),
            ]
            .concat();
            (200, reply(200, "text/event-stream", sse))
        }
        _ => (404, reply(404, "application/json", "{}")),
    }
}

/// Models `vg` (Gemini on Vertex) and `vc` (Claude on Vertex), both on the service
/// account in `key_file`; `upstream` adds `[upstream]` keys.
fn config(base: &str, key_file: &std::path::Path, upstream: &str) -> String {
    format!(
        r#"[upstream]
{upstream}
[[keys]]
name = "k"
key = "{CLIENT_KEY}"
[[models]]
name = "vg"
[[models.targets]]
provider = "vertex"
base_url = "{base}"
location = "us-central1"
model = "{GEMINI_MODEL}"
credentials_file = "{kf}"
[[models]]
name = "vc"
[[models.targets]]
provider = "vertex-anthropic"
base_url = "{base}"
location = "us-east5"
project = "{PROJECT}"
model = "{CLAUDE_MODEL}"
credentials_file_env = "GATEWAY_TEST_VERTEX_SA"
"#,
        kf = key_file.display()
    )
}

async fn start(mock: &VertexMock, pem: &str, upstream: &str) -> TestGateway {
    let kf = mock.key_file(pem);
    let opts = StartOpts {
        env: vec![("GATEWAY_TEST_VERTEX_SA".into(), kf.display().to_string())],
        ..StartOpts::default()
    };
    TestGateway::start_opts(&config(&mock.base_url(), &kf, upstream), opts).await
}

fn gemini_req(model: &str, stream: bool) -> Req {
    let path = if stream {
        format!("/v1beta/models/{model}:streamGenerateContent?alt=sse")
    } else {
        format!("/v1beta/models/{model}:generateContent")
    };
    let b = json!({"contents": [{"role": "user", "parts": [{"text": "Say hi"}]}], "generationConfig": {"maxOutputTokens": 32}});
    post(&path, b.to_string()).header("x-goog-api-key", CLIENT_KEY)
}

fn bearer_of(s: &Seen) -> &str {
    s.headers["authorization"].to_str().unwrap()
}

// The mock's check can fail: an assertion signed with another key, or with a claim
// changed, is refused. (Without this, the passing tests below would prove nothing.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_mock_refuses_a_forged_assertion() {
    let (pem, other) = (fresh_pem(), fresh_pem());
    let public = public_der(&pem);
    let sign = |pem: &str, claims: &Value| {
        let der = rustls_pemfile::pkcs8_private_keys(&mut pem.as_bytes())
            .next()
            .unwrap()
            .unwrap();
        let key = RsaKeyPair::from_pkcs8(der.secret_pkcs8_der()).unwrap();
        let h =
            URL_SAFE_NO_PAD.encode(json!({"alg": "RS256", "typ": "JWT", "kid": KID}).to_string());
        let c = URL_SAFE_NO_PAD.encode(claims.to_string());
        let mut sig = vec![0; key.public().modulus_len()];
        key.sign(
            &ring::signature::RSA_PKCS1_SHA256,
            &ring::rand::SystemRandom::new(),
            format!("{h}.{c}").as_bytes(),
            &mut sig,
        )
        .unwrap();
        format!("{h}.{c}.{}", URL_SAFE_NO_PAD.encode(sig))
    };
    let now = now_s();
    let good = json!({"iat": now, "exp": now + 3600, "iss": EMAIL, "aud": AUD, "scope": SCOPE});
    assert!(verify_assertion(&public, &sign(&pem, &good)).is_ok());
    assert_eq!(
        verify_assertion(&public, &sign(&other, &good)).unwrap_err(),
        "Invalid JWT Signature."
    );
    let mut bad = good.clone();
    bad["aud"] = "http://127.0.0.1/token".into();
    assert!(verify_assertion(&public, &sign(&pem, &bad)).is_err());
}

// Gemini and Anthropic clients pass through: Vertex's exact paths, a bearer token the
// mock issued for a verified assertion, the Claude body spliced (no `model`, the Vertex
// `anthropic_version`, no `anthropic-version` header, `anthropic-beta` kept).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn native_clients_pass_through_to_vertex() {
    let pem = fresh_pem();
    let mock = VertexMock::start(&pem, 3600).await;
    let gw = start(&mock, &pem, "").await;
    for stream in [false, true] {
        let r = gw.send(gemini_req("vg", stream)).await;
        assert_eq!(r.status, StatusCode::OK, "{}", r.text());
        assert!(r.text().contains("Vertex"), "{}", r.text());
    }
    for stream in [false, true] {
        let b = json!({"model": "vc", "max_tokens": 64, "stream": stream, "system": "be brief",
            "messages": [{"role": "user", "content": "Say hi"}]});
        let req = post(MESSAGES, b.to_string())
            .x_api_key(CLIENT_KEY)
            .header("anthropic-version", "2023-06-01")
            .header("anthropic-beta", "prompt-caching-2024-07-31");
        let r = gw.send(req).await;
        assert_eq!(r.status, StatusCode::OK, "{}", r.text());
        if stream {
            let events = sse_data(&r.body).join("\n");
            assert!(
                events.contains("Hello from Claude") && events.contains("message_stop"),
                "{events}"
            );
        } else {
            assert_eq!(r.json()["content"][0]["text"], "Hello from Claude");
        }
    }
    let seen = mock.seen();
    let paths: Vec<(&str, Option<&str>)> = seen
        .iter()
        .map(|s| (s.path.as_str(), s.query.as_deref()))
        .collect();
    let (g, c) = (GEMINI_PATH, CLAUDE_PATH);
    assert_eq!(
        paths,
        [
            (format!("{g}:generateContent").as_str(), None),
            (
                format!("{g}:streamGenerateContent").as_str(),
                Some("alt=sse")
            ),
            (format!("{c}:rawPredict").as_str(), None),
            (format!("{c}:streamRawPredict").as_str(), None),
        ]
    );
    for s in &seen {
        assert_eq!(s.status, 200, "{s:?}");
        assert!(bearer_of(s).starts_with("Bearer ya29.mock-"), "{s:?}");
        assert!(
            s.headers.get("x-goog-api-key").is_none(),
            "the client's key never goes upstream"
        );
    }
    let claude = &seen[2];
    assert_eq!(claude.body["max_tokens"], 64);
    assert_eq!(claude.body["system"], "be brief");
    assert_eq!(
        claude.headers["anthropic-beta"],
        "prompt-caching-2024-07-31"
    );
    // One exchange served all four: both targets name the same key file (once directly,
    // once through the env var), which gets one token source.
    assert_eq!(mock.exchanges(), 1);
    assert_eq!(mock.state.refused.load(SeqCst), 0);
    let lines = gw.wait_logs("answered", 4, |l| l["status"] == 200).await;
    for l in &lines {
        let want = if l["model"] == "vg" {
            "vertex"
        } else {
            "vertex-anthropic"
        };
        assert_eq!(l["provider"], want, "{l}");
    }
    gw.wait_metric(
        "gateway_upstream_responses_total{model=\"vg\",provider=\"vertex\"}",
        2.0,
    )
    .await;
    gw.wait_metric(
        "gateway_upstream_responses_total{model=\"vc\",provider=\"vertex-anthropic\"}",
        2.0,
    )
    .await;
}

// Every other dialect is translated: OpenAI chat and Responses clients on both models,
// streaming and not; a Gemini client on Claude; an Anthropic client on Gemini.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn other_dialects_are_translated_for_vertex() {
    let pem = fresh_pem();
    let mock = VertexMock::start(&pem, 3600).await;
    let gw = start(&mock, &pem, "").await;
    let mut n = 0;
    for (model, want_text, want_path) in [
        ("vg", "Vertex", GEMINI_PATH),
        ("vc", "Hello from Claude", CLAUDE_PATH),
    ] {
        for route in [CHAT, RESPONSES, MESSAGES] {
            if (model, route) == ("vc", MESSAGES) {
                continue;
            }
            for stream in [false, true] {
                let req = post(route, body(route, model, stream)).bearer(CLIENT_KEY);
                let r = gw.send(req).await;
                assert_eq!(
                    r.status,
                    StatusCode::OK,
                    "{model} {route} {stream}: {}",
                    r.text()
                );
                assert!(
                    r.text().contains(want_text),
                    "{model} {route} {stream}: {}",
                    r.text()
                );
                let up = &mock.seen()[n];
                n += 1;
                assert!(up.path.starts_with(want_path), "{}", up.path);
                let method = up.path.rsplit_once(':').unwrap().1;
                let want_method = match (model, stream) {
                    ("vg", false) => "generateContent",
                    ("vg", true) => "streamGenerateContent",
                    (_, false) => "rawPredict",
                    (_, true) => "streamRawPredict",
                };
                assert_eq!(method, want_method, "{model} {route} {stream}");
                if model == "vc" {
                    assert!(up.body.get("model").is_none(), "{}", up.body);
                    assert_eq!(up.body["anthropic_version"], "vertex-2023-10-16");
                }
            }
        }
    }
    let r = gw.send(gemini_req("vc", false)).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.text());
    assert!(r.text().contains("Hello from Claude"), "{}", r.text());
    let line = gw
        .wait_log("translated", |l| l["translated"] == "gemini->messages")
        .await;
    assert_eq!(line["translated"], "gemini->messages", "{line}");
    assert_eq!(line["provider"], "vertex-anthropic", "{line}");
}

// Token counts: a Gemini client's is Vertex's own (`:countTokens`); Claude on Vertex
// counts at another model the gateway does not ask yet, so an Anthropic client's is the
// marked estimate.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn token_counts() {
    let pem = fresh_pem();
    let mock = VertexMock::start(&pem, 3600).await;
    let gw = start(&mock, &pem, "").await;
    let b = json!({"contents": [{"role": "user", "parts": [{"text": "Say hi"}]}]});
    let r = gw
        .send(
            post("/v1beta/models/vg:countTokens", b.to_string())
                .header("x-goog-api-key", CLIENT_KEY),
        )
        .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.text());
    assert_eq!(r.json()["totalTokens"], 7);
    assert_eq!(mock.seen()[0].path, format!("{GEMINI_PATH}:countTokens"));
    let b = json!({"model": "vc", "messages": [{"role": "user", "content": "Say hi"}]});
    let r = gw
        .send(post("/v1/messages/count_tokens", b.to_string()).x_api_key(CLIENT_KEY))
        .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.text());
    assert!(r.json()["input_tokens"].as_u64().is_some());
    assert!(r.header("x-gateway-token-estimate").is_some());
    assert_eq!(
        mock.seen().len(),
        1,
        "Vertex was not asked for Claude's count"
    );
}

// A 4-second token (the lifetime floor lowered to let it live): the gateway fetches the
// next one in the background before the last expires, so requests spread over 6 s all pass
// and none waits on a fetch.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tokens_refresh_before_expiry_and_requests_never_wait() {
    let pem = fresh_pem();
    let mock = VertexMock::start(&pem, 4).await;
    let upstream = "first_byte_timeout_ms = 5000\nmin_credential_lifetime_ms = 2000";
    let gw = start(&mock, &pem, upstream).await;
    // The first request may wait on the first fetch.
    assert_eq!(
        gw.send(gemini_req("vg", false)).await.status,
        StatusCode::OK
    );
    let started = Instant::now();
    let mut slowest = Duration::ZERO;
    let mut tokens = std::collections::BTreeSet::new();
    while started.elapsed() < Duration::from_secs(6) {
        let t = Instant::now();
        let r = gw.send(gemini_req("vg", false)).await;
        slowest = slowest.max(t.elapsed());
        assert_eq!(r.status, StatusCode::OK, "{}", r.text());
        tokens.insert(bearer_of(mock.seen().last().unwrap()).to_owned());
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    // Refreshed halfway through each token's life: at least 3 exchanges in 6 s.
    assert!(mock.exchanges() >= 3, "{} exchanges", mock.exchanges());
    assert!(tokens.len() >= 3, "{tokens:?}");
    // No request waited on a fetch (a wait would be the token's remaining life or more).
    assert!(
        slowest < Duration::from_millis(500),
        "slowest request {slowest:?}"
    );
    assert!(mock.seen().iter().all(|s| s.status == 200));
}

// A token endpoint granting tokens that live 0 s (or less than the floor) fails like one
// that is down: the fetches back off (1 s, 2 s, ...) instead of repeating every 250 ms, and
// each failure is logged. Requests get the 503 of an endpoint that is down.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_token_under_the_lifetime_floor_is_a_failed_fetch() {
    let pem = fresh_pem();
    let mock = VertexMock::start(&pem, 0).await;
    let gw = start(&mock, &pem, "first_byte_timeout_ms = 300").await;
    let r = gw.send(gemini_req("vg", false)).await;
    assert_eq!(r.status, StatusCode::SERVICE_UNAVAILABLE, "{}", r.text());
    let started = Instant::now();
    tokio::time::sleep(Duration::from_millis(3_500)).await;
    // Fetches at 0, 1 and 3 s (a few more if start-up was slow); 14 or more without the floor.
    let n = mock.exchanges();
    assert!(
        (1..=4).contains(&n),
        "{n} token fetches in {:?}",
        started.elapsed()
    );
    let log = gw.stderr_lines().join("\n");
    assert!(
        log.contains("access token refresh failed: the credential granted lives 0 ms, under the 60000 ms minimum (upstream.min_credential_lifetime_ms)"),
        "{log}"
    );
    assert!(!log.contains("ya29."), "{log}");
    let text = gw.metrics().await;
    let failed = metric(
        &text,
        "gateway_upstream_credential_refresh_total{result=\"error\"}",
    );
    assert!(failed >= Some(1.0), "{text}");
    assert!(mock.seen().is_empty(), "no request went out with the token");
}

// Vertex refuses the token (revoked, or expired early): the gateway fetches a new one and
// retries once, and the client gets its answer; the refused attempt never reaches it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_token_is_refreshed_and_retried_once() {
    let pem = fresh_pem();
    let mock = VertexMock::start(&pem, 3600).await;
    let gw = start(&mock, &pem, "").await;
    assert_eq!(gw.send(gemini_req("vg", true)).await.status, StatusCode::OK);
    assert_eq!(mock.exchanges(), 1);
    mock.revoke_all();
    let r = gw.send(gemini_req("vg", true)).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.text());
    assert!(r.text().contains("Vertex"));
    assert_eq!(mock.exchanges(), 2);
    let seen = mock.seen();
    let statuses: Vec<u16> = seen.iter().map(|s| s.status).collect();
    assert_eq!(statuses, [200, 401, 200]);
    assert_eq!(bearer_of(&seen[1]), "Bearer ya29.mock-1");
    assert_eq!(bearer_of(&seen[2]), "Bearer ya29.mock-2");
    // The other target on the same key file got the new token too: no further exchange.
    let b =
        json!({"model": "vc", "max_tokens": 8, "messages": [{"role": "user", "content": "hi"}]});
    let r = gw
        .send(post(MESSAGES, b.to_string()).x_api_key(CLIENT_KEY))
        .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.text());
    assert_eq!(bearer_of(mock.seen().last().unwrap()), "Bearer ya29.mock-2");
    assert_eq!(mock.exchanges(), 2);
    gw.wait_metric("gateway_upstream_credential_retries_total", 1.0)
        .await;
    gw.wait_metric(
        "gateway_upstream_credential_refresh_total{result=\"ok\"}",
        2.0,
    )
    .await;
}

// A static access token (minted elsewhere) that Vertex refuses is not retried: the 401
// reaches the client, and the mock saw one call.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_static_access_token_is_sent_as_it_is_and_never_retried() {
    let pem = fresh_pem();
    let mock = VertexMock::start(&pem, 3600).await;
    let cfg = format!(
        "[[models]]\nname = \"vt\"\n[[models.targets]]\nprovider = \"vertex\"\nbase_url = \"{}\"\nlocation = \"us-central1\"\nproject = \"{PROJECT}\"\nmodel = \"{GEMINI_MODEL}\"\naccess_token_env = \"GATEWAY_TEST_VERTEX_TOKEN\"\n",
        mock.base_url()
    );
    let opts = StartOpts {
        env: vec![(
            "GATEWAY_TEST_VERTEX_TOKEN".into(),
            "ya29.minted-elsewhere".into(),
        )],
        ..StartOpts::default()
    };
    let gw = TestGateway::start_opts(&cfg, opts).await;
    let r = gw.send(gemini_req("vt", false)).await;
    assert_eq!(r.status, StatusCode::UNAUTHORIZED, "{}", r.text());
    let seen = mock.seen();
    assert_eq!(seen.len(), 1);
    assert_eq!(bearer_of(&seen[0]), "Bearer ya29.minted-elsewhere");
    assert_eq!(seen[0].path, format!("{GEMINI_PATH}:generateContent"));
    assert_eq!(mock.exchanges(), 0);
}

// No token can be had (the endpoint fails): each dialect's client gets a 503 in its own
// envelope naming the provider and the target, after the first-byte timeout; nothing
// secret is said, in the answer or the log. The gateway still stops cleanly.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_token_is_a_503_in_each_dialect() {
    let pem = fresh_pem();
    let mock = VertexMock::start(&pem, 3600).await;
    mock.state.token_down.store(true, SeqCst);
    let mut gw = start(&mock, &pem, "first_byte_timeout_ms = 300").await;
    for route in [CHAT, MESSAGES, RESPONSES] {
        let t = Instant::now();
        let r = gw
            .send(post(route, body(route, "vg", false)).bearer(CLIENT_KEY))
            .await;
        assert!(t.elapsed() >= Duration::from_millis(300));
        let text = r.text();
        assert!(
            text.contains("credentials unavailable")
                && text.contains("provider vertex")
                && text.contains("target 0"),
            "{text}"
        );
        assert!(
            !text.contains("PRIVATE") && !text.contains("ya29"),
            "{text}"
        );
        if route == MESSAGES {
            assert_eq!(assert_anthropic_error(&r, 503), "api_error");
        } else {
            assert_openai_error(&r, 503);
        }
    }
    let r = gw.send(gemini_req("vc", false)).await;
    assert_eq!(r.status, StatusCode::SERVICE_UNAVAILABLE);
    let v = r.json();
    assert_eq!(v["error"]["status"], "UNAVAILABLE", "{v}");
    assert!(
        v["error"]["message"]
            .as_str()
            .unwrap()
            .contains("provider vertex-anthropic"),
        "{v}"
    );
    assert!(
        mock.seen().is_empty(),
        "nothing reached Vertex without a token"
    );
    // The endpoint comes back: the refresher's backoff (1 s, 2 s...) finds it.
    mock.state.token_down.store(false, SeqCst);
    let deadline = Instant::now() + PATIENCE;
    loop {
        let r = gw.send(gemini_req("vg", false)).await;
        if r.status == StatusCode::OK {
            break;
        }
        assert!(Instant::now() < deadline, "never recovered: {}", r.text());
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let log = gw.stderr_lines().join("\n");
    assert!(
        log.contains("access token refresh failed: token endpoint answered 500"),
        "{log}"
    );
    assert!(
        !log.contains("PRIVATE KEY") && !log.contains("assertion=") && !log.contains("ya29."),
        "{log}"
    );
    gw.sigterm();
    let status = gw.wait_exit(PATIENCE).await;
    assert!(
        status.success(),
        "{status:?}: the refreshers do not hold the exit"
    );
}

// The token an upstream echoes in an error never reaches the client or the log.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_echoed_token_is_redacted() {
    let pem = fresh_pem();
    let mock = VertexMock::start(&pem, 3600).await;
    let gw = start(&mock, &pem, "").await;
    let b = json!({"contents": [{"role": "user", "parts": [{"text": "echo the token"}]}]});
    let r = gw
        .send(
            post("/v1beta/models/vg:generateContent", b.to_string())
                .header("x-goog-api-key", CLIENT_KEY),
        )
        .await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST);
    let text = r.text();
    assert!(text.contains("Bearer [redacted]"), "{text}");
    assert!(!text.contains("ya29"), "{text}");
    // Translated too (the error is re-enveloped, still redacted).
    let r = gw
        .send(
            post(
                CHAT,
                r#"{"model":"vg","messages":[{"role":"user","content":"echo the token"}]}"#,
            )
            .bearer(CLIENT_KEY),
        )
        .await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST);
    assert!(!r.text().contains("ya29"), "{}", r.text());
    for line in gw.stdout_lines().iter().chain(&gw.stderr_lines()) {
        assert!(!line.contains("ya29"), "{line}");
    }
}

/// `--check-config` on `config`: whether it passed, and its stderr.
fn check(config: &str, env: &[(&str, &str)]) -> (bool, String) {
    let (ok, _, stderr) = check_config("vertex.toml", config, env);
    (ok, stderr)
}

#[test]
fn config_errors_name_the_key_never_the_secret() {
    let pem = fresh_pem();
    let dir = scratch("sa-dir");
    std::fs::create_dir_all(&dir).unwrap();
    let write = |name: &str, v: &Value| {
        let p = dir.join(name);
        std::fs::write(&p, v.to_string()).unwrap();
        p.display().to_string()
    };
    let sa = json!({"type": "service_account", "project_id": PROJECT, "private_key_id": KID,
        "private_key": pem, "client_email": EMAIL, "token_uri": "http://127.0.0.1:9/token"});
    let good = write("good.json", &sa);
    let mut no_email = sa.clone();
    no_email.as_object_mut().unwrap().remove("client_email");
    let no_email = write("no-email.json", &no_email);
    let mut bad_key = sa.clone();
    bad_key["private_key"] =
        "-----BEGIN PRIVATE KEY-----\nc2VjcmV0LWtleS1ieXRlcw==\n-----END PRIVATE KEY-----\n".into();
    let bad_key = write("bad-key.json", &bad_key);
    let mut no_project = sa.clone();
    no_project.as_object_mut().unwrap().remove("project_id");
    let no_project = write("no-project.json", &no_project);
    let target = |extra: &str| {
        format!("[[models]]\nname = \"v\"\n[[models.targets]]\nprovider = \"vertex\"\nmodel = \"gemini-2.5-flash\"\n{extra}\n")
    };
    let (ok, e) = check(
        &target(&format!(
            "location = \"us-central1\"\ncredentials_file = \"{good}\""
        )),
        &[],
    );
    assert!(ok, "{e}");
    for (extra, env, says) in [
        (
            format!("credentials_file = \"{good}\""),
            vec![],
            "targets[0].location`: is required",
        ),
        (
            format!("location = \"US central\"\ncredentials_file = \"{good}\""),
            vec![],
            "targets[0].location`: may hold only",
        ),
        (
            "location = \"global\"".to_owned(),
            vec![],
            "exactly one of credentials_file",
        ),
        (
            format!(
                "location = \"global\"\ncredentials_file = \"{good}\"\naccess_token_env = \"T\""
            ),
            vec![("T", "ya29.secret-token")],
            "exactly one of",
        ),
        (
            format!("location = \"global\"\ncredentials_file = \"{no_email}\""),
            vec![],
            "credentials_file`: ",
        ),
        (
            format!("location = \"global\"\ncredentials_file = \"{bad_key}\""),
            vec![],
            "is not a PKCS#8 PEM RSA private key",
        ),
        (
            format!("location = \"global\"\ncredentials_file = \"{no_project}\""),
            vec![],
            "targets[0].project`: is required",
        ),
        (
            "location = \"global\"\ncredentials_file_env = \"GATEWAY_TEST_SURELY_UNSET_SA\""
                .to_owned(),
            vec![],
            "credentials_file_env`: environment variable GATEWAY_TEST_SURELY_UNSET_SA is not set",
        ),
        (
            "location = \"global\"\ncredentials_file = \"/nonexistent/sa.json\"".to_owned(),
            vec![],
            "/nonexistent/sa.json is not a readable file",
        ),
        (
            "location = \"global\"\nproject = \"p\"\naccess_token_env = \"T\"\napi_key_env = \"T\""
                .to_owned(),
            vec![("T", "ya29.secret-token")],
            "api_key_env`: does not apply to Vertex",
        ),
        (
            format!("location = \"global\"\nmodel_x = 1\ncredentials_file = \"{good}\""),
            vec![],
            "unknown field `model_x`",
        ),
    ] {
        let (ok, e) = check(&target(&extra), &env);
        assert!(!ok, "{extra}");
        assert!(e.contains(says), "{extra}: {e}");
        assert!(
            !e.contains("c2VjcmV0") && !e.contains("secret-token") && !e.contains("PRIVATE"),
            "{e}"
        );
    }
    assert!(check(
        &target(&format!(
            "location = \"global\"\ncredentials_file = \"{no_email}\""
        )),
        &[]
    )
    .1
    .contains("lacks the field `client_email`"));
    // The Vertex keys mean nothing to another provider: refused, not ignored.
    let (ok, e) = check(
        &format!(
            "{}location = \"us-central1\"\n",
            model("g", &[("gemini", "https://x.example")])
        ),
        &[],
    );
    assert!(!ok);
    assert!(
        e.contains("targets[0].location") && e.contains("vertex"),
        "{e}"
    );
    // base_url stays required for everyone else.
    let (ok, e) = check(
        "[[models]]\nname = \"o\"\n[[models.targets]]\nprovider = \"openai\"\nmodel = \"m\"\n",
        &[],
    );
    assert!(!ok);
    assert!(e.contains("targets[0].base_url`: is required"), "{e}");
}

// A target whose token cannot be had is skipped like one that cannot be reached: the next
// target answers. And a token endpoint that never answers holds neither requests (past the
// first-byte timeout) nor the exit after SIGTERM.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_token_fails_over_and_a_hung_endpoint_does_not_hold_the_exit() {
    let pem = fresh_pem();
    let mock = VertexMock::start(&pem, 3600).await;
    mock.state.token_hangs.store(true, SeqCst);
    let backup = MockUpstream::start(MockConfig::default()).await.unwrap();
    let kf = mock.key_file(&pem);
    let cfg = format!(
        "[upstream]\nfirst_byte_timeout_ms = 300\n[[models]]\nname = \"vg\"\n[[models.targets]]\nprovider = \"vertex\"\nbase_url = \"{}\"\nlocation = \"us-central1\"\nmodel = \"{GEMINI_MODEL}\"\ncredentials_file = \"{}\"\n[[models.targets]]\nprovider = \"openai\"\nbase_url = \"{}\"\nmodel = \"gpt-backup\"\n",
        mock.base_url(),
        kf.display(),
        backup.base_url()
    );
    let mut gw = TestGateway::start(&cfg).await;
    let r = gw.send(post(CHAT, body(CHAT, "vg", false))).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.text());
    assert_eq!(r.json()["model"], "gpt-backup", "{}", r.text());
    assert!(mock.seen().is_empty());
    let line = gw.wait_log("answered", |l| l["model"] == "vg").await;
    assert_eq!(line["provider"], "openai", "{line}");
    let t = Instant::now();
    gw.sigterm();
    let status = gw.wait_exit(PATIENCE).await;
    assert!(status.success(), "{status:?}");
    assert!(t.elapsed() < Duration::from_secs(5), "{:?}", t.elapsed());
}
