//! The gateway's upstream credentials never reach a client, whatever the path: every client
//! dialect (chat, responses, messages, Gemini with and without `alt=sse`) x every provider
//! kind x stream and buffered x 2xx, 4xx and 5xx, against one upstream that echoes each
//! credential it received (the key, the token, the Bedrock session token and the request's
//! SigV4 signature) raw, JSON-escaped (`\/` and `\u`) and URL-encoded, in its bodies, its
//! stream events, its error events and a header. No client output may hold any of them in
//! any form; each answer must show `[redacted]` where the echo was (so a path that lost
//! the echo altogether cannot pass unseen).
//!
//! Also here: streams stay streams (a passthrough Gemini JSON-array stream passes as it
//! comes, with no total cap; a request for one JSON answer never gets a stream).

use std::time::Duration;

use serde_json::Value;

use crate::support::*;

const CLIENT_KEY: &str = "client-key-rd";

/// The credentials, each with a `/` (JSON may escape it) and a `+` and `=` (URL-encoding
/// must).
const KEYS: [(&str, &str); 6] = [
    ("RD_OPENAI_KEY", "sk-oa/Key+01=="),
    ("RD_ANTHROPIC_KEY", "sk-ant/Key+02=="),
    ("RD_GEMINI_KEY", "AIza/gemKey+03"),
    ("RD_COMPAT_KEY", "compat/Key+04"),
    ("RD_AZURE_KEY", "azure/Key+05=="),
    ("RD_VERTEX_TOKEN", "ya29.vertex/Tok+06"),
];
const AWS_SECRET: &str = "aws/Secret+Key07==";
const AWS_SESSION: &str = "IQoJb3/session+Token08==";

/// Each provider kind: the target's table (after `provider`, `base_url`, `model`).
const PROVIDERS: [(&str, &str); 8] = [
    ("openai", "api_key_env = \"RD_OPENAI_KEY\""),
    ("anthropic", "api_key_env = \"RD_ANTHROPIC_KEY\""),
    ("gemini", "api_key_env = \"RD_GEMINI_KEY\""),
    ("openai-compatible", "api_key_env = \"RD_COMPAT_KEY\""),
    (
        "azure-openai",
        "api_key_env = \"RD_AZURE_KEY\"\napi_version = \"2025-04-01-preview\"",
    ),
    (
        "vertex",
        "access_token_env = \"RD_VERTEX_TOKEN\"\nproject = \"p\"\nlocation = \"us-central1\"",
    ),
    (
        "vertex-anthropic",
        "access_token_env = \"RD_VERTEX_TOKEN\"\nproject = \"p\"\nlocation = \"us-east5\"",
    ),
    (
        "bedrock",
        "region = \"eu-west-1\"\naws_credentials = \"env\"",
    ),
];

/// What the upstream answers: the status the target's model names.
const CLASSES: [(&str, u16); 3] = [("ok", 200), ("e400", 400), ("e500", 500)];

/// How a client asks.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Ask {
    Chat,
    Responses,
    Messages,
    /// Gemini's `generateContent`, or `streamGenerateContent` with `alt=sse` (`sse`) or
    /// without (one JSON array).
    Gemini {
        sse: bool,
    },
}

const ASKS: [Ask; 5] = [
    Ask::Chat,
    Ask::Responses,
    Ask::Messages,
    Ask::Gemini { sse: true },
    Ask::Gemini { sse: false },
];

fn config(base: &str) -> String {
    let mut s = format!("[[keys]]\nname = \"k\"\nkey = \"{CLIENT_KEY}\"\n");
    for (provider, extra) in PROVIDERS {
        for (class, _) in CLASSES {
            s.push_str(&format!(
                "[[models]]\nname = \"{provider}-{class}\"\n[[models.targets]]\nprovider = \"{provider}\"\nbase_url = \"{base}\"\nmodel = \"up-{class}\"\n{extra}\n"
            ));
        }
    }
    s
}

fn env() -> StartOpts {
    let mut env: Vec<(String, String)> = KEYS
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    env.push(("AWS_ACCESS_KEY_ID".into(), "AKIDREDACTION01".into()));
    env.push(("AWS_SECRET_ACCESS_KEY".into(), AWS_SECRET.into()));
    env.push(("AWS_SESSION_TOKEN".into(), AWS_SESSION.into()));
    StartOpts {
        env,
        ..StartOpts::default()
    }
}

/// The credentials in a request head (lower-cased): keys and tokens as sent, and a SigV4
/// request's signature.
fn credentials_in(head: &str) -> Vec<String> {
    let mut out = Vec::new();
    for line in head.lines() {
        let Some((name, value)) = line.split_once(':') else {
            continue;
        };
        let value = value.trim();
        match name {
            "authorization" => match value.split_once("signature=") {
                Some((_, sig)) => out.push(sig.to_owned()),
                None => out.push(value.trim_start_matches("bearer ").to_owned()),
            },
            "x-api-key" | "x-goog-api-key" | "api-key" | "x-amz-security-token" => {
                out.push(value.to_owned())
            }
            _ => {}
        }
    }
    out
}

/// The head is lower-cased: the secret as configured is the one that matches it so.
fn as_sent(lower: &str) -> String {
    let all = KEYS
        .iter()
        .map(|(_, v)| *v)
        .chain([AWS_SECRET, AWS_SESSION]);
    all.into_iter()
        .find(|v| v.to_lowercase() == lower)
        .map_or_else(|| lower.to_owned(), str::to_owned)
}

fn json_escaped(s: &str) -> String {
    // The first character as `\u00XX`, every `/` as `\/`.
    let mut chars = s.chars();
    let first = chars.next().unwrap();
    format!(
        "\\u{:04x}{}",
        first as u32,
        chars.as_str().replace('/', "\\/")
    )
}

fn url_encoded(s: &str) -> String {
    s.bytes().map(|b| format!("%{b:02X}")).collect()
}

/// The echo of `secrets` as JSON string content: raw, JSON-escaped and URL-encoded.
fn echo(secrets: &[String]) -> String {
    secrets
        .iter()
        .map(|s| format!("raw {s} json {} url {}", json_escaped(s), url_encoded(s)))
        .collect::<Vec<_>>()
        .join("; ")
}

/// The upstream's API, from the path it was called at.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Api {
    Chat,
    Responses,
    Messages,
    Gemini,
    Converse,
}

fn api_of(path: &str) -> Api {
    if path.contains("/chat/completions") {
        Api::Chat
    } else if path.contains("/responses") {
        Api::Responses
    } else if path.contains("/messages") || path.contains("rawpredict") {
        Api::Messages
    } else if path.contains("generatecontent") {
        Api::Gemini
    } else {
        Api::Converse
    }
}

/// One Bedrock event-stream frame.
fn frame(message_type: &str, type_header: &str, name: &str, payload: &str) -> Vec<u8> {
    let mut h = Vec::new();
    for (k, v) in [
        (type_header, name),
        (":content-type", "application/json"),
        (":message-type", message_type),
    ] {
        h.push(k.len() as u8);
        h.extend_from_slice(k.as_bytes());
        h.push(7);
        h.extend_from_slice(&(v.len() as u16).to_be_bytes());
        h.extend_from_slice(v.as_bytes());
    }
    let total = 12 + h.len() + payload.len() + 4;
    let mut f = Vec::with_capacity(total);
    f.extend_from_slice(&(total as u32).to_be_bytes());
    f.extend_from_slice(&(h.len() as u32).to_be_bytes());
    let crc = crc32fast::hash(&f);
    f.extend_from_slice(&crc.to_be_bytes());
    f.extend_from_slice(&h);
    f.extend_from_slice(payload.as_bytes());
    let crc = crc32fast::hash(&f);
    f.extend_from_slice(&crc.to_be_bytes());
    f
}

/// The echoing upstream's answer to one request.
fn answer(head: &str, body: &Value) -> Vec<Vec<u8>> {
    let first = head.lines().next().unwrap_or_default();
    let path = first.split(' ').nth(1).unwrap_or_default().to_owned();
    let api = api_of(&path);
    let secrets: Vec<String> = credentials_in(head).iter().map(|s| as_sent(s)).collect();
    let t = echo(&secrets);
    let model = format!("{path} {}", body["model"].as_str().unwrap_or_default());
    let status = CLASSES
        .iter()
        .find(|(c, _)| model.contains(&format!("up-{c}")))
        .map_or(200, |&(_, s)| s);
    let stream = body["stream"] == Value::Bool(true)
        || path.contains("streamgeneratecontent")
        || path.contains("streamrawpredict")
        || path.contains("converse-stream");
    let sse = !path.contains("streamgeneratecontent") || path.contains("alt=sse");
    let raw = secrets.first().cloned().unwrap_or_default();
    let head_of = |status: &str, ty: &str| {
        format!(
            "HTTP/1.1 {status}\r\ncontent-type: {ty}\r\nx-request-id: {raw}\r\nx-ratelimit-echo: {} {}\r\nconnection: close\r\n\r\n",
            json_escaped(&raw),
            url_encoded(&raw)
        )
        .into_bytes()
    };
    if status != 200 {
        let body = match api {
            Api::Chat | Api::Responses => {
                format!(r#"{{"error":{{"message":"{t}","type":"invalid_request_error"}}}}"#)
            }
            Api::Messages => format!(
                r#"{{"type":"error","error":{{"type":"invalid_request_error","message":"{t}"}}}}"#
            ),
            Api::Gemini => format!(
                r#"{{"error":{{"code":{status},"message":"{t}","status":"INVALID_ARGUMENT"}}}}"#
            ),
            Api::Converse => format!(r#"{{"message":"{t}"}}"#),
        };
        let status = if status == 400 {
            "400 Bad Request"
        } else {
            "500 Internal Server Error"
        };
        let mut out = head_of(status, "application/json");
        out.extend_from_slice(body.as_bytes());
        return vec![out];
    }
    let gemini_chunk = format!(
        r#"{{"candidates":[{{"content":{{"role":"model","parts":[{{"text":"{t}"}}]}},"finishReason":"STOP"}}],"usageMetadata":{{"promptTokenCount":3,"candidatesTokenCount":2,"totalTokenCount":5}}}}"#
    );
    if !stream {
        let body = match api {
            Api::Chat => format!(
                r#"{{"id":"c1","object":"chat.completion","created":0,"model":"up","choices":[{{"index":0,"message":{{"role":"assistant","content":"{t}"}},"finish_reason":"stop"}}],"usage":{{"prompt_tokens":3,"completion_tokens":2,"total_tokens":5}}}}"#
            ),
            Api::Responses => format!(
                r#"{{"id":"resp_1","object":"response","created_at":0,"status":"completed","model":"up","output":[{{"type":"message","id":"msg_1","status":"completed","role":"assistant","content":[{{"type":"output_text","text":"{t}","annotations":[]}}]}}],"usage":{{"input_tokens":3,"output_tokens":2,"total_tokens":5}}}}"#
            ),
            Api::Messages => format!(
                r#"{{"id":"msg_1","type":"message","role":"assistant","model":"up","content":[{{"type":"text","text":"{t}"}}],"stop_reason":"end_turn","stop_sequence":null,"usage":{{"input_tokens":3,"output_tokens":2}}}}"#
            ),
            Api::Gemini => gemini_chunk,
            Api::Converse => format!(
                r#"{{"output":{{"message":{{"role":"assistant","content":[{{"text":"{t}"}}]}}}},"stopReason":"end_turn","usage":{{"inputTokens":3,"outputTokens":2,"totalTokens":5}}}}"#
            ),
        };
        let mut out = head_of("200 OK", "application/json");
        out.extend_from_slice(body.as_bytes());
        return vec![out];
    }
    // Streams: a text event with the echo, then an error event with it, in small pieces.
    let (ty, body): (&str, Vec<u8>) = match api {
        Api::Chat => (
            "text/event-stream",
            format!(
                "data: {{\"id\":\"c1\",\"object\":\"chat.completion.chunk\",\"created\":0,\"model\":\"up\",\"choices\":[{{\"index\":0,\"delta\":{{\"role\":\"assistant\",\"content\":\"{t}\"}},\"finish_reason\":null}}]}}\n\ndata: {{\"error\":{{\"message\":\"{t}\",\"type\":\"server_error\"}}}}\n\n"
            )
            .into_bytes(),
        ),
        Api::Responses => (
            "text/event-stream",
            format!(
                "event: response.output_text.delta\ndata: {{\"type\":\"response.output_text.delta\",\"item_id\":\"msg_1\",\"output_index\":0,\"content_index\":0,\"delta\":\"{t}\"}}\n\nevent: error\ndata: {{\"type\":\"error\",\"message\":\"{t}\"}}\n\n"
            )
            .into_bytes(),
        ),
        Api::Messages => (
            "text/event-stream",
            format!(
                "event: message_start\ndata: {{\"type\":\"message_start\",\"message\":{{\"id\":\"msg_1\",\"type\":\"message\",\"role\":\"assistant\",\"model\":\"up\",\"content\":[],\"stop_reason\":null,\"usage\":{{\"input_tokens\":3,\"output_tokens\":0}}}}}}\n\nevent: content_block_start\ndata: {{\"type\":\"content_block_start\",\"index\":0,\"content_block\":{{\"type\":\"text\",\"text\":\"\"}}}}\n\nevent: content_block_delta\ndata: {{\"type\":\"content_block_delta\",\"index\":0,\"delta\":{{\"type\":\"text_delta\",\"text\":\"{t}\"}}}}\n\nevent: error\ndata: {{\"type\":\"error\",\"error\":{{\"type\":\"overloaded_error\",\"message\":\"{t}\"}}}}\n\n"
            )
            .into_bytes(),
        ),
        Api::Gemini if sse => (
            "text/event-stream",
            format!(
                "data: {gemini_chunk}\n\ndata: {{\"error\":{{\"code\":500,\"message\":\"{t}\",\"status\":\"INTERNAL\"}}}}\n\n"
            )
            .into_bytes(),
        ),
        Api::Gemini => (
            "application/json",
            format!(
                "[{gemini_chunk},\r\n{{\"error\":{{\"code\":500,\"message\":\"{t}\",\"status\":\"INTERNAL\"}}}}]"
            )
            .into_bytes(),
        ),
        Api::Converse => {
            let mut b = frame(
                "event",
                ":event-type",
                "messageStart",
                r#"{"role":"assistant"}"#,
            );
            b.extend(frame(
                "event",
                ":event-type",
                "contentBlockDelta",
                &format!(r#"{{"contentBlockIndex":0,"delta":{{"text":"{t}"}}}}"#),
            ));
            b.extend(frame(
                "exception",
                ":exception-type",
                "internalServerException",
                &format!(r#"{{"message":"{t}"}}"#),
            ));
            ("application/vnd.amazon.eventstream", b)
        }
    };
    let mut out = vec![head_of("200 OK", ty)];
    out.extend(body.chunks(7).map(<[u8]>::to_vec));
    out
}

/// Every escape and `%XX` of `text` decoded, left to right.
fn decoded(text: &str) -> String {
    let b = text.as_bytes();
    let hex = |i: usize, n: usize| {
        b.get(i..i + n)
            .and_then(|h| std::str::from_utf8(h).ok())
            .and_then(|h| u32::from_str_radix(h, 16).ok())
    };
    let mut out = String::new();
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' {
            if let Some(v) = hex(i + 1, 2) {
                out.push(v as u8 as char);
                i += 3;
                continue;
            }
        }
        if b[i] == b'\\' {
            if let Some(&e) = b.get(i + 1) {
                if e == b'u' {
                    if let Some(c) = hex(i + 2, 4).and_then(char::from_u32) {
                        out.push(c);
                        i += 6;
                        continue;
                    }
                } else if matches!(e, b'/' | b'\\' | b'"') {
                    out.push(e as char);
                    i += 2;
                    continue;
                }
            }
        }
        out.push(b[i] as char);
        i += 1;
    }
    out
}

/// A client request: route and body.
fn request(ask: Ask, model: &str, stream: bool) -> Req {
    let req = match ask {
        Ask::Chat => post(CHAT, body(CHAT, model, stream)),
        Ask::Responses => post(RESPONSES, body(RESPONSES, model, stream)),
        Ask::Messages => post(MESSAGES, body(MESSAGES, model, stream)),
        Ask::Gemini { sse } => {
            let method = match (stream, sse) {
                (false, _) => "generateContent",
                (true, true) => "streamGenerateContent?alt=sse",
                (true, false) => "streamGenerateContent",
            };
            post(
                &format!("/v1beta/models/{model}:{method}"),
                r#"{"contents":[{"role":"user","parts":[{"text":"Say hi"}]}]}"#,
            )
        }
    };
    req.bearer(CLIENT_KEY)
}

/// Runs the cases `pick` selects; returns how many ran. Every failure is collected and
/// reported together.
async fn matrix(pick: impl Fn(&str, Ask, bool, u16) -> bool) -> usize {
    let up = ScriptedUpstream::start(answer).await;
    let gw = TestGateway::start_opts(&config(&up.base_url()), env()).await;
    let mut failures = Vec::new();
    let mut ran = 0;
    for (provider, _) in PROVIDERS {
        for (class, status) in CLASSES {
            for ask in ASKS {
                for stream in [false, true] {
                    if matches!(ask, Ask::Gemini { sse: false }) && !stream {
                        continue; // the same request as `sse: true`, unstreamed
                    }
                    if !pick(provider, ask, stream, status) {
                        continue;
                    }
                    ran += 1;
                    let model = format!("{provider}-{class}");
                    let before = up.requests().len();
                    let r = gw.send(request(ask, &model, stream)).await;
                    let case = format!("{provider} {ask:?} stream={stream} {class}");
                    let called = up.requests();
                    let Some((head, _)) = called.get(before) else {
                        failures.push(format!("{case}: upstream not called ({})", r.status));
                        continue;
                    };
                    let mut secrets: Vec<String> =
                        credentials_in(head).iter().map(|s| as_sent(s)).collect();
                    secrets.extend(KEYS.iter().map(|(_, v)| v.to_string()));
                    secrets.extend([AWS_SECRET.to_owned(), AWS_SESSION.to_owned()]);
                    let body = String::from_utf8_lossy(&r.body).into_owned();
                    let mut seen = body.clone();
                    for (n, v) in r.headers.iter() {
                        seen.push_str(&format!("\n{n}: {}", String::from_utf8_lossy(v.as_bytes())));
                    }
                    let plain = decoded(&seen);
                    for s in &secrets {
                        for (form, text) in [("raw", &seen), ("decoded", &plain)] {
                            if text.contains(s.as_str()) {
                                failures.push(format!("{case}: {s} ({form}) in {seen}"));
                            }
                        }
                    }
                    if status == 200 && !r.status.is_success() {
                        failures.push(format!("{case}: {} {body}", r.status));
                    }
                    if status != 200 && r.status.as_u16() != status {
                        failures.push(format!("{case}: {} for {status}: {body}", r.status));
                    }
                    if !body.contains("[redacted]") {
                        failures.push(format!("{case}: nothing redacted in {body}"));
                    }
                }
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} failures in {ran} cases:\n{}",
        failures.len(),
        failures.join("\n")
    );
    ran
}

#[tokio::test]
async fn every_path_redacts_every_credential_in_every_form() {
    let ran = matrix(|_, _, _, _| true).await;
    // 8 provider kinds x 3 status classes x (4 dialects x stream/buffered + Gemini's
    // JSON-array stream).
    assert_eq!(ran, 8 * 3 * 9);
}

/// A translated stream (an Anthropic client on an OpenAI target) carries the upstream's
/// error event with the key in it.
#[tokio::test]
async fn translated_streams_are_redacted() {
    matrix(|p, ask, stream, status| {
        p == "openai" && ask == Ask::Messages && stream && status == 200
    })
    .await;
}

/// Gemini's JSON-array stream (a 200 that carries an error element) passed through.
#[tokio::test]
async fn gemini_json_array_streams_are_redacted() {
    matrix(|p, ask, stream, status| {
        p == "gemini" && ask == Ask::Gemini { sse: false } && stream && status == 200
    })
    .await;
}

/// A Bedrock error quoting the session token JSON-escaped (`\/`): error translation decodes
/// it and writes it again in clear.
#[tokio::test]
async fn escaped_session_tokens_in_translated_errors_are_redacted() {
    matrix(|p, ask, stream, status| p == "bedrock" && ask == Ask::Chat && !stream && status == 400)
        .await;
}

/// The request's own SigV4 signature, echoed in a successful answer.
#[tokio::test]
async fn sigv4_signatures_are_redacted() {
    matrix(|p, ask, stream, status| {
        p == "bedrock" && ask == Ask::Responses && !stream && status == 200
    })
    .await;
}

/// A passthrough `streamGenerateContent` without `alt=sse` is one JSON array that Google
/// writes as the model goes: it reaches the client as it comes (its first element long
/// before the last), past `response_timeout_ms` and `max_response_body_bytes` (which bound
/// buffered answers, not streams), with its usage accounted.
#[tokio::test]
async fn gemini_json_array_streams_pass_as_they_come() {
    use http_body_util::BodyExt;
    use tokio::io::AsyncWriteExt;
    let element = format!(
        r#"{{"candidates":[{{"content":{{"role":"model","parts":[{{"text":"{}"}}]}}}}]}}"#,
        "word ".repeat(100)
    );
    let last = r#"{"candidates":[{"content":{"role":"model","parts":[{"text":"."}]},"finishReason":"STOP"}],"usageMetadata":{"promptTokenCount":7,"candidatesTokenCount":5,"totalTokenCount":12}}"#;
    let whole = format!("[{element},\r\n{element},\r\n{last}]");
    let (first, rest) = whole.split_at(element.len() + 3);
    let (first, rest) = (first.to_owned(), rest.to_owned());
    let up = FnUpstream::start(move |mut s, _| {
        let (first, rest) = (first.clone(), rest.clone());
        async move {
            let head = "HTTP/1.1 200 OK\r\ncontent-type: application/json; charset=UTF-8\r\ntransfer-encoding: chunked\r\n\r\n";
            let _ = s.write_all(head.as_bytes()).await;
            let _ = s.write_all(&chunk(first.as_bytes())).await;
            tokio::time::sleep(Duration::from_millis(1500)).await;
            let _ = s.write_all(&chunk(rest.as_bytes())).await;
            let _ = s.write_all(b"0\r\n\r\n").await;
            let _ = s.flush().await;
        }
    })
    .await;
    let config = format!(
        "[upstream]\nidle_timeout_ms = 5000\nresponse_timeout_ms = 1000\nmax_response_body_bytes = 1024\n[[keys]]\nname = \"k\"\nkey = \"{CLIENT_KEY}\"\n{}",
        model("gem", &[("gemini", &up.base_url())])
    );
    let gw = TestGateway::start(&config).await;
    let start = std::time::Instant::now();
    let req = post(
        "/v1beta/models/gem:streamGenerateContent",
        r#"{"contents":[{"role":"user","parts":[{"text":"Say hi"}]}]}"#,
    )
    .bearer(CLIENT_KEY);
    let resp = open(gw.addr, req).await.unwrap();
    assert_eq!(resp.status(), 200);
    assert!(
        resp.headers()["content-type"]
            .to_str()
            .unwrap()
            .starts_with("application/json"),
        "{:?}",
        resp.headers()
    );
    let mut body = resp.into_body();
    let mut got = Vec::new();
    let mut first_at = None;
    while let Some(f) = body.frame().await {
        if let Ok(d) = f.unwrap().into_data() {
            first_at.get_or_insert(start.elapsed());
            got.extend_from_slice(&d);
        }
    }
    assert_eq!(String::from_utf8(got).unwrap(), whole);
    let first_at = first_at.unwrap();
    assert!(
        first_at < Duration::from_millis(1000),
        "first bytes after {first_at:?}"
    );
    let line = gw
        .wait_log("the JSON-array stream", |l| l["model"] == "gem")
        .await;
    assert_eq!(line["status"], 200, "{line}");
    assert_eq!(line["input_tokens"], 7, "{line}");
    assert_eq!(line["output_tokens"], 5, "{line}");
}

/// A request for one JSON answer never gets a stream: an upstream that streams anyway
/// (SSE to a passthrough chat, messages or Gemini call; AWS's event stream to Bedrock's
/// `/converse`) gets the client a 502 in its dialect saying why.
#[tokio::test]
async fn json_requests_never_get_streams() {
    let up = ScriptedUpstream::start(|head, _| {
        if head.contains("/converse") {
            let f = frame("event", ":event-type", "messageStart", r#"{"role":"assistant"}"#);
            let mut out = b"HTTP/1.1 200 OK\r\ncontent-type: application/vnd.amazon.eventstream\r\nconnection: close\r\n\r\n".to_vec();
            out.extend(f);
            return vec![out];
        }
        sse_pieces("data: {\"x\":1}\n\n", 64)
    })
    .await;
    let base = up.base_url();
    let mut config = format!("[[keys]]\nname = \"k\"\nkey = \"{CLIENT_KEY}\"\n");
    for (provider, extra) in PROVIDERS {
        config.push_str(&format!(
            "[[models]]\nname = \"{provider}\"\n[[models.targets]]\nprovider = \"{provider}\"\nbase_url = \"{base}\"\nmodel = \"up-ok\"\n{extra}\n"
        ));
    }
    let gw = TestGateway::start_opts(&config, env()).await;
    let mut n = 0;
    for (provider, _) in PROVIDERS {
        for ask in [
            Ask::Chat,
            Ask::Responses,
            Ask::Messages,
            Ask::Gemini { sse: true },
        ] {
            let r = gw.send(request(ask, provider, false)).await;
            let case = format!("{provider} {ask:?}");
            assert_eq!(r.status, 502, "{case}: {}", r.text());
            assert!(
                r.header("content-type")
                    .is_some_and(|t| t.starts_with("application/json")),
                "{case}"
            );
            assert!(r.text().contains("with a stream"), "{case}: {}", r.text());
            n += 1;
        }
    }
    assert_eq!(n, 32);
}
