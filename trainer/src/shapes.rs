//! Training and holdout shapes: one TOML file per shape in a shapes directory, request
//! bodies in `<dir>/bodies/`.
//!
//! A shape is data, not code: the driver and the training workload read nothing else.
//! Loading validates everything the later stages rely on (the body parses, its `stream`
//! flag matches the shape, it names a model), so a bad shape fails before any gateway runs.
//! A Gemini body names neither (the model and the streaming method are in the request's
//! path): a `gemini` shape names its model in the shape file.

use std::collections::BTreeMap;
use std::fmt;
use std::num::NonZeroU64;
use std::path::{Path, PathBuf};

use serde::Deserialize;

use crate::dialect::{Dialect, Provider};

/// The largest concurrency a shape may ask for: one keep-alive connection per unit.
pub(crate) const MAX_CONCURRENCY: u32 = 256;
/// The largest request count a shape may ask for; training must stay short.
pub(crate) const MAX_REQUESTS: u64 = 1_000_000;

#[derive(Debug, thiserror::Error)]
pub enum ShapeError {
    #[error("cannot read shapes directory {dir}: {source}")]
    ReadDir {
        dir: PathBuf,
        source: std::io::Error,
    },
    #[error("cannot read shape file {file}: {source}")]
    Read {
        file: PathBuf,
        source: std::io::Error,
    },
    #[error("invalid shape file {file}: {message}")]
    Parse { file: PathBuf, message: String },
    #[error("invalid shape file {file}: `{field}`: {message}")]
    Field {
        file: PathBuf,
        field: &'static str,
        message: String,
    },
    #[error("no shape files (*.toml) in {dir}")]
    Empty { dir: PathBuf },
    #[error("no shape named {name:?} in {dir} (have: {have})")]
    NotFound {
        dir: PathBuf,
        name: String,
        have: String,
    },
}

/// The gateway configuration a shape trains under.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Posture {
    /// Observability on (access log and metrics), no rate limits.
    #[default]
    Default,
    /// As default, plus a rate-limit policy generous enough never to reject, so the
    /// quota accounting runs on every request.
    RateLimited,
}

impl Posture {
    pub fn as_str(self) -> &'static str {
        match self {
            Posture::Default => "default",
            Posture::RateLimited => "rate-limited",
        }
    }
}

impl fmt::Display for Posture {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.pad(self.as_str())
    }
}

/// The raw file; every field but `model`, `upstream`, `upstream_tls`, `reconnect_every`,
/// `posture` and `holdout` is required (`model`: required of a gemini shape, refused of the
/// others).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ShapeFile {
    name: String,
    dialect: Dialect,
    stream: bool,
    body: PathBuf,
    requests: u64,
    concurrency: u32,
    /// Gemini only: the model, which goes in the path.
    #[serde(default)]
    model: Option<String>,
    /// Default: the dialect's native provider.
    #[serde(default)]
    upstream: Option<Provider>,
    /// The upstream serves HTTPS (a CA made at start, handed over in `upstream.extra_ca_file`).
    #[serde(default)]
    upstream_tls: bool,
    /// The upstream closes each connection after every N responses.
    #[serde(default)]
    reconnect_every: Option<u64>,
    #[serde(default)]
    posture: Posture,
    #[serde(default)]
    holdout: bool,
}

/// A validated shape, with its body loaded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Shape {
    pub name: String,
    pub dialect: Dialect,
    pub stream: bool,
    /// The body file as written in the shape (relative to the shapes directory).
    pub(crate) body_file: PathBuf,
    pub body: Vec<u8>,
    /// The client-facing model the body asks for (Gemini: the shape file's `model`, which
    /// the driver puts in the path); the training config routes it.
    pub model: String,
    pub requests: u64,
    pub concurrency: u32,
    /// The provider the model is routed to; not the dialect's native one: translated.
    pub upstream: Provider,
    /// The mock upstream serves HTTPS, as every cloud provider does.
    pub upstream_tls: bool,
    /// The mock closes each connection after every N responses: the gateway opens new ones
    /// (a TLS handshake each on HTTPS), as production's upstreams make it.
    pub reconnect_every: Option<NonZeroU64>,
    pub posture: Posture,
    pub holdout: bool,
    /// The shape file it was loaded from.
    pub file: PathBuf,
}

/// Loads and validates one shape file; `dir` is the shapes directory its body path is
/// relative to.
pub(crate) fn load_file(file: &Path, dir: &Path) -> Result<Shape, ShapeError> {
    let text = std::fs::read_to_string(file).map_err(|source| ShapeError::Read {
        file: file.to_owned(),
        source,
    })?;
    parse(&text, file, dir)
}

/// Parses and validates shape text; `file` names it in errors and `dir` resolves its body.
pub fn parse(text: &str, file: &Path, dir: &Path) -> Result<Shape, ShapeError> {
    let raw: ShapeFile = toml::from_str(text).map_err(|e| ShapeError::Parse {
        file: file.to_owned(),
        message: describe_toml_error(&e, text),
    })?;
    let field = |field: &'static str, message: String| ShapeError::Field {
        file: file.to_owned(),
        field,
        message,
    };

    if raw.name.is_empty()
        || !raw
            .name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
    {
        return Err(field(
            "name",
            format!("{:?} must be non-empty and only a-z, 0-9 and '-'", raw.name),
        ));
    }
    // The name is also the profile file prefix; matching the file stem keeps it unique.
    if file.file_stem().and_then(|s| s.to_str()) != Some(raw.name.as_str()) {
        return Err(field(
            "name",
            format!("{:?} must equal the file name without .toml", raw.name),
        ));
    }
    if raw.requests == 0 || raw.requests > MAX_REQUESTS {
        return Err(field(
            "requests",
            format!("{} is not in 1..={MAX_REQUESTS}", raw.requests),
        ));
    }
    if raw.concurrency == 0 || raw.concurrency > MAX_CONCURRENCY {
        return Err(field(
            "concurrency",
            format!("{} is not in 1..={MAX_CONCURRENCY}", raw.concurrency),
        ));
    }
    if u64::from(raw.concurrency) > raw.requests {
        return Err(field(
            "concurrency",
            format!(
                "{} exceeds requests ({}): idle connections train nothing",
                raw.concurrency, raw.requests
            ),
        ));
    }
    // More than `requests` is allowed: a trimmed copy of a shape (the tests', a quick run)
    // keeps its file's value and simply never reconnects.
    let reconnect_every = match raw.reconnect_every.map(NonZeroU64::new) {
        None => None,
        Some(Some(n)) => Some(n),
        Some(None) => {
            return Err(field(
                "reconnect_every",
                "0 would close every connection before its first response; at least 1".into(),
            ))
        }
    };
    if raw.body.is_absolute() || raw.body.components().any(|c| c.as_os_str() == "..") {
        return Err(field(
            "body",
            format!(
                "{} must be a relative path inside the shapes directory",
                raw.body.display()
            ),
        ));
    }
    let body_path = dir.join(&raw.body);
    let body = std::fs::read(&body_path)
        .map_err(|e| field("body", format!("cannot read {}: {e}", body_path.display())))?;
    let body_model = check_body(&body, raw.dialect, raw.stream)
        .map_err(|m| field("body", format!("{}: {m}", body_path.display())))?;
    let model = match (body_model, raw.model) {
        (Some(model), None) => model,
        (None, Some(model)) => {
            let path_safe = |b: u8| b.is_ascii_alphanumeric() || b"-._".contains(&b);
            if model.is_empty() || !model.bytes().all(path_safe) {
                return Err(field(
                    "model",
                    format!("{model:?} must be non-empty and only A-Z, a-z, 0-9, '-', '.' and '_' (it goes in the path)"),
                ));
            }
            model
        }
        (None, None) => {
            return Err(field(
                "model",
                format!(
                    "a {} shape names its model here (the body has none: it goes in the path)",
                    raw.dialect
                ),
            ))
        }
        (Some(_), Some(_)) => {
            return Err(field(
                "model",
                format!(
                    "only a gemini shape names its model here; a {} body names it",
                    raw.dialect
                ),
            ))
        }
    };

    Ok(Shape {
        name: raw.name,
        dialect: raw.dialect,
        stream: raw.stream,
        body_file: raw.body,
        body,
        model,
        requests: raw.requests,
        concurrency: raw.concurrency,
        upstream: raw.upstream.unwrap_or(raw.dialect.native_provider()),
        upstream_tls: raw.upstream_tls,
        reconnect_every,
        posture: raw.posture,
        holdout: raw.holdout,
        file: file.to_owned(),
    })
}

impl Shape {
    /// Whether the gateway translates this shape's requests (its provider speaks another
    /// dialect).
    pub fn is_translated(&self) -> bool {
        !self.upstream.speaks(self.dialect)
    }
}

/// Checks a body against the shape that sends it; returns the model it asks for (none for
/// Gemini, whose body has neither a model nor a stream flag).
fn check_body(body: &[u8], dialect: Dialect, stream: bool) -> Result<Option<String>, String> {
    let v: serde_json::Value =
        serde_json::from_slice(body).map_err(|e| format!("not valid JSON: {e}"))?;
    let obj = v.as_object().ok_or("not a JSON object")?;
    if dialect == Dialect::Gemini {
        for key in ["model", "stream"] {
            if obj.contains_key(key) {
                return Err(format!(
                    "a gemini body has no \"{key}\" (the model and the streaming method are in the path)"
                ));
            }
        }
        if !obj.get("contents").is_some_and(|c| c.is_array()) {
            return Err("a gemini body needs a \"contents\" array".into());
        }
        return Ok(None);
    }
    let model = obj
        .get("model")
        .and_then(|m| m.as_str())
        .filter(|m| !m.is_empty())
        .ok_or("no \"model\" string")?
        .to_owned();
    let body_stream = obj.get("stream").and_then(|s| s.as_bool()).unwrap_or(false);
    if body_stream != stream {
        return Err(format!(
            "its \"stream\" is {body_stream} but the shape says stream = {stream}"
        ));
    }
    let needs = match dialect {
        Dialect::Chat | Dialect::Messages => "messages",
        Dialect::Responses => "input",
        Dialect::Gemini => "contents",
    };
    if !obj.contains_key(needs) {
        return Err(format!("a {dialect} body needs \"{needs}\""));
    }
    if dialect == Dialect::Messages && !obj.contains_key("max_tokens") {
        return Err("a messages body needs \"max_tokens\"".into());
    }
    // Without include_usage a chat stream carries no usage and the driver would fail it.
    if dialect == Dialect::Chat
        && stream
        && obj
            .get("stream_options")
            .and_then(|o| o.get("include_usage"))
            .and_then(|b| b.as_bool())
            != Some(true)
    {
        return Err(
            "a streaming chat body needs \"stream_options\": {\"include_usage\": true}".into(),
        );
    }
    Ok(Some(model))
}

/// toml's message, plus the offending line: a type error names the value, not the key.
fn describe_toml_error(e: &toml::de::Error, text: &str) -> String {
    let msg = e.message().trim().to_owned();
    let Some(span) = e.span() else { return msg };
    let start = text[..span.start.min(text.len())]
        .rfind('\n')
        .map_or(0, |i| i + 1);
    let line_no = text[..start].matches('\n').count() + 1;
    let line = text[start..].lines().next().unwrap_or("").trim();
    format!("{msg} (line {line_no}: `{line}`)")
}

/// All shapes of a directory (every `*.toml` directly in it), sorted by name.
pub fn load_dir(dir: &Path) -> Result<Vec<Shape>, ShapeError> {
    let read_dir = |source| ShapeError::ReadDir {
        dir: dir.to_owned(),
        source,
    };
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir).map_err(read_dir)? {
        let path = entry.map_err(read_dir)?.path();
        if path.extension().is_some_and(|e| e == "toml") && path.is_file() {
            files.push(path);
        }
    }
    if files.is_empty() {
        return Err(ShapeError::Empty {
            dir: dir.to_owned(),
        });
    }
    files.sort();
    let mut by_name = BTreeMap::new();
    for file in files {
        let shape = load_file(&file, dir)?;
        // Names equal file stems, so a duplicate cannot happen within one directory.
        by_name.insert(shape.name.clone(), shape);
    }
    Ok(by_name.into_values().collect())
}

/// One shape of a directory, by name.
pub fn find(dir: &Path, name: &str) -> Result<Shape, ShapeError> {
    let shapes = load_dir(dir)?;
    let have = shapes
        .iter()
        .map(|s| s.name.as_str())
        .collect::<Vec<_>>()
        .join(", ");
    shapes
        .into_iter()
        .find(|s| s.name == name)
        .ok_or_else(|| ShapeError::NotFound {
            dir: dir.to_owned(),
            name: name.to_owned(),
            have,
        })
}

/// The shapes that train (every shape but the holdouts).
pub fn training(shapes: &[Shape]) -> Vec<&Shape> {
    shapes.iter().filter(|s| !s.holdout).collect()
}

/// The shapes directory of this repository, for tests and as the CLI default.
pub fn repo_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../shapes")
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Dir(PathBuf);

    impl Dir {
        fn new(tag: &str) -> Dir {
            let d = std::env::temp_dir()
                .join(format!("trainer-shapes-test-{tag}-{}", std::process::id()));
            let _ = std::fs::remove_dir_all(&d);
            std::fs::create_dir_all(d.join("bodies")).unwrap();
            std::fs::write(
                d.join("bodies/chat.json"),
                r#"{"model":"m","messages":[{"role":"user","content":"hi"}]}"#,
            )
            .unwrap();
            Dir(d)
        }
    }

    impl Drop for Dir {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }

    const GOOD: &str = r#"
name = "s"
dialect = "chat"
stream = false
body = "bodies/chat.json"
requests = 10
concurrency = 2
"#;

    fn try_parse(tag: &str, text: &str) -> Result<Shape, ShapeError> {
        let d = Dir::new(tag);
        parse(text, &d.0.join("s.toml"), &d.0)
    }

    fn field_of(tag: &str, text: &str) -> String {
        match try_parse(tag, text) {
            Err(ShapeError::Field { field, file, .. }) => {
                assert!(file.ends_with("s.toml"));
                field.to_owned()
            }
            other => panic!("expected a field error, got {other:?}"),
        }
    }

    #[test]
    fn good_shape_parses_with_defaults() {
        let s = try_parse("good", GOOD).unwrap();
        assert_eq!(s.dialect, Dialect::Chat);
        assert_eq!(s.posture, Posture::Default);
        assert!(!s.holdout);
        assert_eq!(s.model, "m");
        assert_eq!(s.dialect.route(), "/v1/chat/completions");
        assert_eq!(s.upstream, Provider::OpenAi);
        assert!(!s.is_translated());
    }

    #[test]
    fn upstream_chooses_the_provider() {
        let s = try_parse("upstream", &format!("{GOOD}upstream = \"anthropic\"\n")).unwrap();
        assert_eq!(s.upstream, Provider::Anthropic);
        assert!(s.is_translated());
        let s = try_parse(
            "compat",
            &format!("{GOOD}upstream = \"openai-compatible\"\n"),
        )
        .unwrap();
        assert!(!s.is_translated());
        assert!(Provider::OpenAiCompatible.speaks(Dialect::Chat));
        assert!(!Provider::OpenAiCompatible.speaks(Dialect::Responses));
        assert!(!Provider::OpenAi.speaks(Dialect::Messages));
    }

    #[test]
    fn each_bad_field_is_named() {
        let cases = [
            ("name", GOOD.replace("name = \"s\"", "name = \"S x\"")),
            ("name", GOOD.replace("name = \"s\"", "name = \"other\"")),
            ("requests", GOOD.replace("requests = 10", "requests = 0")),
            (
                "concurrency",
                GOOD.replace("concurrency = 2", "concurrency = 0"),
            ),
            (
                "concurrency",
                GOOD.replace("concurrency = 2", "concurrency = 11"),
            ),
            (
                "body",
                GOOD.replace("bodies/chat.json", "bodies/missing.json"),
            ),
            ("body", GOOD.replace("bodies/chat.json", "../x.json")),
            // The body says no stream, the shape says stream.
            ("body", GOOD.replace("stream = false", "stream = true")),
            // A chat body is not a responses body.
            ("body", GOOD.replace("\"chat\"", "\"responses\"")),
            ("body", GOOD.replace("\"chat\"", "\"messages\"")),
        ];
        for (i, (want, text)) in cases.iter().enumerate() {
            assert_eq!(
                field_of(&format!("bad{i}"), text),
                *want,
                "case {i}: {text}"
            );
        }
    }

    #[test]
    fn type_errors_and_unknown_keys_name_the_key() {
        for (i, (key, text)) in [
            ("dialect", GOOD.replace("\"chat\"", "\"bedrock\"")),
            ("posture", format!("{GOOD}posture = \"fast\"\n")),
            ("holdout", format!("{GOOD}holdout = \"yes\"\n")),
            ("upstream", format!("{GOOD}upstream = \"watsonx\"\n")),
            ("model", format!("{GOOD}model = 7\n")),
            ("rqeuests", format!("{GOOD}rqeuests = 3\n")),
            ("concurrency", GOOD.replace("concurrency = 2\n", "")),
        ]
        .iter()
        .enumerate()
        {
            let e = try_parse(&format!("type{i}"), text).unwrap_err();
            let msg = e.to_string();
            assert!(matches!(e, ShapeError::Parse { .. }), "{msg}");
            assert!(msg.contains(key) && msg.contains("s.toml"), "{msg}");
        }
    }

    const GEMINI: &str = r#"
name = "s"
dialect = "gemini"
model = "gemini-2.5-flash"
stream = true
body = "bodies/gemini.json"
requests = 10
concurrency = 2
"#;

    fn gemini_dir(tag: &str, body: &str) -> Dir {
        let d = Dir::new(tag);
        std::fs::write(d.0.join("bodies/gemini.json"), body).unwrap();
        d
    }

    #[test]
    fn a_gemini_shape_names_its_model_and_the_body_none() {
        let body = r#"{"contents":[{"role":"user","parts":[{"text":"hi"}]}]}"#;
        let d = gemini_dir("gemini", body);
        let s = parse(GEMINI, &d.0.join("s.toml"), &d.0).unwrap();
        assert_eq!(s.model, "gemini-2.5-flash");
        assert_eq!(s.upstream, Provider::Gemini);
        assert!(!s.is_translated());
        assert!(s.stream);
        let s = parse(
            &format!("{GEMINI}upstream = \"anthropic\"\n"),
            &d.0.join("s.toml"),
            &d.0,
        )
        .unwrap();
        assert!(s.is_translated());

        let field = |tag: &str, body: &str, text: &str| {
            let d = gemini_dir(tag, body);
            match parse(text, &d.0.join("s.toml"), &d.0) {
                Err(ShapeError::Field { field, message, .. }) => (field, message),
                other => panic!("expected a field error, got {other:?}"),
            }
        };
        let no_model = GEMINI.replace("model = \"gemini-2.5-flash\"\n", "");
        assert_eq!(field("g1", body, &no_model).0, "model");
        let bad_model = GEMINI.replace("gemini-2.5-flash", "a/b");
        assert_eq!(field("g2", body, &bad_model).0, "model");
        for (i, bad) in [
            r#"{"model":"m","contents":[]}"#,
            r#"{"stream":true,"contents":[]}"#,
            r#"{"messages":[]}"#,
            r#"{"contents":{}}"#,
        ]
        .iter()
        .enumerate()
        {
            let (f, message) = field(&format!("g3{i}"), bad, GEMINI);
            assert_eq!(f, "body", "{bad}: {message}");
        }
        // Only a gemini shape names its model in the shape file.
        let d = Dir::new("chatmodel");
        match parse(&format!("{GOOD}model = \"m\"\n"), &d.0.join("s.toml"), &d.0) {
            Err(ShapeError::Field { field, .. }) => assert_eq!(field, "model"),
            other => panic!("expected a field error, got {other:?}"),
        }
    }

    #[test]
    fn streaming_chat_needs_include_usage() {
        let d = Dir::new("chatstream");
        std::fs::write(
            d.0.join("bodies/chat.json"),
            r#"{"model":"m","stream":true,"messages":[]}"#,
        )
        .unwrap();
        let text = GOOD.replace("stream = false", "stream = true");
        let e = parse(&text, &d.0.join("s.toml"), &d.0)
            .unwrap_err()
            .to_string();
        assert!(e.contains("include_usage"), "{e}");
    }

    #[test]
    fn empty_dir_is_an_error() {
        let d = Dir::new("empty");
        assert!(matches!(load_dir(&d.0), Err(ShapeError::Empty { .. })));
        let e = find(&d.0, "x").unwrap_err().to_string();
        assert!(e.contains("no shape files"), "{e}");
    }

    #[test]
    fn repo_shapes_are_valid() {
        let shapes = load_dir(&repo_dir()).unwrap();
        let holdouts: Vec<_> = shapes.iter().filter(|s| s.holdout).collect();
        assert_eq!(holdouts.len(), 1, "exactly one holdout shape");
        let training = training(&shapes);
        assert!(training.len() >= 6, "about 8 training shapes");
        for d in Dialect::ALL {
            for stream in [false, true] {
                assert!(
                    training
                        .iter()
                        .any(|s| s.dialect == d && s.stream == stream),
                    "no training shape for {d} stream={stream}"
                );
            }
        }
        assert!(training.iter().any(|s| s.posture == Posture::RateLimited));
        // The translated paths are hot in production: messages on an OpenAI upstream
        // (streaming and not) and chat on an Anthropic upstream (streaming) train.
        // So are Gemini's: Gemini CLI on other providers' models, and each other dialect on a
        // Gemini model. Azure OpenAI's URL scheme trains once, and so do Vertex's two
        // (the bearer token, the publisher paths, the Claude body splice) and Bedrock's two
        // (SigV4, the Converse codec, the event-stream framer and decoder).
        for (d, upstream, stream) in [
            (Dialect::Messages, Provider::OpenAi, false),
            (Dialect::Messages, Provider::OpenAi, true),
            (Dialect::Chat, Provider::Anthropic, true),
            (Dialect::Gemini, Provider::OpenAi, false),
            (Dialect::Gemini, Provider::Anthropic, true),
            (Dialect::Chat, Provider::Gemini, false),
            (Dialect::Messages, Provider::Gemini, true),
            (Dialect::Responses, Provider::Gemini, true),
            (Dialect::Chat, Provider::AzureOpenAi, false),
            (Dialect::Gemini, Provider::Vertex, true),
            (Dialect::Messages, Provider::VertexAnthropic, true),
            (Dialect::Chat, Provider::Bedrock, true),
            (Dialect::Messages, Provider::Bedrock, false),
        ] {
            assert!(
                training
                    .iter()
                    .any(|s| s.dialect == d && s.upstream == upstream && s.stream == stream),
                "no training shape for {d} on {upstream} stream={stream}"
            );
        }
        assert!(!holdouts[0].is_translated());
        let bench = training
            .iter()
            .find(|s| s.name == "chat-nonstream-minimal")
            .expect("the benchmarks use chat-nonstream-minimal");
        assert!(!bench.stream && bench.body.len() < 128);
        // The holdout shares code with training shapes but is its own shape.
        let h = holdouts[0];
        assert!(training
            .iter()
            .any(|s| s.dialect == h.dialect && s.stream == h.stream));
        assert!(training.iter().all(|s| s.body != h.body));
        // Production reaches every cloud provider over HTTPS, and only an OpenAI-compatible
        // server (beside the gateway) over plain HTTP: the shapes say the same, new
        // connections (a handshake each) included, and the holdout is an HTTPS shape with
        // reconnects, so the gate sees what TLS costs after PGO.
        for s in &shapes {
            assert_eq!(
                s.upstream_tls,
                s.upstream != Provider::OpenAiCompatible,
                "{}: HTTPS exactly when its provider is a cloud's",
                s.name
            );
        }
        assert!(training
            .iter()
            .any(|s| s.upstream == Provider::OpenAiCompatible));
        assert!(training
            .iter()
            .any(|s| s.upstream_tls && s.reconnect_every.is_some()));
        assert!(h.upstream_tls && h.reconnect_every.is_some());
    }

    #[test]
    fn tls_and_reconnects_are_read_and_checked() {
        let s = try_parse("plain", GOOD).unwrap();
        assert!(!s.upstream_tls);
        assert_eq!(s.reconnect_every, None);
        let s = try_parse(
            "tls",
            &format!("{GOOD}upstream_tls = true\nreconnect_every = 10\n"),
        )
        .unwrap();
        assert!(s.upstream_tls);
        assert_eq!(s.reconnect_every.map(NonZeroU64::get), Some(10));
        assert_eq!(
            field_of("reconnect0", &format!("{GOOD}reconnect_every = 0\n")),
            "reconnect_every"
        );
    }
}
