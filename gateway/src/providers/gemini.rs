//! Google's Gemini API (AI Studio): the model and the method in the path
//! (`/v1beta/models/{model}:generateContent`), the key in `x-goog-api-key`. Its URIs, one per
//! method, serve Vertex's Gemini models too (`super::vertex`).

use std::sync::Arc;

use http::Uri;

use super::{Home, KeyHeader, Quirks, Routes};
use crate::dialect::{GeminiMethod, Upstream};
use crate::upstream_url::UpstreamUrl;

pub(crate) const HOME: Home = Home {
    speaks: &[Upstream::Gemini],
    api: Upstream::Gemini,
    key_header: |_| KeyHeader::XGoogApiKey,
    default_base_url: None,
    signs_with_aws: false,
    routes: |r| {
        // Configs may name the model as Google's API lists it (`models/gemini-...`).
        let t = r.target;
        let model = t.model.strip_prefix("models/").unwrap_or(&t.model);
        Routes::Gemini(Arc::new(GeminiUris::new(
            r.base,
            &format!("/v1beta/models/{model}"),
        )))
    },
    quirks: Quirks::PLAIN,
};

/// The model is in a Gemini path, and so is the method: every URI a target may need.
pub(crate) struct GeminiUris {
    pub(crate) generate: Uri,
    pub(crate) stream_sse: Uri,
    pub(crate) stream_json: Uri,
    pub(crate) count_tokens: Uri,
}

impl GeminiUris {
    /// `models`: the path of the model, the method's suffix following (Google's
    /// `/v1beta/models/{model}`, Vertex's publisher path).
    pub(crate) fn new(base: &UpstreamUrl, models: &str) -> GeminiUris {
        let at = |suffix: &str| base.join(&format!("{models}{suffix}"));
        use GeminiMethod as M;
        GeminiUris {
            generate: at(M::Generate.upstream_suffix()),
            stream_sse: at(M::Stream { sse: true }.upstream_suffix()),
            stream_json: at(M::Stream { sse: false }.upstream_suffix()),
            count_tokens: at(M::CountTokens.upstream_suffix()),
        }
    }

    pub(crate) fn of(&self, m: GeminiMethod) -> &Uri {
        use GeminiMethod as M;
        match m {
            M::Generate => &self.generate,
            M::Stream { sse: true } => &self.stream_sse,
            M::Stream { sse: false } => &self.stream_json,
            M::CountTokens => &self.count_tokens,
        }
    }
}
