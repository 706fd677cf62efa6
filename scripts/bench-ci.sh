#!/usr/bin/env bash
# CI's bench tier on the host chain's binaries: the valgrind ratios (report), textsearch's
# (examples/textsearch, the second program through lib.mkPgoBoltChain; report), the translated
# paths' instructions per request next to passthrough (report, callgrind-translated.md), the
# holdout gate (fails the run when PGO or PGO+BOLT instructions/request on the holdout shape
# exceed 1.00x plain; and must itself fail when handed the instrumented build) and the soak
# and fault run on the plain build (scripts/soak.sh; fails on any failed normal request,
# leaked fds or memory, or an unclean exit); system calls per request at c=1 within a bound
# (`bench syscalls --max-c1`; fails when a build needs more; and must fail under the floor).
# The short real bench run
# (smoke) is `cargo test --manifest-path bench/Cargo.toml --test bench`.
#
# Usage: scripts/bench-ci.sh [CHAIN_OUT]
#   CHAIN_OUT  a scripts/chain-local.sh output directory; without it the chain is run first
#              into ./out/chain-local (with chain-local.sh's own persistent target dirs).
#   BENCH      a built bench (bench/; default: CHAIN_OUT's `bench` stage when it has one, else
#              built here, release without fat LTO)
#   TRAINER    a built trainer, for the chain when CHAIN_OUT is not given (default: built
#              here, release without fat LTO)
# Results: $BENCH_CI_OUT (default ./out/bench-ci): callgrind.json, callgrind-<shape>.json,
# holdout.json, *.md; callgrind-http.json (the reference shape on plain HTTP).
# About 15 minutes on a 2-core VM once the chain is built (valgrind runs ~50x slower; the
# translated pairs add nine callgrind shapes, the soak about 2).
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
cd "$repo"
out=${BENCH_CI_OUT:-$repo/out/bench-ci}
mkdir -p "$out"
chain=${1:-}
if [ -z "${BENCH:-}" ] && [ -n "$chain" ] && [ -x "$chain/bench/bin/bench" ]; then
  # The chain's own build of bench/ (its `bench` stage, the same source): no second compile.
  BENCH="$chain/bench/bin/bench"
fi
if [ -z "${BENCH:-}" ]; then
  # Its own workspace (bench/), default release profile (no fat LTO: it is not the product),
  # into the root target/ (target/release/bench), as every script builds it.
  cargo build --release --locked --manifest-path "$repo/bench/Cargo.toml" --target-dir "$repo/target"
  BENCH="$repo/target/release/bench"
fi
if [ -z "$chain" ]; then
  if [ -z "${TRAINER:-}" ]; then
    CARGO_PROFILE_RELEASE_LTO=false CARGO_PROFILE_RELEASE_CODEGEN_UNITS=16 \
      cargo build --release --locked -p trainer --bin trainer --target-dir "$repo/target/bench-trainer"
    TRAINER="$repo/target/bench-trainer/release/trainer"
  fi
  chain="$repo/out/chain-local"
  TRAINER="$TRAINER" bash "$repo/scripts/chain-local.sh" "$chain"
fi
variants=(
  --variant "plain=$chain/gateway/bin/gateway"
  --variant "pgo=$chain/gateway-pgo/bin/gateway"
  --variant "pgo-bolt=$chain/gateway-pgo-bolt/bin/gateway"
)

t0=$SECONDS
"$BENCH" callgrind --shapes shapes --shape chat-nonstream-minimal "${variants[@]}" \
  --work-dir "$out/callgrind" --json "$out/callgrind.json" --markdown "$out/callgrind.md"
# The reference shape's upstream is HTTPS (every cloud provider's is); the same requests on plain
# HTTP give TLS's own cost per build (BENCHMARKS.md "HTTP and HTTPS upstreams").
"$BENCH" callgrind --shapes shapes --shape chat-nonstream-minimal --upstream http "${variants[@]}" \
  --work-dir "$out/callgrind-http" --json "$out/callgrind-http.json" --markdown "$out/callgrind-http.md"
echo "=== bench-ci: callgrind ratios (HTTPS and HTTP upstream) in $((SECONDS - t0)) s"

# The second program's chain (examples/textsearch, tier c builds it into CHAIN_OUT/textsearch):
# its PGO and PGO+BOLT instruction ratios (textsearch.md).
if [ -d "$chain/textsearch" ]; then
  t0=$SECONDS
  BENCH_CI_OUT="$out" "$repo/scripts/bench-example.sh" "$chain/textsearch"
  echo "=== bench-ci: textsearch ratios in $((SECONDS - t0)) s"
else
  echo "=== bench-ci: no textsearch chain in $chain (tier c builds it): its ratios are not reported"
fi

# The translated paths next to passthrough (scripts/bench-translated.sh): each pair sends the
# same client body, the translated shape routes its model to the other provider, so the
# difference is the translation's cost (callgrind-translated.md).
t0=$SECONDS
BENCH="$BENCH" bash "$repo/scripts/bench-translated.sh" "$out" "${variants[@]}"
echo "=== bench-ci: translated paths in $((SECONDS - t0)) s"

t0=$SECONDS
"$BENCH" holdout --shapes shapes "${variants[@]}" \
  --work-dir "$out/holdout" --json "$out/holdout.json" --markdown "$out/holdout.md"
echo "=== bench-ci: holdout gate passed in $((SECONDS - t0)) s"

# The gate fails end to end: the same command handed a build that really is worse (the
# instrumented one, its counters on every edge) as the "optimized" variant must exit non-zero
# naming the holdout shape. Fewer requests: the verdict is ~1.3x, far from the noise.
if [ -x "$chain/gateway-instrumented/bin/gateway" ]; then
  t0=$SECONDS
  holdout_shape=$(grep -l '^holdout = true' shapes/*.toml | head -n1 | xargs basename -s .toml)
  mkdir -p "$out/holdout-worse"
  rc=0
  LLVM_PROFILE_FILE="$out/holdout-worse/%p.profraw" "$BENCH" holdout --shapes shapes \
    --variant "plain=$chain/gateway/bin/gateway" \
    --variant "instrumented=$chain/gateway-instrumented/bin/gateway" \
    --small 8 --big 200 --work-dir "$out/holdout-worse" 2>"$out/holdout-worse.err" || rc=$?
  if [ "$rc" = 0 ] || ! grep -q "holdout gate FAILED on $holdout_shape" "$out/holdout-worse.err"; then
    tail -n 20 "$out/holdout-worse.err" >&2
    echo "bench-ci: bench holdout passed the instrumented build (exit $rc)" >&2
    exit 1
  fi
  grep "holdout gate FAILED" "$out/holdout-worse.err" | sed 's/^/  /'
  echo "=== bench-ci: holdout gate failed on a worse build, as it must, in $((SECONDS - t0)) s"
else
  echo "bench-ci: no $chain/gateway-instrumented: the gate's failing direction is not run" >&2
  exit 1
fi

# System calls per request (strace attached over exact request windows; counts are stable):
# every build at c=1 within the bound, on both paths (the floor is 6: 4 data calls and 2 epoll
# waits); then the same command with a bound under the floor must fail, naming the step.
t0=$SECONDS
"$BENCH" syscalls --shapes shapes "${variants[@]}" --max-c1 6.5 \
  --work-dir "$out/syscalls" --json "$out/syscalls.json" --markdown "$out/syscalls.md" >/dev/null
rc=0
"$BENCH" syscalls --shapes shapes --variant "plain=$chain/gateway/bin/gateway" --concurrency 1 \
  --max-c1 5 --work-dir "$out/syscalls-under" >/dev/null 2>"$out/syscalls-under.err" || rc=$?
if [ "$rc" = 0 ] || ! grep -q "syscall gate FAILED: plain passthrough c=1" "$out/syscalls-under.err"; then
  tail -n 20 "$out/syscalls-under.err" >&2
  echo "bench-ci: bench syscalls passed a bound under the floor (exit $rc)" >&2
  exit 1
fi
echo "=== bench-ci: syscall gate (and its failing direction) in $((SECONDS - t0)) s"

# The board scripts users run, for real but briefly: one round (no paired interval, so the BOLT
# rule cannot fire on noise), tiny steps, the chain's three binaries; then the 16-core script
# must refuse on this machine's fewer CPUs before it builds or runs anything.
t0=$SECONDS
BENCH="$BENCH" BOARD_ROUNDS=1 BOARD_LATENCY_S=0.2 BOARD_STEP_S=0.2 BOARD_CONCURRENCY=1,8 \
  BOARD_STREAMS=4 BOARD_STREAM_SAMPLES=1 \
  BOARD_ARGS="--cpu-concurrency 8 --xlat-concurrency 4 --stream-deltas 8 --stream-pace-ms 5 --recover-max-s 2" \
  bash "$repo/scripts/bench-board.sh" "$chain" "$out/board"
grep -q '^| failed requests and streams |' "$out/board/board.md" || {
  echo "bench-ci: the board's markdown has no table" >&2
  exit 1
}
if [ "$(nproc)" -lt 16 ]; then
  rc=0
  bash "$repo/scripts/bench-board-16.sh" "$chain" "$out/board-16" 2>"$out/board-16.err" || rc=$?
  if [ "$rc" != 2 ] || ! grep -q REFUSED "$out/board-16.err"; then
    echo "bench-ci: scripts/bench-board-16.sh on $(nproc) CPUs exited $rc without refusing" >&2
    exit 1
  fi
fi
echo "=== bench-ci: board scripts in $((SECONDS - t0)) s"

t0=$SECONDS
SOAK_OUT="$out/soak" BENCH="$BENCH" bash "$repo/scripts/soak.sh" "$chain/gateway/bin/gateway"
echo "=== bench-ci: soak passed in $((SECONDS - t0)) s"
