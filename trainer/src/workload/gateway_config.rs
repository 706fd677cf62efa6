//! The gateway configuration a shape trains under (schema: `gateway/src/config/`).

use std::path::Path;

use toml::{Table, Value};

use crate::dialect::Provider;
use crate::shapes::{Posture, Shape};

/// The `api_version` of an `azure-openai` target (Azure's GA data-plane version).
pub(crate) const AZURE_API_VERSION: &str = "2024-10-21";

/// The location and project of a Vertex target (the mock serves any).
pub(crate) const VERTEX_LOCATION: &str = "us-central1";
pub(crate) const VERTEX_PROJECT: &str = "training";

/// The region of a Bedrock target (the mock serves any; it is signed for).
pub(crate) const BEDROCK_REGION: &str = "us-east-1";

/// Far above anything a training run sends: the quota accounting runs, nothing is rejected.
pub(crate) const GENEROUS_REQUESTS_PER_MINUTE: i64 = 1_000_000_000;
pub(crate) const GENEROUS_TOKENS_PER_MINUTE: i64 = 1_000_000_000_000;

/// The config for `shape`: the body's model routed to the mock at `upstream` with the
/// shape's provider (another dialect's provider makes the gateway translate), trusting the CA
/// in `ca_file` when the mock serves HTTPS, listening on `listen`, one key `key`; the posture
/// decides observability and rate limits.
pub fn render(
    shape: &Shape,
    upstream: &str,
    ca_file: Option<&Path>,
    listen: &str,
    key: &str,
) -> String {
    let mut root = Table::new();

    let mut server = Table::new();
    server.insert("listen".into(), listen.into());
    server.insert("shutdown_grace_ms".into(), Value::Integer(10_000));
    root.insert("server".into(), server.into());

    let mut upstream_t = Table::new();
    upstream_t.insert("connect_timeout_ms".into(), Value::Integer(5_000));
    upstream_t.insert("first_byte_timeout_ms".into(), Value::Integer(30_000));
    upstream_t.insert("idle_timeout_ms".into(), Value::Integer(30_000));
    if let Some(ca) = ca_file {
        upstream_t.insert("extra_ca_file".into(), ca.display().to_string().into());
    }
    root.insert("upstream".into(), upstream_t.into());

    let mut obs = Table::new();
    obs.insert("access_log".into(), "stdout".into());
    obs.insert("metrics".into(), true.into());
    root.insert("observability".into(), obs.into());

    let rate_limit = || {
        let mut rl = Table::new();
        rl.insert(
            "requests_per_minute".into(),
            Value::Integer(GENEROUS_REQUESTS_PER_MINUTE),
        );
        rl.insert(
            "tokens_per_minute".into(),
            Value::Integer(GENEROUS_TOKENS_PER_MINUTE),
        );
        Value::Table(rl)
    };
    let limited = shape.posture == Posture::RateLimited;

    let mut k = Table::new();
    k.insert("name".into(), "trainer".into());
    k.insert("key".into(), key.into());
    if limited {
        k.insert("rate_limit".into(), rate_limit());
    }
    root.insert("keys".into(), Value::Array(vec![k.into()]));

    let mut target = Table::new();
    target.insert("provider".into(), shape.upstream.as_str().into());
    target.insert("base_url".into(), upstream.into());
    target.insert("model".into(), shape.model.clone().into());
    if shape.upstream == Provider::AzureOpenAi {
        // The deployments URL with its api-version, the scheme further from OpenAI's.
        target.insert("api_version".into(), AZURE_API_VERSION.into());
    }
    if matches!(shape.upstream, Provider::Vertex | Provider::VertexAnthropic) {
        // Vertex's publisher paths on the mock; a bearer token from the launcher's env.
        target.insert("location".into(), VERTEX_LOCATION.into());
        target.insert("project".into(), VERTEX_PROJECT.into());
        target.insert(
            "access_token_env".into(),
            crate::launch::VERTEX_TOKEN_ENV.into(),
        );
    }
    if shape.upstream == Provider::Bedrock {
        // SigV4 with the fixed keys every gateway the trainer starts gets in its
        // environment (`launch::BEDROCK_ENV`); the mock checks no signature.
        target.insert("region".into(), BEDROCK_REGION.into());
        target.insert("aws_credentials".into(), "env".into());
    }
    let mut model = Table::new();
    model.insert("name".into(), shape.model.clone().into());
    if limited {
        model.insert("rate_limit".into(), rate_limit());
    }
    model.insert("targets".into(), Value::Array(vec![target.into()]));
    root.insert("models".into(), Value::Array(vec![model.into()]));

    toml::to_string(&root).expect("config serializes")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::shapes;

    fn shape(name: &str) -> Shape {
        shapes::find(&shapes::repo_dir(), name).unwrap()
    }

    #[test]
    fn default_posture_has_no_rate_limit() {
        let text = render(
            &shape("messages-nonstream-minimal"),
            "http://127.0.0.1:1",
            None,
            "127.0.0.1:2",
            "k",
        );
        let v: Table = toml::from_str(&text).unwrap();
        assert_eq!(v["server"]["listen"].as_str(), Some("127.0.0.1:2"));
        assert_eq!(v["observability"]["access_log"].as_str(), Some("stdout"));
        let model = &v["models"][0];
        assert_eq!(model["name"].as_str(), Some("claude-sonnet"));
        assert_eq!(model["targets"][0]["provider"].as_str(), Some("anthropic"));
        assert_eq!(
            model["targets"][0]["base_url"].as_str(),
            Some("http://127.0.0.1:1")
        );
        assert!(model.get("rate_limit").is_none());
        assert!(v["keys"][0].get("rate_limit").is_none());
        assert_eq!(v["keys"][0]["key"].as_str(), Some("k"));
    }

    #[test]
    fn rate_limited_posture_limits_key_and_model() {
        let text = render(
            &shape("chat-stream-mid-ratelimited"),
            "http://127.0.0.1:1",
            None,
            "127.0.0.1:2",
            "k",
        );
        let v: Table = toml::from_str(&text).unwrap();
        for rl in [&v["keys"][0]["rate_limit"], &v["models"][0]["rate_limit"]] {
            assert_eq!(
                rl["requests_per_minute"].as_integer(),
                Some(GENEROUS_REQUESTS_PER_MINUTE)
            );
            assert!(rl["tokens_per_minute"].as_integer().is_some());
        }
        assert_eq!(
            v["models"][0]["targets"][0]["provider"].as_str(),
            Some("openai")
        );
    }

    #[test]
    fn a_translated_shape_routes_to_the_other_provider() {
        for (name, provider) in [
            ("messages-stream-mid-via-openai", "openai"),
            ("chat-stream-minimal-via-anthropic", "anthropic"),
            ("chat-nonstream-minimal-via-gemini", "gemini"),
            ("gemini-stream-agent-via-anthropic", "anthropic"),
        ] {
            let s = shape(name);
            assert!(s.is_translated(), "{name}");
            let text = render(&s, "http://127.0.0.1:1", None, "127.0.0.1:2", "k");
            let v: Table = toml::from_str(&text).unwrap();
            let target = &v["models"][0]["targets"][0];
            assert_eq!(target["provider"].as_str(), Some(provider), "{name}");
            assert_eq!(v["models"][0]["name"].as_str(), Some(s.model.as_str()));
        }
    }

    #[test]
    fn an_azure_shape_names_its_api_version() {
        let s = shape("chat-nonstream-minimal-via-azure-openai");
        assert!(!s.is_translated());
        let text = render(&s, "http://127.0.0.1:1", None, "127.0.0.1:2", "k");
        let v: Table = toml::from_str(&text).unwrap();
        let target = &v["models"][0]["targets"][0];
        assert_eq!(target["provider"].as_str(), Some("azure-openai"));
        assert_eq!(target["api_version"].as_str(), Some(AZURE_API_VERSION));
        let other = render(
            &shape("chat-nonstream-minimal"),
            "http://x",
            None,
            "127.0.0.1:2",
            "k",
        );
        assert!(!other.contains("api_version"));
    }

    #[test]
    fn vertex_shapes_name_location_project_and_token_env() {
        for (name, provider) in [
            ("gemini-stream-mid-via-vertex", "vertex"),
            (
                "messages-stream-minimal-via-vertex-anthropic",
                "vertex-anthropic",
            ),
        ] {
            let s = shape(name);
            assert!(!s.is_translated(), "{name}");
            let text = render(&s, "http://127.0.0.1:1", None, "127.0.0.1:2", "k");
            let v: Table = toml::from_str(&text).unwrap();
            let target = &v["models"][0]["targets"][0];
            assert_eq!(target["provider"].as_str(), Some(provider));
            assert_eq!(target["location"].as_str(), Some(VERTEX_LOCATION));
            assert_eq!(target["project"].as_str(), Some(VERTEX_PROJECT));
            assert_eq!(
                target["access_token_env"].as_str(),
                Some(crate::launch::VERTEX_TOKEN_ENV)
            );
        }
        let other = render(
            &shape("gemini-stream-mid"),
            "http://x",
            None,
            "127.0.0.1:2",
            "k",
        );
        assert!(!other.contains("location"));
    }

    #[test]
    fn a_gemini_shape_routes_its_path_model_to_the_gemini_provider() {
        let s = shape("gemini-stream-mid");
        let text = render(&s, "http://127.0.0.1:1", None, "127.0.0.1:2", "k");
        let v: Table = toml::from_str(&text).unwrap();
        let model = &v["models"][0];
        assert_eq!(model["name"].as_str(), Some("gemini-2.5-pro"));
        let target = &model["targets"][0];
        assert_eq!(target["provider"].as_str(), Some("gemini"));
        // The mock's base URL, no path: the gateway appends /v1beta/models/...
        assert_eq!(target["base_url"].as_str(), Some("http://127.0.0.1:1"));
        assert_eq!(target["model"].as_str(), Some("gemini-2.5-pro"));
    }
}
