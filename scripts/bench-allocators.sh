#!/usr/bin/env bash
# The allocator cell of BENCHMARKS.md: every global allocator (the gateway's alloc-* features)
# x {plain, PGO, PGO+BOLT}. Each allocator's three builds come from its own chain
# (scripts/chain-local.sh with ALLOCATOR=NAME: its own instrumented build and training, its own
# PGO build, BOLT trained on that PGO binary), then all nine are measured in one run:
#   callgrind  instructions, I1 misses, mispredictions per request on every training shape and
#              the holdout (one worker, marginal counts)
#   rss        idle RSS with gateway.example.toml
#   soak       peak RSS under `bench soak` (SOAK_ALLOC_SECONDS each, default 20)
#   ab         throughput of all nine on chat-nonstream-minimal with a control leg (noisy)
# into RESULTS/alloc/, which `bench report` turns into the table and the recommendation.
# scripts/benchmarks.sh calls it; it runs alone too.
#
# Usage: scripts/bench-allocators.sh RESULTS
# Environment:
#   BENCH, TRAINER   built bench and trainer (required)
#   ALLOCATORS       default "jemalloc mimalloc system" (the first's plain build is the baseline)
#   ALLOC_OUT        chain outputs, one directory per allocator (default RESULTS/alloc-chain);
#                    an allocator whose ALLOC_OUT/NAME/gateway-pgo-bolt exists is reused
#   TARGET_BASE      cargo target dirs (default RESULTS/chain-target); one set per allocator
#   CALLGRIND_BIG    requests of the large callgrind run (default 500)
#   ALLOC_RESUME=1   keep the results already in RESULTS/alloc (same binaries) and measure the rest
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
results=${1:?usage: scripts/bench-allocators.sh RESULTS}
: "${BENCH:?BENCH: a built bench}" "${TRAINER:?TRAINER: a built trainer}"
read -r -a allocators <<<"${ALLOCATORS:-jemalloc mimalloc system}"
alloc_out=${ALLOC_OUT:-$results/alloc-chain}
target_base=${TARGET_BASE:-$results/chain-target}
shapes="$repo/shapes"
out="$results/alloc"
log() { printf '\n== %s: %s\n' "$(date -u +%H:%M:%S)" "$*" >&2; }

variants=()
for a in "${allocators[@]}"; do
  if [ ! -x "$alloc_out/$a/gateway-pgo-bolt/bin/gateway" ]; then
    log "allocator $a: the chain (scripts/chain-local.sh ALLOCATOR=$a)"
    ALLOCATOR=$a TRAINER="$TRAINER" TARGET_BASE="$target_base/alloc-$a" \
      bash "$repo/scripts/chain-local.sh" "$alloc_out/$a"
  fi
  variants+=(--variant "$a-plain=$alloc_out/$a/gateway/bin/gateway"
    --variant "$a-pgo=$alloc_out/$a/gateway-pgo/bin/gateway"
    --variant "$a-pgo-bolt=$alloc_out/$a/gateway-pgo-bolt/bin/gateway")
done

# ALLOC_RESUME=1 keeps what an earlier run of the same binaries measured (each result is
# written whole) and measures the rest.
[ "${ALLOC_RESUME:-0}" = 1 ] || rm -rf "$out"
mkdir -p "$out"
# The crate's default allocator at the time of the run: the report says whether it follows
# the recommendation.
sed -nE 's/^default = \["alloc-([a-z]+)"\]/\1/p' "$repo/gateway/Cargo.toml" >"$out/default-allocator.txt"
[ -s "$out/default-allocator.txt" ] || { echo "no default alloc-* feature in gateway/Cargo.toml" >&2; exit 1; }

big=${CALLGRIND_BIG:-500}
for f in "$shapes"/*.toml; do
  shape=$(basename "$f" .toml)
  if grep -qE '^holdout *= *true' "$f"; then
    json="$out/holdout-callgrind.json"
  else
    json="$out/callgrind-$shape.json"
  fi
  [ "${ALLOC_RESUME:-0}" != 1 ] || [ ! -s "$json" ] || continue
  log "callgrind $shape: ${#allocators[@]} allocators x 3 builds"
  "$BENCH" callgrind --shapes "$shapes" --shape "$shape" "${variants[@]}" --big "$big" \
    --work-dir "$out/work/callgrind-$shape" --json "$json" >/dev/null
done

for ((i = 1; i < ${#variants[@]}; i += 2)); do
  name=${variants[i]%%=*} bin=${variants[i]#*=}
  if [ "${ALLOC_RESUME:-0}" = 1 ] && [ -s "$out/rss-$name.json" ] && [ -s "$out/soak-$name.json" ]; then
    continue
  fi
  log "idle RSS and soak peak RSS: $name"
  "$BENCH" rss --gateway "$bin" --config "$repo/gateway.example.toml" \
    --work-dir "$out/work/rss-$name" --json "$out/rss-$name.json" >/dev/null
  # A cell that fails the soak's checks (RSS not back near its baseline, say) is a finding:
  # soak-NAME.json records it, the report shows it and the rule excludes the allocator.
  "$BENCH" soak --gateway "$bin" --duration-s "${SOAK_ALLOC_SECONDS:-20}" \
    --work-dir "$out/work/soak-$name" --json "$out/soak-$name.json" >/dev/null ||
    [ -s "$out/soak-$name.json" ]
done

ncpu=$(nproc)
pin=()
[ "$ncpu" -lt 2 ] || pin=(--gateway-cpus 0 --client-cpus "1-$((ncpu - 1))")
log "throughput, all nine (noisy)"
"$BENCH" --shapes "$shapes" --shape chat-nonstream-minimal "${variants[@]}" \
  --rounds 2 --windows 2 --window-s 1 --warmup-requests 500 "${pin[@]}" \
  --work-dir "$out/work/ab" --json "$out/ab.json" >/dev/null
rm -rf "$out/work"
log "allocator cell measured into $out"
