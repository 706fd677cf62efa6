//! The hub representation every dialect is decoded into and encoded from: one pair of
//! mappings per dialect instead of one per pair of dialects.
//!
//! It holds exactly what the dialects share; what one dialect has and the hub does
//! not is refused by that dialect's decoder (see TRANSLATION.md), never dropped here. One
//! exception: prompt-cache breakpoints ([`Cache`]), carried for the targets that take them
//! and dropped, as hints, by the encoders of those that do not.

use serde_json::{Number, Value};

/// A request, dialect-neutral.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Request {
    /// System / developer text, in order (chat `system`/`developer` messages, Responses
    /// `instructions`, Anthropic `system`).
    pub(crate) system: Vec<String>,
    pub(crate) messages: Vec<Message>,
    pub(crate) tools: Vec<Tool>,
    pub(crate) tool_choice: Option<ToolChoice>,
    /// `Some(false)`: at most one tool call per turn.
    pub(crate) parallel_tool_calls: Option<bool>,
    pub(crate) max_tokens: Option<u64>,
    pub(crate) stop: Vec<String>,
    /// Numbers are kept as sent (no float round trip).
    pub(crate) temperature: Option<Number>,
    pub(crate) top_p: Option<Number>,
    /// Gemini's `generationConfig.topK` (Gemini CLI sends it on every request) or Anthropic's
    /// `top_k`: Anthropic and Gemini targets take it (`sampling`).
    pub(crate) top_k: Option<Number>,
    /// How the client named `temperature`, `top_p` and `top_k` (a drop names the client's
    /// own field).
    pub(crate) sampling_names: SamplingNames,
    /// Structured output the client asked for (Gemini's `responseMimeType` and schema).
    pub(crate) response_format: Option<ResponseFormat>,
    pub(crate) user: Option<String>,
    pub(crate) stream: bool,
    /// Chat clients only: `stream_options.include_usage` (whether the client wants the
    /// usage chunk). Translated chat upstreams are always asked for usage.
    pub(crate) include_usage: bool,
    /// How hard the model should reason, when the client said (and which field said it).
    pub(crate) reasoning: Option<Reasoning>,
    /// Prompt-cache breakpoints the client set, in no particular order; usually none.
    pub(crate) cache: Vec<Cache>,
    /// Fields the decoder dropped (`policy`), by field: reported to the client and logged.
    pub(crate) dropped: Vec<String>,
    /// What the client's dialect needs to render the answer in its own terms.
    pub(crate) view: ClientView,
}

/// How the client named the sampling fields (drops name the client's own field).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) enum SamplingNames {
    /// `temperature`, `top_p`, `top_k` (chat, messages, Responses).
    #[default]
    Plain,
    /// `generationConfig.temperature`, `.topP`, `.topK`.
    Gemini,
}

/// JSON output.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum ResponseFormat {
    /// Any JSON value (chat's `json_object`).
    Json,
    /// JSON matching a JSON Schema (lower-case types; Gemini's upper-case ones are lowered
    /// by its decoder).
    Schema(Value),
}

impl Request {
    /// The effort to ask of a target: the client's, where the target's model takes a
    /// reasoning control (`reasoning = true`); elsewhere it was dropped (`no_reasoning`).
    pub(crate) fn effort_for(&self, target_reasons: bool) -> Option<Effort> {
        self.reasoning
            .as_ref()
            .and_then(|re| re.effort)
            .filter(|_| target_reasons)
    }
}

impl Request {
    /// About how many bytes its encoding takes: its texts, plus room for the rest. Sizing
    /// the output once saved three reallocations (and copies) of a 4 KB body.
    pub(crate) fn encoded_size_hint(&self) -> usize {
        fn part(p: &Part) -> usize {
            match p {
                Part::Text(t) => t.len(),
                Part::Image(Image::Url(u)) => u.len(),
                Part::Image(Image::Base64 { data, .. }) => data.len(),
                Part::ToolCall { arguments, .. } => arguments.len() + 64,
                Part::ToolResult { content, .. } => content.iter().map(part).sum::<usize>() + 64,
            }
        }
        let text: usize = self.system.iter().map(String::len).sum::<usize>()
            + self
                .messages
                .iter()
                .flat_map(|m| &m.parts)
                .map(part)
                .sum::<usize>();
        // Escapes, keys and framing: an eighth more, and the fields around them.
        text + text / 8 + 512 + 256 * self.tools.len()
    }
}

/// Reasoning effort, on OpenAI's scale (Anthropic's `max` is `XHigh`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Effort {
    Minimal,
    Low,
    Medium,
    High,
    XHigh,
}

impl Effort {
    /// OpenAI's names (`reasoning_effort`, `reasoning.effort`); `none` is no request.
    pub(crate) fn from_openai(s: &str) -> Option<Effort> {
        Some(match s {
            "minimal" => Effort::Minimal,
            "low" => Effort::Low,
            "medium" => Effort::Medium,
            "high" => Effort::High,
            "xhigh" => Effort::XHigh,
            _ => return None,
        })
    }

    pub(crate) fn openai(self) -> &'static str {
        match self {
            Effort::Minimal => "minimal",
            Effort::Low => "low",
            Effort::Medium => "medium",
            Effort::High => "high",
            Effort::XHigh => "xhigh",
        }
    }

    /// Anthropic's `output_config.effort` names.
    pub(crate) fn from_anthropic(s: &str) -> Option<Effort> {
        Some(match s {
            "low" => Effort::Low,
            "medium" => Effort::Medium,
            "high" => Effort::High,
            "max" | "xhigh" => Effort::XHigh,
            _ => return None,
        })
    }

    pub(crate) fn anthropic(self) -> &'static str {
        match self {
            Effort::Minimal | Effort::Low => "low",
            Effort::Medium => "medium",
            Effort::High => "high",
            Effort::XHigh => "max",
        }
    }

    /// An Anthropic thinking budget read as an effort (the scales meet nowhere exactly).
    pub(crate) fn from_budget(tokens: u64) -> Effort {
        match tokens {
            0..=4096 => Effort::Low,
            4097..=16384 => Effort::Medium,
            _ => Effort::High,
        }
    }
}

/// A reasoning request: its effort (`None`: the model's own default) and the client fields
/// that carried it, named when a target that takes no reasoning control drops them.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Reasoning {
    pub(crate) effort: Option<Effort>,
    pub(crate) fields: Vec<&'static str>,
}

impl Reasoning {
    /// Records that `field` asked for reasoning; `effort`, when given, is what it asked for.
    pub(crate) fn note(r: &mut Option<Reasoning>, field: &'static str, effort: Option<Effort>) {
        let re = r.get_or_insert_with(Reasoning::default);
        re.fields.push(field);
        if effort.is_some() {
            re.effort = effort;
        }
    }
}

/// A prompt-cache breakpoint the client set: chat's `cache_control` (opencode sends it on
/// messages and parts for Claude models, in Anthropic's form). The prompt up to and
/// including what `at` names is worth caching: an Anthropic target takes it on the block
/// built from `at`; a target without prompt-cache control drops it (a hint), by `field`.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Cache {
    pub(crate) at: CacheAt,
    /// Anthropic's `cache_control` object as the client sent it (`type`, `ttl`): chat clients
    /// copy Anthropic's form, so Anthropic checks it rather than a copy of its rules here.
    pub(crate) control: Value,
    /// The client field that set it, generalised (`messages[].cache_control`).
    pub(crate) field: &'static str,
}

/// What a [`Cache`] breakpoint follows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum CacheAt {
    /// `Request::system[i]`.
    System(usize),
    /// `Request::messages[message].parts[part]`.
    Part { message: usize, part: usize },
}

impl Request {
    /// The `cache_control` the client set on what `at` names, if any.
    pub(crate) fn cache_at(&self, at: CacheAt) -> Option<&Value> {
        self.cache.iter().find(|c| c.at == at).map(|c| &c.control)
    }
}

/// The client's own view of the request, for rendering the answer: which upstream function
/// names stand for its custom or namespaced tools, and (Responses) the request fields a
/// response object echoes.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct ClientView {
    /// Only tools that are not plain functions to the client; usually none.
    pub(crate) tools: Vec<(String, ToolKind)>,
    /// Responses only: `tools`, `tool_choice`, `instructions`, ... as the client sent them.
    pub(crate) echo: serde_json::Map<String, Value>,
    /// Gemini only: a `streamGenerateContent` without `alt=sse` streams one JSON array.
    pub(crate) json_array_stream: bool,
}

impl ClientView {
    /// How the client knows the upstream function `name`.
    pub(crate) fn kind(&self, name: &str) -> Option<&ToolKind> {
        self.tools.iter().find(|(n, _)| n == name).map(|(_, k)| k)
    }
}

/// A tool the client declared as something other than a plain function.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum ToolKind {
    /// A Responses `custom` (freeform) tool: upstream a function with one string argument,
    /// [`CUSTOM_INPUT`]; its calls go back as `custom_tool_call` items.
    Custom,
    /// A function inside a Responses `namespace` tool: flattened upstream; its calls go back
    /// with the client's `namespace` and `name`.
    Namespaced { namespace: String, name: String },
}

/// The argument a custom tool's freeform input travels in, upstream.
pub(crate) const CUSTOM_INPUT: &str = "input";

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Role {
    User,
    Assistant,
    /// A system (or developer) turn in the middle of the conversation, in its place; text
    /// only. System text before the first turn is [`Request::system`].
    System,
}

#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Message {
    pub(crate) role: Role,
    pub(crate) parts: Vec<Part>,
}

impl Message {
    /// The text parts, in order.
    pub(crate) fn texts(&self) -> impl Iterator<Item = &str> {
        self.parts.iter().filter_map(|p| match p {
            Part::Text(t) => Some(t.as_str()),
            _ => None,
        })
    }
}

#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Part {
    Text(String),
    Image(Image),
    /// An assistant's tool call; `arguments` is JSON text (chat's and Responses' form).
    ToolCall {
        id: String,
        name: String,
        arguments: String,
    },
    /// A tool's answer, in a user turn.
    ToolResult {
        id: String,
        /// Text and image parts.
        content: Vec<Part>,
        is_error: bool,
    },
}

#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Image {
    Url(String),
    Base64 { media_type: String, data: String },
}

impl Image {
    /// A `data:<type>;base64,<data>` URL becomes a base64 image; any other URL stays a URL.
    pub(crate) fn from_url(url: &str) -> Image {
        if let Some(rest) = url.strip_prefix("data:") {
            if let Some((media_type, data)) = rest.split_once(";base64,") {
                return Image::Base64 {
                    media_type: media_type.to_owned(),
                    data: data.to_owned(),
                };
            }
        }
        Image::Url(url.to_owned())
    }

    /// The image as a URL (`data:` for base64), the OpenAI dialects' form.
    pub(crate) fn to_url(&self) -> String {
        match self {
            Image::Url(u) => u.clone(),
            Image::Base64 { media_type, data } => format!("data:{media_type};base64,{data}"),
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Tool {
    pub(crate) name: String,
    pub(crate) description: Option<String>,
    /// JSON Schema of the arguments.
    pub(crate) parameters: Value,
    /// `strict` as the client set it (arguments held to the schema): carried where the
    /// target's API has it (chat's `function.strict`, Anthropic's tool `strict`), dropped
    /// (a hint) elsewhere.
    pub(crate) strict: Option<Strict>,
}

/// A tool's `strict` and the client field that set it (named where it is dropped).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Strict {
    pub(crate) on: bool,
    pub(crate) field: String,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum ToolChoice {
    Auto,
    None,
    /// Some tool must be called (chat `required`, Anthropic `any`).
    Required,
    Named(String),
}

/// Tool calls one translated answer may carry, from any upstream, streamed or not: real
/// answers make a handful, and the bound keeps a hostile upstream from making the gateway
/// write megabytes of calls. Past it, a stream ends with an error event and a buffered
/// answer is a 502.
pub(crate) const MAX_TOOL_CALLS: usize = 1024;

/// Why an answer past [`MAX_TOOL_CALLS`] was cut.
pub(crate) fn too_many_tool_calls() -> String {
    format!("the upstream started more than {MAX_TOOL_CALLS} tool calls in one answer")
}

/// A complete (non-streaming) answer.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Response {
    pub(crate) id: String,
    pub(crate) model: String,
    pub(crate) output: Vec<Output>,
    pub(crate) stop: StopReason,
    pub(crate) usage: Usage,
}

#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Output {
    Text(String),
    ToolCall {
        id: String,
        name: String,
        arguments: String,
    },
}

/// Why generation stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum StopReason {
    /// Natural end, or a stop sequence.
    EndTurn,
    StopSequence,
    MaxTokens,
    ToolUse,
    /// Refused or filtered.
    ContentFilter,
}

/// Token counts. `input` is the whole prompt, cached parts included (chat's and Responses'
/// `prompt_tokens`/`input_tokens`); Anthropic reports the uncached rest separately.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Usage {
    pub(crate) input: u64,
    pub(crate) cache_read: u64,
    pub(crate) cache_creation: u64,
    pub(crate) output: u64,
}

impl Usage {
    /// Anthropic's `input_tokens`: the prompt tokens neither read from nor written to cache.
    pub(crate) fn uncached_input(&self) -> u64 {
        self.input
            .saturating_sub(self.cache_read)
            .saturating_sub(self.cache_creation)
    }

    /// For accounting (`crate::usage::Usage`): the same figures a passthrough reports.
    pub(crate) fn accounting(&self) -> crate::usage::Usage {
        crate::usage::Usage {
            input: Some(self.input),
            output: Some(self.output),
        }
    }
}

/// One step of a streamed answer, as decoded from the upstream's events.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Event {
    /// The answer began.
    Start {
        id: String,
        model: String,
    },
    /// Text of the current (or a new) text block.
    Text(String),
    /// A tool call began; its arguments follow as [`Event::ToolArgs`].
    ToolCallStart {
        id: String,
        name: String,
    },
    ToolArgs(String),
    Stop(StopReason),
    /// Usage so far (a later report replaces an earlier one field by field upstream-side;
    /// decoders send complete figures).
    Usage(Usage),
    /// The upstream reported an error mid-stream.
    Error {
        kind: String,
        message: String,
    },
    /// The answer is complete.
    End,
}

/// Seconds since the Unix epoch, for `created` fields.
pub(crate) fn now_secs() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn data_urls_become_base64() {
        let i = Image::from_url("data:image/png;base64,AAAA");
        assert_eq!(
            i,
            Image::Base64 {
                media_type: "image/png".into(),
                data: "AAAA".into()
            }
        );
        assert_eq!(i.to_url(), "data:image/png;base64,AAAA");
        assert_eq!(
            Image::from_url("https://x/y.png"),
            Image::Url("https://x/y.png".into())
        );
    }

    #[test]
    fn uncached_input_never_underflows() {
        let u = Usage {
            input: 10,
            cache_read: 7,
            cache_creation: 5,
            output: 1,
        };
        assert_eq!(u.uncached_input(), 0);
    }
}
