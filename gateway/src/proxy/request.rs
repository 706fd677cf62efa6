//! Reading the few fields the gateway needs from a client body, and rewriting the model.
//!
//! The body is parsed once, borrowed: `model` as raw JSON (so its byte span is known and
//! can be replaced in place) and `stream`; every other field is skipped, not built into a
//! tree, and forwarded byte for byte.

use std::borrow::Cow;

use bytes::{BufMut, Bytes, BytesMut};
use serde::Deserialize;
use serde_json::value::RawValue;

#[derive(Deserialize)]
struct Head<'a> {
    #[serde(borrow)]
    model: Option<&'a RawValue>,
    stream: Option<bool>,
}

/// What the gateway needs to know about a request body.
#[derive(Debug)]
pub(crate) struct RequestHead<'a> {
    pub(crate) model: Cow<'a, str>,
    pub(crate) stream: bool,
    /// Byte range of the `model` value (quotes included) in the body.
    model_span: std::ops::Range<usize>,
}

#[derive(Debug, PartialEq, Eq)]
pub(crate) enum HeadError {
    Json(String),
    MissingModel,
    ModelNotString,
}

impl std::fmt::Display for HeadError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            HeadError::Json(e) => write!(f, "request body is not valid JSON: {e}"),
            HeadError::MissingModel => f.write_str("request body has no `model` field"),
            HeadError::ModelNotString => f.write_str("`model` must be a string"),
        }
    }
}

pub(crate) fn parse_head(body: &[u8]) -> Result<RequestHead<'_>, HeadError> {
    // Parse from `&str`: serde_json skips ignored strings without checking their UTF-8,
    // and a body that is not UTF-8 is not JSON.
    let text = std::str::from_utf8(body)
        .map_err(|e| HeadError::Json(format!("body is not UTF-8 ({e})")))?;
    let head: Head<'_> = serde_json::from_str(text).map_err(|e| HeadError::Json(e.to_string()))?;
    let raw = head.model.ok_or(HeadError::MissingModel)?;
    let text = raw.get();
    let model: Cow<'_, str> = serde_json::from_str(text).map_err(|_| HeadError::ModelNotString)?;
    // `RawValue` borrows from `body`, so its offset is a pointer difference.
    let start = text.as_ptr() as usize - body.as_ptr() as usize;
    Ok(RequestHead {
        model,
        stream: head.stream.unwrap_or(false),
        model_span: start..start + text.len(),
    })
}

impl RequestHead<'_> {
    /// The body with the model value replaced by `model_json` (an already-encoded JSON
    /// string); every other byte unchanged.
    pub(crate) fn rewrite_model(&self, body: &Bytes, model_json: &[u8]) -> Bytes {
        if &body[self.model_span.clone()] == model_json {
            return body.clone();
        }
        let mut out =
            BytesMut::with_capacity(body.len() - self.model_span.len() + model_json.len());
        out.put_slice(&body[..self.model_span.start]);
        out.put_slice(model_json);
        out.put_slice(&body[self.model_span.end..]);
        out.freeze()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_model_and_stream() {
        let b = br#"{"messages":[{"role":"user","content":"model"}],"model":"gpt","stream":true}"#;
        let h = parse_head(b).unwrap();
        assert_eq!(h.model, "gpt");
        assert!(h.stream);
    }

    #[test]
    fn rewrite_changes_only_the_model() {
        let b = Bytes::from_static(
            br#"{ "model" : "gpt",  "messages":[{"content":"\"model\": \"gpt\""}], "x": 1.50 }"#,
        );
        let h = parse_head(&b).unwrap();
        let out = h.rewrite_model(&b, br#""gpt-4o-2024""#);
        assert_eq!(
            &out[..],
            br#"{ "model" : "gpt-4o-2024",  "messages":[{"content":"\"model\": \"gpt\""}], "x": 1.50 }"#
        );
    }

    #[test]
    fn escaped_model_names_decode() {
        let b = br#"{"model":"a\u0062c"}"#;
        assert_eq!(parse_head(b).unwrap().model, "abc");
    }

    #[test]
    fn errors() {
        assert_eq!(
            parse_head(br#"{"stream":true}"#).unwrap_err(),
            HeadError::MissingModel
        );
        assert_eq!(
            parse_head(br#"{"model":5}"#).unwrap_err(),
            HeadError::ModelNotString
        );
        assert!(matches!(
            parse_head(b"{\"model\":").unwrap_err(),
            HeadError::Json(_)
        ));
        assert!(matches!(
            parse_head(b"[1]").unwrap_err(),
            HeadError::Json(_)
        ));
        assert!(matches!(
            parse_head(br#"{"model":"a","model":"b"}"#).unwrap_err(),
            HeadError::Json(_)
        ));
        assert!(matches!(
            parse_head(br#"{"model":"a","stream":"yes"}"#).unwrap_err(),
            HeadError::Json(_)
        ));
        assert!(matches!(parse_head(b"").unwrap_err(), HeadError::Json(_)));
        assert!(matches!(
            parse_head(b"{\"model\":\"a\",\"x\":\"\xff\"}").unwrap_err(),
            HeadError::Json(_)
        ));
    }
}
