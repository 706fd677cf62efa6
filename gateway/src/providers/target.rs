//! A target as configured (`[[models.targets]]`): the keys every provider reads and each
//! provider's own (documented by the provider that reads them), and what a provider's checks
//! say is wrong with one. `crate::config` parses it; the provider table (`super::home`)
//! checks it and compiles it (`crate::state`).

use std::path::PathBuf;

use serde::Deserialize;

use super::aws_creds::{AwsCredsError, AwsSource, Keys};
use super::azure::AzureAuth;
use super::{home, KeyHeader};
use crate::dialect::Provider;
use crate::env::{env_secret, EnvError};

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Target {
    pub(crate) provider: Provider,
    /// Scheme, host, port and optional path prefix, e.g. `https://api.openai.com`. Vertex
    /// and Bedrock targets may leave it out: the default is the location's or the region's
    /// host ([`Target::base_url`]).
    pub(crate) base_url: Option<String>,
    /// The model name sent upstream.
    pub(crate) model: String,
    /// Name of the environment variable holding the upstream key (the key itself is never in
    /// the file, in logs or in errors). Absent: no key is sent.
    pub(crate) api_key_env: Option<String>,
    /// Whether the upstream model takes a reasoning effort (translated clients' `thinking`,
    /// `output_config.effort`, `reasoning_effort`, `reasoning.effort` then map to it);
    /// otherwise they are dropped.
    #[serde(default)]
    pub(crate) reasoning: bool,
    /// Which sampling parameters the upstream model takes, for a model TRANSLATION.md's
    /// sampling table does not know (absent: the table's rule).
    pub(crate) sampling: Option<Sampling>,
    /// Azure OpenAI: the deployment (default: `model`), in the URL of a dated API version
    /// and the body's `model`.
    pub(crate) deployment: Option<String>,
    /// Azure OpenAI (required there): `"v1"` (`/openai/v1/...`) or a dated version such as
    /// `"2024-10-21"` (`/openai/deployments/{deployment}/...?api-version=...`).
    pub(crate) api_version: Option<String>,
    /// Azure OpenAI: what `api_key_env` holds, a resource key (`"api-key"`, the default) or
    /// a Microsoft Entra ID token (`"entra"`, sent as a bearer token).
    pub(crate) auth: Option<AzureAuth>,
    /// Vertex (required there): the location, `us-central1`, `global`, `us`, `eu`...
    pub(crate) location: Option<String>,
    /// Vertex: the Google Cloud project (default: the service account's `project_id`).
    pub(crate) project: Option<String>,
    /// Vertex: a service-account key file (JSON), whose tokens the gateway fetches and
    /// refreshes itself ...
    pub(crate) credentials_file: Option<PathBuf>,
    /// ... or the environment variable naming that file (`GOOGLE_APPLICATION_CREDENTIALS`) ...
    pub(crate) credentials_file_env: Option<String>,
    /// ... or the environment variable holding an access token minted elsewhere (sent as
    /// it is, never refreshed).
    pub(crate) access_token_env: Option<String>,
    /// Bedrock (required there): the AWS region signed for, and the default host's
    /// (`bedrock-runtime.REGION.amazonaws.com`).
    pub(crate) region: Option<String>,
    /// Bedrock: where the AWS keys come from (`default`: the environment, else the shared
    /// credentials file). Ignored with `api_key_env` (a Bedrock API key, sent as a bearer).
    pub(crate) aws_credentials: Option<AwsSource>,
    /// Bedrock: the section of the shared credentials file (default: `AWS_PROFILE`, else
    /// `default`).
    pub(crate) aws_profile: Option<String>,
}

/// `sampling` on a target: which of `temperature`, `top_p`, `top_k` its model takes
/// (translated requests; what it does not take is dropped, or refused under `strict`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum Sampling {
    /// All three (where the API has them).
    All,
    /// Temperature and top_p, no top_k.
    TemperatureAndTopP,
    /// Temperature or top_p, not both (Claude 4.5 and later): top_p goes when both came.
    TemperatureOrTopP,
    /// Temperature and top_p at their default (1) only, no top_k (OpenAI's reasoning
    /// models): another value goes.
    DefaultOnly,
    /// None of them.
    None,
}

impl Target {
    /// The model name sent upstream: an Azure target's deployment.
    pub(crate) fn upstream_model(&self) -> &str {
        self.deployment.as_deref().unwrap_or(&self.model)
    }

    /// The header the target's key travels in.
    pub(crate) fn key_header(&self) -> KeyHeader {
        (home(self.provider).key_header)(self)
    }

    /// The base URL: the configured one, else the provider's default (Vertex: the
    /// location's host, Bedrock: the region's), else none.
    pub(crate) fn base_url(&self) -> std::borrow::Cow<'_, str> {
        match (&self.base_url, home(self.provider).default_base_url) {
            (Some(u), _) => u.as_str().into(),
            (None, Some(default)) => default(self).unwrap_or_default().into(),
            (None, None) => "".into(),
        }
    }

    /// Where a Vertex target's service-account key is, when it has one (the env var is
    /// read here; validation checked it is set).
    pub(crate) fn credentials_path(&self) -> Result<Option<PathBuf>, EnvError> {
        match (&self.credentials_file, &self.credentials_file_env) {
            (Some(p), _) => Ok(Some(p.clone())),
            (None, Some(var)) => env_secret(var).map(|p| Some(PathBuf::from(p))),
            (None, None) => Ok(None),
        }
    }

    /// Where a target signing with SigV4 (Bedrock without an API key) gets its AWS keys;
    /// none for every other target.
    pub(crate) fn aws_keys(&self) -> Result<Option<Keys>, AwsCredsError> {
        if !home(self.provider).signs_with_aws || self.api_key_env.is_some() {
            return Ok(None);
        }
        super::aws_creds::resolve(
            self.aws_credentials.unwrap_or_default(),
            self.aws_profile.as_deref(),
            self.region.as_deref().unwrap_or_default(),
            &|k| std::env::var(k).ok(),
        )
        .map(Some)
    }
}

/// One of a target's keys that a provider's checks refuse: the key (`""`: the target
/// itself), and what is wrong. `crate::config` names it in full
/// (`models[0].targets[1].region`).
#[derive(Debug)]
pub(crate) struct KeyError {
    pub(crate) key: &'static str,
    pub(crate) problem: Problem,
}

pub(crate) fn key_error(key: &'static str, problem: impl Into<Problem>) -> KeyError {
    KeyError {
        key,
        problem: problem.into(),
    }
}

/// What is wrong with a key's value (a provider's, or any the config checks:
/// `crate::config::Problem::Value`).
#[derive(Debug, thiserror::Error)]
pub(crate) enum Problem {
    /// A rule the value breaks, e.g. "must be > 0".
    #[error("{0}")]
    Rule(&'static str),
    #[error("{} is not a readable file", .0.display())]
    NotAFile(PathBuf),
    #[error(transparent)]
    Env(#[from] EnvError),
    /// Never quotes the key itself.
    #[error("the key in environment variable {0} is not a valid HTTP header value")]
    UpstreamKey(String),
    /// AWS keys that cannot be read: names the variable, file and profile, never a value.
    #[error(transparent)]
    AwsKeys(#[from] AwsCredsError),
    /// A service-account key file that does not serve: names the field, never its value.
    #[error("{}: {source}", path.display())]
    KeyFile {
        path: PathBuf,
        source: super::google::KeyFileError,
    },
}

impl From<&'static str> for Problem {
    fn from(rule: &'static str) -> Problem {
        Problem::Rule(rule)
    }
}

/// The upstream key must become a header value; the message never quotes the key.
pub(crate) fn check_upstream_key(var: &str, header: KeyHeader) -> Result<(), Problem> {
    let key = env_secret(var)?;
    super::upstream_auth(header, &key)
        .map(|_| ())
        .map_err(|_| Problem::UpstreamKey(var.to_owned()))
}

/// A service-account key file, read and parsed (its key too).
pub(crate) fn read_service_account(
    path: &std::path::Path,
) -> Result<super::google::ServiceAccount, Problem> {
    let bytes = std::fs::read(path).map_err(|_| Problem::NotAFile(path.to_owned()))?;
    super::google::ServiceAccount::from_json(&bytes).map_err(|source| Problem::KeyFile {
        path: path.to_owned(),
        source,
    })
}
