//! Gemini, the fourth dialect, through the real gateway process: Google's routes, keys and
//! error envelope; passthrough to a Gemini upstream (model in the path, body untouched, the
//! client's query key never forwarded); Gemini clients on other providers and other
//! clients on Gemini, streaming and not, with thought signatures carried back byte for byte.

use crate::support::*;
use http::StatusCode;
use serde_json::{json, Value};

const CLIENT_KEY: &str = "client-key-1";

const GEMINI_JSON: &str = r#"{"candidates":[{"content":{"role":"model","parts":[{"text":"Let me look."},{"functionCall":{"id":"fc_7","name":"get_weather","args":{"city":"Paris"}},"thoughtSignature":"CiQBcsjafE4pWq+/Zx9ag=="}]},"finishReason":"STOP","index":0}],"usageMetadata":{"promptTokenCount":20,"candidatesTokenCount":4,"thoughtsTokenCount":3,"cachedContentTokenCount":6,"totalTokenCount":27},"modelVersion":"gemini-up","responseId":"resp-9"}"#;

const GEMINI_SSE: &str = concat!(
    "data: {\"candidates\":[{\"content\":{\"role\":\"model\",\"parts\":[{\"text\":\"日本\"}]},\"index\":0}],\"usageMetadata\":{\"promptTokenCount\":8},\"modelVersion\":\"gemini-up\",\"responseId\":\"r1\"}\r\n\r\n",
    "data: {\"candidates\":[{\"content\":{\"role\":\"model\",\"parts\":[{\"text\":\"é!\"}]},\"index\":0}]}\r\n\r\n",
    "data: {\"candidates\":[{\"content\":{\"role\":\"model\",\"parts\":[{\"text\":\"\"}]},\"finishReason\":\"STOP\",\"index\":0}],\"usageMetadata\":{\"promptTokenCount\":8,\"candidatesTokenCount\":5}}\r\n\r\n",
);

/// `streamGenerateContent` without `alt=sse`: one JSON array of chunks.
const GEMINI_ARRAY: &str = r#"[{"candidates":[{"content":{"role":"model","parts":[{"text":"Hi"}]},"index":0}],"usageMetadata":{"promptTokenCount":9}}
,
{"candidates":[{"content":{"role":"model","parts":[{"text":"!"}]},"finishReason":"STOP","index":0}],"usageMetadata":{"promptTokenCount":9,"candidatesTokenCount":2}}
]"#;

const CHAT_JSON: &str = r#"{"id":"chatcmpl-9","object":"chat.completion","created":1,"model":"gpt-up","choices":[{"index":0,"message":{"role":"assistant","content":"Hi there","tool_calls":[{"id":"call_1","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Paris\"}"}}]},"finish_reason":"tool_calls"}],"usage":{"prompt_tokens":20,"completion_tokens":4,"total_tokens":24,"prompt_tokens_details":{"cached_tokens":6}}}"#;

const ANTHROPIC_SSE: &str = concat!(
    "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_2\",\"type\":\"message\",\"role\":\"assistant\",\"model\":\"claude-up\",\"content\":[],\"usage\":{\"input_tokens\":5,\"output_tokens\":1}}}\n\n",
    "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n",
    "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"日本é!\"}}\n\n",
    "event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n",
    "event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\",\"stop_sequence\":null},\"usage\":{\"output_tokens\":7}}\n\n",
    "event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n",
);

/// Answers Gemini paths in Gemini, `/v1/messages` in Anthropic's SSE, others in chat JSON.
async fn upstream() -> ScriptedUpstream {
    ScriptedUpstream::start(|head, _body| {
        let path = head
            .split_whitespace()
            .nth(1)
            .unwrap_or_default()
            .to_owned();
        if path.contains(":streamgeneratecontent") && !path.contains("alt=sse") {
            json_answer("200 OK", GEMINI_ARRAY)
        } else if path.contains(":streamgeneratecontent") {
            sse_pieces(GEMINI_SSE, 7)
        } else if path.contains(":generatecontent") {
            json_answer("200 OK", GEMINI_JSON)
        } else if path.contains(":counttokens") {
            json_answer("200 OK", r#"{"totalTokens":31}"#)
        } else if path.starts_with("/v1/messages") {
            sse_pieces(ANTHROPIC_SSE, 11)
        } else {
            json_answer("200 OK", CHAT_JSON)
        }
    })
    .await
}

fn config(base: &str) -> String {
    format!(
        "[[keys]]\nname = \"k\"\nkey = \"{CLIENT_KEY}\"\n{}{}{}",
        model("gem", &[("gemini", base)]),
        model("gpt", &[("openai", base)]),
        model("claude", &[("anthropic", base)]),
    )
}

fn header_of<'a>(head: &'a str, name: &str) -> Option<&'a str> {
    head.lines()
        .find_map(|l| l.strip_prefix(&format!("{name}:")))
        .map(str::trim)
}

fn request_line(head: &str) -> &str {
    head.lines().next().unwrap_or_default()
}

const GEMINI_BODY: &str = r#"{"contents":[{"role":"user","parts":[{"text":"Say hi"}]}],"systemInstruction":{"parts":[{"text":"be brief"}]},"generationConfig":{"temperature":0.5,"topK":64}}"#;

/// The chunks of a Gemini SSE stream (`data: <chunk>\r\n\r\n`, as Google writes them).
fn gemini_chunks(body: &[u8]) -> Vec<Value> {
    let text = std::str::from_utf8(body).unwrap();
    assert!(text.ends_with("\r\n\r\n"), "ends mid-event: {text:?}");
    text.split("\r\n\r\n")
        .filter(|e| !e.is_empty())
        .map(|e| serde_json::from_str(e.strip_prefix("data: ").unwrap()).unwrap())
        .collect()
}

fn assert_google_error(r: &Reply, status: u16) -> String {
    assert_eq!(r.status.as_u16(), status, "{}", r.text());
    let v = r.json();
    assert_eq!(v["error"]["code"], status, "{v}");
    assert!(v["error"]["status"].is_string(), "{v}");
    v["error"]["message"].as_str().unwrap().to_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn gemini_passthrough_keeps_the_body_and_never_forwards_the_query_key() {
    let up = upstream().await;
    let gw = TestGateway::start(&config(&up.base_url())).await;
    let path = format!("/v1beta/models/gem:generateContent?key={CLIENT_KEY}");
    let r = send(gw.addr, post(&path, GEMINI_BODY)).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.text());
    assert_eq!(r.body, GEMINI_JSON.as_bytes(), "passed back as it came");
    let (head, body) = up.requests().pop().unwrap();
    assert_eq!(
        request_line(&head),
        "post /v1beta/models/up-gem:generatecontent http/1.1"
    );
    assert_eq!(header_of(&head, "x-goog-api-key"), Some(UPSTREAM_KEY));
    assert!(
        !head.contains(CLIENT_KEY),
        "the client's key went upstream: {head}"
    );
    assert_eq!(body, serde_json::from_str::<Value>(GEMINI_BODY).unwrap());
    let line = gw
        .wait_log("of the passthrough", |l| l["model"] == "gem")
        .await;
    assert_eq!(line["input_tokens"], 20);
    assert_eq!(line["output_tokens"], 7, "candidates + thoughts");
    assert!(line.get("translated").is_none());

    // Streaming, key in x-goog-api-key, on /v1: the SSE path upstream, usage from the chunks.
    let r = send(
        gw.addr,
        post("/v1/models/gem:streamGenerateContent?alt=sse", GEMINI_BODY)
            .header("x-goog-api-key", CLIENT_KEY),
    )
    .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.text());
    assert_eq!(r.body, GEMINI_SSE.as_bytes());
    let (head, _) = up.requests().pop().unwrap();
    assert_eq!(
        request_line(&head),
        "post /v1beta/models/up-gem:streamgeneratecontent?alt=sse http/1.1"
    );
    let lines = gw.wait_logs("of both", 2, |l| l["model"] == "gem").await;
    assert_eq!(lines[1]["input_tokens"], 8);
    assert_eq!(lines[1]["output_tokens"], 5);

    // Without alt=sse: the array, whole; usage from its last report.
    let r = send(
        gw.addr,
        post("/v1beta/models/gem:streamGenerateContent", GEMINI_BODY).bearer(CLIENT_KEY),
    )
    .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.text());
    assert_eq!(r.body, GEMINI_ARRAY.as_bytes());
    let (head, _) = up.requests().pop().unwrap();
    assert_eq!(
        request_line(&head),
        "post /v1beta/models/up-gem:streamgeneratecontent http/1.1"
    );
    let lines = gw
        .wait_logs("of all three", 3, |l| l["model"] == "gem")
        .await;
    assert_eq!(lines[2]["input_tokens"], 9);
    assert_eq!(lines[2]["output_tokens"], 2);
}

// Issue 40, item 3: a credential in the query string (Google's `key` and `access_token`,
// and the `api_key` / `api-key` other clients use) reaches neither an upstream nor the
// access log, on any route, passthrough or translated; `key` and `access_token` are read
// as the client's key.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_query_key_is_never_forwarded_on_any_route() {
    let up = upstream().await;
    let gw = TestGateway::start(&config(&up.base_url())).await;
    let leak = "leak-0123456789";
    let spies = format!("key={leak}&api_key={leak}&api-key={leak}&access_token={leak}");
    let cases = [
        (
            format!("/v1/chat/completions?key={CLIENT_KEY}&beta=true"),
            CHAT,
            "gpt",
            false,
        ),
        (
            format!("/v1/chat/completions?api-version=1&{spies}"),
            CHAT,
            "gpt",
            true,
        ),
        (
            format!("/v1/messages?beta=true&{spies}"),
            MESSAGES,
            "claude",
            true,
        ),
        (format!("/v1/responses?{spies}"), RESPONSES, "gpt", true),
        // Translated: a chat client on the Anthropic model.
        (
            format!("/v1/chat/completions?{spies}&x=1"),
            CHAT,
            "claude",
            true,
        ),
    ];
    for (path, route, model, header_key) in &cases {
        // The scripted Anthropic upstream always streams.
        let mut req = post(path, body(route, model, *model == "claude"));
        if *header_key {
            req = req.bearer(CLIENT_KEY);
        }
        let r = send(gw.addr, req).await;
        assert_eq!(r.status, StatusCode::OK, "{path}: {}", r.text());
    }
    let sent: Vec<String> = up
        .requests()
        .iter()
        .map(|(h, _)| request_line(h).to_owned())
        .collect();
    assert_eq!(
        sent,
        [
            "post /v1/chat/completions?beta=true http/1.1",
            "post /v1/chat/completions?api-version=1 http/1.1",
            "post /v1/messages?beta=true http/1.1",
            "post /v1/responses http/1.1",
            // A translated request carries none of the client dialect's query.
            "post /v1/messages http/1.1",
        ]
    );
    for (head, body) in up.requests() {
        assert!(!head.contains(CLIENT_KEY) && !head.contains(leak), "{head}");
        assert!(!body.to_string().contains(leak));
    }
    let lines = gw.wait_logs("five requests", 5, |_| true).await;
    for l in &lines {
        let line = l.to_string();
        assert!(!line.contains(leak) && !line.contains(CLIENT_KEY), "{line}");
    }
    // An OAuth-style `access_token` is a client credential too; `api_key` is not read.
    let r = send(
        gw.addr,
        post(
            &format!("/v1/chat/completions?access_token={CLIENT_KEY}"),
            body(CHAT, "gpt", false),
        ),
    )
    .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.text());
    let r = send(
        gw.addr,
        post(
            &format!("/v1/chat/completions?api_key={CLIENT_KEY}"),
            body(CHAT, "gpt", false),
        ),
    )
    .await;
    assert_eq!(r.status, StatusCode::UNAUTHORIZED, "{}", r.text());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn gemini_client_on_openai_and_anthropic_models() {
    let up = upstream().await;
    let gw = TestGateway::start(&config(&up.base_url())).await;
    // Non-streaming onto chat: topK is dropped and named; the answer is Gemini's shape.
    let r = send(
        gw.addr,
        post("/v1beta/models/gpt:generateContent", GEMINI_BODY)
            .header("x-goog-api-key", CLIENT_KEY),
    )
    .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.text());
    assert_eq!(
        r.header("x-gateway-dropped-fields"),
        Some("generationConfig.topK")
    );
    let v = r.json();
    let parts = &v["candidates"][0]["content"]["parts"];
    assert_eq!(parts[0]["text"], "Hi there");
    assert_eq!(
        parts[1]["functionCall"],
        json!({"id": "call_1", "name": "get_weather", "args": {"city": "Paris"}})
    );
    assert_eq!(v["candidates"][0]["finishReason"], "STOP");
    assert_eq!(v["usageMetadata"]["promptTokenCount"], 20);
    assert_eq!(v["usageMetadata"]["cachedContentTokenCount"], 6);
    assert_eq!(v["usageMetadata"]["candidatesTokenCount"], 4);
    let (head, sent) = up.requests().pop().unwrap();
    assert_eq!(request_line(&head), "post /v1/chat/completions http/1.1");
    assert_eq!(sent["model"], "up-gpt");
    assert_eq!(
        sent["messages"][0],
        json!({"role": "system", "content": "be brief"})
    );
    assert!(sent.get("top_k").is_none());
    let line = gw
        .wait_log("gemini->chat", |l| l["translated"] == "gemini->chat")
        .await;
    assert_eq!(line["input_tokens"], 20);

    // Streaming onto Anthropic: topK is Anthropic's top_k; SSE chunks end with the usage.
    let r = send(
        gw.addr,
        post(
            "/v1beta/models/claude:streamGenerateContent?alt=sse",
            GEMINI_BODY,
        )
        .bearer(CLIENT_KEY),
    )
    .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.text());
    assert_eq!(r.header("content-type"), Some("text/event-stream"));
    let chunks = gemini_chunks(&r.body);
    let text: String = chunks
        .iter()
        .filter_map(|c| c["candidates"][0]["content"]["parts"][0]["text"].as_str())
        .collect();
    assert_eq!(text, "日本é!");
    let last = chunks.last().unwrap();
    assert_eq!(last["candidates"][0]["finishReason"], "STOP");
    assert_eq!(last["usageMetadata"]["promptTokenCount"], 5);
    assert_eq!(last["usageMetadata"]["candidatesTokenCount"], 7);
    let (_, sent) = up.requests().pop().unwrap();
    assert_eq!(sent["top_k"], 64);
    assert_eq!(sent["stream"], true);

    // Without alt=sse: one JSON array.
    let r = send(
        gw.addr,
        post("/v1beta/models/claude:streamGenerateContent", GEMINI_BODY).bearer(CLIENT_KEY),
    )
    .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.text());
    assert_eq!(r.header("content-type"), Some("application/json"));
    let arr = r.json();
    assert_eq!(
        arr.as_array().unwrap().last().unwrap()["candidates"][0]["finishReason"],
        "STOP"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn chat_client_on_gemini_round_trips_the_thought_signature() {
    let up = upstream().await;
    let gw = TestGateway::start(&config(&up.base_url())).await;
    let tool = r#"{"type":"function","function":{"name":"get_weather","parameters":{"type":"object","properties":{"city":{"type":"string"}}}}}"#;
    let first = format!(
        r#"{{"model":"gem","messages":[{{"role":"user","content":"Weather?"}}],"tools":[{tool}]}}"#
    );
    let r = send(gw.addr, post(CHAT, first).bearer(CLIENT_KEY)).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.text());
    let v = r.json();
    let msg = &v["choices"][0]["message"];
    assert_eq!(msg["content"], "Let me look.");
    assert_eq!(v["choices"][0]["finish_reason"], "tool_calls");
    assert_eq!(v["usage"]["completion_tokens"], 7);
    let call = &msg["tool_calls"][0];
    let id = call["id"].as_str().unwrap().to_owned();
    assert!(id.starts_with("fc_7"), "{id}");
    let (head, sent) = up.requests().pop().unwrap();
    assert_eq!(
        request_line(&head),
        "post /v1beta/models/up-gem:generatecontent http/1.1"
    );
    assert_eq!(
        sent["tools"][0]["functionDeclarations"][0]["parametersJsonSchema"]["type"],
        "object"
    );

    // The client sends the call and its result back: Gemini gets its signature, byte for
    // byte, and the function's name on the result.
    let second = json!({"model": "gem", "stream": true, "messages": [
        {"role": "user", "content": "Weather?"},
        {"role": "assistant", "content": null, "tool_calls": [call]},
        {"role": "tool", "tool_call_id": id, "content": "sunny"},
    ], "tools": [serde_json::from_str::<Value>(tool).unwrap()]});
    let r = send(gw.addr, post(CHAT, second.to_string()).bearer(CLIENT_KEY)).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.text());
    let text: String = sse_data(&r.body)
        .iter()
        .filter(|d| *d != "[DONE]")
        .filter_map(|d| {
            serde_json::from_str::<Value>(d).unwrap()["choices"][0]["delta"]["content"]
                .as_str()
                .map(str::to_owned)
        })
        .collect();
    assert_eq!(text, "日本é!");
    let (head, sent) = up.requests().pop().unwrap();
    assert_eq!(
        request_line(&head),
        "post /v1beta/models/up-gem:streamgeneratecontent?alt=sse http/1.1"
    );
    assert_eq!(
        sent["contents"][1],
        json!({"role": "model", "parts": [{
            "functionCall": {"id": "fc_7", "name": "get_weather", "args": {"city": "Paris"}},
            "thoughtSignature": "CiQBcsjafE4pWq+/Zx9ag=="}]})
    );
    assert_eq!(
        sent["contents"][2],
        json!({"role": "user", "parts": [{"functionResponse": {"id": "fc_7",
            "name": "get_weather", "response": {"output": "sunny"}}}]})
    );
    gw.wait_log("chat->gemini", |l| l["translated"] == "chat->gemini")
        .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn messages_and_responses_clients_on_gemini() {
    let up = upstream().await;
    let gw = TestGateway::start(&config(&up.base_url())).await;
    let r = send(
        gw.addr,
        post(MESSAGES, body(MESSAGES, "gem", false)).x_api_key(CLIENT_KEY),
    )
    .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.text());
    let v = r.json();
    assert_eq!(v["content"][1]["type"], "tool_use");
    assert_eq!(v["stop_reason"], "tool_use");
    assert_eq!(v["usage"]["input_tokens"], 14, "uncached: 20 - 6");
    assert_eq!(v["usage"]["cache_read_input_tokens"], 6);
    let (_, sent) = up.requests().pop().unwrap();
    assert_eq!(
        sent["systemInstruction"],
        json!({"parts": [{"text": "be brief"}]})
    );
    assert_eq!(sent["generationConfig"]["maxOutputTokens"], 64);
    let r = send(
        gw.addr,
        post(RESPONSES, body(RESPONSES, "gem", true)).bearer(CLIENT_KEY),
    )
    .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.text());
    let events = sse_events(&r.body);
    assert_eq!(events.last().unwrap().0, "response.completed", "{events:?}");
    let done: Value = serde_json::from_str(&events.last().unwrap().1).unwrap();
    assert_eq!(
        done["response"]["output"][0]["content"][0]["text"],
        "日本é!"
    );
    assert_eq!(done["response"]["usage"]["input_tokens"], 8);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn errors_come_in_googles_envelope() {
    let up = upstream().await;
    let gw = TestGateway::start(&config(&up.base_url())).await;
    let gen = "/v1beta/models/gem:generateContent";
    let msg = assert_google_error(&send(gw.addr, post(gen, GEMINI_BODY)).await, 401);
    assert!(msg.contains("x-goog-api-key"), "{msg}");
    let r = send(
        gw.addr,
        post(gen, GEMINI_BODY).header("x-goog-api-key", "wrong"),
    )
    .await;
    assert_eq!(r.json()["error"]["status"], "UNAUTHENTICATED");
    let r = send(
        gw.addr,
        post("/v1beta/models/nope:generateContent", GEMINI_BODY).bearer(CLIENT_KEY),
    )
    .await;
    assert_eq!(r.json()["error"]["status"], "NOT_FOUND");
    assert_google_error(&r, 404);
    let r = send(gw.addr, post(gen, "{not json").bearer(CLIENT_KEY)).await;
    assert_eq!(r.json()["error"]["status"], "INVALID_ARGUMENT");
    // One 400 names every field a translated target cannot take; nothing goes upstream.
    let before = up.requests().len();
    let bad = r#"{"contents":[{"role":"user","parts":[{"text":"hi"},{"executableCode":{"code":"1"}}]}],"cachedContent":"cachedContents/x","tools":[{"googleSearch":{}}]}"#;
    let r = send(
        gw.addr,
        post("/v1beta/models/gpt:generateContent", bad).bearer(CLIENT_KEY),
    )
    .await;
    let msg = assert_google_error(&r, 400);
    for f in ["executableCode", "cachedContent", "googleSearch"] {
        assert!(msg.contains(f), "{f}: {msg}");
    }
    assert_eq!(up.requests().len(), before);
    // 405 in Google's envelope too.
    let mut req = get(gen);
    req.headers
        .push(("x-goog-api-key".into(), CLIENT_KEY.into()));
    let r = send(gw.addr, req).await;
    assert!(!assert_google_error(&r, 405).is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn count_tokens_and_model_listing() {
    let up = upstream().await;
    let gw = TestGateway::start(&config(&up.base_url())).await;
    let r = send(
        gw.addr,
        post("/v1beta/models/gem:countTokens", GEMINI_BODY).header("x-goog-api-key", CLIENT_KEY),
    )
    .await;
    assert_eq!(
        r.json(),
        json!({"totalTokens": 31}),
        "the Gemini target's count"
    );
    let (head, _) = up.requests().pop().unwrap();
    assert_eq!(
        request_line(&head),
        "post /v1beta/models/up-gem:counttokens http/1.1"
    );
    let r = send(
        gw.addr,
        post("/v1beta/models/gpt:countTokens", GEMINI_BODY).header("x-goog-api-key", CLIENT_KEY),
    )
    .await;
    assert_eq!(
        r.header("x-gateway-token-estimate"),
        Some("request bytes / 4")
    );
    assert_eq!(
        r.json()["totalTokens"],
        (GEMINI_BODY.len() as u64).div_ceil(4)
    );
    let mut list = get(&format!("/v1beta/models?key={CLIENT_KEY}"));
    list.headers.clear();
    let v = send(gw.addr, list).await.json();
    let names: Vec<&str> = v["models"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["models/gem", "models/gpt", "models/claude"]);
    let one = send(
        gw.addr,
        get("/v1beta/models/gpt").header("x-goog-api-key", CLIENT_KEY),
    )
    .await;
    assert_eq!(
        one.json()["supportedGenerationMethods"][0],
        "generateContent"
    );
    let none = send(
        gw.addr,
        get("/v1beta/models/nope").header("x-goog-api-key", CLIENT_KEY),
    )
    .await;
    assert_google_error(&none, 404);
    // `/v1/models` stays OpenAI's list unless asked with a Google key.
    let openai = send(gw.addr, get("/v1/models").bearer(CLIENT_KEY)).await;
    assert_eq!(openai.json()["object"], "list");
    let google = send(
        gw.addr,
        get("/v1/models").header("x-goog-api-key", CLIENT_KEY),
    )
    .await;
    assert!(google.json()["models"].is_array());
}
