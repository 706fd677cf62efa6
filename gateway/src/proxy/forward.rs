//! Forwarding: the request sent to the model's targets in failover order, each with its
//! credential (refreshed once on a refused token), until one answers; the answer handed to
//! the respond step and redacted; or the last failure refused.

use std::sync::atomic::Ordering::Relaxed;
use std::time::Instant;

use bytes::Bytes;
use http::{header, HeaderMap, HeaderName, HeaderValue, Method, Request, Response, StatusCode};
use http_body_util::Full;

use super::plan::{asks_usage, Plan};
use super::refuse::{fail, refusal_kind, X_REQUEST_ID};
use super::request;
use super::respond::{respond, respond_translated, Asked};
use crate::body::GatewayBody;
use crate::dialect::Dialect;
use crate::error::ErrorKind;
use crate::headers;
use crate::metrics::UpstreamErrorKind;
use crate::providers::Credential;
use crate::settle::Settlement;
use crate::state::Target;
use crate::translate::{self, TranslateError};

pub(crate) async fn forward(
    mut c: Settlement,
    dialect: Dialect,
    client_headers: &HeaderMap,
    extra_headers: &[HeaderName],
    body: &Bytes,
    head: &request::RequestHead<'_>,
    plan: Plan<'_>,
) -> Response<GatewayBody> {
    let gw = c.state().clone();
    let mi = c.model.expect("forward is called with a resolved model");
    let slot = gw.metrics.model(mi);
    let targets = plan.targets;
    let mut failure: (ErrorKind, std::borrow::Cow<'static, str>) =
        (ErrorKind::BadGateway, "no upstream target answered".into());
    // Why a target was skipped without being called (its translation failed).
    let mut untranslatable: Option<TranslateError> = None;
    let mut tried = 0usize;
    for (i, target) in targets.iter().enumerate() {
        // The last target that will be called: its 5xx goes to the client as it is.
        let last = !targets[i + 1..].iter().any(|t| plan.may_call(dialect, t));
        let encoded = match plan.body(dialect, target, body, head) {
            Ok(b) => b,
            Err(e) => {
                untranslatable.get_or_insert(e);
                continue;
            }
        };
        if tried > 0 {
            slot.failovers.fetch_add(1, Relaxed);
        }
        tried += 1;
        // A refreshing credential is at hand unless none is valid: then this waits for the
        // refresher, as long as an upstream may take to answer.
        let mut credential = match target.auth.credential(gw.timeouts.first_byte).await {
            Ok(cred) => cred,
            Err(_) => {
                failure = (
                    ErrorKind::CredentialsUnavailable,
                    format!(
                        "upstream credentials unavailable for model {:?} target {i} (provider {})",
                        &*gw.models[mi].name,
                        target.provider.name()
                    )
                    .into(),
                );
                continue;
            }
        };
        // The body again for one retry, kept only where a refused token can be replaced
        // (cloning a body built in a Vec allocates).
        let mut spare = target.auth.refreshes().then(|| encoded.body.clone());
        let mut body = encoded.body;
        let (sent, start, secrets) = loop {
            let req = upstream_request(
                target,
                credential.as_deref(),
                plan.uri(dialect, target, head.stream),
                dialect,
                client_headers,
                extra_headers,
                body,
                &c.request_id,
            );
            // Everything this attempt sends that an answer must not echo (a signature is
            // only known once the request is signed).
            let secrets = credential.as_ref().and_then(|c| c.secrets(req.headers()));
            let start = Instant::now();
            c.upstream_start = Some(start);
            let sent =
                tokio::time::timeout(gw.timeouts.first_byte, crate::client::send(&gw.client, req))
                    .await;
            // A refused token (expired early, revoked): fetch a new one and try once more,
            // before anything reached the client.
            if let (Ok(Ok(resp)), Some(cred)) = (&sent, &credential) {
                if resp.status() == StatusCode::UNAUTHORIZED && spare.is_some() {
                    target.auth.invalidate(cred);
                    gw.metrics.credential_retries.fetch_add(1, Relaxed);
                    if let Ok(fresh) = target.auth.credential(gw.timeouts.first_byte).await {
                        credential = fresh;
                        body = spare.take().expect("checked above");
                        continue;
                    }
                }
            }
            break (sent, start, secrets);
        };
        let resp = match sent {
            Ok(Ok(resp)) => resp,
            Ok(Err(e)) => {
                let kind = classify(&e);
                slot.upstream_error(kind);
                let (kind, msg) = match kind {
                    UpstreamErrorKind::Timeout => {
                        (ErrorKind::GatewayTimeout, "upstream connect timed out")
                    }
                    UpstreamErrorKind::Protocol => {
                        (ErrorKind::BadGateway, "upstream sent a malformed response")
                    }
                    UpstreamErrorKind::Read => {
                        (ErrorKind::BadGateway, "upstream closed the connection")
                    }
                    _ => (ErrorKind::BadGateway, "upstream connection failed"),
                };
                failure = (kind, msg.into());
                continue;
            }
            Err(_) => {
                slot.upstream_error(UpstreamErrorKind::Timeout);
                failure = (
                    ErrorKind::GatewayTimeout,
                    "upstream did not answer in time".into(),
                );
                continue;
            }
        };
        // hyper skips 100 and 103 itself; any other 1xx as the final answer (101 to a POST
        // that asked for no upgrade) is a broken upstream, not an answer to relay.
        if resp.status().is_informational() {
            slot.upstream_error(UpstreamErrorKind::Protocol);
            failure = (
                ErrorKind::BadGateway,
                "upstream sent an informational (1xx) status as its final answer".into(),
            );
            continue;
        }
        if resp.status().is_server_error() {
            slot.upstream_error(UpstreamErrorKind::Http5xx);
            if !last {
                continue;
            }
        }
        c.upstream_ttfb = Some(start.elapsed());
        c.provider = Some(target.provider);
        slot.answered(target.provider);
        let answer = if let (true, Some(hub)) = (target.translates(dialect), plan.hub()) {
            c.translated = Some(translate::label(dialect, target.upstream));
            slot.translated.fetch_add(1, Relaxed);
            c.dropped = hub.dropped.clone();
            c.dropped.extend(encoded.dropped);
            respond_translated(c, dialect, resp, target, hub).await
        } else {
            let asked = Asked {
                stream: head.stream,
                strip_usage: asks_usage(dialect, head),
                json_array: plan.gemini == Some(request::GeminiMethod::Stream { sse: false }),
            };
            respond(c, dialect, resp, secrets.as_ref(), asked).await
        };
        // Whatever the path, what the client gets of this upstream's answer is redacted here.
        return crate::redact::answer(answer, secrets.as_ref());
    }
    if let (0, Some(e)) = (tried, untranslatable) {
        return fail(c, dialect, refusal_kind(&e), e.to_string());
    }
    fail(c, dialect, failure.0, failure.1.into_owned())
}

// Each argument is one thing the request is made of; a struct bundling them would only
// rename them at both call sites.
#[allow(clippy::too_many_arguments)]
pub(crate) fn upstream_request(
    target: &Target,
    credential: Option<&Credential>,
    uri: http::Uri,
    dialect: Dialect,
    client_headers: &HeaderMap,
    extra_headers: &[HeaderName],
    body: Bytes,
    request_id: &str,
) -> Request<Full<Bytes>> {
    // The body goes in last: a signature (Bedrock) is computed over it first.
    let mut req = Request::new(Full::new(Bytes::new()));
    *req.method_mut() = Method::POST;
    *req.uri_mut() = uri;
    let h = req.headers_mut();
    headers::forward(h, client_headers, extra_headers);
    // Anthropic's version and beta headers: set, kept or dropped as the provider needs.
    target
        .quirks
        .anthropic_headers
        .apply(h, target.translates(dialect));
    if let Ok(v) = HeaderValue::from_str(request_id) {
        h.insert(X_REQUEST_ID, v);
    }
    // Last, where the client would have put it.
    if let Some(host) = &target.host {
        h.insert(header::HOST, host.clone());
    }
    // After the host: a signature (Bedrock) covers it, the URI and the body.
    if let Some(c) = credential {
        let (mut parts, _) = req.into_parts();
        if let Err(e) = c.apply(&mut parts.headers, &parts.uri, target.host.as_ref(), &body) {
            // Cannot happen for the URIs built at start-up; unsigned, the upstream refuses
            // the request (403) and the client hears of it in its own envelope.
            eprintln!("gateway: {e}");
        }
        return Request::from_parts(parts, Full::new(body));
    }
    *req.body_mut() = Full::new(body);
    req
}

/// Which upstream failure a client error is: a connect failure, a timeout, a malformed
/// answer, or a connection that broke after it was made.
fn classify(e: &hyper_util::client::legacy::Error) -> UpstreamErrorKind {
    if is_timeout(e) {
        return UpstreamErrorKind::Timeout;
    }
    if e.is_connect() {
        return UpstreamErrorKind::Connect;
    }
    let mut source: Option<&(dyn std::error::Error + 'static)> = std::error::Error::source(e);
    while let Some(s) = source {
        if let Some(h) = s.downcast_ref::<hyper::Error>() {
            if h.is_parse() || h.is_parse_status() || h.is_parse_too_large() {
                return UpstreamErrorKind::Protocol;
            }
            return UpstreamErrorKind::Read;
        }
        source = s.source();
    }
    UpstreamErrorKind::Read
}

fn is_timeout(e: &hyper_util::client::legacy::Error) -> bool {
    let mut source: Option<&(dyn std::error::Error + 'static)> = std::error::Error::source(e);
    while let Some(s) = source {
        if let Some(io) = s.downcast_ref::<std::io::Error>() {
            if io.kind() == std::io::ErrorKind::TimedOut {
                return true;
            }
        }
        source = s.source();
    }
    false
}
