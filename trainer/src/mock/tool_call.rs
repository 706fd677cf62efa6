//! A tool call answer in each dialect, whole and streamed, as the real APIs send it:
//! chat `tool_calls` with `finish_reason: "tool_calls"`, an Anthropic `tool_use` block with
//! `stop_reason: "tool_use"`, a Responses `function_call` output item, a Gemini
//! `functionCall` part (in `gemini`). A stream sends the arguments in [`FRAGMENTS`] pieces,
//! one output token each (Gemini: the call whole, in one chunk, the same output tokens).

use bytes::Bytes;

use super::answer::{Tokens, ToolCall};
use super::gemini;
use super::json::json_str;
use super::render::{
    anthropic_usage, chat_usage, event_frame, message_end, message_start, response_object,
    responses_usage, ChatChunks, Shape, CHAT_ID, CREATED, MESSAGE_ID,
};
use crate::dialect::Dialect;

const CALL_ID: &str = "call_mock0001";
const TOOL_USE_ID: &str = "toolu_mock0001";
const FUNCTION_CALL_ITEM_ID: &str = "fc_mock0001";

/// Pieces the arguments are streamed in (and the output tokens a tool call reports).
pub(crate) const FRAGMENTS: u64 = 2;

impl ToolCall<'_> {
    /// The arguments in [`FRAGMENTS`] pieces, split on a character boundary.
    fn fragments(&self) -> [&str; 2] {
        let mut mid = self.arguments.len() / 2;
        while !self.arguments.is_char_boundary(mid) {
            mid += 1;
        }
        let (a, b) = self.arguments.split_at(mid);
        [a, b]
    }

    /// The Responses `function_call` item; `arguments` is a JSON string literal.
    fn function_call_item(&self, arguments: &str, status: &str) -> String {
        format!(
            r#"{{"type":"function_call","id":"{FUNCTION_CALL_ITEM_ID}","call_id":"{CALL_ID}","name":{},"arguments":{arguments},"status":"{status}"}}"#,
            json_str(self.name)
        )
    }
}

/// The non-streamed body of a tool call.
pub(crate) fn full_body(dialect: Dialect, model: &str, call: &ToolCall, tokens: Tokens) -> Bytes {
    let model = json_str(model);
    let name = json_str(call.name);
    let body = match dialect {
        Dialect::Chat => format!(
            concat!(
                r#"{{"id":"{CHAT_ID}","object":"chat.completion","created":{CREATED},"model":{model},"#,
                r#""choices":[{{"index":0,"message":{{"role":"assistant","content":null,"refusal":null,"annotations":[],"#,
                r#""tool_calls":[{{"id":"{CALL_ID}","type":"function","function":{{"name":{name},"arguments":{arguments}}}}}]}},"#,
                r#""logprobs":null,"finish_reason":"tool_calls"}}],"usage":{usage},"#,
                r#""service_tier":"default","system_fingerprint":"fp_mock"}}"#
            ),
            CHAT_ID = CHAT_ID,
            CREATED = CREATED,
            model = model,
            CALL_ID = CALL_ID,
            name = name,
            arguments = json_str(call.arguments),
            usage = chat_usage(tokens),
        ),
        Dialect::Messages => format!(
            concat!(
                r#"{{"id":"{MESSAGE_ID}","type":"message","role":"assistant","model":{model},"#,
                r#""content":[{{"type":"tool_use","id":"{TOOL_USE_ID}","name":{name},"input":{input}}}],"#,
                r#""stop_reason":"tool_use","stop_sequence":null,"usage":{usage}}}"#
            ),
            MESSAGE_ID = MESSAGE_ID,
            model = model,
            TOOL_USE_ID = TOOL_USE_ID,
            name = name,
            input = call.arguments,
            usage = anthropic_usage(tokens),
        ),
        Dialect::Responses => response_object(
            &model,
            "completed",
            &format!(
                "[{}]",
                call.function_call_item(&json_str(call.arguments), "completed")
            ),
            &responses_usage(tokens),
        ),
        Dialect::Gemini => gemini::call_body(&model, call, tokens),
    };
    Bytes::from(body)
}

/// Every SSE frame of a streamed tool call.
pub(crate) fn stream_events(
    shape: Shape,
    model: &str,
    call: &ToolCall,
    tokens: Tokens,
) -> Vec<Bytes> {
    let model = json_str(model);
    match shape.dialect {
        Dialect::Chat => chat_events(&model, call, tokens, shape.include_usage),
        Dialect::Messages => messages_events(&model, call, tokens),
        Dialect::Responses => responses_events(&model, call, tokens),
        Dialect::Gemini => gemini::call_stream(&model, call, tokens, shape.json_array),
    }
}

fn chat_events(model: &str, call: &ToolCall, tokens: Tokens, include_usage: bool) -> Vec<Bytes> {
    let chunks = ChatChunks::new(model, include_usage);
    let mut events = Vec::with_capacity(6);
    // The first chunk names the call with empty arguments, as OpenAI streams it.
    events.push(chunks.choice(
        &format!(
            r#"{{"role":"assistant","content":null,"tool_calls":[{{"index":0,"id":"{CALL_ID}","type":"function","function":{{"name":{},"arguments":""}}}}],"refusal":null}}"#,
            json_str(call.name)
        ),
        "null",
    ));
    for fragment in call.fragments() {
        events.push(chunks.choice(
            &format!(
                r#"{{"tool_calls":[{{"index":0,"function":{{"arguments":{}}}}}]}}"#,
                json_str(fragment)
            ),
            "null",
        ));
    }
    events.push(chunks.choice("{}", r#""tool_calls""#));
    chunks.finish(&mut events, tokens);
    events
}

fn messages_events(model: &str, call: &ToolCall, tokens: Tokens) -> Vec<Bytes> {
    let mut events = Vec::with_capacity(8);
    events.push(message_start(model, tokens));
    events.push(event_frame(
        "content_block_start",
        &format!(
            r#"{{"type":"content_block_start","index":0,"content_block":{{"type":"tool_use","id":"{TOOL_USE_ID}","name":{},"input":{{}}}}}}"#,
            json_str(call.name)
        ),
    ));
    // Anthropic opens a tool_use block with an empty partial_json.
    for fragment in std::iter::once("").chain(call.fragments()) {
        events.push(event_frame(
            "content_block_delta",
            &format!(
                r#"{{"type":"content_block_delta","index":0,"delta":{{"type":"input_json_delta","partial_json":{}}}}}"#,
                json_str(fragment)
            ),
        ));
    }
    events.push(event_frame(
        "content_block_stop",
        r#"{"type":"content_block_stop","index":0}"#,
    ));
    message_end(&mut events, "tool_use", tokens.output);
    events
}

fn responses_events(model: &str, call: &ToolCall, tokens: Tokens) -> Vec<Bytes> {
    let mut out = super::render::ResponsesEvents::start(model, 8);
    out.push(
        "response.output_item.added",
        &format!(
            r#""output_index":0,"item":{}"#,
            call.function_call_item(r#""""#, "in_progress")
        ),
    );
    let at = format!(r#""item_id":"{FUNCTION_CALL_ITEM_ID}","output_index":0"#);
    for fragment in call.fragments() {
        out.push(
            "response.function_call_arguments.delta",
            &format!(r#"{at},"delta":{}"#, json_str(fragment)),
        );
    }
    let arguments = json_str(call.arguments);
    out.push(
        "response.function_call_arguments.done",
        &format!(
            r#"{at},"name":{},"arguments":{arguments}"#,
            json_str(call.name)
        ),
    );
    let item = call.function_call_item(&arguments, "completed");
    out.push(
        "response.output_item.done",
        &format!(r#""output_index":0,"item":{item}"#),
    );
    let completed = response_object(
        model,
        "completed",
        &format!("[{item}]"),
        &responses_usage(tokens),
    );
    out.push("response.completed", &format!(r#""response":{completed}"#));
    out.events
}
