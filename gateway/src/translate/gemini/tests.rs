use serde_json::{json, Value};

use super::*;
use crate::dialect::Provider;
use crate::translate::policy::{Policy, Verdicts};

fn decode(v: Value) -> Result<(Request, Vec<String>), TranslateError> {
    let mut cx = Verdicts::new(Policy::default());
    let r = decode_request(&mut v.clone(), &mut cx)?;
    let dropped = cx.finish("OpenAI chat completions")?;
    Ok((r, dropped))
}

fn target(reasoning: bool) -> TargetInfo<'static> {
    TargetInfo {
        reasoning,
        ..TargetInfo::plain(Provider::Gemini, "gemini-2.5-pro", 4096)
    }
}

/// What Gemini CLI sends (measured): topK, thinking, a call with a client-made id and a
/// placeholder signature, its answer, upper-case schema types.
fn gemini_cli_body() -> Value {
    json!({
        "contents": [
            {"role": "user", "parts": [{"text": "list files"}]},
            {"role": "model", "parts": [
                {"functionCall": {"id": "ls-1", "name": "list_directory", "args": {"path": "."}},
                 "thoughtSignature": "skip_thought_signature_validator"}]},
            {"role": "user", "parts": [
                {"functionResponse": {"id": "ls-1", "name": "list_directory",
                                      "response": {"output": "a.txt"}}}]},
        ],
        "systemInstruction": {"role": "user", "parts": [{"text": "You are an agent."}]},
        "tools": [{"functionDeclarations": [{"name": "list_directory", "description": "ls",
            "parameters": {"type": "OBJECT", "properties": {"path": {"type": "STRING"}},
                           "required": ["path"]}}]}],
        "generationConfig": {"temperature": 0, "topP": 1, "topK": 64,
            "thinkingConfig": {"includeThoughts": true, "thinkingBudget": 8192}},
    })
}

#[test]
fn gemini_cli_request_decodes() {
    let (r, dropped) = decode(gemini_cli_body()).unwrap();
    assert_eq!(r.system, ["You are an agent."]);
    assert_eq!(r.messages.len(), 3);
    assert_eq!(
        r.messages[1].parts,
        [Part::ToolCall {
            id: "ls-1".into(),
            name: "list_directory".into(),
            arguments: r#"{"path":"."}"#.into()
        }]
    );
    assert_eq!(
        r.messages[2].parts,
        [Part::ToolResult {
            id: "ls-1".into(),
            content: vec![Part::Text("a.txt".into())],
            is_error: false
        }]
    );
    assert_eq!(
        r.tools[0].parameters["properties"]["path"]["type"],
        "string"
    );
    assert_eq!(r.top_k, Some(64.into()));
    assert_eq!(
        r.reasoning.as_ref().and_then(|re| re.effort),
        Some(Effort::Medium)
    );
    assert_eq!(
        dropped,
        [
            "contents[].parts[].thoughtSignature",
            "generationConfig.thinkingConfig.includeThoughts"
        ]
    );
}

#[test]
fn every_refused_field_is_named_once() {
    let body = json!({
        "contents": [{"role": "user", "parts": [{"text": "hi"}, {"executableCode": {"code": "1"}}]}],
        "cachedContent": "cachedContents/x",
        "generationConfig": {"candidateCount": 2, "speechConfig": {"voice": "x"}},
        "tools": [{"googleSearch": {}}],
    });
    let err = decode(body).unwrap_err().to_string();
    for f in [
        "contents[0].parts[1].executableCode",
        "cachedContent",
        "generationConfig.candidateCount",
        "generationConfig.speechConfig",
        "tools[0] (googleSearch)",
    ] {
        assert!(err.contains(f), "{f} in {err}");
    }
}

#[test]
fn calls_without_ids_pair_by_name() {
    let body = json!({"contents": [
        {"role": "user", "parts": [{"text": "go"}]},
        {"role": "model", "parts": [{"functionCall": {"name": "f", "args": {}}},
                                    {"functionCall": {"name": "g"}}]},
        {"role": "user", "parts": [{"functionResponse": {"name": "g", "response": {"x": 1}}},
                                   {"functionResponse": {"name": "f", "response": {"output": "ok"}}}]},
    ]});
    let (r, _) = decode(body).unwrap();
    let ids: Vec<&str> = r.messages[2]
        .parts
        .iter()
        .map(|p| match p {
            Part::ToolResult { id, .. } => id.as_str(),
            _ => "",
        })
        .collect();
    assert_eq!(ids, ["call_1_1", "call_1_0"]);
    assert!(matches!(&r.messages[2].parts[0],
        Part::ToolResult { content, .. } if content == &[Part::Text(r#"{"x":1}"#.into())]));
}

#[test]
fn snake_case_fields_are_read() {
    let body = json!({
        "contents": [{"role": "user", "parts": [{"text": "hi"}]}],
        "system_instruction": {"parts": [{"text": "sys"}]},
        "generation_config": {"max_output_tokens": 7, "response_mime_type": "application/json",
                              "response_schema": {"type": "OBJECT"}},
    });
    let (r, _) = decode(body).unwrap();
    assert_eq!(r.system, ["sys"]);
    assert_eq!(r.max_tokens, Some(7));
    assert_eq!(
        r.response_format,
        Some(ResponseFormat::Schema(json!({"type": "object"})))
    );
}

#[test]
fn encodes_for_gemini_with_signatures_restored() {
    let sig = "CiQBcsjafE4pWq+/Zx9ag==";
    let id = signature::fold("fc_1", Some(sig));
    let r = Request {
        system: vec!["be brief".into()],
        messages: vec![
            Message {
                role: Role::User,
                parts: vec![Part::Text("weather?".into())],
            },
            Message {
                role: Role::Assistant,
                parts: vec![Part::ToolCall {
                    id: id.clone(),
                    name: "weather".into(),
                    arguments: r#"{"city":"Oslo"}"#.into(),
                }],
            },
            Message {
                role: Role::User,
                parts: vec![Part::ToolResult {
                    id,
                    content: vec![Part::Text("rain".into())],
                    is_error: false,
                }],
            },
            Message {
                role: Role::System,
                parts: vec![Part::Text("later".into())],
            },
        ],
        tools: vec![Tool {
            name: "weather".into(),
            description: None,
            parameters: json!({"type": "object"}),
            strict: None,
        }],
        tool_choice: Some(ToolChoice::Named("weather".into())),
        max_tokens: Some(100),
        top_k: Some(40.into()),
        reasoning: Some(Reasoning {
            effort: Some(Effort::High),
            fields: vec!["reasoning_effort"],
        }),
        ..Request::default()
    };
    let v: Value = serde_json::from_slice(&encode_request(&r, target(true)).unwrap()).unwrap();
    assert_eq!(
        v,
        json!({
            "contents": [
                {"role": "user", "parts": [{"text": "weather?"}]},
                {"role": "model", "parts": [{"functionCall": {"id": "fc_1", "name": "weather",
                    "args": {"city": "Oslo"}}, "thoughtSignature": sig}]},
                {"role": "user", "parts": [{"functionResponse": {"id": "fc_1", "name": "weather",
                    "response": {"output": "rain"}}}]},
            ],
            "systemInstruction": {"parts": [{"text": "be brief"}, {"text": "later"}]},
            "tools": [{"functionDeclarations": [{"name": "weather",
                "parametersJsonSchema": {"type": "object"}}]}],
            "toolConfig": {"functionCallingConfig": {"mode": "ANY",
                "allowedFunctionNames": ["weather"]}},
            "generationConfig": {"maxOutputTokens": 100, "topK": 40,
                "thinkingConfig": {"thinkingBudget": 24576}},
        })
    );
    // A result that answers no call cannot name its function.
    let mut bad = r.clone();
    bad.messages.remove(1);
    assert!(encode_request(&bad, target(false)).is_err());
}

#[test]
fn answers_both_ways() {
    let body = br#"{"candidates":[{"content":{"role":"model","parts":[
        {"text":"thinking...","thought":true},
        {"text":"Let me check."},
        {"functionCall":{"name":"weather","args":{"city":"Oslo"}},"thoughtSignature":"c2ln"}]},
        "finishReason":"STOP","index":0}],
        "usageMetadata":{"promptTokenCount":12,"candidatesTokenCount":5,"thoughtsTokenCount":3,
        "cachedContentTokenCount":4,"totalTokenCount":20},
        "modelVersion":"gemini-2.5-pro","responseId":"resp-1"}"#;
    let r = decode_response(body).unwrap();
    assert_eq!(r.stop, StopReason::ToolUse);
    assert_eq!(r.output[0], Output::Text("Let me check.".into()));
    let Output::ToolCall { id, arguments, .. } = &r.output[1] else {
        panic!("{:?}", r.output)
    };
    assert_eq!(signature::unfold(id).1.as_deref(), Some("c2ln"));
    assert_eq!(arguments, r#"{"city":"Oslo"}"#);
    assert_eq!(
        r.usage,
        Usage {
            input: 12,
            cache_read: 4,
            cache_creation: 0,
            output: 8
        }
    );
    let out: Value = serde_json::from_slice(&encode_response(&r).unwrap()).unwrap();
    assert_eq!(out["candidates"][0]["finishReason"], "STOP");
    assert_eq!(
        out["candidates"][0]["content"]["parts"][1]["functionCall"]["args"],
        json!({"city": "Oslo"})
    );
    assert_eq!(out["usageMetadata"]["promptTokenCount"], 12);
    assert_eq!(out["usageMetadata"]["cachedContentTokenCount"], 4);
    let blocked =
        br#"{"promptFeedback":{"blockReason":"SAFETY"},"usageMetadata":{"promptTokenCount":3}}"#;
    assert_eq!(
        decode_response(blocked).unwrap().stop,
        StopReason::ContentFilter
    );
    assert!(decode_response(b"{}").is_err());
}
