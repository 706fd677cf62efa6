//! Google's Gemini API codec (`generateContent`): client requests into the hub, the hub
//! into upstream requests (AI Studio), and answers both ways. Streams: `stream/`.
//!
//! Gemini's JSON accepts each field in camelCase and in snake_case (Google's JSON mapping);
//! the decoder reads both. Ids: Gemini's calls may come without one, and its signatures
//! travel inside the ids other dialects carry ([`signature`]).

pub(crate) mod schema;
pub(crate) mod signature;
pub(crate) mod wire;

use std::borrow::Cow;
use std::collections::{HashMap, VecDeque};

use serde_json::value::RawValue;
use serde_json::{json, Map, Value};

use super::errors::{TranslateError, UpstreamShapeError};
use super::field::{array, count, invalid, is_inert, need, number, object, string, strings};
use super::hub::{
    Effort, Image, Message, Output, Part, Reasoning, Request, Response, ResponseFormat, Role,
    SamplingNames, StopReason, Tool, ToolChoice, Usage,
};
use super::policy::Verdicts;
use super::target::TargetInfo;
use super::walk;

/// Google's tools that run on Google's side: nothing equivalent on another provider.
const BUILTIN_TOOLS: [&str; 9] = [
    "googleSearch",
    "googleSearchRetrieval",
    "codeExecution",
    "urlContext",
    "retrieval",
    "fileSearch",
    "googleMaps",
    "computerUse",
    "enterpriseWebSearch",
];

/// `snake_case` -> `camelCase` (Google's JSON takes both spellings of every field).
fn camel(k: &str) -> Cow<'_, str> {
    if !k.contains('_') {
        return Cow::Borrowed(k);
    }
    let mut out = String::with_capacity(k.len());
    let mut up = false;
    for c in k.chars() {
        if c == '_' {
            up = true;
        } else if up {
            out.push(c.to_ascii_uppercase());
            up = false;
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

/// Decodes a `generateContent` body (the model and whether it streams come from the path);
/// each field's fate goes to `cx`.
pub(crate) fn decode_request(v: &mut Value, cx: &mut Verdicts) -> Result<Request, TranslateError> {
    walk::request(v, |k, val, r| {
        let k = camel(k);
        let k = k.as_ref();
        match k {
            "contents" => decode_contents(val, r, cx)?,
            "systemInstruction" => {
                let at = "systemInstruction";
                let parts = match val {
                    Value::String(s) => vec![s.clone()],
                    _ => texts(
                        need(object(val, at)?, "parts", at)?,
                        "systemInstruction.parts",
                    )?,
                };
                r.system.extend(parts);
            }
            "tools" => decode_tools(val, r, cx)?,
            "toolConfig" => decode_tool_config(val, r)?,
            "generationConfig" => decode_generation_config(val, r, cx)?,
            // Google's own moderation thresholds: another provider applies its own.
            "safetySettings" => cx.client_side(k, "safety thresholds are Google's own"),
            "labels" => cx.hint(k),
            "cachedContent" => cx.refuse(k, "a cache stored at Google cannot be read elsewhere"),
            _ => cx.refuse(k, "it has no equivalent there"),
        }
        Ok(())
    })
}

/// Text-only parts (`{"text": ...}` each).
fn texts(v: &Value, at: &str) -> Result<Vec<String>, TranslateError> {
    let mut out = Vec::new();
    for (i, p) in array(v, at)?.iter().enumerate() {
        let at = format!("{at}[{i}]");
        let o = object(p, &at)?;
        out.push(string(need(o, "text", &at)?, &format!("{at}.text"))?);
    }
    Ok(out)
}

fn decode_contents(v: &Value, r: &mut Request, cx: &mut Verdicts) -> Result<(), TranslateError> {
    let mut open = OpenCalls::default();
    for (i, c) in array(v, "contents")?.iter().enumerate() {
        // Paths are formatted only where an error or a verdict names them: most turns are
        // plain text, and two `format!`s per part were a visible share of a translation.
        let at = || format!("contents[{i}]");
        let o = c
            .as_object()
            .ok_or_else(|| invalid(at(), "must be an object"))?;
        let role = match o.get("role").and_then(Value::as_str) {
            None | Some("user" | "function" | "tool") => Role::User,
            Some("model") => Role::Assistant,
            Some(other) => {
                return Err(invalid(
                    format!("{}.role", at()),
                    format!("role {other:?} is not user or model"),
                ))
            }
        };
        for key in o.keys() {
            if !matches!(key.as_str(), "role" | "parts") {
                cx.refuse(format!("{}.{key}", at()), "it has no equivalent there");
            }
        }
        let list = match o.get("parts") {
            Some(p) => p
                .as_array()
                .ok_or_else(|| invalid(format!("{}.parts", at()), "must be an array"))?
                .as_slice(),
            None => &[],
        };
        let mut parts = Vec::with_capacity(list.len());
        for (j, p) in list.iter().enumerate() {
            // The common part: text alone.
            if let Some(m) = p.as_object().filter(|m| m.len() == 1) {
                if let Some(Value::String(t)) = m.get("text") {
                    parts.push(Part::Text(t.clone()));
                    continue;
                }
            }
            let at = format!("{}.parts[{j}]", at());
            decode_part(p, &at, (i, j), &mut open, &mut parts, cx)?;
        }
        r.messages.push(Message { role, parts });
    }
    Ok(())
}

/// Calls made so far without an answer: Gemini's ids are optional, and an answer without
/// one belongs to the earliest open call of its name. Kept by name, and an answer's id
/// recorded rather than searched for among the calls: a body holds thousands of calls and
/// answers, and a scan per answer was quadratic.
#[derive(Default)]
struct OpenCalls {
    /// Per name, its calls in order: (when made, id).
    by_name: HashMap<String, VecDeque<(usize, String)>>,
    /// Per id, when its last answer came: it closed every call of that id made before.
    answered: HashMap<String, usize>,
    clock: usize,
}

impl OpenCalls {
    fn call(&mut self, name: &str, id: &str) {
        self.clock += 1;
        let calls = self.by_name.entry(name.to_owned()).or_default();
        calls.push_back((self.clock, id.to_owned()));
    }

    fn answer(&mut self, id: &str) {
        self.clock += 1;
        self.answered.insert(id.to_owned(), self.clock);
    }

    /// The earliest open call of `name`, now answered.
    fn take(&mut self, name: &str) -> Option<String> {
        let calls = self.by_name.get_mut(name)?;
        while let Some((made, id)) = calls.pop_front() {
            if self.answered.get(&id).is_none_or(|&at| at < made) {
                return Some(id);
            }
        }
        None
    }
}

fn decode_part(
    p: &Value,
    at: &str,
    (i, j): (usize, usize),
    open: &mut OpenCalls,
    parts: &mut Vec<Part>,
    cx: &mut Verdicts,
) -> Result<(), TranslateError> {
    let o = object(p, at)?;
    let thought = o.get("thought").and_then(Value::as_bool) == Some(true);
    for (key, val) in o {
        if val.is_null() {
            continue;
        }
        let k = camel(key);
        match k.as_ref() {
            "text" if thought => cx.client_side(
                &format!("{at}.thought"),
                "thought summaries are the model's own notes",
            ),
            "text" => parts.push(Part::Text(string(val, &format!("{at}.text"))?)),
            "thought" => {}
            // Signed for Google's models only; a Gemini target gets them back through the
            // ids of the calls it made (see `signature`).
            "thoughtSignature" => cx.client_side(
                &format!("{at}.thoughtSignature"),
                "signed for Google's models only",
            ),
            "inlineData" => {
                let b = object(val, &format!("{at}.inlineData"))?;
                let mime = b
                    .get("mimeType")
                    .or_else(|| b.get("mime_type"))
                    .and_then(Value::as_str)
                    .ok_or_else(|| invalid(format!("{at}.inlineData.mimeType"), "is required"))?
                    .to_owned();
                if !mime.starts_with("image/") {
                    cx.refuse(
                        format!("{at}.inlineData ({mime})"),
                        "only images can be translated",
                    );
                    continue;
                }
                let data = string(need(b, "data", at)?, &format!("{at}.inlineData.data"))?;
                parts.push(Part::Image(Image::Base64 {
                    media_type: mime,
                    data,
                }));
            }
            "fileData" => {
                let f = object(val, &format!("{at}.fileData"))?;
                let uri = f
                    .get("fileUri")
                    .or_else(|| f.get("file_uri"))
                    .and_then(Value::as_str)
                    .ok_or_else(|| invalid(format!("{at}.fileData.fileUri"), "is required"))?;
                let mime = f
                    .get("mimeType")
                    .or_else(|| f.get("mime_type"))
                    .and_then(Value::as_str)
                    .unwrap_or_default();
                // Files uploaded to Google are readable by Google's models only.
                if !mime.starts_with("image/") || uri.contains("generativelanguage.googleapis.com")
                {
                    cx.refuse(
                        format!("{at}.fileData"),
                        "only images at public URLs can be translated",
                    );
                    continue;
                }
                parts.push(Part::Image(Image::Url(uri.to_owned())));
            }
            "functionCall" => {
                let f = object(val, &format!("{at}.functionCall"))?;
                let name = string(need(f, "name", at)?, &format!("{at}.functionCall.name"))?;
                let id = match f.get("id").and_then(Value::as_str) {
                    Some(id) if !id.is_empty() => id.to_owned(),
                    _ => format!("call_{i}_{j}"),
                };
                let arguments = match f.get("args") {
                    None | Some(Value::Null) => "{}".to_owned(),
                    Some(a) => {
                        serde_json::to_string(object(a, &format!("{at}.functionCall.args"))?)
                            .expect("a JSON map serializes")
                    }
                };
                open.call(&name, &id);
                parts.push(Part::ToolCall {
                    id,
                    name,
                    arguments,
                });
            }
            "functionResponse" => {
                let f = object(val, &format!("{at}.functionResponse"))?;
                let name = string(need(f, "name", at)?, &format!("{at}.functionResponse.name"))?;
                let given = f
                    .get("id")
                    .and_then(Value::as_str)
                    .filter(|s| !s.is_empty());
                let id = match given {
                    Some(id) => {
                        open.answer(id);
                        id.to_owned()
                    }
                    None => open.take(&name).unwrap_or_else(|| format!("call_{i}_{j}")),
                };
                let response = f.get("response").cloned().unwrap_or(Value::Null);
                let is_error = response.get("error").is_some() && response.get("output").is_none();
                // The result as text: its `output` (or `error`) when that is all it holds
                // (Gemini CLI's form), else the whole object as JSON.
                let text = match response.as_object() {
                    Some(m) if m.len() == 1 => match m.values().next() {
                        Some(Value::String(s))
                            if m.contains_key("output") || m.contains_key("error") =>
                        {
                            s.clone()
                        }
                        _ => response.to_string(),
                    },
                    _ => response.to_string(),
                };
                for key in f.keys() {
                    if !matches!(key.as_str(), "id" | "name" | "response" | "willContinue") {
                        cx.refuse(
                            format!("{at}.functionResponse.{key}"),
                            "it has no equivalent there",
                        );
                    }
                }
                parts.push(Part::ToolResult {
                    id,
                    content: vec![Part::Text(text)],
                    is_error,
                });
            }
            "partMetadata" | "mediaResolution" => cx.hint(&format!("{at}.{k}")),
            _ => cx.refuse(format!("{at}.{key}"), "it has no equivalent there"),
        }
    }
    Ok(())
}

fn decode_tools(v: &Value, r: &mut Request, cx: &mut Verdicts) -> Result<(), TranslateError> {
    for (i, t) in array(v, "tools")?.iter().enumerate() {
        let at = format!("tools[{i}]");
        for (key, val) in object(t, &at)? {
            let k = camel(key);
            match k.as_ref() {
                "functionDeclarations" => {
                    for (j, f) in array(val, &format!("{at}.functionDeclarations"))?
                        .iter()
                        .enumerate()
                    {
                        let at = format!("{at}.functionDeclarations[{j}]");
                        r.tools.push(decode_declaration(f, &at, cx)?);
                    }
                }
                k if BUILTIN_TOOLS.contains(&k) => {
                    cx.builtin_tool(&format!("{at} ({k})"), "it runs only on Google's side")
                }
                _ => cx.refuse(format!("{at}.{key}"), "it has no equivalent there"),
            }
        }
    }
    Ok(())
}

fn decode_declaration(f: &Value, at: &str, cx: &mut Verdicts) -> Result<Tool, TranslateError> {
    let o = object(f, at)?;
    let mut parameters = None;
    for (key, val) in o {
        let k = camel(key);
        match k.as_ref() {
            "name" | "description" => {}
            // Gemini's own types are upper-case; clients put them in the JSON Schema
            // fields too (Gemini CLI's router does): lowered either way.
            "parameters" | "parametersJsonSchema" => parameters = Some(schema::lowered(val)),
            // The shape of the function's result: the client runs it either way.
            "response" | "responseJsonSchema" => cx.hint(&format!("{at}.{k}")),
            "behavior" if val.as_str() == Some("BLOCKING") => {}
            _ if is_inert(val) => {}
            _ => cx.refuse(format!("{at}.{key}"), "it has no equivalent there"),
        }
    }
    Ok(Tool {
        name: string(need(o, "name", at)?, &format!("{at}.name"))?,
        description: walk::description(o),
        parameters: parameters.unwrap_or_else(walk::no_parameters),
        // Gemini's declarations have no such flag.
        strict: None,
    })
}

fn decode_tool_config(v: &Value, r: &mut Request) -> Result<(), TranslateError> {
    let o = object(v, "toolConfig")?;
    let Some(f) = o
        .get("functionCallingConfig")
        .or_else(|| o.get("function_calling_config"))
    else {
        return Ok(());
    };
    let at = "toolConfig.functionCallingConfig";
    let f = object(f, at)?;
    let names: Vec<String> = match f
        .get("allowedFunctionNames")
        .or_else(|| f.get("allowed_function_names"))
    {
        Some(n) => strings(n, &format!("{at}.allowedFunctionNames"))?,
        None => Vec::new(),
    };
    let mode = f.get("mode").and_then(Value::as_str).unwrap_or("AUTO");
    r.tool_choice = Some(match (mode, names.as_slice()) {
        ("AUTO" | "MODE_UNSPECIFIED" | "VALIDATED", _) => ToolChoice::Auto,
        ("NONE", _) => ToolChoice::None,
        ("ANY", [one]) => ToolChoice::Named(one.clone()),
        ("ANY", []) => ToolChoice::Required,
        ("ANY", _) => {
            return Err(invalid(
                format!("{at}.allowedFunctionNames"),
                "more than one allowed function cannot be translated (name one, or none)",
            ))
        }
        (other, _) => {
            return Err(invalid(
                format!("{at}.mode"),
                format!("unknown mode {other:?}"),
            ))
        }
    });
    Ok(())
}

fn decode_generation_config(
    v: &Value,
    r: &mut Request,
    cx: &mut Verdicts,
) -> Result<(), TranslateError> {
    let mut mime = None;
    let mut schema_v = None;
    r.sampling_names = SamplingNames::Gemini;
    for (key, val) in object(v, "generationConfig")? {
        if val.is_null() {
            continue;
        }
        let k = camel(key);
        let k = k.as_ref();
        let at = format!("generationConfig.{k}");
        match k {
            "maxOutputTokens" => r.max_tokens = Some(count(val, &at)?),
            "temperature" => r.temperature = Some(number(val, &at)?),
            "topP" => r.top_p = Some(number(val, &at)?),
            "topK" => r.top_k = Some(number(val, &at)?),
            "stopSequences" => r.stop = strings(val, &at)?,
            "candidateCount" if val.as_u64() == Some(1) => {}
            "candidateCount" => cx.refuse(at, "only one candidate can be translated"),
            "responseMimeType" => mime = Some(string(val, &at)?),
            "responseSchema" | "responseJsonSchema" => schema_v = Some(schema::lowered(val)),
            "responseModalities" if modalities_text_only(val) => {}
            "thinkingConfig" => decode_thinking(val, r, cx)?,
            "mediaResolution" | "enableEnhancedCivicAnswers" => cx.hint(&at),
            "presencePenalty" | "frequencyPenalty" | "responseLogprobs" | "logprobs" | "seed"
            | "audioTimestamp"
                if is_inert(val) => {}
            _ => cx.refuse(at, "it has no equivalent there"),
        }
    }
    match (mime.as_deref(), schema_v) {
        (None | Some("text/plain"), None) => {}
        (Some("application/json"), None) => r.response_format = Some(ResponseFormat::Json),
        (Some("application/json") | None, Some(s)) => {
            r.response_format = Some(ResponseFormat::Schema(s))
        }
        (Some(other), _) => cx.refuse(
            "generationConfig.responseMimeType",
            format!("{other:?} output cannot be translated (text/plain or application/json)"),
        ),
    }
    Ok(())
}

fn modalities_text_only(v: &Value) -> bool {
    v.as_array().is_some_and(|a| {
        a.iter()
            .all(|m| m.as_str().is_some_and(|s| s.eq_ignore_ascii_case("text")))
    })
}

/// `thinkingConfig`: a budget (0 = off, -1 = the model's own choice) or a level.
fn decode_thinking(v: &Value, r: &mut Request, cx: &mut Verdicts) -> Result<(), TranslateError> {
    const FIELD: &str = "generationConfig.thinkingConfig";
    let o = object(v, FIELD)?;
    for (key, val) in o {
        let k = camel(key);
        match k.as_ref() {
            "thinkingBudget" => match val.as_i64() {
                Some(0) => {}
                Some(n) if n < 0 => Reasoning::note(&mut r.reasoning, FIELD, None),
                Some(n) => {
                    Reasoning::note(&mut r.reasoning, FIELD, Some(Effort::from_budget(n as u64)))
                }
                None => {
                    return Err(invalid(
                        format!("{FIELD}.thinkingBudget"),
                        "must be an integer",
                    ))
                }
            },
            "thinkingLevel" => {
                let effort = match val.as_str().map(str::to_ascii_lowercase).as_deref() {
                    Some("minimal") => Effort::Minimal,
                    Some("low") => Effort::Low,
                    Some("medium") => Effort::Medium,
                    Some("high") => Effort::High,
                    _ => {
                        return Err(invalid(
                            format!("{FIELD}.thinkingLevel"),
                            "must be minimal, low, medium or high",
                        ))
                    }
                };
                Reasoning::note(&mut r.reasoning, FIELD, Some(effort));
            }
            // Thought summaries in the answer: none come back translated.
            "includeThoughts" if val.as_bool() == Some(true) => cx.client_side(
                "generationConfig.thinkingConfig.includeThoughts",
                "no thought summaries come back translated",
            ),
            "includeThoughts" => {}
            _ => cx.refuse(format!("{FIELD}.{key}"), "it has no equivalent there"),
        }
    }
    Ok(())
}

/// A thinking budget for an effort, on the scale of Gemini 2.5's budgets.
fn budget(e: Effort) -> u64 {
    match e {
        Effort::Minimal => 512,
        Effort::Low => 1024,
        Effort::Medium => 8192,
        Effort::High => 24576,
        Effort::XHigh => 32768,
    }
}

/// Encodes a hub request for a Gemini upstream (the model goes in the path).
pub(crate) fn encode_request(r: &Request, t: TargetInfo<'_>) -> Result<Vec<u8>, TranslateError> {
    // Function answers need the function's name, which other dialects leave to the id.
    // By id, the first call's name (looked up once per answer: a map, not a scan).
    let mut names: HashMap<&str, &str> = HashMap::new();
    for m in &r.messages {
        for p in &m.parts {
            if let Part::ToolCall { id, name, .. } = p {
                names.entry(id.as_str()).or_insert(name.as_str());
            }
        }
    }
    let mut system: Vec<wire::TextOut<'_>> =
        r.system.iter().map(|s| wire::TextOut { text: s }).collect();
    let mut contents: Vec<wire::ContentOut<'_>> = Vec::with_capacity(r.messages.len());
    for (i, m) in r.messages.iter().enumerate() {
        let role = match m.role {
            // Gemini takes system text only in `systemInstruction`: later system turns
            // join it, in order.
            Role::System => {
                system.extend(m.texts().map(|text| wire::TextOut { text }));
                continue;
            }
            Role::User => "user",
            Role::Assistant => "model",
        };
        let mut parts = Vec::with_capacity(m.parts.len());
        for p in &m.parts {
            encode_part(p, i, &names, &mut parts)?;
        }
        if parts.is_empty() {
            continue;
        }
        match contents.last_mut() {
            Some(prev) if prev.role == role => prev.parts.extend(parts),
            _ => contents.push(wire::ContentOut { role, parts }),
        }
    }
    if signature::required(t.model) {
        signature::placeholders(&mut contents);
    }
    let tools = if r.tools.is_empty() {
        Vec::new()
    } else {
        vec![wire::ToolOut {
            function_declarations: r
                .tools
                .iter()
                .map(|t| wire::FunctionDeclarationOut {
                    name: &t.name,
                    description: t.description.as_deref(),
                    parameters_json_schema: &t.parameters,
                })
                .collect(),
        }]
    };
    let tool_config = r
        .tool_choice
        .as_ref()
        .filter(|_| !tools.is_empty())
        .map(|c| {
            let (mode, allowed) = match c {
                ToolChoice::Auto => ("AUTO", None),
                ToolChoice::None => ("NONE", None),
                ToolChoice::Required => ("ANY", None),
                ToolChoice::Named(n) => ("ANY", Some([n.as_str()])),
            };
            wire::ToolConfigOut {
                function_calling_config: wire::FunctionCallingConfigOut {
                    mode,
                    allowed_function_names: allowed,
                },
            }
        });
    let (response_mime_type, response_json_schema) = match &r.response_format {
        None => (None, None),
        Some(ResponseFormat::Json) => (Some("application/json"), None),
        Some(ResponseFormat::Schema(s)) => (Some("application/json"), Some(s)),
    };
    let body = wire::GenerateRequestOut {
        contents,
        system_instruction: (!system.is_empty()).then_some(wire::SystemOut { parts: system }),
        tools,
        tool_config,
        generation_config: wire::GenerationConfigOut {
            max_output_tokens: r.max_tokens,
            temperature: r.temperature.as_ref(),
            top_p: r.top_p.as_ref(),
            top_k: r.top_k.as_ref(),
            stop_sequences: &r.stop,
            thinking_config: r.effort_for(t.reasoning).map(|e| wire::ThinkingOut {
                thinking_budget: budget(e),
            }),
            response_mime_type,
            response_json_schema,
        },
    };
    Ok(serde_json::to_vec(&body).expect("a request serializes"))
}

fn encode_part<'a>(
    p: &'a Part,
    i: usize,
    names: &HashMap<&'a str, &'a str>,
    out: &mut Vec<wire::PartOut<'a>>,
) -> Result<(), TranslateError> {
    match p {
        Part::Text(t) if t.is_empty() => {}
        Part::Text(t) => out.push(wire::PartOut::Text {
            text: Cow::Borrowed(t),
        }),
        Part::Image(img) => out.push(image(img)),
        Part::ToolCall {
            id,
            name,
            arguments,
        } => {
            let (id, thought_signature) = signature::unfold(id);
            let args: &RawValue = if arguments.trim().is_empty() {
                empty_args()
            } else {
                serde_json::from_str(arguments)
                    .ok()
                    .filter(|a: &&RawValue| a.get().trim_start().starts_with('{'))
                    .ok_or_else(|| {
                        invalid(
                            format!("messages[{i}] tool call {id:?} arguments"),
                            "must be a JSON object",
                        )
                    })?
            };
            out.push(wire::PartOut::Call {
                function_call: wire::FunctionCallOut { id, name, args },
                thought_signature,
            });
        }
        Part::ToolResult {
            id,
            content,
            is_error,
        } => {
            let Some(&name) = names.get(id.as_str()) else {
                return Err(invalid(
                    format!("messages[{i}] tool result {id:?}"),
                    "answers no tool call of the conversation (Gemini needs the function's name)",
                ));
            };
            let text: String = content
                .iter()
                .filter_map(|c| match c {
                    Part::Text(t) => Some(t.as_str()),
                    _ => None,
                })
                .collect::<Vec<_>>()
                .join("\n");
            let key = if *is_error { "error" } else { "output" };
            let (id, _) = signature::unfold(id);
            out.push(wire::PartOut::Result {
                function_response: wire::FunctionResponseOut {
                    id,
                    name: signature::unfold(name).0,
                    response: json!({ key: text }),
                },
            });
            // Images a tool returned follow its answer, in the same turn.
            for c in content {
                if let Part::Image(img) = c {
                    out.push(image(img));
                }
            }
        }
    }
    Ok(())
}

fn empty_args() -> &'static RawValue {
    static EMPTY: std::sync::LazyLock<Box<RawValue>> =
        std::sync::LazyLock::new(|| RawValue::from_string("{}".to_owned()).expect("{} is JSON"));
    &EMPTY
}

fn image(img: &Image) -> wire::PartOut<'_> {
    match img {
        Image::Base64 { media_type, data } => wire::PartOut::Inline {
            inline_data: wire::BlobOut {
                mime_type: media_type,
                data,
            },
        },
        Image::Url(u) => wire::PartOut::File {
            file_data: wire::FileOut {
                mime_type: mime_from_url(u),
                file_uri: u,
            },
        },
    }
}

/// Gemini wants a type with every file; a URL's extension is the best guess there is.
fn mime_from_url(u: &str) -> &'static str {
    let path = u.split(['?', '#']).next().unwrap_or(u).to_ascii_lowercase();
    match path.rsplit('.').next() {
        Some("png") => "image/png",
        Some("webp") => "image/webp",
        Some("gif") => "image/gif",
        Some("heic") => "image/heic",
        _ => "image/jpeg",
    }
}

/// Reads a Gemini `finishReason` (`calls`: the answer called a function, which Gemini
/// reports as `STOP`).
pub(crate) fn stop_from(reason: Option<&str>, calls: bool) -> StopReason {
    match reason {
        Some("MAX_TOKENS") => StopReason::MaxTokens,
        Some(
            "SAFETY"
            | "RECITATION"
            | "BLOCKLIST"
            | "PROHIBITED_CONTENT"
            | "SPII"
            | "IMAGE_SAFETY"
            | "IMAGE_PROHIBITED_CONTENT"
            | "IMAGE_RECITATION",
        ) => StopReason::ContentFilter,
        _ if calls => StopReason::ToolUse,
        _ => StopReason::EndTurn,
    }
}

pub(crate) fn finish_reason(s: StopReason) -> &'static str {
    match s {
        StopReason::EndTurn | StopReason::StopSequence | StopReason::ToolUse => "STOP",
        StopReason::MaxTokens => "MAX_TOKENS",
        StopReason::ContentFilter => "SAFETY",
    }
}

/// Reads `usageMetadata`: the prompt count includes cached tokens (as chat's does); thought
/// tokens are output the client pays for.
pub(crate) fn usage_from(u: &wire::UsageIn) -> Usage {
    Usage {
        input: u
            .prompt_token_count
            .unwrap_or(0)
            .saturating_add(u.tool_use_prompt_token_count.unwrap_or(0)),
        cache_read: u.cached_content_token_count.unwrap_or(0),
        cache_creation: 0,
        output: u
            .candidates_token_count
            .unwrap_or(0)
            .saturating_add(u.thoughts_token_count.unwrap_or(0)),
    }
}

/// Decodes an upstream `generateContent` answer.
pub(crate) fn decode_response(body: &[u8]) -> Result<Response, UpstreamShapeError> {
    let v: wire::GenerateIn<'_> = serde_json::from_slice(body)
        .map_err(|e| UpstreamShapeError(format!("not a generateContent answer ({e})")))?;
    let mut output = Vec::new();
    let candidate = v.candidates.and_then(|c| c.into_iter().next());
    let blocked = v.prompt_feedback.and_then(|f| f.block_reason).is_some();
    if candidate.is_none() && !blocked {
        return Err(UpstreamShapeError("`candidates` is empty".into()));
    }
    let mut finish = None;
    if let Some(c) = candidate {
        finish = c.finish_reason;
        for p in c.content.and_then(|c| c.parts).into_iter().flatten() {
            if let Some(f) = p.function_call {
                let (id, name, arguments) = call(f, p.thought_signature.as_deref(), output.len())?;
                output.push(Output::ToolCall {
                    id,
                    name,
                    arguments,
                });
            } else if let Some(t) = p.text.filter(|t| !t.is_empty() && p.thought != Some(true)) {
                output.push(Output::Text(t.into_owned()));
            }
        }
    }
    let calls = output.iter().any(|o| matches!(o, Output::ToolCall { .. }));
    Ok(Response {
        id: v
            .response_id
            .map_or_else(|| "gemini".to_owned(), Cow::into_owned),
        model: v.model_version.map(Cow::into_owned).unwrap_or_default(),
        output,
        stop: if blocked {
            StopReason::ContentFilter
        } else {
            stop_from(finish.as_deref(), calls)
        },
        usage: v
            .usage_metadata
            .as_ref()
            .map(usage_from)
            .unwrap_or_default(),
    })
}

/// A Gemini function call in hub terms: its id (one made up when the upstream sent none,
/// unique in the answer by its position) with the signature folded in, and its arguments.
pub(crate) fn call(
    f: wire::FunctionCallIn<'_>,
    signature: Option<&str>,
    position: usize,
) -> Result<(String, String, String), UpstreamShapeError> {
    let name = f
        .name
        .ok_or_else(|| UpstreamShapeError("a functionCall has no `name`".into()))?;
    let id: Cow<'_, str> = match f.id.filter(|i| !i.is_empty()) {
        Some(id) => id,
        None => Cow::Owned(format!(
            "call_{}_{position}",
            crate::translate::hub::now_secs()
        )),
    };
    let arguments = f
        .args
        .map_or_else(|| "{}".to_owned(), |a| a.get().to_owned());
    Ok((
        signature::fold(&id, signature),
        name.into_owned(),
        arguments,
    ))
}

/// Encodes a hub answer as a `generateContent` answer (typed: a `json!` tree here cost
/// more than the rest of the answer's translation).
pub(crate) fn encode_response(r: &Response) -> Result<Vec<u8>, UpstreamShapeError> {
    let mut parts = Vec::with_capacity(r.output.len());
    for o in &r.output {
        parts.push(match o {
            Output::Text(text) => wire::AnswerPartOut::Text { text },
            Output::ToolCall {
                id,
                name,
                arguments,
            } => wire::AnswerPartOut::Call {
                function_call: wire::FunctionCallOut {
                    id,
                    name,
                    args: args_raw(arguments)?,
                },
            },
        });
    }
    let v = wire::GenerateOut {
        candidates: [wire::CandidateOut {
            content: wire::AnswerContentOut {
                role: "model",
                parts,
            },
            finish_reason: finish_reason(r.stop),
            index: 0,
        }],
        usage_metadata: usage_out(&r.usage),
        model_version: &r.model,
        response_id: &r.id,
    };
    Ok(serde_json::to_vec(&v).expect("an answer serializes"))
}

pub(crate) fn usage_out(u: &Usage) -> wire::UsageOut {
    wire::UsageOut {
        prompt_token_count: u.input,
        candidates_token_count: u.output,
        total_token_count: u.input.saturating_add(u.output),
        cached_content_token_count: (u.cache_read > 0).then_some(u.cache_read),
    }
}

/// A call's JSON-text arguments as Gemini's `args` object, borrowed.
fn args_raw(arguments: &str) -> Result<&RawValue, UpstreamShapeError> {
    if arguments.trim().is_empty() {
        return Ok(empty_args());
    }
    serde_json::from_str::<&RawValue>(arguments)
        .ok()
        .filter(|a| a.get().trim_start().starts_with('{'))
        .ok_or_else(|| UpstreamShapeError("a tool call's arguments are not a JSON object".into()))
}

/// A call's JSON-text arguments as Gemini's `args` object.
pub(crate) fn args_value(arguments: &str) -> Result<Value, UpstreamShapeError> {
    if arguments.trim().is_empty() {
        return Ok(Value::Object(Map::new()));
    }
    // The answer's budget counted this string as text: its own tree is counted here.
    crate::translate::json::budget::check_str(arguments)
        .map_err(|e| UpstreamShapeError(format!("a tool call's arguments are refused: {e}")))?;
    match serde_json::from_str::<Value>(arguments) {
        Ok(v @ Value::Object(_)) => Ok(v),
        _ => Err(UpstreamShapeError(
            "a tool call's arguments are not a JSON object".into(),
        )),
    }
}

#[cfg(test)]
mod tests;
