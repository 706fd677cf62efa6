//! Google Vertex AI: Gemini models (`vertex`, the Gemini API on Vertex's URLs) and Claude
//! (`vertex-anthropic`: Anthropic's messages at `:rawPredict` / `:streamRawPredict`, the
//! model in the URL, `anthropic_version` in the body). Both take a location and a project,
//! and an OAuth access token (`super::google`) as a bearer. Their URL is the operator's: the
//! client's query never goes on to Claude's.

use std::sync::Arc;

use super::gemini::GeminiUris;
use super::google::{check_path_segment, default_base_url, model_path};
use super::target::{check_upstream_key, key_error, read_service_account, KeyError, Target};
use super::{
    check_region, first_set, AnthropicHeaders, Home, KeyHeader, OwnKeys, Quirks, RouteInput, Routes,
};
use crate::dialect::{Provider, Upstream};

/// Gemini on Vertex.
pub(crate) const HOME: Home = Home {
    speaks: &[Upstream::Gemini],
    api: Upstream::Gemini,
    routes: |r| Routes::Gemini(Arc::new(GeminiUris::new(r.base, &models(r, "google")))),
    ..BASE
};

/// Claude on Vertex.
pub(crate) const ANTHROPIC_HOME: Home = Home {
    speaks: &[Upstream::Messages],
    api: Upstream::Messages,
    routes: |r| {
        let models = models(r, "anthropic");
        Routes::Pair {
            answer: r.base.join(&format!("{models}:rawPredict")),
            stream: r.base.join(&format!("{models}:streamRawPredict")),
        }
    },
    quirks: Quirks {
        model_in_url: true,
        passes_query: false,
        anthropic_headers: AnthropicHeaders::VersionInBody,
        // Claude on Vertex counts at another model (`count-tokens:rawPredict`): not yet asked.
        counts_tokens: false,
        ..Quirks::PLAIN
    },
    ..BASE
};

const BASE: Home = Home {
    speaks: &[],
    api: Upstream::Gemini,
    // An OAuth access token (Vertex takes no API key here).
    key_header: |_| KeyHeader::Bearer,
    default_base_url: Some(|t| t.location.as_deref().map(default_base_url)),
    signs_with_aws: false,
    routes: |_| unreachable!("every Vertex home has its routes"),
    quirks: Quirks::PLAIN,
};

/// A publisher's models on Vertex. Validation made sure a Vertex target has a project.
fn models(r: &RouteInput<'_>, publisher: &str) -> String {
    let t = r.target;
    let location = t.location.as_deref().unwrap_or_default();
    model_path(r.project.unwrap_or(""), location, publisher, &t.model)
}

/// `location`, `project`, `credentials_file`, `credentials_file_env`, `access_token_env`.
pub(crate) const KEYS: OwnKeys = OwnKeys {
    owners: &[Provider::Vertex, Provider::VertexAnthropic],
    first_set: |t| {
        first_set(&[
            ("location", t.location.is_some()),
            ("project", t.project.is_some()),
            ("credentials_file", t.credentials_file.is_some()),
            ("credentials_file_env", t.credentials_file_env.is_some()),
            ("access_token_env", t.access_token_env.is_some()),
        ])
    },
    elsewhere: "applies only to providers \"vertex\" and \"vertex-anthropic\"",
    check,
};

/// Exactly one credential source; the key file readable and a service account's; the
/// names URL-safe. The key's project is the default `project`.
fn check(t: &Target) -> Result<(), KeyError> {
    let Some(location) = &t.location else {
        return Err(key_error(
            "location",
            "is required for Vertex: a region such as \"us-central1\", or \"global\", \"us\", \"eu\"",
        ));
    };
    check_region("location", location)?;
    if t.api_key_env.is_some() {
        return Err(key_error(
            "api_key_env",
            "does not apply to Vertex: use credentials_file, credentials_file_env or access_token_env",
        ));
    }
    check_path_segment(&t.model).map_err(|e| key_error("model", e))?;
    let sources = [
        t.credentials_file.is_some(),
        t.credentials_file_env.is_some(),
        t.access_token_env.is_some(),
    ];
    if sources.iter().filter(|s| **s).count() != 1 {
        return Err(key_error(
            "",
            "a Vertex target needs exactly one of credentials_file, credentials_file_env and access_token_env",
        ));
    }
    let mut project = t.project.clone();
    if let Some(var) = &t.access_token_env {
        check_upstream_key(var, t.key_header()).map_err(|e| key_error("access_token_env", e))?;
    } else {
        let key = if t.credentials_file.is_some() {
            "credentials_file"
        } else {
            "credentials_file_env"
        };
        let path = t
            .credentials_path()
            .map_err(|e| key_error(key, e))?
            .expect("one source is set");
        let sa = read_service_account(&path).map_err(|e| key_error(key, e))?;
        project = project.or(sa.project_id);
    }
    let Some(project) = project else {
        return Err(key_error(
            "project",
            "is required (the credentials name no project_id)",
        ));
    };
    check_path_segment(&project).map_err(|e| key_error("project", e))?;
    Ok(())
}
