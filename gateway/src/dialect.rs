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
    /// Bedrock API key: every client dialect is translated ([`Upstream::Converse`]).
    /// The last: see [`Provider::COUNT`].
    #[serde(rename = "bedrock")]
    Bedrock,
}

impl Provider {
    /// How many providers there are (the last variant's index + 1).
    pub(crate) const COUNT: usize = Provider::Bedrock as usize + 1;

    pub(crate) const ALL: [Provider; Provider::COUNT] = [
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
    /// `:countTokens`; `/v1` too): the model is in the path, not the body. The last: see
    /// [`Dialect::COUNT`].
    Gemini,
}

/// The API a target's requests go upstream in: the client's own dialect passed through, or
/// the one they are translated to (`crate::providers::upstream_for`). Converse is upstream
/// only: no route speaks it, so it is no [`Dialect`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum Upstream {
    Chat,
    Messages,
    Responses,
    Gemini,
    /// AWS Bedrock's Converse: every client dialect is translated to it for
    /// [`Provider::Bedrock`].
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
    /// How many dialects there are (the last variant's index + 1): the size of every array
    /// indexed by [`Dialect::index`].
    pub(crate) const COUNT: usize = Dialect::Gemini as usize + 1;

    pub(crate) const ALL: [Dialect; Dialect::COUNT] = [
        Dialect::Chat,
        Dialect::Messages,
        Dialect::Responses,
        Dialect::Gemini,
    ];

    pub(crate) const fn index(self) -> usize {
        self as usize
    }

    /// This dialect as an upstream API (a passthrough's).
    pub(crate) const fn upstream(self) -> Upstream {
        match self {
            Dialect::Chat => Upstream::Chat,
            Dialect::Messages => Upstream::Messages,
            Dialect::Responses => Upstream::Responses,
            Dialect::Gemini => Upstream::Gemini,
        }
    }

    /// The envelope errors use.
    pub(crate) const fn envelope(self) -> Envelope {
        self.upstream().envelope()
    }
}

impl Upstream {
    /// The path appended to an upstream's base URL, a client dialect's request path too.
    /// Gemini paths name the model and the method: this is their common prefix.
    pub(crate) const fn path(self) -> &'static str {
        match self {
            Upstream::Chat => "/v1/chat/completions",
            Upstream::Messages => "/v1/messages",
            Upstream::Responses => "/v1/responses",
            Upstream::Gemini => "/v1beta/models",
            // Never joined: a Bedrock target's URIs name the model (`crate::providers::bedrock`).
            Upstream::Converse => "/model",
        }
    }

    /// The envelope of the upstream's errors.
    pub(crate) const fn envelope(self) -> Envelope {
        match self {
            Upstream::Messages => Envelope::Anthropic,
            Upstream::Gemini => Envelope::Google,
            // Bedrock's own errors are `{"message"}` (no type).
            Upstream::Chat | Upstream::Responses | Upstream::Converse => Envelope::Openai,
        }
    }
}

/// Whether the upstream is the client's own dialect: a passthrough.
impl PartialEq<Dialect> for Upstream {
    fn eq(&self, client: &Dialect) -> bool {
        *self == client.upstream()
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

#[cfg(test)]
mod tests {
    use super::*;

    /// The arrays sized from the enums list each variant once, in index order.
    #[test]
    fn every_variant_is_listed_once() {
        for (i, d) in Dialect::ALL.into_iter().enumerate() {
            assert_eq!(d.index(), i);
        }
        for (i, p) in Provider::ALL.into_iter().enumerate() {
            assert_eq!(p as usize, i);
        }
    }
}
