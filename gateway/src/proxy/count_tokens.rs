//! `POST /v1/messages/count_tokens`, Anthropic's token count of a prompt (Claude Code asks
//! it). A model with an Anthropic target gets the upstream's exact count; any other model an
//! estimate, marked as one: no other provider counts tokens without generating.

use std::time::Instant;

use bytes::Bytes;
use http::{header, HeaderMap, HeaderName, HeaderValue, Response, StatusCode};

use super::request::RequestHead;
use super::{fail, respond, set_request_ids, upstream_request};
use crate::body::{full, GatewayBody};
use crate::dialect::Dialect;
use crate::error::ErrorKind;
use crate::settle::Settlement;
use crate::state::Target;

/// On an estimated count: how it was estimated.
const X_GATEWAY_ESTIMATE: HeaderName = HeaderName::from_static("x-gateway-token-estimate");

pub(super) async fn answer(
    c: Settlement,
    targets: &[Target],
    client_headers: &HeaderMap,
    body: &Bytes,
    head: &RequestHead<'_>,
    query: Option<&str>,
) -> Response<GatewayBody> {
    match targets.iter().find(|t| !t.translates(Dialect::Messages)) {
        Some(t) => upstream(c, t, client_headers, body, head, query).await,
        None => estimate(c, body),
    }
}

async fn upstream(
    mut c: Settlement,
    t: &Target,
    client_headers: &HeaderMap,
    body: &Bytes,
    head: &RequestHead<'_>,
    query: Option<&str>,
) -> Response<GatewayBody> {
    let gw = c.state().clone();
    let path = match query {
        Some(q) => format!("{}/count_tokens?{q}", t.uri),
        None => format!("{}/count_tokens", t.uri),
    };
    let Ok(uri) = path.parse() else {
        return fail(
            c,
            Dialect::Messages,
            ErrorKind::BadGateway,
            "bad upstream URL",
        );
    };
    let req = upstream_request(
        t,
        uri,
        Dialect::Messages,
        client_headers,
        &[],
        head.rewrite_model(body, &t.model_json),
        &c.request_id,
    );
    let start = Instant::now();
    c.upstream_start = Some(start);
    match tokio::time::timeout(gw.timeouts.first_byte, gw.client.request(req)).await {
        Ok(Ok(resp)) => {
            c.upstream_ttfb = Some(start.elapsed());
            respond(c, Dialect::Messages, resp, t, false).await
        }
        Ok(Err(_)) => fail(
            c,
            Dialect::Messages,
            ErrorKind::BadGateway,
            "upstream connection failed",
        ),
        Err(_) => fail(
            c,
            Dialect::Messages,
            ErrorKind::GatewayTimeout,
            "upstream did not answer in time",
        ),
    }
}

fn estimate(mut c: Settlement, body: &Bytes) -> Response<GatewayBody> {
    let tokens = crate::usage::estimate_prompt(body.len());
    let json = format!("{{\"input_tokens\":{tokens}}}");
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
