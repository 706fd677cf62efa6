#!/usr/bin/env bash
# The PGO + BOLT chain in the Nix sandbox with host tools (tier c, and the README's local
# command on machines without a binary cache): the SAME nix/lib/chain.nix and nix/lib/builder.nix as
# the flake (nix/host/chain.nix), on the crane stand-in and a stdenv stand-in that run the
# same build phases with host rustc/cargo, Debian's llvm-22/bolt-22 and crates vendored
# beforehand. Needs root (no daemon), Debian's nix-bin, llvm-22, bolt-22,
# libbolt-22-dev, clang-22, libclang-rt-22-dev. Each stage is built on its own so its wall time is printed.
#
# Usage: scripts/chain-nix-host.sh [OUTDIR]      (default: ./out/nix-host)
#        CHAIN_FILE=path/to/chain.nix scripts/chain-nix-host.sh OUTDIR
# Environment:
#   CHAIN_FILE    a packager's chain file, `{ pkgs, mkPgoBoltChain }: mkPgoBoltChain { ... }`
#                 (docs/chain.md "Chain files"; examples/textsearch/chain.nix is one): builds
#                 that chain instead of the gateway's, vendoring CHAIN_CRATE's Cargo.lock
#   CHAIN_CRATE   the workspace whose Cargo.lock is vendored (default: CHAIN_FILE's directory,
#                 else this repo)
#   CHAIN_ATTRS   stages to build (default: the whole chain and its checks)
#   CHAIN_VENDOR_DIR  where `cargo vendor` writes (default /var/tmp/<name>-vendor-<lock sha>)
#   LLVM_BIN      LLVM 22 bin dir (default /usr/lib/llvm-22/bin)
#   NIX_HOST_ARGS extra nix-build arguments (tier d passes --arg overrides)
#   CHAIN_NIX     the host Nix file to build (default nix/host/chain.nix, the gateway's;
#                 nix/host/packager.nix with CHAIN_FILE)
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
outdir=${1:-$repo/out/nix-host}
chain_nix=${CHAIN_NIX:-$repo/nix/host/chain.nix}
chain_args=()
if [ -n "${CHAIN_FILE:-}" ]; then
  [ -f "$CHAIN_FILE" ] || { echo "CHAIN_FILE=$CHAIN_FILE is not a file" >&2; exit 1; }
  chain_file=$(cd "$(dirname "$CHAIN_FILE")" && pwd)/$(basename "$CHAIN_FILE")
  export CHAIN_CRATE=${CHAIN_CRATE:-$(dirname "$chain_file")}
  chain_nix=${CHAIN_NIX:-$repo/nix/host/packager.nix}
  chain_args=(--arg chainFile "$chain_file")
fi
if [ -n "${CHAIN_FILE:-}" ]; then
  # The chain's preflight (nix/lib/preflight.nix) first: evaluation only, seconds, before
  # vendoring and hours of building. It names what the crate carries that the chain cannot take.
  # shellcheck disable=SC2086 # NIX_HOST_ARGS is a word list by design
  preflight=$(nix-instantiate --eval --strict --json --read-write-mode "$chain_nix" "${chain_args[@]}" \
    --argstr rustSysroot /preflight-only --argstr vendorDir /preflight-only ${NIX_HOST_ARGS:-} \
    -A preflight) || {
    echo "the chain's preflight refused $CHAIN_FILE (docs/chain.md \"Packager checklist\")" >&2
    exit 1
  }
  echo "preflight: ok: $preflight"
fi
. "$repo/scripts/chain-host-env.sh"

mkdir -p "$outdir"
if [ -n "${CHAIN_ATTRS:-}" ]; then
  attrs=$CHAIN_ATTRS
elif [ -n "${CHAIN_FILE:-}" ]; then
  # shellcheck disable=SC2086 # NIX_HOST_ARGS is a word list by design
  attrs=$(nix-instantiate --eval "$chain_nix" "${host_nix_args[@]}" "${chain_args[@]}" \
    ${NIX_HOST_ARGS:-} -A chainAttrs | tr -d '"')
else
  attrs="trainer gateway-instrumented gateway-profile gateway-pgo-build gateway-pgo gateway-bolt-profile gateway-pgo-bolt checks.pgo-proof checks.closure gateway bench checks.holdout"
fi
timings="$outdir/stage-timings.txt"
: >"$timings"
for attr in $attrs; do
  t0=$(date +%s)
  # shellcheck disable=SC2086 # NIX_HOST_ARGS is a word list by design
  nix-build "$chain_nix" "${host_nix_args[@]}" "${chain_args[@]}" ${NIX_HOST_ARGS:-} \
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

# The optimized binary: the one <bin>-pgo-bolt result built.
for r in "$outdir"/result-*-pgo-bolt; do
  [ -e "$r" ] || continue
  bin=${r##*/result-}
  bin=${bin%-pgo-bolt}
  echo
  echo "optimized binary: $r/bin/$bin -> $(readlink -f "$r/bin/$bin")"
  echo "proofs:           $r/share/$bin/pgo-proof.json"
  echo "                  $r/share/$bin/bolt-proof.json"
  echo "release gate:     scripts/release-check.sh --bin-name $bin $r"
  echo "stage timings:    $timings (a second run prints cache hits: nothing rebuilds)"
done
