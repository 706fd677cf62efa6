//! What the mock says next in a conversation with tools. Read only for requests that carry
//! a non-empty `tools` list (a cold path: the training and bench bodies have none), so the
//! whole body is parsed into a tree here.
//!
//! - The last turn holds tool results (chat: trailing `role: tool` messages; messages:
//!   `tool_result` blocks in the last user turn; responses: trailing `function_call_output`
//!   or `custom_tool_call_output` items; Gemini: `functionResponse` parts in the last user
//!   content, each `response` object as the JSON text the client wrote): the answer is text
//!   quoting them in full, so a test sees the results made the trip.
//! - Otherwise a directive in the text of the last user turn (see [`Directive`]) picks the
//!   answer: plain text, or a call of a named tool with given arguments. Real agent clients
//!   offer a dozen tools, the first of which (Claude Code's `Agent`) would loop forever.
//! - Otherwise: a call of the first tool, with every `required` property of its schema set
//!   to the string `"mock <property>"` (Gemini: the first of `tools[].functionDeclarations`,
//!   its schema in `parameters` or `parametersJsonSchema`; with no function declared, e.g.
//!   only `googleSearch`, the ordinary text).

use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::{Map, Value};

use crate::dialect::Dialect;

/// The prefix of the text answer to tool results; the results follow, joined by `"; "`.
pub const TOOL_RESULT_PREFIX: &str = "Tool said: ";

/// Opens a directive in the user's text: `[mock: text]` or `[mock: call NAME {JSON}]`.
const DIRECTIVE_OPEN: &str = "[mock:";

/// The mock's next turn.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Turn {
    /// Call `name` with `arguments`, a JSON object as text.
    CallTool { name: String, arguments: String },
    /// Quote the tool results (each result's text, in order).
    AnswerResults(Vec<String>),
    /// The mock's ordinary text answer, as to a request without tools.
    Text,
    /// This text, whole (a directive that cannot be followed says why).
    Say(String),
}

/// What the user's text asks the mock for.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Directive<'a> {
    /// `[mock: text]`
    Text,
    /// `[mock: call NAME {JSON}]`; `arguments` is the JSON object's text as written
    /// (`{}` when the directive has none).
    Call { name: &'a str, arguments: &'a str },
}

/// The last well-formed directive in `text`; malformed ones are skipped, as prose. The
/// last, because clients put their own context before the user's prompt in the same turn
/// (Claude Code's reminders quote recent commit messages, which may mention directives).
pub(crate) fn directive(text: &str) -> Option<Directive<'_>> {
    text.rmatch_indices(DIRECTIVE_OPEN)
        .find_map(|(at, open)| directive_body(&text[at + open.len()..]))
}

/// Parses what follows `[mock:` up to and including its closing `]`.
fn directive_body(s: &str) -> Option<Directive<'_>> {
    let s = s.trim_start();
    if let Some(after) = s.strip_prefix("text") {
        return after
            .trim_start()
            .starts_with(']')
            .then_some(Directive::Text);
    }
    let s = s.strip_prefix("call")?;
    if !s.starts_with(char::is_whitespace) {
        return None;
    }
    let s = s.trim_start();
    let end = s
        .find(|c: char| c.is_whitespace() || c == '{' || c == ']')
        .unwrap_or(s.len());
    let (name, s) = s.split_at(end);
    let s = s.trim_start();
    if name.is_empty() {
        return None;
    }
    if s.starts_with(']') {
        return Some(Directive::Call {
            name,
            arguments: "{}",
        });
    }
    // The JSON object ends where the deserializer stops, so a `]` inside it (a string, an
    // array) does not close the directive.
    let mut values = serde_json::Deserializer::from_str(s).into_iter::<Value>();
    let Some(Ok(Value::Object(_))) = values.next() else {
        return None;
    };
    let (arguments, tail) = s.split_at(values.byte_offset());
    tail.trim_start()
        .starts_with(']')
        .then_some(Directive::Call {
            name,
            arguments: arguments.trim_end(),
        })
}

/// The next turn for a request of `dialect` whose body carries tools; the error names
/// what the body lacks.
pub(crate) fn next_turn(dialect: Dialect, body: &[u8]) -> Result<Turn, String> {
    let v: Value = serde_json::from_slice(body).map_err(|e| format!("invalid JSON: {e}"))?;
    let results = match dialect {
        Dialect::Chat => chat_results(&v),
        Dialect::Messages => messages_results(&v),
        Dialect::Responses => responses_results(&v),
        Dialect::Gemini => gemini_results(body)?,
    };
    if !results.is_empty() {
        return Ok(Turn::AnswerResults(results));
    }
    let user_text = match dialect {
        Dialect::Chat | Dialect::Messages => chat_or_messages_user_text(&v),
        Dialect::Responses => responses_user_text(&v),
        Dialect::Gemini => gemini_user_text(&v),
    };
    // A client that quotes the prompt (opencode's `run` wraps an argument holding spaces in
    // double quotes and escapes those inside) leaves a call's JSON escaped: read unescaped.
    let unescaped;
    let user_text = if directive(&user_text).is_none() && user_text.contains("\\\"") {
        unescaped = user_text.replace("\\\"", "\"");
        &unescaped
    } else {
        &user_text
    };
    match directive(user_text) {
        Some(Directive::Text) => return Ok(Turn::Text),
        Some(Directive::Call { name, arguments }) => {
            return Ok(if offered(dialect, &v).any(|offered| offered == name) {
                Turn::CallTool {
                    name: name.to_owned(),
                    arguments: arguments.to_owned(),
                }
            } else {
                Turn::Say(format!("mock: tool {name} is not offered"))
            });
        }
        None => {}
    }
    first_tool_call(dialect, &v)
}

/// The names of the tools a request offers that the mock can call: chat and responses
/// function tools, every named Anthropic tool, every Gemini function declaration.
fn offered(dialect: Dialect, v: &Value) -> Box<dyn Iterator<Item = &str> + '_> {
    if dialect == Dialect::Gemini {
        return Box::new(gemini_declarations(v).filter_map(|f| f["name"].as_str()));
    }
    Box::new(
        v["tools"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(move |tool| match dialect {
                Dialect::Chat => tool["function"]["name"].as_str(),
                Dialect::Messages => tool["name"].as_str(),
                Dialect::Responses => (tool["type"] == "function")
                    .then(|| tool["name"].as_str())
                    .flatten(),
                Dialect::Gemini => None,
            }),
    )
}

/// Gemini's function declarations, over every tool (`functionDeclarations`, or the proto's
/// `function_declarations`).
fn gemini_declarations(v: &Value) -> impl Iterator<Item = &Value> {
    v["tools"]
        .as_array()
        .into_iter()
        .flatten()
        .flat_map(|tool| {
            tool.get("functionDeclarations")
                .or_else(|| tool.get("function_declarations"))
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
        })
}

fn first_tool_call(dialect: Dialect, v: &Value) -> Result<Turn, String> {
    let tool = v["tools"]
        .get(0)
        .ok_or("tools: expected a non-empty array")?;
    // Chat nests the function; responses and messages keep name and schema at the top.
    let (function, schema) = match dialect {
        Dialect::Chat => (&tool["function"], &tool["function"]["parameters"]),
        Dialect::Responses => (tool, &tool["parameters"]),
        Dialect::Messages => (tool, &tool["input_schema"]),
        Dialect::Gemini => {
            let Some(function) = gemini_declarations(v).next() else {
                return Ok(Turn::Text);
            };
            let schema = [
                "parameters",
                "parametersJsonSchema",
                "parameters_json_schema",
            ]
            .into_iter()
            .find_map(|key| function.get(key))
            .unwrap_or(&Value::Null);
            (function, schema)
        }
    };
    let name = function["name"]
        .as_str()
        .ok_or("tools[0]: no function name")?
        .to_owned();
    let mut arguments = Map::new();
    for property in schema["required"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
    {
        arguments.insert(property.to_owned(), format!("mock {property}").into());
    }
    Ok(Turn::CallTool {
        name,
        arguments: Value::Object(arguments).to_string(),
    })
}

/// The text of a tool result's content: a string, or the `text` of each part joined.
fn content_text(content: &Value) -> String {
    match content {
        Value::String(s) => s.clone(),
        Value::Array(parts) => parts.iter().filter_map(|p| p["text"].as_str()).collect(),
        _ => String::new(),
    }
}

fn chat_results(v: &Value) -> Vec<String> {
    let messages = v["messages"].as_array().map_or(&[][..], Vec::as_slice);
    let trailing = messages
        .iter()
        .rev()
        .take_while(|m| m["role"] == "tool")
        .count();
    messages[messages.len() - trailing..]
        .iter()
        .map(|m| content_text(&m["content"]))
        .collect()
}

fn messages_results(v: &Value) -> Vec<String> {
    // Claude Code puts `system` messages among the turns; they are not the model's turn.
    let Some(last) = v["messages"]
        .as_array()
        .into_iter()
        .flatten()
        .rfind(|m| m["role"] != "system")
    else {
        return Vec::new();
    };
    if last["role"] != "user" {
        return Vec::new();
    }
    last["content"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|b| b["type"] == "tool_result")
        .map(|b| content_text(&b["content"]))
        .collect()
}

fn responses_results(v: &Value) -> Vec<String> {
    // A freeform (`custom`) tool's result, e.g. Codex's `apply_patch`, is its own item type.
    let is_result =
        |i: &&Value| i["type"] == "function_call_output" || i["type"] == "custom_tool_call_output";
    let items = v["input"].as_array().map_or(&[][..], Vec::as_slice);
    let trailing = items.iter().rev().take_while(is_result).count();
    items[items.len() - trailing..]
        .iter()
        .map(|i| content_text(&i["output"]))
        .collect()
}

/// Whether a Gemini content is the user's: `role: user`, no role (the API's default), or
/// the older API's `role: function` for function responses.
fn gemini_is_user(role: Option<&str>) -> bool {
    matches!(role, None | Some("user") | Some("function"))
}

/// The `response` of each `functionResponse` part of the last content, when that is the
/// user's, as the JSON text the client wrote.
fn gemini_results(body: &[u8]) -> Result<Vec<String>, String> {
    #[derive(Deserialize)]
    struct Request<'a> {
        #[serde(borrow, default)]
        contents: Vec<Content<'a>>,
    }
    #[derive(Deserialize)]
    struct Content<'a> {
        #[serde(default)]
        role: Option<String>,
        #[serde(borrow, default)]
        parts: Vec<Part<'a>>,
    }
    #[derive(Deserialize)]
    struct Part<'a> {
        #[serde(
            borrow,
            default,
            rename = "functionResponse",
            alias = "function_response"
        )]
        function_response: Option<FunctionResponse<'a>>,
    }
    #[derive(Deserialize)]
    struct FunctionResponse<'a> {
        #[serde(borrow, default)]
        response: Option<&'a RawValue>,
    }
    let request: Request<'_> =
        serde_json::from_slice(body).map_err(|e| format!("contents: {e}"))?;
    let Some(last) = request.contents.last() else {
        return Ok(Vec::new());
    };
    if !gemini_is_user(last.role.as_deref()) {
        return Ok(Vec::new());
    }
    Ok(last
        .parts
        .iter()
        .filter_map(|p| p.function_response.as_ref())
        .map(|r| r.response.map_or("null", RawValue::get).to_owned())
        .collect())
}

/// The text parts of the last user content, joined by newlines.
fn gemini_user_text(v: &Value) -> String {
    let Some(content) = v["contents"]
        .as_array()
        .into_iter()
        .flatten()
        .rfind(|c| gemini_is_user(c["role"].as_str()))
    else {
        return String::new();
    };
    content["parts"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|p| p["text"].as_str())
        .collect::<Vec<_>>()
        .join("\n")
}

/// The text of the last message with `role: user` among `messages`: its string content or
/// its parts of type `part_type`, joined by newlines.
fn last_user_text<'a>(
    mut messages: impl DoubleEndedIterator<Item = &'a Value>,
    part_type: &str,
) -> String {
    let Some(message) = messages.rfind(|m| m["role"] == "user") else {
        return String::new();
    };
    match &message["content"] {
        Value::String(s) => s.clone(),
        Value::Array(parts) => parts
            .iter()
            .filter(|p| p["type"] == part_type)
            .filter_map(|p| p["text"].as_str())
            .collect::<Vec<_>>()
            .join("\n"),
        _ => String::new(),
    }
}

/// Chat and messages alike: the last user message, a string or `text` parts.
fn chat_or_messages_user_text(v: &Value) -> String {
    last_user_text(v["messages"].as_array().into_iter().flatten(), "text")
}

fn responses_user_text(v: &Value) -> String {
    match &v["input"] {
        Value::String(s) => s.clone(),
        // Message items carry `type: message`, which the API lets a client leave out.
        Value::Array(items) => last_user_text(
            items
                .iter()
                .filter(|i| i["type"] == "message" || i["type"].is_null()),
            "input_text",
        ),
        _ => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn call(name: &str, arguments: &str) -> Turn {
        Turn::CallTool {
            name: name.into(),
            arguments: arguments.into(),
        }
    }

    #[test]
    fn first_tool_is_called_with_its_required_properties() {
        let chat = br#"{"model":"m","messages":[{"role":"user","content":"hi"}],"tools":[
            {"type":"function","function":{"name":"get_weather","parameters":{"type":"object",
            "properties":{"city":{"type":"string"},"unit":{"type":"string"}},"required":["city","unit"]}}},
            {"type":"function","function":{"name":"other"}}]}"#;
        assert_eq!(
            next_turn(Dialect::Chat, chat).unwrap(),
            call("get_weather", r#"{"city":"mock city","unit":"mock unit"}"#)
        );
        let messages = br#"{"model":"m","messages":[{"role":"user","content":"hi"}],
            "tools":[{"name":"lookup","input_schema":{"type":"object","required":["q"]}}]}"#;
        assert_eq!(
            next_turn(Dialect::Messages, messages).unwrap(),
            call("lookup", r#"{"q":"mock q"}"#)
        );
        let responses = br#"{"model":"m","input":"hi","tools":[{"type":"function","name":"now","parameters":{}}]}"#;
        assert_eq!(
            next_turn(Dialect::Responses, responses).unwrap(),
            call("now", "{}")
        );
    }

    #[test]
    fn trailing_tool_results_are_quoted() {
        let chat = br#"{"messages":[{"role":"user","content":"hi"},{"role":"assistant","tool_calls":[]},
            {"role":"tool","tool_call_id":"a","content":"18C"},
            {"role":"tool","tool_call_id":"b","content":[{"type":"text","text":"sun"},{"type":"text","text":"ny"}]}],
            "tools":[{"type":"function","function":{"name":"f"}}]}"#;
        assert_eq!(
            next_turn(Dialect::Chat, chat).unwrap(),
            Turn::AnswerResults(vec!["18C".into(), "sunny".into()])
        );
        let messages = br#"{"messages":[{"role":"user","content":"hi"},
            {"role":"assistant","content":[{"type":"tool_use","id":"t","name":"f","input":{}}]},
            {"role":"user","content":[{"type":"tool_result","tool_use_id":"t","content":"18C"}]}],
            "tools":[{"name":"f","input_schema":{}}]}"#;
        assert_eq!(
            next_turn(Dialect::Messages, messages).unwrap(),
            Turn::AnswerResults(vec!["18C".into()])
        );
        let responses = br#"{"input":[{"role":"user","content":"hi"},
            {"type":"function_call","call_id":"c","name":"f","arguments":"{}"},
            {"type":"function_call_output","call_id":"c","output":"18C"}],
            "tools":[{"type":"function","name":"f"}]}"#;
        assert_eq!(
            next_turn(Dialect::Responses, responses).unwrap(),
            Turn::AnswerResults(vec!["18C".into()])
        );
    }

    #[test]
    fn directives_are_parsed_from_prose() {
        assert_eq!(
            directive("say hi [mock: text] please"),
            Some(Directive::Text)
        );
        assert_eq!(directive("[mock:text ]"), Some(Directive::Text));
        assert_eq!(
            directive(r#"go [mock: call Read {"file_path":"/tmp/a b]c"}] now"#),
            Some(Directive::Call {
                name: "Read",
                arguments: r#"{"file_path":"/tmp/a b]c"}"#
            })
        );
        // Nested brackets and braces, whitespace before the close, no space before the JSON.
        assert_eq!(
            directive("[mock: call f{\"a\":[1,{\"b\":\"]\"}]} \n]"),
            Some(Directive::Call {
                name: "f",
                arguments: r#"{"a":[1,{"b":"]"}]}"#
            })
        );
        assert_eq!(
            directive("[mock: call now]"),
            Some(Directive::Call {
                name: "now",
                arguments: "{}"
            })
        );
        // Malformed ones are prose; a later well-formed one still counts.
        for text in [
            "no directive",
            "[mock: texts]",
            "[mock: call]",
            "[mock: callRead {}]",
            r#"[mock: call f {"a":1}"#,
            r#"[mock: call f {"a":1} x]"#,
            "[mock: call f [1]]",
            "[mock: call f {bad}]",
            "[mock: shout]",
        ] {
            assert_eq!(directive(text), None, "{text}");
        }
        assert_eq!(
            directive(r#"[mock: call f {"a":] then [mock: text]"#),
            Some(Directive::Text)
        );
        // The last well-formed one counts: a client's context comes before the prompt.
        assert_eq!(
            directive("context quoting [mock: text]; the prompt: [mock: call now] [mock: bad"),
            Some(Directive::Call {
                name: "now",
                arguments: "{}"
            })
        );
    }

    const CHAT_TOOLS: &str = r#""tools":[{"type":"function","function":{"name":"Agent","parameters":{"required":["prompt"]}}},
        {"type":"function","function":{"name":"Read","parameters":{}}}]"#;
    const MESSAGES_TOOLS: &str = r#""tools":[{"name":"Agent","input_schema":{"required":["prompt"]}},
        {"name":"Read","input_schema":{}}]"#;
    const RESPONSES_TOOLS: &str = r#""tools":[{"type":"function","name":"Agent","parameters":{"required":["prompt"]}},
        {"type":"function","name":"Read","parameters":{}},{"type":"custom","name":"apply_patch"},{"type":"web_search"}]"#;
    /// Gemini CLI's shapes: a search tool without declarations, upper-case schema types.
    const GEMINI_TOOLS: &str = r#""tools":[{"googleSearch":{}},{"functionDeclarations":[
        {"name":"Agent","parameters":{"type":"OBJECT","properties":{"prompt":{"type":"STRING"}},"required":["prompt"]}}]},
        {"functionDeclarations":[{"name":"Read","parametersJsonSchema":{"type":"object"}}]}]"#;

    fn turn(dialect: Dialect, body: String) -> Turn {
        next_turn(dialect, body.as_bytes()).unwrap()
    }

    /// One request per dialect whose last user turn says `text`, after an earlier user turn
    /// that says otherwise; each dialect's content forms (string, parts) are covered.
    fn requests(text: &str) -> Vec<(Dialect, String)> {
        let t = serde_json::to_string(text).unwrap();
        let early = r#""[mock: call Agent {}]""#;
        vec![
            (
                Dialect::Chat,
                format!(
                    r#"{{"messages":[{{"role":"user","content":{early}}},{{"role":"assistant","content":"ok"}},
                {{"role":"user","content":{t}}}],{CHAT_TOOLS}}}"#
                ),
            ),
            (
                Dialect::Chat,
                format!(
                    r#"{{"messages":[{{"role":"system","content":"[mock: text]"}},{{"role":"user","content":[
                {{"type":"text","text":"<ctx>"}},{{"type":"image_url","image_url":{{"url":"x"}}}},{{"type":"text","text":{t}}}]}}],{CHAT_TOOLS}}}"#
                ),
            ),
            (
                Dialect::Messages,
                format!(
                    r#"{{"messages":[{{"role":"user","content":{early}}},{{"role":"assistant","content":"ok"}},
                {{"role":"user","content":{t}}}],{MESSAGES_TOOLS}}}"#
                ),
            ),
            // Claude Code's shape: reminder blocks, the prompt, then a `system` message.
            (
                Dialect::Messages,
                format!(
                    r#"{{"messages":[{{"role":"user","content":[{{"type":"text","text":"<system-reminder>"}},
                {{"type":"text","text":{t}}}]}},{{"role":"system","content":"[mock: call Agent {{}}]"}}],{MESSAGES_TOOLS}}}"#
                ),
            ),
            (
                Dialect::Responses,
                format!(r#"{{"input":{t},{RESPONSES_TOOLS}}}"#),
            ),
            (
                Dialect::Responses,
                format!(
                    r#"{{"input":[{{"type":"message","role":"developer","content":[{{"type":"input_text","text":"[mock: text]"}}]}},
                {{"role":"user","content":{early}}},
                {{"type":"message","role":"user","content":[{{"type":"input_text","text":"<environment_context>"}},{{"type":"input_text","text":{t}}}]}}],
                {RESPONSES_TOOLS}}}"#
                ),
            ),
            (
                Dialect::Gemini,
                format!(
                    r#"{{"contents":[{{"role":"user","parts":[{{"text":{early}}}]}},{{"role":"model","parts":[{{"text":"ok"}}]}},
                {{"role":"user","parts":[{{"text":"<context>"}},{{"inlineData":{{"mimeType":"image/png","data":"AA=="}}}},{{"text":{t}}}]}}],
                "systemInstruction":{{"parts":[{{"text":"[mock: text]"}}]}},{GEMINI_TOOLS}}}"#
                ),
            ),
            // No role: the user's, as the API defaults it.
            (
                Dialect::Gemini,
                format!(r#"{{"contents":[{{"parts":[{{"text":{t}}}]}}],{GEMINI_TOOLS}}}"#),
            ),
        ]
    }

    #[test]
    fn the_last_user_turn_directs_the_answer_in_each_dialect() {
        for (dialect, body) in requests("hello [mock: text]") {
            assert_eq!(turn(dialect, body), Turn::Text, "{dialect:?}");
        }
        for (dialect, body) in requests(r#"[mock: call Read {"file_path":"/w/marker.txt"}]"#) {
            assert_eq!(
                turn(dialect, body),
                call("Read", r#"{"file_path":"/w/marker.txt"}"#),
                "{dialect:?}"
            );
        }
        for (dialect, body) in requests("[mock: call Nope {}]") {
            assert_eq!(
                turn(dialect, body),
                Turn::Say("mock: tool Nope is not offered".into()),
                "{dialect:?}"
            );
        }
        // No directive in the last user turn: the first tool, as before.
        for (dialect, body) in requests("just do it") {
            assert_eq!(
                turn(dialect, body),
                call("Agent", r#"{"prompt":"mock prompt"}"#),
                "{dialect:?}"
            );
        }
    }

    #[test]
    fn only_function_tools_are_offered_on_responses() {
        // The gateway turns a freeform tool into a function tool for other upstreams; as
        // is, the mock has no freeform call to answer with.
        for name in ["apply_patch", "web_search"] {
            let body = format!(r#"{{"input":"[mock: call {name} {{}}]",{RESPONSES_TOOLS}}}"#);
            assert_eq!(
                turn(Dialect::Responses, body),
                Turn::Say(format!("mock: tool {name} is not offered"))
            );
        }
    }

    #[test]
    fn tool_results_win_over_a_directive() {
        let chat = format!(
            r#"{{"messages":[{{"role":"user","content":"[mock: call Read {{}}]"}},{{"role":"assistant","tool_calls":[]}},
            {{"role":"tool","tool_call_id":"a","content":"marker 42"}}],{CHAT_TOOLS}}}"#
        );
        assert_eq!(
            turn(Dialect::Chat, chat),
            Turn::AnswerResults(vec!["marker 42".into()])
        );
        // Claude Code: a reminder text block beside the result, a `system` message after it.
        let messages = format!(
            r#"{{"messages":[{{"role":"user","content":"[mock: call Read {{}}]"}},
            {{"role":"assistant","content":[{{"type":"tool_use","id":"t","name":"Read","input":{{}}}}]}},
            {{"role":"user","content":[{{"type":"tool_result","tool_use_id":"t","content":[{{"type":"text","text":"     1\tmarker 42"}}]}},
                {{"type":"text","text":"[mock: text]"}}]}},
            {{"role":"system","content":"env"}}],{MESSAGES_TOOLS}}}"#
        );
        assert_eq!(
            turn(Dialect::Messages, messages),
            Turn::AnswerResults(vec!["     1\tmarker 42".into()])
        );
        let responses = format!(
            r#"{{"input":[{{"role":"user","content":"[mock: call Read {{}}]"}},
            {{"type":"custom_tool_call","call_id":"c","name":"apply_patch","input":"*** Begin Patch"}},
            {{"type":"function_call","call_id":"d","name":"Read","arguments":"{{}}"}},
            {{"type":"custom_tool_call_output","call_id":"c","output":"patch rejected"}},
            {{"type":"function_call_output","call_id":"d","output":[{{"type":"input_text","text":"marker 42"}}]}}],
            {RESPONSES_TOOLS}}}"#
        );
        assert_eq!(
            turn(Dialect::Responses, responses),
            Turn::AnswerResults(vec!["patch rejected".into(), "marker 42".into()])
        );
    }

    #[test]
    fn gemini_calls_the_first_declared_function_and_quotes_function_responses() {
        let first = r#"{"contents":[{"role":"user","parts":[{"text":"hi"}]}],"tools":[
            {"functionDeclarations":[{"name":"read_file","parametersJsonSchema":{"type":"object",
            "properties":{"absolute_path":{"type":"string"}},"required":["absolute_path"]}}]}]}"#;
        assert_eq!(
            next_turn(Dialect::Gemini, first.as_bytes()).unwrap(),
            call("read_file", r#"{"absolute_path":"mock absolute_path"}"#)
        );
        // Only a search tool: nothing to call, the ordinary text.
        let search = r#"{"contents":[{"role":"user","parts":[{"text":"hi"}]}],"tools":[{"googleSearch":{}}]}"#;
        assert_eq!(
            next_turn(Dialect::Gemini, search.as_bytes()).unwrap(),
            Turn::Text
        );
        // Each response as the client wrote it (key order, spacing), in order; a text part
        // beside them does not count as a directive.
        let results = format!(
            r#"{{"contents":[{{"role":"user","parts":[{{"text":"[mock: call Read {{}}]"}}]}},
            {{"role":"model","parts":[{{"functionCall":{{"name":"Read","args":{{}}}},"thoughtSignature":"c2ln"}}]}},
            {{"role":"user","parts":[{{"functionResponse":{{"id":"a","name":"Read","response":{{"output": "marker 42", "a": 1}}}}}},
                {{"functionResponse":{{"name":"Read","response":{{"error":"denied"}}}}}},{{"text":"[mock: text]"}}]}}],{GEMINI_TOOLS}}}"#
        );
        assert_eq!(
            turn(Dialect::Gemini, results),
            Turn::AnswerResults(vec![
                r#"{"output": "marker 42", "a": 1}"#.into(),
                r#"{"error":"denied"}"#.into()
            ])
        );
        // A function response before the model's last turn is history, not this turn's.
        let history = format!(
            r#"{{"contents":[{{"role":"user","parts":[{{"functionResponse":{{"name":"Read","response":{{}}}}}}]}},
            {{"role":"model","parts":[{{"text":"done"}}]}}],{GEMINI_TOOLS}}}"#
        );
        assert_eq!(
            turn(Dialect::Gemini, history),
            call("Agent", r#"{"prompt":"mock prompt"}"#)
        );
    }

    /// `opencode run "PROMPT"` sends `"PROMPT"` quoted, its double quotes escaped: the
    /// README's opencode recipe, run verbatim, reaches the mock so.
    #[test]
    fn a_call_quoted_by_the_client_is_read_unescaped() {
        let body = serde_json::json!({"messages": [{"role": "user",
            "content": r#""Read it. [mock: call read {\"filePath\":\"/w/m.txt\"}]""#}],
            "tools": [{"type": "function", "function": {"name": "bash"}},
                {"type": "function", "function": {"name": "read"}}]});
        assert_eq!(
            next_turn(Dialect::Chat, body.to_string().as_bytes()).unwrap(),
            call("read", r#"{"filePath":"/w/m.txt"}"#)
        );
    }

    #[test]
    fn a_tool_without_a_name_is_an_error() {
        let e = next_turn(Dialect::Chat, br#"{"tools":[{"type":"function"}]}"#).unwrap_err();
        assert!(e.contains("name"), "{e}");
    }
}
