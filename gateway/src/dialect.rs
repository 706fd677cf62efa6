//! The four client dialects and the routes that speak them.

use serde::Deserialize;

/// The upstream API a target speaks. A client dialect the provider does not speak is
/// translated (see `crate::translate`, TRANSLATION.md, and `crate::providers` for what
/// each speaks). Configured per target
/// (`[[models.targets]] provider`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
pub(crate) enum Provider {
    /// OpenAI: serves `/v1/chat/completions` and `/v1/responses`.
    #[serde(rename = "openai")]
    Openai,
    /// Anthropic: serves `/v1/messages`.
    #[serde(rename = "anthropic")]
    Anthropic,
    /// A server that speaks only OpenAI chat completions (vLLM, Ollama, llama.cpp, Groq).
    #[serde(rename = "openai-compatible")]
    OpenaiCompatible,
    /// Google's Gemini API (AI Studio, API key): serves `models/{model}:generateContent`.
    #[serde(rename = "gemini")]
    Gemini,
    /// Azure OpenAI: OpenAI's chat completions and responses on Azure's URLs (a deployment,
    /// an `api-version`) with Azure's credentials (`crate::providers`).
    #[serde(rename = "azure-openai")]
    AzureOpenai,
    /// Gemini models on Google Vertex AI: the Gemini API on Vertex's URLs (project,
    /// location, publisher) with an OAuth access token (`crate::providers::google`).
    #[serde(rename = "vertex")]
    Vertex,
    /// Claude on Google Vertex AI: Anthropic's messages at `:rawPredict` /
    /// `:streamRawPredict`, the model in the URL, `anthropic_version` in the body.
    #[serde(rename = "vertex-anthropic")]
    VertexAnthropic,
    /// AWS Bedrock's Converse API (`/model/{id}/converse`, `/converse-stream`), SigV4 or a
    /// Bedrock API key: every client dialect is translated ([`Dialect::Converse`]).
    #[serde(rename = "bedrock")]
    Bedrock,
}

impl Provider {
    pub(crate) const ALL: [Provider; 8] = [
        Provider::Openai,
        Provider::Anthropic,
        Provider::OpenaiCompatible,
        Provider::Gemini,
        Provider::AzureOpenai,
        Provider::Vertex,
        Provider::VertexAnthropic,
        Provider::Bedrock,
    ];

    /// The name configs and logs use.
    pub(crate) const fn name(self) -> &'static str {
        match self {
            Provider::Openai => "openai",
            Provider::Anthropic => "anthropic",
            Provider::OpenaiCompatible => "openai-compatible",
            Provider::Gemini => "gemini",
            Provider::AzureOpenai => "azure-openai",
            Provider::Vertex => "vertex",
            Provider::VertexAnthropic => "vertex-anthropic",
            Provider::Bedrock => "bedrock",
        }
    }

    /// Whether this provider runs OpenAI's own models and API (the same request fields:
    /// `max_completion_tokens`, reasoning effort).
    pub(crate) const fn is_openai(self) -> bool {
        matches!(self, Provider::Openai | Provider::AzureOpenai)
    }
}

/// A client-facing API dialect, fixed by the request path.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum Dialect {
    /// OpenAI `POST /v1/chat/completions`.
    Chat,
    /// Anthropic `POST /v1/messages`.
    Messages,
    /// OpenAI `POST /v1/responses`.
    Responses,
    /// Google's `POST /v1beta/models/{model}:generateContent` (and `:streamGenerateContent`,
    /// `:countTokens`; `/v1` too): the model is in the path, not the body.
    Gemini,
    /// AWS Bedrock's Converse: upstream only (no route, not in [`Dialect::ALL`]); every
    /// client dialect is translated to it for [`Provider::Bedrock`].
    Converse,
}

/// The error envelope a dialect's clients read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Envelope {
    /// `{"error":{"message","type","param","code"}}`
    Openai,
    /// `{"type":"error","error":{"type","message"}}`
    Anthropic,
    /// `{"error":{"code","message","status"}}`
    Google,
}

impl Dialect {
    pub(crate) const ALL: [Dialect; 4] = [
        Dialect::Chat,
        Dialect::Messages,
        Dialect::Responses,
        Dialect::Gemini,
    ];

    /// The request path, which is also the path appended to an upstream's base URL. Gemini
    /// paths name the model and the method: this is their common prefix.
    pub(crate) const fn path(self) -> &'static str {
        match self {
            Dialect::Chat => "/v1/chat/completions",
            Dialect::Messages => "/v1/messages",
            Dialect::Responses => "/v1/responses",
            Dialect::Gemini => "/v1beta/models",
            // Never joined: a Bedrock target's URIs name the model (`crate::providers::bedrock`).
            Dialect::Converse => "/model",
        }
    }

    pub(crate) const fn index(self) -> usize {
        self as usize
    }

    /// The envelope errors use.
    pub(crate) const fn envelope(self) -> Envelope {
        match self {
            Dialect::Messages => Envelope::Anthropic,
            Dialect::Gemini => Envelope::Google,
            // Never a client's: Bedrock's own errors are `{"message"}` (no type).
            Dialect::Chat | Dialect::Responses | Dialect::Converse => Envelope::Openai,
        }
    }
}

/// What a Gemini method path asks: `{model}:generateContent`, `:streamGenerateContent`
/// (`alt=sse`: server-sent events, else one JSON array) or `:countTokens`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct GeminiCall {
    pub(crate) model: String,
    pub(crate) method: GeminiMethod,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum GeminiMethod {
    Generate,
    Stream { sse: bool },
    CountTokens,
}

impl GeminiMethod {
    /// The path suffix (and query) of this method upstream.
    pub(crate) const fn upstream_suffix(self) -> &'static str {
        match self {
            GeminiMethod::Generate => ":generateContent",
            GeminiMethod::Stream { sse: true } => ":streamGenerateContent?alt=sse",
            GeminiMethod::Stream { sse: false } => ":streamGenerateContent",
            GeminiMethod::CountTokens => ":countTokens",
        }
    }
}

/// `/{v1beta,v1}/models/{model}:{method}` as a call; `None` when the path is not one.
pub(crate) fn gemini_call(path: &str, query: Option<&str>) -> Option<GeminiCall> {
    let rest = path
        .strip_prefix("/v1beta/models/")
        .or_else(|| path.strip_prefix("/v1/models/"))?;
    let (model, method) = rest.rsplit_once(':')?;
    let method = match method {
        "generateContent" => GeminiMethod::Generate,
        "streamGenerateContent" => GeminiMethod::Stream {
            sse: crate::query::has(query, "alt", "sse"),
        },
        "countTokens" => GeminiMethod::CountTokens,
        _ => return None,
    };
    if model.is_empty() || model.contains('/') {
        return None;
    }
    Some(GeminiCall {
        model: model.to_owned(),
        method,
    })
}
