//! The three client dialects and the routes that speak them.

use serde::Deserialize;

/// The upstream API a target speaks. A client dialect the provider does not speak is
/// translated (see `crate::translate` and TRANSLATION.md). Configured per target
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
}

impl Dialect {
    pub(crate) const ALL: [Dialect; 3] = [Dialect::Chat, Dialect::Messages, Dialect::Responses];

    /// The request path, which is also the path appended to an upstream's base URL.
    pub(crate) const fn path(self) -> &'static str {
        match self {
            Dialect::Chat => "/v1/chat/completions",
            Dialect::Messages => "/v1/messages",
            Dialect::Responses => "/v1/responses",
        }
    }

    pub(crate) const fn index(self) -> usize {
        self as usize
    }

    /// Whether an upstream of `provider` serves this dialect natively (passthrough).
    pub(crate) const fn served_by(self, provider: Provider) -> bool {
        matches!(
            (self, provider),
            (Dialect::Chat | Dialect::Responses, Provider::Openai)
                | (Dialect::Chat, Provider::OpenaiCompatible)
                | (Dialect::Messages, Provider::Anthropic)
        )
    }

    /// The dialect a request in this dialect is sent upstream in: itself where `provider`
    /// speaks it (passthrough), else the provider's dialect it is translated to.
    pub(crate) const fn upstream_for(self, provider: Provider) -> Dialect {
        if self.served_by(provider) {
            return self;
        }
        match provider {
            Provider::Anthropic => Dialect::Messages,
            Provider::Openai | Provider::OpenaiCompatible => Dialect::Chat,
        }
    }

    /// The envelope family errors use: Anthropic's for messages, OpenAI's otherwise.
    pub(crate) const fn is_anthropic(self) -> bool {
        matches!(self, Dialect::Messages)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_provider_serves_every_dialect() {
        use Dialect::*;
        let cases = [
            (Chat, Provider::Openai, Chat),
            (Responses, Provider::Openai, Responses),
            (Messages, Provider::Openai, Chat),
            (Chat, Provider::Anthropic, Messages),
            (Responses, Provider::Anthropic, Messages),
            (Messages, Provider::Anthropic, Messages),
            (Chat, Provider::OpenaiCompatible, Chat),
            (Messages, Provider::OpenaiCompatible, Chat),
            (Responses, Provider::OpenaiCompatible, Chat),
        ];
        for (client, provider, upstream) in cases {
            assert_eq!(
                client.upstream_for(provider),
                upstream,
                "{client:?} {provider:?}"
            );
        }
    }
}
