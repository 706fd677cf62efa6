#!/usr/bin/env bash
# The hot path before and after: the gateway of BASE (a commit before the hot-path work) and of
# this checkout, each through the same chain (scripts/chain-local.sh: this commit's stages,
# trainer and shapes; GATEWAY_SRC picks the gateway), measured side by side in one callgrind
# run on the benchmarked shape: plain, PGO and PGO+BOLT, before and after.
# Results in RESULTS/hotpath/, which `bench report` turns into the table and its targets.
# scripts/benchmarks.sh calls it (HOTPATH_BASE); it runs alone too.
#
# Usage: scripts/bench-hotpath.sh RESULTS BASE AFTER_CHAIN
#   BASE          a commit of this repository (the "before")
#   AFTER_CHAIN   a scripts/chain-local.sh output of this checkout (the "after")
# Environment:
#   BENCH, TRAINER   built bench and trainer (required)
#   TARGET_BASE      cargo target dirs for BASE's chain (default RESULTS/chain-target/hotpath-base)
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
usage="usage: scripts/bench-hotpath.sh RESULTS BASE AFTER_CHAIN"
results=${1:?$usage}
base=${2:?$usage}
after=${3:?$usage}
: "${BENCH:?BENCH: a built bench}" "${TRAINER:?TRAINER: a built trainer}"
out="$results/hotpath"
log() { printf '\n== %s: %s\n' "$(date -u +%H:%M:%S)" "$*" >&2; }

rev=$(git -C "$repo" rev-parse --verify "$base^{commit}")
src="$results/hotpath-src-${rev:0:12}"
before="$results/hotpath-chain-${rev:0:12}"
if [ ! -x "$before/gateway-pgo-bolt/bin/gateway" ]; then
  rm -rf "$src"
  mkdir -p "$src"
  git -C "$repo" archive "$rev" | tar -x -C "$src"
  log "the chain of ${rev:0:12} (before)"
  RESUME=1 GATEWAY_SRC="$src" TRAINER="$TRAINER" \
    TARGET_BASE="${TARGET_BASE:-$results/chain-target/hotpath-base}" \
    bash "$repo/scripts/chain-local.sh" "$before"
fi

rm -rf "$out"
mkdir -p "$out"
printf '%s\n' "$rev" >"$out/base.txt"
git -C "$repo" rev-parse HEAD >"$out/after.txt"
variants=()
for b in gateway gateway-pgo gateway-pgo-bolt; do
  name=${b#gateway}
  variants+=(--variant "before${name:--plain}=$before/$b/bin/gateway"
    --variant "after${name:--plain}=$after/$b/bin/gateway")
done
log "callgrind chat-nonstream-minimal: before and after"
"$BENCH" callgrind --shapes "$repo/shapes" --shape chat-nonstream-minimal "${variants[@]}" \
  --work-dir "$out/work" --json "$out/callgrind.json" >/dev/null
rm -rf "$out/work"
log "hot path before/after measured into $out"
