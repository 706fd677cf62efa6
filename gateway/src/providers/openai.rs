//! OpenAI: chat completions and responses at `/v1/...`, a bearer key.

use super::{dialect_path, Home, KeyHeader, Quirks, Routes};
use crate::dialect::Upstream;

pub(crate) const HOME: Home = Home {
    speaks: &[Upstream::Chat, Upstream::Responses],
    api: Upstream::Chat,
    key_header: |_| KeyHeader::Bearer,
    default_base_url: None,
    signs_with_aws: false,
    routes: |_| Routes::PerDialect(dialect_path),
    quirks: Quirks {
        max_completion_tokens: true,
        ..Quirks::PLAIN
    },
};
