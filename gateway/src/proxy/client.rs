//! The pooled upstream HTTP(S) client and upstream URLs.

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http::Uri;
use http_body_util::Full;
use hyper_rustls::HttpsConnector;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::client::legacy::Client;
use hyper_util::rt::{TokioExecutor, TokioTimer};

use crate::config::Upstream;

pub type UpstreamClient = Client<HttpsConnector<HttpConnector>, Full<Bytes>>;

/// A validated upstream base URL: scheme, authority and an optional path prefix.
#[derive(Debug, Clone)]
pub struct UpstreamUrl {
    scheme: http::uri::Scheme,
    authority: http::uri::Authority,
    prefix: String,
}

impl UpstreamUrl {
    pub fn parse(raw: &str) -> Result<UpstreamUrl, String> {
        // Errors quote the URL without any `user:pass@`, which must never reach a log.
        let shown = redact_userinfo(raw);
        let s = shown.as_str();
        let uri: Uri = raw
            .parse()
            .map_err(|e| format!("{s:?} is not a URL: {e}"))?;
        let scheme = uri
            .scheme()
            .cloned()
            .ok_or_else(|| format!("{s:?} has no scheme"))?;
        if scheme != http::uri::Scheme::HTTP && scheme != http::uri::Scheme::HTTPS {
            return Err(format!("{s:?}: scheme must be http or https"));
        }
        let authority = uri
            .authority()
            .cloned()
            .ok_or_else(|| format!("{s:?} has no host"))?;
        if authority.as_str().contains('@') {
            return Err(format!(
                "{s:?}: credentials in the URL are not allowed (put the upstream key in api_key_env)"
            ));
        }
        if uri.query().is_some() {
            return Err(format!("{s:?}: a base URL cannot have a query"));
        }
        let prefix = uri.path().trim_end_matches('/').to_owned();
        Ok(UpstreamUrl {
            scheme,
            authority,
            prefix,
        })
    }

    /// The full URI of `path` (e.g. `/v1/messages`) on this upstream.
    pub fn join(&self, path: &str) -> Uri {
        Uri::builder()
            .scheme(self.scheme.clone())
            .authority(self.authority.clone())
            .path_and_query(format!("{}{path}", self.prefix))
            .build()
            .expect("scheme, authority and path were validated")
    }
}

/// `raw` with the userinfo of its authority (`user:pass@`) replaced by `***@`.
pub fn redact_userinfo(raw: &str) -> String {
    let start = raw.find("://").map_or(0, |i| i + 3);
    let end = raw[start..]
        .find(['/', '?', '#'])
        .map_or(raw.len(), |i| start + i);
    match raw[start..end].rfind('@') {
        Some(at) => format!("{}***{}", &raw[..start], &raw[start + at..]),
        None => raw.to_owned(),
    }
}

/// Builds the client: keep-alive pool, TCP_NODELAY (Nagle + delayed ACK would add ~40 ms),
/// connect timeout, and rustls with the webpki roots plus an optional extra CA file.
pub fn build(cfg: &Upstream) -> Result<UpstreamClient, String> {
    let mut roots = rustls::RootCertStore::empty();
    roots.extend(webpki_roots::TLS_SERVER_ROOTS.iter().cloned());
    if let Some(path) = &cfg.extra_ca_file {
        let pem = std::fs::read(path)
            .map_err(|e| format!("upstream.extra_ca_file {}: {e}", path.display()))?;
        let mut added = 0;
        for cert in rustls_pemfile::certs(&mut &pem[..]) {
            let cert =
                cert.map_err(|e| format!("upstream.extra_ca_file {}: {e}", path.display()))?;
            roots
                .add(cert)
                .map_err(|e| format!("upstream.extra_ca_file {}: {e}", path.display()))?;
            added += 1;
        }
        if added == 0 {
            return Err(format!(
                "upstream.extra_ca_file {}: no PEM certificates found",
                path.display()
            ));
        }
    }
    let tls = rustls::ClientConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .map_err(|e| format!("TLS set-up: {e}"))?
    .with_root_certificates(roots)
    .with_no_client_auth();

    let mut http = HttpConnector::new();
    http.enforce_http(false);
    http.set_nodelay(true);
    http.set_connect_timeout(Some(Duration::from_millis(cfg.connect_timeout_ms)));
    let https = hyper_rustls::HttpsConnectorBuilder::new()
        .with_tls_config(tls)
        .https_or_http()
        .enable_http1()
        .wrap_connector(http);
    Ok(Client::builder(TokioExecutor::new())
        .timer(TokioTimer::new())
        .pool_timer(TokioTimer::new())
        .pool_idle_timeout(Duration::from_secs(90))
        .pool_max_idle_per_host(cfg.pool_max_idle_per_host)
        .build(https))
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
        let e = UpstreamUrl::parse("http://u:hunter2@x:1/p").unwrap_err();
        assert!(e.contains("credentials") && !e.contains("hunter2"), "{e}");
    }

    #[test]
    fn userinfo_is_redacted() {
        assert_eq!(redact_userinfo("http://u:p@h:1/x@y"), "http://***@h:1/x@y");
        assert_eq!(redact_userinfo("http://h/x"), "http://h/x");
        assert_eq!(redact_userinfo("u:p@h"), "***@h");
    }
}
