//! A stand-in gateway for the training stages' fail-closed tests: it reads the training
//! config (`--config`), answers `/healthz`, forwards every other request to the configured
//! upstream, and on SIGTERM misbehaves as `FAKE_GATEWAY_MODE` says. It writes fake profiles
//! where an instrumented gateway would (`LLVM_PROFILE_FILE`, `FAKE_FDATA_PREFIX`).
//!
//! Modes: `ok` (default), `exit-nonzero`, `sigkill-self` (dies on SIGTERM before flushing),
//! `no-profile` (exits 0, writes nothing), `small-profile`, `ignore-term`,
//! `fail-requests` (every 5th request gets a 500), `die-early` (exits 1 before listening).
//! Not shipped anywhere; only tests run it.

use std::convert::Infallible;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use bytes::Bytes;
use http::{Request, Response, StatusCode};
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper_util::rt::TokioIo;

struct State {
    upstream: String,
    fail_every: Option<u64>,
    count: AtomicU64,
}

fn main() {
    let mode = std::env::var("FAKE_GATEWAY_MODE").unwrap_or_else(|_| "ok".into());
    if mode == "die-early" {
        eprintln!("fake-gateway: dying early as asked");
        std::process::exit(1);
    }
    let args: Vec<String> = std::env::args().collect();
    let config = args
        .iter()
        .position(|a| a == "--config")
        .and_then(|i| args.get(i + 1))
        .expect("--config <file>");
    let text = std::fs::read_to_string(config).expect("config readable");
    let v: toml::Table = toml::from_str(&text).expect("config parses");
    let listen = v["server"]["listen"]
        .as_str()
        .expect("server.listen")
        .to_owned();
    let upstream = v["models"][0]["targets"][0]["base_url"]
        .as_str()
        .expect("models[0].targets[0].base_url")
        .to_owned();
    let state = Arc::new(State {
        upstream,
        fail_every: (mode == "fail-requests").then_some(5),
        count: AtomicU64::new(0),
    });

    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let exit_code = if mode == "exit-nonzero" { 3 } else { 0 };
    rt.block_on(async move {
        let mut term =
            tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()).unwrap();
        let listener = tokio::net::TcpListener::bind(&listen).await.unwrap();
        eprintln!(
            "fake-gateway: listening on http://{}",
            listener.local_addr().unwrap()
        );
        loop {
            tokio::select! {
                accepted = listener.accept() => {
                    let Ok((tcp, _)) = accepted else { continue };
                    let _ = tcp.set_nodelay(true);
                    let state = state.clone();
                    tokio::spawn(async move {
                        let svc = hyper::service::service_fn(move |req| handle(state.clone(), req));
                        let _ = hyper::server::conn::http1::Builder::new()
                            .serve_connection(TokioIo::new(tcp), svc)
                            .await;
                    });
                }
                _ = term.recv() => {
                    if on_term(&mode) {
                        break;
                    }
                }
            }
        }
    });
    std::process::exit(exit_code);
}

/// What SIGTERM does in each mode; true: exit now.
fn on_term(mode: &str) -> bool {
    match mode {
        "ignore-term" => false,
        "sigkill-self" => {
            // SAFETY: signalling ourselves.
            unsafe { libc::kill(libc::getpid(), libc::SIGKILL) };
            false
        }
        "no-profile" => true,
        "small-profile" => {
            write_profiles(100);
            true
        }
        _ => {
            write_profiles(100_000);
            true
        }
    }
}

fn write_profiles(bytes: usize) {
    let pid = std::process::id();
    if let Ok(pattern) = std::env::var("LLVM_PROFILE_FILE") {
        let path = pattern
            .replace("%p", &pid.to_string())
            .replace("%m", "1234567890_0");
        let data: Vec<u8> = (0..bytes).map(|i| (i % 251) as u8).collect();
        std::fs::write(path, data).expect("writing the fake .profraw");
    }
    if let Ok(prefix) = std::env::var("FAKE_FDATA_PREFIX") {
        let mut text = String::new();
        let mut i = 0;
        while text.len() < bytes {
            text.push_str(&format!("1 fake_fn_{i} 0 1 fake_fn_{i} 10 0 {}\n", i + 1));
            i += 1;
        }
        std::fs::write(format!("{prefix}.{pid}.fdata"), text).expect("writing the fake .fdata");
    }
}

async fn handle(
    state: Arc<State>,
    req: Request<Incoming>,
) -> Result<Response<Full<Bytes>>, Infallible> {
    if req.uri().path() == "/healthz" {
        return Ok(Response::new(Full::new(Bytes::from_static(b"ok"))));
    }
    let n = state.count.fetch_add(1, Ordering::Relaxed) + 1;
    if state.fail_every.is_some_and(|k| n.is_multiple_of(k)) {
        let mut r = Response::new(Full::new(Bytes::from_static(
            b"{\"error\":{\"message\":\"fake\"}}",
        )));
        *r.status_mut() = StatusCode::INTERNAL_SERVER_ERROR;
        return Ok(r);
    }
    Ok(forward(&state.upstream, req).await.unwrap_or_else(|e| {
        let mut r = Response::new(Full::new(Bytes::from(e)));
        *r.status_mut() = StatusCode::BAD_GATEWAY;
        r
    }))
}

async fn forward(upstream: &str, req: Request<Incoming>) -> Result<Response<Full<Bytes>>, String> {
    let authority = upstream.trim_start_matches("http://").to_owned();
    let (parts, body) = req.into_parts();
    let body = body.collect().await.map_err(|e| e.to_string())?.to_bytes();
    let tcp = tokio::net::TcpStream::connect(&authority)
        .await
        .map_err(|e| e.to_string())?;
    let (mut sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(tcp))
        .await
        .map_err(|e| e.to_string())?;
    tokio::spawn(conn);
    let mut up = Request::builder()
        .method(parts.method)
        .uri(parts.uri.path())
        .header(http::header::HOST, &authority);
    for (k, v) in &parts.headers {
        if k != http::header::HOST {
            up = up.header(k, v);
        }
    }
    let up = up.body(Full::new(body)).map_err(|e| e.to_string())?;
    let resp = sender.send_request(up).await.map_err(|e| e.to_string())?;
    let (parts, body) = resp.into_parts();
    let body = body.collect().await.map_err(|e| e.to_string())?.to_bytes();
    let mut out = Response::new(Full::new(body));
    *out.status_mut() = parts.status;
    if let Some(ct) = parts.headers.get(http::header::CONTENT_TYPE) {
        out.headers_mut()
            .insert(http::header::CONTENT_TYPE, ct.clone());
    }
    Ok(out)
}
