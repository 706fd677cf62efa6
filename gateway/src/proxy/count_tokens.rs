//! Token counts of a prompt: Anthropic's `POST /v1/messages/count_tokens` (Claude Code asks
//! it) and Gemini's `:countTokens` (Gemini CLI and Google's SDK ask it). A model with a target
//! of the client's own provider gets the upstream's exact count; any other model an
//! estimate, marked as one: OpenAI counts no tokens without generating, and a count in
//! another provider's tokens would be no exacter than the estimate.

use std::time::Instant;

use bytes::Bytes;
use http::{header, HeaderMap, HeaderName, HeaderValue, Response, StatusCode};

use super::forward::upstream_request;
use super::refuse::{fail, set_request_ids};
use super::request::RequestHead;
use super::respond::{respond, Asked};
use crate::body::{full, GatewayBody};
use crate::dialect::Dialect;
use crate::error::ErrorKind;
use crate::settle::Settlement;
use crate::state::Target;

/// On an estimated count: how it was estimated.
const X_GATEWAY_ESTIMATE: HeaderName = HeaderName::from_static("x-gateway-token-estimate");

pub(super) async fn answer(
    c: Settlement,
    dialect: Dialect,
    targets: &[Target],
    client_headers: &HeaderMap,
    body: &Bytes,
    head: &RequestHead<'_>,
    query: Option<&str>,
) -> Response<GatewayBody> {
    // Not every provider is asked (`crate::providers::Quirks::counts_tokens`).
    let exact = |t: &&Target| !t.translates(dialect) && t.quirks.counts_tokens;
    match targets.iter().find(exact) {
        Some(t) => upstream(c, dialect, t, client_headers, body, head, query).await,
        None => estimate(c, dialect, body),
    }
}

async fn upstream(
    mut c: Settlement,
    dialect: Dialect,
    t: &Target,
    client_headers: &HeaderMap,
    body: &Bytes,
    head: &RequestHead<'_>,
    query: Option<&str>,
) -> Response<GatewayBody> {
    let gw = c.state().clone();
    let uri = match &t.gemini {
        Some(g) => Ok(g.count_tokens.clone()),
        None => match query {
            Some(q) => format!("{}/count_tokens?{q}", t.uri),
            None => format!("{}/count_tokens", t.uri),
        }
        .parse(),
    };
    let Ok(uri) = uri else {
        return fail(c, dialect, ErrorKind::BadGateway, "bad upstream URL");
    };
    let Ok(credential) = t.auth.credential(gw.timeouts.first_byte).await else {
        let msg = format!(
            "upstream credentials unavailable (provider {})",
            t.provider.name()
        );
        return fail(c, dialect, ErrorKind::CredentialsUnavailable, msg);
    };
    let req = upstream_request(
        t,
        credential.as_deref(),
        uri,
        dialect,
        client_headers,
        &[],
        head.rewrite_model(body, &t.model_json),
        &c.request_id,
    );
    let secrets = credential.as_ref().and_then(|c| c.secrets(req.headers()));
    let start = Instant::now();
    c.upstream_start = Some(start);
    match tokio::time::timeout(gw.timeouts.first_byte, crate::client::send(&gw.client, req)).await {
        Ok(Ok(resp)) => {
            c.upstream_ttfb = Some(start.elapsed());
            c.provider = Some(t.provider);
            if let Some(slot) = c.model_slot() {
                slot.answered(t.provider);
            }
            let asked = Asked {
                // The body's own `stream` (Claude Code sends its request's), as passed on.
                stream: head.stream,
                strip_usage: false,
                json_array: false,
            };
            let answer = respond(c, dialect, resp, secrets.as_ref(), asked).await;
            crate::redact::answer(answer, secrets.as_ref())
        }
        Ok(Err(_)) => fail(
            c,
            dialect,
            ErrorKind::BadGateway,
            "upstream connection failed",
        ),
        Err(_) => fail(
            c,
            dialect,
            ErrorKind::GatewayTimeout,
            "upstream did not answer in time",
        ),
    }
}

fn estimate(mut c: Settlement, dialect: Dialect, body: &Bytes) -> Response<GatewayBody> {
    let tokens = crate::usage::estimate_prompt(body.len());
    let json = if dialect == Dialect::Gemini {
        format!("{{\"totalTokens\":{tokens}}}")
    } else {
        format!("{{\"input_tokens\":{tokens}}}")
    };
    c.status = StatusCode::OK.as_u16();
    let mut r = Response::new(full(Bytes::from(json)));
    let h = r.headers_mut();
    h.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    h.insert(
        X_GATEWAY_ESTIMATE,
        HeaderValue::from_static("request bytes / 4"),
    );
    set_request_ids(h, &c.request_id);
    r
}
