#!/usr/bin/env bash
# One cargo release build outside Nix (scripts/chain-local.sh, scripts/bench-dilution.sh):
# nix/lib/stages/cargo-build.sh, the same cargo invocation the Nix chain runs, in a persistent
# target dir, then the binary copied to OUT_DIR/bin. Fails closed: nothing in OUT_DIR unless
# the build succeeded.
#
# Environment:
#   SRC                the cargo workspace
#   OUT_DIR            install prefix: OUT_DIR/bin/BIN_NAME
#   BIN_NAME           the binary to install
#   CARGO_TARGET_DIR   the target dir (one per flag set: cargo rebuilds every crate when
#                      RUSTFLAGS change)
#   CARGO_EXTRA_ARGS   e.g. "-p gateway --bin gateway"
#   CARGO_STDERR_LOG   optional; where cargo's stderr is kept (the PGO gate reads it)
#   RUSTFLAGS, CARGO_BUILD_TARGET, CARGO_PROFILE_RELEASE_*  as cargo reads them
set -euo pipefail
stages=$(cd "$(dirname "$0")/../nix/lib/stages" && pwd)
# shellcheck source=../nix/lib/stages/common.sh
. "$stages/common.sh"
need_var SRC
need_var OUT_DIR
need_var BIN_NAME
need_var CARGO_TARGET_DIR
export CARGO_TARGET_DIR
logs=$(mktemp -d "${TMPDIR:-/tmp}/cargo-stage.XXXXXX")
trap 'rm -rf "$logs"' EXIT
stderr_log=${CARGO_STDERR_LOG:-$logs/cargo-stderr.log}

# shellcheck disable=SC2086 # CARGO_EXTRA_ARGS is a word list by design
(cd "$SRC" && CARGO_BUILD_LOG="$logs/cargo-build.json" CARGO_STDERR_LOG="$stderr_log" \
  STAGE_COMMON="$stages/common.sh" bash "$stages/cargo-build.sh" --release --locked ${CARGO_EXTRA_ARGS:-})

if [ -n "${CARGO_BUILD_TARGET:-}" ]; then
  bin="$CARGO_TARGET_DIR/$CARGO_BUILD_TARGET/release/$BIN_NAME"
else
  bin="$CARGO_TARGET_DIR/release/$BIN_NAME"
fi
nonempty "$bin" "built binary"
mkdir -p "$OUT_DIR/bin"
# Copy, never link: the next build of this target dir overwrites it.
install -m 0755 "$bin" "$OUT_DIR/bin/$BIN_NAME"
