//! Agent clients on models of another dialect, with the request bodies Claude Code 2.1.332,
//! Codex CLI 0.171.0, Gemini CLI 0.61.0 and opencode 1.18.33 really sent (`gateway/tests/fixtures/agents`, captured by
//! `tests/agents/capture.sh`): the default policy lets them in and names every drop
//! (header, access log, metric); `strict` refuses them with every field in one 400; custom
//! and namespaced tools come back in the client's own terms.

use crate::support::*;
use serde_json::{json, Value};

/// Claude Code's default model (adaptive thinking, `output_config.effort`, a system turn).
const CLAUDE_CODE: &str = include_str!("../fixtures/agents/claude-code-opus.json");
/// `--model claude-sonnet-4-5`: thinking enabled with a 31,999-token budget.
const CLAUDE_CODE_SONNET: &str = include_str!("../fixtures/agents/claude-code-claude.json");
const CLAUDE_CODE_TOOL_RESULT: &str =
    include_str!("../fixtures/agents/claude-code-claude-tool-result.json");
const CLAUDE_CODE_QWEN: &str = include_str!("../fixtures/agents/claude-code-qwen.json");
const CODEX: &str = include_str!("../fixtures/agents/codex.json");
const CODEX_TOOL_RESULT: &str = include_str!("../fixtures/agents/codex-tool-result.json");
/// Gemini CLI's main request (`-m`), its router's JSON-schema request (no `-m`), and the
/// request answering the mock's signed `read_file` call.
const GEMINI_CLI: &str = include_str!("../fixtures/agents/gemini-cli.json");
const GEMINI_CLI_ROUTER: &str = include_str!("../fixtures/agents/gemini-cli-router.json");
const GEMINI_CLI_TOOL_RESULT: &str = include_str!("../fixtures/agents/gemini-cli-tool-result.json");
/// opencode on a Claude-named model: `cache_control` on the messages themselves.
const OPENCODE_CLAUDE: &str = include_str!("../fixtures/agents/opencode-claude.json");

/// A chat stream answering text.
const CHAT_TEXT_SSE: &str = concat!(
    "data: {\"id\":\"c1\",\"object\":\"chat.completion.chunk\",\"model\":\"up\",\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"Hello\"},\"finish_reason\":null}]}\n\n",
    "data: {\"id\":\"c1\",\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\n",
    "data: {\"id\":\"c1\",\"choices\":[],\"usage\":{\"prompt_tokens\":9,\"completion_tokens\":1}}\n\n",
    "data: [DONE]\n\n",
);

/// An Anthropic stream calling `apply_patch` with its one string argument.
const ANTHROPIC_PATCH_SSE: &str = concat!(
    "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_p\",\"type\":\"message\",\"role\":\"assistant\",\"model\":\"up\",\"content\":[],\"usage\":{\"input_tokens\":5,\"output_tokens\":1}}}\n\n",
    "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"tool_use\",\"id\":\"toolu_p\",\"name\":\"apply_patch\",\"input\":{}}}\n\n",
    "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"{\\\"input\\\":\\\"*** Begin Patch\\\\n\"}}\n\n",
    "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"*** End Patch\\\"}\"}}\n\n",
    "event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n",
    "event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"tool_use\"},\"usage\":{\"output_tokens\":9}}\n\n",
    "event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n",
);

/// An Anthropic answer calling the flattened `mcp__files__read`.
const ANTHROPIC_NAMESPACED_JSON: &str = r#"{"id":"msg_n","type":"message","role":"assistant","model":"up","content":[{"type":"tool_use","id":"toolu_n","name":"mcp__files__read","input":{"path":"a.txt"}}],"stop_reason":"tool_use","usage":{"input_tokens":5,"output_tokens":3}}"#;

const ANTHROPIC_TEXT_JSON: &str = r#"{"id":"msg_t","type":"message","role":"assistant","model":"up","content":[{"type":"text","text":"Hello"}],"stop_reason":"end_turn","usage":{"input_tokens":5,"output_tokens":1}}"#;

async fn upstream() -> ScriptedUpstream {
    ScriptedUpstream::start(|head, body| {
        let tools: Vec<&str> = body["tools"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|t| t["name"].as_str())
            .collect();
        if head.starts_with("post /v1/messages") {
            if body["stream"] == true {
                sse_pieces(ANTHROPIC_PATCH_SSE, 11)
            } else if tools.contains(&"mcp__files__read") {
                json_answer("200 OK", ANTHROPIC_NAMESPACED_JSON)
            } else {
                json_answer("200 OK", ANTHROPIC_TEXT_JSON)
            }
        } else {
            sse_pieces(CHAT_TEXT_SSE, 13)
        }
    })
    .await
}

fn config(base: &str) -> String {
    let mut c = String::new();
    c.push_str(&model("claude-opus-5-5", &[("openai", base)]));
    c.push_str(&model("qwen3-coder", &[("openai-compatible", base)]));
    c.push_str(&model_with(
        "strict-claude",
        "strict = true",
        &[("openai", base)],
    ));
    c.push_str(&model_with(
        "codex-anthropic",
        "builtin_tools = \"drop\"",
        &[("anthropic", base)],
    ));
    c.push_str(&model("codex-default", &[("anthropic", base)]));
    c.push_str(&model_with(
        "codex-strict",
        "strict = true\nbuiltin_tools = \"drop\"",
        &[("anthropic", base)],
    ));
    // A target whose model takes a reasoning effort.
    c.push_str(&format!(
        "[[models]]\nname = \"sonnet-reasoning\"\n[[models.targets]]\nprovider = \"openai\"\nbase_url = \"{base}\"\nmodel = \"up-reasoning\"\nreasoning = true\n"
    ));
    c
}

/// A fixture with its model replaced.
fn fixture(text: &str, model: &str) -> String {
    let mut v: Value = serde_json::from_str(text).unwrap();
    v["model"] = json!(model);
    v.to_string()
}

fn dropped(r: &Reply) -> Vec<String> {
    let mut v: Vec<String> = r
        .header("x-gateway-dropped-fields")
        .unwrap_or_else(|| panic!("no dropped-fields header: {}", r.text()))
        .split(", ")
        .map(str::to_owned)
        .collect();
    v.sort();
    v
}

fn sorted(fields: &[&str]) -> Vec<String> {
    let mut v: Vec<String> = fields.iter().map(|s| (*s).to_owned()).collect();
    v.sort();
    v
}

/// The fields the default policy drops from Claude Code's requests on an OpenAI target: each
/// is a caching hint, the client's session, or a reasoning control the target does not take.
const CLAUDE_CODE_DROPS: [&str; 8] = [
    "system[].x-anthropic-billing-header",
    "system[].cache_control",
    "metadata.user_id",
    "thinking",
    "output_config.effort",
    "context_management",
    "tools[].defer_loading",
    "messages[].content[].cache_control",
];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn claude_code_gets_in_on_openai_models_and_every_drop_is_named() {
    let up = upstream().await;
    let gw = TestGateway::start(&config(&up.base_url())).await;
    let first = fixture(CLAUDE_CODE, "claude-opus-5-5");
    let r = gw
        .send(
            post("/v1/messages?beta=true", first)
                .header("anthropic-version", "2023-06-01")
                .header(
                    "anthropic-beta",
                    "claude-code-20250219,context-management-2025-06-27",
                ),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.text());
    let events = sse_events(r.body.as_ref());
    let names: Vec<&str> = events.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(names.first(), Some(&"message_start"), "{names:?}");
    assert_eq!(names.last(), Some(&"message_stop"), "{names:?}");
    let expected = sorted(&CLAUDE_CODE_DROPS);
    assert_eq!(dropped(&r), expected);

    // What the chat upstream got: the system prompt without the billing line, Claude Code's
    // mid-conversation system turn in its place, every tool, no user id, no beta query.
    let (head, sent) = up.requests().pop().unwrap();
    assert!(head.starts_with("post /v1/chat/completions http"), "{head}");
    assert!(!head.contains("anthropic-beta"), "{head}");
    let msgs = sent["messages"].as_array().unwrap();
    let roles: Vec<&str> = msgs.iter().map(|m| m["role"].as_str().unwrap()).collect();
    assert_eq!(roles, ["system", "user", "system"], "{sent}");
    assert!(!msgs[0]["content"]
        .as_str()
        .unwrap()
        .contains("x-anthropic-billing-header"));
    assert!(msgs[2]["content"]
        .as_str()
        .unwrap()
        .starts_with("# Environment"));
    assert_eq!(sent["tools"].as_array().unwrap().len(), 12);
    assert!(sent.get("user").is_none() && sent.get("reasoning_effort").is_none());
    assert_eq!(sent["max_completion_tokens"], 128000);

    // The same drops in the access log and the metric.
    let line = gw
        .wait_log("the translated line", |l| {
            l["translated"] == "messages->chat"
        })
        .await;
    let mut logged: Vec<String> = serde_json::from_value(line["dropped"].clone()).unwrap();
    logged.sort();
    assert_eq!(logged, expected);
    gw.wait_metric(
        "gateway_translation_dropped_fields_total{model=\"claude-opus-5-5\",field=\"context_management\"}",
        1.0,
    )
    .await;

    // A later turn (a tool result) and the non-Claude name.
    for (body, model) in [
        (CLAUDE_CODE_TOOL_RESULT, "claude-opus-5-5"),
        (CLAUDE_CODE_QWEN, "qwen3-coder"),
    ] {
        let r = gw.send(post(MESSAGES, fixture(body, model))).await;
        assert_eq!(r.status, 200, "{model}: {}", r.text());
        assert!(!dropped(&r).is_empty());
    }
    let (_, sent) = up.requests().pop().unwrap();
    // Claude Code asks a non-Claude model for 32,000 tokens; a compatible server gets
    // `max_tokens`.
    assert_eq!(sent["max_tokens"], 32000);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn strict_refuses_claude_code_naming_every_field_at_once() {
    let up = upstream().await;
    let gw = TestGateway::start(&config(&up.base_url())).await;
    let r = gw
        .send(post(MESSAGES, fixture(CLAUDE_CODE, "strict-claude")))
        .await;
    assert_error(MESSAGES, &r, 400);
    let msg = r.json()["error"]["message"].as_str().unwrap().to_owned();
    assert!(msg.starts_with("4 fields are not supported"), "{msg}");
    for field in [
        "`metadata.user_id`",
        "`thinking`",
        "`output_config.effort`",
        "`context_management`",
    ] {
        assert!(msg.contains(field), "{field} missing: {msg}");
    }
    assert!(up.requests().is_empty());
}

/// Codex's drops on an Anthropic target (`builtin_tools = "drop"`): session metadata,
/// encrypted reasoning, verbosity, its client-run tool search, the hosted web search,
/// caching and storage hints, and the reasoning effort the target does not take. (Its
/// tools' `strict: false` is Anthropic's default: carried, unsaid.)
const CODEX_DROPS: [&str; 8] = [
    "client_metadata",
    "include (reasoning.encrypted_content)",
    "text.verbosity",
    "tools[] (tool_search)",
    "tools[] (web_search)",
    "prompt_cache_key",
    "store",
    "reasoning.effort",
];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn codex_gets_in_on_anthropic_models_and_its_freeform_tool_comes_back_as_its_own() {
    let up = upstream().await;
    let gw = TestGateway::start(&config(&up.base_url())).await;
    let r = gw
        .send(post(RESPONSES, fixture(CODEX, "codex-anthropic")))
        .await;
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(dropped(&r), sorted(&CODEX_DROPS));
    let (_, sent) = up.requests().pop().unwrap();
    // apply_patch went up as a function of one string; Codex's developer messages are the
    // system prompt; no hosted tool.
    let tools = sent["tools"].as_array().unwrap();
    let names: Vec<&str> = tools.iter().map(|t| t["name"].as_str().unwrap()).collect();
    assert!(!names.contains(&"web_search") && !names.contains(&"tool_search"));
    let patch = tools.iter().find(|t| t["name"] == "apply_patch").unwrap();
    assert_eq!(patch["input_schema"]["required"], json!(["input"]));
    assert!(patch["description"]
        .as_str()
        .unwrap()
        .contains("lark grammar"));
    assert!(sent["system"][0]["text"]
        .as_str()
        .unwrap()
        .starts_with("You are Codex"));
    assert_eq!(sent["messages"][0]["role"], "user");

    // The upstream called apply_patch: Codex gets a custom_tool_call with the input, and
    // response.completed repeats the request's tools as it sent them.
    let events = sse_events(r.body.as_ref());
    let data = |name: &str| -> Vec<Value> {
        events
            .iter()
            .filter(|(n, _)| n == name)
            .map(|(_, d)| serde_json::from_str(d).unwrap())
            .collect()
    };
    let added = &data("response.output_item.added")[0]["item"];
    assert_eq!(added["type"], "custom_tool_call", "{added}");
    let done = &data("response.custom_tool_call_input.done")[0];
    assert_eq!(done["input"], "*** Begin Patch\n*** End Patch");
    let item = &data("response.output_item.done")[0]["item"];
    assert_eq!(item["type"], "custom_tool_call");
    assert_eq!(item["call_id"], "toolu_p");
    assert_eq!(item["input"], "*** Begin Patch\n*** End Patch");
    let completed = &data("response.completed")[0]["response"];
    let request: Value = serde_json::from_str(CODEX).unwrap();
    assert_eq!(completed["tools"], request["tools"]);
    assert_eq!(completed["output"][0]["type"], "custom_tool_call");

    // Codex's next turn: its custom call and the call's output go up as tool_use/tool_result.
    let mut next: Value =
        serde_json::from_str(&fixture(CODEX_TOOL_RESULT, "codex-anthropic")).unwrap();
    let input = next["input"].as_array_mut().unwrap();
    input.push(json!({"type": "custom_tool_call", "call_id": "toolu_p", "name": "apply_patch", "input": "*** Begin Patch\n*** End Patch"}));
    input.push(json!({"type": "custom_tool_call_output", "call_id": "toolu_p", "output": "Done!"}));
    next["stream"] = json!(false);
    let r = gw.send(post(RESPONSES, next.to_string())).await;
    assert_eq!(r.status, 200, "{}", r.text());
    let (_, sent) = up.requests().pop().unwrap();
    let turns = sent["messages"].as_array().unwrap();
    let last = turns.last().unwrap();
    assert_eq!(last["role"], "user");
    let result = last["content"].as_array().unwrap().last().unwrap();
    assert_eq!(result["type"], "tool_result");
    assert_eq!(result["tool_use_id"], "toolu_p");
    let call = turns[turns.len() - 2]["content"]
        .as_array()
        .unwrap()
        .last()
        .unwrap()
        .clone();
    assert_eq!(
        call["input"],
        json!({"input": "*** Begin Patch\n*** End Patch"})
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn codex_hosted_tools_are_refused_by_default_and_strict_lists_every_field() {
    let up = upstream().await;
    let gw = TestGateway::start(&config(&up.base_url())).await;
    let r = gw
        .send(post(RESPONSES, fixture(CODEX, "codex-default")))
        .await;
    assert_error(RESPONSES, &r, 400);
    let msg = r.json()["error"]["message"].as_str().unwrap().to_owned();
    // Only the hosted web search: the client-run tools are never called built-in.
    assert!(
        msg.starts_with("`tools[9] (web_search)` is not supported"),
        "{msg}"
    );
    assert!(msg.contains("builtin_tools = \"drop\""), "{msg}");

    let r = gw
        .send(post(RESPONSES, fixture(CODEX, "codex-strict")))
        .await;
    assert_error(RESPONSES, &r, 400);
    let msg = r.json()["error"]["message"].as_str().unwrap().to_owned();
    for field in [
        "`client_metadata`",
        "`include (reasoning.encrypted_content)`",
        "`text.verbosity`",
        "`tools[8] (tool_search)`",
        "`reasoning.effort`",
    ] {
        assert!(msg.contains(field), "{field} missing: {msg}");
    }
    assert!(msg.starts_with("5 fields are not supported"), "{msg}");
    assert!(up.requests().is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn namespaced_tools_are_flattened_and_their_calls_come_back_under_the_clients_names() {
    let up = upstream().await;
    let gw = TestGateway::start(&config(&up.base_url())).await;
    let req = json!({
        "model": "codex-anthropic", "input": "read a.txt",
        "tools": [{"type": "namespace", "name": "mcp__files__", "description": "files",
            "tools": [{"type": "function", "name": "read", "description": "Read a file",
                "parameters": {"type": "object", "properties": {"path": {"type": "string"}}}}]}],
    });
    let r = gw.send(post(RESPONSES, req.to_string())).await;
    assert_eq!(r.status, 200, "{}", r.text());
    let (_, sent) = up.requests().pop().unwrap();
    assert_eq!(sent["tools"][0]["name"], "mcp__files__read");
    let item = &r.json()["output"][0];
    assert_eq!(item["type"], "function_call", "{item}");
    assert_eq!(item["name"], "read");
    assert_eq!(item["namespace"], "mcp__files__");
    assert_eq!(item["arguments"], "{\"path\":\"a.txt\"}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn root_probe_and_count_tokens() {
    let up = upstream().await;
    let gw = TestGateway::start(&format!(
        "{}{}",
        config(&up.base_url()),
        model("claude-direct", &[("anthropic", &up.base_url())])
    ))
    .await;
    let mut head = get("/");
    head.method = http::Method::HEAD;
    let r = gw.send(head).await;
    assert_eq!(r.status, 200);

    // A model with no Anthropic target: an estimate, in Anthropic's shape, marked as one.
    let body = fixture(CLAUDE_CODE, "claude-opus-5-5");
    let r = gw
        .send(post("/v1/messages/count_tokens", body.clone()))
        .await;
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(r.json()["input_tokens"], body.len().div_ceil(4));
    assert!(r.header("x-gateway-token-estimate").is_some());
    assert!(up.requests().is_empty());

    // An Anthropic target counts for itself, with the query passed on.
    let r = gw
        .send(post(
            "/v1/messages/count_tokens?beta=true",
            fixture(CLAUDE_CODE, "claude-direct"),
        ))
        .await;
    assert_eq!(r.status, 200, "{}", r.text());
    assert!(r.header("x-gateway-token-estimate").is_none());
    let (head, sent) = up.requests().pop().unwrap();
    assert!(
        head.starts_with("post /v1/messages/count_tokens?beta=true http"),
        "{head}"
    );
    assert_eq!(sent["model"], "up-claude-direct");

    // Unknown models are refused in Anthropic's envelope.
    let r = gw
        .send(post(
            "/v1/messages/count_tokens",
            r#"{"model":"nope","messages":[]}"#,
        ))
        .await;
    assert_error(MESSAGES, &r, 404);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn thinking_maps_to_reasoning_effort_on_a_target_that_takes_it() {
    let up = upstream().await;
    let gw = TestGateway::start(&config(&up.base_url())).await;
    // A 31,999-token thinking budget reads as high effort.
    let r = gw
        .send(post(
            MESSAGES,
            fixture(CLAUDE_CODE_SONNET, "sonnet-reasoning"),
        ))
        .await;
    assert_eq!(r.status, 200, "{}", r.text());
    assert!(
        !dropped(&r).contains(&"thinking".to_owned()),
        "{:?}",
        dropped(&r)
    );
    let (_, sent) = up.requests().pop().unwrap();
    assert_eq!(sent["reasoning_effort"], "high");
    // Claude Code's own `output_config.effort` wins over the budget reading.
    let r = gw
        .send(post(MESSAGES, fixture(CLAUDE_CODE, "sonnet-reasoning")))
        .await;
    assert_eq!(r.status, 200, "{}", r.text());
    let (_, sent) = up.requests().pop().unwrap();
    assert_eq!(sent["reasoning_effort"], "medium");
    // On a target without it, the same body's thinking is dropped and named.
    let r = gw
        .send(post(
            MESSAGES,
            fixture(CLAUDE_CODE_SONNET, "claude-opus-5-5"),
        ))
        .await;
    assert!(dropped(&r).contains(&"thinking".to_owned()));
    let (_, sent) = up.requests().pop().unwrap();
    assert!(sent.get("reasoning_effort").is_none());
}

const GEMINI_TEXT_JSON: &str = r#"{"candidates":[{"content":{"role":"model","parts":[{"text":"Hello"}]},"finishReason":"STOP","index":0}],"usageMetadata":{"promptTokenCount":5,"candidatesTokenCount":1,"totalTokenCount":6},"modelVersion":"up","responseId":"r"}"#;
const CHAT_TEXT_JSON: &str = r#"{"id":"c","object":"chat.completion","created":1,"model":"up","choices":[{"index":0,"message":{"role":"assistant","content":"Hello"},"finish_reason":"stop"}],"usage":{"prompt_tokens":5,"completion_tokens":1}}"#;

/// Answers JSON in the dialect its path names (no streams: these fixtures' answers are not
/// what is checked).
async fn json_upstream() -> ScriptedUpstream {
    ScriptedUpstream::start(|head, _| {
        if head.contains(":generatecontent") || head.contains(":streamgeneratecontent") {
            json_answer("200 OK", GEMINI_TEXT_JSON)
        } else if head.starts_with("post /v1/messages") {
            json_answer("200 OK", ANTHROPIC_TEXT_JSON)
        } else {
            json_answer("200 OK", CHAT_TEXT_JSON)
        }
    })
    .await
}

fn gemini_agents_config(base: &str) -> String {
    format!(
        "{}{}{}",
        model("gemini-3-openai", &[("openai", base)]),
        model("gemini-3-anthropic", &[("anthropic", base)]),
        model("claude-sonnet-4-5-gem", &[("gemini", base)]),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn gemini_cli_on_openai_and_anthropic_models() {
    let up = json_upstream().await;
    let gw = TestGateway::start(&gemini_agents_config(&up.base_url())).await;
    // Its main request: topK, thought summaries and (the target takes no reasoning control)
    // its thinking level dropped and named, its tools offered.
    let r = gw
        .send(post(
            "/v1beta/models/gemini-3-openai:generateContent",
            GEMINI_CLI,
        ))
        .await;
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(
        dropped(&r),
        sorted(&[
            "generationConfig.thinkingConfig",
            "generationConfig.thinkingConfig.includeThoughts",
            "generationConfig.topK"
        ])
    );
    let (_, sent) = up.requests().pop().unwrap();
    assert!(sent.get("top_k").is_none());
    let names: Vec<&str> = sent["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap())
        .collect();
    assert!(names.contains(&"read_file"), "{names:?}");

    // Its router: JSON output with a schema written in Gemini's upper-case types, lowered.
    let want = json!({"type": "object", "properties": {
        "complexity_reasoning": {"type": "string", "description": "Brief explanation for the score."},
        "complexity_score": {"type": "integer", "description": "Complexity score from 1-100."}},
        "required": ["complexity_reasoning", "complexity_score"]});
    let r = gw
        .send(post(
            "/v1beta/models/gemini-3-openai:generateContent",
            GEMINI_CLI_ROUTER,
        ))
        .await;
    assert_eq!(r.status, 200, "{}", r.text());
    let (_, sent) = up.requests().pop().unwrap();
    assert_eq!(sent["response_format"]["type"], "json_schema");
    assert_eq!(sent["response_format"]["json_schema"]["schema"], want);
    let r = gw
        .send(post(
            "/v1beta/models/gemini-3-anthropic:generateContent",
            GEMINI_CLI_ROUTER,
        ))
        .await;
    assert_eq!(r.status, 200, "{}", r.text());
    let (_, sent) = up.requests().pop().unwrap();
    assert_eq!(
        sent["output_config"]["format"],
        json!({"type": "json_schema", "schema": want})
    );
    assert_eq!(sent["top_k"], 64, "Anthropic takes top_k");

    // The answer to a signed call: call and result paired by Gemini CLI's id; the signature
    // (Google's own) dropped and named.
    let r = gw
        .send(post(
            "/v1beta/models/gemini-3-anthropic:generateContent",
            GEMINI_CLI_TOOL_RESULT,
        ))
        .await;
    assert_eq!(r.status, 200, "{}", r.text());
    assert!(dropped(&r).contains(&"contents[].parts[].thoughtSignature".to_owned()));
    let (_, sent) = up.requests().pop().unwrap();
    let turns = sent["messages"].as_array().unwrap();
    let n = turns.len();
    assert_eq!(turns[n - 2]["content"][0]["type"], "tool_use");
    assert_eq!(turns[n - 2]["content"][0]["id"], "mock-call-0001");
    assert_eq!(turns[n - 1]["content"][0]["tool_use_id"], "mock-call-0001");
    assert_eq!(
        turns[n - 1]["content"][0]["content"][0]["text"],
        "captured marker\n"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn opencode_cache_control_maps_to_anthropic_and_drops_on_gemini() {
    let up = json_upstream().await;
    let base = up.base_url();
    let config = format!(
        "{}{}",
        model("claude-sonnet-4-5-oc", &[("anthropic", &base)]),
        gemini_agents_config(&base)
    );
    let gw = TestGateway::start(&config).await;
    let mut body: Value =
        serde_json::from_str(&fixture(OPENCODE_CLAUDE, "claude-sonnet-4-5-oc")).unwrap();
    // Answers as JSON here (the fixture streams).
    body["stream"] = json!(false);
    body.as_object_mut().unwrap().remove("stream_options");
    let r = gw.send(post(CHAT, body.to_string())).await;
    assert_eq!(r.status, 200, "{}", r.text());
    assert!(r.header("x-gateway-dropped-fields").is_none());
    let (_, sent) = up.requests().pop().unwrap();
    assert_eq!(
        sent["system"][0]["cache_control"],
        json!({"type": "ephemeral"})
    );
    body["model"] = json!("claude-sonnet-4-5-gem");
    let r = gw.send(post(CHAT, body.to_string())).await;
    assert_eq!(r.status, 200, "{}", r.text());
    assert!(
        dropped(&r).contains(&"messages[].cache_control".to_owned()),
        "{:?}",
        dropped(&r)
    );
    let (head, sent) = up.requests().pop().unwrap();
    assert!(head.contains(":generatecontent"), "{head}");
    assert!(!sent.to_string().contains("cache_control"));
}

/// A target whose upstream model is `upstream_model`, with `extra` keys on the target.
fn claude_target(name: &str, base: &str, upstream_model: &str, extra: &str) -> String {
    format!(
        "[[models]]\nname = \"{name}\"\n[[models.targets]]\nprovider = \"anthropic\"\nbase_url = \"{base}\"\nmodel = \"{upstream_model}\"\napi_key_env = \"{UPSTREAM_KEY_ENV}\"\n{extra}\n"
    )
}

/// The README's "Gemini CLI on Claude" recipe: Gemini CLI sends temperature 1, topP 0.95
/// and topK 64 on every request, and Claude 4.5 refuses temperature with top_p (issue 51):
/// top_p is dropped and named, temperature and top_k carried. A model the table does not
/// know takes the same rule from `sampling` on its target.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn gemini_cli_on_claude_4_5_sends_temperature_or_top_p() {
    let up = json_upstream().await;
    let base = up.base_url();
    let config = format!(
        "{}{}",
        claude_target("sonnet", &base, "claude-sonnet-4-5", ""),
        claude_target(
            "custom",
            &base,
            "my-claude",
            "sampling = \"temperature_or_top_p\""
        ),
    );
    let gw = TestGateway::start(&config).await;
    for model in ["sonnet", "custom"] {
        let r = gw
            .send(post(
                &format!("/v1beta/models/{model}:generateContent"),
                GEMINI_CLI,
            ))
            .await;
        assert_eq!(r.status, 200, "{}", r.text());
        assert!(
            dropped(&r).contains(&"generationConfig.topP".to_owned()),
            "{model}: {:?}",
            dropped(&r)
        );
        let (_, sent) = up.requests().pop().unwrap();
        assert!(sent.get("top_p").is_none(), "{model}: {sent}");
        assert_eq!(sent["temperature"], 1);
        assert_eq!(sent["top_k"], 64);
    }
}

/// opencode's Anthropic SDK sends `top_k` on Gemini models: carried as Gemini's `topK`
/// (it was refused, "no equivalent there"); still refused on chat targets.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn anthropic_top_k_reaches_gemini_as_top_k() {
    let up = json_upstream().await;
    let gw = TestGateway::start(&gemini_agents_config(&up.base_url())).await;
    let body = r#"{"model":"claude-sonnet-4-5-gem","max_tokens":8,"top_k":64,"messages":[{"role":"user","content":"hi"}]}"#;
    let r = gw.send(post("/v1/messages", body)).await;
    assert_eq!(r.status, 200, "{}", r.text());
    let (_, sent) = up.requests().pop().unwrap();
    assert_eq!(sent["generationConfig"]["topK"], 64, "{sent}");
    let on_chat = r#"{"model":"gemini-3-openai","max_tokens":8,"top_k":64,"messages":[{"role":"user","content":"hi"}]}"#;
    let r = gw.send(post("/v1/messages", on_chat)).await;
    assert_eq!(r.status, 400, "{}", r.text());
    assert!(r.text().contains("top_k"), "{}", r.text());
}

/// Every refusal of a request is in its one 400, the sampling rule's among them: an
/// Anthropic client's top_k on a first target that has no top-k (here a Gemini target held
/// to temperature and top_p by `sampling`) is named beside the body's other refused field
/// (it was refused only when encoding, after decoding's 400 had named the other alone).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sampling_refusals_are_in_the_one_400() {
    let up = json_upstream().await;
    let config = format!(
        "[[models]]\nname = \"gem\"\n[[models.targets]]\nprovider = \"gemini\"\nbase_url = \"{}\"\nmodel = \"my-gemini\"\napi_key_env = \"{UPSTREAM_KEY_ENV}\"\nsampling = \"temperature_and_top_p\"\n",
        up.base_url()
    );
    let gw = TestGateway::start(&config).await;
    let body = r#"{"model":"gem","max_tokens":8,"top_k":64,"mcp_servers":[{"type":"url","url":"https://mcp.example","name":"x"}],"messages":[{"role":"user","content":"hi"}]}"#;
    let r = gw.send(post("/v1/messages", body)).await;
    assert_eq!(r.status, 400, "{}", r.text());
    assert!(r.text().contains("top_k"), "{}", r.text());
    assert!(r.text().contains("mcp_servers"), "{}", r.text());
    assert!(up.requests().is_empty(), "nothing reached the upstream");
}
