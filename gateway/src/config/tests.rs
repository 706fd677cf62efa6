//! The config's errors name the key at fault.

use std::path::Path;

use super::*;
use crate::dialect::Provider;

fn parse(text: &str) -> Result<Config, ConfigError> {
    Config::parse(text, Path::new("test.toml"))
}

const MINIMAL: &str = r#"
[[models]]
name = "gpt-4o-mini"
[[models.targets]]
provider = "openai"
base_url = "http://127.0.0.1:9"
model = "gpt-4o-mini-2024-07-18"
"#;

#[test]
fn minimal_config_gets_defaults() {
    let c = parse(MINIMAL).unwrap();
    assert_eq!(c.server.max_body_bytes, 8 * 1024 * 1024);
    assert_eq!(c.server.workers, 0);
    assert!(c.observability.metrics);
    assert_eq!(c.models[0].targets[0].provider, Provider::Openai);
}

#[test]
fn credential_lifetime_floor_is_a_minute_and_at_least_a_second() {
    assert_eq!(
        parse(MINIMAL).unwrap().upstream.min_credential_lifetime_ms,
        60_000
    );
    let text = format!("[upstream]\nmin_credential_lifetime_ms = 999\n{MINIMAL}");
    let e = parse(&text).unwrap_err().to_string();
    assert!(e.contains("upstream.min_credential_lifetime_ms"), "{e}");
    let text = format!("[upstream]\nmin_credential_lifetime_ms = 1000\n{MINIMAL}");
    assert_eq!(
        parse(&text).unwrap().upstream.min_credential_lifetime_ms,
        1_000
    );
}

#[test]
fn runtime_defaults_to_multi_thread_and_refuses_a_bad_value() {
    assert_eq!(parse(MINIMAL).unwrap().server.runtime, Runtime::MultiThread);
    let text = format!("[server]\nruntime = \"thread-per-core\"\n{MINIMAL}");
    assert_eq!(parse(&text).unwrap().server.runtime, Runtime::ThreadPerCore);
    let text = format!("[server]\nruntime = \"per-core\"\n{MINIMAL}");
    let e = parse(&text).unwrap_err().to_string();
    // serde's words, as for the other enums: the bad value and the two it takes.
    assert!(
        e.contains("unknown variant `per-core`") && e.contains("`thread-per-core`"),
        "{e}"
    );
}

#[test]
fn missing_models_is_named() {
    let e = parse("[server]\nworkers = 1\n").unwrap_err().to_string();
    assert!(e.contains("test.toml") && e.contains("models"), "{e}");
}

#[test]
fn unknown_key_is_named() {
    let e = parse(&format!("{MINIMAL}\n[server]\nlisten_addr = \"x\"\n"))
        .unwrap_err()
        .to_string();
    assert!(e.contains("listen_addr"), "{e}");
}

#[test]
fn bad_provider_is_named() {
    let e = parse(&MINIMAL.replace("\"openai\"", "\"palm\""))
        .unwrap_err()
        .to_string();
    assert!(e.contains("palm") && e.contains("test.toml"), "{e}");
}

#[test]
fn bad_base_url_is_named() {
    let e = parse(&MINIMAL.replace("http://127.0.0.1:9", "ftp://x"))
        .unwrap_err()
        .to_string();
    assert!(e.contains("models[0].targets[0].base_url"), "{e}");
}

#[test]
fn duplicate_model_is_rejected() {
    let text = format!("{MINIMAL}{}", MINIMAL);
    let e = parse(&text).unwrap_err().to_string();
    assert!(
        e.contains("models[1].name") && e.contains("duplicate"),
        "{e}"
    );
}

#[test]
fn key_allow_list_must_name_known_models() {
    let text = format!("{MINIMAL}\n[[keys]]\nname = \"a\"\nkey = \"k\"\nmodels = [\"nope\"]\n");
    let e = parse(&text).unwrap_err().to_string();
    assert!(e.contains("keys[0].models[0]") && e.contains("nope"), "{e}");
}

#[test]
fn key_needs_exactly_one_source() {
    let both = format!("{MINIMAL}\n[[keys]]\nname = \"a\"\nkey = \"k\"\nkey_env = \"HOME\"\n");
    assert!(parse(&both).unwrap_err().to_string().contains("not both"));
    let none = format!("{MINIMAL}\n[[keys]]\nname = \"a\"\n");
    assert!(parse(&none).unwrap_err().to_string().contains("keys[0]"));
}

#[test]
fn unset_env_var_is_named_without_value() {
    let text = MINIMAL.replace(
        "model = \"gpt-4o-mini-2024-07-18\"",
        "model = \"m\"\napi_key_env = \"GATEWAY_TEST_SURELY_UNSET_VAR\"",
    );
    let e = parse(&text).unwrap_err().to_string();
    assert!(e.contains("api_key_env") && e.contains("not set"), "{e}");
}

#[test]
fn openai_compatible_and_translation_knobs() {
    let text = MINIMAL
        .replace("\"openai\"", "\"openai-compatible\"")
        .replace(
            "name = \"gpt-4o-mini\"\n",
            "name = \"gpt-4o-mini\"\ndefault_max_tokens = 512\n",
        );
    let c = parse(&format!("[translation]\ndefault_max_tokens = 1000\n{text}")).unwrap();
    assert_eq!(c.models[0].targets[0].provider, Provider::OpenaiCompatible);
    assert_eq!(c.models[0].default_max_tokens, Some(512));
    assert_eq!(c.translation.default_max_tokens, 1000);
    assert_eq!(parse(MINIMAL).unwrap().translation.default_max_tokens, 4096);
    let e = parse(&format!("[translation]\ndefault_max_tokens = 0\n{MINIMAL}"))
        .unwrap_err()
        .to_string();
    assert!(e.contains("translation.default_max_tokens"), "{e}");
}

#[test]
fn messages_keep_their_text() {
    // Clients and scripts match these; the typed errors render them byte for byte.
    let text = MINIMAL.replace(
        "model = \"gpt-4o-mini-2024-07-18\"",
        "model = \"m\"\napi_key_env = \"GATEWAY_TEST_SURELY_UNSET_VAR\"",
    );
    assert_eq!(
        parse(&text).unwrap_err().to_string(),
        "invalid config file test.toml: `models[0].targets[0].api_key_env`: \
         environment variable GATEWAY_TEST_SURELY_UNSET_VAR is not set"
    );
    let text = MINIMAL.replace(
        "name = \"gpt-4o-mini\"\n",
        "name = \"gpt-4o-mini\"\nrate_limit = {}\n",
    );
    assert_eq!(
        parse(&text).unwrap_err().to_string(),
        "invalid config file test.toml: `models[0].rate_limit`: \
         set requests_per_minute and/or tokens_per_minute"
    );
    let mut server = Server::default();
    server.listen = "127.0.0.1:9000".parse().unwrap();
    server.metrics_listen = Some(server.listen);
    assert_eq!(
        check_listeners(&server, Path::new("g.toml"))
            .unwrap_err()
            .to_string(),
        "invalid config file g.toml: `server.metrics_listen`: 127.0.0.1:9000 is also \
         server.listen; use another address or leave it unset"
    );
}

#[test]
fn zero_rate_limit_is_rejected() {
    let text = MINIMAL.replace(
        "name = \"gpt-4o-mini\"\n",
        "name = \"gpt-4o-mini\"\nrate_limit = { requests_per_minute = 0 }\n",
    );
    let e = parse(&text).unwrap_err().to_string();
    assert!(e.contains("requests_per_minute"), "{e}");
}

#[test]
fn rate_limits_backend_is_checked_without_quoting_the_url() {
    let with = |table: &str| parse(&format!("{table}\n{MINIMAL}"));
    let c = with("[rate_limits]\nbackend = \"redis\"\n[rate_limits.redis]\nurl = \"redis://127.0.0.1:6379/0\"").unwrap();
    let r = c.rate_limits.redis.unwrap();
    assert_eq!(
        (r.timeout_ms, r.recheck_ms, r.when_down),
        (100, 1_000, WhenDown::Memory)
    );
    assert_eq!(c.rate_limits.backend, LimitsBackend::Redis);
    assert_eq!(
        parse(MINIMAL).unwrap().rate_limits.backend,
        LimitsBackend::Memory
    );
    for (table, says) in [
        ("[rate_limits]\nbackend = \"redis\"", "needs a [rate_limits.redis] table"),
        ("[rate_limits.redis]\nurl = \"redis://h\"", "set it to \"redis\""),
        ("[rate_limits]\nbackend = \"redis\"\n[rate_limits.redis]\ntimeout_ms = 5", "`rate_limits.redis.url`: is required"),
        ("[rate_limits]\nbackend = \"redis\"\n[rate_limits.redis]\nurl = \"http://:hunter2@h\"", "must start with redis://"),
        ("[rate_limits]\nbackend = \"redis\"\n[rate_limits.redis]\nurl = \"redis://h\"\ntimeout_ms = 0", "`rate_limits.redis.timeout_ms`: must be > 0"),
        ("[rate_limits]\nbackend = \"redis\"\n[rate_limits.redis]\nurl_env = \"GATEWAY_TEST_UNSET_REDIS_URL\"", "GATEWAY_TEST_UNSET_REDIS_URL is not set"),
        ("[rate_limits]\nbackend = \"redis\"\n[rate_limits.redis]\nurl = \"redis://h\"\nwhen_down = \"maybe\"", "unknown variant `maybe`"),
        ("[rate_limits]\nbackend = \"memcached\"", "unknown variant `memcached`"),
    ] {
        let e = with(table).unwrap_err().to_string();
        assert!(e.contains(says), "{table}: {e}");
        assert!(!e.contains("hunter2"), "{e}");
    }
}

#[test]
fn example_config_is_valid() {
    let text = include_str!("../../../gateway.example.toml");
    // The example names env vars for upstream keys; validation requires them set.
    std::env::set_var("OPENAI_API_KEY", "sk-test");
    std::env::set_var("ANTHROPIC_API_KEY", "sk-ant-test");
    std::env::set_var("GEMINI_API_KEY", "gm-test");
    std::env::set_var("GATEWAY_KEY_TEAM_B", "gw-test");
    parse(text).unwrap();
    // The commented-out Azure and Vertex models, uncommented, are valid too.
    let block = |from: &str, to: &str| -> String {
        text.lines()
            .skip_while(|l| !l.starts_with(from))
            .take_while(|l| !l.starts_with(to))
            .filter_map(|l| l.strip_prefix("# "))
            .filter(|l| l.starts_with('[') || (l.contains(" = ") && !l.starts_with('#')))
            .map(|l| format!("{l}\n"))
            .collect()
    };
    let azure = block("# Azure OpenAI:", "# Google Vertex AI:");
    assert!(azure.contains("provider = \"azure-openai\""), "{azure}");
    std::env::set_var("AZURE_OPENAI_API_KEY", "az-test");
    let c = parse(&format!("{text}\n{azure}")).unwrap();
    let t = &c.models.last().unwrap().targets[0];
    assert_eq!(t.provider, Provider::AzureOpenai);
    assert_eq!(t.upstream_model(), "gpt-4o-mini-prod");
    let vertex = block("# Google Vertex AI:", "# AWS Bedrock:");
    assert!(
        vertex.contains("provider = \"vertex-anthropic\""),
        "{vertex}"
    );
    // Lines commented twice stay comments: the block names one credential source.
    assert!(!vertex.contains("access_token_env"), "{vertex}");
    let Some(pem) = crate::providers::google::tests::fresh_pem() else {
        panic!("the Vertex tests need the openssl CLI (scripts/test-deps.sh installs it)");
    };
    let key = std::env::temp_dir().join(format!("gateway-example-sa-{}.json", std::process::id()));
    let sa = serde_json::json!({"type": "service_account", "project_id": "example-project",
        "private_key_id": "k1", "private_key": pem, "client_email": "sa@example-project.iam.gserviceaccount.com",
        "token_uri": "https://oauth2.googleapis.com/token"});
    std::fs::write(&key, sa.to_string()).unwrap();
    std::env::set_var("GOOGLE_APPLICATION_CREDENTIALS", &key);
    let c = parse(&format!("{text}\n{vertex}"));
    std::fs::remove_file(&key).ok();
    let c = c.unwrap();
    let n = c.models.len();
    let (g, a) = (&c.models[n - 2].targets[0], &c.models[n - 1].targets[0]);
    assert_eq!(
        (g.provider, a.provider),
        (Provider::Vertex, Provider::VertexAnthropic)
    );
    assert_eq!(
        g.base_url(),
        "https://us-central1-aiplatform.googleapis.com"
    );
    assert_eq!(a.base_url(), "https://us-east5-aiplatform.googleapis.com");
    let bedrock = block("# AWS Bedrock:", "# END");
    assert!(bedrock.contains("provider = \"bedrock\""), "{bedrock}");
    assert!(!bedrock.contains("api_key_env"), "{bedrock}");
    std::env::set_var("AWS_ACCESS_KEY_ID", "AKIDEXAMPLE");
    std::env::set_var("AWS_SECRET_ACCESS_KEY", "example-secret");
    let c = parse(&format!("{text}\n{bedrock}")).unwrap();
    let b = &c.models.last().unwrap().targets[0];
    assert_eq!(b.provider, Provider::Bedrock);
    assert_eq!(
        b.base_url(),
        "https://bedrock-runtime.us-east-1.amazonaws.com"
    );
    assert!(matches!(
        b.aws_keys().unwrap().unwrap(),
        crate::providers::aws_creds::Keys::Static(k) if k.access_key_id == "AKIDEXAMPLE"
    ));
}

#[test]
fn bedrock_targets_are_checked() {
    let with = |t: &str| {
        parse(&format!(
            "[[models]]\nname = \"m\"\n[[models.targets]]\n{t}"
        ))
    };
    std::env::set_var("GATEWAY_TEST_BEDROCK_KEY", "bedrock-key");
    let ok = with("provider = \"bedrock\"\nregion = \"eu-west-1\"\nmodel = \"amazon.nova-pro-v1:0\"\napi_key_env = \"GATEWAY_TEST_BEDROCK_KEY\"").unwrap();
    assert_eq!(
        ok.models[0].targets[0].base_url(),
        "https://bedrock-runtime.eu-west-1.amazonaws.com"
    );
    for (t, says) in [
        ("provider = \"bedrock\"\nmodel = \"m\"\napi_key_env = \"GATEWAY_TEST_BEDROCK_KEY\"", "`models[0].targets[0].region`: is required"),
        ("provider = \"bedrock\"\nregion = \"US East\"\nmodel = \"m\"\napi_key_env = \"GATEWAY_TEST_BEDROCK_KEY\"", "lowercase letters"),
        ("provider = \"openai\"\nbase_url = \"http://h\"\nmodel = \"m\"\nregion = \"us-east-1\"", "applies only to provider \"bedrock\""),
        ("provider = \"openai\"\nbase_url = \"http://h\"\nmodel = \"m\"\naws_profile = \"p\"", "`models[0].targets[0].aws_profile`"),
        ("provider = \"bedrock\"\nregion = \"us-east-1\"\nmodel = \"m\"\napi_key_env = \"GATEWAY_TEST_BEDROCK_KEY\"\naws_credentials = \"env\"", "not both"),
        ("provider = \"bedrock\"\nregion = \"us-east-1\"\nmodel = \"m\"\naws_credentials = \"sso\"", "unknown variant `sso`"),
        ("provider = \"bedrock\"\nregion = \"us-east-1\"\nmodel = \"m\"\naws_credentials = \"profile\"\naws_profile = \"gateway-test-surely-missing\"", "aws_credentials`"),
    ] {
        let e = with(t).unwrap_err().to_string();
        assert!(e.contains(says), "{t}: {e}");
        assert!(!e.contains("bedrock-key"), "{e}");
    }
}
