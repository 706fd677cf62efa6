//! What the mock says next in a conversation with tools. Read only for requests that carry
//! a non-empty `tools` list (a cold path: the training and bench bodies have none), so the
//! whole body is parsed into a tree here.
//!
//! - The last turn holds tool results (chat: trailing `role: tool` messages; messages:
//!   `tool_result` blocks in the last user turn; responses: trailing `function_call_output`
//!   items): the answer is text quoting them, so a test sees the results made the trip.
//! - Otherwise: a call of the first tool, with every `required` property of its schema set
//!   to the string `"mock <property>"`.

use serde_json::{Map, Value};

use crate::dialect::Dialect;

/// The prefix of the text answer to tool results; the results follow, joined by `"; "`.
pub const TOOL_RESULT_PREFIX: &str = "Tool said: ";

/// The mock's next turn.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Turn {
    /// Call `name` with `arguments`, a JSON object as text.
    CallTool { name: String, arguments: String },
    /// Quote the tool results (each result's text, in order).
    AnswerResults(Vec<String>),
}

/// The next turn for a request of `dialect` whose body carries tools; the error names
/// what the body lacks.
pub(crate) fn next_turn(dialect: Dialect, body: &[u8]) -> Result<Turn, String> {
    let v: Value = serde_json::from_slice(body).map_err(|e| format!("invalid JSON: {e}"))?;
    let results = match dialect {
        Dialect::Chat => chat_results(&v),
        Dialect::Messages => messages_results(&v),
        Dialect::Responses => responses_results(&v),
    };
    if !results.is_empty() {
        return Ok(Turn::AnswerResults(results));
    }
    let tool = v["tools"]
        .get(0)
        .ok_or("tools: expected a non-empty array")?;
    // Chat nests the function; responses and messages keep name and schema at the top.
    let (function, schema_key) = match dialect {
        Dialect::Chat => (&tool["function"], "parameters"),
        Dialect::Responses => (tool, "parameters"),
        Dialect::Messages => (tool, "input_schema"),
    };
    let name = function["name"]
        .as_str()
        .ok_or("tools[0]: no function name")?
        .to_owned();
    let mut arguments = Map::new();
    for property in function[schema_key]["required"]
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
    let Some(last) = v["messages"].as_array().and_then(|m| m.last()) else {
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
    let items = v["input"].as_array().map_or(&[][..], Vec::as_slice);
    let trailing = items
        .iter()
        .rev()
        .take_while(|i| i["type"] == "function_call_output")
        .count();
    items[items.len() - trailing..]
        .iter()
        .map(|i| content_text(&i["output"]))
        .collect()
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
    fn a_tool_without_a_name_is_an_error() {
        let e = next_turn(Dialect::Chat, br#"{"tools":[{"type":"function"}]}"#).unwrap_err();
        assert!(e.contains("name"), "{e}");
    }
}
