//! What a configuration error says: the file, the key at fault (its dotted path) and what
//! is wrong.

use std::net::SocketAddr;
use std::path::PathBuf;

use crate::env::EnvError;
use crate::headers::ForwardError;
use crate::upstream_url::UrlError;

/// Where a configuration error was found, and what is wrong.
#[derive(Debug, thiserror::Error)]
pub(crate) enum ConfigError {
    #[error("cannot read config file {path}: {source}")]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("invalid config file {path}: {message}")]
    Parse { path: PathBuf, message: String },
    #[error("invalid config file {path}: {invalid}")]
    Invalid { path: PathBuf, invalid: Invalid },
}

/// One invalid key: its dotted path (`models[0].targets[1].base_url`) and what is wrong.
#[derive(Debug, thiserror::Error)]
#[error("`{key}`: {problem}")]
pub(crate) struct Invalid {
    key: String,
    problem: Problem,
}

pub(crate) fn invalid(key: impl Into<String>, problem: impl Into<Problem>) -> Invalid {
    Invalid {
        key: key.into(),
        problem: problem.into(),
    }
}

/// What is wrong with a key's value.
#[derive(Debug, thiserror::Error)]
pub(crate) enum Problem {
    /// What is wrong with the value itself (a rule it breaks, an unreadable file or
    /// environment variable, a provider's key): said as `crate::providers` says it.
    #[error(transparent)]
    Value(#[from] crate::providers::Problem),
    #[error("duplicate model name {0:?}")]
    DuplicateModel(String),
    #[error("duplicate key name {0:?}")]
    DuplicateKey(String),
    #[error("unknown model {0:?}")]
    UnknownModel(String),
    #[error("{0} is also server.listen; use another address or leave it unset")]
    SameListener(SocketAddr),
    #[error(transparent)]
    Url(#[from] UrlError),
    #[error(transparent)]
    Header(#[from] ForwardError),
}

impl From<&'static str> for Problem {
    fn from(rule: &'static str) -> Problem {
        Problem::Value(rule.into())
    }
}

impl From<EnvError> for Problem {
    fn from(e: EnvError) -> Problem {
        Problem::Value(e.into())
    }
}
