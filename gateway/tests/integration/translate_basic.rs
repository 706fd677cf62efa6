//! Translation through the real gateway process: each client dialect against a provider
//! that speaks another one, non-streaming and streaming, with tools, images, usage,
//! upstream errors and the 400 for what cannot be translated.

use crate::support::*;
use http::StatusCode;
use serde_json::{json, Value};

const ANTHROPIC_JSON: &str = r#"{"id":"msg_1","type":"message","role":"assistant","model":"claude-up","content":[{"type":"text","text":"Let me look."},{"type":"tool_use","id":"toolu_1","name":"get_weather","input":{"city":"Paris"}}],"stop_reason":"tool_use","stop_sequence":null,"usage":{"input_tokens":5,"output_tokens":2,"cache_read_input_tokens":10,"cache_creation_input_tokens":1}}"#;

const CHAT_JSON: &str = r#"{"id":"chatcmpl-9","object":"chat.completion","created":1,"model":"gpt-up","choices":[{"index":0,"message":{"role":"assistant","content":null,"tool_calls":[{"id":"call_1","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Paris\"}"}}]},"finish_reason":"tool_calls"}],"usage":{"prompt_tokens":20,"completion_tokens":4,"total_tokens":24,"prompt_tokens_details":{"cached_tokens":6}}}"#;

const ANTHROPIC_SSE: &str = concat!(
    "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_2\",\"type\":\"message\",\"role\":\"assistant\",\"model\":\"claude-up\",\"content\":[],\"usage\":{\"input_tokens\":5,\"cache_read_input_tokens\":3,\"output_tokens\":1}}}\n\n",
    "event: ping\ndata: {\"type\":\"ping\"}\n\n",
    "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n",
    "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"日本\"}}\n\n",
    "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"é!\"}}\n\n",
    "event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n",
    "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":1,\"content_block\":{\"type\":\"tool_use\",\"id\":\"toolu_2\",\"name\":\"get_weather\",\"input\":{}}}\n\n",
    "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":1,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"{\\\"city\\\":\"}}\n\n",
    "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":1,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"\\\"Paris\\\"}\"}}\n\n",
    "event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":1}\n\n",
    "event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"tool_use\",\"stop_sequence\":null},\"usage\":{\"output_tokens\":7}}\n\n",
    "event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n",
);

const CHAT_SSE: &str = concat!(
    "data: {\"id\":\"c1\",\"object\":\"chat.completion.chunk\",\"model\":\"gpt-up\",\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"\"},\"finish_reason\":null}],\"usage\":null}\n\n",
    "data: {\"id\":\"c1\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"日本\"},\"finish_reason\":null}],\"usage\":null}\n\n",
    "data: {\"id\":\"c1\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"é!\"},\"finish_reason\":null}],\"usage\":null}\n\n",
    "data: {\"id\":\"c1\",\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"id\":\"call_2\",\"type\":\"function\",\"function\":{\"name\":\"get_weather\",\"arguments\":\"\"}}]},\"finish_reason\":null}]}\n\n",
    "data: {\"id\":\"c1\",\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"function\":{\"arguments\":\"{\\\"city\\\":\"}}]},\"finish_reason\":null}]}\n\n",
    "data: {\"id\":\"c1\",\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"function\":{\"arguments\":\"\\\"Paris\\\"}\"}}]},\"finish_reason\":null}]}\n\n",
    "data: {\"id\":\"c1\",\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"tool_calls\"}],\"usage\":null}\n\n",
    "data: {\"id\":\"c1\",\"choices\":[],\"usage\":{\"prompt_tokens\":8,\"completion_tokens\":7,\"prompt_tokens_details\":{\"cached_tokens\":3}}}\n\n",
    "data: [DONE]\n\n",
);

const WEATHER_TOOL_CHAT: &str = r#"{"type":"function","function":{"name":"get_weather","description":"Weather","parameters":{"type":"object","properties":{"city":{"type":"string"}}}}}"#;

/// An upstream that answers by the path it is sent: JSON or (stream) SSE in small pieces.
async fn upstream(piece: usize) -> ScriptedUpstream {
    ScriptedUpstream::start(move |head, body| {
        let stream = body["stream"] == true;
        let messages = head.starts_with("post /v1/messages");
        match (messages, stream) {
            (true, false) => json_answer("200 OK", ANTHROPIC_JSON),
            (false, false) => json_answer("200 OK", CHAT_JSON),
            (true, true) => sse_pieces(ANTHROPIC_SSE, piece),
            (false, true) => sse_pieces(CHAT_SSE, piece),
        }
    })
    .await
}

fn config(base: &str, extra_model_keys: &str) -> String {
    format!(
        "{}{}{}",
        model_with("claude", extra_model_keys, &[("anthropic", base)]),
        model("gpt", &[("openai", base)]),
        model("local", &[("openai-compatible", base)]),
    )
}

fn header_of<'a>(head: &'a str, name: &str) -> Option<&'a str> {
    head.lines()
        .find_map(|l| l.strip_prefix(&format!("{name}:")))
        .map(str::trim)
}

async fn log_line(gw: &TestGateway, translated: &str) -> Value {
    gw.wait_log(translated, |l| l["translated"] == translated)
        .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn chat_client_on_anthropic_model() {
    let up = upstream(7).await;
    let gw = TestGateway::start(&config(&up.base_url(), "")).await;
    let req = format!(
        r#"{{"model":"claude","messages":[
            {{"role":"system","content":"be brief"}},
            {{"role":"user","content":[{{"type":"text","text":"weather?"}},{{"type":"image_url","image_url":{{"url":"data:image/png;base64,iVBORw0KGgo="}}}},{{"type":"image_url","image_url":{{"url":"https://example.com/a.jpg"}}}}]}},
            {{"role":"assistant","content":null,"tool_calls":[{{"id":"call_0","type":"function","function":{{"name":"get_weather","arguments":"{{\"city\":\"Rome\"}}"}}}}]}},
            {{"role":"tool","tool_call_id":"call_0","content":"sunny"}},
            {{"role":"user","content":"and Paris?"}}],
          "tools":[{WEATHER_TOOL_CHAT}],"tool_choice":"required","parallel_tool_calls":false,
          "max_completion_tokens":300,"stop":["STOP"],"temperature":0.2,"top_p":0.9,"user":"u-1"}}"#
    );
    let r = gw.send(post(CHAT, req)).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.text());
    let v = r.json();
    assert_eq!(v["object"], "chat.completion");
    let msg = &v["choices"][0]["message"];
    assert_eq!(msg["content"], "Let me look.");
    assert_eq!(msg["tool_calls"][0]["id"], "toolu_1");
    assert_eq!(msg["tool_calls"][0]["function"]["name"], "get_weather");
    let args: Value = serde_json::from_str(
        msg["tool_calls"][0]["function"]["arguments"]
            .as_str()
            .unwrap(),
    )
    .unwrap();
    assert_eq!(args, json!({"city": "Paris"}));
    assert_eq!(v["choices"][0]["finish_reason"], "tool_calls");
    assert_eq!(v["usage"]["prompt_tokens"], 16);
    assert_eq!(v["usage"]["completion_tokens"], 2);
    assert_eq!(v["usage"]["prompt_tokens_details"]["cached_tokens"], 10);

    let (head, sent) = up.requests().pop().unwrap();
    assert!(head.starts_with("post /v1/messages "), "{head}");
    assert_eq!(
        header_of(&head, "x-api-key"),
        Some(UPSTREAM_KEY.to_lowercase().as_str())
    );
    assert_eq!(header_of(&head, "anthropic-version"), Some("2023-06-01"));
    assert!(header_of(&head, "authorization").is_none());
    assert_eq!(sent["model"], "up-claude");
    assert_eq!(sent["max_tokens"], 300);
    assert_eq!(
        sent["system"],
        json!([{"type": "text", "text": "be brief"}])
    );
    assert_eq!(sent["stop_sequences"], json!(["STOP"]));
    assert_eq!(sent["temperature"], 0.2);
    assert_eq!(sent["top_p"], 0.9);
    assert_eq!(sent["metadata"], json!({"user_id": "u-1"}));
    assert_eq!(
        sent["tools"][0]["input_schema"]["properties"]["city"]["type"],
        "string"
    );
    assert_eq!(
        sent["tool_choice"],
        json!({"type": "any", "disable_parallel_tool_use": true})
    );
    let turns = sent["messages"].as_array().unwrap();
    assert_eq!(turns.len(), 3, "{sent}");
    assert_eq!(
        turns[0]["content"][1]["source"],
        json!({"type": "base64", "media_type": "image/png", "data": "iVBORw0KGgo="})
    );
    assert_eq!(
        turns[0]["content"][2]["source"],
        json!({"type": "url", "url": "https://example.com/a.jpg"})
    );
    assert_eq!(
        turns[1]["content"][0],
        json!({"type": "tool_use", "id": "call_0", "name": "get_weather", "input": {"city": "Rome"}})
    );
    // The tool result and the next user text are one user turn, the result first.
    assert_eq!(turns[2]["role"], "user");
    assert_eq!(turns[2]["content"][0]["type"], "tool_result");
    assert_eq!(turns[2]["content"][0]["tool_use_id"], "call_0");
    assert_eq!(turns[2]["content"][1]["text"], "and Paris?");

    let line = log_line(&gw, "chat->messages").await;
    assert_eq!(line["input_tokens"], 16);
    assert_eq!(line["output_tokens"], 2);
    assert_eq!(line["route"], CHAT);
    let text = gw.metrics().await;
    assert_eq!(
        metric(&text, &tokens_series("claude", "input")),
        Some(16.0),
        "{text}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn chat_client_streams_from_anthropic_model() {
    // 3-byte pieces cut the events, their terminators and the UTF-8 characters.
    let up = upstream(3).await;
    let gw = TestGateway::start(&config(&up.base_url(), "")).await;
    let req = r#"{"model":"claude","messages":[{"role":"user","content":"hi"}],"stream":true,"stream_options":{"include_usage":true}}"#;
    let r = gw.send(post(CHAT, req)).await;
    assert_eq!(r.status, StatusCode::OK);
    assert!(r.body_error.is_none(), "{:?}", r.body_error);
    assert_eq!(r.header("content-type"), Some("text/event-stream"));
    let ev = sse_events(&r.body);
    assert_eq!(ev.last().unwrap().1, "[DONE]");
    let chunks: Vec<Value> = ev[..ev.len() - 1]
        .iter()
        .map(|(_, d)| serde_json::from_str(d).unwrap())
        .collect();
    assert_eq!(chunks[0]["choices"][0]["delta"]["role"], "assistant");
    let text: String = chunks
        .iter()
        .filter_map(|c| c["choices"][0]["delta"]["content"].as_str())
        .collect();
    assert_eq!(text, "日本é!");
    let args: String = chunks
        .iter()
        .filter_map(|c| c["choices"][0]["delta"]["tool_calls"][0]["function"]["arguments"].as_str())
        .collect();
    assert_eq!(args, r#"{"city":"Paris"}"#);
    assert_eq!(
        chunks[chunks.len() - 2]["choices"][0]["finish_reason"],
        "tool_calls"
    );
    let usage = chunks.last().unwrap();
    assert_eq!(usage["choices"], json!([]));
    assert_eq!(usage["usage"]["prompt_tokens"], 8);
    assert_eq!(usage["usage"]["completion_tokens"], 7);
    let (_, sent) = up.requests().pop().unwrap();
    assert_eq!(sent["stream"], true);
    assert_eq!(sent["max_tokens"], 4096, "the global default");
    let line = log_line(&gw, "chat->messages").await;
    assert_eq!(
        (
            line["input_tokens"].as_u64(),
            line["output_tokens"].as_u64()
        ),
        (Some(8), Some(7))
    );
    assert_eq!(line["stream"], true);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn messages_client_on_openai_model_with_tool_round_trip() {
    let up = upstream(5).await;
    let gw = TestGateway::start(&config(&up.base_url(), "")).await;
    let req = r#"{"model":"gpt","max_tokens":99,"system":"be brief","stop_sequences":["X"],"metadata":{"user_id":"u-2"},
        "tools":[{"name":"get_weather","description":"Weather","input_schema":{"type":"object"}}],
        "tool_choice":{"type":"tool","name":"get_weather"},
        "messages":[
          {"role":"user","content":[{"type":"text","text":"see"},{"type":"image","source":{"type":"base64","media_type":"image/jpeg","data":"/9j/"}}]},
          {"role":"assistant","content":[{"type":"tool_use","id":"toolu_0","name":"get_weather","input":{"city":"Rome"}}]},
          {"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_0","content":[{"type":"text","text":"sunny"}]}]}]}"#;
    for stream in [false, true] {
        let body = req.replacen('{', &format!("{{\"stream\":{stream},"), 1);
        let r = gw
            .send(post(MESSAGES, body).header("anthropic-version", "2023-06-01"))
            .await;
        assert_eq!(r.status, StatusCode::OK, "{}", r.text());
        let (head, sent) = up.requests().pop().unwrap();
        assert!(head.starts_with("post /v1/chat/completions "), "{head}");
        assert_eq!(
            header_of(&head, "authorization"),
            Some(format!("bearer {}", UPSTREAM_KEY.to_lowercase()).as_str())
        );
        assert!(header_of(&head, "anthropic-version").is_none(), "{head}");
        assert_eq!(sent["model"], "up-gpt");
        assert_eq!(
            sent["max_completion_tokens"], 99,
            "OpenAI gets max_completion_tokens"
        );
        assert_eq!(
            sent["messages"][0],
            json!({"role": "system", "content": "be brief"})
        );
        assert_eq!(
            sent["messages"][1]["content"][1]["image_url"]["url"],
            "data:image/jpeg;base64,/9j/"
        );
        assert_eq!(
            sent["messages"][2]["tool_calls"][0]["function"]["arguments"],
            r#"{"city":"Rome"}"#
        );
        assert_eq!(
            sent["messages"][3],
            json!({"role": "tool", "tool_call_id": "toolu_0", "content": "sunny"})
        );
        assert_eq!(
            sent["tool_choice"],
            json!({"type": "function", "function": {"name": "get_weather"}})
        );
        assert_eq!(sent["stop"], json!(["X"]));
        assert_eq!(sent["user"], "u-2");
        if !stream {
            let v = r.json();
            assert_eq!(v["type"], "message");
            assert_eq!(
                v["content"][0],
                json!({"type": "tool_use", "id": "call_1", "name": "get_weather", "input": {"city": "Paris"}})
            );
            assert_eq!(v["stop_reason"], "tool_use");
            assert_eq!(v["usage"]["input_tokens"], 14);
            assert_eq!(v["usage"]["cache_read_input_tokens"], 6);
            assert_eq!(v["usage"]["output_tokens"], 4);
            continue;
        }
        assert_eq!(sent["stream_options"], json!({"include_usage": true}));
        assert!(r.body_error.is_none());
        let ev = sse_events(&r.body);
        let names: Vec<&str> = ev.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(names.first(), Some(&"message_start"));
        assert_eq!(&names[names.len() - 2..], ["message_delta", "message_stop"]);
        let text: String = ev
            .iter()
            .filter_map(|(_, d)| serde_json::from_str::<Value>(d).ok())
            .filter_map(|d| d["delta"]["text"].as_str().map(str::to_owned))
            .collect();
        assert_eq!(text, "日本é!");
        let delta: Value = serde_json::from_str(&ev[ev.len() - 2].1).unwrap();
        assert_eq!(delta["delta"]["stop_reason"], "tool_use");
        assert_eq!(delta["usage"]["output_tokens"], 7);
    }
    let translated = gw
        .wait_logs("translated messages->chat", 2, |l| {
            l["translated"] == "messages->chat"
        })
        .await;
    assert_eq!(translated.len(), 2, "{translated:?}");
    assert_eq!(translated[0]["input_tokens"], 20);
    assert_eq!(translated[1]["input_tokens"], 8);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn responses_client_on_anthropic_and_compatible_models() {
    let up = upstream(4).await;
    let gw = TestGateway::start(&config(&up.base_url(), "default_max_tokens = 333")).await;
    for (model, upstream_path) in [
        ("claude", "/v1/messages"),
        ("local", "/v1/chat/completions"),
    ] {
        let req = format!(
            r#"{{"model":"{model}","instructions":"be brief","input":[
                {{"role":"user","content":[{{"type":"input_text","text":"weather?"}},{{"type":"input_image","image_url":"https://example.com/a.png"}}]}},
                {{"type":"function_call","call_id":"call_0","name":"get_weather","arguments":"{{}}"}},
                {{"type":"function_call_output","call_id":"call_0","output":"sunny"}}],
              "tools":[{{"type":"function","name":"get_weather","parameters":{{"type":"object"}}}}]}}"#
        );
        let r = gw.send(post(RESPONSES, req.clone())).await;
        assert_eq!(r.status, StatusCode::OK, "{}", r.text());
        let v = r.json();
        assert_eq!(v["object"], "response");
        assert_eq!(v["status"], "completed");
        let call = v["output"]
            .as_array()
            .unwrap()
            .iter()
            .find(|o| o["type"] == "function_call")
            .unwrap();
        assert_eq!(call["name"], "get_weather");
        let (head, sent) = up.requests().pop().unwrap();
        assert!(
            head.starts_with(&format!("post {upstream_path} ")),
            "{head}"
        );
        if model == "claude" {
            assert_eq!(sent["max_tokens"], 333, "the model's default");
            assert_eq!(sent["system"][0]["text"], "be brief");
            assert_eq!(sent["messages"][1]["content"][0]["type"], "tool_use");
            assert_eq!(v["usage"]["input_tokens"], 16);
        } else {
            assert!(sent.get("max_tokens").is_none());
            assert_eq!(sent["messages"][0]["role"], "system");
            assert_eq!(sent["messages"][3]["role"], "tool");
            assert_eq!(v["usage"]["input_tokens_details"]["cached_tokens"], 6);
        }

        let stream_req = req.replacen('{', "{\"stream\":true,\"max_output_tokens\":50,", 1);
        let r = gw.send(post(RESPONSES, stream_req)).await;
        assert_eq!(r.status, StatusCode::OK);
        assert!(r.body_error.is_none());
        let ev = sse_events(&r.body);
        let names: Vec<&str> = ev.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(
            &names[..4],
            [
                "response.created",
                "response.in_progress",
                "response.output_item.added",
                "response.content_part.added"
            ]
        );
        assert_eq!(names.last(), Some(&"response.completed"));
        for n in [
            "response.output_text.done",
            "response.content_part.done",
            "response.function_call_arguments.done",
            "response.output_item.done",
        ] {
            assert!(names.contains(&n), "{n} missing: {names:?}");
        }
        for (i, (_, d)) in ev.iter().enumerate() {
            assert_eq!(
                serde_json::from_str::<Value>(d).unwrap()["sequence_number"],
                i
            );
        }
        let done: Value = serde_json::from_str(&ev.last().unwrap().1).unwrap();
        assert_eq!(done["response"]["usage"]["output_tokens"], 7);
        assert_eq!(
            done["response"]["output"][0]["content"][0]["text"],
            "日本é!"
        );
        let (_, sent) = up.requests().pop().unwrap();
        if model == "local" {
            assert_eq!(sent["max_tokens"], 50, "compatible servers get max_tokens");
            assert_eq!(sent["stream_options"]["include_usage"], true);
        }
    }
    log_line(&gw, "responses->messages").await;
    log_line(&gw, "responses->chat").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn upstream_errors_come_back_in_the_clients_envelope_with_their_status() {
    let up = ScriptedUpstream::start(|head, _| {
        if head.starts_with("post /v1/messages") {
            json_answer(
                "529 Overloaded",
                r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#,
            )
        } else {
            json_answer(
                "400 Bad Request",
                &format!(r#"{{"error":{{"message":"bad key {UPSTREAM_KEY}","type":"invalid_request_error","param":null,"code":null}}}}"#),
            )
        }
    })
    .await;
    let gw = TestGateway::start(&config(&up.base_url(), "")).await;
    for path in [CHAT, RESPONSES] {
        let r = gw.send(post(path, body(path, "claude", false))).await;
        let v = assert_openai_error(&r, 529);
        assert_eq!(v["error"]["message"], "Overloaded");
        assert_eq!(v["error"]["type"], "server_error");
    }
    let r = gw.send(post(MESSAGES, body(MESSAGES, "gpt", true))).await;
    assert_eq!(assert_anthropic_error(&r, 400), "invalid_request_error");
    assert!(r.text().contains("bad key [redacted]"), "{}", r.text());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn what_cannot_be_translated_is_refused_naming_the_field() {
    let up = upstream(100).await;
    let gw = TestGateway::start(&config(&up.base_url(), "")).await;
    let cases = [
        (
            RESPONSES,
            r#"{"model":"claude","input":"hi","tools":[{"type":"web_search"}]}"#,
            "tools[0] (web_search)",
        ),
        (
            RESPONSES,
            r#"{"model":"claude","input":"hi","previous_response_id":"resp_1"}"#,
            "previous_response_id",
        ),
        (
            CHAT,
            r#"{"model":"claude","messages":[{"role":"user","content":"hi"}],"n":2}"#,
            "`n`",
        ),
        (
            CHAT,
            r#"{"model":"claude","messages":[{"role":"user","content":"hi"}],"logprobs":true,"top_logprobs":2}"#,
            "logprobs",
        ),
        (
            CHAT,
            r#"{"model":"claude","messages":[{"role":"user","content":"hi"}],"audio":{"voice":"x"}}"#,
            "audio",
        ),
        (
            MESSAGES,
            r#"{"model":"gpt","max_tokens":5,"messages":[{"role":"user","content":"hi"}],"top_k":3}"#,
            "top_k",
        ),
        (
            MESSAGES,
            r#"{"model":"gpt","max_tokens":5,"messages":[{"role":"user","content":[{"type":"document","source":{}}]}]}"#,
            "messages[0].content[0].type",
        ),
        (CHAT, r#"{"model":"claude","messages":"nope"}"#, "messages"),
    ];
    for (path, req, field) in cases {
        let r = gw.send(post(path, req)).await;
        assert_error(path, &r, 400);
        assert!(r.text().contains(field), "{path} {req}: {}", r.text());
    }
    assert!(up.requests().is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_400_names_every_refused_field_of_a_chat_request() {
    let up = upstream(100).await;
    let gw = TestGateway::start(&config(&up.base_url(), "")).await;
    let req = r#"{"model":"claude","x_top":1,"messages":[
        {"role":"user","content":"hi","x_one":true},
        {"role":"assistant","content":null,"x_two":"t","tool_calls":[
            {"id":"c1","type":"function","function":{"name":"f","arguments":"{}"},"x_call":{}}]},
        {"role":"tool","tool_call_id":"c1","content":"ok"}]}"#;
    let r = gw.send(post(CHAT, req)).await;
    let v = assert_openai_error(&r, 400);
    let text = v["error"]["message"].as_str().unwrap();
    assert!(text.starts_with("4 fields are not supported"), "{text}");
    for field in [
        "`x_top`",
        "`messages[0].x_one`",
        "`messages[1].x_two`",
        "`messages[1].tool_calls[0].x_call`",
    ] {
        assert!(text.contains(field), "{field} missing: {text}");
    }
    assert!(up.requests().is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_made_up_key_in_a_chat_tool_call_is_refused() {
    let up = upstream(100).await;
    let gw = TestGateway::start(&config(&up.base_url(), "")).await;
    let req = r#"{"model":"claude","messages":[
        {"role":"user","content":"hi"},
        {"role":"assistant","tool_calls":[
            {"id":"c1","type":"function","function":{"name":"f","arguments":"{}"},"made_up":1}]},
        {"role":"tool","tool_call_id":"c1","content":"ok"}]}"#;
    let r = gw.send(post(CHAT, req)).await;
    let v = assert_openai_error(&r, 400);
    let text = v["error"]["message"].as_str().unwrap();
    assert!(
        text.contains("`messages[1].tool_calls[0].made_up`"),
        "{text}"
    );
    assert!(up.requests().is_empty());
}

/// opencode (`@ai-sdk/openai-compatible`) on a Claude model name: `cache_control` on the
/// first system messages and on the last turns, on the message or on its last part.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn chat_cache_control_reaches_anthropic_on_its_blocks() {
    let up = upstream(100).await;
    let gw = TestGateway::start(&config(&up.base_url(), "")).await;
    let req = r#"{"model":"claude","max_tokens":32000,"stream":false,"messages":[
        {"role":"system","content":"You are opencode.","cache_control":{"type":"ephemeral"}},
        {"role":"system","content":"<env>linux</env>","cache_control":{"type":"ephemeral"}},
        {"role":"user","content":"read a.txt"},
        {"role":"assistant","content":"","tool_calls":[
            {"id":"call_1","type":"function","function":{"name":"read","arguments":"{\"path\":\"a.txt\"}"},"cache_control":{"type":"ephemeral"}}]},
        {"role":"tool","tool_call_id":"call_1","content":"hello","cache_control":{"type":"ephemeral"}},
        {"role":"user","content":[{"type":"text","text":"and now?","cache_control":{"type":"ephemeral"}}]}],
      "tools":[{"type":"function","function":{"name":"read","parameters":{"type":"object"}}}]}"#;
    let r = gw.send(post(CHAT, req)).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.text());
    assert!(
        r.header("x-gateway-dropped-fields").is_none(),
        "{:?}",
        r.header("x-gateway-dropped-fields")
    );
    let (head, sent) = up.requests().pop().unwrap();
    assert!(head.starts_with("post /v1/messages "), "{head}");
    let eph = json!({"type": "ephemeral"});
    assert_eq!(
        sent["system"],
        json!([
            {"type": "text", "text": "You are opencode.", "cache_control": eph},
            {"type": "text", "text": "<env>linux</env>", "cache_control": eph},
        ])
    );
    let turns = &sent["messages"];
    assert_eq!(
        turns[0]["content"],
        json!([{"type": "text", "text": "read a.txt"}])
    );
    assert_eq!(
        turns[1]["content"],
        json!([{"type": "tool_use", "id": "call_1", "name": "read", "input": {"path": "a.txt"}, "cache_control": eph}])
    );
    assert_eq!(
        turns[2]["content"],
        json!([
            {"type": "tool_result", "tool_use_id": "call_1", "content": [{"type": "text", "text": "hello"}], "cache_control": eph},
            {"type": "text", "text": "and now?", "cache_control": eph},
        ])
    );
    let line = log_line(&gw, "chat->messages").await;
    assert!(line.get("dropped").is_none(), "{line}");
}

/// Where the target takes no `cache_control` (a messages client on a chat target), it is
/// dropped and named.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cache_control_is_dropped_and_named_where_it_cannot_be_carried() {
    let up = upstream(100).await;
    let gw = TestGateway::start(&config(&up.base_url(), "")).await;
    let req = r#"{"model":"local","max_tokens":50,
        "system":[{"type":"text","text":"be brief","cache_control":{"type":"ephemeral"}}],
        "messages":[{"role":"user","content":[{"type":"text","text":"hi","cache_control":{"type":"ephemeral","ttl":"1h"}}]}]}"#;
    let r = gw
        .send(post(MESSAGES, req).header("anthropic-version", "2023-06-01"))
        .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.text());
    let mut dropped: Vec<&str> = r
        .header("x-gateway-dropped-fields")
        .unwrap_or_default()
        .split(", ")
        .collect();
    dropped.sort_unstable();
    assert_eq!(
        dropped,
        [
            "messages[].content[].cache_control",
            "system[].cache_control"
        ]
    );
    let (head, sent) = up.requests().pop().unwrap();
    assert!(head.starts_with("post /v1/chat/completions "), "{head}");
    assert!(!sent.to_string().contains("cache_control"), "{sent}");
    assert_eq!(sent["messages"][1]["content"], "hi");
}
