//! Responding: the upstream's answer passed back to the client, as it came (passthrough:
//! status, the headers clients rely on, the body streamed or buffered) or re-encoded in the
//! client's dialect (translated). What the client gets is redacted by the caller
//! (`crate::redact::answer`).

use bytes::Bytes;
use http::{header, HeaderMap, HeaderValue, Response};
use http_body_util::BodyExt;
use hyper::body::Incoming;

use super::array_stream::ArrayStream;
use super::encoding;
use super::offload::{off_runtime, OFF_RUNTIME_BYTES};
use super::refuse::{buffer_failed, fail, set_request_ids, stream_refused};
use super::stream::AccountedStream;
use super::translated::TranslatedStream;
use crate::body::{full, GatewayBody};
use crate::buffer::{self, BufferedBody};
use crate::dialect::{Dialect, Upstream};
use crate::error::ErrorKind;
use crate::headers;
use crate::metrics::UpstreamErrorKind;
use crate::settle::Settlement;
use crate::state::{State, Target};
use crate::translate::{self, hub};

/// What the client asked of a passthrough answer.
#[derive(Clone, Copy)]
pub(crate) struct Asked {
    /// A stream (else one JSON answer: an upstream stream is refused, not relayed).
    pub(crate) stream: bool,
    /// The stream loses the usage-only chunk the gateway asked for.
    pub(crate) strip_usage: bool,
    /// Gemini's `streamGenerateContent` without `alt=sse`: a JSON array, streamed.
    pub(crate) json_array: bool,
}

/// Passes the upstream response back: status, the headers clients rely on, and the body
/// (streamed through as it arrives, or buffered when it is a plain JSON body).
/// `secrets`: what the request's credential sent; the caller redacts them from the answer
/// (`crate::redact::answer`), this watches for them where it cannot (compressed bytes).
pub(crate) async fn respond(
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

    match buffered(&gw, upstream_body).await {
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
pub(crate) async fn respond_translated(
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

    let (bytes, reservation) = match buffered(&gw, upstream_body).await {
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

/// `text/event-stream`, in any case (media types are case-insensitive), parameters allowed.
pub(crate) fn is_sse(headers: &HeaderMap) -> bool {
    has_type(headers, b"text/event-stream")
}

/// Whether the content type is `ty` (in any case, parameters allowed).
pub(crate) fn has_type(headers: &HeaderMap, ty: &[u8]) -> bool {
    headers.get(header::CONTENT_TYPE).is_some_and(|v| {
        let v = v.as_bytes().trim_ascii_start();
        v.len() >= ty.len()
            && v[..ty.len()].eq_ignore_ascii_case(ty)
            && v[ty.len()..]
                .first()
                .is_none_or(|&b| b == b';' || b == b' ' || b == b'\t')
    })
}

/// A non-streaming upstream body, whole, within the answer's size, time and the buffers'
/// shared budget.
async fn buffered(
    gw: &State,
    body: Incoming,
) -> Result<(Bytes, buffer::Reservation), buffer::BufferError> {
    let t = &gw.timeouts;
    let (max, budget) = (gw.max_response_body_bytes, &gw.buffer_budget);
    buffer::read(body, t.idle, t.response, max, budget).await
}
