//! Upstream base URLs: validated once (config validation and the compiled state both parse
//! them), joined with a dialect's path per request. Errors never quote credentials.

use http::Uri;

/// A validated upstream base URL: scheme, authority and an optional path prefix.
#[derive(Debug, Clone)]
pub(crate) struct UpstreamUrl {
    scheme: http::uri::Scheme,
    authority: http::uri::Authority,
    prefix: String,
}

/// Why a base URL was refused; each names the URL as [`redact_userinfo`] shows it.
#[derive(Debug, thiserror::Error)]
pub(crate) enum UrlError {
    #[error("{0:?} is not a URL: {1}")]
    NotAUrl(String, http::uri::InvalidUri),
    #[error("{0:?} has no scheme")]
    NoScheme(String),
    #[error("{0:?}: scheme must be http or https")]
    Scheme(String),
    #[error("{0:?} has no host")]
    NoHost(String),
    #[error("{0:?}: credentials in the URL are not allowed (put the upstream key in api_key_env)")]
    Credentials(String),
    #[error("{0:?}: a base URL cannot have a query")]
    Query(String),
}

impl UpstreamUrl {
    pub(crate) fn parse(raw: &str) -> Result<UpstreamUrl, UrlError> {
        // Errors quote the URL without any `user:pass@`, which must never reach a log.
        let shown = || redact_userinfo(raw);
        let uri: Uri = raw.parse().map_err(|e| UrlError::NotAUrl(shown(), e))?;
        let scheme = uri
            .scheme()
            .cloned()
            .ok_or_else(|| UrlError::NoScheme(shown()))?;
        if scheme != http::uri::Scheme::HTTP && scheme != http::uri::Scheme::HTTPS {
            return Err(UrlError::Scheme(shown()));
        }
        let authority = uri
            .authority()
            .cloned()
            .ok_or_else(|| UrlError::NoHost(shown()))?;
        if authority.as_str().contains('@') {
            return Err(UrlError::Credentials(shown()));
        }
        if uri.query().is_some() {
            return Err(UrlError::Query(shown()));
        }
        let prefix = uri.path().trim_end_matches('/').to_owned();
        Ok(UpstreamUrl {
            scheme,
            authority,
            prefix,
        })
    }

    /// The full URI of `path` (e.g. `/v1/messages`) on this upstream.
    pub(crate) fn join(&self, path: &str) -> Uri {
        Uri::builder()
            .scheme(self.scheme.clone())
            .authority(self.authority.clone())
            .path_and_query(format!("{}{path}", self.prefix))
            .build()
            .expect("scheme, authority and path were validated")
    }
}

/// `raw` with the userinfo of its authority (`user:pass@`) replaced by `***@`.
pub(crate) fn redact_userinfo(raw: &str) -> String {
    let start = raw.find("://").map_or(0, |i| i + 3);
    let end = raw[start..]
        .find(['/', '?', '#'])
        .map_or(raw.len(), |i| start + i);
    match raw[start..end].rfind('@') {
        Some(at) => format!("{}***{}", &raw[..start], &raw[start + at..]),
        None => raw.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn join_keeps_prefix() {
        let u = UpstreamUrl::parse("https://example.com/openai/").unwrap();
        assert_eq!(
            u.join("/v1/responses").to_string(),
            "https://example.com/openai/v1/responses"
        );
        let u = UpstreamUrl::parse("http://127.0.0.1:9000").unwrap();
        assert_eq!(
            u.join("/v1/messages").to_string(),
            "http://127.0.0.1:9000/v1/messages"
        );
    }

    #[test]
    fn rejects_bad_urls() {
        assert!(UpstreamUrl::parse("ftp://x").is_err());
        assert!(UpstreamUrl::parse("/just/a/path").is_err());
        assert!(UpstreamUrl::parse("http://x/?a=b").is_err());
        let e = UpstreamUrl::parse("http://u:hunter2@x:1/p")
            .unwrap_err()
            .to_string();
        assert_eq!(
            e,
            "\"http://***@x:1/p\": credentials in the URL are not allowed (put the upstream key in api_key_env)"
        );
    }

    #[test]
    fn userinfo_is_redacted() {
        assert_eq!(redact_userinfo("http://u:p@h:1/x@y"), "http://***@h:1/x@y");
        assert_eq!(redact_userinfo("http://h/x"), "http://h/x");
        assert_eq!(redact_userinfo("u:p@h"), "***@h");
    }
}
