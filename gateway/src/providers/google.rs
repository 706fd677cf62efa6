//! Google Vertex AI: its URLs, and access tokens from a service-account key.
//!
//! A token is got as google-auth gets it (`google/oauth2/service_account.py`,
//! `_client.py::jwt_grant`): an RS256 JWT, signed with the key's private key, posted as the
//! `assertion` of a `jwt-bearer` grant to the key's `token_uri`. This module builds the
//! assertion and reads the answer; the exchange itself goes through the gateway's own
//! upstream client (`crate::credentials`), so its CA file and timeouts apply.

use std::time::Duration;

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use ring::rand::SystemRandom;
use ring::signature::{RsaKeyPair, RSA_PKCS1_SHA256};
use serde::Deserialize;

/// The scope Vertex AI takes (google-auth's `cloud-platform`).
pub(crate) const SCOPE: &str = "https://www.googleapis.com/auth/cloud-platform";
/// The assertion's audience: google-auth uses this constant whatever `token_uri` says.
pub(crate) const AUDIENCE: &str = "https://oauth2.googleapis.com/token";
/// The longest lifetime Google grants an assertion.
const ASSERTION_LIFETIME: u64 = 3600;
/// The body Anthropic's SDK sends Claude on Vertex in place of `model` (spliced in by
/// `proxy::request`, whose constant a test holds equal to this).
#[cfg(test)]
pub(crate) const ANTHROPIC_VERSION: &str = "vertex-2023-10-16";

/// A service-account key file (`type = "service_account"`), its private key parsed.
pub(crate) struct ServiceAccount {
    pub(crate) client_email: String,
    private_key_id: String,
    pub(crate) project_id: Option<String>,
    pub(crate) token_uri: String,
    key: RsaKeyPair,
}

impl std::fmt::Debug for ServiceAccount {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ServiceAccount")
            .field("client_email", &self.client_email)
            .field("private_key", &"[redacted]")
            .finish()
    }
}

/// Why a service-account file cannot be used. Names the field, never its value.
#[derive(Debug, thiserror::Error)]
pub(crate) enum KeyFileError {
    #[error("is not a JSON object with string fields (a service-account key file)")]
    NotJson,
    #[error("has type {0:?}, not \"service_account\"")]
    WrongType(String),
    #[error("lacks the field `{0}`")]
    Missing(&'static str),
    #[error("field `private_key` is not a PKCS#8 PEM RSA private key")]
    BadKey,
}

#[derive(Deserialize)]
struct KeyFile {
    #[serde(rename = "type")]
    kind: Option<String>,
    client_email: Option<String>,
    private_key_id: Option<String>,
    private_key: Option<String>,
    project_id: Option<String>,
    token_uri: Option<String>,
}

impl ServiceAccount {
    pub(crate) fn from_json(json: &[u8]) -> Result<ServiceAccount, KeyFileError> {
        let f: KeyFile = serde_json::from_slice(json).map_err(|_| KeyFileError::NotJson)?;
        match f.kind.as_deref() {
            Some("service_account") => {}
            Some(other) => return Err(KeyFileError::WrongType(other.to_owned())),
            None => return Err(KeyFileError::Missing("type")),
        }
        let need = |v: Option<String>, name| {
            v.filter(|s| !s.is_empty())
                .ok_or(KeyFileError::Missing(name))
        };
        let pem = need(f.private_key, "private_key")?;
        let der = rustls_pemfile::pkcs8_private_keys(&mut pem.as_bytes())
            .next()
            .and_then(Result::ok)
            .ok_or(KeyFileError::BadKey)?;
        let key =
            RsaKeyPair::from_pkcs8(der.secret_pkcs8_der()).map_err(|_| KeyFileError::BadKey)?;
        Ok(ServiceAccount {
            client_email: need(f.client_email, "client_email")?,
            private_key_id: need(f.private_key_id, "private_key_id")?,
            project_id: f.project_id.filter(|p| !p.is_empty()),
            token_uri: need(f.token_uri, "token_uri")?,
            key,
        })
    }

    /// The signed JWT asserting this account at `now` (seconds since the epoch), with the
    /// header and claims google-auth writes.
    pub(crate) fn assertion(&self, now: u64) -> String {
        let header = serde_json::json!({"alg": "RS256", "typ": "JWT", "kid": self.private_key_id});
        let claims = serde_json::json!({
            "iat": now,
            "exp": now + ASSERTION_LIFETIME,
            "iss": self.client_email,
            "aud": AUDIENCE,
            "scope": SCOPE,
        });
        let mut jwt = URL_SAFE_NO_PAD.encode(header.to_string());
        jwt.push('.');
        jwt.push_str(&URL_SAFE_NO_PAD.encode(claims.to_string()));
        let mut sig = vec![0; self.key.public().modulus_len()];
        // Signing fails only if the RNG does (padding is deterministic for PKCS#1 v1.5).
        if self
            .key
            .sign(
                &RSA_PKCS1_SHA256,
                &SystemRandom::new(),
                jwt.as_bytes(),
                &mut sig,
            )
            .is_err()
        {
            sig.clear();
        }
        jwt.push('.');
        jwt.push_str(&URL_SAFE_NO_PAD.encode(&sig));
        jwt
    }

    /// The form body of the token request (`application/x-www-form-urlencoded`). The
    /// assertion is base64url and dots, nothing to escape.
    pub(crate) fn token_request_body(&self, now: u64) -> String {
        format!(
            "grant_type=urn%3Aietf%3Aparams%3Aoauth%3Agrant-type%3Ajwt-bearer&assertion={}",
            self.assertion(now)
        )
    }
}

/// Why a token endpoint's answer gave no token. Quotes only the endpoint's `error` and
/// `error_description`, never a token or the assertion.
#[derive(Debug, thiserror::Error)]
pub(crate) enum TokenError {
    #[error("token endpoint answered {status}: {error}")]
    Refused { status: u16, error: String },
    #[error("token endpoint answer has no access_token and expires_in")]
    Shape,
}

#[derive(Deserialize)]
struct TokenAnswer {
    access_token: Option<String>,
    expires_in: Option<f64>,
    error: Option<String>,
    error_description: Option<String>,
}

/// The longest lifetime believed: a day (Google grants an hour). A larger claim, or one
/// `Duration` cannot hold, would only postpone the refresh past the token's real end.
const MAX_LIFETIME_S: f64 = 86_400.0;
/// The most of an endpoint's error text quoted in the log.
const MAX_ERROR_CHARS: usize = 200;

/// The token and its lifetime from a token endpoint's answer.
pub(crate) fn read_token_answer(
    status: u16,
    body: &[u8],
) -> Result<(String, Duration), TokenError> {
    let answer: Option<TokenAnswer> = serde_json::from_slice(body).ok();
    if !(200..300).contains(&status) {
        let error = answer
            .map(|a| {
                let mut e = a.error.unwrap_or_default();
                if let Some(d) = a.error_description {
                    e = format!("{e} ({d})");
                }
                e
            })
            // Quoted in a log line: one line, bounded.
            .map(|e| {
                e.chars()
                    .map(|c| if c.is_control() { ' ' } else { c })
                    .take(MAX_ERROR_CHARS)
                    .collect::<String>()
            })
            .filter(|e| !e.is_empty())
            .unwrap_or_else(|| "no error description".to_owned());
        return Err(TokenError::Refused { status, error });
    }
    match answer {
        Some(TokenAnswer {
            access_token: Some(t),
            expires_in: Some(s),
            ..
        }) if !t.is_empty() && s.is_finite() && s >= 0.0 => {
            Ok((t, Duration::from_secs_f64(s.min(MAX_LIFETIME_S))))
        }
        _ => Err(TokenError::Shape),
    }
}

/// Vertex's host for a location: `global` has none in its name, the multi-regions `us`
/// and `eu` their own (google-genai `_api_client.py`, Anthropic's `lib/vertex`).
pub(crate) fn default_base_url(location: &str) -> String {
    match location {
        "global" => "https://aiplatform.googleapis.com".to_owned(),
        "us" | "eu" => format!("https://aiplatform.{location}.rep.googleapis.com"),
        l => format!("https://{l}-aiplatform.googleapis.com"),
    }
}

/// A publisher's models, as a path on the base URL: `/v1/projects/{p}/locations/{l}/
/// publishers/{google|anthropic}/models/{model}` (the method follows after a `:`).
pub(crate) fn model_path(project: &str, location: &str, publisher: &str, model: &str) -> String {
    format!("/v1/projects/{project}/locations/{location}/publishers/{publisher}/models/{model}")
}

/// A location, a project or a model, which go into URLs as they are.
pub(crate) fn check_path_segment(s: &str) -> Result<(), &'static str> {
    if s.is_empty() {
        return Err("must not be empty");
    }
    if !s
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'@'))
    {
        return Err("may hold only letters, digits, '-', '_', '.' and '@'");
    }
    Ok(())
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use ring::signature::{UnparsedPublicKey, RSA_PKCS1_2048_8192_SHA256};

    /// A PKCS#8 RSA key made by `openssl genpkey` for this test run (none is committed);
    /// `None` where openssl is missing.
    pub(crate) fn fresh_pem() -> Option<String> {
        let out = std::process::Command::new("openssl")
            .args([
                "genpkey",
                "-algorithm",
                "RSA",
                "-pkeyopt",
                "rsa_keygen_bits:2048",
            ])
            .output()
            .ok()?;
        out.status
            .success()
            .then(|| String::from_utf8(out.stdout).ok())?
    }

    fn key_file(pem: &str) -> Vec<u8> {
        serde_json::to_vec(&serde_json::json!({
            "type": "service_account", "project_id": "proj-1", "private_key_id": "kid-1",
            "private_key": pem, "client_email": "sa@proj-1.iam.gserviceaccount.com",
            "token_uri": "http://127.0.0.1:1/token",
        }))
        .unwrap()
    }

    #[test]
    fn assertion_verifies_with_the_public_key_and_claims_match_google_auth() {
        let pem = fresh_pem()
            .expect("the Vertex tests need the openssl CLI (scripts/test-deps.sh installs it)");
        let sa = ServiceAccount::from_json(&key_file(&pem)).unwrap();
        assert_eq!(sa.project_id.as_deref(), Some("proj-1"));
        let jwt = sa.assertion(1_700_000_000);
        let parts: Vec<&str> = jwt.split('.').collect();
        assert_eq!(parts.len(), 3);
        let public = UnparsedPublicKey::new(&RSA_PKCS1_2048_8192_SHA256, sa.key.public().as_ref());
        let signed = format!("{}.{}", parts[0], parts[1]);
        let sig = URL_SAFE_NO_PAD.decode(parts[2]).unwrap();
        public
            .verify(signed.as_bytes(), &sig)
            .expect("a valid RS256 signature");
        // One flipped byte of the claims and it no longer verifies.
        assert!(public
            .verify(format!("{signed}x").as_bytes(), &sig)
            .is_err());
        let json = |s: &str| -> serde_json::Value {
            serde_json::from_slice(&URL_SAFE_NO_PAD.decode(s).unwrap()).unwrap()
        };
        assert_eq!(
            json(parts[0]),
            serde_json::json!({"alg":"RS256","typ":"JWT","kid":"kid-1"})
        );
        assert_eq!(
            json(parts[1]),
            serde_json::json!({"iat": 1_700_000_000u64, "exp": 1_700_003_600u64,
                "iss": "sa@proj-1.iam.gserviceaccount.com", "aud": AUDIENCE, "scope": SCOPE})
        );
        let shown = format!("{sa:?}");
        assert!(
            !shown.contains("PRIVATE") && shown.contains("[redacted]"),
            "{shown}"
        );
    }

    #[test]
    fn key_file_errors_name_the_field_never_the_value() {
        let pem = fresh_pem()
            .expect("the Vertex tests need the openssl CLI (scripts/test-deps.sh installs it)");
        let mut v: serde_json::Value = serde_json::from_slice(&key_file(&pem)).unwrap();
        for (field, says) in [
            ("client_email", "lacks the field `client_email`"),
            ("private_key", "lacks the field `private_key`"),
            ("token_uri", "lacks the field `token_uri`"),
        ] {
            let mut w = v.clone();
            w.as_object_mut().unwrap().remove(field);
            let e = ServiceAccount::from_json(&serde_json::to_vec(&w).unwrap()).unwrap_err();
            assert_eq!(e.to_string(), says);
        }
        v["private_key"] =
            "-----BEGIN PRIVATE KEY-----\nc2VjcmV0LWJ5dGVz\n-----END PRIVATE KEY-----\n".into();
        let e = ServiceAccount::from_json(&serde_json::to_vec(&v).unwrap()).unwrap_err();
        assert!(!e.to_string().contains("c2VjcmV0"), "{e}");
        assert!(matches!(e, KeyFileError::BadKey));
        assert!(matches!(
            ServiceAccount::from_json(b"[1]"),
            Err(KeyFileError::NotJson)
        ));
    }

    #[test]
    fn token_answers() {
        let ok = br#"{"access_token":"ya29.x","expires_in":3599,"token_type":"Bearer"}"#;
        assert_eq!(
            read_token_answer(200, ok).unwrap(),
            ("ya29.x".to_owned(), Duration::from_secs(3599))
        );
        let e = read_token_answer(
            400,
            br#"{"error":"invalid_grant","error_description":"Invalid JWT Signature."}"#,
        )
        .unwrap_err()
        .to_string();
        assert_eq!(
            e,
            "token endpoint answered 400: invalid_grant (Invalid JWT Signature.)"
        );
        assert!(matches!(
            read_token_answer(200, b"{}"),
            Err(TokenError::Shape)
        ));
    }

    #[test]
    fn urls() {
        assert_eq!(
            default_base_url("global"),
            "https://aiplatform.googleapis.com"
        );
        assert_eq!(
            default_base_url("eu"),
            "https://aiplatform.eu.rep.googleapis.com"
        );
        assert_eq!(
            default_base_url("us-central1"),
            "https://us-central1-aiplatform.googleapis.com"
        );
        assert_eq!(
            model_path("p", "us-east5", "anthropic", "claude-sonnet-4-5@20250929"),
            "/v1/projects/p/locations/us-east5/publishers/anthropic/models/claude-sonnet-4-5@20250929"
        );
        assert!(check_path_segment("claude-sonnet-4-5@20250929").is_ok());
        for bad in ["", "a/b", "a:b", "a?b", "a b"] {
            assert!(check_path_segment(bad).is_err(), "{bad:?}");
        }
    }
}
