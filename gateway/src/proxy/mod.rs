//! Proxying an API request, one step a file, each importing only the steps below it:
//! `admission` (key, body, head, model, translation, rate limits), `forward` (the targets
//! in failover order, as `plan` says), `respond` (the answer passed back or re-encoded),
//! `refuse` (every answer the gateway makes itself); `count_tokens` answers token counts.
//! [`handle`] tells a request's story top to bottom; docs/architecture.md walks it.

mod admission;
mod array_stream;
mod count_tokens;
pub(crate) mod encoding;
mod forward;
mod offload;
mod plan;
mod refuse;
pub(crate) mod request;
mod respond;
mod rewrite;
mod stream;
mod translated;
mod upstream_stream;
mod usage_chunk;

use http::{Method, Request, Response};
use hyper::body::Incoming;

use crate::body::GatewayBody;
use crate::dialect::Dialect;
use crate::settle::Settlement;
use plan::Plan;
pub(crate) use refuse::{fail, method_not_allowed, set_request_ids};

/// What a request to a dialect's route asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Op {
    /// An answer from the model (the dialect's main route).
    Generate,
    /// Anthropic's `/v1/messages/count_tokens`: the prompt's size, nothing generated.
    CountTokens,
}

/// `gemini`: a Gemini route's model and method, from its path.
pub(crate) async fn handle(
    mut c: Settlement,
    dialect: Dialect,
    op: Op,
    req: Request<Incoming>,
    gemini: Option<request::GeminiCall>,
) -> Response<GatewayBody> {
    let gw = c.state().clone();
    let (parts, body) = req.into_parts();
    // Admission: a POST, by a known key, with a body in bounds naming a model it may use.
    if parts.method != Method::POST {
        let msg = format!("{} requires POST", parts.uri.path());
        return method_not_allowed(c, dialect, "POST", msg);
    }
    let key = match admission::authenticate(&mut c, &gw, dialect, &parts) {
        Ok(k) => k,
        Err(r) => return r.answer(c, dialect),
    };
    let body = match admission::body(&gw, &parts.headers, body).await {
        Ok(b) => b,
        Err(r) => return r.answer(c, dialect),
    };
    let (head, value) = match admission::head(&gw, dialect, &body, gemini.as_ref()) {
        Ok(h) => h,
        Err(r) => return r.answer(c, dialect),
    };
    c.stream = head.stream;
    c.prompt_estimate = crate::usage::estimate_prompt(body.len());
    let mi = match admission::model(&mut c, &gw, key, &head) {
        Ok(mi) => mi,
        Err(r) => return r.answer(c, dialect),
    };
    let model = &gw.models[mi];
    let targets = &model.targets[dialect.index()];
    // Whatever the route, credentials in the query (`?key=`, `?api_key=`...) never go upstream.
    let query = crate::query::without_credentials(parts.uri.query());
    if op == Op::CountTokens {
        let query = query.as_deref();
        return count_tokens::answer(c, dialect, targets, &parts.headers, &body, &head, query)
            .await;
    }
    // Targets whose provider speaks another API get the request translated: decoded once,
    // refused here (before any limit is charged) if no target can take it.
    let big = body.len() >= offload::OFF_RUNTIME_BYTES;
    let translation =
        match admission::translation(dialect, model, targets, &head, value, gemini.as_ref(), big) {
            Ok(t) => t,
            Err(r) => return r.answer(c, dialect),
        };
    if let Err(r) = admission::admit(&gw, key, model, mi).await {
        return r.answer(c, dialect);
    }

    // Forward: to each target in turn, as the plan says; the answer responded and redacted.
    let plan = Plan {
        targets,
        translation: translation.as_ref(),
        default_max_tokens: model.default_max_tokens,
        policy: model.policy,
        query: query.as_deref(),
        gemini: gemini.as_ref().map(|g| g.method),
    };
    let extra = &model.forward_headers;
    forward::forward(c, dialect, &parts.headers, extra, &body, &head, plan).await
}
