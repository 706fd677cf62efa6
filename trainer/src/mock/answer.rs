//! What an answer carries, whatever its dialect: its token counts and the tool call it makes.
//! A leaf, so that the dialects' renderers (`render`, `tool_call`, `gemini`) import it and not
//! each other's types in a circle.

/// The token counts an answer reports. Each dialect counts input its own way: OpenAI's
/// `prompt_tokens`/`input_tokens` include the cached part, Anthropic's `input_tokens`
/// exclude it (`cache_read_input_tokens` is on top), as the real APIs do.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Tokens {
    pub input: u64,
    pub(crate) cached: u64,
    pub output: u64,
}

/// One call of `name`; `arguments` is a JSON object as text.
pub(crate) struct ToolCall<'a> {
    pub name: &'a str,
    pub arguments: &'a str,
}
