//! The four client dialects and the upstream providers: the vocabulary every other module
//! (shapes, checks, driver, mock) speaks in. One route per dialect, except Gemini's, whose
//! path names the model and the method (`/v1beta/models/{model}:generateContent`).

use std::fmt;

use serde::Deserialize;

/// The client dialect a shape speaks; each has one route.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Dialect {
    /// OpenAI Chat Completions.
    Chat,
    /// Anthropic Messages.
    Messages,
    /// OpenAI Responses.
    Responses,
    /// Google's Gemini API (`generateContent`, `streamGenerateContent?alt=sse`); the model is
    /// in the path, never in the body.
    Gemini,
}

/// The Gemini API versions the mock serves (Google serves both with the same methods).
pub(crate) const GEMINI_VERSIONS: [&str; 2] = ["v1beta", "v1"];

/// A Gemini API method, the part of the path after the model's `:`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum GeminiMethod {
    /// `:generateContent`: one JSON answer.
    GenerateContent,
    /// `:streamGenerateContent`: SSE with `?alt=sse`, else a JSON array written in pieces.
    StreamGenerateContent,
    /// `:countTokens`: `{"totalTokens": N}`.
    CountTokens,
}

impl GeminiMethod {
    pub fn as_str(self) -> &'static str {
        match self {
            GeminiMethod::GenerateContent => "generateContent",
            GeminiMethod::StreamGenerateContent => "streamGenerateContent",
            GeminiMethod::CountTokens => "countTokens",
        }
    }
}

/// A Gemini API call as its path names it: `/{v1beta|v1}/models/{model}:{method}`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GeminiCall<'a> {
    /// `v1beta` or `v1`.
    pub version: &'a str,
    pub model: &'a str,
    pub method: GeminiMethod,
}

impl<'a> GeminiCall<'a> {
    /// Parses a request path (without the query); `None` when it is no Gemini call.
    pub fn parse(path: &'a str) -> Option<GeminiCall<'a>> {
        let (version, models) = match vertex_model(path, "google") {
            // Vertex's publisher path: served as Google's own `/v1/models/...`.
            Some(m) => ("v1", m),
            None => {
                let rest = path.strip_prefix('/')?;
                let (version, rest) = rest.split_once('/')?;
                if !GEMINI_VERSIONS.contains(&version) {
                    return None;
                }
                (version, rest.strip_prefix("models/")?)
            }
        };
        let (model, method) = models.rsplit_once(':')?;
        if model.is_empty() || model.contains('/') {
            return None;
        }
        let method = [
            GeminiMethod::GenerateContent,
            GeminiMethod::StreamGenerateContent,
            GeminiMethod::CountTokens,
        ]
        .into_iter()
        .find(|m| m.as_str() == method)?;
        Some(GeminiCall {
            version,
            model,
            method,
        })
    }
}

impl Dialect {
    /// Every dialect, in declaration order.
    pub const ALL: [Dialect; 4] = [
        Dialect::Chat,
        Dialect::Messages,
        Dialect::Responses,
        Dialect::Gemini,
    ];

    /// The dialect served on `path` (without the query), if any (the mock routes on it).
    pub(crate) fn from_path(path: &str) -> Option<Dialect> {
        if GeminiCall::parse(path).is_some() {
            return Some(Dialect::Gemini);
        }
        if let Some(d) = azure_dialect(path) {
            return Some(d);
        }
        if vertex_anthropic_model(path).is_some() {
            return Some(Dialect::Messages);
        }
        [Dialect::Chat, Dialect::Messages, Dialect::Responses]
            .into_iter()
            .find(|d| d.route() == path)
    }

    /// The route; for Gemini the prefix that the model and the method follow (see
    /// [`Dialect::request_path`]).
    pub fn route(self) -> &'static str {
        match self {
            Dialect::Chat => "/v1/chat/completions",
            Dialect::Messages => "/v1/messages",
            Dialect::Responses => "/v1/responses",
            Dialect::Gemini => "/v1beta/models/",
        }
    }

    /// The path and query a client of this dialect posts a request for `model` to: the
    /// route, or for Gemini `/v1beta/models/{model}:generateContent` (streaming:
    /// `:streamGenerateContent?alt=sse`).
    pub fn request_path(self, model: &str, stream: bool) -> String {
        match (self, stream) {
            (Dialect::Gemini, false) => format!("{}{model}:generateContent", self.route()),
            (Dialect::Gemini, true) => {
                format!("{}{model}:streamGenerateContent?alt=sse", self.route())
            }
            _ => self.route().to_owned(),
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Dialect::Chat => "chat",
            Dialect::Messages => "messages",
            Dialect::Responses => "responses",
            Dialect::Gemini => "gemini",
        }
    }

    /// Whether the model of a request of this dialect is in its path rather than its body
    /// (Gemini).
    pub fn model_in_path(self) -> bool {
        self == Dialect::Gemini
    }

    /// Whether a client of this dialect speaks Anthropic's protocol (`x-api-key`,
    /// `anthropic-version`).
    pub(crate) fn is_anthropic(self) -> bool {
        self == Dialect::Messages
    }

    /// The provider that speaks this dialect natively (passthrough, no translation).
    pub(crate) fn native_provider(self) -> Provider {
        match self {
            Dialect::Chat | Dialect::Responses => Provider::OpenAi,
            Dialect::Messages => Provider::Anthropic,
            Dialect::Gemini => Provider::Gemini,
        }
    }
}

/// What follows `/models/` in a Vertex AI publisher path,
/// `/v1/projects/{project}/locations/{location}/publishers/{publisher}/models/{model}:{method}`.
fn vertex_model<'a>(path: &'a str, publisher: &str) -> Option<&'a str> {
    let rest = path.strip_prefix("/v1/projects/")?;
    let (_project, rest) = rest.split_once("/locations/")?;
    let (_location, rest) = rest.split_once("/publishers/")?;
    let (p, rest) = rest.split_once("/models/")?;
    (p == publisher && !rest.is_empty()).then_some(rest)
}

/// Claude on Vertex AI: the model of a `.../publishers/anthropic/models/{model}:rawPredict`
/// or `:streamRawPredict` path (Anthropic's messages, the model in the path, not the body).
pub(crate) fn vertex_anthropic_model(path: &str) -> Option<&str> {
    let (model, method) = vertex_model(path, "anthropic")?.rsplit_once(':')?;
    let ok = matches!(method, "rawPredict" | "streamRawPredict");
    (ok && !model.is_empty() && !model.contains('/')).then_some(model)
}

/// The dialect of an Azure OpenAI path: `/openai/deployments/{deployment}/chat/completions`
/// and `/openai/responses` (dated API versions), `/openai/v1/chat/completions` and
/// `/openai/v1/responses` (the v1 API).
fn azure_dialect(path: &str) -> Option<Dialect> {
    let rest = path.strip_prefix("/openai/")?;
    match rest {
        "v1/chat/completions" => return Some(Dialect::Chat),
        "v1/responses" | "responses" => return Some(Dialect::Responses),
        _ => {}
    }
    let deployment = rest
        .strip_prefix("deployments/")?
        .strip_suffix("/chat/completions")?;
    (!deployment.is_empty() && !deployment.contains('/')).then_some(Dialect::Chat)
}

impl fmt::Display for Dialect {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.pad(self.as_str())
    }
}

/// The provider of the upstream a shape's model is routed to (the gateway config's
/// `provider`). A dialect the provider does not speak is translated by the gateway.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Provider {
    /// OpenAI: chat completions and responses.
    #[serde(rename = "openai")]
    OpenAi,
    /// Anthropic: messages.
    Anthropic,
    /// An OpenAI-compatible server: chat completions only.
    #[serde(rename = "openai-compatible")]
    OpenAiCompatible,
    /// Google's Gemini API (API key): generateContent and streamGenerateContent.
    Gemini,
    /// Azure OpenAI: chat completions and responses on Azure's paths
    /// (`/openai/deployments/{deployment}/chat/completions?api-version=...`).
    #[serde(rename = "azure-openai")]
    AzureOpenAi,
    /// Gemini on Google Vertex AI: the Gemini API on Vertex's publisher paths, a bearer token.
    Vertex,
    /// Claude on Google Vertex AI: messages at `:rawPredict` / `:streamRawPredict`.
    #[serde(rename = "vertex-anthropic")]
    VertexAnthropic,
    /// AWS Bedrock's Converse (`/model/{id}/converse`, `/converse-stream`): speaks no
    /// client dialect, every one is translated.
    Bedrock,
}

impl Provider {
    pub fn as_str(self) -> &'static str {
        match self {
            Provider::OpenAi => "openai",
            Provider::Anthropic => "anthropic",
            Provider::OpenAiCompatible => "openai-compatible",
            Provider::Gemini => "gemini",
            Provider::AzureOpenAi => "azure-openai",
            Provider::Vertex => "vertex",
            Provider::VertexAnthropic => "vertex-anthropic",
            Provider::Bedrock => "bedrock",
        }
    }

    /// Whether this provider serves `dialect` as is (the gateway's passthrough path).
    pub fn speaks(self, dialect: Dialect) -> bool {
        match self {
            Provider::OpenAi | Provider::AzureOpenAi => {
                matches!(dialect, Dialect::Chat | Dialect::Responses)
            }
            Provider::Anthropic | Provider::VertexAnthropic => dialect == Dialect::Messages,
            Provider::OpenAiCompatible => dialect == Dialect::Chat,
            Provider::Gemini | Provider::Vertex => dialect == Dialect::Gemini,
            Provider::Bedrock => false,
        }
    }
}

impl fmt::Display for Provider {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.pad(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn vertex_paths() {
        let g = "/v1/projects/p/locations/us-central1/publishers/google/models/gemini-2.5-pro:streamGenerateContent";
        let call = GeminiCall::parse(g).unwrap();
        assert_eq!(
            (call.version, call.model, call.method),
            ("v1", "gemini-2.5-pro", GeminiMethod::StreamGenerateContent)
        );
        assert_eq!(Dialect::from_path(g), Some(Dialect::Gemini));
        let a = "/v1/projects/p/locations/us-east5/publishers/anthropic/models/claude@2025:streamRawPredict";
        assert_eq!(vertex_anthropic_model(a), Some("claude@2025"));
        assert_eq!(Dialect::from_path(a), Some(Dialect::Messages));
        for bad in [
            "/v1/projects/p/locations/l/publishers/anthropic/models/c:predict",
            "/v1/projects/p/locations/l/publishers/anthropic/models/:rawPredict",
            "/v1/projects/p/locations/l/publishers/meta/models/c:rawPredict",
            "/v1/projects/p/publishers/anthropic/models/c:rawPredict",
        ] {
            assert_eq!(Dialect::from_path(bad), None, "{bad}");
        }
        assert!(GeminiCall::parse(
            "/v1/projects/p/locations/l/publishers/anthropic/models/m:generateContent"
        )
        .is_none());
    }

    #[test]
    fn gemini_paths_name_version_model_and_method() {
        let call = GeminiCall::parse("/v1beta/models/gemini-2.5-flash:streamGenerateContent");
        assert_eq!(
            call,
            Some(GeminiCall {
                version: "v1beta",
                model: "gemini-2.5-flash",
                method: GeminiMethod::StreamGenerateContent,
            })
        );
        let call = GeminiCall::parse("/v1/models/m:countTokens").unwrap();
        assert_eq!(
            (call.version, call.method),
            ("v1", GeminiMethod::CountTokens)
        );
        for path in [
            "/v2/models/m:generateContent",
            "/v1beta/models/:generateContent",
            "/v1beta/models/m",
            "/v1beta/models/m:embedContent",
            "/v1beta/tunedModels/m:generateContent",
            "/v1beta/models/a/b:generateContent",
            "/v1/chat/completions",
        ] {
            assert_eq!(GeminiCall::parse(path), None, "{path}");
        }
        assert_eq!(
            Dialect::from_path("/v1/models/m:generateContent"),
            Some(Dialect::Gemini)
        );
        assert_eq!(Dialect::from_path("/v1/messages"), Some(Dialect::Messages));
        assert_eq!(Dialect::from_path("/v1/models"), None);
        for (path, d) in [
            (
                "/openai/deployments/dep/chat/completions",
                Some(Dialect::Chat),
            ),
            ("/openai/v1/chat/completions", Some(Dialect::Chat)),
            ("/openai/v1/responses", Some(Dialect::Responses)),
            ("/openai/responses", Some(Dialect::Responses)),
            ("/openai/deployments//chat/completions", None),
            ("/openai/deployments/a/b/chat/completions", None),
            ("/openai/v1/messages", None),
        ] {
            assert_eq!(Dialect::from_path(path), d, "{path}");
        }
    }

    #[test]
    fn request_paths() {
        assert_eq!(
            Dialect::Gemini.request_path("g", false),
            "/v1beta/models/g:generateContent"
        );
        assert_eq!(
            Dialect::Gemini.request_path("g", true),
            "/v1beta/models/g:streamGenerateContent?alt=sse"
        );
        assert_eq!(
            Dialect::Chat.request_path("g", true),
            "/v1/chat/completions"
        );
        for d in Dialect::ALL {
            assert!(d.native_provider().speaks(d), "{d}");
        }
        assert!(!Provider::OpenAi.speaks(Dialect::Gemini));
        assert!(!Provider::Gemini.speaks(Dialect::Chat));
    }
}
