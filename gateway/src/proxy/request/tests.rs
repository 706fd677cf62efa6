//! The head scan, the whole reading and the rewrites agree on every body.

#[test]
fn vertex_splice_replaces_the_model_member_only() {
    use bytes::Bytes;
    let want_member = format!(
        r#""anthropic_version":"{}""#,
        crate::providers::google::ANTHROPIC_VERSION
    );
    assert_eq!(super::VERTEX_MEMBER, want_member.as_bytes());
    for (body, want) in [
        (
            r#"{"model":"claude","max_tokens":5,"stream":true}"#,
            r#"{"anthropic_version":"vertex-2023-10-16","max_tokens":5,"stream":true}"#,
        ),
        (
            r#"{ "max_tokens": 5 ,  "model" :	"c\"x" }"#,
            r#"{ "max_tokens": 5 ,  "anthropic_version":"vertex-2023-10-16" }"#,
        ),
        (
            r#"{"messages":[{"role":"user","content":"model"}],"model":"m"}"#,
            r#"{"messages":[{"role":"user","content":"model"}],"anthropic_version":"vertex-2023-10-16"}"#,
        ),
    ] {
        let b = Bytes::from(body);
        let head = super::parse_head(&b).unwrap();
        let out = head.rewrite_model_as_vertex(&b);
        assert_eq!(std::str::from_utf8(&out).unwrap(), want, "{body}");
        let v: serde_json::Value = serde_json::from_slice(&out).unwrap();
        assert!(v.get("model").is_none());
    }
}

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
fn asking_usage_adds_or_completes_stream_options() {
    let b = Bytes::from_static(br#" {"model":"gpt","stream":true,"messages":[]}"#);
    let h = parse_head(&b).unwrap();
    assert!(!h.include_usage);
    let out = h.rewrite_asking_usage(&b, br#""up""#);
    assert_eq!(
        &out[..],
        br#" {"stream_options":{"include_usage":true},"model":"up","stream":true,"messages":[]}"#
    );
    assert!(parse_head(&out).unwrap().include_usage);
    // Other members of the client's stream_options stay; the model comes after it.
    let b = Bytes::from_static(
        br#"{"stream_options":{"include_usage":false,"x":1},"model":"gpt","stream":true}"#,
    );
    let h = parse_head(&b).unwrap();
    assert!(!h.include_usage);
    let out = h.rewrite_asking_usage(&b, br#""up""#);
    let v: serde_json::Value = serde_json::from_slice(&out).unwrap();
    assert_eq!(
        v,
        serde_json::json!({"stream_options": {"include_usage": true, "x": 1}, "model": "up", "stream": true})
    );
    let asked = br#"{"model":"gpt","stream":true,"stream_options":{"include_usage":true}}"#;
    assert!(parse_head(asked).unwrap().include_usage);
}

#[test]
fn gemini_paths() {
    let c = gemini_call(
        "/v1beta/models/gemini-2.5-pro:streamGenerateContent",
        Some("alt=sse&key=k"),
    )
    .unwrap();
    assert_eq!(c.model, "gemini-2.5-pro");
    assert_eq!(c.method, GeminiMethod::Stream { sse: true });
    let c = gemini_call("/v1/models/m:streamGenerateContent", None).unwrap();
    assert_eq!(c.method, GeminiMethod::Stream { sse: false });
    assert_eq!(
        gemini_call("/v1/models/m:countTokens", None)
            .unwrap()
            .method,
        GeminiMethod::CountTokens
    );
    assert!(gemini_call("/v1beta/models/m:embedContent", None).is_none());
    assert!(gemini_call("/v1beta/models/:generateContent", None).is_none());
    assert!(gemini_call("/v1beta/models/a/b:generateContent", None).is_none());
    assert!(gemini_call("/v2/models/m:generateContent", None).is_none());
    let h = gemini_head(br#"{"contents":[]}"#, &c).unwrap();
    assert_eq!(h.model, "m");
    let body = Bytes::from_static(br#"{"contents":[]}"#);
    assert_eq!(h.rewrite_model(&body, br#""up""#), body);
    assert!(gemini_head(b"[1]", &c).is_err());
}

#[test]
fn whole_reading_gives_the_scans_head_and_errors() {
    let bodies: [&[u8]; 9] = [
        br#"{"messages":[{"role":"user","content":"model"}],"model":"gpt","stream":true}"#,
        br#" { "model" : "a\u0062c", "stream_options" : {"include_usage":true} } "#,
        br#"{"model":"a","model":"b"}"#,
        br#"{"model":"a","stream":true,"stream":true}"#,
        br#"{"model":"a","stream":"yes"}"#,
        br#"{"model":null}"#,
        br#"{"model":5}"#,
        br#"["gpt",true]"#,
        b"{\"model\":",
    ];
    for b in bodies {
        let shown = String::from_utf8_lossy(b);
        match (parse(b, None, true), parse_head(b)) {
            (Ok((got, v)), Ok(want)) => {
                assert_eq!(got, want, "{shown}");
                assert_eq!(v, serde_json::from_slice(b).ok(), "{shown}");
            }
            (Err(got), Err(want)) => assert_eq!(got, want, "{shown}"),
            (got, want) => panic!("{shown}: whole {got:?}, scan {want:?}"),
        }
    }
    // A plain model is borrowed from the body, as the scan's is.
    let (h, _) = parse(bodies[0], None, true).unwrap();
    assert!(matches!(h.model, Cow::Borrowed("gpt")));
    // Not asked, or too large: no tree.
    assert!(parse(bodies[0], None, false).unwrap().1.is_none());
    let big = format!(r#"{{"model":"m","x":"{}"}}"#, "a".repeat(WHOLE_MAX));
    assert!(parse(big.as_bytes(), None, true).unwrap().1.is_none());
}

#[test]
fn model_hint_finds_the_root_model_past_other_members() {
    let sdk = br#"{"messages":[{"role":"user","content":[{"type":"text","text":"a \"model\": \"x\"","model":"no"}]}],"model":"claude-x","max_tokens":5}"#;
    assert_eq!(model_hint(sdk), Some("claude-x"));
    let spaced = b" {\n \"n\" : -1.5e3 , \"o\": {\"model\":[]}, \"model\" : \"m\" }";
    assert_eq!(model_hint(spaced), Some("m"));
    // No guess: an escaped model, no model, no object, a cut body.
    for b in [
        &br#"{"model":"a\u0062"}"#[..],
        br#"{"messages":[]}"#,
        br#"["model"]"#,
        br#"{"x":"abc"#,
        br#"{"x":[1,{"y":2}"#,
    ] {
        assert_eq!(model_hint(b), None, "{}", String::from_utf8_lossy(b));
    }
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
