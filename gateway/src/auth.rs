//! Gateway API keys: `Authorization: Bearer <key>`, `x-api-key: <key>` or (Google's ways)
//! `x-goog-api-key: <key>` and `?key=<key>` on every API route.

use std::sync::Arc;

use http::HeaderMap;
use subtle::ConstantTimeEq;

use crate::config::ApiKey;
use crate::ratelimit::{Limiter, Scope};

/// A configured key, compiled.
pub(crate) struct KeyEntry {
    pub(crate) name: Arc<str>,
    secret: Box<[u8]>,
    /// Allowed model indexes; `None` = every model.
    pub(crate) allowed: Option<Box<[bool]>>,
    pub(crate) limiter: Option<Limiter>,
    /// The `/v1/models` body this key sees.
    pub(crate) models_json: bytes::Bytes,
}

pub(crate) enum AuthOutcome<'a> {
    /// No keys configured: the gateway is open.
    Open,
    /// The key's index (for [`Keys::entry`]) and entry.
    Key(usize, &'a KeyEntry),
    Missing,
    Invalid,
}

/// A key whose secret vanished between validation and compilation (its env var was unset).
#[derive(Debug, thiserror::Error)]
#[error("key {0:?}: its secret is not set")]
pub(crate) struct UnsetSecret(String);

pub(crate) struct Keys {
    entries: Vec<KeyEntry>,
}

impl Keys {
    /// `model_index` maps model names to indexes; `models_json` renders a model list.
    pub(crate) fn compile(
        keys: &[ApiKey],
        model_index: impl Fn(&str) -> usize,
        model_count: usize,
        models_json: impl Fn(Option<&[bool]>) -> bytes::Bytes,
    ) -> Result<Keys, UnsetSecret> {
        let mut entries = Vec::with_capacity(keys.len());
        for k in keys {
            let secret = k.secret().ok_or_else(|| UnsetSecret(k.name.clone()))?;
            let allowed = k.models.as_ref().map(|names| {
                let mut allowed = vec![false; model_count];
                for n in names {
                    allowed[model_index(n)] = true;
                }
                allowed.into_boxed_slice()
            });
            let models_json = models_json(allowed.as_deref());
            entries.push(KeyEntry {
                name: k.name.as_str().into(),
                secret: secret.into_bytes().into_boxed_slice(),
                allowed,
                limiter: k.rate_limit.map(|l| Limiter::new(l, Scope::Key, &k.name)),
                models_json,
            });
        }
        Ok(Keys { entries })
    }

    pub(crate) fn entry(&self, index: usize) -> &KeyEntry {
        &self.entries[index]
    }

    /// `query`: the request's query string (Google's clients may send `?key=`).
    pub(crate) fn authenticate(&self, headers: &HeaderMap, query: Option<&str>) -> AuthOutcome<'_> {
        if self.entries.is_empty() {
            return AuthOutcome::Open;
        }
        let presented =
            presented_key(headers).or_else(|| crate::query::key(query).map(str::as_bytes));
        let Some(presented) = presented else {
            return AuthOutcome::Missing;
        };
        // Compare with every key, without an early exit, so timing says nothing about which
        // key (or how much of one) matched.
        let mut found = None;
        for (i, e) in self.entries.iter().enumerate() {
            if bool::from(e.secret.ct_eq(presented)) {
                found = Some(i);
            }
        }
        match found {
            Some(i) => AuthOutcome::Key(i, &self.entries[i]),
            None => AuthOutcome::Invalid,
        }
    }
}

impl KeyEntry {
    pub(crate) fn may_use(&self, model: usize) -> bool {
        self.allowed.as_ref().is_none_or(|a| a[model])
    }
}

fn presented_key(headers: &HeaderMap) -> Option<&[u8]> {
    if let Some(v) = headers.get(http::header::AUTHORIZATION) {
        let v = v.as_bytes();
        if v.len() > 7 && v[..7].eq_ignore_ascii_case(b"bearer ") {
            return Some(v[7..].trim_ascii());
        }
    }
    headers
        .get("x-api-key")
        .or_else(|| headers.get("x-goog-api-key"))
        .map(|v| v.as_bytes().trim_ascii())
}

#[cfg(test)]
mod tests {
    use super::*;
    use http::HeaderValue;

    fn keys() -> Keys {
        let cfg = vec![
            ApiKey {
                name: "a".into(),
                key: Some("secret-a".into()),
                key_env: None,
                models: None,
                rate_limit: None,
            },
            ApiKey {
                name: "b".into(),
                key: Some("secret-b".into()),
                key_env: None,
                models: Some(vec!["m1".into()]),
                rate_limit: None,
            },
        ];
        Keys::compile(
            &cfg,
            |n| if n == "m0" { 0 } else { 1 },
            2,
            |_| bytes::Bytes::new(),
        )
        .unwrap()
    }

    fn headers(name: &'static str, v: &str) -> HeaderMap {
        let mut h = HeaderMap::new();
        h.insert(name, HeaderValue::from_str(v).unwrap());
        h
    }

    #[test]
    fn bearer_and_x_api_key_both_work() {
        let k = keys();
        assert!(
            matches!(k.authenticate(&headers("authorization", "Bearer secret-a"), None), AuthOutcome::Key(_, e) if &*e.name == "a")
        );
        assert!(
            matches!(k.authenticate(&headers("authorization", "bearer secret-b"), None), AuthOutcome::Key(_, e) if &*e.name == "b")
        );
        assert!(
            matches!(k.authenticate(&headers("x-api-key", "secret-b"), None), AuthOutcome::Key(_, e) if &*e.name == "b")
        );
    }

    #[test]
    fn google_key_header_and_query() {
        let k = keys();
        assert!(
            matches!(k.authenticate(&headers("x-goog-api-key", "secret-a"), None), AuthOutcome::Key(_, e) if &*e.name == "a")
        );
        assert!(
            matches!(k.authenticate(&HeaderMap::new(), Some("alt=sse&key=secret-b")), AuthOutcome::Key(_, e) if &*e.name == "b")
        );
        assert!(matches!(
            k.authenticate(&HeaderMap::new(), Some("key=nope")),
            AuthOutcome::Invalid
        ));
    }

    #[test]
    fn wrong_and_missing_keys() {
        let k = keys();
        assert!(matches!(
            k.authenticate(&headers("x-api-key", "secret-"), None),
            AuthOutcome::Invalid
        ));
        assert!(matches!(
            k.authenticate(&headers("authorization", "Basic secret-a"), None),
            AuthOutcome::Missing
        ));
        assert!(matches!(
            k.authenticate(&HeaderMap::new(), None),
            AuthOutcome::Missing
        ));
    }

    #[test]
    fn allow_list() {
        let k = keys();
        let AuthOutcome::Key(_, b) = k.authenticate(&headers("x-api-key", "secret-b"), None) else {
            panic!()
        };
        assert!(b.may_use(1) && !b.may_use(0));
    }
}
