//! The three client dialects and the routes that speak them.

use crate::config::Provider;

/// A client-facing API dialect, fixed by the request path.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Dialect {
    /// OpenAI `POST /v1/chat/completions`.
    Chat,
    /// Anthropic `POST /v1/messages`.
    Messages,
    /// OpenAI `POST /v1/responses`.
    Responses,
}

impl Dialect {
    pub const ALL: [Dialect; 3] = [Dialect::Chat, Dialect::Messages, Dialect::Responses];

    /// The request path, which is also the path appended to an upstream's base URL.
    pub const fn path(self) -> &'static str {
        match self {
            Dialect::Chat => "/v1/chat/completions",
            Dialect::Messages => "/v1/messages",
            Dialect::Responses => "/v1/responses",
        }
    }

    /// Short label for metrics and logs.
    pub const fn label(self) -> &'static str {
        match self {
            Dialect::Chat => "chat_completions",
            Dialect::Messages => "messages",
            Dialect::Responses => "responses",
        }
    }

    pub const fn index(self) -> usize {
        self as usize
    }

    /// Whether an upstream of `provider` serves this dialect natively (v1: passthrough only).
    pub const fn served_by(self, provider: Provider) -> bool {
        matches!(
            (self, provider),
            (Dialect::Chat | Dialect::Responses, Provider::Openai)
                | (Dialect::Messages, Provider::Anthropic)
        )
    }

    /// The envelope family errors use: Anthropic's for messages, OpenAI's otherwise.
    pub const fn is_anthropic(self) -> bool {
        matches!(self, Dialect::Messages)
    }
}
