//! Azure OpenAI: OpenAI's chat completions and responses on Azure's URLs (a deployment, an
//! `api-version`), a resource key in `api-key` or an Entra ID token as a bearer. Its URL is
//! the operator's: the client's query never goes on.

use serde::Deserialize;

use super::target::{key_error, KeyError, Target};
use super::{check_url_token, first_set, Home, KeyHeader, OwnKeys, Quirks, Routes};
use crate::dialect::{Provider, Upstream};

pub(crate) const HOME: Home = Home {
    speaks: &[Upstream::Chat, Upstream::Responses],
    api: Upstream::Chat,
    key_header: |t| header_for(t.auth),
    default_base_url: None,
    signs_with_aws: false,
    routes: |_| Routes::PerDialect(path),
    quirks: Quirks {
        passes_query: false,
        max_completion_tokens: true,
        ..Quirks::PLAIN
    },
};

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

fn header_for(auth: Option<AzureAuth>) -> KeyHeader {
    match auth {
        Some(AzureAuth::Entra) => KeyHeader::Bearer,
        _ => KeyHeader::ApiKey,
    }
}

/// The Azure OpenAI API version that needs none in the URL: `/openai/v1/...`.
pub(crate) const AZURE_V1: &str = "v1";

/// The path and query, on the base URL, of `upstream` requests. The `api_version` was
/// validated ([`check_url_token`]) and is set.
fn path(t: &Target, upstream: Upstream) -> String {
    paths(upstream, t.upstream_model(), t.api_version.as_deref())
}

fn paths(upstream: Upstream, deployment: &str, api_version: Option<&str>) -> String {
    match (api_version.unwrap_or(AZURE_V1), upstream) {
        (AZURE_V1, d) => format!("/openai{}", d.path()),
        (v, Upstream::Responses) => format!("/openai/responses?api-version={v}"),
        (v, _) => format!("/openai/deployments/{deployment}/chat/completions?api-version={v}"),
    }
}

/// `deployment`, `api_version`, `auth`.
pub(crate) const KEYS: OwnKeys = OwnKeys {
    owners: &[Provider::AzureOpenai],
    first_set: |t| {
        first_set(&[
            ("deployment", t.deployment.is_some()),
            ("api_version", t.api_version.is_some()),
            ("auth", t.auth.is_some()),
        ])
    },
    elsewhere: "applies only to provider \"azure-openai\"",
    check,
};

/// The version required, the names URL-safe.
fn check(t: &Target) -> Result<(), KeyError> {
    let Some(version) = &t.api_version else {
        return Err(key_error(
            "api_version",
            "is required for provider \"azure-openai\": \"v1\" (the v1 API) or a dated version such as \"2024-10-21\"",
        ));
    };
    check_url_token(version).map_err(|e| key_error("api_version", e))?;
    if let Some(d) = &t.deployment {
        check_url_token(d).map_err(|e| key_error("deployment", e))?;
    } else {
        check_url_token(&t.model).map_err(|_| {
            key_error(
                "deployment",
                "is required when model is not a valid deployment name (letters, digits, '-', '_', '.')",
            )
        })?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn azure_paths() {
        let p = |d, v| paths(d, "dep-1", v);
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
    }

    #[test]
    fn key_headers() {
        let name = |h| super::super::upstream_auth(h, "k").unwrap().0;
        assert_eq!(name(header_for(None)), "api-key");
        assert_eq!(name(header_for(Some(AzureAuth::Entra))), "authorization");
    }
}
