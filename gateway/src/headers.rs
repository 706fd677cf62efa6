//! Which headers cross the gateway, in each direction.
//!
//! Both directions are allow-lists. Towards the upstream only headers that cannot change
//! who pays or what is billed: the operator's key is injected, so a client header such as
//! `OpenAI-Organization` or `OpenAI-Project` would aim that key at another account. A model
//! may allow more (`forward_headers`). Towards the client only the body's type and
//! encoding, request ids and rate-limit headers come back; an upstream's account headers
//! (`openai-organization`, `openai-project`, ...) stay behind.

use http::{header, HeaderMap, HeaderName, HeaderValue, Uri};

/// Client request headers always forwarded. `content-type` is not among them: the body was
/// parsed as JSON, so the gateway sends `application/json` whatever the client claimed.
pub(crate) const FORWARDED: [HeaderName; 4] = [
    header::ACCEPT,
    header::USER_AGENT,
    HeaderName::from_static("anthropic-version"),
    HeaderName::from_static("anthropic-beta"),
];

/// On a translated answer: the fields translation dropped, comma-separated (TRANSLATION.md).
pub(crate) const X_GATEWAY_DROPPED_FIELDS: HeaderName =
    HeaderName::from_static("x-gateway-dropped-fields");

/// Headers `forward_headers` may never name: credentials, framing, hop-by-hop and the
/// headers the gateway sets itself.
const NEVER_FORWARDED: [&str; 21] = [
    "authorization",
    "x-goog-api-key",
    "proxy-authorization",
    "x-api-key",
    "api-key",
    "cookie",
    "host",
    "content-length",
    "content-type",
    "content-encoding",
    "transfer-encoding",
    "connection",
    "keep-alive",
    "proxy-connection",
    "te",
    "trailer",
    "upgrade",
    "expect",
    "accept-encoding",
    "x-request-id",
    "x-gateway-request-id",
];

/// Why a `forward_headers` entry was refused.
#[derive(Debug, thiserror::Error)]
pub(crate) enum ForwardError {
    #[error("{0:?} is not a header name")]
    NotAName(String),
    #[error("{0:?} cannot be forwarded (credentials, framing and gateway-set headers never are)")]
    Never(String),
}

/// Validates one `forward_headers` entry (config time).
pub(crate) fn check_extra_forward(name: &str) -> Result<HeaderName, ForwardError> {
    let h = HeaderName::from_bytes(name.as_bytes())
        .map_err(|_| ForwardError::NotAName(name.to_owned()))?;
    if NEVER_FORWARDED.contains(&h.as_str()) {
        return Err(ForwardError::Never(name.to_owned()));
    }
    Ok(h)
}

/// Copies the allowed client headers into the upstream request.
pub(crate) fn forward(out: &mut HeaderMap, client: &HeaderMap, extra: &[HeaderName]) {
    for name in FORWARDED.iter().chain(extra) {
        for v in client.get_all(name) {
            out.append(name.clone(), v.clone());
        }
    }
    out.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    // Ask for plain bytes: usage is read from the body.
    out.insert(
        header::ACCEPT_ENCODING,
        HeaderValue::from_static("identity"),
    );
}

/// Whether an upstream response header is passed back to the client.
pub(crate) fn passes_back(name: &HeaderName) -> bool {
    let n = name.as_str();
    n == "content-type"
        // Only set if an upstream compresses although asked not to; the client must know,
        // or it gets bytes it cannot read.
        || n == "content-encoding"
        || n == "retry-after"
        || n == "request-id"
        || n == "x-request-id"
        || n.starts_with("x-ratelimit-")
        || n.starts_with("anthropic-ratelimit-")
}

/// Keeps in `headers` (an upstream response's) only what [`passes_back`] and `keep` allow. In
/// place: an upstream sends a few headers that do not pass (date, server, content-length)
/// beside several that do, so removing those costs less than building a map of the others.
/// A `Retry-After` that passes is checked and clamped ([`retry_after`]).
pub(crate) fn retain_passing_back(headers: &mut HeaderMap, keep: impl Fn(&HeaderName) -> bool) {
    let dropped: Vec<HeaderName> = headers
        .keys()
        .filter(|n| !(passes_back(n) && keep(n)))
        .cloned()
        .collect();
    for name in &dropped {
        headers.remove(name);
    }
    if let Some(v) = headers.get(header::RETRY_AFTER) {
        let now = std::time::SystemTime::now();
        match retry_after(v.as_bytes(), now) {
            Some(secs) => headers.insert(header::RETRY_AFTER, HeaderValue::from(secs)),
            None => headers.remove(header::RETRY_AFTER),
        };
    }
}

/// The longest `Retry-After` passed back, in seconds: an hour, the longest the gateway's own
/// rate limits ever ask a client to wait (their debt is capped at an hour of refill). An
/// upstream's longer wait would park a client for days on one bad header.
pub(crate) const MAX_RETRY_AFTER_S: u64 = 3600;

/// An upstream's `Retry-After` (the first, if it sent several) as the delta-seconds passed
/// back: RFC 9110's delta-seconds as they are, or its HTTP-date as the seconds from `now`
/// (0 once past), clamped to [`MAX_RETRY_AFTER_S`]; `None` for anything else (`-5`, `1e300`,
/// text), which is dropped rather than relayed for a client to misread.
pub(crate) fn retry_after(value: &[u8], now: std::time::SystemTime) -> Option<u64> {
    let v = std::str::from_utf8(value).ok()?.trim_matches([' ', '\t']);
    if !v.is_empty() && v.bytes().all(|b| b.is_ascii_digit()) {
        // Too many digits for a u64 is still a (very long) wait: the clamp.
        return Some(
            v.parse::<u64>()
                .map_or(MAX_RETRY_AFTER_S, |s| s.min(MAX_RETRY_AFTER_S)),
        );
    }
    let at = httpdate::parse_http_date(v).ok()?;
    let wait = at.duration_since(now).map_or(0, |d| d.as_secs());
    Some(wait.min(MAX_RETRY_AFTER_S))
}

/// The `Host` header for requests to `uri`, as hyper-util's client would set it (the host,
/// and the port unless it is the scheme's default), or `None` where it would not build one.
/// Built once per target: the client formats it on every request that comes without one.
pub(crate) fn host(uri: &Uri) -> Option<HeaderValue> {
    let host = uri.host()?;
    let secure = matches!(uri.scheme_str(), Some("https" | "wss"));
    let value = match uri.port() {
        Some(p) if !matches!((p.as_u16(), secure), (443, true) | (80, false)) => {
            HeaderValue::try_from(format!("{host}:{p}"))
        }
        _ => HeaderValue::from_str(host),
    };
    value.ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn billing_headers_never_forward() {
        let mut client = HeaderMap::new();
        for (n, v) in [
            ("openai-organization", "org"),
            ("openai-project", "p"),
            ("idempotency-key", "k"),
            ("content-type", "text/plain"),
            ("anthropic-beta", "b"),
        ] {
            client.insert(HeaderName::from_static(n), HeaderValue::from_static(v));
        }
        let mut out = HeaderMap::new();
        forward(&mut out, &client, &[]);
        assert!(out.get("openai-organization").is_none());
        assert!(out.get("openai-project").is_none());
        assert!(out.get("idempotency-key").is_none());
        assert_eq!(out["content-type"], "application/json");
        assert_eq!(out["anthropic-beta"], "b");
        let extra = [check_extra_forward("Idempotency-Key").unwrap()];
        let mut out = HeaderMap::new();
        forward(&mut out, &client, &extra);
        assert_eq!(out["idempotency-key"], "k");
    }

    #[test]
    fn host_as_the_client_sets_it() {
        for (uri, want) in [
            (
                "http://127.0.0.1:8080/v1/chat/completions",
                Some("127.0.0.1:8080"),
            ),
            ("http://api.example.com:80/v1", Some("api.example.com")),
            ("https://api.example.com:443/v1", Some("api.example.com")),
            ("https://api.example.com:80/v1", Some("api.example.com:80")),
            ("http://api.example.com:443/v1", Some("api.example.com:443")),
            (
                "https://user:pw@api.example.com/v1",
                Some("api.example.com"),
            ),
            ("http://[::1]:9000/v1", Some("[::1]:9000")),
            ("/v1/no-authority", None),
        ] {
            let uri: Uri = uri.parse().unwrap();
            assert_eq!(
                host(&uri).as_ref().map(|v| v.to_str().unwrap()),
                want,
                "{uri}"
            );
        }
    }

    #[test]
    fn credentials_cannot_be_allowed() {
        for n in ["Authorization", "x-api-key", "cookie", "host", "bad name"] {
            assert!(check_extra_forward(n).is_err(), "{n}");
        }
    }

    #[test]
    fn retry_after_is_checked_and_clamped() {
        use std::time::{Duration, UNIX_EPOCH};
        // Sun, 06 Nov 1994 08:49:37 GMT, RFC 9110's example.
        let now = UNIX_EPOCH + Duration::from_secs(784_111_777);
        for (v, want) in [
            ("120", Some(120)),
            (" 0 ", Some(0)),
            ("3600", Some(3600)),
            ("3601", Some(3600)),
            ("99999999999999999999999", Some(3600)),
            ("Sun, 06 Nov 1994 08:50:37 GMT", Some(60)),
            ("Sun, 06 Nov 1994 08:49:37 GMT", Some(0)),
            ("Sat, 05 Nov 1994 08:49:37 GMT", Some(0)),
            ("Fri, 31 Dec 9999 23:59:59 GMT", Some(3600)),
            ("Sunday, 06-Nov-94 08:50:37 GMT", Some(60)),
            ("Sun Nov  6 08:50:37 1994", Some(60)),
            ("-5", None),
            ("1e300", None),
            ("1.5", None),
            ("+5", None),
            ("", None),
            ("soon", None),
            ("12 34", None),
        ] {
            assert_eq!(retry_after(v.as_bytes(), now), want, "{v:?}");
        }
        assert_eq!(retry_after(b"\xff", now), None);
    }

    #[test]
    fn a_bad_retry_after_is_dropped_and_a_long_one_clamped() {
        let mut h = HeaderMap::new();
        h.insert(header::RETRY_AFTER, HeaderValue::from_static("-5"));
        retain_passing_back(&mut h, |_| true);
        assert!(h.get(header::RETRY_AFTER).is_none());
        h.insert(header::RETRY_AFTER, HeaderValue::from_static("86400"));
        h.append(header::RETRY_AFTER, HeaderValue::from_static("text"));
        retain_passing_back(&mut h, |_| true);
        let kept: Vec<_> = h.get_all(header::RETRY_AFTER).iter().collect();
        assert_eq!(kept, ["3600"]);
        h.insert(header::RETRY_AFTER, HeaderValue::from_static("7"));
        retain_passing_back(&mut h, |_| true);
        assert_eq!(h[header::RETRY_AFTER], "7");
    }

    #[test]
    fn only_ids_and_limits_come_back() {
        for n in [
            "x-request-id",
            "x-ratelimit-limit-tokens",
            "anthropic-ratelimit-x",
        ] {
            assert!(passes_back(&HeaderName::from_static(n)), "{n}");
        }
        for n in [
            "openai-organization",
            "openai-project",
            "set-cookie",
            "server",
        ] {
            assert!(!passes_back(&HeaderName::from_static(n)), "{n}");
        }
    }
}
