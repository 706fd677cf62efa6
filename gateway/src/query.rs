//! The one query parameter the gateway reads itself: Google's `?key=`, the Gemini API's
//! way to pass a key. It authenticates the client and never travels further: no upstream
//! gets it, whatever the route (it would hand the client's key to another party).

use std::borrow::Cow;

/// The value of the first `key` parameter of `query`, if any (not percent-decoded: keys
/// are URL-safe tokens; one that is not simply fails to match).
pub(crate) fn key(query: Option<&str>) -> Option<&str> {
    query?
        .split('&')
        .find_map(|p| p.strip_prefix("key="))
        .filter(|k| !k.is_empty())
}

/// `query` without its `key` parameters; `None` when nothing is left.
pub(crate) fn without_key(query: Option<&str>) -> Option<Cow<'_, str>> {
    let q = query.filter(|q| !q.is_empty())?;
    let is_key = |p: &&str| *p == "key" || p.starts_with("key=");
    if !q.split('&').any(|p| is_key(&p)) {
        return Some(Cow::Borrowed(q));
    }
    let kept: Vec<&str> = q
        .split('&')
        .filter(|p| !is_key(p) && !p.is_empty())
        .collect();
    (!kept.is_empty()).then(|| Cow::Owned(kept.join("&")))
}

/// Whether `query` has `name=value` among its parameters.
pub(crate) fn has(query: Option<&str>, name: &str, value: &str) -> bool {
    query.is_some_and(|q| {
        q.split('&')
            .any(|p| p.split_once('=') == Some((name, value)))
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
        assert_eq!(without_key(Some("beta=true")).as_deref(), Some("beta=true"));
        assert_eq!(without_key(Some("key=abc")), None);
        assert_eq!(
            without_key(Some("alt=sse&key=abc&x=1")).as_deref(),
            Some("alt=sse&x=1")
        );
        assert_eq!(without_key(Some("monkey=1")).as_deref(), Some("monkey=1"));
        assert!(has(Some("alt=sse&key=k"), "alt", "sse"));
        assert!(!has(Some("alt=json"), "alt", "sse"));
    }
}
