//! Translation between the client dialects, for targets whose provider speaks another API.
//!
//! A dialect the target speaks never comes here: it is passed through byte for byte
//! (`crate::proxy`). Everything else goes through one hub representation ([`hub`]): each
//! dialect's codec decodes into it and encodes out of it, so a new dialect costs one pair
//! of mappings rather than one per other dialect.
//!
//! - [`chat`], [`messages`], [`responses`], [`gemini`]: each dialect's request and
//!   response codec.
//! - [`stream`]: event-by-event stream translation (upstream decoders, client encoders).
//! - [`errors`]: upstream error bodies re-rendered in the client's envelope.
//!
//! Each field the target's API lacks is mapped, dropped or refused ([`policy`]); one 400
//! names every refused field ([`TranslateError`]); TRANSLATION.md lists the policy field by
//! field.

pub(crate) mod chat;
pub(crate) mod converse;
pub(crate) mod errors;
mod field;
pub(crate) mod gemini;
pub(crate) mod hub;
pub(crate) mod json;
pub(crate) mod messages;
pub(crate) mod policy;
pub(crate) mod responses;
pub(crate) mod sampling;
pub(crate) mod stream;
mod target;
mod walk;
pub(crate) mod wire;

use bytes::Bytes;

use crate::dialect::{Dialect, Upstream};
use errors::{api_name, not_json};
pub(crate) use errors::{over_budget, TranslateError, UpstreamShapeError};
pub(crate) use target::TargetInfo;

/// The label naming a translation in the access log, e.g. `messages->chat`.
pub(crate) const fn label(client: Dialect, upstream: Upstream) -> &'static str {
    match (client, upstream) {
        (Dialect::Messages, Upstream::Chat) => "messages->chat",
        (Dialect::Chat, Upstream::Messages) => "chat->messages",
        (Dialect::Responses, Upstream::Messages) => "responses->messages",
        (Dialect::Responses, Upstream::Chat) => "responses->chat",
        (Dialect::Messages, Upstream::Responses) => "messages->responses",
        (Dialect::Chat, Upstream::Responses) => "chat->responses",
        (Dialect::Gemini, Upstream::Chat) => "gemini->chat",
        (Dialect::Gemini, Upstream::Messages) => "gemini->messages",
        (Dialect::Chat, Upstream::Gemini) => "chat->gemini",
        (Dialect::Messages, Upstream::Gemini) => "messages->gemini",
        (Dialect::Responses, Upstream::Gemini) => "responses->gemini",
        (Dialect::Chat, Upstream::Converse) => "chat->converse",
        (Dialect::Messages, Upstream::Converse) => "messages->converse",
        (Dialect::Responses, Upstream::Converse) => "responses->converse",
        (Dialect::Gemini, Upstream::Converse) => "gemini->converse",
        _ => "none",
    }
}

/// What decoding takes of the first translating target: what it refuses belongs in the
/// request's one 400 (the single list of verdicts), before any target is called.
#[derive(Debug, Clone, Copy)]
pub(crate) struct FirstTarget {
    /// Its API, named in refusals.
    pub(crate) upstream: Upstream,
    /// Whether it takes a reasoning effort.
    pub(crate) reasoning: bool,
    /// Its model's sampling rule.
    pub(crate) sampling: sampling::Rule,
}

/// Decodes a client body of `client` dialect into the hub, under `policy`, for a first
/// target of `upstream` whose model the sampling table does not know; `reasoning`: whether
/// it takes a reasoning effort. (The proxy calls [`decode_request_text`].)
#[cfg(test)]
pub(crate) fn decode_request(
    client: Dialect,
    upstream: Upstream,
    body: &[u8],
    policy: policy::Policy,
    reasoning: bool,
) -> Result<hub::Request, TranslateError> {
    let first = FirstTarget {
        upstream,
        reasoning,
        sampling: sampling::Rule::of(upstream, "", None),
    };
    match std::str::from_utf8(body) {
        Ok(text) => decode_request_text(client, first, text, policy),
        Err(_) => Err(not_json(
            serde_json::from_slice::<serde_json::Value>(body).err(),
        )),
    }
}

/// [`decode_request`] of a JSON value, through the whole policy as the proxy does (default:
/// lenient; no reasoning control): the codecs' unit tests' decoder.
#[cfg(test)]
pub(crate) fn decode_lenient(
    client: Dialect,
    upstream: Upstream,
    v: &serde_json::Value,
) -> Result<hub::Request, TranslateError> {
    decode_request(
        client,
        upstream,
        v.to_string().as_bytes(),
        policy::Policy::default(),
        false,
    )
}

/// [`decode_request`] of a body already known to be UTF-8 (the proxy's request head
/// checked it: checking 4 KB again cost ~1,800 instructions).
pub(crate) fn decode_request_text(
    client: Dialect,
    first: FirstTarget,
    text: &str,
    policy: policy::Policy,
) -> Result<hub::Request, TranslateError> {
    let v = json::read(text).map_err(|e| match e {
        json::ReadError::Json(e) => not_json(Some(e)),
        json::ReadError::Budget(over) => TranslateError::TooLarge(over),
    })?;
    decode_request_value(client, first, v, policy)
}

/// [`decode_request`] of a body already read (the proxy reads it once, for its head too).
pub(crate) fn decode_request_value(
    client: Dialect,
    first: FirstTarget,
    mut v: serde_json::Value,
    policy: policy::Policy,
) -> Result<hub::Request, TranslateError> {
    let mut verdicts = policy::Verdicts::new(policy);
    let mut r = match client {
        Dialect::Chat => chat::decode_request(&mut v, &mut verdicts)?,
        Dialect::Messages => messages::decode_request(&mut v, &mut verdicts)?,
        Dialect::Responses => responses::decode_request(&mut v, &mut verdicts)?,
        Dialect::Gemini => gemini::decode_request(&mut v, &mut verdicts)?,
    };
    // Strict: the reasoning fields the first target cannot take belong in the same one 400
    // (encoding drops them per target otherwise).
    if policy.strict {
        no_reasoning(&r, first.reasoning, &mut verdicts);
    }
    // The sampling parameters the first target refuses (an Anthropic client's top_k where
    // it has no top-k), in the same one 400 (and before failover picks a target that cannot
    // take them: the passthrough target answers then).
    sampling::refusals(&r, first.sampling, &mut verdicts);
    r.dropped = verdicts.finish(api_name(first.upstream))?;
    Ok(r)
}

/// The reasoning fields of `req` are dropped (or, strict, refused) for a target that takes
/// no reasoning control.
fn no_reasoning(req: &hub::Request, target_reasons: bool, verdicts: &mut policy::Verdicts) {
    if target_reasons {
        return;
    }
    for field in req.reasoning.iter().flat_map(|r| &r.fields) {
        verdicts.client_side(
            field,
            "this target takes no reasoning control (`reasoning = true` on a target whose model does)",
        );
    }
}

/// The client's `strict` on tools is dropped (a hint: the client validates the arguments
/// either way) for a target whose API has no such flag (Gemini's function declarations).
fn no_strict(req: &hub::Request, verdicts: &mut policy::Verdicts) {
    for s in req.tools.iter().filter_map(|t| t.strict.as_ref()) {
        verdicts.hint(&s.field);
    }
}

/// The client's prompt-cache breakpoints are dropped (hints: caching never changes the
/// answer) for a target whose API takes none: `encode_request` calls this for each such
/// dialect.
fn no_cache(req: &hub::Request, verdicts: &mut policy::Verdicts) {
    for c in &req.cache {
        verdicts.hint(c.field);
    }
}

/// An encoded upstream body, and the fields dropped for this target on top of the
/// request's own (a reasoning effort the target's model takes no control for, prompt-cache
/// breakpoints its API has no place for).
pub(crate) struct Encoded {
    pub(crate) body: Bytes,
    pub(crate) dropped: Vec<String>,
}

/// Encodes a hub request in the `upstream` dialect for `target`.
pub(crate) fn encode_request(
    upstream: Upstream,
    req: &hub::Request,
    target: TargetInfo<'_>,
) -> Result<Encoded, TranslateError> {
    let mut verdicts = policy::Verdicts::new(target.policy);
    no_reasoning(req, target.reasoning, &mut verdicts);
    // What the target's model cannot take of the sampling parameters (a copy only then).
    let trimmed = sampling::trim(req, target.sampling, &mut verdicts);
    let req = trimmed.as_ref().unwrap_or(req);
    // Anthropic takes JSON output only with a schema.
    if req.response_format == Some(hub::ResponseFormat::Json) && upstream == Upstream::Messages {
        verdicts.refuse(
            "generationConfig.responseMimeType",
            "Anthropic takes JSON output only with a schema (responseSchema)",
        );
    }
    let body = match upstream {
        Upstream::Chat => {
            no_cache(req, &mut verdicts);
            chat::to_bytes_sized(&chat::encode_request(req, target), req.encoded_size_hint())
        }
        Upstream::Messages => chat::to_bytes_sized(
            &messages::encode_request(req, target)?,
            req.encoded_size_hint(),
        ),
        Upstream::Gemini => {
            // Gemini caches prompts by itself (implicit caching): breakpoints have no place.
            no_cache(req, &mut verdicts);
            no_strict(req, &mut verdicts);
            gemini::encode_request(req, target)?
        }
        Upstream::Converse => {
            no_cache(req, &mut verdicts);
            if converse_verdicts(req, target, &mut verdicts) {
                // Refused images: `finish` below answers the one 400 naming every field.
                Vec::new()
            } else {
                converse::encode_request(req)?
            }
        }
        Upstream::Responses => unreachable!("no provider is translated to Responses"),
    };
    let dropped = verdicts.finish(api_name(upstream))?;
    Ok(Encoded {
        body: Bytes::from(body),
        dropped,
    })
}

/// Translates a complete successful upstream body (in `upstream` dialect) for the client.
#[cfg(test)]
pub(crate) fn translate_response(
    client: Dialect,
    upstream: Upstream,
    view: &hub::ClientView,
    body: &[u8],
) -> Result<(Bytes, hub::Usage), UpstreamShapeError> {
    translate_response_of(client, upstream, view, body, "")
}

/// [`translate_response`] of an answer from `model` (the target's upstream model), the
/// model the answer names when the upstream's names none (Converse's).
pub(crate) fn translate_response_of(
    client: Dialect,
    upstream: Upstream,
    view: &hub::ClientView,
    body: &[u8],
    model: &str,
) -> Result<(Bytes, hub::Usage), UpstreamShapeError> {
    // Before any decoder builds a tree or a vector of parts.
    json::budget::check(body).map_err(|e| over_budget(upstream, "answer", e))?;
    let mut resp = match upstream {
        Upstream::Chat => chat::decode_response(body)?,
        Upstream::Messages => messages::decode_response(body)?,
        Upstream::Gemini => gemini::decode_response(body)?,
        Upstream::Converse => converse::decode_response(body)?,
        Upstream::Responses => {
            return Err(UpstreamShapeError(
                "Responses upstreams are not translated".into(),
            ))
        }
    };
    if resp.model.is_empty() {
        model.clone_into(&mut resp.model);
    }
    let calls = resp
        .output
        .iter()
        .filter(|o| matches!(o, hub::Output::ToolCall { .. }));
    if calls.count() > hub::MAX_TOOL_CALLS {
        return Err(UpstreamShapeError(hub::too_many_tool_calls()));
    }
    let out = match client {
        Dialect::Chat => chat::encode_response(&resp),
        Dialect::Messages => messages::encode_response(&resp),
        Dialect::Responses => chat::to_bytes(&responses::encode_response(&resp, view)),
        Dialect::Gemini => gemini::encode_response(&resp)?,
    };
    Ok((Bytes::from(out), resp.usage))
}

/// What Converse has no place for: one tool call per turn, JSON output, images by URL,
/// reasoning control (not mapped yet); `top_k` outside Anthropic's models is `sampling`'s. Whether an
/// image was refused (the body is then not encoded).
fn converse_verdicts(
    req: &hub::Request,
    target: TargetInfo<'_>,
    verdicts: &mut policy::Verdicts,
) -> bool {
    if req.parallel_tool_calls == Some(false) {
        verdicts.refuse(
            "parallel_tool_calls",
            "AWS Bedrock's Converse cannot limit a turn to one tool call",
        );
    }
    if req.response_format.is_some() {
        verdicts.refuse(
            "generationConfig.responseMimeType",
            "AWS Bedrock's Converse takes no JSON output mode",
        );
    }
    let images = converse::refused_images(req);
    let refused = !images.is_empty();
    for (field, why) in images {
        verdicts.refuse(field, why);
    }
    if target.reasoning {
        no_reasoning(req, false, verdicts);
    }
    refused
}
