#!/usr/bin/env bash
# The public same-rig board's layout on a 16-CPU machine, one command, about 10 minutes (under
# 8 with BOARD_RUNTIMES=multi-thread): the gateway pinned to CPUs 0-3 with 4 workers, the load
# generator on 4-9 (6 threads), the mock on 10-15 (6 threads); plain / control (plain's
# identical copy) / PGO / PGO+BOLT under both runtimes (`server.runtime`: multi-thread under
# the variants' names, thread-per-core as NAME-tpc, one SO_REUSEPORT listener per worker)
# interleaved, the order rotated each round, the mock driven directly in every round. Refuses
# on fewer than 16 CPUs.
#
# Usage: scripts/bench-board-16.sh [CHAIN_DIR] [OUT_DIR]
#   CHAIN_DIR  CHAIN_DIR/{gateway,gateway-pgo,gateway-pgo-bolt}/bin/gateway, the layout of
#              scripts/chain-local.sh and the Nix chain (default: $CHAIN_OUT, else ./out/chain-local)
#   OUT_DIR    default ./out/board-16; exactly four files: board-16.json, board-16.md,
#              meta.txt, logs.tar.gz (the gateways' stderr and configs). Copy board-16.json
#              into a results directory and `bench report` adds it to BENCHMARKS.md.
# Environment (optional):
#   BENCH               a built bench (default: built here; ~1 min of the budget on 16 cores)
#   BOARD_ROUNDS        interleaved rounds (default 3: ~10 min with both runtimes, ~6 with one)
#   BOARD_RUNTIMES      the gateway runtimes compared (default multi-thread,thread-per-core;
#                       the first is the variants' own names, the board's "Runtime rule" says
#                       which should be the default)
#   BOARD_LATENCY_S BOARD_STEP_S BOARD_CONCURRENCY BOARD_STREAMS BOARD_STREAM_SAMPLES
#   BOARD_ARGS          as scripts/bench-board.sh reads them (defaults sized for 8 minutes)
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
t0=$(date +%s)
ncpu=$(nproc)
if [ "$ncpu" -lt 16 ]; then
  cat >&2 <<MSG
bench-board-16: REFUSED: this machine gives this process $ncpu CPUs; the 16-core board layout
needs at least 16 (gateway on 0-3 with 4 workers, load generator on 4-9, mock on 10-15).
Run scripts/bench-board.sh for the 2-core layout instead.
MSG
  exit 2
fi
chain=${1:-${CHAIN_OUT:-$repo/out/chain-local}}
out=${2:-$repo/out/board-16}
plain="$chain/gateway/bin/gateway"
pgo="$chain/gateway-pgo/bin/gateway"
pgo_bolt="$chain/gateway-pgo-bolt/bin/gateway"
for b in "$plain" "$pgo" "$pgo_bolt"; do
  [ -x "$b" ] || { echo "bench-board-16: missing chain output $b (build it with scripts/chain-local.sh $chain)" >&2; exit 1; }
done
if [ -z "${BENCH:-}" ]; then
  cargo build --release --locked --manifest-path "$repo/bench/Cargo.toml" --target-dir "$repo/target"
  BENCH="$repo/target/release/bench"
fi
mkdir -p "$out"
# Hundreds of streams hold a connection each at the client, the gateway (twice) and the mock.
ulimit -n "$(ulimit -Hn)" 2>/dev/null || true
work=$(mktemp -d "${TMPDIR:-/tmp}/bench-board-16.XXXXXX")
trap 'rm -rf "$work"' EXIT
# Progress to the terminal and into the logs; the markdown goes to its file only.
set +e
# shellcheck disable=SC2086
"$BENCH" board --shapes "$repo/shapes" \
  --variant plain="$plain" --variant pgo="$pgo" --variant pgo-bolt="$pgo_bolt" \
  --gateway-cpus 0-3 --workers 4 --load-cpus 4-9 --load-threads 6 --mock-cpus 10-15 --mock-threads 6 \
  --runtimes "${BOARD_RUNTIMES:-multi-thread,thread-per-core}" \
  --rounds "${BOARD_ROUNDS:-3}" --latency-s "${BOARD_LATENCY_S:-1}" --step-s "${BOARD_STEP_S:-0.8}" \
  --concurrency "${BOARD_CONCURRENCY:-1,2,4,8,16,32,64,128,256,512}" \
  --stream-concurrency "${BOARD_STREAMS:-64,256,1024}" \
  --stream-samples "${BOARD_STREAM_SAMPLES:-3}" ${BOARD_ARGS:-} \
  --work-dir "$work/logs" --json "$out/board-16.json" --markdown "$out/board-16.md" \
  2>&1 >/dev/null | tee "$work/bench.stderr" >&2
rc=${PIPESTATUS[0]}
set -e
mkdir -p "$work/logs"
mv "$work/bench.stderr" "$work/logs/bench.stderr"
# The control leg's copy of the plain binary is not a log.
find "$work/logs" -maxdepth 1 -name '*-control' -type f -delete
tar -czf "$out/logs.tar.gz" -C "$work" logs
{
  echo "date: $(date -u +%Y-%m-%dT%H:%MZ)"
  echo "commit: $(git -C "$repo" rev-parse --short=12 HEAD 2>/dev/null || echo '?')"
  echo "machine: $(uname -m), $ncpu CPUs ($(sed -n 's/^model name\s*: //p' /proc/cpuinfo | head -n1)), $(awk '/MemTotal/ {printf "%.0f GiB", $2/1048576}' /proc/meminfo), kernel $(uname -r)"
  echo "layout: gateway CPUs 0-3 (4 workers), load generator 4-9 (6 threads), mock 10-15 (6 threads)"
  echo "runtimes: ${BOARD_RUNTIMES:-multi-thread,thread-per-core}"
  for b in "$plain" "$pgo" "$pgo_bolt"; do echo "binary: $(sha256sum "$b" | cut -c1-16) $b"; done
  echo "load: $(cut -d' ' -f1-3 /proc/loadavg)"
  echo "exit: $rc"
  echo "command: scripts/bench-board-16.sh (total $(($(date +%s) - t0)) s)"
} >"$out/meta.txt"
if [ "$rc" != 0 ]; then
  echo "bench-board-16: bench board FAILED (exit $rc); see logs.tar.gz (logs/bench.stderr):" >&2
  tail -n 20 "$work/logs/bench.stderr" >&2
  exit "$rc"
fi
echo "bench-board-16: wrote $out/{board-16.json,board-16.md,meta.txt,logs.tar.gz} in $(($(date +%s) - t0)) s" >&2
