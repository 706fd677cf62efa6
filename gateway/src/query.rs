//! Credentials in the query string. Google's clients pass their key as `?key=` (and an
//! OAuth token as `?access_token=`): the gateway reads either as the client's credential.
//! Neither, nor the names other APIs and clients use for a key (`api_key`, `api-key`),
//! ever travels further: no upstream gets them, whatever the route (that would hand the
//! client's credential to another party), and the access log never records a query.

use std::borrow::Cow;

/// Query parameters the gateway reads as the client's credential, in order of preference.
const READ: [&str; 2] = ["key", "access_token"];

/// Query parameters that are credentials: removed from every upstream URL.
const CREDENTIALS: [&str; 4] = ["key", "access_token", "api_key", "api-key"];

/// The client's credential from `query`, if any: the first non-empty `key`, else
/// `access_token` (not percent-decoded: keys are URL-safe tokens; one that is not simply
/// fails to match).
pub(crate) fn key(query: Option<&str>) -> Option<&str> {
    let q = query?;
    READ.iter().find_map(|name| {
        q.split('&')
            .filter_map(|p| p.split_once('='))
            .find(|(n, v)| decoded(n) == *name && !v.is_empty())
            .map(|(_, v)| v)
    })
}

/// A parameter name as the server that gets it reads it: percent-decoded (`k%65y` is `key`,
/// `access%5Ftoken` is `access_token`). Names are compared so, or an encoded credential
/// name would pass every check here and still be a credential upstream.
fn decoded(name: &str) -> Cow<'_, str> {
    percent_encoding::percent_decode_str(name).decode_utf8_lossy()
}

/// Whether the parameter `p` (`name=value` or a bare `name`) is a credential.
fn is_credential(p: &str) -> bool {
    let name = p.split_once('=').map_or(p, |(n, _)| n);
    CREDENTIALS.contains(&&*decoded(name))
}

/// `query` without its credentials; `None` when nothing is left.
pub(crate) fn without_credentials(query: Option<&str>) -> Option<Cow<'_, str>> {
    let q = query.filter(|q| !q.is_empty())?;
    if !q.split('&').any(is_credential) {
        return Some(Cow::Borrowed(q));
    }
    let kept: Vec<&str> = q
        .split('&')
        .filter(|p| !is_credential(p) && !p.is_empty())
        .collect();
    (!kept.is_empty()).then(|| Cow::Owned(kept.join("&")))
}

/// Whether `query` has `name=value` among its parameters.
pub(crate) fn has(query: Option<&str>, name: &str, value: &str) -> bool {
    query.is_some_and(|q| {
        q.split('&')
            .filter_map(|p| p.split_once('='))
            .any(|(n, v)| v == value && decoded(n) == name)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn key_is_read_and_never_kept() {
        assert_eq!(key(Some("alt=sse&key=abc")), Some("abc"));
        assert_eq!(key(Some("monkey=1")), None);
        assert_eq!(key(Some("key=")), None);
        assert_eq!(key(None), None);
        assert_eq!(
            without_credentials(Some("beta=true")).as_deref(),
            Some("beta=true")
        );
        assert_eq!(without_credentials(Some("key=abc")), None);
        assert_eq!(
            without_credentials(Some("alt=sse&key=abc&x=1")).as_deref(),
            Some("alt=sse&x=1")
        );
        assert_eq!(
            without_credentials(Some("monkey=1")).as_deref(),
            Some("monkey=1")
        );
        assert!(has(Some("alt=sse&key=k"), "alt", "sse"));
    }

    #[test]
    fn names_are_compared_percent_decoded() {
        let q = "k%65y=a&access%5Ftoken=b&api%5Fkey=c&api%2dkey=d&%6B%65%79=e&x%3D1=2&beta=true";
        assert_eq!(
            without_credentials(Some(q)).as_deref(),
            Some("x%3D1=2&beta=true")
        );
        assert_eq!(key(Some("k%65y=a")), Some("a"));
        assert_eq!(key(Some("access%5Ftoken=b")), Some("b"));
        assert_eq!(
            key(Some("k%2565y=a")),
            None,
            "decoded once, as a server does"
        );
        assert!(has(Some("%61lt=sse"), "alt", "sse"));
        // Invalid UTF-8 once decoded is no credential name, and no panic.
        assert_eq!(without_credentials(Some("%ff=1")).as_deref(), Some("%ff=1"));
    }

    #[test]
    fn every_credential_name_is_taken_out() {
        assert_eq!(key(Some("access_token=t&x=1")), Some("t"));
        assert_eq!(key(Some("access_token=t&key=k")), Some("k"));
        assert_eq!(key(Some("api_key=a")), None, "not read, only removed");
        let q = "api-version=1&key=a&api_key=b&api-key=c&access_token=d&key&keys=1";
        assert_eq!(
            without_credentials(Some(q)).as_deref(),
            Some("api-version=1&keys=1")
        );
        assert_eq!(without_credentials(Some("api_key=b&access_token=d")), None);
        assert!(!has(Some("alt=json"), "alt", "sse"));
    }
}
