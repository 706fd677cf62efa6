//! Token usage, read from non-streaming bodies and from stream events of all three dialects.
//!
//! Parsing is narrow: only `usage` objects are deserialized; every other field is skipped
//! by serde without building a tree.

use serde::Deserialize;

use crate::sse::SseEvent;

/// Input and output tokens of one request, as the upstream reported them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Usage {
    pub(crate) input: Option<u64>,
    pub(crate) output: Option<u64>,
}

impl Usage {
    pub(crate) fn total(&self) -> u64 {
        // Saturating: usage comes from the upstream and may be absurd.
        self.input
            .unwrap_or(0)
            .saturating_add(self.output.unwrap_or(0))
    }

    /// Later reports win field by field: Anthropic sends input tokens in `message_start`
    /// and the final cumulative output tokens in `message_delta`.
    fn merge(&mut self, later: Usage) {
        if later.input.is_some() {
            self.input = later.input;
        }
        if later.output.is_some() {
            self.output = later.output;
        }
    }
}

/// Both naming schemes: OpenAI chat (`prompt_tokens`/`completion_tokens`) and
/// Anthropic/Responses (`input_tokens`/`output_tokens`).
#[derive(Deserialize)]
struct UsageFields {
    prompt_tokens: Option<u64>,
    completion_tokens: Option<u64>,
    input_tokens: Option<u64>,
    output_tokens: Option<u64>,
    /// Anthropic counts cached prompt tokens apart from `input_tokens`; OpenAI's prompt
    /// figures include them. Input is the whole prompt everywhere, so a request costs the
    /// same tokens whichever provider (or translation) served it.
    cache_read_input_tokens: Option<u64>,
    cache_creation_input_tokens: Option<u64>,
}

impl From<UsageFields> for Usage {
    fn from(u: UsageFields) -> Usage {
        let anthropic_input = u.input_tokens.map(|n| {
            n.saturating_add(u.cache_read_input_tokens.unwrap_or(0))
                .saturating_add(u.cache_creation_input_tokens.unwrap_or(0))
        });
        Usage {
            input: u.prompt_tokens.or(anthropic_input),
            output: u.completion_tokens.or(u.output_tokens),
        }
    }
}

#[derive(Deserialize)]
struct WithUsage {
    usage: Option<UsageFields>,
}

/// A stream event: usage at the top (chat usage chunk, `message_delta`), or inside
/// `message` (`message_start`) or `response` (`response.completed`).
#[derive(Deserialize)]
struct EventUsage {
    usage: Option<UsageFields>,
    message: Option<WithUsage>,
    response: Option<WithUsage>,
}

/// Usage of a complete non-streaming response body; `None` if absent or unreadable.
pub(crate) fn from_body(body: &[u8]) -> Option<Usage> {
    if !contains_usage(body) {
        return None;
    }
    let parsed: WithUsage = serde_json::from_slice(body).ok()?;
    parsed.usage.map(Usage::from)
}

/// Bytes of request JSON per token in estimates: English prose and code run at about four
/// characters per token in every current tokenizer, JSON punctuation included.
const BYTES_PER_TOKEN: usize = 4;

/// The estimated prompt tokens of a request body of `len` bytes.
pub(crate) fn estimate_prompt(len: usize) -> u64 {
    len.div_ceil(BYTES_PER_TOKEN) as u64
}

/// Accumulates usage over the events of one stream.
#[derive(Debug, Default)]
pub(crate) struct StreamUsage {
    usage: Usage,
    /// Events seen: the estimate of the output (one token each) when no usage comes.
    events: u64,
}

impl StreamUsage {
    pub(crate) fn observe(&mut self, event: &SseEvent<'_>) {
        self.events += 1;
        // Most events are text deltas: skip them without parsing.
        if !contains_usage(event.data) {
            return;
        }
        let Ok(ev) = serde_json::from_slice::<EventUsage>(event.data) else {
            return;
        };
        for u in [
            ev.usage,
            ev.message.and_then(|m| m.usage),
            ev.response.and_then(|r| r.usage),
        ]
        .into_iter()
        .flatten()
        {
            self.usage.merge(u.into());
        }
    }

    pub(crate) fn usage(&self) -> Usage {
        self.usage
    }

    pub(crate) fn events(&self) -> u64 {
        self.events
    }
}

fn contains_usage(haystack: &[u8]) -> bool {
    const NEEDLE: &[u8] = b"\"usage\"";
    haystack.windows(NEEDLE.len()).any(|w| w == NEEDLE)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sse::SseParser;

    fn stream_usage(stream: &str) -> Usage {
        let mut p = SseParser::new();
        let mut u = StreamUsage::default();
        p.feed(stream.as_bytes(), |e| u.observe(&e));
        u.usage()
    }

    #[test]
    fn chat_body() {
        let b = br#"{"id":"x","choices":[{"message":{"content":"usage"}}],"usage":{"prompt_tokens":12,"completion_tokens":5,"total_tokens":17}}"#;
        assert_eq!(
            from_body(b),
            Some(Usage {
                input: Some(12),
                output: Some(5)
            })
        );
    }

    #[test]
    fn anthropic_and_responses_body() {
        let b = br#"{"type":"message","usage":{"input_tokens":3,"output_tokens":9}}"#;
        assert_eq!(
            from_body(b),
            Some(Usage {
                input: Some(3),
                output: Some(9)
            })
        );
    }

    #[test]
    fn anthropic_cache_tokens_count_as_input() {
        let b = br#"{"usage":{"input_tokens":3,"cache_read_input_tokens":10,"cache_creation_input_tokens":2,"output_tokens":9}}"#;
        assert_eq!(
            from_body(b),
            Some(Usage {
                input: Some(15),
                output: Some(9)
            })
        );
    }

    #[test]
    fn total_saturates() {
        let u = Usage {
            input: Some(u64::MAX),
            output: Some(5),
        };
        assert_eq!(u.total(), u64::MAX);
    }

    #[test]
    fn body_without_usage() {
        assert_eq!(from_body(br#"{"id":"x"}"#), None);
        assert_eq!(from_body(b"not json \"usage\""), None);
    }

    #[test]
    fn chat_stream_usage_chunk() {
        let s = "data: {\"choices\":[{\"delta\":{\"content\":\"hi\"}}],\"usage\":null}\n\n\
                 data: {\"choices\":[],\"usage\":{\"prompt_tokens\":7,\"completion_tokens\":2}}\n\n\
                 data: [DONE]\n\n";
        assert_eq!(
            stream_usage(s),
            Usage {
                input: Some(7),
                output: Some(2)
            }
        );
    }

    #[test]
    fn anthropic_stream_merges_start_and_delta() {
        let s = "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"usage\":{\"input_tokens\":25,\"output_tokens\":1}}}\n\n\
                 event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"delta\":{\"text\":\"x\"}}\n\n\
                 event: message_delta\ndata: {\"type\":\"message_delta\",\"usage\":{\"output_tokens\":15}}\n\n\
                 event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n";
        assert_eq!(
            stream_usage(s),
            Usage {
                input: Some(25),
                output: Some(15)
            }
        );
    }

    #[test]
    fn responses_stream_completed() {
        let s = "event: response.completed\ndata: {\"type\":\"response.completed\",\"response\":{\"id\":\"r\",\"usage\":{\"input_tokens\":4,\"output_tokens\":6,\"total_tokens\":10}}}\n\n";
        assert_eq!(
            stream_usage(s),
            Usage {
                input: Some(4),
                output: Some(6)
            }
        );
    }
}
