#!/usr/bin/env bash
# The soak and fault run (`trainer bench soak`, issue 13): one plain release gateway under
# normal traffic mixed with stalled uploads, clients that stop reading, upstream resets and a
# slow upstream, then SIGTERM. Fails on any failed normal request, RSS or open fds not back to
# the baseline, or no exit 0 within the grace period. About 2 minutes on a 2-core VM.
#
# Usage: scripts/soak.sh [GATEWAY_BIN]
#   GATEWAY_BIN  a plain release gateway (default: built here with `cargo build --release`)
#   TRAINER      a built trainer (default: built here, release without fat LTO)
#   SOAK_SECONDS length of the mixed phase (default 90)
# Results: $SOAK_OUT (default ./out/soak): soak.json, soak.md, the gateway's stderr.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
cd "$repo"
out=${SOAK_OUT:-$repo/out/soak}
mkdir -p "$out"
gateway=${1:-}
if [ -z "$gateway" ]; then
  cargo build --release --locked -p gateway --bin gateway
  gateway="$repo/target/release/gateway"
fi
if [ -z "${TRAINER:-}" ]; then
  CARGO_PROFILE_RELEASE_LTO=false CARGO_PROFILE_RELEASE_CODEGEN_UNITS=16 \
    cargo build --release --locked -p trainer --bin trainer --target-dir "$repo/target/bench-trainer"
  TRAINER="$repo/target/bench-trainer/release/trainer"
fi
t0=$SECONDS
"$TRAINER" bench soak --gateway "$gateway" --duration-s "${SOAK_SECONDS:-90}" \
  --work-dir "$out/work" --json "$out/soak.json" --markdown "$out/soak.md"
echo "=== soak: passed in $((SECONDS - t0)) s"
