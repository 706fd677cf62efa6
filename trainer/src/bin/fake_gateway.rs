//! A stand-in gateway for the `trainer workload` tests: it reads the training config
//! (`--config`), answers `/healthz`, forwards every other request to the configured upstream,
//! and misbehaves as `FAKE_GATEWAY_MODE` says. On a clean exit it writes a fake profile where
//! an instrumented gateway would (`LLVM_PROFILE_FILE`, `%p` replaced by its pid).
//!
//! Modes: `ok` (default), `exit-nonzero` (exits 3 on SIGTERM), `sigkill-self` (dies on
//! SIGTERM before flushing), `ignore-term`, `fail-requests` (every 5th request gets a 500),
//! `corrupt-responses` (every 5th response body is cut in half, status 200), `die-early`
//! (exits 1 before listening), `never-ready` (listens, but `/healthz` answers 503).
//! `MODE:MODEL` applies the mode only to a config whose model is `MODEL` (`ok` otherwise), so
//! one shape of a run can misbehave while the others behave.
//!
//! With `FAKE_GATEWAY_ENV_OUT` set, it appends one line `<pid> <LLVM_PROFILE_FILE or
//! "(unset)">` to that file at start, so a test sees the environment it inherited.
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
    corrupt_every: Option<u64>,
    ready: bool,
    count: AtomicU64,
}

fn main() {
    if let Some(out) = std::env::var_os("FAKE_GATEWAY_ENV_OUT") {
        use std::io::Write;
        let profile = std::env::var("LLVM_PROFILE_FILE").unwrap_or_else(|_| "(unset)".into());
        let mut f = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(out)
            .expect("FAKE_GATEWAY_ENV_OUT writable");
        writeln!(f, "{} {profile}", std::process::id()).expect("writing FAKE_GATEWAY_ENV_OUT");
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
    let model = v["models"][0]["name"].as_str().expect("models[0].name");
    let mode = std::env::var("FAKE_GATEWAY_MODE").unwrap_or_else(|_| "ok".into());
    let mode = match mode.split_once(':') {
        Some((m, only)) if only == model => m.to_owned(),
        Some(_) => "ok".to_owned(),
        None => mode,
    };
    if mode == "die-early" {
        eprintln!("fake-gateway: dying early as asked");
        std::process::exit(1);
    }
    let state = Arc::new(State {
        upstream,
        fail_every: (mode == "fail-requests").then_some(5),
        corrupt_every: (mode == "corrupt-responses").then_some(5),
        ready: mode != "never-ready",
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
        _ => {
            write_profile();
            true
        }
    }
}

/// What an instrumented gateway's runtime does at exit: write `LLVM_PROFILE_FILE`.
fn write_profile() {
    if let Ok(pattern) = std::env::var("LLVM_PROFILE_FILE") {
        let path = pattern
            .replace("%p", &std::process::id().to_string())
            .replace("%m", "1234567890_0");
        let data: Vec<u8> = (0..4096).map(|i| (i % 251) as u8).collect();
        std::fs::write(path, data).expect("writing the fake .profraw");
    }
}

async fn handle(
    state: Arc<State>,
    req: Request<Incoming>,
) -> Result<Response<Full<Bytes>>, Infallible> {
    if req.uri().path() == "/healthz" {
        let mut r = Response::new(Full::new(Bytes::from_static(b"ok")));
        if !state.ready {
            *r.status_mut() = StatusCode::SERVICE_UNAVAILABLE;
        }
        return Ok(r);
    }
    let n = state.count.fetch_add(1, Ordering::Relaxed) + 1;
    if state.fail_every.is_some_and(|k| n.is_multiple_of(k)) {
        let mut r = Response::new(Full::new(Bytes::from_static(
            b"{\"error\":{\"message\":\"fake\"}}",
        )));
        *r.status_mut() = StatusCode::INTERNAL_SERVER_ERROR;
        return Ok(r);
    }
    let resp = forward(&state.upstream, req).await.unwrap_or_else(|e| {
        let mut r = Response::new(Full::new(Bytes::from(e)));
        *r.status_mut() = StatusCode::BAD_GATEWAY;
        r
    });
    if state.corrupt_every.is_some_and(|k| n.is_multiple_of(k)) {
        let (parts, body) = resp.into_parts();
        let body = body
            .collect()
            .await
            .map(|b| b.to_bytes())
            .unwrap_or_default();
        let half = body.slice(..body.len() / 2);
        return Ok(Response::from_parts(parts, Full::new(half)));
    }
    Ok(resp)
}

async fn forward(upstream: &str, req: Request<Incoming>) -> Result<Response<Full<Bytes>>, String> {
    let authority = upstream.trim_start_matches("http://").to_owned();
    let (parts, body) = req.into_parts();
    let body = body.collect().await.map_err(|e| e.to_string())?.to_bytes();
    let mut sender = trainer::http1::connect(authority.as_str()).await?;
    let mut up = Request::builder()
        .method(parts.method)
        .uri(parts.uri.path_and_query().map_or("/", |p| p.as_str()))
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
