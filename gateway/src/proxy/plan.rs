//! The plan of a forward: what each of the model's targets is sent (the client's body with
//! the model spliced in, or the request encoded in the target's dialect) and where (its
//! URI, the client's query where the target takes it). The target's provider quirks were
//! decided at start-up (`crate::providers::Quirks`); nothing here names a provider.

use bytes::Bytes;

use super::offload::{blocking_if, OFF_RUNTIME_BYTES};
use super::request;
use crate::dialect::Dialect;
use crate::state::Target;
use crate::translate::{self, hub, TranslateError};

/// Whether the gateway asks a passthrough stream for the usage its client did not: a chat
/// stream reports usage only when asked (the OpenAI SDK's default is not to), and without
/// it the limiter, the metrics and the log would see no tokens at all.
pub(crate) fn asks_usage(dialect: Dialect, head: &request::RequestHead<'_>) -> bool {
    dialect == Dialect::Chat && head.stream && !head.include_usage
}

/// What `forward` sends to each target.
pub(crate) struct Plan<'a> {
    pub(crate) targets: &'a [Target],
    /// The request in hub form when some target translates (or why it cannot be).
    pub(crate) translation: Option<&'a Result<hub::Request, TranslateError>>,
    pub(crate) default_max_tokens: u64,
    pub(crate) policy: translate::policy::Policy,
    /// The client's query string (`?beta=true` from Anthropic's SDK), its `key` removed:
    /// passed on to passthrough targets, meaningless to a translated one.
    pub(crate) query: Option<&'a str>,
    /// A Gemini client's method (the path says it, not the body).
    pub(crate) gemini: Option<request::GeminiMethod>,
}

impl Plan<'_> {
    /// The body for `target`: the client's bytes with the model spliced in (passthrough),
    /// or the request encoded in the target's dialect.
    pub(crate) fn body(
        &self,
        dialect: Dialect,
        target: &Target,
        body: &Bytes,
        head: &request::RequestHead<'_>,
    ) -> Result<translate::Encoded, TranslateError> {
        if !target.translates(dialect) {
            let body = if target.quirks.model_in_url {
                head.rewrite_model_as_vertex(body)
            } else if asks_usage(dialect, head) {
                head.rewrite_asking_usage(body, &target.model_json)
            } else {
                head.rewrite_model(body, &target.model_json)
            };
            return Ok(translate::Encoded {
                body,
                dropped: Vec::new(),
            });
        }
        let hub = match self.translation {
            Some(Ok(h)) => h,
            Some(Err(e)) => return Err(e.clone()),
            None => unreachable!("a translating target has a decoded request"),
        };
        let info = translate::TargetInfo {
            max_completion_tokens: target.quirks.max_completion_tokens,
            model: &target.model,
            default_max_tokens: self.default_max_tokens,
            reasoning: target.reasoning,
            sampling: target.sampling,
            policy: self.policy,
        };
        let big = body.len() >= OFF_RUNTIME_BYTES;
        let mut encoded = blocking_if(big, || {
            translate::encode_request(target.upstream, hub, info)
        })?;
        if target.quirks.model_in_url {
            // Claude on Vertex takes the model in the URL and refuses it in the body.
            if let Ok(h) = request::parse_head(&encoded.body) {
                let spliced = h.rewrite_model_as_vertex(&encoded.body);
                encoded.body = spliced;
            }
        }
        Ok(encoded)
    }

    /// The decoded request, when some target translates.
    pub(crate) fn hub(&self) -> Option<&hub::Request> {
        match self.translation {
            Some(Ok(h)) => Some(h),
            _ => None,
        }
    }

    /// The URI `target` is called at: a Gemini upstream's names the model and the method
    /// (a passthrough one the client's; a translated one streams server-sent events).
    pub(crate) fn uri(&self, dialect: Dialect, target: &Target, stream: bool) -> http::Uri {
        if let Some(g) = &target.gemini {
            let method = match (self.gemini, self.hub()) {
                (Some(m), _) if !target.translates(dialect) => m,
                (_, Some(h)) if h.stream => request::GeminiMethod::Stream { sse: true },
                _ => request::GeminiMethod::Generate,
            };
            return g.of(method).clone();
        }
        // Claude on Vertex: the method says whether it streams.
        if let Some(s) = target.stream_uri.as_ref().filter(|_| stream) {
            return s.clone();
        }
        // Some targets' URLs are the operator's (an Azure api-version, a Vertex project),
        // never the client's.
        let passes = !target.translates(dialect) && target.quirks.passes_query;
        match self.query.filter(|_| passes) {
            Some(q) => with_query(&target.uri, q),
            None => target.uri.clone(),
        }
    }

    /// Whether `target` will be called: not when the request cannot be translated for it.
    pub(crate) fn may_call(&self, dialect: Dialect, target: &Target) -> bool {
        !target.translates(dialect) || matches!(self.translation, Some(Ok(_)))
    }
}

/// `uri` with the client's query string (which hyper already checked is URI-safe).
fn with_query(uri: &http::Uri, query: &str) -> http::Uri {
    format!("{uri}?{query}")
        .parse()
        .unwrap_or_else(|_| uri.clone())
}
