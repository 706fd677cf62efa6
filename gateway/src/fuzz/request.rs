//! The request head (`proxy::request::parse_head`, `gemini_head` and the two rewrites)
//! against serde_json's reading of the root object's members, kept in order with repeats:
//! the model (decoded) or the error it gets, `stream`, `include_usage`; the model rewrite
//! changes exactly the model's bytes; asking for usage yields a body that is the client's
//! with the new model and `stream_options.include_usage: true`, its other options kept.
//! Reading the body whole (`parse`, for translation) gives the same head or the same error,
//! and serde_json's `Value`; the model guessed before either (`model_hint`) is the head's.

use bytes::Bytes;
use proptest::prelude::*;
use serde_json::value::RawValue;
use serde_json::{json, Value};

use super::corpus::{docs, seeded, Members, REQUESTS};
use super::{apply, edit, fuzz, json_value, render, style, text, Edit, Style, J};
use crate::dialect::{GeminiCall, GeminiMethod};
use crate::proxy::request::{gemini_head, model_hint, parse, parse_head, HeadError};

#[derive(Debug, PartialEq)]
enum Want {
    Head {
        model: String,
        stream: bool,
        include_usage: bool,
        /// The model value's byte range.
        span: std::ops::Range<usize>,
    },
    Json,
    MissingModel,
    ModelNotString,
}

fn reference(body: &[u8]) -> Want {
    let Ok(text) = std::str::from_utf8(body) else {
        return Want::Json;
    };
    let Ok(Members(members)) = serde_json::from_str::<Members<'_>>(text) else {
        return Want::Json;
    };
    let one = |name: &str| -> Result<Option<&RawValue>, ()> {
        let mut found = members.iter().filter(|(k, _)| k == name).map(|(_, v)| *v);
        let first = found.next();
        // The derive refuses a field twice; a null is an absent one.
        match (first, found.next()) {
            (_, Some(_)) => Err(()),
            (Some(v), None) if v.get() == "null" => Ok(None),
            (v, None) => Ok(v),
        }
    };
    let (Ok(model), Ok(stream), Ok(options)) = (one("model"), one("stream"), one("stream_options"))
    else {
        return Want::Json;
    };
    let stream = match stream.map(|s| s.get()) {
        None => false,
        Some("true") => true,
        Some("false") => false,
        Some(_) => return Want::Json,
    };
    let Some(model) = model else {
        return Want::MissingModel;
    };
    let Ok(Value::String(name)) = serde_json::from_str::<Value>(model.get()) else {
        return Want::ModelNotString;
    };
    let include_usage = options.is_some_and(|o| {
        // serde's derive reads a struct from an array too, its fields in order: `[true]`
        // asks (harmless: no upstream takes such options).
        if let Ok(Value::Array(a)) = serde_json::from_str::<Value>(o.get()) {
            return a == [json!(true)];
        }
        // A repeated member makes the options unreadable: not asked.
        let Ok(Members(m)) = serde_json::from_str::<Members<'_>>(o.get()) else {
            return false;
        };
        let asked: Vec<&str> = m
            .iter()
            .filter(|(k, _)| k == "include_usage")
            .map(|(_, v)| v.get())
            .collect();
        let valid = m
            .iter()
            .all(|(k, v)| k != "include_usage" || matches!(v.get(), "true" | "false" | "null"));
        valid && asked == ["true"]
    });
    let start = model.get().as_ptr() as usize - text.as_ptr() as usize;
    Want::Head {
        model: name,
        stream,
        include_usage,
        span: start..start + model.get().len(),
    }
}

/// A request body's root members: the three the head reads (right, wrong, repeated or
/// missing), and others whose strings name them.
fn body() -> impl Strategy<Value = J> {
    let model = prop_oneof![
        6 => text().prop_map(J::Str),
        1 => json_value(2).prop_map(|v| J::from(&v)),
    ];
    let stream = prop_oneof![
        4 => any::<bool>().prop_map(|b| J::Raw(b.to_string())),
        1 => json_value(1).prop_map(|v| J::from(&v)),
    ];
    let include = prop_oneof![
        4 => any::<bool>().prop_map(|b| J::Raw(b.to_string())),
        1 => json_value(1).prop_map(|v| J::from(&v)),
    ];
    let options = prop_oneof![
        4 => (prop::option::of(include), prop::collection::vec((text(), json_value(1)), 0..3))
            .prop_map(|(inc, others)| {
                let mut m: Vec<(String, J)> = others.into_iter().map(|(k, v)| (k, J::from(&v))).collect();
                if let Some(i) = inc {
                    m.push(("include_usage".into(), i));
                }
                J::Obj(m)
            }),
        1 => json_value(1).prop_map(|v| J::from(&v)),
    ];
    let member = prop_oneof![
        3 => model.prop_map(|m| ("model".to_owned(), m)),
        2 => stream.prop_map(|s| ("stream".to_owned(), s)),
        2 => options.prop_map(|o| ("stream_options".to_owned(), o)),
        3 => (
            prop_oneof![
                Just("messages".to_owned()),
                Just("max_tokens".to_owned()),
                Just("Model".to_owned()),
                text()
            ],
            json_value(3)
        )
            .prop_map(|(k, v)| (k, J::from(&v))),
    ];
    prop::collection::vec(member, 0..7).prop_map(J::Obj)
}

/// Generated bodies, and the real ones mutated (the corpus: shapes and agents).
fn bodies() -> impl Strategy<Value = J> {
    prop_oneof![
        1 => body(),
        1 => seeded(docs(&REQUESTS, |_| true)),
    ]
}

fn check((tree, style, edits): (J, Style, Vec<Edit>)) -> Result<(), TestCaseError> {
    let bytes = Bytes::from(apply(render(&tree, &style), &edits));
    let shown = String::from_utf8_lossy(&bytes).into_owned();
    let want = reference(&bytes);
    let head = parse_head(&bytes);
    let got = match &head {
        Ok(h) => Want::Head {
            model: h.model.to_string(),
            stream: h.stream,
            include_usage: h.include_usage,
            // Private; checked below through the rewrite, which replaces exactly it.
            span: match &want {
                Want::Head { span, .. } => span.clone(),
                _ => 0..0,
            },
        },
        Err(HeadError::Json(_)) => Want::Json,
        Err(HeadError::MissingModel) => Want::MissingModel,
        Err(HeadError::ModelNotString) => Want::ModelNotString,
    };
    prop_assert_eq!(&got, &want, "body {}", shown);
    same_when_whole(&bytes, None, &head)?;
    // The guess, when it makes one, is the model the head reads.
    if let (Some(guess), Ok(h)) = (model_hint(&bytes), &head) {
        prop_assert_eq!(guess, h.model.as_ref(), "body {}", shown);
    }
    let (Ok(h), Want::Head { span, .. }) = (&head, &want) else {
        return Ok(());
    };
    // The model rewrite: only the model's bytes change.
    let new_model = br#""up\u0073tream""#;
    let out = h.rewrite_model(&bytes, new_model);
    let mut expected = bytes[..span.start].to_vec();
    expected.extend_from_slice(new_model);
    expected.extend_from_slice(&bytes[span.end..]);
    prop_assert_eq!(&out[..], &expected[..]);
    // Asking for usage: the client's body with the model and the options changed, and a
    // head that reads them.
    let asked = h.rewrite_asking_usage(&bytes, new_model);
    let back = parse_head(&asked);
    prop_assert!(
        back.is_ok(),
        "{:?} after asking usage: {}",
        back.err(),
        String::from_utf8_lossy(&asked)
    );
    let back = back.expect("checked");
    prop_assert_eq!(back.model.as_ref(), "upstream");
    prop_assert_eq!(back.stream, h.stream);
    prop_assert!(
        back.include_usage,
        "usage not asked: {}",
        String::from_utf8_lossy(&asked)
    );
    if let Ok(Value::Object(mut before)) = serde_json::from_slice::<Value>(&bytes) {
        let after: Value = serde_json::from_slice(&asked).expect("parse_head read it");
        before.insert("model".into(), json!("upstream"));
        let mut options = match before.remove("stream_options") {
            Some(Value::Object(o)) => o,
            _ => Default::default(),
        };
        options.insert("include_usage".into(), json!(true));
        before.insert("stream_options".into(), Value::Object(options));
        prop_assert_eq!(after, Value::Object(before));
    }
    Ok(())
}

/// `parse` reading the body whole agrees with the head scan `head` (spans included), and its
/// tree is serde_json's.
fn same_when_whole(
    bytes: &[u8],
    gemini: Option<&GeminiCall>,
    head: &Result<crate::proxy::request::RequestHead<'_>, HeadError>,
) -> Result<(), TestCaseError> {
    let shown = String::from_utf8_lossy(bytes);
    let whole = parse(bytes, gemini, true);
    match (&whole, head) {
        (Ok((got, value)), Ok(want)) => {
            prop_assert_eq!(got, want, "body {}", shown);
            let serde = serde_json::from_slice::<Value>(bytes).ok();
            prop_assert_eq!(value, &serde, "body {}", shown);
        }
        (Err(got), Err(want)) => prop_assert_eq!(got, want, "body {}", shown),
        (got, want) => prop_assert!(false, "body {shown}: whole {got:?}, head {want:?}"),
    }
    Ok(())
}

#[test]
fn fuzz_request_head() {
    let input = (
        bodies(),
        style(),
        prop_oneof![3 => Just(Vec::new()), 1 => prop::collection::vec(edit(), 1..4)],
    );
    fuzz("request_head", input, check);
}

#[test]
fn fuzz_gemini_head() {
    let call = GeminiCall {
        model: "m".into(),
        method: GeminiMethod::Generate,
    };
    let input = (
        prop_oneof![bodies(), json_value(3).prop_map(|v| J::from(&v))],
        style(),
        prop_oneof![3 => Just(Vec::new()), 1 => prop::collection::vec(edit(), 1..4)],
    );
    fuzz("gemini_head", input, move |(tree, style, edits)| {
        let bytes = apply(render(&tree, &style), &edits);
        let head = gemini_head(&bytes, &call);
        same_when_whole(&bytes, Some(&call), &head)?;
        let got = head.is_ok();
        // An object by serde's reading (a tree, or the raw value where `Value` cannot hold
        // a number such as 1e400).
        let object = std::str::from_utf8(&bytes).is_ok_and(|t| {
            serde_json::from_str::<&RawValue>(t).is_ok() && t.trim_start().starts_with('{')
        });
        prop_assert_eq!(got, object, "{:?}", String::from_utf8_lossy(&bytes));
        if matches!(
            serde_json::from_slice::<Value>(&bytes),
            Ok(Value::Object(_))
        ) {
            prop_assert!(got);
        }
        Ok(())
    });
}

// Regressions: minimal inputs the targets found, kept as plain tests.

/// Asking for usage re-wrote the client's other `stream_options` through `f64`, whose
/// parse is not exact: a number came out with another last digit.
#[test]
fn regression_asking_usage_keeps_the_options_bytes() {
    let body = Bytes::from_static(
        br#"{"model":"m","stream":true,"stream_options":{"x":5.7944105707921476e+299,"y":[1.0,"\u00e9"]}}"#,
    );
    let out = parse_head(&body)
        .unwrap()
        .rewrite_asking_usage(&body, br#""up""#);
    assert_eq!(
        &out[..],
        br#"{"model":"up","stream":true,"stream_options":{"include_usage":true,"x":5.7944105707921476e+299,"y":[1.0,"\u00e9"]}}"#
    );
}

/// `"stream_options": null` reads as no options, so asking for usage added a second
/// `stream_options` member: the upstream got the key twice (most parsers keep the last,
/// the null: no usage), and the gateway's own head parse refused its body.
#[test]
fn regression_null_stream_options_is_replaced_not_repeated() {
    let body = Bytes::from_static(br#"{"stream_options":null,"model":"m","stream":true}"#);
    let h = parse_head(&body).unwrap();
    assert!(!h.include_usage);
    let out = h.rewrite_asking_usage(&body, br#""up""#);
    assert_eq!(
        &out[..],
        br#"{"stream_options":{"include_usage":true},"model":"up","stream":true}"#
    );
    assert!(parse_head(&out).unwrap().include_usage);
}

/// serde skips a string without checking its escapes, so a lone surrogate in a member the
/// head does not read passes the head scan, but is no `Value`: reading the body whole gave
/// an error where passthrough used to forward the body.
#[test]
fn regression_whole_read_keeps_a_head_serde_reads() {
    let body = br#"{"model":"m","x":"\ud82A\ud82b"}"#;
    let (head, value) = parse(body, None, true).unwrap();
    assert_eq!(head, parse_head(body).unwrap());
    assert_eq!(value, None);
    let call = GeminiCall {
        model: "m".into(),
        method: GeminiMethod::Generate,
    };
    let (head, value) = parse(body, Some(&call), true).unwrap();
    assert_eq!(head, gemini_head(body, &call).unwrap());
    assert_eq!(value, None);
}

/// serde's derive reads a struct from an array, its fields in order: `["m",true]` was a
/// streaming request for the model `m` (`[null,null]` one without a model), routed and
/// forwarded as such, where the body is no object at all. Found from the corpus (a real body
/// whose members were all dropped, then retyped).
#[test]
fn regression_an_array_is_no_request() {
    for body in [&br#"["m",true]"#[..], b"[null,null]", b" [\"m\",null,{}]"] {
        let shown = String::from_utf8_lossy(body);
        assert!(
            matches!(parse_head(body), Err(HeadError::Json(_))),
            "{shown}"
        );
        assert!(
            matches!(parse(body, None, true), Err(HeadError::Json(_))),
            "{shown}"
        );
    }
}
