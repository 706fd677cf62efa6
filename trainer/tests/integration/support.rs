//! Helpers shared by the trainer's integration tests: the built gateway under test.

use std::path::PathBuf;

/// The gateway under test: `$GATEWAY_BIN`, or `gateway` in the test's own target profile
/// directory (`cargo test --workspace` builds it).
pub fn gateway_bin() -> PathBuf {
    if let Some(p) = std::env::var_os("GATEWAY_BIN") {
        return p.into();
    }
    // A test binary is <target>/<profile>/deps/<name>-<hash>.
    let exe = std::env::current_exe().unwrap();
    let p = exe.parent().unwrap().parent().unwrap().join("gateway");
    assert!(
        p.is_file(),
        "no gateway binary at {}: run `cargo build -p gateway` (or `cargo test --workspace`), \
         or set GATEWAY_BIN",
        p.display()
    );
    p
}
