//! The three client dialects and the upstream providers: the vocabulary every other module
//! (shapes, checks, driver, mock) speaks in. One route per dialect.

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
}

impl Dialect {
    /// The dialect served on `path`, if any (the mock routes on it).
    pub(crate) fn from_path(path: &str) -> Option<Dialect> {
        [Dialect::Chat, Dialect::Messages, Dialect::Responses]
            .into_iter()
            .find(|d| d.route() == path)
    }

    pub fn route(self) -> &'static str {
        match self {
            Dialect::Chat => "/v1/chat/completions",
            Dialect::Messages => "/v1/messages",
            Dialect::Responses => "/v1/responses",
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Dialect::Chat => "chat",
            Dialect::Messages => "messages",
            Dialect::Responses => "responses",
        }
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
        }
    }
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
}

impl Provider {
    pub fn as_str(self) -> &'static str {
        match self {
            Provider::OpenAi => "openai",
            Provider::Anthropic => "anthropic",
            Provider::OpenAiCompatible => "openai-compatible",
        }
    }

    /// Whether this provider serves `dialect` as is (the gateway's passthrough path).
    pub fn speaks(self, dialect: Dialect) -> bool {
        match self {
            Provider::OpenAi => dialect != Dialect::Messages,
            Provider::Anthropic => dialect == Dialect::Messages,
            Provider::OpenAiCompatible => dialect == Dialect::Chat,
        }
    }
}

impl fmt::Display for Provider {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.pad(self.as_str())
    }
}
