//! The little HTTP/1.1 the benches' raw-socket upstreams read: where a request's head ends,
//! and the body length it announces.

/// The length of the head at the start of `buf` (through its blank line), once it is whole.
pub(crate) fn head_end(buf: &[u8]) -> Option<usize> {
    buf.windows(4).position(|w| w == b"\r\n\r\n").map(|i| i + 4)
}

/// The head, lower-cased (its path and header names as the benches match them), and the
/// `content-length` it announces (0 without one).
pub(crate) fn head_and_length(head: &[u8]) -> (String, usize) {
    let head = String::from_utf8_lossy(head).to_ascii_lowercase();
    let len = head
        .lines()
        .find_map(|l| l.strip_prefix("content-length:"))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(0);
    (head, len)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_a_head_and_its_length() {
        let req = b"POST /Big HTTP/1.1\r\nContent-Length: 12\r\n\r\n{\"a\":1}";
        let end = head_end(req).unwrap();
        assert_eq!(&req[end..], b"{\"a\":1}");
        let (head, len) = head_and_length(&req[..end]);
        assert!(head.starts_with("post /big "), "{head}");
        assert_eq!(len, 12);
        assert_eq!(head_end(b"GET / HTTP/1.1\r\n"), None);
        assert_eq!(head_and_length(b"GET / HTTP/1.1\r\n\r\n").1, 0);
    }
}
