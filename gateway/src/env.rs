//! Secrets read from environment variables (upstream keys, client keys, the Redis URL):
//! below the config and the providers, which both check them at start-up.

/// Why a secret could not be read from its environment variable (never quotes a value).
#[derive(Debug, thiserror::Error)]
pub(crate) enum EnvError {
    #[error("environment variable name must not be empty")]
    EmptyName,
    #[error("environment variable {0} is empty")]
    Empty(String),
    #[error("environment variable {0} is not set")]
    NotSet(String),
}

/// A secret from an environment variable, without surrounding whitespace: `echo key >
/// file`-style values end in a newline that is never part of the key.
pub(crate) fn env_secret(var: &str) -> Result<String, EnvError> {
    if var.is_empty() {
        return Err(EnvError::EmptyName);
    }
    match std::env::var(var) {
        Ok(v) if !v.trim().is_empty() => Ok(v.trim().to_owned()),
        Ok(_) => Err(EnvError::Empty(var.to_owned())),
        Err(_) => Err(EnvError::NotSet(var.to_owned())),
    }
}
