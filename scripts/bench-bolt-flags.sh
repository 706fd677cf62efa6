#!/usr/bin/env bash
# What BOLT is worth: BOLT flag sets on the gateway, side by side in one run. Each set rewrites
# the chain's PGO binary with the chain's own .fdata through the chain's BOLT stage
# (nix/lib/stages/bolt-optimize.sh: relocation mode, GNU_STACK, proof), then callgrind counts
# instructions, I1 and LL misses and branch mispredictions per request of every set beside the
# PGO binary on three shapes: the benchmarked one, the holdout and a translated streaming one,
# with each large run's code footprint (the hot code per request, beside the I1 it must fit).
# Results in RESULTS/bolt/, which `bench report` turns into the study and its pick.
# scripts/benchmarks.sh calls it; it runs alone too.
#
# Usage: scripts/bench-bolt-flags.sh RESULTS CHAIN_OUT
#   CHAIN_OUT   a scripts/chain-local.sh output (gateway-pgo, gateway-bolt-profile)
# Environment:
#   BENCH       a built bench (required)
#   LLVM_BIN    LLVM 22 bin dir (default /usr/lib/llvm-22/bin)
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
results=${1:?usage: scripts/bench-bolt-flags.sh RESULTS CHAIN_OUT}
chain=${2:?usage: scripts/bench-bolt-flags.sh RESULTS CHAIN_OUT}
: "${BENCH:?BENCH: a built bench}"
LLVM_BIN=${LLVM_BIN:-/usr/lib/llvm-22/bin}
stages="$repo/nix/lib/stages"
out="$results/bolt"
log() { printf '\n== %s: %s\n' "$(date -u +%H:%M:%S)" "$*" >&2; }

# The chain's default flags (nix/lib/bolt-flags.txt, which chain.nix and chain-local.sh read).
default=$(grep -vE '^\s*(#|$)' "$repo/nix/lib/bolt-flags.txt" | paste -sd ' ' -)
base="-reorder-blocks=ext-tsp -reorder-functions=cdsort -split-functions -split-all-cold -split-eh -icf=all -dyno-stats"
# NAME<TAB>FLAGS: one BOLT rewrite each. `hfsort+` is not listed: in BOLT 22 it is cdsort.
sets="default	$default
base	$base
blocks-only	-reorder-blocks=ext-tsp -dyno-stats
no-split	-reorder-blocks=ext-tsp -reorder-functions=cdsort -icf=all -dyno-stats
hfsort	${base/cdsort/hfsort}
pettis-hansen	${base/cdsort/pettis-hansen}
hot-size	$base -reorder-functions-use-hot-size
cdsplit	$base -split-strategy=cdsplit
peepholes	$base -peepholes=all
plt-frame	$base -plt=hot -frame-opt=hot
inline-icp	$base -inline-small-functions -indirect-call-promotion=all
tail-dup	$base -tail-duplication=cache
align	$base -align-blocks -x86-align-branch-boundary-hot-only
server	$base -split-strategy=cdsplit -reorder-functions-use-hot-size -peepholes=all -plt=hot -frame-opt=hot -inline-small-functions -indirect-call-promotion=all -tail-duplication=cache"

rm -rf "$out"
mkdir -p "$out/bin"
printf '%s\n' "$default" >"$out/default-flags.txt"
variants=(--variant "pgo=$chain/gateway-pgo/bin/gateway")
printf 'set\tflags\thot_bytes\tcold_bytes\n' >"$out/flags.tsv"
while IFS=$'\t' read -r name flags; do
  log "BOLT $name: $flags"
  # KEEP_DEBUG_INFO=0 as the gateway's chain (nix/gateway/chain-args.nix).
  env STAGE_COMMON="$stages/common.sh" STAGE_NAME="gateway-pgo-bolt-$name" \
    OUT_DIR="$out/bin/$name" PGO_BIN="$chain/gateway-pgo/bin/gateway" \
    PGO_PROOF="$chain/gateway-pgo/share/gateway/pgo-proof.json" \
    FDATA="$chain/gateway-bolt-profile/gateway.fdata" \
    FDATA_MANIFEST="$chain/gateway-bolt-profile/manifest.json" \
    LLVM_BOLT="$LLVM_BIN/llvm-bolt" READELF="$(command -v readelf)" BIN_NAME=gateway \
    KEEP_DEBUG_INFO=0 BOLT_FLAGS="$flags" bash "$stages/bolt-optimize.sh" 2>"$out/bolt-$name.log"
  # "splitting separates N hot bytes from M cold bytes": the hot text BOLT laid out.
  split=$(sed -nE 's/.*splitting separates ([0-9]+) hot bytes from ([0-9]+) cold bytes.*/\1\t\2/p' \
    "$out/bolt-$name.log" | head -n1)
  printf '%s\t%s\t%s\n' "$name" "$flags" "${split:-	}" >>"$out/flags.tsv"
  variants+=(--variant "$name=$out/bin/$name/bin/gateway")
done <<<"$sets"

holdout=$(grep -lE '^holdout *= *true' "$repo"/shapes/*.toml | head -n1 | xargs basename -s .toml)
for shape in chat-nonstream-minimal "$holdout" messages-stream-mid-via-openai; do
  log "callgrind $shape: pgo and every BOLT set"
  "$BENCH" callgrind --shapes "$repo/shapes" --shape "$shape" "${variants[@]}" --footprint \
    --work-dir "$out/work-$shape" --json "$out/callgrind-$shape.json" >/dev/null
done

# Where the I1 misses are: per function, PGO beside the default BOLT set, on the benchmarked
# shape's large run.
for v in pgo default; do
  echo "== $v"
  callgrind_annotate --inclusive=no --show=I1mr,Ir --sort=I1mr --auto=no \
    "$out/work-chat-nonstream-minimal/chat-nonstream-minimal-$v-2000.callgrind.out" |
    awk '/file:function/ { on = 1; getline; next } on && NF { print }' | head -n 15 |
    sed -E 's#  (\./|/|\?\?\?)[^:]*:#  #; s# \[[^]]*\]$##' | cut -c1-150
done >"$out/i1-top.txt" || true
rm -rf "${out:?}"/work-* "${out:?}/bin"
log "BOLT flag study measured into $out"
