//! What differs between providers that speak the same API: the path (and query) a target's
//! requests go to on its base URL, and the header its key travels in. Computed once per
//! target at start-up; the hot path only reads the results.

use http::{HeaderName, HeaderValue};
use serde::Deserialize;

use crate::dialect::{Provider, Upstream};

pub(crate) mod auth;
pub(crate) mod aws_creds;
pub(crate) mod google;
pub(crate) mod refresh;
pub(crate) mod sigv4;

pub(crate) use auth::{Credential, UpstreamAuth};

/// An Azure OpenAI target's credential (`[[models.targets]] auth`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
pub(crate) enum AzureAuth {
    /// A resource key, sent as `api-key: KEY`.
    #[serde(rename = "api-key")]
    ApiKey,
    /// A Microsoft Entra ID access token, sent as `Authorization: Bearer TOKEN`.
    #[serde(rename = "entra")]
    Entra,
}

/// The header an upstream key travels in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum KeyHeader {
    /// `Authorization: Bearer KEY`: OpenAI, compatible servers, Azure with an Entra token.
    Bearer,
    /// `x-api-key: KEY`: Anthropic.
    XApiKey,
    /// `x-goog-api-key: KEY`: Gemini.
    XGoogApiKey,
    /// `api-key: KEY`: Azure OpenAI's resource keys.
    ApiKey,
}

impl KeyHeader {
    pub(crate) const fn of(provider: Provider, azure: Option<AzureAuth>) -> KeyHeader {
        match (provider, azure) {
            (Provider::Openai | Provider::OpenaiCompatible, _) => KeyHeader::Bearer,
            (Provider::Anthropic, _) => KeyHeader::XApiKey,
            (Provider::Gemini, _) => KeyHeader::XGoogApiKey,
            // An OAuth access token (Vertex takes no API key here).
            (Provider::Vertex | Provider::VertexAnthropic, _) => KeyHeader::Bearer,
            (Provider::AzureOpenai, Some(AzureAuth::Entra)) => KeyHeader::Bearer,
            // A Bedrock API key (the other keys sign: `Credential::sigv4`).
            (Provider::Bedrock, _) => KeyHeader::Bearer,
            (Provider::AzureOpenai, _) => KeyHeader::ApiKey,
        }
    }
}

/// An upstream key that cannot be sent as a header value (control bytes and the like).
#[derive(Debug, thiserror::Error)]
#[error("the upstream key is not a valid HTTP header value")]
pub(crate) struct InvalidUpstreamKey;

/// The header carrying an upstream key, marked sensitive (never logged by hyper, kept out of
/// HPACK tables). Fails if the key is not a valid header value.
pub(crate) fn upstream_auth(
    header: KeyHeader,
    key: &str,
) -> Result<(HeaderName, HeaderValue), InvalidUpstreamKey> {
    let (name, value) = match header {
        KeyHeader::Bearer => ("authorization", format!("Bearer {key}")),
        KeyHeader::XApiKey => ("x-api-key", key.to_owned()),
        KeyHeader::XGoogApiKey => ("x-goog-api-key", key.to_owned()),
        KeyHeader::ApiKey => ("api-key", key.to_owned()),
    };
    let mut value = HeaderValue::try_from(value).map_err(|_| InvalidUpstreamKey)?;
    value.set_sensitive(true);
    Ok((HeaderName::from_static(name), value))
}

/// The Azure OpenAI API version that needs none in the URL: `/openai/v1/...`.
pub(crate) const AZURE_V1: &str = "v1";

/// The path and query, on the base URL, of a target of `provider` sent `upstream` requests
/// (Gemini's name the model and the method: `crate::state::GeminiUris`). An Azure target's
/// `api_version` was validated ([`check_url_token`]) and is set.
pub(crate) fn upstream_path(
    provider: Provider,
    upstream: Upstream,
    deployment: &str,
    api_version: Option<&str>,
) -> String {
    if provider != Provider::AzureOpenai {
        return upstream.path().to_owned();
    }
    match (api_version.unwrap_or(AZURE_V1), upstream) {
        (AZURE_V1, d) => format!("/openai{}", d.path()),
        (v, Upstream::Responses) => format!("/openai/responses?api-version={v}"),
        (v, _) => format!("/openai/deployments/{deployment}/chat/completions?api-version={v}"),
    }
}

/// The path of a Bedrock model's Converse call, `stream` or not: `/model/{id}/converse`
/// with the id percent-encoded as botocore does (all but `A-Za-z0-9-._~`), so an id's `:`
/// and an ARN's `/` stay inside one segment. The signer encodes the path once more, as
/// AWS expects (plan 1.1).
pub(crate) fn bedrock_path(model: &str, stream: bool) -> String {
    let mut p = String::with_capacity(model.len() + 24);
    p.push_str("/model/");
    for b in model.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~') {
            p.push(b as char);
        } else {
            p.push_str(&format!("%{b:02X}"));
        }
    }
    p.push_str(if stream {
        "/converse-stream"
    } else {
        "/converse"
    });
    p
}

/// A deployment name or an API version, which go into URLs as they are: letters, digits,
/// `-`, `_` and `.` only.
pub(crate) fn check_url_token(s: &str) -> Result<(), &'static str> {
    if s.is_empty() {
        return Err("must not be empty");
    }
    if !s
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
    {
        return Err("may hold only letters, digits, '-', '_' and '.'");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn azure_paths() {
        let p = |d, v| upstream_path(Provider::AzureOpenai, d, "dep-1", v);
        assert_eq!(
            p(Upstream::Chat, Some("2024-10-21")),
            "/openai/deployments/dep-1/chat/completions?api-version=2024-10-21"
        );
        assert_eq!(
            p(Upstream::Responses, Some("2025-04-01-preview")),
            "/openai/responses?api-version=2025-04-01-preview"
        );
        assert_eq!(p(Upstream::Chat, Some("v1")), "/openai/v1/chat/completions");
        assert_eq!(p(Upstream::Responses, Some("v1")), "/openai/v1/responses");
        assert_eq!(
            upstream_path(Provider::Openai, Upstream::Chat, "m", None),
            "/v1/chat/completions"
        );
    }

    #[test]
    fn key_headers() {
        let name = |h| upstream_auth(h, "k").unwrap().0;
        assert_eq!(name(KeyHeader::of(Provider::AzureOpenai, None)), "api-key");
        assert_eq!(
            name(KeyHeader::of(Provider::AzureOpenai, Some(AzureAuth::Entra))),
            "authorization"
        );
        assert_eq!(name(KeyHeader::of(Provider::Openai, None)), "authorization");
        let (_, v) = upstream_auth(KeyHeader::ApiKey, "k").unwrap();
        assert!(v.is_sensitive());
        assert!(upstream_auth(KeyHeader::ApiKey, "a\nb").is_err());
    }

    #[test]
    fn bedrock_paths() {
        assert_eq!(
            bedrock_path("anthropic.claude-3-5-sonnet-20240620-v1:0", false),
            "/model/anthropic.claude-3-5-sonnet-20240620-v1%3A0/converse"
        );
        assert_eq!(
            bedrock_path("arn:aws:bedrock:us-east-1:1:inference-profile/us.x", true),
            "/model/arn%3Aaws%3Abedrock%3Aus-east-1%3A1%3Ainference-profile%2Fus.x/converse-stream"
        );
    }

    #[test]
    fn url_tokens() {
        assert!(check_url_token("2024-10-21").is_ok());
        assert!(check_url_token("my_dep.v2").is_ok());
        for bad in ["", "a/b", "a?b", "a b", "a&b", "é"] {
            assert!(check_url_token(bad).is_err(), "{bad:?}");
        }
    }
}
