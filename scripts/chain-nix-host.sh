#!/usr/bin/env bash
# The PGO + BOLT chain in the Nix sandbox with host tools (tier c, and the README's local
# command on machines without a binary cache): the SAME nix/lib/chain.nix and nix/lib/builder.nix as
# the flake (nix/host/chain.nix), on the crane stand-in and a stdenv stand-in that run the
# same build phases with host rustc/cargo, Debian's llvm-22/bolt-22 and crates vendored
# beforehand. Needs root (no daemon), Debian's nix-bin, llvm-22, bolt-22,
# libbolt-22-dev. Each stage is built on its own so its wall time is printed.
#
# Usage: scripts/chain-nix-host.sh [OUTDIR]      (default: ./out/nix-host)
# Environment:
#   GATEWAY_VENDOR_DIR  where `cargo vendor` writes (default /var/tmp/gateway-vendor-<lock sha>)
#   LLVM_BIN            LLVM 22 bin dir (default /usr/lib/llvm-22/bin)
#   CHAIN_ATTRS         stages to build (default: the whole chain and its three checks)
#   CHAIN_NIX           the chain to build (default nix/host/chain.nix, the gateway's;
#                       nix/host/example.nix is examples/textsearch's)
#   NIX_HOST_ARGS       extra nix-build arguments (tier d passes --arg overrides)
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
outdir=${1:-$repo/out/nix-host}
. "$repo/scripts/chain-host-env.sh"

mkdir -p "$outdir"
attrs=${CHAIN_ATTRS:-trainer gateway-instrumented gateway-profile gateway-pgo-build gateway-pgo gateway-bolt-profile gateway-pgo-bolt checks.pgo-proof checks.closure gateway bench checks.holdout}
timings="$outdir/stage-timings.txt"
: >"$timings"
for attr in $attrs; do
  t0=$(date +%s)
  # shellcheck disable=SC2086 # NIX_HOST_ARGS is a word list by design
  nix-build "${CHAIN_NIX:-$repo/nix/host/chain.nix}" "${host_nix_args[@]}" ${NIX_HOST_ARGS:-} \
    -A "$attr" -o "$outdir/result-$attr" >/dev/null
  t1=$(date +%s)
  path=$(readlink "$outdir/result-$attr")
  # The same layout as scripts/chain-local.sh (OUTDIR/<stage>/bin/gateway), so the bench and
  # holdout scripts take either.
  case $attr in
    checks.*) ;;
    *) ln -sfn "$path" "$outdir/$attr" ;;
  esac
  printf '%-22s %5d s  %s\n' "$attr" "$((t1 - t0))" "$path" | tee -a "$timings"
done

if [ -e "$outdir/result-gateway-pgo-bolt" ]; then
  r="$outdir/result-gateway-pgo-bolt"
  echo
  echo "optimized binary: $r/bin/gateway -> $(readlink -f "$r/bin/gateway")"
  echo "proofs:           $r/share/gateway/pgo-proof.json"
  echo "                  $r/share/gateway/bolt-proof.json"
  echo "stage timings:    $timings (a second run prints cache hits: nothing rebuilds)"
fi
