#!/usr/bin/env bash
# The soak and fault run (`bench soak`, issue 13): one plain release gateway under
# normal traffic mixed with stalled uploads, clients that stop reading, upstream resets and a
# slow upstream, then SIGTERM. Fails on any failed normal request, RSS or open fds not back to
# the baseline, or no exit 0 within the grace period. Then `bench soak-shared`: three replicas
# sharing rate limits on a real redis-server (killed and restarted half way), with clients
# that leave streams early; fails when the tokens charged differ from the upstream's usage for
# answers read to the end, a client that left is charged nothing, the capped key exceeds its
# limit across replicas, or a replica does not come back to Redis. About 2.5 minutes on a
# 2-core VM.
#
# Usage: scripts/soak.sh [GATEWAY_BIN]
#   GATEWAY_BIN  a plain release gateway (default: built here with `cargo build --release`)
#   BENCH        a built bench (bench/; default: built here, release without fat LTO)
#   SOAK_SECONDS length of the mixed phase (default 90)
#   SOAK_SHARED_SECONDS length of the shared-limits run (default 30)
# Results: $SOAK_OUT (default ./out/soak): soak.json, soak.md, soak-shared.json,
# soak-shared.md, the gateways' stderr.
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
if [ -z "${BENCH:-}" ]; then
  # Its own workspace (bench/), default release profile (no fat LTO: it is not the product),
  # into the root target/ (target/release/bench), as every script builds it.
  cargo build --release --locked --manifest-path "$repo/bench/Cargo.toml" --target-dir "$repo/target"
  BENCH="$repo/target/release/bench"
fi
t0=$SECONDS
"$BENCH" soak --gateway "$gateway" --duration-s "${SOAK_SECONDS:-90}" \
  --work-dir "$out/work" --json "$out/soak.json" --markdown "$out/soak.md"
echo "=== soak: passed in $((SECONDS - t0)) s"
t0=$SECONDS
"$BENCH" soak-shared --gateway "$gateway" --duration-s "${SOAK_SHARED_SECONDS:-30}" \
  --work-dir "$out/work-shared" --json "$out/soak-shared.json" --markdown "$out/soak-shared.md"
echo "=== soak-shared: passed in $((SECONDS - t0)) s"
