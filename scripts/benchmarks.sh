#!/usr/bin/env bash
# Regenerates BENCHMARKS.md from ONE run: builds plain, PGO and PGO+BOLT with the host chain
# (scripts/chain-local.sh; its per-stage wall times are the build-cost table), trains a second
# PGO profile on the benchmarked shape alone (dilution check), then measures:
#   callgrind  instructions / I1 misses / mispredictions per request, chat-nonstream-minimal
#              (on its HTTPS upstream, and again on plain HTTP: what TLS costs per build)
#   holdout    the gate on the holdout shape (instructions/request <= 1.00x plain)
#   ab         anchored interleaved throughput with a control leg (noisy, report only)
#   translated translated paths beside passthrough, callgrind (scripts/bench-translated.sh)
#   syscalls   system calls per request by name, c=1 and c=16, both paths (bench syscalls;
#              strace attached; stable counts)
#   board      the public same-rig board's metrics, 2-core layout (scripts/bench-board.sh;
#              noisy, report only; BOARD=0 skips it, BOARD_ROUNDS etc. as that script reads them)
#   rss, load  idle RSS with gateway.example.toml; 32-connection keep-alive load check
#   soak       the soak and fault run on the plain build (SOAK_SECONDS, default 90), then
#              three replicas sharing rate limits on a real redis-server (SOAK_SHARED_SECONDS,
#              default 30)
#   hot path   the gateway of HOTPATH_BASE beside this one, each through the chain
#              (scripts/bench-hotpath.sh), when HOTPATH_BASE is given
#   bolt flags BOLT flag sets on the chain's PGO binary and profile (scripts/bench-bolt-flags.sh)
#   allocators every allocator x {plain, PGO, PGO+BOLT}, each from its own chain
#              (scripts/bench-allocators.sh; the default allocator's chain is the one above)
# and writes BENCHMARKS.md with `bench report`.
#
# Usage: scripts/benchmarks.sh [RESULTS_DIR]          (default ./out/bench)
# Environment (optional):
#   CHAIN_OUT    reuse this chain-local output (and its stage-timings.txt) instead of building
#   TARGET_BASE  cargo target dirs for the chain (default RESULTS_DIR/chain-target: a cold build,
#                so the build-cost table is honest; point it at a warm one to save time)
#   LLVM_BIN     LLVM 22 bin dir (default /usr/lib/llvm-22/bin)
#   BENCH        a built bench (bench/; default: built here, release without fat LTO)
#   AB_ROUNDS AB_WINDOWS AB_WINDOW_S   throughput schedule (default 3 3 2)
#   BENCHMARKS_MD  where to write (default ./BENCHMARKS.md)
#   DILUTION=0   skip the dilution check (its extra PGO build is the longest step after the chain)
#   HOTPATH_BASE a commit before the hot-path work: its chain is built and measured beside this
#                one (one more chain)
#   BOLT_STUDY=0 skip the BOLT flag study
#   ALLOC=0      skip the allocator cell (two more chains); ALLOCATORS, ALLOC_OUT, CALLGRIND_BIG,
#                SOAK_ALLOC_SECONDS as scripts/bench-allocators.sh reads them
# Takes ~115 min on a 2-core VM from cold (three chains ~45, measurements ~65 with the board).
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
results=${1:-$repo/out/bench}
mkdir -p "$results"
results=$(cd "$results" && pwd)
LLVM_BIN=${LLVM_BIN:-/usr/lib/llvm-22/bin}
export LLVM_BIN
out_md=${BENCHMARKS_MD:-$repo/BENCHMARKS.md}
shapes="$repo/shapes"
cd "$repo"
log() { printf '\n== %s: %s\n' "$(date -u +%H:%M:%S)" "$*" >&2; }
t0=$(date +%s)

# The workload's trainer (for the chain and the dilution check) and the measuring tool
# (bench/, its own workspace): release without fat LTO (they are not the product).
log "building trainer and bench"
CARGO_PROFILE_RELEASE_LTO=false CARGO_PROFILE_RELEASE_CODEGEN_UNITS=16 \
  cargo build --release --locked -p trainer --bin trainer --target-dir "$repo/target/bench-trainer"
trainer="$repo/target/bench-trainer/release/trainer"
if [ -z "${BENCH:-}" ]; then
  cargo build --release --locked --manifest-path "$repo/bench/Cargo.toml" --target-dir "$repo/target"
  BENCH="$repo/target/release/bench"
fi

chain_note="built by this run"
if [ -n "${CHAIN_OUT:-}" ]; then
  chain_note="reused CHAIN_OUT (built by scripts/chain-local.sh, stage timings from $(date -u -r "$CHAIN_OUT/stage-timings.txt" +%Y-%m-%dT%H:%MZ 2>/dev/null || echo '?'))"
else
  # The default allocator's chain, which the allocator cell reuses as its row.
  default_alloc=$(sed -nE 's/^default = \["alloc-([a-z]+)"\]/\1/p' "$repo/gateway/Cargo.toml")
  CHAIN_OUT="${ALLOC_OUT:=$results/alloc-chain}/$default_alloc"
  export ALLOC_OUT
  log "chain (scripts/chain-local.sh) into $CHAIN_OUT"
  ALLOCATOR=$default_alloc TRAINER="$trainer" \
    TARGET_BASE="${TARGET_BASE:-$results/chain-target}/alloc-$default_alloc" \
    bash "$repo/scripts/chain-local.sh" "$CHAIN_OUT"
fi
plain="$CHAIN_OUT/gateway/bin/gateway"
pgo="$CHAIN_OUT/gateway-pgo/bin/gateway"
pgo_bolt="$CHAIN_OUT/gateway-pgo-bolt/bin/gateway"
instrumented="$CHAIN_OUT/gateway-instrumented/bin/gateway"
for b in "$plain" "$pgo" "$pgo_bolt" "$instrumented"; do
  [ -x "$b" ] || { echo "missing chain output $b" >&2; exit 1; }
done

# Build costs: chain-local.sh's `NAME  SECONDS s  PATH` lines, plain first.
timings="$CHAIN_OUT/stage-timings.txt"
if [ -f "$timings" ]; then
  {
    awk '$1 == "gateway" { print "plain (gateway)\t" $2 }' "$timings"
    awk '$1 != "gateway" { print $1 "\t" $2 }' "$timings"
  } >"$results/build-times.tsv"
fi

# Dilution: a second PGO binary trained on the benchmarked shape alone (scripts/bench-dilution.sh).
if [ "${DILUTION:-1}" != 0 ] && [ ! -x "$results/gateway-pgo-single/bin/gateway" ]; then
  log "dilution: profile on chat-nonstream-minimal alone, then a PGO build with it"
  TRAINER="$trainer" TARGET_BASE="${TARGET_BASE:-$results/chain-target}" \
    bash "$repo/scripts/bench-dilution.sh" "$results" "$instrumented"
fi
single=()
if [ "${DILUTION:-1}" != 0 ]; then
  single=(--variant pgo-single="$results/gateway-pgo-single/bin/gateway")
fi

log "callgrind: chat-nonstream-minimal, plain / pgo / pgo-bolt${single:+ / pgo-single}"
"$BENCH" callgrind --shapes "$shapes" --shape chat-nonstream-minimal \
  --variant plain="$plain" --variant pgo="$pgo" --variant pgo-bolt="$pgo_bolt" "${single[@]}" \
  --work-dir "$results/callgrind" --json "$results/callgrind.json"

# The same requests on a plain-HTTP upstream: beside the shape's HTTPS, TLS's own cost per build.
"$BENCH" callgrind --shapes "$shapes" --shape chat-nonstream-minimal --upstream http \
  --variant plain="$plain" --variant pgo="$pgo" --variant pgo-bolt="$pgo_bolt" \
  --work-dir "$results/callgrind-http" --json "$results/callgrind-http.json"
# Where the instructions go: the top functions by self cost of the large runs.
top() {
  callgrind_annotate --inclusive=no --show=Ir,I1mr --auto=no "$1" |
    awk '/file:function/ { on = 1; getline; next } on && NF { print }' | head -n 25 |
    sed -E 's#  (\./|/|\?\?\?)[^:]*:#  #; s# \[[^]]*\]$##' | cut -c1-160
}
{
  for v in plain pgo-bolt; do
    echo "== $v"
    top "$results/callgrind/chat-nonstream-minimal-$v-2000.callgrind.out"
  done
} >"$results/callgrind-top.txt" || true

log "holdout gate"
holdout_rc=0
"$BENCH" holdout --shapes "$shapes" \
  --variant plain="$plain" --variant pgo="$pgo" --variant pgo-bolt="$pgo_bolt" \
  --work-dir "$results/holdout" --json "$results/holdout.json" \
  --callgrind-json "$results/holdout-callgrind.json" || holdout_rc=$?

# Throughput on 2 cores: gateway on CPU 0, client and mock on CPU 1 (report only).
ncpu=$(nproc)
pin=()
if [ "$ncpu" -ge 2 ]; then
  pin=(--gateway-cpus 0 --client-cpus "1-$((ncpu - 1))")
fi
log "anchored A/B throughput (noisy)"
"$BENCH" --shapes "$shapes" --shape chat-nonstream-minimal \
  --variant plain="$plain" --variant pgo="$pgo" --variant pgo-bolt="$pgo_bolt" \
  --rounds "${AB_ROUNDS:-3}" --windows "${AB_WINDOWS:-3}" --window-s "${AB_WINDOW_S:-2}" \
  "${pin[@]}" --work-dir "$results/ab" --json "$results/ab.json"
log "anchored A/B on the holdout shape (noisy)"
holdout_shape=$(grep -l '^holdout = true' "$shapes"/*.toml | head -n1 | xargs basename -s .toml)
"$BENCH" --shapes "$shapes" --shape "$holdout_shape" \
  --variant plain="$plain" --variant pgo="$pgo" --variant pgo-bolt="$pgo_bolt" \
  --rounds 2 --windows 2 --window-s 1 --warmup-requests 300 \
  "${pin[@]}" --work-dir "$results/ab-holdout" --json "$results/ab-holdout.json"

log "translated paths beside passthrough (scripts/bench-translated.sh)"
BENCH="$BENCH" bash "$repo/scripts/bench-translated.sh" "$results" \
  --variant plain="$plain" --variant pgo="$pgo" --variant pgo-bolt="$pgo_bolt"

log "system calls per request (bench syscalls; stable counts)"
"$BENCH" syscalls --shapes "$shapes" --variant plain="$plain" --variant pgo="$pgo" \
  --variant pgo-bolt="$pgo_bolt" --work-dir "$results/syscalls" --json "$results/syscalls.json" >/dev/null

if [ "${BOARD:-1}" != 0 ] && [ "$ncpu" -ge 2 ]; then
  log "the board's metrics, 2-core layout (scripts/bench-board.sh; noisy)"
  BENCH="$BENCH" bash "$repo/scripts/bench-board.sh" "$CHAIN_OUT" "$results"
fi

log "idle RSS and 32-connection load"
"$BENCH" rss --gateway "$plain" --config "$repo/gateway.example.toml" \
  --work-dir "$results/rss" --json "$results/rss.json"
"$BENCH" load --shapes "$shapes" --gateway "$plain" --connections 32 \
  --requests 50000 --work-dir "$results/load" --json "$results/load.json"
log "soak and faults"
"$BENCH" soak --gateway "$plain" --duration-s "${SOAK_SECONDS:-90}" \
  --work-dir "$results/soak" --json "$results/soak.json"
log "replicas sharing rate limits on Redis"
"$BENCH" soak-shared --gateway "$plain" --duration-s "${SOAK_SHARED_SECONDS:-30}" \
  --work-dir "$results/soak-shared" --json "$results/soak-shared.json"

if [ -n "${HOTPATH_BASE:-}" ]; then
  log "hot path before ($HOTPATH_BASE) and after (scripts/bench-hotpath.sh)"
  BENCH="$BENCH" TRAINER="$trainer" bash "$repo/scripts/bench-hotpath.sh" "$results" \
    "$HOTPATH_BASE" "$CHAIN_OUT"
fi
if [ "${BOLT_STUDY:-1}" != 0 ]; then
  log "BOLT flag study (scripts/bench-bolt-flags.sh)"
  BENCH="$BENCH" bash "$repo/scripts/bench-bolt-flags.sh" "$results" "$CHAIN_OUT"
fi
if [ "${ALLOC:-1}" != 0 ]; then
  log "allocator x PGO x BOLT (scripts/bench-allocators.sh)"
  BENCH="$BENCH" TRAINER="$trainer" TARGET_BASE="${TARGET_BASE:-$results/chain-target}" \
    bash "$repo/scripts/bench-allocators.sh" "$results"
fi

{
  echo "date: $(date -u +%Y-%m-%dT%H:%MZ)"
  echo "commit: $(git -C "$repo" rev-parse --short=12 HEAD)$(git -C "$repo" diff --quiet HEAD -- gateway trainer shapes Cargo.lock || echo ' (+ uncommitted changes)')"
  echo "machine: $(uname -m), $(nproc) CPUs ($(sed -n 's/^model name\s*: //p' /proc/cpuinfo | head -n1)), $(awk '/MemTotal/ {printf "%.0f GiB", $2/1048576}' /proc/meminfo), $(. /etc/os-release && echo "$PRETTY_NAME"), kernel $(uname -r)"
  echo "rustc: $(rustc -V)"
  echo "LLVM (rustc): $(rustc -vV | sed -n 's/^LLVM version: //p')"
  echo "llvm-profdata: $("$LLVM_BIN/llvm-profdata" --version | grep -oE 'LLVM version [0-9.]+')"
  echo "llvm-bolt: $("$LLVM_BIN/llvm-bolt" --version | grep -oE 'LLVM version [0-9.]+')"
  echo "valgrind: $(valgrind --version)"
  echo "binaries: $CHAIN_OUT/{gateway,gateway-pgo,gateway-pgo-bolt}/bin/gateway (scripts/chain-local.sh), $chain_note"
  echo "load: $(cut -d' ' -f1-3 /proc/loadavg) (1/5/15-min load average at the end; other work shared the cores)"
  [ -z "${BENCH_NOTE:-}" ] || echo "note: $BENCH_NOTE"
  echo "command: scripts/benchmarks.sh (total $(($(date +%s) - t0)) s)"
} >"$results/meta.txt"

"$BENCH" report --results "$results" --out "$out_md"
log "wrote $out_md"
# The chain's default BOLT flags follow the data (the report states the rule and its pick).
if grep -q 'do \*\*NOT\*\* follow the data' "$out_md"; then
  echo "the chain's default BOLT flags (nix/lib/bolt-flags.txt) do not follow BENCHMARKS.md's pick" >&2
  exit 1
fi
# The crate's default allocator follows the data (the report states the rule and its pick).
if grep -q 'it does \*\*NOT\*\* follow the recommendation' "$out_md"; then
  echo "the crate's default allocator does not follow BENCHMARKS.md's recommendation" >&2
  exit 1
fi
if [ "$holdout_rc" != 0 ]; then
  echo "holdout gate FAILED (see $results/holdout.json)" >&2
  exit "$holdout_rc"
fi
