//! Anthropic: messages at `/v1/messages`, the key in `x-api-key`, `anthropic-version`
//! always sent.

use super::{dialect_path, AnthropicHeaders, Home, KeyHeader, Quirks, Routes};
use crate::dialect::Upstream;

pub(crate) const HOME: Home = Home {
    speaks: &[Upstream::Messages],
    api: Upstream::Messages,
    key_header: |_| KeyHeader::XApiKey,
    default_base_url: None,
    signs_with_aws: false,
    routes: |_| Routes::PerDialect(dialect_path),
    quirks: Quirks {
        anthropic_headers: AnthropicHeaders::Required,
        ..Quirks::PLAIN
    },
};
