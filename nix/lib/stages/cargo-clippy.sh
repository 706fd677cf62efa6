# shellcheck shell=bash
# Check step: cargo clippy, failing with a message that names the likely cause. The flake's
# toolchain (fenix stable, Rust 1.97.1) is newer than the rustc that lints the code in CI
# here (1.95): a new clippy lint under `--deny warnings` fails the flake's checks.clippy on a
# real runner while every tier here passed. The message says so and names the lints.
#
# Usage: [STAGE_COMMON=common.sh] bash cargo-clippy.sh CARGO_CLIPPY_ARGS...
#        (e.g. --profile dev --locked --workspace --all-targets -- --deny warnings)
set -euo pipefail
# shellcheck source=common.sh
. "${STAGE_COMMON:-$(dirname "${BASH_SOURCE[0]}")/common.sh}"
STAGE_NAME=${STAGE_NAME:-cargo-clippy}
log=$(mktemp "${TMPDIR:-/tmp}/clippy.XXXXXX")
if cargo clippy "$@" 2>"$log"; then
  cat "$log" >&2
  rm -f "$log"
  exit 0
fi
cat "$log" >&2
lints=$(grep -oE 'allow\(clippy::[a-z_]+\)' "$log" | grep -oE 'clippy::[a-z_]+' | sort -u | paste -sd ' ' - || true)
rm -f "$log"
die "$(cargo clippy --version 2>/dev/null || echo clippy) refused the code${lints:+ (lints: $lints)}." \
  "If CI passed with an older toolchain, these lints are new in this one: fix the code, or allow" \
  "them in Cargo.toml's [workspace.lints]."
