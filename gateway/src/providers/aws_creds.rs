//! Where a Bedrock target's AWS keys come from: the environment (`AWS_ACCESS_KEY_ID`,
//! `AWS_SECRET_ACCESS_KEY`, `AWS_SESSION_TOKEN`, the AWS SDKs' names) or a section of the
//! shared credentials file (`AWS_SHARED_CREDENTIALS_FILE`, else `~/.aws/credentials`).
//! Static keys only: role chains, `credential_process` and SSO need an exchange and are
//! refused by name, so a profile that only the AWS CLI can use fails at start-up, clearly.
//! Errors name the variable, file and section, never a value.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use serde::Deserialize;

use super::sigv4::AwsKeys;

/// `[[models.targets]] aws_credentials`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
pub(crate) enum AwsSource {
    /// The environment when it has keys, else the profile file.
    #[default]
    #[serde(rename = "default")]
    Default,
    #[serde(rename = "env")]
    Env,
    #[serde(rename = "profile")]
    Profile,
}

/// Why no keys could be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum AwsCredsError {
    #[error("{0} is not set (or is empty)")]
    EnvUnset(&'static str),
    #[error("cannot read the AWS credentials file {path}: {why}")]
    File { path: String, why: String },
    #[error("the AWS credentials file {path} has no profile [{profile}]")]
    NoProfile { path: String, profile: String },
    #[error("profile [{profile}] in {path} lacks {key}")]
    Missing {
        path: String,
        profile: String,
        key: &'static str,
    },
    #[error(
        "profile [{profile}] in {path} uses {key}, which the gateway does not support: give it static keys (aws_access_key_id, aws_secret_access_key)"
    )]
    Unsupported {
        path: String,
        profile: String,
        key: String,
    },
    #[error("no AWS keys: AWS_ACCESS_KEY_ID is not set and {0}")]
    Neither(Box<AwsCredsError>),
}

const ENV_ID: &str = "AWS_ACCESS_KEY_ID";
const ENV_SECRET: &str = "AWS_SECRET_ACCESS_KEY";
const ENV_TOKEN: &str = "AWS_SESSION_TOKEN";

/// The keys `source` names; `profile`: the target's `aws_profile` (else `AWS_PROFILE`,
/// else `default`). `env` reads a variable (the process environment in production).
pub(crate) fn load(
    source: AwsSource,
    profile: Option<&str>,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<AwsKeys, AwsCredsError> {
    let var = |k: &str| env(k).filter(|v| !v.is_empty());
    match source {
        AwsSource::Env => from_env(&var),
        AwsSource::Profile => from_profile(profile, &var),
        AwsSource::Default => match var(ENV_ID) {
            Some(_) => from_env(&var),
            None => from_profile(profile, &var).map_err(|e| AwsCredsError::Neither(Box::new(e))),
        },
    }
}

fn from_env(var: &dyn Fn(&str) -> Option<String>) -> Result<AwsKeys, AwsCredsError> {
    Ok(AwsKeys {
        access_key_id: var(ENV_ID).ok_or(AwsCredsError::EnvUnset(ENV_ID))?,
        secret_access_key: var(ENV_SECRET).ok_or(AwsCredsError::EnvUnset(ENV_SECRET))?,
        session_token: var(ENV_TOKEN),
    })
}

/// The shared credentials file's path.
fn file_path(var: &dyn Fn(&str) -> Option<String>) -> PathBuf {
    if let Some(p) = var("AWS_SHARED_CREDENTIALS_FILE") {
        return PathBuf::from(p);
    }
    let home = var("HOME").unwrap_or_default();
    Path::new(&home).join(".aws").join("credentials")
}

fn from_profile(
    profile: Option<&str>,
    var: &dyn Fn(&str) -> Option<String>,
) -> Result<AwsKeys, AwsCredsError> {
    let path = file_path(var);
    let shown = path.display().to_string();
    let text = std::fs::read_to_string(&path).map_err(|e| AwsCredsError::File {
        path: shown.clone(),
        why: e.kind().to_string(),
    })?;
    let name = profile
        .map(str::to_owned)
        .or_else(|| var("AWS_PROFILE"))
        .unwrap_or_else(|| "default".into());
    let sections = parse_ini(&text);
    let section = sections
        .get(&name)
        .ok_or_else(|| AwsCredsError::NoProfile {
            path: shown.clone(),
            profile: name.clone(),
        })?;
    for key in section.keys() {
        if key == "role_arn" || key == "credential_process" || key.starts_with("sso_") {
            return Err(AwsCredsError::Unsupported {
                path: shown,
                profile: name,
                key: key.clone(),
            });
        }
    }
    let get = |key: &'static str| {
        section
            .get(key)
            .filter(|v| !v.is_empty())
            .cloned()
            .ok_or_else(|| AwsCredsError::Missing {
                path: shown.clone(),
                profile: name.clone(),
                key,
            })
    };
    Ok(AwsKeys {
        access_key_id: get("aws_access_key_id")?,
        secret_access_key: get("aws_secret_access_key")?,
        session_token: get("aws_session_token").ok(),
    })
}

/// The file's sections and their `key = value` pairs (keys lower-cased, values trimmed).
/// Comments (`#`, `;`) and lines that are neither are skipped, as the AWS CLI does.
fn parse_ini(text: &str) -> HashMap<String, HashMap<String, String>> {
    let mut out: HashMap<String, HashMap<String, String>> = HashMap::new();
    let mut current: Option<String> = None;
    for line in text.lines() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') || line.starts_with(';') {
            continue;
        }
        if let Some(name) = line.strip_prefix('[').and_then(|l| l.strip_suffix(']')) {
            // The config file's `[profile NAME]` spelling is accepted too.
            let name = name.trim();
            let name = name.strip_prefix("profile ").unwrap_or(name).trim();
            current = Some(name.to_owned());
            out.entry(name.to_owned()).or_default();
            continue;
        }
        if let (Some(section), Some((k, v))) = (&current, line.split_once('=')) {
            out.entry(section.clone())
                .or_default()
                .insert(k.trim().to_ascii_lowercase(), v.trim().to_owned());
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env_of(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
        let m: HashMap<String, String> = pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect();
        move |k| m.get(k).cloned()
    }

    #[test]
    fn env_keys_and_default_order() {
        let env = env_of(&[
            ("AWS_ACCESS_KEY_ID", "AKID"),
            ("AWS_SECRET_ACCESS_KEY", "s3cret"),
            ("AWS_SESSION_TOKEN", "tok"),
        ]);
        let k = load(AwsSource::Default, None, &env).unwrap();
        assert_eq!(
            (
                &*k.access_key_id,
                &*k.secret_access_key,
                k.session_token.as_deref()
            ),
            ("AKID", "s3cret", Some("tok"))
        );
        let e = load(AwsSource::Env, None, &env_of(&[("AWS_ACCESS_KEY_ID", "A")])).unwrap_err();
        assert_eq!(e, AwsCredsError::EnvUnset("AWS_SECRET_ACCESS_KEY"));
    }

    #[test]
    fn profile_file() {
        let dir = std::env::temp_dir().join(format!("gw-aws-creds-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("credentials");
        std::fs::write(
            &path,
            "# comment\n[default]\naws_access_key_id = AKIDDEF\naws_secret_access_key=defsecret\n\n\
             [bedrock]\nAWS_ACCESS_KEY_ID = AKIDB\naws_secret_access_key = bsecret\naws_session_token = btok\n\
             [role]\nrole_arn = arn:aws:iam::1:role/x\nsource_profile = default\n[half]\naws_access_key_id = X\n",
        )
        .unwrap();
        let p = path.to_str().unwrap();
        let env = env_of(&[("AWS_SHARED_CREDENTIALS_FILE", p)]);
        let k = load(AwsSource::Default, None, &env).unwrap();
        assert_eq!((&*k.access_key_id, k.session_token), ("AKIDDEF", None));
        let k = load(AwsSource::Profile, Some("bedrock"), &env).unwrap();
        assert_eq!(k.session_token.as_deref(), Some("btok"));
        let env2 = env_of(&[
            ("AWS_SHARED_CREDENTIALS_FILE", p),
            ("AWS_PROFILE", "bedrock"),
        ]);
        assert_eq!(
            load(AwsSource::Profile, None, &env2).unwrap().access_key_id,
            "AKIDB"
        );
        let e = load(AwsSource::Profile, Some("role"), &env).unwrap_err();
        assert!(e.to_string().contains("role_arn"), "{e}");
        let e = load(AwsSource::Profile, Some("half"), &env).unwrap_err();
        assert!(e.to_string().contains("aws_secret_access_key"), "{e}");
        assert!(
            !e.to_string().contains('X'.to_string().as_str()) || !e.to_string().contains("= X")
        );
        let e = load(AwsSource::Profile, Some("nope"), &env).unwrap_err();
        assert!(matches!(e, AwsCredsError::NoProfile { .. }), "{e}");
        let e = load(
            AwsSource::Default,
            None,
            &env_of(&[("AWS_SHARED_CREDENTIALS_FILE", "/nonexistent/x")]),
        )
        .unwrap_err();
        assert!(
            e.to_string().contains("AWS_ACCESS_KEY_ID is not set"),
            "{e}"
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
