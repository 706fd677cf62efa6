//! Reads the only request fields the mock's answer depends on: `model`, `stream`,
//! `stream_options.include_usage`, whether there are `tools`, and the fields that may ask
//! for JSON output (kept as raw text, read by `structured` only when present). Everything
//! else is skipped without being built (a request with tools is read again in full by
//! `conversation`).

use std::borrow::Cow;

use serde::de::IgnoredAny;
use serde::Deserialize;
use serde_json::value::RawValue;

use super::structured::Requested;

/// What a request asks for.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Probe<'a> {
    pub model: Cow<'a, str>,
    pub stream: bool,
    pub include_usage: bool,
    /// A non-empty `tools` list.
    pub(crate) has_tools: bool,
    /// The fields that may ask for JSON output, as written.
    pub(crate) format: Requested<'a>,
}

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub(crate) enum ProbeError {
    #[error("request body is not valid JSON: {0}")]
    Json(String),
    #[error("model: field required")]
    MissingModel,
    /// What Vertex refuses in a Claude body (the model is the path's).
    #[error("a Vertex Claude body has no model and anthropic_version \"vertex-2023-10-16\"")]
    NotVertex,
}

/// The `anthropic_version` a Claude-on-Vertex body carries.
pub(crate) const VERTEX_ANTHROPIC_VERSION: &str = "vertex-2023-10-16";

#[derive(Deserialize)]
struct Raw<'a> {
    #[serde(borrow, default)]
    model: Option<Text<'a>>,
    #[serde(default)]
    stream: Option<bool>,
    #[serde(default)]
    stream_options: Option<StreamOptions>,
    /// Counted, never built: `IgnoredAny` is zero-sized, so the Vec does not allocate.
    #[serde(default)]
    tools: Option<Vec<IgnoredAny>>,
    #[serde(borrow, default)]
    response_format: Option<&'a RawValue>,
    #[serde(borrow, default)]
    output_config: Option<&'a RawValue>,
    #[serde(borrow, default)]
    output_format: Option<&'a RawValue>,
    #[serde(borrow, default)]
    text: Option<&'a RawValue>,
    /// Claude on Vertex: `"vertex-2023-10-16"` in place of `model`.
    #[serde(borrow, default)]
    anthropic_version: Option<Text<'a>>,
}

/// `#[serde(borrow)]` only borrows a `Cow` that is a field itself, not one inside `Option`.
#[derive(Deserialize)]
struct Text<'a>(#[serde(borrow)] Cow<'a, str>);

#[derive(Deserialize)]
struct StreamOptions {
    #[serde(default)]
    include_usage: Option<bool>,
}

/// With `vertex_model` (Claude on Vertex, the model in the path) the body must have no
/// `model` and Vertex's `anthropic_version`.
pub(crate) fn probe<'a>(
    body: &'a [u8],
    vertex_model: Option<&'a str>,
) -> Result<Probe<'a>, ProbeError> {
    let raw: Raw<'_> = serde_json::from_slice(body).map_err(|e| ProbeError::Json(e.to_string()))?;
    let model = match vertex_model {
        Some(m) => {
            let version = raw.anthropic_version.as_ref().map(|v| &*v.0);
            if raw.model.is_some() || version != Some(VERTEX_ANTHROPIC_VERSION) {
                return Err(ProbeError::NotVertex);
            }
            Cow::Borrowed(m)
        }
        None => raw.model.ok_or(ProbeError::MissingModel)?.0,
    };
    Ok(Probe {
        model,
        stream: raw.stream.unwrap_or(false),
        include_usage: raw
            .stream_options
            .and_then(|o| o.include_usage)
            .unwrap_or(false),
        has_tools: raw.tools.is_some_and(|t| !t.is_empty()),
        format: Requested {
            response_format: raw.response_format,
            output_config: raw.output_config,
            output_format: raw.output_format,
            text: raw.text,
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn probe_reads_model_stream_and_usage_option() {
        let p = probe(br#"{"messages":[{"role":"user","content":"hi"}],"model":"gpt-x","stream":true,"stream_options":{"include_usage":true}}"#, None).unwrap();
        assert_eq!(p.model, "gpt-x");
        assert!(p.stream && p.include_usage);
        assert!(matches!(p.model, Cow::Borrowed(_)));
    }

    #[test]
    fn a_vertex_claude_body_takes_the_path_model() {
        let ok = br#"{"anthropic_version":"vertex-2023-10-16","max_tokens":5,"stream":true}"#;
        let p = probe(ok, Some("claude@1")).unwrap();
        assert_eq!((&*p.model, p.stream), ("claude@1", true));
        for bad in [
            &br#"{"model":"c","anthropic_version":"vertex-2023-10-16"}"#[..],
            br#"{"max_tokens":5}"#,
            br#"{"anthropic_version":"bedrock-2023-05-31"}"#,
        ] {
            assert_eq!(probe(bad, Some("c")), Err(ProbeError::NotVertex));
        }
    }

    #[test]
    fn probe_defaults_and_escapes() {
        let p = probe(br#"{"model":"a\"b","stream":null}"#, None).unwrap();
        assert_eq!(p.model, "a\"b");
        assert!(!p.stream && !p.include_usage && !p.has_tools);
        assert_eq!(p.format, Requested::default());
    }

    #[test]
    fn probe_keeps_the_format_fields_as_written() {
        let p = probe(
            br#"{"model":"m","response_format":{"type":"json_object"},"text":{"format":{}}}"#,
            None,
        )
        .unwrap();
        assert_eq!(
            p.format.response_format.unwrap().get(),
            r#"{"type":"json_object"}"#
        );
        assert_eq!(p.format.text.unwrap().get(), r#"{"format":{}}"#);
        assert!(p.format.output_config.is_none() && p.format.output_format.is_none());
    }

    #[test]
    fn probe_sees_a_non_empty_tools_list() {
        let p = probe(
            br#"{"model":"m","tools":[{"type":"function","function":{"name":"f"}}]}"#,
            None,
        );
        assert!(p.unwrap().has_tools);
        assert!(
            !probe(br#"{"model":"m","tools":[]}"#, None)
                .unwrap()
                .has_tools
        );
        assert!(
            !probe(br#"{"model":"m","tools":null}"#, None)
                .unwrap()
                .has_tools
        );
    }

    #[test]
    fn probe_rejects_bad_bodies() {
        assert_eq!(
            probe(br#"{"stream":true}"#, None),
            Err(ProbeError::MissingModel)
        );
        assert!(matches!(
            probe(b"{not json", None),
            Err(ProbeError::Json(_))
        ));
        assert!(matches!(
            probe(br#"{"model":7}"#, None),
            Err(ProbeError::Json(_))
        ));
    }
}
