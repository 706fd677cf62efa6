//! How a target authenticates to its upstream: nothing, a key fixed at start-up, or a
//! credential that rotates (`super::refresh`: a Vertex token, Bedrock's fetched AWS keys).
//! The proxy asks for the credential of each attempt and sends what it gets; the same
//! credential, with the request it signed, says what to redact from the answer.

use std::sync::Arc;
use std::time::Duration;

use http::{HeaderMap, HeaderName, HeaderValue};

use super::refresh::Refreshing;
use super::{upstream_auth, InvalidUpstreamKey, KeyHeader};
use crate::redact::Secrets;

/// What one attempt sends upstream: a header, and the secrets in it, which are redacted from
/// whatever the upstream sends back (an error that echoes the request).
pub(crate) struct Credential {
    how: How,
    /// Built once per credential: a static key's matcher serves every request.
    secrets: Option<Arc<Secrets>>,
}

enum How {
    /// The same header on every request.
    Header {
        name: HeaderName,
        value: HeaderValue,
    },
    /// A signature over each request (AWS SigV4, Bedrock).
    SigV4(super::sigv4::Signer),
}

impl Credential {
    /// `key` in `header`'s form (`Bearer KEY`, `x-api-key: KEY`...), marked sensitive.
    pub(crate) fn new(header: KeyHeader, key: &str) -> Result<Credential, InvalidUpstreamKey> {
        let (name, value) = upstream_auth(header, key)?;
        Ok(Credential {
            how: How::Header { name, value },
            secrets: Secrets::new([key.as_bytes()]),
        })
    }

    /// AWS keys that sign each request for `region` (Bedrock). Redacted from answers: the
    /// session token (it travels, in `x-amz-security-token`), the secret key (it never
    /// travels; redacting it costs nothing) and each request's signature ([`Self::secrets`]):
    /// with static keys a signed request replays for about 15 minutes.
    pub(crate) fn sigv4(keys: &super::sigv4::AwsKeys, region: &str) -> Credential {
        let token = keys.session_token.as_deref().unwrap_or_default();
        Credential {
            how: How::SigV4(super::sigv4::Signer::new(keys, region)),
            secrets: Secrets::new([token.as_bytes(), keys.secret_access_key.as_bytes()]),
        }
    }

    /// Sets the credential on an upstream request to `uri` (as sent, on `host`) with
    /// `body`: a fixed header, or a signature over all three (set last, once every signed
    /// header is final).
    pub(crate) fn apply(
        &self,
        h: &mut HeaderMap,
        uri: &http::Uri,
        host: Option<&HeaderValue>,
        body: &[u8],
    ) -> Result<(), super::sigv4::SignError> {
        match &self.how {
            How::Header { name, value } => {
                h.insert(name.clone(), value.clone());
                Ok(())
            }
            How::SigV4(s) => {
                let host = host.and_then(|v| v.to_str().ok()).unwrap_or_default();
                s.sign(
                    &uri.to_string(),
                    host,
                    body,
                    std::time::SystemTime::now(),
                    h,
                )
            }
        }
    }

    /// What to redact from the answer to a request this credential was applied to (`sent`,
    /// its headers): the credential's secrets, and a SigV4 request's signature.
    pub(crate) fn secrets(&self, sent: &HeaderMap) -> Option<Arc<Secrets>> {
        let signature = match &self.how {
            How::Header { .. } => None,
            How::SigV4(_) => sent.get(http::header::AUTHORIZATION).and_then(|v| {
                v.as_bytes()
                    .split(|&b| b == b',')
                    .find_map(|p| p.trim_ascii().strip_prefix(b"Signature="))
            }),
        };
        match (signature, &self.secrets) {
            (Some(sig), Some(s)) => s.with(sig),
            (Some(sig), None) => Secrets::new([sig]),
            (None, s) => s.clone(),
        }
    }
}

impl std::fmt::Debug for Credential {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.how {
            How::Header { name, .. } => write!(f, "Credential({name}: [redacted])"),
            How::SigV4(s) => write!(f, "Credential({s:?})"),
        }
    }
}

/// A target's credential source (replaces a fixed header and secret per target).
#[derive(Debug)]
pub(crate) enum UpstreamAuth {
    /// No credential is sent (a local server).
    None,
    /// A key read once at start-up: OpenAI, Anthropic, Gemini keys, Azure's `api-key`, a
    /// Vertex access token minted elsewhere, Bedrock's API key or static AWS keys.
    Static(Arc<Credential>),
    /// A credential kept fresh in the background: a Vertex service account's access token,
    /// or Bedrock's AWS keys from a web identity or a container endpoint.
    Refreshing(Arc<Refreshing<Credential>>),
}

/// No valid credential came within the wait (the token endpoint is down or slow).
#[derive(Debug)]
pub(crate) struct Unavailable;

impl UpstreamAuth {
    /// The credential for the next attempt, if the target sends one. A valid one is at
    /// hand at once; with none, this waits up to `wait` for the refresher.
    pub(crate) async fn credential(
        &self,
        wait: Duration,
    ) -> Result<Option<Arc<Credential>>, Unavailable> {
        match self {
            UpstreamAuth::None => Ok(None),
            UpstreamAuth::Static(c) => Ok(Some(c.clone())),
            UpstreamAuth::Refreshing(r) => match r.current() {
                Some(c) => Ok(Some(c)),
                None => r.wait(wait).await.map(Some).ok_or(Unavailable),
            },
        }
    }

    /// Whether a refused credential can be replaced (a static key is what it is).
    pub(crate) fn refreshes(&self) -> bool {
        matches!(self, UpstreamAuth::Refreshing(_))
    }

    /// The upstream refused `sent` as expired or revoked: a refreshing credential drops it
    /// and fetches a new one now.
    pub(crate) fn invalidate(&self, sent: &Arc<Credential>) {
        if let UpstreamAuth::Refreshing(r) = self {
            r.invalidate(sent);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn static_credential_is_applied_and_never_printed() {
        let c = Credential::new(KeyHeader::Bearer, "sk-secret-1").unwrap();
        let auth = UpstreamAuth::Static(Arc::new(c));
        let mut h = HeaderMap::new();
        let c = now(auth.credential(Duration::ZERO)).unwrap().unwrap();
        c.apply(&mut h, &http::Uri::from_static("http://x/"), None, b"")
            .unwrap();
        assert_eq!(h["authorization"], "Bearer sk-secret-1");
        assert!(h["authorization"].is_sensitive());
        let s = c.secrets(&h).unwrap();
        assert!(s.found_in(b"x sk-secret-1 y") && !s.found_in(b"sk-secret-2"));
        let shown = format!("{auth:?}");
        assert!(!shown.contains("sk-secret"), "{shown}");
        assert!(now(UpstreamAuth::None.credential(Duration::ZERO))
            .unwrap()
            .is_none());
        assert!(!auth.refreshes());
    }

    #[test]
    fn sigv4_credential_signs_and_redacts_the_token() {
        let keys = super::super::sigv4::AwsKeys {
            access_key_id: "AKID".into(),
            secret_access_key: "aws-secret".into(),
            session_token: Some("aws-session".into()),
        };
        let c = Credential::sigv4(&keys, "us-east-1");
        let mut h = HeaderMap::new();
        let host = HeaderValue::from_static("127.0.0.1:9");
        c.apply(
            &mut h,
            &http::Uri::from_static("http://127.0.0.1:9/model/m/converse"),
            Some(&host),
            b"{}",
        )
        .unwrap();
        assert!(h["authorization"]
            .to_str()
            .unwrap()
            .starts_with("AWS4-HMAC-SHA256 Credential=AKID/"));
        let auth = h["authorization"].to_str().unwrap();
        let signature = auth.rsplit("Signature=").next().unwrap();
        assert_eq!(signature.len(), 64, "{auth}");
        let s = c.secrets(&h).unwrap();
        for sent in ["aws-session", "aws-secret", signature] {
            assert!(s.found_in(sent.as_bytes()), "{sent}");
        }
        assert!(!s.found_in(b"AKID"));
        let shown = format!("{c:?}");
        assert!(
            !shown.contains("aws-secret") && !shown.contains("aws-session"),
            "{shown}"
        );
        let keys = super::super::sigv4::AwsKeys {
            session_token: None,
            ..keys
        };
        let c = Credential::sigv4(&keys, "r");
        assert!(c
            .secrets(&HeaderMap::new())
            .unwrap()
            .found_in(b"aws-secret"));
    }

    /// A future that is ready at once (no runtime needed), polled once.
    fn now<F: std::future::Future>(f: F) -> F::Output {
        let mut f = std::pin::pin!(f);
        let waker = std::task::Waker::noop();
        match f.as_mut().poll(&mut std::task::Context::from_waker(waker)) {
            std::task::Poll::Ready(v) => v,
            std::task::Poll::Pending => panic!("not ready at once"),
        }
    }
}
