//! Typed, borrowed views of the non-streaming answers of chat completions and Anthropic
//! messages, both ways. Measured: reading an answer into a `serde_json::Value` tree and
//! writing one from `json!` maps cost ~40,000 instructions per translated request, most of
//! it B-tree inserts and drops for fields nobody reads; these structs skip unknown fields
//! without allocating and write straight to bytes.

use std::borrow::Cow;

use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;

use super::json::{raw_fragment, write_str};

// ---- chat completions, as an upstream answers ----

#[derive(Deserialize)]
pub(super) struct ChatCompletionIn<'a> {
    #[serde(borrow, default)]
    pub(super) id: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    pub(super) model: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    pub(super) choices: Option<Vec<ChatChoiceIn<'a>>>,
    #[serde(default)]
    pub(super) usage: Option<ChatUsageIn>,
}

#[derive(Deserialize)]
pub(super) struct ChatChoiceIn<'a> {
    #[serde(borrow, default)]
    pub(super) message: Option<ChatMessageIn<'a>>,
    #[serde(borrow, default)]
    pub(super) finish_reason: Option<Cow<'a, str>>,
}

#[derive(Deserialize)]
pub(super) struct ChatMessageIn<'a> {
    /// Raw: a string from OpenAI, sometimes parts or other shapes from compatible servers
    /// (ignored, as a `Value` reader ignored them).
    #[serde(borrow, default)]
    pub(super) content: Option<&'a RawValue>,
    #[serde(borrow, default)]
    pub(super) refusal: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    pub(super) tool_calls: Option<Vec<ChatToolCallIn<'a>>>,
}

#[derive(Deserialize)]
pub(super) struct ChatToolCallIn<'a> {
    #[serde(borrow, default)]
    pub(super) id: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    pub(super) function: Option<ChatFunctionIn<'a>>,
}

#[derive(Debug, PartialEq, Deserialize)]
pub(crate) struct ChatFunctionIn<'a> {
    #[serde(borrow, default)]
    pub(crate) name: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    pub(crate) arguments: Option<Cow<'a, str>>,
}

#[derive(Debug, PartialEq, Deserialize, Default)]
pub(crate) struct ChatUsageIn {
    #[serde(default)]
    pub(crate) prompt_tokens: Option<u64>,
    #[serde(default)]
    pub(crate) completion_tokens: Option<u64>,
    #[serde(default)]
    pub(crate) prompt_tokens_details: Option<CachedIn>,
}

#[derive(Debug, PartialEq, Deserialize, Default)]
pub(crate) struct CachedIn {
    #[serde(default)]
    pub(crate) cached_tokens: Option<u64>,
}

/// A JSON string's text, when `raw` is a string.
pub(crate) fn raw_str(raw: Option<&RawValue>) -> Option<Cow<'_, str>> {
    raw.filter(|r| r.get().starts_with('"'))
        .and_then(|r| serde_json::from_str(r.get()).ok())
}

// ---- chat completions, as the gateway answers a client ----

#[derive(Serialize)]
pub(super) struct ChatCompletionOut<'a> {
    pub(super) id: &'a str,
    pub(super) object: &'static str,
    pub(super) created: u64,
    pub(super) model: &'a str,
    pub(super) choices: [ChatChoiceOut<'a>; 1],
    pub(super) usage: ChatUsageOut,
}

#[derive(Serialize)]
pub(super) struct ChatChoiceOut<'a> {
    pub(super) index: u32,
    pub(super) message: ChatMessageOut<'a>,
    /// Always `null` (requested log probabilities are refused).
    pub(super) logprobs: Option<()>,
    pub(super) finish_reason: &'static str,
}

#[derive(Serialize)]
pub(super) struct ChatMessageOut<'a> {
    pub(super) role: &'static str,
    pub(super) content: Option<String>,
    pub(super) refusal: Option<()>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub(super) tool_calls: Vec<ChatToolCallOut<'a>>,
}

#[derive(Serialize)]
pub(super) struct ChatToolCallOut<'a> {
    pub(super) id: &'a str,
    #[serde(rename = "type")]
    pub(super) ty: &'static str,
    pub(super) function: ChatFunctionOut<'a>,
}

#[derive(Serialize)]
pub(super) struct ChatFunctionOut<'a> {
    pub(super) name: &'a str,
    pub(super) arguments: &'a str,
}

#[derive(Serialize)]
pub(super) struct ChatUsageOut {
    pub(super) prompt_tokens: u64,
    pub(super) completion_tokens: u64,
    pub(super) total_tokens: u64,
    pub(super) prompt_tokens_details: CachedOut,
}

#[derive(Serialize)]
pub(super) struct CachedOut {
    pub(super) cached_tokens: u64,
}

// ---- Anthropic messages, as an upstream answers ----

#[derive(Deserialize)]
pub(super) struct MessageIn<'a> {
    #[serde(borrow, default)]
    pub(super) id: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    pub(super) model: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    pub(super) content: Option<Vec<BlockIn<'a>>>,
    #[serde(borrow, default)]
    pub(super) stop_reason: Option<Cow<'a, str>>,
    #[serde(default)]
    pub(super) usage: Option<AnthropicUsageIn>,
}

#[derive(Deserialize)]
pub(super) struct BlockIn<'a> {
    #[serde(borrow, rename = "type", default)]
    pub(super) ty: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    pub(super) text: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    pub(super) id: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    pub(super) name: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    pub(super) input: Option<&'a RawValue>,
}

#[derive(Deserialize, Default)]
pub(super) struct AnthropicUsageIn {
    #[serde(default)]
    pub(super) input_tokens: Option<u64>,
    #[serde(default)]
    pub(super) output_tokens: Option<u64>,
    #[serde(default)]
    pub(super) cache_read_input_tokens: Option<u64>,
    #[serde(default)]
    pub(super) cache_creation_input_tokens: Option<u64>,
}

// ---- Anthropic messages, as the gateway answers a client ----

#[derive(Serialize)]
pub(super) struct MessageOut<'a> {
    pub(super) id: &'a str,
    #[serde(rename = "type")]
    pub(super) ty: &'static str,
    pub(super) role: &'static str,
    pub(super) model: &'a str,
    pub(super) content: Vec<BlockOut<'a>>,
    pub(super) stop_reason: &'static str,
    pub(super) stop_sequence: Option<()>,
    pub(super) usage: AnthropicUsageOut,
}

#[derive(Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub(super) enum BlockOut<'a> {
    Text {
        text: &'a str,
    },
    ToolUse {
        id: &'a str,
        name: &'a str,
        input: Cow<'a, RawValue>,
    },
}

#[derive(Serialize)]
pub(super) struct AnthropicUsageOut {
    pub(super) input_tokens: u64,
    pub(super) output_tokens: u64,
    pub(super) cache_read_input_tokens: u64,
    pub(super) cache_creation_input_tokens: u64,
}

// ---- chat completion chunks, as an upstream streams them ----

#[derive(Deserialize)]
pub(crate) struct ChunkIn<'a> {
    /// An in-stream error (then read again as a tree: a cold path).
    #[serde(borrow, default)]
    pub(crate) error: Option<&'a RawValue>,
    #[serde(borrow, default)]
    pub(crate) id: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    pub(crate) model: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    pub(crate) choices: Option<Vec<ChunkChoiceIn<'a>>>,
    #[serde(default)]
    pub(crate) usage: Option<ChatUsageIn>,
}

#[derive(Deserialize)]
pub(crate) struct ChunkChoiceIn<'a> {
    #[serde(borrow, default)]
    pub(crate) delta: Option<DeltaIn<'a>>,
    #[serde(borrow, default)]
    pub(crate) finish_reason: Option<Cow<'a, str>>,
}

#[derive(Deserialize)]
pub(crate) struct DeltaIn<'a> {
    /// Raw, as in [`ChatMessageIn`]: only a string is text.
    #[serde(borrow, default)]
    pub(crate) content: Option<&'a RawValue>,
    #[serde(borrow, default)]
    pub(crate) refusal: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    pub(crate) tool_calls: Option<Vec<ToolCallDeltaIn<'a>>>,
}

#[derive(Debug, PartialEq, Deserialize)]
pub(crate) struct ToolCallDeltaIn<'a> {
    #[serde(default)]
    pub(crate) index: Option<u64>,
    #[serde(borrow, default)]
    pub(crate) id: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    pub(crate) function: Option<ChatFunctionIn<'a>>,
}

// ---- chat completions, as the gateway asks an upstream ----
//
// Measured: building the upstream request as `json!` maps cost ~12,000 instructions per
// translated Anthropic request (B-tree inserts, `Value` clones of strings and drops); these
// borrow from the hub request and write straight to bytes.

#[derive(Serialize)]
pub(super) struct ChatRequestOut<'a> {
    pub(super) model: &'a str,
    pub(super) messages: ChatTurns<'a>,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub(super) stream: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) stream_options: Option<IncludeUsage>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) max_completion_tokens: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) max_tokens: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) temperature: Option<&'a serde_json::Number>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) top_p: Option<&'a serde_json::Number>,
    #[serde(skip_serializing_if = "<[_]>::is_empty")]
    pub(super) stop: &'a [String],
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) reasoning_effort: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) user: Option<&'a str>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub(super) tools: Vec<ChatToolOut<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) parallel_tool_calls: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) tool_choice: Option<ChatToolChoiceOut<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) response_format: Option<serde_json::Value>,
}

#[derive(Serialize)]
pub(super) struct IncludeUsage {
    pub(super) include_usage: bool,
}

/// The messages, written by [`ChatTurns::write`] as one raw JSON fragment: serde spent
/// ~110 instructions on every key (escaping it) and a scratch string on every long text;
/// this was the bulk of encoding a translated request (callgrind, issue 41). The derived
/// `Serialize` of [`ChatTurnOut`] is what it must equal (tested).
pub(super) struct ChatTurns<'a>(pub(super) Vec<ChatTurnOut<'a>>);

impl ChatTurns<'_> {
    /// The JSON array of the turns, exactly as serde_json writes `Vec<ChatTurnOut>`.
    fn write(&self, out: &mut String) {
        write_list(out, &self.0, write_turn);
    }

    /// Room for the turns' texts and their framing.
    fn size_hint(&self) -> usize {
        let text = |t: &ChatTurnOut<'_>| match t {
            ChatTurnOut::System { content } | ChatTurnOut::Tool { content, .. } => content.len(),
            ChatTurnOut::User {
                content: ChatUserContent::Text(text),
            } => text.len(),
            ChatTurnOut::User {
                content: ChatUserContent::Parts(parts),
            } => parts.len() * 64,
            ChatTurnOut::Assistant {
                content,
                tool_calls,
            } => content.as_ref().map_or(0, String::len) + tool_calls.len() * 128,
        };
        self.0.iter().map(|t| text(t) + 48).sum::<usize>() + 2
    }
}

/// `items` as a JSON array, each written by `item`.
fn write_list<T>(out: &mut String, items: &[T], mut item: impl FnMut(&mut String, &T)) {
    out.push('[');
    for (i, t) in items.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        item(out, t);
    }
    out.push(']');
}

fn write_turn(out: &mut String, t: &ChatTurnOut<'_>) {
    match t {
        ChatTurnOut::System { content } => {
            out.push_str(r#"{"role":"system","content":"#);
            write_str(out, content);
        }
        ChatTurnOut::User { content } => {
            out.push_str(r#"{"role":"user","content":"#);
            match content {
                ChatUserContent::Text(text) => write_str(out, text),
                ChatUserContent::Parts(parts) => write_list(out, parts, write_user_part),
            }
        }
        ChatTurnOut::Assistant {
            content,
            tool_calls,
        } => {
            out.push_str(r#"{"role":"assistant","content":"#);
            match content {
                Some(text) => write_str(out, text),
                None => out.push_str("null"),
            }
            if !tool_calls.is_empty() {
                out.push_str(r#","tool_calls":"#);
                write_list(out, tool_calls, write_tool_call);
            }
        }
        ChatTurnOut::Tool {
            tool_call_id,
            content,
        } => {
            out.push_str(r#"{"role":"tool","tool_call_id":"#);
            write_str(out, tool_call_id);
            out.push_str(r#","content":"#);
            write_str(out, content);
        }
    }
    out.push('}');
}

fn write_user_part(out: &mut String, p: &ChatUserPart<'_>) {
    match p {
        ChatUserPart::Text { text } => {
            out.push_str(r#"{"type":"text","text":"#);
            write_str(out, text);
            out.push('}');
        }
        ChatUserPart::ImageUrl { image_url } => {
            out.push_str(r#"{"type":"image_url","image_url":{"url":"#);
            write_str(out, &image_url.url);
            out.push_str("}}");
        }
    }
}

fn write_tool_call(out: &mut String, c: &ChatToolCallOut<'_>) {
    out.push_str(r#"{"id":"#);
    write_str(out, c.id);
    out.push_str(r#","type":"#);
    write_str(out, c.ty);
    out.push_str(r#","function":{"name":"#);
    write_str(out, c.function.name);
    out.push_str(r#","arguments":"#);
    write_str(out, c.function.arguments);
    out.push_str("}}");
}

/// Turns whose texts pass this are written one turn at a time.
const PER_TURN_ABOVE: usize = 1 << 20;

impl Serialize for ChatTurns<'_> {
    fn serialize<S: serde::Serializer>(&self, ser: S) -> Result<S::Ok, S::Error> {
        let hint = self.size_hint();
        if hint <= PER_TURN_ABOVE {
            let mut out = String::with_capacity(hint);
            self.write(&mut out);
            return raw_fragment(&out, ser);
        }
        // A big body: all turns in one string held the texts once more, whole, beside the
        // encoded body (an 8 MB body cost 4.7x its bytes, issue 49); one turn at a time holds
        // at most the largest turn. The same bytes: serde_json writes a sequence as `write`.
        use serde::ser::SerializeSeq;
        struct Raw<'a>(&'a str);
        impl Serialize for Raw<'_> {
            fn serialize<S: serde::Serializer>(&self, ser: S) -> Result<S::Ok, S::Error> {
                raw_fragment(self.0, ser)
            }
        }
        let mut seq = ser.serialize_seq(Some(self.0.len()))?;
        let mut out = String::new();
        for t in &self.0 {
            out.clear();
            write_turn(&mut out, t);
            seq.serialize_element(&Raw(&out))?;
        }
        seq.end()
    }
}

/// One chat message, tagged by `role`.
#[derive(Serialize)]
#[serde(tag = "role", rename_all = "lowercase")]
pub(super) enum ChatTurnOut<'a> {
    System {
        content: Cow<'a, str>,
    },
    User {
        content: ChatUserContent<'a>,
    },
    Assistant {
        /// `null` for a turn that only calls tools.
        content: Option<String>,
        #[serde(skip_serializing_if = "Vec::is_empty")]
        tool_calls: Vec<ChatToolCallOut<'a>>,
    },
    Tool {
        tool_call_id: &'a str,
        content: Cow<'a, str>,
    },
}

/// A lone text part is sent as a plain string, as clients send it.
#[derive(Serialize)]
#[serde(untagged)]
pub(super) enum ChatUserContent<'a> {
    Text(&'a str),
    Parts(Vec<ChatUserPart<'a>>),
}

#[derive(Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub(super) enum ChatUserPart<'a> {
    Text { text: &'a str },
    ImageUrl { image_url: ImageUrlOut },
}

#[derive(Serialize)]
pub(super) struct ImageUrlOut {
    pub(super) url: String,
}

#[derive(Serialize)]
pub(super) struct ChatToolOut<'a> {
    #[serde(rename = "type")]
    pub(super) ty: &'static str,
    pub(super) function: ChatToolFunctionOut<'a>,
}

#[derive(Serialize)]
pub(super) struct ChatToolFunctionOut<'a> {
    pub(super) name: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) description: Option<&'a str>,
    pub(super) parameters: &'a serde_json::Value,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) strict: Option<bool>,
}

#[derive(Serialize)]
#[serde(untagged)]
pub(super) enum ChatToolChoiceOut<'a> {
    /// `auto`, `none` or `required`.
    Mode(&'static str),
    Named {
        #[serde(rename = "type")]
        ty: &'static str,
        function: NameOut<'a>,
    },
}

#[derive(Serialize)]
pub(super) struct NameOut<'a> {
    pub(super) name: &'a str,
}

#[cfg(test)]
mod chat_turns_tests {
    use proptest::prelude::*;

    use super::*;

    fn text() -> impl Strategy<Value = String> {
        "\\PC{0,40}|[a-z \"\\\\\\n\\x00-\\x1f\u{7f}é]{0,12}"
    }

    proptest! {
        /// The hand-written messages are byte for byte what serde_json makes of the derived
        /// `Serialize`, every variant, any text (escapes, control bytes, non-ASCII).
        #[test]
        fn turns_are_written_as_serde_writes_them(
            a in text(), b in text(), c in text(), some: bool, calls in 0..3usize, parts: bool,
        ) {
            let call = || ChatToolCallOut {
                id: &a,
                ty: "function",
                function: ChatFunctionOut { name: &b, arguments: &c },
            };
            let turns = vec![
                ChatTurnOut::System { content: Cow::Borrowed(&a) },
                if parts {
                    ChatTurnOut::User {
                        content: ChatUserContent::Parts(vec![
                            ChatUserPart::Text { text: &b },
                            ChatUserPart::ImageUrl { image_url: ImageUrlOut { url: c.clone() } },
                        ]),
                    }
                } else {
                    ChatTurnOut::User { content: ChatUserContent::Text(&b) }
                },
                ChatTurnOut::Assistant {
                    content: some.then(|| c.clone()),
                    tool_calls: (0..calls)
                        .map(|_| call())
                        .collect(),
                },
                ChatTurnOut::Tool { tool_call_id: &a, content: Cow::Borrowed(&c) },
            ];
            let want = serde_json::to_string(&turns).unwrap();
            let turns = ChatTurns(turns);
            prop_assert_eq!(serde_json::to_string(&turns).unwrap(), want.clone());
            // As a raw fragment it is a whole value: to_value reads it back.
            prop_assert_eq!(
                serde_json::to_value(&turns).unwrap(),
                serde_json::from_str::<serde_json::Value>(&want).unwrap()
            );
        }
    }

    /// Turns over the per-turn threshold are written one at a time, to the same bytes.
    #[test]
    fn big_turns_are_written_as_small_ones() {
        let big = "x\"é".repeat(PER_TURN_ABOVE / 2);
        let turns = vec![
            ChatTurnOut::System {
                content: Cow::Borrowed(&big),
            },
            ChatTurnOut::User {
                content: ChatUserContent::Text("hi"),
            },
            ChatTurnOut::Tool {
                tool_call_id: "c",
                content: Cow::Borrowed(&big),
            },
        ];
        let want = serde_json::to_string(&turns).unwrap();
        let turns = ChatTurns(turns);
        assert!(turns.size_hint() > PER_TURN_ABOVE);
        assert_eq!(serde_json::to_string(&turns).unwrap(), want);
        assert_eq!(
            serde_json::to_value(&turns).unwrap(),
            serde_json::from_str::<serde_json::Value>(&want).unwrap()
        );
    }

    #[test]
    fn no_turns_is_an_empty_array() {
        assert_eq!(serde_json::to_string(&ChatTurns(Vec::new())).unwrap(), "[]");
    }
}
