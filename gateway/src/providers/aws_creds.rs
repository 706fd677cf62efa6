//! Where a Bedrock target's AWS keys come from: the environment (`AWS_ACCESS_KEY_ID`,
//! `AWS_SECRET_ACCESS_KEY`, `AWS_SESSION_TOKEN`, the AWS SDKs' names), a section of the
//! shared credentials file (`AWS_SHARED_CREDENTIALS_FILE`, else `~/.aws/credentials`), a web
//! identity (`AWS_WEB_IDENTITY_TOKEN_FILE` and `AWS_ROLE_ARN`: STS
//! `AssumeRoleWithWebIdentity`, EKS's IRSA) or the container credentials endpoint
//! (`AWS_CONTAINER_CREDENTIALS_FULL_URI` or `_RELATIVE_URI`: ECS, EKS Pod Identity).
//! Profiles hold static keys only: role chains, `credential_process` and SSO are refused by
//! name, so a profile that only the AWS CLI can use fails at start-up, clearly.
//! The last two expire: this module builds their requests and reads their answers; the
//! fetches go through the gateway's own client (`crate::credentials`), refreshed in the
//! background. Errors name the variable, file and section, never a value.

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
    #[serde(rename = "web-identity")]
    WebIdentity,
    #[serde(rename = "container")]
    Container,
}

/// Where a target's keys come from, resolved: keys at hand, or an endpoint to fetch them
/// from (again before they expire).
#[derive(Debug, Clone)]
pub(crate) enum Keys {
    Static(AwsKeys),
    WebIdentity(WebIdentity),
    Container(Container),
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
    #[error("no AWS keys: AWS_ACCESS_KEY_ID is not set, {0}, and neither AWS_WEB_IDENTITY_TOKEN_FILE nor AWS_CONTAINER_CREDENTIALS_FULL_URI or _RELATIVE_URI is")]
    Neither(Box<AwsCredsError>),
    #[error("{0}")]
    Endpoint(String),
}

const ENV_ID: &str = "AWS_ACCESS_KEY_ID";
const ENV_SECRET: &str = "AWS_SECRET_ACCESS_KEY";
const ENV_TOKEN: &str = "AWS_SESSION_TOKEN";
const WEB_IDENTITY_TOKEN_FILE: &str = "AWS_WEB_IDENTITY_TOKEN_FILE";
const ROLE_ARN: &str = "AWS_ROLE_ARN";
const ROLE_SESSION_NAME: &str = "AWS_ROLE_SESSION_NAME";
/// The AWS SDKs' override of STS's endpoint (a VPC endpoint; a test's mock).
const STS_ENDPOINT: &str = "AWS_ENDPOINT_URL_STS";
const CONTAINER_FULL_URI: &str = "AWS_CONTAINER_CREDENTIALS_FULL_URI";
const CONTAINER_RELATIVE_URI: &str = "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI";
const CONTAINER_TOKEN: &str = "AWS_CONTAINER_AUTHORIZATION_TOKEN";
const CONTAINER_TOKEN_FILE: &str = "AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE";
/// ECS's credentials host, which `_RELATIVE_URI` is a path on.
const ECS_HOST: &str = "http://169.254.170.2";

/// The keys `source` names; `profile`: the target's `aws_profile` (else `AWS_PROFILE`,
/// else `default`); `region`: the target's (STS's regional endpoint). `env` reads a
/// variable (the process environment in production).
pub(crate) fn resolve(
    source: AwsSource,
    profile: Option<&str>,
    region: &str,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<Keys, AwsCredsError> {
    let var = |k: &str| env(k).filter(|v| !v.is_empty());
    match source {
        AwsSource::Env => from_env(&var).map(Keys::Static),
        AwsSource::Profile => from_profile(profile, &var).map(Keys::Static),
        AwsSource::WebIdentity => web_identity(region, &var).map(Keys::WebIdentity),
        AwsSource::Container => container(&var).map(Keys::Container),
        // The AWS SDKs' order: environment, profile, web identity, container.
        AwsSource::Default => {
            if var(ENV_ID).is_some() {
                return from_env(&var).map(Keys::Static);
            }
            let no_profile = match from_profile(profile, &var) {
                Ok(k) => return Ok(Keys::Static(k)),
                Err(e @ (AwsCredsError::File { .. } | AwsCredsError::NoProfile { .. })) => e,
                Err(e) => return Err(e),
            };
            if var(WEB_IDENTITY_TOKEN_FILE).is_some() {
                return web_identity(region, &var).map(Keys::WebIdentity);
            }
            if var(CONTAINER_FULL_URI).is_some() || var(CONTAINER_RELATIVE_URI).is_some() {
                return container(&var).map(Keys::Container);
            }
            Err(AwsCredsError::Neither(Box::new(no_profile)))
        }
    }
}

/// Static keys only (tests): [`resolve`] for the sources that need no fetch.
#[cfg(test)]
pub(crate) fn load(
    source: AwsSource,
    profile: Option<&str>,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<AwsKeys, AwsCredsError> {
    match resolve(source, profile, "us-east-1", env)? {
        Keys::Static(k) => Ok(k),
        other => Err(AwsCredsError::Endpoint(format!("not static: {other:?}"))),
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

/// STS `AssumeRoleWithWebIdentity` with a token file (EKS's IRSA): unsigned, the token is
/// the proof. The file is read again for every fetch (the kubelet rotates it).
#[derive(Clone)]
pub(crate) struct WebIdentity {
    pub(crate) token_file: PathBuf,
    role_arn: String,
    session_name: String,
    /// STS's endpoint, with no path.
    pub(crate) endpoint: String,
}

impl std::fmt::Debug for WebIdentity {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "WebIdentity({}, {})", self.role_arn, self.endpoint)
    }
}

fn web_identity(
    region: &str,
    var: &dyn Fn(&str) -> Option<String>,
) -> Result<WebIdentity, AwsCredsError> {
    let token_file =
        var(WEB_IDENTITY_TOKEN_FILE).ok_or(AwsCredsError::EnvUnset(WEB_IDENTITY_TOKEN_FILE))?;
    let role_arn = var(ROLE_ARN).ok_or(AwsCredsError::EnvUnset(ROLE_ARN))?;
    let w = WebIdentity {
        token_file: PathBuf::from(token_file),
        role_arn,
        session_name: var(ROLE_SESSION_NAME).unwrap_or_else(|| "ai-gateway".into()),
        endpoint: var(STS_ENDPOINT)
            .map(|e| e.trim_end_matches('/').to_owned())
            .unwrap_or_else(|| format!("https://sts.{region}.amazonaws.com")),
    };
    // Readable now, so a wrong path fails at start-up.
    w.token().map(|_| w)
}

impl WebIdentity {
    fn token(&self) -> Result<String, AwsCredsError> {
        let t = std::fs::read_to_string(&self.token_file).map_err(|e| AwsCredsError::File {
            path: self.token_file.display().to_string(),
            why: e.kind().to_string(),
        })?;
        Ok(t.trim().to_owned())
    }

    /// The form body of one `AssumeRoleWithWebIdentity` call (POSTed to [`Self::endpoint`]).
    pub(crate) fn request_body(&self) -> Result<String, AwsCredsError> {
        let token = self.token()?;
        Ok(format!(
            "Action=AssumeRoleWithWebIdentity&Version=2011-06-15&RoleArn={}&RoleSessionName={}&WebIdentityToken={}",
            form_encode(&self.role_arn),
            form_encode(&self.session_name),
            form_encode(&token)
        ))
    }
}

/// STS's XML answer: the keys and how long they live (`now`: seconds since the epoch).
/// A refusal quotes only its `Code` and `Message`, on one line.
pub(crate) fn read_sts_answer(
    status: u16,
    body: &[u8],
    now: u64,
) -> Result<(AwsKeys, std::time::Duration), AwsCredsError> {
    let text = String::from_utf8_lossy(body);
    if !(200..300).contains(&status) {
        let code = xml_tag(&text, "Code").unwrap_or_default();
        let message = xml_tag(&text, "Message").unwrap_or_default();
        return Err(AwsCredsError::Endpoint(format!(
            "STS answered {status} {}: {}",
            one_line(code),
            one_line(message)
        )));
    }
    let get = |tag: &'static str| {
        xml_tag(&text, tag)
            .ok_or_else(|| AwsCredsError::Endpoint(format!("STS's answer has no {tag}")))
    };
    let keys = AwsKeys {
        access_key_id: get("AccessKeyId")?.to_owned(),
        secret_access_key: get("SecretAccessKey")?.to_owned(),
        session_token: Some(get("SessionToken")?.to_owned()),
    };
    Ok((keys, lifetime(get("Expiration")?, now)?))
}

/// The container credentials endpoint (ECS task roles, EKS Pod Identity): a GET with an
/// optional authorization token (from a variable, or a file read for every fetch).
#[derive(Clone)]
pub(crate) struct Container {
    pub(crate) uri: String,
    auth: Option<ContainerAuth>,
}

#[derive(Clone)]
enum ContainerAuth {
    Token(String),
    File(PathBuf),
}

impl std::fmt::Debug for Container {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Container({}, [redacted])", self.uri)
    }
}

fn container(var: &dyn Fn(&str) -> Option<String>) -> Result<Container, AwsCredsError> {
    let uri = match (var(CONTAINER_FULL_URI), var(CONTAINER_RELATIVE_URI)) {
        (_, Some(rel)) => format!("{ECS_HOST}{rel}"),
        (Some(full), None) => {
            check_container_uri(&full)?;
            full
        }
        (None, None) => return Err(AwsCredsError::EnvUnset(CONTAINER_FULL_URI)),
    };
    let auth = match (var(CONTAINER_TOKEN_FILE), var(CONTAINER_TOKEN)) {
        (Some(f), _) => Some(ContainerAuth::File(PathBuf::from(f))),
        (None, Some(t)) => Some(ContainerAuth::Token(t)),
        (None, None) => None,
    };
    let c = Container { uri, auth };
    c.authorization().map(|_| c)
}

/// As the AWS SDKs allow: HTTPS anywhere; plain HTTP only to the machine itself or the
/// container hosts (a credential must not cross a network in clear).
fn check_container_uri(uri: &str) -> Result<(), AwsCredsError> {
    let bad = |why: &str| AwsCredsError::Endpoint(format!("{CONTAINER_FULL_URI}: {why}"));
    let parsed: http::Uri = uri.parse().map_err(|_| bad("not a URL"))?;
    let host = parsed.host().ok_or_else(|| bad("has no host"))?;
    match parsed.scheme_str() {
        Some("https") => Ok(()),
        Some("http")
            if matches!(
                host,
                "localhost"
                    | "127.0.0.1"
                    | "[::1]"
                    | "169.254.170.2"
                    | "169.254.170.23"
                    | "[fd00:ec2::23]"
            ) || host.starts_with("127.") =>
        {
            Ok(())
        }
        Some("http") => Err(bad(
            "plain http only to loopback or the container hosts (169.254.170.2, 169.254.170.23)",
        )),
        _ => Err(bad("must be http or https")),
    }
}

impl Container {
    /// The `Authorization` header's value, if the endpoint takes one.
    pub(crate) fn authorization(&self) -> Result<Option<String>, AwsCredsError> {
        match &self.auth {
            None => Ok(None),
            Some(ContainerAuth::Token(t)) => Ok(Some(t.clone())),
            Some(ContainerAuth::File(p)) => std::fs::read_to_string(p)
                .map(|t| Some(t.trim().to_owned()))
                .map_err(|e| AwsCredsError::File {
                    path: p.display().to_string(),
                    why: e.kind().to_string(),
                }),
        }
    }
}

/// The endpoint's JSON answer: `AccessKeyId`, `SecretAccessKey`, `Token`, `Expiration`.
pub(crate) fn read_container_answer(
    status: u16,
    body: &[u8],
    now: u64,
) -> Result<(AwsKeys, std::time::Duration), AwsCredsError> {
    let v: serde_json::Value = serde_json::from_slice(body).unwrap_or_default();
    let s = |k: &str| v.get(k).and_then(serde_json::Value::as_str);
    if !(200..300).contains(&status) {
        let why = s("message")
            .or(s("Message"))
            .or(s("Code"))
            .unwrap_or_default();
        return Err(AwsCredsError::Endpoint(format!(
            "the container credentials endpoint answered {status}: {}",
            one_line(why)
        )));
    }
    let get = |k: &'static str| {
        s(k).map(str::to_owned).ok_or_else(|| {
            AwsCredsError::Endpoint(format!("the container credentials answer has no {k}"))
        })
    };
    let keys = AwsKeys {
        access_key_id: get("AccessKeyId")?,
        secret_access_key: get("SecretAccessKey")?,
        session_token: s("Token").map(str::to_owned),
    };
    Ok((keys, lifetime(&get("Expiration")?, now)?))
}

/// How long from `now` until `expiration` (`2026-12-05T12:00:00Z`, fractions and offsets
/// of UTC refused); at most a day, at least nothing.
fn lifetime(expiration: &str, now: u64) -> Result<std::time::Duration, AwsCredsError> {
    let at = rfc3339_utc(expiration)
        .ok_or_else(|| AwsCredsError::Endpoint("the keys' Expiration is not a UTC time".into()))?;
    Ok(std::time::Duration::from_secs(
        at.saturating_sub(now).min(24 * 3600),
    ))
}

/// Seconds since the epoch of `YYYY-MM-DDThh:mm:ss[.fff]Z`.
fn rfc3339_utc(s: &str) -> Option<u64> {
    let s = s.trim().strip_suffix('Z')?;
    let (date, time) = s.split_once('T')?;
    let time = time.split('.').next()?;
    let mut d = date.split('-').map(|p| p.parse::<i64>().ok());
    let (y, m, day) = (d.next()??, d.next()??, d.next()??);
    let mut t = time.split(':').map(|p| p.parse::<i64>().ok());
    let (h, min, sec) = (t.next()??, t.next()??, t.next()??);
    if !(1..=12).contains(&m) || !(1..=31).contains(&day) || h > 23 || min > 59 || sec > 60 {
        return None;
    }
    // Days from the civil date (Howard Hinnant's algorithm).
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    u64::try_from(days * 86_400 + h * 3600 + min * 60 + sec).ok()
}

/// The text of the first `<tag>...</tag>` (STS's answers hold no nesting of one name, no
/// CDATA; XML's five escapes are undone).
fn xml_tag<'a>(text: &'a str, tag: &str) -> Option<&'a str> {
    let open = format!("<{tag}>");
    let start = text.find(&open)? + open.len();
    let end = text[start..].find(&format!("</{tag}>"))? + start;
    Some(text[start..end].trim())
}

fn one_line(s: &str) -> String {
    s.split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
        .chars()
        .take(200)
        .collect()
}

/// `application/x-www-form-urlencoded` for one value: unreserved characters kept.
fn form_encode(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~') {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
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

    #[test]
    fn web_identity_and_sts_answers() {
        let dir = std::env::temp_dir().join(format!("gw-aws-wi-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let token = dir.join("token");
        std::fs::write(&token, "eyJ.tok+en/=\n").unwrap();
        let t = token.to_str().unwrap();
        let env = env_of(&[
            ("AWS_WEB_IDENTITY_TOKEN_FILE", t),
            ("AWS_ROLE_ARN", "arn:aws:iam::1:role/r"),
            ("AWS_SHARED_CREDENTIALS_FILE", "/nonexistent/x"),
        ]);
        let Keys::WebIdentity(w) = resolve(AwsSource::Default, None, "eu-west-1", &env).unwrap()
        else {
            panic!("not web identity");
        };
        assert_eq!(w.endpoint, "https://sts.eu-west-1.amazonaws.com");
        assert_eq!(
            w.request_body().unwrap(),
            "Action=AssumeRoleWithWebIdentity&Version=2011-06-15&RoleArn=arn%3Aaws%3Aiam%3A%3A1%3Arole%2Fr&RoleSessionName=ai-gateway&WebIdentityToken=eyJ.tok%2Ben%2F%3D"
        );
        assert!(!format!("{w:?}").contains("eyJ"));
        let ok =
            b"<AssumeRoleWithWebIdentityResponse><AssumeRoleWithWebIdentityResult><Credentials>\
            <AccessKeyId>ASIA1</AccessKeyId><SecretAccessKey>sek</SecretAccessKey>\
            <SessionToken>stok</SessionToken><Expiration>2026-12-05T12:00:00Z</Expiration>\
            </Credentials></AssumeRoleWithWebIdentityResult></AssumeRoleWithWebIdentityResponse>";
        let now = rfc3339_utc("2026-12-05T11:00:00Z").unwrap();
        let (k, life) = read_sts_answer(200, ok, now).unwrap();
        assert_eq!(
            (&*k.access_key_id, k.session_token.as_deref()),
            ("ASIA1", Some("stok"))
        );
        assert_eq!(life, std::time::Duration::from_secs(3600));
        let refused = b"<ErrorResponse><Error><Type>Sender</Type><Code>InvalidIdentityToken</Code>\
            <Message>Couldn't retrieve\n verification key</Message></Error></ErrorResponse>";
        let e = read_sts_answer(400, refused, now).unwrap_err().to_string();
        assert_eq!(
            e,
            "STS answered 400 InvalidIdentityToken: Couldn't retrieve verification key"
        );
        std::fs::remove_dir_all(&dir).unwrap();
        let e = resolve(
            AwsSource::WebIdentity,
            None,
            "r",
            &env_of(&[("AWS_ROLE_ARN", "a")]),
        )
        .unwrap_err();
        assert_eq!(e, AwsCredsError::EnvUnset("AWS_WEB_IDENTITY_TOKEN_FILE"));
    }

    #[test]
    fn container_endpoint_and_answers() {
        let env = env_of(&[
            (
                "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI",
                "/v2/credentials/abc",
            ),
            ("AWS_CONTAINER_AUTHORIZATION_TOKEN", "ctok"),
        ]);
        let Keys::Container(c) = resolve(AwsSource::Container, None, "r", &env).unwrap() else {
            panic!("not container");
        };
        assert_eq!(c.uri, "http://169.254.170.2/v2/credentials/abc");
        assert_eq!(c.authorization().unwrap().as_deref(), Some("ctok"));
        assert!(!format!("{c:?}").contains("ctok"));
        for (uri, ok) in [
            ("http://127.0.0.1:8080/creds", true),
            ("https://creds.example.com/x", true),
            ("http://169.254.170.23/v1/credentials", true),
            ("http://example.com/creds", false),
            ("ftp://127.0.0.1/x", false),
        ] {
            let env = env_of(&[("AWS_CONTAINER_CREDENTIALS_FULL_URI", uri)]);
            assert_eq!(
                resolve(AwsSource::Container, None, "r", &env).is_ok(),
                ok,
                "{uri}"
            );
        }
        let now = rfc3339_utc("2026-01-01T00:00:00Z").unwrap();
        let body = br#"{"AccessKeyId":"ASIA2","SecretAccessKey":"s","Token":"t","Expiration":"2026-01-01T06:00:00Z"}"#;
        let (k, life) = read_container_answer(200, body, now).unwrap();
        assert_eq!((&*k.access_key_id, life.as_secs()), ("ASIA2", 6 * 3600));
        let e = read_container_answer(403, br#"{"message":"denied"}"#, now).unwrap_err();
        assert!(e.to_string().contains("403: denied"), "{e}");
        assert!(read_container_answer(200, br#"{"AccessKeyId":"a"}"#, now).is_err());
    }

    #[test]
    fn utc_times() {
        assert_eq!(rfc3339_utc("1970-01-01T00:00:00Z"), Some(0));
        assert_eq!(rfc3339_utc("2000-03-01T00:00:00Z"), Some(951_868_800));
        assert_eq!(rfc3339_utc("2026-12-05T10:57:36.123Z"), Some(1_796_468_256));
        for bad in [
            "2026-12-05",
            "2026-13-01T00:00:00Z",
            "2026-12-05T10:57:36+01:00",
            "",
        ] {
            assert_eq!(rfc3339_utc(bad), None, "{bad}");
        }
    }
}
