//! AWS Signature Version 4 for Bedrock, through `aws-sigv4` (never hand-written). Only the
//! headers that reach AWS unchanged are signed: `host` and `content-type`; the signer adds
//! `x-amz-date` and, with a session token, `x-amz-security-token`. Forwarded client
//! headers are sent unsigned, so a proxy on the way that rewrites them breaks nothing.

use std::time::SystemTime;

use aws_credential_types::Credentials;
use aws_sigv4::http_request::{sign, SignableBody, SignableRequest, SigningSettings};
use aws_sigv4::sign::v4;
use aws_smithy_runtime_api::client::identity::Identity;
use http::{HeaderMap, HeaderName, HeaderValue};

/// The service name Bedrock Runtime signs for (`signingName` in its model), whatever the
/// host (`bedrock-runtime.REGION.amazonaws.com`).
pub(crate) const SERVICE: &str = "bedrock";

/// Static AWS keys: an access key id, its secret, and a session token for temporary ones.
#[derive(Clone)]
pub(crate) struct AwsKeys {
    pub(crate) access_key_id: String,
    pub(crate) secret_access_key: String,
    pub(crate) session_token: Option<String>,
}

impl std::fmt::Debug for AwsKeys {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The key id is no secret (AWS prints it in errors), but the rest is.
        write!(f, "AwsKeys({}, [redacted])", self.access_key_id)
    }
}

/// Signs requests for one region with one set of keys.
pub(crate) struct Signer {
    identity: Identity,
    region: Box<str>,
}

impl std::fmt::Debug for Signer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Signer({}, [redacted])", self.region)
    }
}

/// Why a request could not be signed (a URI `aws-sigv4` cannot parse; never the keys).
#[derive(Debug, thiserror::Error)]
#[error("the request could not be signed: {0}")]
pub(crate) struct SignError(String);

impl Signer {
    pub(crate) fn new(keys: &AwsKeys, region: &str) -> Signer {
        let creds = Credentials::new(
            keys.access_key_id.clone(),
            keys.secret_access_key.clone(),
            keys.session_token.clone(),
            None,
            "gateway",
        );
        Signer {
            identity: creds.into(),
            region: region.into(),
        }
    }

    /// Signs a JSON `POST` to `uri` (already percent-encoded, as sent) with `body` at
    /// `time`, and sets `authorization`, `x-amz-date` and (temporary keys)
    /// `x-amz-security-token` on `h`, the secret ones marked sensitive.
    pub(crate) fn sign(
        &self,
        uri: &str,
        host: &str,
        body: &[u8],
        time: SystemTime,
        h: &mut HeaderMap,
    ) -> Result<(), SignError> {
        let params = v4::SigningParams::builder()
            .identity(&self.identity)
            .region(&self.region)
            .name(SERVICE)
            .time(time)
            .settings(SigningSettings::default())
            .build()
            .map_err(|e| SignError(e.to_string()))?
            .into();
        let headers = [("host", host), ("content-type", "application/json")];
        let signable =
            SignableRequest::new("POST", uri, headers.into_iter(), SignableBody::Bytes(body))
                .map_err(|e| SignError(e.to_string()))?;
        let (instructions, _) = sign(signable, &params)
            .map_err(|e| SignError(e.to_string()))?
            .into_parts();
        h.insert(
            http::header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        );
        for (name, value) in instructions.headers() {
            let name = HeaderName::try_from(name).map_err(|e| SignError(e.to_string()))?;
            let mut value = HeaderValue::try_from(value).map_err(|e| SignError(e.to_string()))?;
            value.set_sensitive(name != "x-amz-date");
            h.insert(name, value);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The known answer from the plan (docs/design/cloud-providers-plan.md 1.1), computed
    /// with botocore: a model id with `:` (sent as `%3A`, signed double-encoded).
    #[test]
    fn botocore_known_answer() {
        let keys = AwsKeys {
            access_key_id: "AKIDEXAMPLE".into(),
            secret_access_key: "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY".into(),
            session_token: None,
        };
        let s = Signer::new(&keys, "us-east-1");
        let mut h = HeaderMap::new();
        let time = SystemTime::UNIX_EPOCH + std::time::Duration::from_secs(1_735_689_600);
        s.sign(
            "https://bedrock-runtime.us-east-1.amazonaws.com/model/anthropic.claude-3-5-sonnet-20240620-v1%3A0/converse",
            "bedrock-runtime.us-east-1.amazonaws.com",
            br#"{"messages":[{"role":"user","content":[{"text":"hi"}]}]}"#,
            time,
            &mut h,
        )
        .unwrap();
        assert_eq!(h["x-amz-date"], "20250101T000000Z");
        let auth = h["authorization"].to_str().unwrap();
        assert!(
            auth.starts_with(
                "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20250101/us-east-1/bedrock/aws4_request, \
                 SignedHeaders=content-type;host;x-amz-date, "
            ),
            "{auth}"
        );
        assert!(
            auth.ends_with(
                "Signature=cbdb98d2c2c2b2c6a6e1c5512da6ab378fc553a93aaaef45b706c44f599ae679"
            ),
            "{auth}"
        );
        assert!(h["authorization"].is_sensitive());
        assert!(!format!("{s:?} {keys:?}").contains("EXAMPLEKEY"));
    }

    #[test]
    fn session_token_is_signed_and_sent() {
        let keys = AwsKeys {
            access_key_id: "AKID".into(),
            secret_access_key: "secret".into(),
            session_token: Some("tok".into()),
        };
        let mut h = HeaderMap::new();
        Signer::new(&keys, "eu-west-1")
            .sign(
                "http://127.0.0.1:1/model/m/converse",
                "127.0.0.1:1",
                b"{}",
                SystemTime::now(),
                &mut h,
            )
            .unwrap();
        assert_eq!(h["x-amz-security-token"], "tok");
        assert!(h["x-amz-security-token"].is_sensitive());
        let auth = h["authorization"].to_str().unwrap();
        assert!(
            auth.contains("SignedHeaders=content-type;host;x-amz-date;x-amz-security-token"),
            "{auth}"
        );
    }
}
