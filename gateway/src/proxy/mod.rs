//! Proxying an API request: authenticate, read the few fields needed, apply limits, forward
//! to the model's targets in failover order, and pass the answer back.

mod array_stream;
mod count_tokens;
pub(crate) mod encoding;
pub(crate) mod request;
mod rewrite;
mod stream;
mod translated;
mod upstream_stream;
mod usage_chunk;

use std::sync::atomic::Ordering::Relaxed;
use std::time::{Duration, Instant};

use bytes::Bytes;
use http::{header, HeaderMap, HeaderName, HeaderValue, Method, Request, Response, StatusCode};
use http_body_util::{BodyExt, Full, Limited};
use hyper::body::Incoming;

use crate::auth::AuthOutcome;
use crate::body::{full, GatewayBody};
use crate::buffer::{self, BufferError, BufferedBody};
use crate::dialect::{Dialect, Provider, Upstream};
use crate::error::{ApiError, ErrorKind};
use crate::headers;
use crate::metrics::UpstreamErrorKind;
use crate::providers::Credential;
use crate::ratelimit::{Refusal, Scope};
use crate::settle::Settlement;
use crate::state::Target;
use crate::translate::{self, hub, TranslateError};
use array_stream::ArrayStream;
use stream::AccountedStream;
use translated::TranslatedStream;

const X_REQUEST_ID: HeaderName = HeaderName::from_static("x-request-id");
const X_GATEWAY_REQUEST_ID: HeaderName = HeaderName::from_static("x-gateway-request-id");

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
    if parts.method != Method::POST {
        let msg = format!("{} requires POST", parts.uri.path());
        return method_not_allowed(c, dialect, "POST", msg);
    }

    let key = match gw.keys.authenticate(&parts.headers, parts.uri.query()) {
        AuthOutcome::Open => None,
        AuthOutcome::Key(i, k) => {
            c.key = Some(i);
            Some(k)
        }
        AuthOutcome::Missing => {
            let msg = if dialect == Dialect::Gemini {
                "missing API key: send `x-goog-api-key: <key>`, `?key=<key>` or `Authorization: Bearer <key>`"
            } else {
                "missing API key: send `Authorization: Bearer <key>` or `x-api-key: <key>`"
            };
            return fail(c, dialect, ErrorKind::Authentication, msg);
        }
        AuthOutcome::Invalid => {
            return fail(c, dialect, ErrorKind::Authentication, "invalid API key")
        }
    };
    let body = match read_body(
        &parts.headers,
        body,
        gw.max_body_bytes,
        gw.timeouts.body_read,
    )
    .await
    {
        Ok(b) => b,
        Err(RequestBodyError::ClientGone) => return client_gone(c, dialect),
        Err(RequestBodyError::Timeout(t)) => {
            let msg = format!(
                "the request body did not arrive within {} ms",
                t.as_millis()
            );
            let mut r = fail(c, dialect, ErrorKind::RequestTimeout, msg);
            // The rest of the body may still come; the connection cannot be reused.
            r.headers_mut()
                .insert(header::CONNECTION, HeaderValue::from_static("close"));
            return r;
        }
        Err(e) => return fail(c, dialect, e.kind(), e.to_string()),
    };
    // A body that translation will read is read once, whole, the head from it too; others
    // get the head scan, cheaper for small bodies. The model decides, guessed before the
    // head is read (from the path for Gemini).
    let translates = |m: &str| {
        gw.model_index
            .get(m)
            .is_some_and(|&mi| gw.models[mi].translates[dialect.index()])
    };
    let whole = gw.translating[dialect.index()]
        && match &gemini {
            Some(call) => translates(&call.model),
            None => request::model_hint(&body).is_none_or(translates),
        };
    // Reading a big body whole, then translating it, takes milliseconds: off the worker.
    let big = body.len() >= OFF_RUNTIME_BYTES;
    let parsed = blocking_if(big && whole, || {
        request::parse(&body, gemini.as_ref(), whole)
    });
    let (head, value) = match parsed {
        Ok(h) => h,
        Err(e) => return fail(c, dialect, ErrorKind::InvalidRequest, e.to_string()),
    };
    c.stream = head.stream;
    c.prompt_estimate = crate::usage::estimate_prompt(body.len());
    let Some(&mi) = gw.model_index.get(&*head.model) else {
        let msg = format!("model {:?} does not exist", head.model);
        return fail(c, dialect, ErrorKind::ModelNotFound, msg);
    };
    c.model = Some(mi);
    if let Some(k) = key {
        if !k.may_use(mi) {
            let msg = format!("this API key may not use model {:?}", head.model);
            return fail(c, dialect, ErrorKind::Permission, msg);
        }
    }
    let model = &gw.models[mi];
    let targets = &model.targets[dialect.index()];
    // Whatever the route, credentials in the query (`?key=`, `?api_key=`...) never go upstream.
    let query = crate::query::without_credentials(parts.uri.query());
    if op == Op::CountTokens {
        let query = query.as_deref();
        return count_tokens::answer(c, dialect, targets, &parts.headers, &body, &head, query)
            .await;
    }
    // Targets whose provider speaks another API get the request translated. It is parsed
    // once, here, so a field that cannot be translated is refused before any rate limit is
    // charged or upstream is called; passthrough-only models never get here.
    let translation = if model.translates[dialect.index()] {
        let first = targets.iter().find(|t| t.translates(dialect));
        let upstream = first.map_or(dialect.upstream(), |t| t.upstream);
        let reasoning = first.is_some_and(|t| t.reasoning);
        let decoded = blocking_if(big, || match value {
            Some(v) => {
                translate::decode_request_value(dialect, upstream, v, model.policy, reasoning)
            }
            None => translate::decode_request_text(
                dialect,
                upstream,
                head.text,
                model.policy,
                reasoning,
            ),
        });
        match decoded {
            Ok(mut h) => {
                if let Some(call) = &gemini {
                    // Gemini says in its path what others say in the body.
                    h.stream = head.stream;
                    h.view.json_array_stream =
                        call.method == (request::GeminiMethod::Stream { sse: false });
                }
                Some(Ok(h))
            }
            Err(e) if targets.iter().all(|t| t.translates(dialect)) => {
                return fail(c, dialect, refusal_kind(&e), e.to_string())
            }
            // A passthrough target may still serve it.
            Err(e) => Some(Err(e)),
        }
    } else {
        // A passthrough model of a translating dialect: the tree is not kept for the answer.
        drop(value);
        None
    };

    // Rate limits: the key's and the model's, both or neither charged.
    let key_limiter = key.and_then(|k| k.limiter.as_ref());
    match gw.limits.admit(key_limiter, model.limiter.as_ref()).await {
        Ok(()) => {}
        Err(Refusal::Limited(r)) => {
            let slot = gw.metrics.model(mi);
            let counter = match r.scope {
                Scope::Key => &slot.rate_limited_key,
                Scope::Model => &slot.rate_limited_model,
            };
            counter.fetch_add(1, Relaxed);
            return rate_limited(c, dialect, &r);
        }
        Err(Refusal::Unavailable) => return limits_unavailable(c, dialect),
    }

    let extra = &model.forward_headers;
    let plan = Plan {
        targets,
        translation: translation.as_ref(),
        default_max_tokens: model.default_max_tokens,
        policy: model.policy,
        query: query.as_deref(),
        gemini: gemini.as_ref().map(|g| g.method),
    };
    forward(c, dialect, &parts.headers, extra, &body, &head, plan).await
}

/// Whether the gateway asks a passthrough stream for the usage its client did not: a chat
/// stream reports usage only when asked (the OpenAI SDK's default is not to), and without
/// it the limiter, the metrics and the log would see no tokens at all.
fn asks_usage(dialect: Dialect, head: &request::RequestHead<'_>) -> bool {
    dialect == Dialect::Chat && head.stream && !head.include_usage
}

/// What `forward` sends to each target.
struct Plan<'a> {
    targets: &'a [Target],
    /// The request in hub form when some target translates (or why it cannot be).
    translation: Option<&'a Result<hub::Request, TranslateError>>,
    default_max_tokens: u64,
    policy: translate::policy::Policy,
    /// The client's query string (`?beta=true` from Anthropic's SDK), its `key` removed:
    /// passed on to passthrough targets, meaningless to a translated one.
    query: Option<&'a str>,
    /// A Gemini client's method (the path says it, not the body).
    gemini: Option<request::GeminiMethod>,
}

impl Plan<'_> {
    /// The body for `target`: the client's bytes with the model spliced in (passthrough),
    /// or the request encoded in the target's dialect.
    fn body(
        &self,
        dialect: Dialect,
        target: &Target,
        body: &Bytes,
        head: &request::RequestHead<'_>,
    ) -> Result<translate::Encoded, TranslateError> {
        if !target.translates(dialect) {
            let body = if target.provider == Provider::VertexAnthropic {
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
            provider: target.provider,
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
        if target.provider == Provider::VertexAnthropic {
            // Claude on Vertex takes the model in the URL and refuses it in the body.
            if let Ok(h) = request::parse_head(&encoded.body) {
                let spliced = h.rewrite_model_as_vertex(&encoded.body);
                encoded.body = spliced;
            }
        }
        Ok(encoded)
    }

    /// The decoded request, when some target translates.
    fn hub(&self) -> Option<&hub::Request> {
        match self.translation {
            Some(Ok(h)) => Some(h),
            _ => None,
        }
    }

    /// The URI `target` is called at: a Gemini upstream's names the model and the method
    /// (a passthrough one the client's; a translated one streams server-sent events).
    fn uri(&self, dialect: Dialect, target: &Target, stream: bool) -> http::Uri {
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
        // The URL of an Azure or a Vertex target is the operator's (its api-version, its
        // project), never the client's.
        let passes = !target.translates(dialect)
            && !matches!(
                target.provider,
                Provider::AzureOpenai | Provider::VertexAnthropic
            );
        match self.query.filter(|_| passes) {
            Some(q) => with_query(&target.uri, q),
            None => target.uri.clone(),
        }
    }

    /// Whether `target` will be called: not when the request cannot be translated for it.
    fn may_call(&self, dialect: Dialect, target: &Target) -> bool {
        !target.translates(dialect) || matches!(self.translation, Some(Ok(_)))
    }
}

async fn forward(
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
            let sent = tokio::time::timeout(gw.timeouts.first_byte, gw.client.request(req)).await;
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

/// A request translation refused: a 413 for a body over its node budget, else a 400.
fn refusal_kind(e: &TranslateError) -> ErrorKind {
    if e.too_large() {
        ErrorKind::TooLarge
    } else {
        ErrorKind::InvalidRequest
    }
}

/// `uri` with the client's query string (which hyper already checked is URI-safe).
fn with_query(uri: &http::Uri, query: &str) -> http::Uri {
    format!("{uri}?{query}")
        .parse()
        .unwrap_or_else(|_| uri.clone())
}

// Each argument is one thing the request is made of; a struct bundling them would only
// rename them at both call sites.
#[allow(clippy::too_many_arguments)]
fn upstream_request(
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
    if target.translates(dialect) && target.provider != crate::dialect::Provider::Anthropic {
        // An Anthropic client's version and beta headers mean nothing to an OpenAI API.
        h.remove("anthropic-version");
        h.remove("anthropic-beta");
    }
    if target.provider == Provider::VertexAnthropic {
        // Vertex takes the version in the body (`anthropic_version`), not as a header.
        h.remove("anthropic-version");
    }
    if target.provider == crate::dialect::Provider::Anthropic
        && !h.contains_key("anthropic-version")
    {
        h.insert("anthropic-version", HeaderValue::from_static("2023-06-01"));
    }
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

/// What the client asked of a passthrough answer.
#[derive(Clone, Copy)]
struct Asked {
    /// A stream (else one JSON answer: an upstream stream is refused, not relayed).
    stream: bool,
    /// The stream loses the usage-only chunk the gateway asked for.
    strip_usage: bool,
    /// Gemini's `streamGenerateContent` without `alt=sse`: a JSON array, streamed.
    json_array: bool,
}

/// Passes the upstream response back: status, the headers clients rely on, and the body
/// (streamed through as it arrives, or buffered when it is a plain JSON body).
/// `secrets`: what the request's credential sent; the caller redacts them from the answer
/// (`crate::redact::answer`), this watches for them where it cannot (compressed bytes).
async fn respond(
    mut c: Settlement,
    dialect: Dialect,
    resp: Response<Incoming>,
    secrets: Option<&std::sync::Arc<crate::redact::Secrets>>,
    asked: Asked,
) -> Response<GatewayBody> {
    let gw = c.state().clone();
    let (mut parts, upstream_body) = resp.into_parts();
    let gzip = encoding::is_gzip(&parts.headers);
    let sse = is_sse(&parts.headers);
    let mut out = Response::new(full(Bytes::new()));
    *out.status_mut() = parts.status;
    headers::retain_passing_back(&mut parts.headers, |_| true);
    *out.headers_mut() = parts.headers;
    set_request_ids(out.headers_mut(), &c.request_id);
    c.status = parts.status.as_u16();

    // An error is buffered whatever its type, so that it can be redacted whole.
    if parts.status.is_success() && sse {
        if !asked.stream {
            return stream_refused(c, dialect, "text/event-stream");
        }
        c.stream = true;
        *out.body_mut() = http_body_util::BodyExt::boxed(AccountedStream::new(
            upstream_body,
            c,
            gw.timeouts.idle,
            gzip,
            asked.strip_usage,
            secrets,
            dialect == Dialect::Gemini,
        ));
        return out;
    }
    if parts.status.is_success() && asked.json_array && has_type(out.headers(), b"application/json")
    {
        // Gemini's JSON-array stream: passed on as it comes, without a total cap, as SSE is.
        c.stream = true;
        let body = ArrayStream::new(upstream_body, c, gw.timeouts.idle, gzip, secrets);
        *out.body_mut() = http_body_util::BodyExt::boxed(body);
        return out;
    }

    match buffer::read(
        upstream_body,
        gw.timeouts.idle,
        gw.timeouts.response,
        gw.max_response_body_bytes,
        &gw.buffer_budget,
    )
    .await
    {
        Ok((mut bytes, reservation)) => {
            if parts.status.is_success() {
                let read = if dialect == Dialect::Gemini {
                    crate::usage::from_gemini_body
                } else {
                    crate::usage::from_body
                };
                let usage = if gzip {
                    let (z, max) = (bytes.clone(), gw.max_response_body_bytes);
                    let big = z.len() >= OFF_RUNTIME_BYTES / 16;
                    off_runtime(big, move || {
                        encoding::gunzip(&z, max).and_then(|p| read(&p))
                    })
                    .await
                } else {
                    read(&bytes)
                };
                c.usage = usage.unwrap_or_default();
            }
            if let Some(secrets) = secrets.filter(|_| gzip) {
                // Compressed bytes cannot be searched: an error always, and an answer that
                // carries a secret, goes to the client decoded (and its encoding header with
                // it), to be redacted.
                let (z, max) = (bytes.clone(), gw.max_response_body_bytes);
                let big = z.len() >= OFF_RUNTIME_BYTES / 16;
                let plain = off_runtime(big, move || encoding::gunzip(&z, max)).await;
                let leaks = plain.as_deref().is_some_and(|p| secrets.found_in(p));
                if !parts.status.is_success() || leaks {
                    let Some(plain) = plain else {
                        return fail(
                            c,
                            dialect,
                            ErrorKind::BadGateway,
                            "upstream error body could not be decoded",
                        );
                    };
                    out.headers_mut().remove(header::CONTENT_ENCODING);
                    bytes = Bytes::from(plain);
                }
            }
            *out.body_mut() = BufferedBody::new(bytes, reservation).boxed();
            out
        }
        Err(e) => buffer_failed(c, dialect, e),
    }
}

/// Like [`respond`] for a translated request: the answer (body, stream or error) is
/// re-encoded in the client's dialect; status and the headers clients rely on are kept.
async fn respond_translated(
    mut c: Settlement,
    dialect: Dialect,
    resp: Response<Incoming>,
    target: &Target,
    hub: &hub::Request,
) -> Response<GatewayBody> {
    let gw = c.state().clone();
    let (mut parts, upstream_body) = resp.into_parts();
    let gzip = encoding::is_gzip(&parts.headers);
    // Bedrock streams AWS's binary event stream, framed by the translator.
    let event_stream = is_sse(&parts.headers);
    let sse = event_stream
        || (target.upstream == Upstream::Converse
            && has_type(&parts.headers, b"application/vnd.amazon.eventstream"));
    let mut out = Response::new(full(Bytes::new()));
    *out.status_mut() = parts.status;
    // The body is re-encoded: its type and encoding are the gateway's, not the upstream's.
    headers::retain_passing_back(&mut parts.headers, |name| {
        name != header::CONTENT_TYPE && name != header::CONTENT_ENCODING
    });
    *out.headers_mut() = parts.headers;
    let h = out.headers_mut();
    // Every drop is visible to the client, on every answer (TRANSLATION.md).
    if !c.dropped.is_empty() {
        if let Ok(v) = HeaderValue::from_str(&c.dropped.join(", ")) {
            h.insert(headers::X_GATEWAY_DROPPED_FIELDS, v);
        }
    }
    set_request_ids(h, &c.request_id);
    c.status = parts.status.as_u16();

    if parts.status.is_success() && sse {
        if !hub.stream {
            let ty = if event_stream {
                "text/event-stream"
            } else {
                "application/vnd.amazon.eventstream"
            };
            return stream_refused(c, dialect, ty);
        }
        c.stream = true;
        // Gemini's stream without `alt=sse` is one JSON array.
        let ty = if hub.view.json_array_stream {
            "application/json"
        } else {
            "text/event-stream"
        };
        out.headers_mut()
            .insert(header::CONTENT_TYPE, HeaderValue::from_static(ty));
        let translator = translate::stream::Translator::new(
            dialect,
            target.upstream,
            hub.include_usage,
            hub.view.clone(),
        )
        .answering_for(&target.model);
        *out.body_mut() =
            TranslatedStream::new(upstream_body, translator, c, gw.timeouts.idle, gzip).boxed();
        return out;
    }

    let (bytes, reservation) = match buffer::read(
        upstream_body,
        gw.timeouts.idle,
        gw.timeouts.response,
        gw.max_response_body_bytes,
        &gw.buffer_budget,
    )
    .await
    {
        Ok(r) => r,
        Err(e) => return buffer_failed(c, dialect, e),
    };
    let plain = if gzip {
        let (z, max) = (bytes.clone(), gw.max_response_body_bytes);
        let big = z.len() >= OFF_RUNTIME_BYTES / 16;
        match off_runtime(big, move || encoding::gunzip(&z, max)).await {
            Some(p) => Bytes::from(p),
            None => {
                return fail(
                    c,
                    dialect,
                    ErrorKind::BadGateway,
                    "upstream body could not be decoded",
                )
            }
        }
    } else {
        bytes
    };
    let translated = if parts.status.is_success() {
        let up = target.upstream;
        let result = if plain.len() < OFF_RUNTIME_BYTES {
            translate::translate_response_of(dialect, up, &hub.view, &plain, &target.model)
        } else {
            let (view, body) = (hub.view.clone(), plain.clone());
            let model = target.model.clone();
            off_runtime(true, move || {
                translate::translate_response_of(dialect, up, &view, &body, &model)
            })
            .await
        };
        match result {
            Ok((b, usage)) => {
                c.usage = usage.accounting();
                b
            }
            Err(e) => {
                if let Some(slot) = c.model_slot() {
                    slot.upstream_error(UpstreamErrorKind::Protocol);
                }
                return fail(c, dialect, ErrorKind::BadGateway, e.to_string());
            }
        }
    } else {
        let (up, status) = (target.upstream, parts.status.as_u16());
        off_runtime(plain.len() >= OFF_RUNTIME_BYTES, move || {
            translate::errors::translate(dialect, up, status, &plain)
        })
        .await
    };
    out.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    *out.body_mut() = BufferedBody::new(translated, reservation).boxed();
    out
}

/// A client that asked for one JSON answer got a stream: relaying it would hand the client
/// what it cannot read (an SDK's JSON parser fed events), so it is refused, saying why.
fn stream_refused(c: Settlement, dialect: Dialect, ty: &str) -> Response<GatewayBody> {
    if let Some(slot) = c.model_slot() {
        slot.upstream_error(UpstreamErrorKind::Protocol);
    }
    let msg = format!(
        "the upstream answered a request for one JSON answer with a stream ({ty}); a stream is relayed only to a request that asks for one"
    );
    fail(c, dialect, ErrorKind::BadGateway, msg)
}

/// Work on a body this big (translating it, a client's request, an answer, an error body or
/// a stream's events; gunzipping a sixteenth of it) leaves the runtime's worker, which would
/// otherwise stall every other request it carries, the health check among them. Measured
/// (`bench responsive`, one worker): translation costs 6 to 60 ns a byte (a Messages answer
/// to 60 for a chat request with many messages, parsed, decoded and encoded), so 64 KiB
/// holds the worker a few ms; with 1 MiB (requests and error bodies were never moved),
/// /healthz waited 195-247 ms p99 under 4 clients' 1,000,000-byte requests, 17-32 ms now.
const OFF_RUNTIME_BYTES: usize = 64 << 10;

/// Runs `work` here when it is small, else on the blocking pool.
async fn off_runtime<T: Send + 'static>(big: bool, work: impl FnOnce() -> T + Send + 'static) -> T {
    if !big {
        return work();
    }
    match tokio::task::spawn_blocking(work).await {
        Ok(t) => t,
        Err(e) => std::panic::resume_unwind(e.into_panic()),
    }
}

/// Runs `work` in place, the worker's other tasks handed to another thread meanwhile (for
/// work on a body that cannot move: a stream's state). Only a multi-threaded runtime can
/// do that; on another, `work` just runs.
fn blocking<T>(work: impl FnOnce() -> T) -> T {
    use tokio::runtime::{Handle, RuntimeFlavor};
    match Handle::try_current().map(|h| h.runtime_flavor()) {
        Ok(RuntimeFlavor::MultiThread) => tokio::task::block_in_place(work),
        _ => work(),
    }
}

/// [`blocking`] when `big`, else `work` right here.
fn blocking_if<T>(big: bool, work: impl FnOnce() -> T) -> T {
    if big {
        blocking(work)
    } else {
        work()
    }
}

/// `text/event-stream`, in any case (media types are case-insensitive), parameters allowed.
fn is_sse(headers: &HeaderMap) -> bool {
    has_type(headers, b"text/event-stream")
}

/// Whether the content type is `ty` (in any case, parameters allowed).
fn has_type(headers: &HeaderMap, ty: &[u8]) -> bool {
    headers.get(header::CONTENT_TYPE).is_some_and(|v| {
        let v = v.as_bytes().trim_ascii_start();
        v.len() >= ty.len()
            && v[..ty.len()].eq_ignore_ascii_case(ty)
            && v[ty.len()..]
                .first()
                .is_none_or(|&b| b == b';' || b == b' ' || b == b'\t')
    })
}

/// `x-gateway-request-id` is always ours; `x-request-id` is the upstream's when it sent one
/// (what SDKs report and providers' support asks for), ours otherwise.
pub(crate) fn set_request_ids(h: &mut HeaderMap, request_id: &str) {
    if let Ok(v) = HeaderValue::from_str(request_id) {
        if !h.contains_key(X_REQUEST_ID) {
            h.insert(X_REQUEST_ID, v.clone());
        }
        h.insert(X_GATEWAY_REQUEST_ID, v);
    }
}

/// Why a client body could not be read.
#[derive(Debug, thiserror::Error)]
enum RequestBodyError {
    #[error("request body is larger than {0} bytes")]
    TooLarge(usize),
    #[error("request body did not arrive within {0:?}")]
    Timeout(Duration),
    /// The client went away mid-body: nobody is left to answer.
    #[error("client disconnected")]
    ClientGone,
    #[error("request body could not be read (malformed framing)")]
    Malformed,
}

impl RequestBodyError {
    fn kind(&self) -> ErrorKind {
        match self {
            RequestBodyError::TooLarge(_) => ErrorKind::TooLarge,
            RequestBodyError::Timeout(_) => ErrorKind::RequestTimeout,
            RequestBodyError::ClientGone | RequestBodyError::Malformed => ErrorKind::InvalidRequest,
        }
    }
}

/// Reads the whole body within `max` bytes and `timeout` (for the whole body, so a
/// trickle is cut as surely as a stall).
async fn read_body(
    headers: &HeaderMap,
    body: Incoming,
    max: usize,
    timeout: Duration,
) -> Result<Bytes, RequestBodyError> {
    let declared = headers
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    if declared.is_some_and(|n| n > max as u64) {
        return Err(RequestBodyError::TooLarge(max));
    }
    let declared = declared.map_or(0, |n| n as usize);
    match tokio::time::timeout(timeout, collect(Limited::new(body, max), declared)).await {
        Err(_) => Err(RequestBodyError::Timeout(timeout)),
        Ok(Ok(b)) => Ok(b),
        Ok(Err(e)) if e.is::<http_body_util::LengthLimitError>() => {
            Err(RequestBodyError::TooLarge(max))
        }
        Ok(Err(e)) if client_left(&*e) => Err(RequestBodyError::ClientGone),
        Ok(Err(_)) => Err(RequestBodyError::Malformed),
    }
}

/// The body's bytes in one buffer. A body that came in one frame is that frame; others are
/// copied frame by frame into a buffer of the declared length, each frame freed as it is
/// copied: collecting every frame first and joining them held the body twice (an 8 MB body
/// cost +15 MiB passed through, issue 49).
async fn collect(
    mut body: Limited<Incoming>,
    declared: usize,
) -> Result<Bytes, Box<dyn std::error::Error + Send + Sync>> {
    let mut first: Option<Bytes> = None;
    let mut joined = bytes::BytesMut::new();
    while let Some(frame) = body.frame().await {
        let Ok(data) = frame?.into_data() else {
            continue;
        };
        match first.take() {
            None if joined.is_empty() => first = Some(data),
            Some(f) => {
                joined.reserve(declared.max(f.len() + data.len()));
                joined.extend_from_slice(&f);
                joined.extend_from_slice(&data);
            }
            None => joined.extend_from_slice(&data),
        }
    }
    Ok(match first {
        Some(f) => f,
        None => joined.freeze(),
    })
}

/// Whether a body read failed because the client went away (the connection ended or was
/// reset mid-body), rather than because the body's framing was bad.
fn client_left(e: &(dyn std::error::Error + 'static)) -> bool {
    let mut source = Some(e);
    while let Some(s) = source {
        if let Some(h) = s.downcast_ref::<hyper::Error>() {
            if h.is_incomplete_message() {
                return true;
            }
        }
        if let Some(io) = s.downcast_ref::<std::io::Error>() {
            use std::io::ErrorKind as K;
            return matches!(
                io.kind(),
                K::UnexpectedEof | K::ConnectionReset | K::ConnectionAborted | K::BrokenPipe
            );
        }
        source = s.source();
    }
    false
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

/// A gateway-made error in the route's dialect.
pub(crate) fn fail(
    mut c: Settlement,
    dialect: Dialect,
    kind: ErrorKind,
    message: impl Into<String>,
) -> Response<GatewayBody> {
    let err = ApiError::new(kind, message);
    c.status = err.status().as_u16();
    c.error = Some(error_label(kind));
    let mut resp = err.into_response(dialect.envelope());
    set_request_ids(resp.headers_mut(), &c.request_id);
    resp
}

/// 405 with `Allow`, in the route's dialect.
pub(crate) fn method_not_allowed(
    c: Settlement,
    dialect: Dialect,
    allow: &'static str,
    message: impl Into<String>,
) -> Response<GatewayBody> {
    let mut resp = fail(c, dialect, ErrorKind::MethodNotAllowed, message);
    resp.headers_mut()
        .insert(header::ALLOW, HeaderValue::from_static(allow));
    resp
}

/// The client left mid-body: recorded as nginx's 499. Nobody reads the answer, but should
/// the client still be there it gets a 400 in its envelope.
fn client_gone(mut c: Settlement, dialect: Dialect) -> Response<GatewayBody> {
    c.status = 499;
    c.error = Some("client_disconnected");
    let err = ApiError::new(ErrorKind::InvalidRequest, "the request body ended early");
    let mut resp = err.into_response(dialect.envelope());
    set_request_ids(resp.headers_mut(), &c.request_id);
    resp
}

/// `when_down = "closed"` while Redis cannot be asked: a 503 the client may retry soon.
fn limits_unavailable(c: Settlement, dialect: Dialect) -> Response<GatewayBody> {
    let msg = "rate limits cannot be checked right now (their store is unreachable); retry shortly";
    let mut resp = fail(c, dialect, ErrorKind::Overloaded, msg.to_owned());
    resp.headers_mut()
        .insert(http::header::RETRY_AFTER, http::HeaderValue::from(1u32));
    resp
}

fn rate_limited(
    c: Settlement,
    dialect: Dialect,
    r: &crate::ratelimit::Rejection,
) -> Response<GatewayBody> {
    let msg = format!(
        "rate limit exceeded ({} per minute); retry after {} s",
        r.what,
        r.retry_after.as_secs_f64().ceil()
    );
    let mut resp = fail(c, dialect, ErrorKind::RateLimited, msg);
    r.write_headers(resp.headers_mut());
    debug_assert_eq!(resp.status(), StatusCode::TOO_MANY_REQUESTS);
    resp
}

const fn error_label(kind: ErrorKind) -> &'static str {
    match kind {
        ErrorKind::InvalidRequest => "invalid_request",
        ErrorKind::Authentication => "authentication",
        ErrorKind::Permission => "permission",
        ErrorKind::NotFound => "not_found",
        ErrorKind::ModelNotFound => "model_not_found",
        ErrorKind::TooLarge => "too_large",
        ErrorKind::RateLimited => "rate_limited",
        ErrorKind::BadGateway => "bad_gateway",
        ErrorKind::GatewayTimeout => "gateway_timeout",
        ErrorKind::RequestTimeout => "body_read_timeout",
        ErrorKind::MethodNotAllowed => "method_not_allowed",
        ErrorKind::UpgradeRequired => "websocket_refused",
        ErrorKind::Overloaded => "overloaded",
        ErrorKind::UriTooLong => "uri_too_long",
        ErrorKind::HeadersTooLarge => "headers_too_large",
        ErrorKind::CredentialsUnavailable => "credentials_unavailable",
    }
}

/// The answer when a non-streaming upstream body could not be buffered (passthrough and
/// translated alike): a stall or read error counts as an upstream error of the model.
fn buffer_failed(c: Settlement, dialect: Dialect, e: BufferError) -> Response<GatewayBody> {
    let (kind, upstream) = match e {
        BufferError::Stalled | BufferError::Deadline => {
            (ErrorKind::GatewayTimeout, Some(UpstreamErrorKind::Timeout))
        }
        BufferError::Read => (ErrorKind::BadGateway, Some(UpstreamErrorKind::Read)),
        BufferError::TooLarge => (ErrorKind::BadGateway, None),
        BufferError::Overloaded => (ErrorKind::Overloaded, None),
    };
    if let (Some(u), Some(slot)) = (upstream, c.model_slot()) {
        slot.upstream_error(u);
    }
    fail(c, dialect, kind, e.to_string())
}
