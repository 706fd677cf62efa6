//! The providers: one home each (its config keys and their checks, its URIs, its auth, its
//! quirks), and the table that maps a provider kind to its home ([`home`]). Everything here
//! is decided once per target at start-up (`crate::state` compiles a target from its home);
//! the request path reads the results and names no provider.
//!
//! A new cloud costs its file, its config keys (`target.rs`) and a line in [`home`]'s table.

use std::sync::Arc;

use http::{HeaderMap, HeaderName, HeaderValue, Uri};

use crate::dialect::{Dialect, Provider, Upstream};
use crate::upstream_url::UpstreamUrl;

pub(crate) mod anthropic;
pub(crate) mod auth;
pub(crate) mod aws_creds;
pub(crate) mod azure;
pub(crate) mod bedrock;
pub(crate) mod compatible;
pub(crate) mod gemini;
pub(crate) mod google;
pub(crate) mod openai;
pub(crate) mod refresh;
pub(crate) mod sigv4;
pub(crate) mod target;
pub(crate) mod vertex;

pub(crate) use auth::{Credential, UpstreamAuth};
pub(crate) use target::{KeyError, Problem, Sampling, Target};

/// The provider table: each provider kind's home.
pub(crate) const fn home(p: Provider) -> &'static Home {
    match p {
        Provider::Openai => &openai::HOME,
        Provider::Anthropic => &anthropic::HOME,
        Provider::OpenaiCompatible => &compatible::HOME,
        Provider::Gemini => &gemini::HOME,
        Provider::AzureOpenai => &azure::HOME,
        Provider::Vertex => &vertex::HOME,
        Provider::VertexAnthropic => &vertex::ANTHROPIC_HOME,
        Provider::Bedrock => &bedrock::HOME,
    }
}

/// The keys some providers add to `[[models.targets]]`: checked on their targets, refused
/// on every other (in this order: the first error found is the one reported).
const OWN_KEYS: [&OwnKeys; 3] = [&vertex::KEYS, &bedrock::KEYS, &azure::KEYS];

/// The API a request in `client`'s dialect is sent to a target of `provider` in: the
/// client's own where the provider speaks it (passthrough), else the provider's API it is
/// translated to.
pub(crate) fn upstream_for(client: Dialect, provider: Provider) -> Upstream {
    let home = home(provider);
    if home.speaks.contains(&client.upstream()) {
        client.upstream()
    } else {
        home.api
    }
}

/// What a provider is, decided once per target at start-up.
pub(crate) struct Home {
    /// The APIs it serves: a client dialect among them is passed through.
    pub(crate) speaks: &'static [Upstream],
    /// The API every other client dialect is translated to.
    pub(crate) api: Upstream,
    /// The header its key travels in.
    pub(crate) key_header: fn(&Target) -> KeyHeader,
    /// The base URL when the config names none; `None`: `base_url` is required.
    pub(crate) default_base_url: Option<fn(&Target) -> Option<String>>,
    /// Without an API key it signs with AWS keys (SigV4).
    pub(crate) signs_with_aws: bool,
    /// Where its requests go.
    pub(crate) routes: fn(&RouteInput<'_>) -> Routes,
    /// How a request is shaped for it on the request path.
    pub(crate) quirks: Quirks,
}

/// A family of providers' own config keys.
pub(crate) struct OwnKeys {
    /// The providers that read them.
    pub(crate) owners: &'static [Provider],
    /// The first of them a target sets, by name.
    pub(crate) first_set: fn(&Target) -> Option<&'static str>,
    /// What is said of one set on another provider's target.
    pub(crate) elsewhere: &'static str,
    /// The checks on an owner's target.
    pub(crate) check: fn(&Target) -> Result<(), KeyError>,
}

/// Every provider's own keys: checked on its targets, refused on others'.
pub(crate) fn check_keys(t: &Target) -> Result<(), KeyError> {
    for keys in OWN_KEYS {
        if keys.owners.contains(&t.provider) {
            (keys.check)(t)?;
        } else if let Some(k) = (keys.first_set)(t) {
            return Err(target::key_error(k, keys.elsewhere));
        }
    }
    Ok(())
}

/// The first key set, of `(name, set)` pairs (for [`OwnKeys::first_set`]).
pub(crate) fn first_set(keys: &[(&'static str, bool)]) -> Option<&'static str> {
    keys.iter().find_map(|&(k, set)| set.then_some(k))
}

/// A region's or a location's name (`us-east-1`, `europe-west4`), which goes into a host
/// name: lowercase letters, digits and `-`.
pub(crate) fn check_region(key: &'static str, name: &str) -> Result<(), KeyError> {
    if name.is_empty()
        || !name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
    {
        return Err(target::key_error(
            key,
            "may hold only lowercase letters, digits and '-'",
        ));
    }
    Ok(())
}

/// What a target's URIs are built from.
pub(crate) struct RouteInput<'a> {
    pub(crate) target: &'a Target,
    pub(crate) base: &'a UpstreamUrl,
    /// Vertex's project: the configured one, else the service account's.
    pub(crate) project: Option<&'a str>,
}

/// Where a target's requests go.
pub(crate) enum Routes {
    /// A path on the base URL per upstream API (OpenAI, Anthropic, Azure...).
    PerDialect(fn(&Target, Upstream) -> String),
    /// The model and the method in the path (Gemini, Vertex): a URI per method.
    Gemini(Arc<gemini::GeminiUris>),
    /// The model in the path; one URI for answers, one for streams (Claude on Vertex:
    /// `:rawPredict`, `:streamRawPredict`; Bedrock: `converse`, `converse-stream`).
    Pair { answer: Uri, stream: Uri },
}

/// The path of an upstream API's route, as the API names it (`/v1/chat/completions`).
pub(crate) fn dialect_path(_: &Target, upstream: Upstream) -> String {
    upstream.path().to_owned()
}

/// How requests are shaped for a provider, beyond its dialect.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Quirks {
    /// The model goes in the URL, and the body's `model` becomes the `anthropic_version`
    /// Claude on Vertex requires (passthrough and translated bodies alike).
    pub(crate) model_in_url: bool,
    /// The client's query string goes on to a passthrough target; not where the URL and
    /// its query are the operator's (an Azure `api-version`, a Vertex project).
    pub(crate) passes_query: bool,
    /// What becomes of Anthropic's version and beta headers.
    pub(crate) anthropic_headers: AnthropicHeaders,
    /// A passthrough target is asked for token counts (`count_tokens`, `:countTokens`);
    /// otherwise the gateway estimates them.
    pub(crate) counts_tokens: bool,
    /// A translated chat request's token limit goes in `max_completion_tokens` (OpenAI's
    /// own models refuse `max_tokens`); compatible servers often know only `max_tokens`.
    pub(crate) max_completion_tokens: bool,
}

impl Quirks {
    /// Most providers': the client's query passes, Anthropic's headers are dropped when
    /// translated, token counts are asked upstream, a chat limit is `max_tokens`.
    pub(crate) const PLAIN: Quirks = Quirks {
        model_in_url: false,
        passes_query: true,
        anthropic_headers: AnthropicHeaders::DroppedWhenTranslated,
        counts_tokens: true,
        max_completion_tokens: false,
    };
}

/// Anthropic's `anthropic-version` and `anthropic-beta` headers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum AnthropicHeaders {
    /// Dropped from a translated request: an Anthropic client's headers mean nothing to
    /// another API.
    DroppedWhenTranslated,
    /// Anthropic's API: kept, and the version set when the client sent none.
    Required,
    /// Claude on Vertex: the version goes in the body (`anthropic_version`), never as a
    /// header; the beta header is dropped when translated.
    VersionInBody,
}

/// The version Anthropic's API is sent when the client named none.
const ANTHROPIC_VERSION: HeaderValue = HeaderValue::from_static("2023-06-01");

impl AnthropicHeaders {
    /// Sets or strips the headers of a request already carrying the client's.
    pub(crate) fn apply(self, h: &mut HeaderMap, translated: bool) {
        if translated && self != AnthropicHeaders::Required {
            h.remove("anthropic-version");
            h.remove("anthropic-beta");
        }
        match self {
            AnthropicHeaders::VersionInBody => {
                h.remove("anthropic-version");
            }
            AnthropicHeaders::Required if !h.contains_key("anthropic-version") => {
                h.insert("anthropic-version", ANTHROPIC_VERSION);
            }
            _ => {}
        }
    }
}

/// The header an upstream key travels in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum KeyHeader {
    /// `Authorization: Bearer KEY`: OpenAI, compatible servers, Azure with an Entra token,
    /// Vertex's access tokens, Bedrock API keys.
    Bearer,
    /// `x-api-key: KEY`: Anthropic.
    XApiKey,
    /// `x-goog-api-key: KEY`: Gemini.
    XGoogApiKey,
    /// `api-key: KEY`: Azure OpenAI's resource keys.
    ApiKey,
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

    /// TRANSLATION.md's matrix is what the code does: a row for every provider a config
    /// accepts, a column for every client route ([`Dialect::ALL`]'s order).
    #[test]
    fn the_translation_matrix_is_the_code() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
        let Ok(doc) = std::fs::read_to_string(root.join("TRANSLATION.md")) else {
            // Nix's test source holds no documentation (nix/gateway/source.nix: a docs edit
            // rebuilds nothing), README.md included; a checkout with its README lost this.
            assert!(
                !root.join("README.md").exists(),
                "TRANSLATION.md is missing"
            );
            return;
        };
        let rows: Vec<Vec<&str>> = doc
            .lines()
            .skip_while(|l| !l.starts_with("| provider \\ client route"))
            .skip(2)
            .take_while(|l| l.starts_with('|'))
            .map(|l| l.trim_matches('|').split(" | ").map(str::trim).collect())
            .collect();
        let named: Vec<&str> = rows.iter().map(|r| r[0].trim_matches('`')).collect();
        let all: Vec<&str> = Provider::ALL.iter().map(|p| p.name()).collect();
        assert_eq!(named, all, "one row per provider, in Provider::ALL's order");
        for (row, provider) in rows.iter().zip(Provider::ALL) {
            for (cell, client) in row[1..].iter().zip(Dialect::ALL) {
                let want = match upstream_for(client, provider) {
                    u if u == client => "passthrough",
                    Upstream::Chat => "translated to chat",
                    Upstream::Messages => "translated to messages",
                    Upstream::Gemini => "translated to Gemini",
                    Upstream::Converse => "translated to Converse",
                    Upstream::Responses => "translated to responses",
                };
                assert_eq!(*cell, want, "{} from {client:?}", provider.name());
            }
        }
    }

    #[test]
    fn every_provider_serves_every_dialect() {
        use Dialect::*;
        use Upstream as U;
        let cases = [
            (Chat, Provider::Openai, U::Chat),
            (Responses, Provider::Openai, U::Responses),
            (Messages, Provider::Openai, U::Chat),
            (Chat, Provider::Anthropic, U::Messages),
            (Responses, Provider::Anthropic, U::Messages),
            (Messages, Provider::Anthropic, U::Messages),
            (Chat, Provider::OpenaiCompatible, U::Chat),
            (Messages, Provider::OpenaiCompatible, U::Chat),
            (Responses, Provider::OpenaiCompatible, U::Chat),
            (Gemini, Provider::Gemini, U::Gemini),
            (Gemini, Provider::Openai, U::Chat),
            (Gemini, Provider::Anthropic, U::Messages),
            (Gemini, Provider::OpenaiCompatible, U::Chat),
            (Chat, Provider::Gemini, U::Gemini),
            (Messages, Provider::Gemini, U::Gemini),
            (Responses, Provider::Gemini, U::Gemini),
            (Chat, Provider::AzureOpenai, U::Chat),
            (Responses, Provider::AzureOpenai, U::Responses),
            (Messages, Provider::AzureOpenai, U::Chat),
            (Gemini, Provider::AzureOpenai, U::Chat),
            (Gemini, Provider::Vertex, U::Gemini),
            (Chat, Provider::Vertex, U::Gemini),
            (Messages, Provider::Vertex, U::Gemini),
            (Responses, Provider::Vertex, U::Gemini),
            (Messages, Provider::VertexAnthropic, U::Messages),
            (Chat, Provider::VertexAnthropic, U::Messages),
            (Responses, Provider::VertexAnthropic, U::Messages),
            (Gemini, Provider::VertexAnthropic, U::Messages),
            (Chat, Provider::Bedrock, U::Converse),
            (Messages, Provider::Bedrock, U::Converse),
            (Responses, Provider::Bedrock, U::Converse),
            (Gemini, Provider::Bedrock, U::Converse),
        ];
        for (client, provider, upstream) in cases {
            assert_eq!(
                upstream_for(client, provider),
                upstream,
                "{client:?} {provider:?}"
            );
        }
    }

    /// A translated chat request's limit: `max_completion_tokens` for OpenAI's own models
    /// (OpenAI, Azure), `max_tokens` for every other provider (a compatible server's home,
    /// built on OpenAI's, must not inherit it).
    #[test]
    fn only_openai_models_take_max_completion_tokens() {
        for p in Provider::ALL {
            let want = matches!(p, Provider::Openai | Provider::AzureOpenai);
            assert_eq!(home(p).quirks.max_completion_tokens, want, "{}", p.name());
        }
    }

    #[test]
    fn key_headers() {
        let (_, v) = upstream_auth(KeyHeader::ApiKey, "k").unwrap();
        assert!(v.is_sensitive());
        assert!(upstream_auth(KeyHeader::ApiKey, "a\nb").is_err());
    }

    #[test]
    fn anthropic_headers() {
        let client = || {
            let mut h = HeaderMap::new();
            h.insert("anthropic-version", HeaderValue::from_static("2024-01-01"));
            h.insert("anthropic-beta", HeaderValue::from_static("b"));
            h
        };
        let names = |a: AnthropicHeaders, mut h: HeaderMap, translated| {
            a.apply(&mut h, translated);
            let mut v: Vec<String> = h
                .iter()
                .map(|(k, v)| format!("{k}={}", v.to_str().unwrap()))
                .collect();
            v.sort();
            v.join(" ")
        };
        use AnthropicHeaders as A;
        let both = "anthropic-beta=b anthropic-version=2024-01-01";
        assert_eq!(names(A::DroppedWhenTranslated, client(), false), both);
        assert_eq!(names(A::DroppedWhenTranslated, client(), true), "");
        assert_eq!(names(A::Required, client(), true), both);
        assert_eq!(
            names(A::Required, HeaderMap::new(), false),
            "anthropic-version=2023-06-01"
        );
        assert_eq!(names(A::VersionInBody, client(), false), "anthropic-beta=b");
        assert_eq!(names(A::VersionInBody, client(), true), "");
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
