//! The gateway config a measurement runs under: the shape's training posture with the
//! access log off and a fixed worker count, and the key the bench client sends. Starting the
//! gateway is `trainer::launch`.

use std::path::Path;

use toml::{Table, Value};

use trainer::shapes::Shape;
use trainer::workload::gateway_config;

/// The key every bench config accepts and the bench client sends.
pub(crate) const BENCH_KEY: &str = "trainer-bench-key";

/// The config for measuring `shape`: its posture routed to `upstream` (trusting `ca_file` when
/// the upstream is HTTPS), port 0, the access log off (benchmarks measure the proxy, not a log
/// sink) and `workers` worker threads (0 = one per core).
pub(crate) fn bench_config(
    shape: &Shape,
    upstream: &str,
    ca_file: Option<&Path>,
    workers: usize,
) -> String {
    let text = gateway_config::render(shape, upstream, ca_file, "127.0.0.1:0", BENCH_KEY);
    let mut root: Table = toml::from_str(&text).expect("rendered config parses");
    if let Some(Value::Table(obs)) = root.get_mut("observability") {
        obs.insert("access_log".into(), "off".into());
    }
    if let Some(Value::Table(server)) = root.get_mut("server") {
        server.insert("workers".into(), Value::Integer(workers as i64));
    }
    toml::to_string(&root).expect("config serializes")
}

#[cfg(test)]
mod tests {
    use super::*;
    use trainer::shapes;

    #[test]
    fn bench_config_turns_the_access_log_off() {
        let shape = shapes::find(&shapes::repo_dir(), "chat-nonstream-minimal").unwrap();
        let v: Table =
            toml::from_str(&bench_config(&shape, "http://127.0.0.1:1", None, 1)).unwrap();
        assert_eq!(v["observability"]["access_log"].as_str(), Some("off"));
        assert_eq!(v["server"]["workers"].as_integer(), Some(1));
        assert_eq!(v["keys"][0]["key"].as_str(), Some(BENCH_KEY));
    }
}
