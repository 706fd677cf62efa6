//! Shared helpers for the gateway's integration tests: write a config, run the real gateway
//! binary on an ephemeral port, talk to it over HTTP/1.1, read its metrics and access log,
//! and stop it with SIGTERM (killing it on drop if a test fails half way).

use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bytes::Bytes;
use http::{HeaderMap, Method, Request, StatusCode};
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use serde_json::Value;

pub use trainer::mock::{
    expected_text, expected_usage, MockConfig, MockUpstream, TOOL_RESULT_PREFIX,
};

pub const CHAT: &str = "/v1/chat/completions";
pub const MESSAGES: &str = "/v1/messages";
pub const RESPONSES: &str = "/v1/responses";

/// The upstream key the gateway reads from its environment (`api_key_env`).
pub const UPSTREAM_KEY_ENV: &str = "GATEWAY_TEST_UPSTREAM_KEY";
pub const UPSTREAM_KEY: &str = "sk-upstream-secret-0123";

/// How long any "eventually" condition may take before a test fails.
pub const PATIENCE: Duration = Duration::from_secs(10);

/// A local port that refuses connections for as long as this value lives.
///
/// The socket is bound but never listens: connecting gets ECONNREFUSED, and, since it holds the
/// port without SO_REUSEADDR, no other test's listener can be given the same ephemeral port.
/// (Binding and releasing a port raced with parallel tests: a mock started meanwhile got the
/// "closed" port and answered 200.)
pub struct ClosedPort {
    _socket: tokio::net::TcpSocket,
    url: String,
}

impl ClosedPort {
    pub fn new() -> Self {
        let socket = tokio::net::TcpSocket::new_v4().unwrap();
        socket.bind("127.0.0.1:0".parse().unwrap()).unwrap();
        let url = format!("http://{}", socket.local_addr().unwrap());
        ClosedPort {
            _socket: socket,
            url,
        }
    }

    pub fn url(&self) -> &str {
        &self.url
    }
}

/// One `[[models]]` table with one target per `(provider, base_url)`; the upstream model name
/// is `up-<name>`.
pub fn model(name: &str, targets: &[(&str, &str)]) -> String {
    model_with(name, "", targets)
}

/// Like [`model`], with extra keys (e.g. `rate_limit = {...}`) in the model table.
pub fn model_with(name: &str, extra: &str, targets: &[(&str, &str)]) -> String {
    let mut s = format!("[[models]]\nname = \"{name}\"\n{extra}\n");
    for (provider, base) in targets {
        s.push_str(&format!(
            "[[models.targets]]\nprovider = \"{provider}\"\nbase_url = \"{base}\"\nmodel = \"up-{name}\"\napi_key_env = \"{UPSTREAM_KEY_ENV}\"\n"
        ));
    }
    s
}

/// The common case: `gpt` (openai) and `claude` (anthropic) on one mock.
pub fn two_models(base: &str) -> String {
    format!(
        "{}{}",
        model("gpt", &[("openai", base)]),
        model("claude", &[("anthropic", base)])
    )
}

/// A request body for `path` naming `model`.
pub fn body(path: &str, model: &str, stream: bool) -> String {
    match path {
        CHAT if stream => format!(
            r#"{{"model":"{model}","messages":[{{"role":"user","content":"Say hi"}}],"stream":true,"stream_options":{{"include_usage":true}},"temperature":0.5}}"#
        ),
        CHAT => format!(
            r#"{{"model":"{model}","messages":[{{"role":"user","content":"Say hi"}}],"temperature":0.5}}"#
        ),
        MESSAGES => format!(
            r#"{{"model":"{model}","max_tokens":64,"system":"be brief","messages":[{{"role":"user","content":"Say hi"}}],"stream":{stream}}}"#
        ),
        RESPONSES => format!(
            r#"{{"model":"{model}","input":"Say hi","instructions":"be brief","stream":{stream}}}"#
        ),
        _ => panic!("no body for {path}"),
    }
}

/// The model a route is served by in [`two_models`].
pub fn model_for(path: &str) -> &'static str {
    if path == MESSAGES {
        "claude"
    } else {
        "gpt"
    }
}

static COUNTER: AtomicU64 = AtomicU64::new(0);

/// A unique scratch file path for this test process.
pub fn scratch(name: &str) -> PathBuf {
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    std::env::temp_dir().join(format!("gateway-test-{}-{n}-{name}", std::process::id()))
}

/// `gateway --check-config` on `config` (written to a scratch file named after `name`), with
/// `env` set: whether it passed, its stdout and its stderr.
pub fn check_config(name: &str, config: &str, env: &[(&str, &str)]) -> (bool, String, String) {
    let path = scratch(name);
    std::fs::write(&path, config).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_gateway"))
        .arg("--config")
        .arg(&path)
        .arg("--check-config")
        .envs(env.iter().copied())
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let _ = std::fs::remove_file(&path);
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// A gateway process. Killed on drop unless it was stopped.
pub struct TestGateway {
    child: Child,
    pub addr: SocketAddr,
    pub metrics_addr: Option<SocketAddr>,
    stdout: Arc<Mutex<Vec<String>>>,
    stderr: Arc<Mutex<Vec<String>>>,
    config_path: PathBuf,
    /// With [`StartOpts::stdout_unread`]: the pipe nobody reads, kept open.
    _held_stdout: Option<std::process::ChildStdout>,
}

/// How to start a gateway beyond its config.
#[derive(Default, Clone, Debug)]
pub struct StartOpts {
    pub args: Vec<String>,
    /// Extra environment variables.
    pub env: Vec<(String, String)>,
    /// Run under `ulimit -n N`.
    pub nofile: Option<u32>,
    /// Keep stdout a pipe that is never read (a stuck log reader).
    pub stdout_unread: bool,
}

/// Runs the whole suite under another runtime: `GATEWAY_TEST_RUNTIME=thread-per-core cargo
/// test -p gateway --test integration` (a test that names `--runtime` keeps its own).
pub const RUNTIME_ENV: &str = "GATEWAY_TEST_RUNTIME";

fn runtime_args(args: &[String]) -> Vec<String> {
    match std::env::var(RUNTIME_ENV) {
        Ok(r) if !r.is_empty() && !args.iter().any(|a| a == "--runtime") => {
            vec!["--runtime".to_owned(), r]
        }
        _ => Vec::new(),
    }
}

impl TestGateway {
    /// Writes `config` to a file and starts the gateway on 127.0.0.1:0 with 2 workers.
    pub async fn start(config: &str) -> TestGateway {
        Self::start_with_args(config, &[]).await
    }

    pub async fn start_with_args(config: &str, args: &[&str]) -> TestGateway {
        Self::start_opts(
            config,
            StartOpts {
                args: args.iter().map(|a| a.to_string()).collect(),
                ..StartOpts::default()
            },
        )
        .await
    }

    pub async fn start_opts(config: &str, opts: StartOpts) -> TestGateway {
        let path = scratch("config.toml");
        std::fs::write(&path, config).unwrap();
        let mut cmd = match opts.nofile {
            // `ulimit -n` in a shell that then execs the gateway: same pid, lower fd limit.
            Some(n) => {
                let mut c = Command::new("sh");
                c.arg("-c")
                    .arg(format!("ulimit -n {n} && exec \"$0\" \"$@\""))
                    .arg(env!("CARGO_BIN_EXE_gateway"));
                c
            }
            None => Command::new(env!("CARGO_BIN_EXE_gateway")),
        };
        let mut child = cmd
            .arg("--config")
            .arg(&path)
            .args(["--listen", "127.0.0.1:0"])
            // Two workers unless the test chose.
            .args(if opts.args.iter().any(|a| a == "--workers") {
                &[][..]
            } else {
                &["--workers", "2"][..]
            })
            .args(runtime_args(&opts.args))
            .args(&opts.args)
            .env(UPSTREAM_KEY_ENV, UPSTREAM_KEY)
            .envs(opts.env.iter().map(|(k, v)| (k, v)))
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawning the gateway binary");
        let stdout = Arc::new(Mutex::new(Vec::new()));
        let stderr = Arc::new(Mutex::new(Vec::new()));
        let held_stdout = if opts.stdout_unread {
            child.stdout.take()
        } else {
            collect_lines(child.stdout.take().unwrap(), stdout.clone());
            None
        };
        let (first_tx, first_rx) = std::sync::mpsc::channel();
        {
            let err = child.stderr.take().unwrap();
            let lines = stderr.clone();
            std::thread::spawn(move || {
                let mut tx = Some(first_tx);
                for line in BufReader::new(err).lines() {
                    let Ok(line) = line else { break };
                    if let Some(tx) = tx.take() {
                        let _ = tx.send(line.clone());
                    }
                    lines.lock().unwrap().push(line);
                }
            });
        }
        let first = tokio::task::spawn_blocking(move || first_rx.recv_timeout(PATIENCE))
            .await
            .unwrap();
        let mut gw = TestGateway {
            child,
            addr: SocketAddr::from(([127, 0, 0, 1], 0)),
            metrics_addr: None,
            stdout,
            stderr,
            config_path: path,
            _held_stdout: held_stdout,
        };
        let first = match first {
            Ok(line) => line,
            Err(_) => panic!(
                "the gateway printed nothing on stderr; exit: {:?}",
                gw.child.try_wait()
            ),
        };
        let url = first
            .split("listening on http://")
            .nth(1)
            .unwrap_or_else(|| panic!("unexpected first stderr line: {first:?}"));
        gw.addr = url.trim().parse().unwrap();
        // Give the summary lines a moment to arrive, then find a separate metrics listener.
        let deadline = Instant::now() + PATIENCE;
        loop {
            let lines = gw.stderr_lines();
            if let Some(l) = lines.iter().find(|l| l.contains("metrics:")) {
                if let Some(rest) = l.split("metrics: http://").nth(1) {
                    let a = rest.split('/').next().unwrap();
                    gw.metrics_addr = Some(a.parse().unwrap());
                }
                break;
            }
            assert!(Instant::now() < deadline, "no summary line: {lines:?}");
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        let deadline = Instant::now() + PATIENCE;
        loop {
            if let Ok(r) = try_send(gw.addr, get("/healthz")).await {
                if r.status == StatusCode::OK {
                    break;
                }
            }
            assert!(Instant::now() < deadline, "gateway never became healthy");
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        gw
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    pub fn stdout_lines(&self) -> Vec<String> {
        self.stdout.lock().unwrap().clone()
    }

    pub fn stderr_lines(&self) -> Vec<String> {
        self.stderr.lock().unwrap().clone()
    }

    /// Access-log lines (JSON objects on stdout).
    pub fn access_log(&self) -> Vec<Value> {
        self.stdout_lines()
            .iter()
            .filter_map(|l| serde_json::from_str(l).ok())
            .collect()
    }

    /// Waits until an access-log line matches `pred`, and returns it.
    pub async fn wait_log(&self, what: &str, pred: impl Fn(&Value) -> bool) -> Value {
        let deadline = Instant::now() + PATIENCE;
        loop {
            if let Some(v) = self.access_log().into_iter().find(&pred) {
                return v;
            }
            assert!(
                Instant::now() < deadline,
                "no access-log line {what}; stdout: {:?}",
                self.stdout_lines()
            );
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }

    /// Waits until `n` access-log lines match `pred` (a request's line is written when its
    /// body ends, which can be after the client read that end), and returns them in order.
    pub async fn wait_logs(
        &self,
        what: &str,
        n: usize,
        pred: impl Fn(&Value) -> bool,
    ) -> Vec<Value> {
        let deadline = Instant::now() + PATIENCE;
        loop {
            let lines: Vec<Value> = self.access_log().into_iter().filter(&pred).collect();
            if lines.len() >= n {
                return lines;
            }
            assert!(
                Instant::now() < deadline,
                "{} of {n} access-log lines {what}; stdout: {:?}",
                lines.len(),
                self.stdout_lines()
            );
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }

    /// Sends a request on a fresh connection and reads the whole answer.
    pub async fn send(&self, req: Req) -> Reply {
        send(self.addr, req).await
    }

    /// GET /metrics (on the metrics listener when there is one).
    pub async fn metrics(&self) -> String {
        let addr = self.metrics_addr.unwrap_or(self.addr);
        let r = send(addr, get("/metrics")).await;
        assert_eq!(r.status, StatusCode::OK);
        String::from_utf8(r.body.to_vec()).unwrap()
    }

    /// Waits until `series` (exact name and labels) reads `value` in /metrics.
    pub async fn wait_metric(&self, series: &str, value: f64) -> String {
        let deadline = Instant::now() + PATIENCE;
        loop {
            let text = self.metrics().await;
            if metric(&text, series) == Some(value) {
                return text;
            }
            assert!(
                Instant::now() < deadline,
                "{series} never became {value}; got {:?}\n{text}",
                metric(&text, series)
            );
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }

    pub fn sigterm(&self) {
        signal(self.pid(), "-TERM");
    }

    /// Waits for the process to exit on its own.
    pub async fn wait_exit(&mut self, limit: Duration) -> ExitStatus {
        let deadline = Instant::now() + limit;
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                return status;
            }
            assert!(
                Instant::now() < deadline,
                "the gateway did not exit within {limit:?}; stderr: {:?}",
                self.stderr_lines()
            );
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }

    /// Whether the process is still running.
    pub fn is_running(&mut self) -> bool {
        self.child.try_wait().unwrap().is_none()
    }
}

impl Drop for TestGateway {
    fn drop(&mut self) {
        if self.child.try_wait().ok().flatten().is_none() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
        let _ = std::fs::remove_file(&self.config_path);
    }
}

fn collect_lines(r: impl std::io::Read + Send + 'static, into: Arc<Mutex<Vec<String>>>) {
    std::thread::spawn(move || {
        for line in BufReader::new(r).lines() {
            let Ok(line) = line else { break };
            into.lock().unwrap().push(line);
        }
    });
}

/// Sends a signal with the `kill` utility (the gateway crate has no libc dev-dependency).
pub fn signal(pid: u32, sig: &str) {
    let ok = Command::new("kill")
        .args([sig, &pid.to_string()])
        .status()
        .expect("running kill")
        .success();
    assert!(ok, "kill {sig} {pid} failed");
}

/// The value of one series (exact name and labels) in Prometheus text.
pub fn metric(text: &str, series: &str) -> Option<f64> {
    text.lines().find_map(|l| {
        let rest = l.strip_prefix(series)?;
        rest.strip_prefix(' ')?.trim().parse().ok()
    })
}

/// `gateway_requests_total` for one route, model and status (0 when absent).
pub fn requests_total(text: &str, route: &str, model: &str, status: u16) -> f64 {
    metric(
        text,
        &format!(
            "gateway_requests_total{{route=\"{route}\",model=\"{model}\",status=\"{status}\"}}"
        ),
    )
    .unwrap_or(0.0)
}

pub fn tokens_series(model: &str, direction: &str) -> String {
    format!("gateway_tokens_total{{model=\"{model}\",direction=\"{direction}\"}}")
}

/// A request to send.
#[derive(Clone, Debug)]
pub struct Req {
    pub method: Method,
    pub path: String,
    pub headers: Vec<(String, Vec<u8>)>,
    pub body: Bytes,
}

pub fn get(path: &str) -> Req {
    Req {
        method: Method::GET,
        path: path.to_owned(),
        headers: Vec::new(),
        body: Bytes::new(),
    }
}

pub fn post(path: &str, body: impl Into<Bytes>) -> Req {
    Req {
        method: Method::POST,
        path: path.to_owned(),
        headers: vec![("content-type".into(), b"application/json".to_vec())],
        body: body.into(),
    }
}

impl Req {
    pub fn header(mut self, name: &str, value: impl AsRef<[u8]>) -> Req {
        self.headers
            .push((name.to_owned(), value.as_ref().to_vec()));
        self
    }

    pub fn bearer(self, key: &str) -> Req {
        self.header("authorization", format!("Bearer {key}"))
    }

    pub fn x_api_key(self, key: &str) -> Req {
        self.header("x-api-key", key)
    }

    fn build(&self) -> Request<Full<Bytes>> {
        let mut b = Request::builder()
            .method(self.method.clone())
            .uri(&self.path)
            .header("host", "gateway.test");
        for (n, v) in &self.headers {
            b = b.header(n.as_str(), v.as_slice());
        }
        b.body(Full::new(self.body.clone())).unwrap()
    }
}

/// A whole answer; `body_error` is set when the body ended abnormally (a cut stream).
#[derive(Debug)]
pub struct Reply {
    pub status: StatusCode,
    pub headers: HeaderMap,
    pub body: Bytes,
    pub frames: usize,
    pub body_error: Option<String>,
}

impl Reply {
    pub fn json(&self) -> Value {
        serde_json::from_slice(&self.body).unwrap_or_else(|e| {
            panic!(
                "body is not JSON ({e}): {:?}",
                String::from_utf8_lossy(&self.body)
            )
        })
    }

    pub fn text(&self) -> String {
        String::from_utf8(self.body.to_vec()).expect("UTF-8 body")
    }

    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).map(|v| v.to_str().unwrap())
    }
}

/// Opens a connection and sends one request; returns the response head with its body still
/// streaming.
pub async fn open(addr: SocketAddr, req: Req) -> Result<http::Response<Incoming>, String> {
    let mut sender = trainer::http1::connect(addr).await?;
    sender
        .send_request(req.build())
        .await
        .map_err(|e| format!("request: {e}"))
}

pub async fn try_send(addr: SocketAddr, req: Req) -> Result<Reply, String> {
    let resp = open(addr, req).await?;
    let (parts, mut body) = resp.into_parts();
    let mut buf = Vec::new();
    let mut frames = 0;
    let mut body_error = None;
    loop {
        match body.frame().await {
            None => break,
            Some(Ok(f)) => {
                if let Ok(d) = f.into_data() {
                    frames += 1;
                    buf.extend_from_slice(&d);
                }
            }
            Some(Err(e)) => {
                body_error = Some(e.to_string());
                break;
            }
        }
    }
    Ok(Reply {
        status: parts.status,
        headers: parts.headers,
        body: Bytes::from(buf),
        frames,
        body_error,
    })
}

/// Like [`try_send`], failing the test if the request cannot be sent; bounded by
/// [`PATIENCE`].
pub async fn send(addr: SocketAddr, req: Req) -> Reply {
    let what = format!("{} {}", req.method, req.path);
    match tokio::time::timeout(PATIENCE, try_send(addr, req)).await {
        Ok(Ok(r)) => r,
        Ok(Err(e)) => panic!("{what}: {e}"),
        Err(_) => panic!("{what}: no complete answer within {PATIENCE:?}"),
    }
}

/// Asserts an OpenAI error envelope `{"error":{"message","type","param","code"}}`.
pub fn assert_openai_error(r: &Reply, status: u16) -> Value {
    assert_eq!(
        r.status.as_u16(),
        status,
        "body: {:?}",
        String::from_utf8_lossy(&r.body)
    );
    assert_eq!(r.header("content-type"), Some("application/json"));
    let v = r.json();
    let e = &v["error"];
    assert!(e.is_object(), "no OpenAI error envelope: {v}");
    assert!(e["message"].as_str().is_some_and(|m| !m.is_empty()), "{v}");
    assert!(e["type"].is_string(), "{v}");
    assert!(e.get("param").is_some() && e.get("code").is_some(), "{v}");
    assert!(
        v.get("type").is_none(),
        "OpenAI envelope has no top-level type: {v}"
    );
    assert!(r.header("x-gateway-request-id").is_some());
    v
}

/// Asserts an Anthropic error envelope `{"type":"error","error":{"type","message"}}` and
/// returns `error.type`.
pub fn assert_anthropic_error(r: &Reply, status: u16) -> String {
    assert_eq!(
        r.status.as_u16(),
        status,
        "body: {:?}",
        String::from_utf8_lossy(&r.body)
    );
    assert_eq!(r.header("content-type"), Some("application/json"));
    let v = r.json();
    assert_eq!(v["type"], "error", "{v}");
    assert!(
        v["error"]["message"]
            .as_str()
            .is_some_and(|m| !m.is_empty()),
        "{v}"
    );
    assert!(r.header("x-gateway-request-id").is_some());
    v["error"]["type"].as_str().expect("error.type").to_owned()
}

/// Asserts the route's envelope: Anthropic's on /v1/messages, OpenAI's elsewhere.
pub fn assert_error(path: &str, r: &Reply, status: u16) {
    if path == MESSAGES {
        assert_anthropic_error(r, status);
    } else {
        assert_openai_error(r, status);
    }
}

/// What the mock itself answers to `body` on `path` (sent directly, bypassing the gateway).
pub async fn direct(mock: &MockUpstream, path: &str, body: &str) -> Reply {
    send(mock.addr(), post(path, body.to_owned())).await
}

/// Whether `frames` are complete SSE events (every one ends with a blank line), and their
/// `data:` payloads.
pub fn sse_data(body: &[u8]) -> Vec<String> {
    let text = std::str::from_utf8(body).expect("UTF-8 stream");
    assert!(text.ends_with("\n\n"), "stream ends mid-event: {text:?}");
    text.split_terminator("\n\n")
        .filter_map(|ev| {
            ev.lines()
                .find_map(|l| l.strip_prefix("data: ").map(str::to_owned))
        })
        .collect()
}

/// A listener on 127.0.0.1 (an ephemeral port) that hands each connection it accepts to
/// `on_conn`, on a task of its own; stopped on drop. The test servers below are each one.
pub struct Server {
    pub addr: SocketAddr,
    task: tokio::task::JoinHandle<()>,
}

impl Server {
    pub async fn start<F, Fut>(on_conn: F) -> Server
    where
        F: Fn(tokio::net::TcpStream) -> Fut + Send + 'static,
        Fut: std::future::Future<Output = ()> + Send + 'static,
    {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let task = tokio::spawn(async move {
            loop {
                let Ok((s, _)) = listener.accept().await else {
                    continue;
                };
                tokio::spawn(on_conn(s));
            }
        });
        Server { addr, task }
    }

    pub fn base_url(&self) -> String {
        format!("http://{}", self.addr)
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// A TCP relay in front of an upstream that counts the connections it carried and how many
/// of them are closed: a way to see the gateway cancel an upstream request.
pub struct Relay {
    opened: Arc<AtomicU64>,
    closed: Arc<AtomicU64>,
    server: Server,
}

impl Relay {
    pub async fn start(target: SocketAddr) -> Relay {
        let opened = Arc::new(AtomicU64::new(0));
        let closed = Arc::new(AtomicU64::new(0));
        let (o, c) = (opened.clone(), closed.clone());
        let server = Server::start(move |mut inbound| {
            o.fetch_add(1, Ordering::SeqCst);
            let c = c.clone();
            async move {
                if let Ok(mut outbound) = tokio::net::TcpStream::connect(target).await {
                    let _ = inbound.set_nodelay(true);
                    let _ = outbound.set_nodelay(true);
                    let _ = tokio::io::copy_bidirectional(&mut inbound, &mut outbound).await;
                }
                c.fetch_add(1, Ordering::SeqCst);
            }
        })
        .await;
        Relay {
            opened,
            closed,
            server,
        }
    }

    pub fn base_url(&self) -> String {
        self.server.base_url()
    }

    pub fn opened(&self) -> u64 {
        self.opened.load(Ordering::SeqCst)
    }

    pub fn closed(&self) -> u64 {
        self.closed.load(Ordering::SeqCst)
    }

    /// Waits until `n` carried connections are closed.
    pub async fn wait_closed(&self, n: u64, limit: Duration) {
        let deadline = Instant::now() + limit;
        while self.closed() < n {
            assert!(
                Instant::now() < deadline,
                "only {} of {} relayed connections closed within {limit:?}",
                self.closed(),
                self.opened()
            );
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }
}

/// A scripted raw-HTTP upstream: reads one request per connection (head and a
/// content-length body), writes each step's bytes after its delay, then closes the
/// connection or, with `stall`, holds it open without writing.
pub struct RawUpstream {
    requests: Arc<AtomicU64>,
    server: Server,
}

impl RawUpstream {
    pub async fn start(script: Vec<(Duration, Vec<u8>)>, stall: bool) -> RawUpstream {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let requests = Arc::new(AtomicU64::new(0));
        let count = requests.clone();
        let script = Arc::new(script);
        let server = Server::start(move |mut s| {
            let script = script.clone();
            let count = count.clone();
            async move {
                if read_request(&mut s).await.is_none() {
                    return;
                }
                count.fetch_add(1, Ordering::SeqCst);
                for (delay, bytes) in script.iter() {
                    tokio::time::sleep(*delay).await;
                    if s.write_all(bytes).await.is_err() {
                        return;
                    }
                }
                if stall {
                    // Until the peer goes away.
                    let _ = s.read(&mut [0u8; 64]).await;
                }
            }
        })
        .await;
        RawUpstream { requests, server }
    }

    pub fn base_url(&self) -> String {
        self.server.base_url()
    }

    pub fn requests(&self) -> u64 {
        self.requests.load(Ordering::SeqCst)
    }
}

/// Writes a raw HTTP/1.1 request for `path` with `body` on a new connection.
pub async fn raw_request(addr: SocketAddr, path: &str, body: &str) -> tokio::net::TcpStream {
    use tokio::io::AsyncWriteExt;
    let mut s = tokio::net::TcpStream::connect(addr).await.unwrap();
    let req = format!(
        "POST {path} HTTP/1.1\r\nhost: gw\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n{body}",
        body.len()
    );
    s.write_all(req.as_bytes()).await.unwrap();
    s
}

/// Reads from `s` until `needle` has arrived (or fails the test after [`PATIENCE`]).
pub async fn read_until(s: &mut tokio::net::TcpStream, needle: &[u8]) -> Vec<u8> {
    use tokio::io::AsyncReadExt;
    let mut got = Vec::new();
    let mut chunk = [0u8; 4096];
    let deadline = Instant::now() + PATIENCE;
    while !got.windows(needle.len()).any(|w| w == needle) {
        let left = deadline.saturating_duration_since(Instant::now());
        match tokio::time::timeout(left, s.read(&mut chunk)).await {
            Ok(Ok(0)) => panic!("connection closed before {needle:?}: {got:?}"),
            Ok(Ok(n)) => got.extend_from_slice(&chunk[..n]),
            Ok(Err(e)) => panic!("read failed before {needle:?}: {e}"),
            Err(_) => panic!("no {needle:?} within {PATIENCE:?}: {got:?}"),
        }
    }
    got
}

/// Reads one HTTP/1.1 request (head and a content-length body) from `s`: the head in lower
/// case and the body. `None` if the peer leaves first.
pub async fn read_request(s: &mut tokio::net::TcpStream) -> Option<(String, Vec<u8>)> {
    use tokio::io::AsyncReadExt;
    let mut buf = Vec::new();
    let mut chunk = [0u8; 8192];
    let body_start = loop {
        let n = s.read(&mut chunk).await.ok()?;
        if n == 0 {
            return None;
        }
        buf.extend_from_slice(&chunk[..n]);
        if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break i + 4;
        }
    };
    let head = String::from_utf8_lossy(&buf[..body_start]).to_ascii_lowercase();
    let len: usize = head
        .lines()
        .find_map(|l| l.strip_prefix("content-length:"))
        .map_or(0, |v| v.trim().parse().unwrap());
    while buf.len() < body_start + len {
        let n = s.read(&mut chunk).await.ok()?;
        if n == 0 {
            return None;
        }
        buf.extend_from_slice(&chunk[..n]);
    }
    Some((head, buf[body_start..body_start + len].to_vec()))
}

/// The gateway's peak resident memory so far (`VmHWM`), in KiB.
pub fn peak_rss_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .expect("VmHWM in /proc/PID/status")
}

/// An upstream whose every connection is handed to `handler` after its first request was
/// read: the test writes whatever bytes (or resets) it wants. Request heads are recorded.
pub struct FnUpstream {
    heads: Arc<Mutex<Vec<String>>>,
    server: Server,
}

impl FnUpstream {
    pub async fn start<F, Fut>(handler: F) -> FnUpstream
    where
        F: Fn(tokio::net::TcpStream, String) -> Fut + Send + Sync + 'static,
        Fut: std::future::Future<Output = ()> + Send + 'static,
    {
        let heads = Arc::new(Mutex::new(Vec::new()));
        let h = heads.clone();
        let handler = Arc::new(handler);
        let server = Server::start(move |mut s| {
            let h = h.clone();
            let handler = handler.clone();
            async move {
                let Some((head, _body)) = read_request(&mut s).await else {
                    return;
                };
                h.lock().unwrap().push(head.clone());
                handler(s, head).await;
            }
        })
        .await;
        FnUpstream { heads, server }
    }

    pub fn base_url(&self) -> String {
        self.server.base_url()
    }

    /// The request heads received so far, lower-cased.
    pub fn heads(&self) -> Vec<String> {
        self.heads.lock().unwrap().clone()
    }
}

/// A complete HTTP/1.1 response with a content-length body.
pub fn http_response(status: &str, headers: &[(&str, &str)], body: &[u8]) -> Vec<u8> {
    let mut out = format!("HTTP/1.1 {status}\r\ncontent-length: {}\r\n", body.len());
    for (n, v) in headers {
        out.push_str(&format!("{n}: {v}\r\n"));
    }
    out.push_str("\r\n");
    let mut out = out.into_bytes();
    out.extend_from_slice(body);
    out
}

/// A chat completion body reporting this usage.
pub fn chat_json(prompt: u64, completion: u64) -> String {
    format!(
        r#"{{"id":"chatcmpl-1","object":"chat.completion","created":0,"model":"up-gpt","choices":[{{"index":0,"message":{{"role":"assistant","content":"hi"}},"finish_reason":"stop"}}],"usage":{{"prompt_tokens":{prompt},"completion_tokens":{completion},"total_tokens":0}}}}"#
    )
}

/// One HTTP/1.1 chunk of `data`.
pub fn chunk(data: &[u8]) -> Vec<u8> {
    let mut out = format!("{:x}\r\n", data.len()).into_bytes();
    out.extend_from_slice(data);
    out.extend_from_slice(b"\r\n");
    out
}

/// A raw answer: status, head (lower case) and body (up to the end of the connection or
/// the content-length).
#[derive(Debug)]
pub struct RawReply {
    pub status: u16,
    pub head: String,
    pub body: Vec<u8>,
}

impl RawReply {
    pub fn json(&self) -> Value {
        serde_json::from_slice(&self.body).unwrap_or_else(|e| {
            panic!(
                "body is not JSON ({e}): {:?} / {}",
                String::from_utf8_lossy(&self.body),
                self.head
            )
        })
    }

    pub fn header(&self, name: &str) -> Option<&str> {
        self.head.lines().find_map(|l| {
            let (n, v) = l.split_once(':')?;
            (n.trim() == name).then(|| v.trim())
        })
    }
}

/// Reads one response from `s` within `limit`: `None` if nothing complete came.
pub async fn read_raw_reply(s: &mut tokio::net::TcpStream, limit: Duration) -> Option<RawReply> {
    use tokio::io::AsyncReadExt;
    let deadline = tokio::time::Instant::now() + limit;
    let mut buf = Vec::new();
    let mut chunk = [0u8; 8192];
    loop {
        let done = buf.windows(4).position(|w| w == b"\r\n\r\n").and_then(|i| {
            let head = String::from_utf8_lossy(&buf[..i + 4]).to_ascii_lowercase();
            let len: usize = head
                .lines()
                .find_map(|l| l.strip_prefix("content-length:"))
                .and_then(|v| v.trim().parse().ok())?;
            (buf.len() >= i + 4 + len).then_some((head, i + 4, len))
        });
        if let Some((head, start, len)) = done {
            let status = head.get(9..12).and_then(|s| s.parse().ok()).unwrap_or(0);
            return Some(RawReply {
                status,
                head,
                body: buf[start..start + len].to_vec(),
            });
        }
        match tokio::time::timeout_at(deadline, s.read(&mut chunk)).await {
            Ok(Ok(0)) | Ok(Err(_)) | Err(_) => return None,
            Ok(Ok(n)) => buf.extend_from_slice(&chunk[..n]),
        }
    }
}

/// Writes `bytes` on a new connection (ignoring a peer that closes early) and reads one
/// response.
pub async fn raw_exchange(addr: SocketAddr, bytes: &[u8]) -> Option<RawReply> {
    use tokio::io::AsyncWriteExt;
    let mut s = tokio::net::TcpStream::connect(addr).await.unwrap();
    let _ = s.write_all(bytes).await;
    read_raw_reply(&mut s, PATIENCE).await
}

/// Asserts a raw reply carries the route's envelope (Anthropic's when `anthropic`).
pub fn assert_raw_envelope(r: &RawReply, status: u16, anthropic: bool) {
    assert_eq!(
        r.status,
        status,
        "{} {:?}",
        r.head,
        String::from_utf8_lossy(&r.body)
    );
    assert_eq!(
        r.header("content-type"),
        Some("application/json"),
        "{}",
        r.head
    );
    let v = r.json();
    if anthropic {
        assert_eq!(v["type"], "error", "{v}");
        assert!(v["error"]["type"].is_string(), "{v}");
    } else {
        assert!(v["error"]["message"].is_string(), "{v}");
        assert!(v.get("type").is_none(), "{v}");
    }
}

/// The value of `series`, 0 when absent.
pub fn metric_or_zero(text: &str, series: &str) -> f64 {
    metric(text, series).unwrap_or(0.0)
}

pub fn upstream_errors(model: &str, kind: &str) -> String {
    format!("gateway_upstream_errors_total{{model=\"{model}\",kind=\"{kind}\"}}")
}

/// A mock whose streams would take 30 s (1,200 events 25 ms apart): for clients that leave.
pub async fn slow_stream_mock() -> MockUpstream {
    MockUpstream::start(MockConfig {
        chunks: 1200,
        chunk_delay: Duration::from_millis(25),
        ..MockConfig::default()
    })
    .await
    .unwrap()
}

/// A mock upstream whose streams stall after their second event.
pub async fn stalling_mock() -> MockUpstream {
    MockUpstream::start(MockConfig {
        stall_after_events: Some(2),
        ..MockConfig::default()
    })
    .await
    .unwrap()
}

/// A gateway with `grace_ms` of shutdown grace and one chat stream open through it to
/// `mock` (a [`stalling_mock`]); its first frame has reached the client. The returned body
/// keeps the stream open: the shutdown tests cut it.
pub async fn gateway_with_stalled_stream(
    mock: &MockUpstream,
    grace_ms: u64,
) -> (TestGateway, Incoming) {
    let config = format!(
        "[server]\nshutdown_grace_ms = {grace_ms}\n{}",
        two_models(&mock.base_url())
    );
    let gw = TestGateway::start(&config).await;
    let resp = open(gw.addr, post(CHAT, body(CHAT, "gpt", true)))
        .await
        .unwrap();
    let mut stream = resp.into_body();
    stream.frame().await.unwrap().unwrap();
    (gw, stream)
}

/// An upstream that records every request (head and JSON body) and answers each with the
/// byte pieces `answer` returns for it, written one by one with a pause between them (so
/// the gateway reads them apart: split events, split UTF-8), then closes the connection.
pub struct ScriptedUpstream {
    requests: Arc<Mutex<Vec<(String, Value)>>>,
    server: Server,
}

impl ScriptedUpstream {
    pub async fn start<F>(answer: F) -> ScriptedUpstream
    where
        F: Fn(&str, &Value) -> Vec<Vec<u8>> + Send + Sync + 'static,
    {
        use tokio::io::AsyncWriteExt;
        let requests = Arc::new(Mutex::new(Vec::new()));
        let seen = requests.clone();
        let answer = Arc::new(answer);
        let server = Server::start(move |mut s| {
            let _ = s.set_nodelay(true);
            let seen = seen.clone();
            let answer = answer.clone();
            async move {
                let Some((head, body)) = read_request(&mut s).await else {
                    return;
                };
                let json: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
                let pieces = answer(&head, &json);
                seen.lock().unwrap().push((head, json));
                for p in pieces {
                    if s.write_all(&p).await.is_err() {
                        return;
                    }
                    let _ = s.flush().await;
                    tokio::time::sleep(Duration::from_millis(2)).await;
                }
            }
        })
        .await;
        ScriptedUpstream { requests, server }
    }

    pub fn base_url(&self) -> String {
        self.server.base_url()
    }

    /// The requests received so far: lower-cased head and JSON body.
    pub fn requests(&self) -> Vec<(String, Value)> {
        self.requests.lock().unwrap().clone()
    }
}

/// An SSE answer: the head, then `body` in pieces of `piece` bytes (cutting events and
/// UTF-8 characters wherever they fall), the connection's end ending the body.
pub fn sse_pieces(body: &str, piece: usize) -> Vec<Vec<u8>> {
    let mut out = vec![
        b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\nconnection: close\r\n\r\n".to_vec(),
    ];
    out.extend(body.as_bytes().chunks(piece).map(<[u8]>::to_vec));
    out
}

/// A JSON answer in one piece.
pub fn json_answer(status: &str, body: &str) -> Vec<Vec<u8>> {
    vec![http_response(
        status,
        &[
            ("content-type", "application/json"),
            ("connection", "close"),
        ],
        body.as_bytes(),
    )]
}

/// The events of an SSE body: (event name, data).
pub fn sse_events(body: &[u8]) -> Vec<(String, String)> {
    let text = std::str::from_utf8(body).expect("the stream is UTF-8");
    text.split("\n\n")
        .filter(|e| !e.trim().is_empty())
        .map(|e| {
            let mut name = String::new();
            let mut data = String::new();
            for line in e.lines() {
                if let Some(v) = line.strip_prefix("event: ") {
                    name = v.to_owned();
                } else if let Some(v) = line.strip_prefix("data: ") {
                    data.push_str(v);
                }
            }
            (name, data)
        })
        .collect()
}
