//! How a target authenticates to its upstream: nothing, a key fixed at start-up, or a
//! token that rotates (`super::refresh`). The proxy asks for the credential of each attempt
//! and sends what it gets; the same credential says what to redact from the answer.

use std::sync::Arc;

use http::{HeaderMap, HeaderName, HeaderValue};

use super::{upstream_auth, InvalidUpstreamKey, KeyHeader};

/// What one attempt sends upstream: a header, and the secret in it, which is redacted from
/// whatever the upstream sends back (an error that echoes the request).
pub(crate) struct Credential {
    name: HeaderName,
    value: HeaderValue,
    secret: Arc<[u8]>,
}

impl Credential {
    /// `key` in `header`'s form (`Bearer KEY`, `x-api-key: KEY`...), marked sensitive.
    pub(crate) fn new(header: KeyHeader, key: &str) -> Result<Credential, InvalidUpstreamKey> {
        let (name, value) = upstream_auth(header, key)?;
        Ok(Credential {
            name,
            value,
            secret: Arc::from(key.as_bytes()),
        })
    }

    /// Sets the header on an upstream request.
    pub(crate) fn apply(&self, h: &mut HeaderMap) {
        h.insert(self.name.clone(), self.value.clone());
    }

    /// The secret to redact from the upstream's answer.
    pub(crate) fn secret(&self) -> &Arc<[u8]> {
        &self.secret
    }
}

impl std::fmt::Debug for Credential {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Credential({}: [redacted])", self.name)
    }
}

/// A target's credential source (replaces a fixed header and secret per target).
#[derive(Debug)]
pub(crate) enum UpstreamAuth {
    /// No credential is sent (a local server).
    None,
    /// A key read once at start-up: OpenAI, Anthropic, Gemini keys, Azure's `api-key`.
    Static(Arc<Credential>),
}

impl UpstreamAuth {
    /// The credential for the next attempt, if the target sends one.
    pub(crate) fn credential(&self) -> Option<Arc<Credential>> {
        match self {
            UpstreamAuth::None => None,
            UpstreamAuth::Static(c) => Some(c.clone()),
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
        let c = auth.credential().unwrap();
        c.apply(&mut h);
        assert_eq!(h["authorization"], "Bearer sk-secret-1");
        assert!(h["authorization"].is_sensitive());
        assert_eq!(&**c.secret(), b"sk-secret-1");
        let shown = format!("{auth:?}");
        assert!(!shown.contains("sk-secret"), "{shown}");
        assert!(UpstreamAuth::None.credential().is_none());
    }
}
