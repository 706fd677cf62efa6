//! `[[keys]]`: the gateway's own API keys, their models and limits.

use std::collections::HashSet;

use serde::Deserialize;

use super::error::{invalid, Invalid, Problem};
use super::limits::{check_rate_limit, RateLimit};
use crate::env::{env_secret, EnvError};

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct ApiKey {
    /// A label for logs and metrics; never the key.
    pub(crate) name: String,
    /// The key itself, or ...
    pub(crate) key: Option<String>,
    /// ... the name of an environment variable holding it.
    pub(crate) key_env: Option<String>,
    /// Models this key may use; absent = all.
    pub(crate) models: Option<Vec<String>>,
    pub(crate) rate_limit: Option<RateLimit>,
}

impl ApiKey {
    /// The key's secret: inline, or read from its environment variable.
    pub(crate) fn secret(&self) -> Option<String> {
        match (&self.key, &self.key_env) {
            (Some(k), _) => Some(k.clone()),
            (None, Some(var)) => env_secret(var).ok(),
            (None, None) => None,
        }
    }
}

/// Names unique; one source, set; the models known.
pub(crate) fn check_keys(keys: &[ApiKey], names: &HashSet<&str>) -> Result<(), Invalid> {
    let mut key_names = HashSet::new();
    for (i, k) in keys.iter().enumerate() {
        let at = format!("keys[{i}]");
        if !key_names.insert(k.name.as_str()) {
            return Err(invalid(
                format!("{at}.name"),
                Problem::DuplicateKey(k.name.clone()),
            ));
        }
        match (&k.key, &k.key_env) {
            (Some(_), Some(_)) => {
                return Err(invalid(at.clone(), "set `key` or `key_env`, not both"))
            }
            (None, None) => return Err(invalid(at.clone(), "set `key` or `key_env`")),
            (Some(key), None) if key.is_empty() => {
                return Err(invalid(format!("{at}.key"), "must not be empty"))
            }
            (None, Some(var)) => {
                check_env_var(var).map_err(|e| invalid(format!("{at}.key_env"), e))?
            }
            _ => {}
        }
        if let Some(models) = &k.models {
            for (j, m) in models.iter().enumerate() {
                if !names.contains(m.as_str()) {
                    return Err(invalid(
                        format!("{at}.models[{j}]"),
                        Problem::UnknownModel(m.clone()),
                    ));
                }
            }
        }
        if let Some(rl) = &k.rate_limit {
            check_rate_limit(rl, &format!("{at}.rate_limit"))?;
        }
    }
    Ok(())
}

fn check_env_var(var: &str) -> Result<(), EnvError> {
    env_secret(var).map(|_| ())
}
