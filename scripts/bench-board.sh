#!/usr/bin/env bash
# The public same-rig board's method (`bench board`) on this machine, 2-core layout: the
# gateway pinned to CPU 0 with 1 worker, the load generator and the mock sharing CPU 1;
# plain / control (plain's identical copy) / PGO / PGO+BOLT interleaved, the order rotated
# each round, the mock driven directly in every round (the rig's own ceiling and the
# baseline of every "added" figure).
#
# Usage: scripts/bench-board.sh [CHAIN_DIR] [OUT_DIR]
#   CHAIN_DIR  CHAIN_DIR/{gateway,gateway-pgo,gateway-pgo-bolt}/bin/gateway, the layout of
#              scripts/chain-local.sh and the Nix chain (default: $CHAIN_OUT, else ./out/chain-local)
#   OUT_DIR    writes board.json and board.md there, the gateways' stderr under board-work/
#              (default ./out/board); `bench report` puts board.json into BENCHMARKS.md
# Environment (optional):
#   BENCH               a built bench (default: built here, as scripts/benchmarks.sh does)
#   BOARD_ROUNDS        interleaved rounds (default 8; ~180 s each with the defaults below)
#   BOARD_LATENCY_S     the c=1 latency window (default 1.5)
#   BOARD_STEP_S        each sweep step (default 1)
#   BOARD_CONCURRENCY   the sweep (default 1,2,4,8,16,32,64,128)
#   BOARD_STREAMS       the stream ladder (default 16,64,256)
#   BOARD_STREAM_SAMPLES  streams at c=1 for time to first token and gaps (default 3)
#   BOARD_RUNTIMES      the gateway runtimes compared (default multi-thread,thread-per-core:
#                       every variant under each, thread-per-core's legs named NAME-tpc; the
#                       report's "Runtime rule" says which should be `server.runtime`'s default)
#   BOARD_ARGS          more `bench board` arguments, word-split
#   BENCHMARKS_MD       also replace the board section of this file (between its markers) with
#                       this run's (`bench report --board-only`; scripts/benchmarks.sh writes the
#                       whole file instead)
# Exits 1 when the shipped gateway does not follow the report's BOLT rule (a BOLT that hurts
# beyond the paired interval while nix/gateway/per-system.nix still releases gateway-pgo-bolt).
# Takes ~24 min with the defaults on a 2-core VM (7 gateway runs and the direct run per round;
# ~14 with BOARD_RUNTIMES=multi-thread).
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
chain=${1:-${CHAIN_OUT:-$repo/out/chain-local}}
out=${2:-$repo/out/board}
ncpu=$(nproc)
if [ "$ncpu" -lt 2 ]; then
  echo "bench-board: the 2-core layout needs 2 CPUs (gateway on 0, load and mock on 1); this machine has $ncpu" >&2
  exit 2
fi
plain="$chain/gateway/bin/gateway"
pgo="$chain/gateway-pgo/bin/gateway"
pgo_bolt="$chain/gateway-pgo-bolt/bin/gateway"
for b in "$plain" "$pgo" "$pgo_bolt"; do
  [ -x "$b" ] || { echo "bench-board: missing chain output $b (build it with scripts/chain-local.sh $chain)" >&2; exit 1; }
done
if [ -z "${BENCH:-}" ]; then
  cargo build --release --locked --manifest-path "$repo/bench/Cargo.toml" --target-dir "$repo/target"
  BENCH="$repo/target/release/bench"
fi
mkdir -p "$out"
# Hundreds of streams hold a connection each at the client, the gateway (twice) and the mock.
ulimit -n "$(ulimit -Hn)" 2>/dev/null || true
# BOARD_ARGS is word-split on purpose: several flags in one variable.
# shellcheck disable=SC2086
"$BENCH" board --shapes "$repo/shapes" \
  --variant plain="$plain" --variant pgo="$pgo" --variant pgo-bolt="$pgo_bolt" \
  --gateway-cpus 0 --workers 1 --load-cpus 1 --mock-cpus 1 \
  --runtimes "${BOARD_RUNTIMES:-multi-thread,thread-per-core}" \
  --rounds "${BOARD_ROUNDS:-8}" --latency-s "${BOARD_LATENCY_S:-1.5}" --step-s "${BOARD_STEP_S:-1}" \
  --concurrency "${BOARD_CONCURRENCY:-1,2,4,8,16,32,64,128}" \
  --stream-concurrency "${BOARD_STREAMS:-16,64,256}" \
  --stream-samples "${BOARD_STREAM_SAMPLES:-3}" ${BOARD_ARGS:-} \
  --work-dir "$out/board-work" --json "$out/board.json" --markdown "$out/board.md" >/dev/null
echo "bench-board: wrote $out/board.json and $out/board.md" >&2
if [ -n "${BENCHMARKS_MD:-}" ]; then
  "$BENCH" report --results "$out" --board-only --out "$BENCHMARKS_MD"
fi
if grep -q 'BOLT \*\*hurts\*\*' "$out/board.md" &&
  grep -q 'gateway = chain.gateway-pgo-bolt;' "$repo/nix/gateway/per-system.nix"; then
  echo "bench-board: BOLT hurts on this rig beyond the paired interval, yet the release ships gateway-pgo-bolt (nix/gateway/per-system.nix): the BOLT rule says ship gateway-pgo" >&2
  exit 1
fi
