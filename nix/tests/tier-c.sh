#!/usr/bin/env bash
# Tier c: the real chain in the Nix sandbox. nix/chain.nix evaluated with the host builder
# (host rustc/cargo, crates vendored beforehand, Debian's llvm-22/bolt-22 bound in with
# sandbox-paths) and built with --option sandbox true: trainer, plain, instrumented, profile
# (real `trainer profile` on loopback inside the sandbox), pgo (+ gate + pgo-proof.json),
# bolt-profile, pgo-bolt (+ bolt-proof.json), then the pgo-proof and closure checks.
# Then: a rebuild with max-jobs 0 must find every stage in the store (nothing rebuilds).
#
# Usage: nix/tests/tier-c.sh [OUTDIR]   (default ./out/tier-c; tier d reuses its results)
# NIX_HOST_ARGS: extra nix-build arguments (e.g. --arg root DIR to test another checkout).
# shellcheck disable=SC2086 # NIX_HOST_ARGS is a word list by design
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
outdir=${1:-$repo/out/tier-c}
t0=$(date +%s)
fail() {
  echo "tier c: FAIL: $*" >&2
  exit 1
}

"$repo/scripts/chain-nix-host.sh" "$outdir" || fail "the chain failed"

r="$outdir/result-gateway-pgo-bolt"
for attr in trainer gateway gateway-instrumented gateway-profile gateway-pgo gateway-bolt-profile \
  gateway-pgo-bolt checks.pgo-proof checks.closure checks.holdout; do
  [ -e "$outdir/result-$attr" ] || fail "no result for $attr"
done
"$r/bin/gateway" --help >/dev/null || fail "the optimized gateway does not run"
echo "== pgo-proof.json"
cat "$r/share/gateway/pgo-proof.json"
echo "== bolt-proof.json"
cat "$r/share/gateway/bolt-proof.json"
echo "== profile manifest (excerpt)"
grep -E '"(raw_files|raw_bytes|merged_bytes|functions|seconds)"' "$outdir/result-gateway-profile/manifest.json" || true
echo "== sizes"
ls -l "$outdir"/result-gateway*/bin/gateway | awk '{print "  " $5 "  " $9}'

echo "== cached: a second build must build nothing"
. "$repo/scripts/chain-host-env.sh"
nix-build "$repo/nix/host/chain.nix" "${host_nix_args[@]}" ${NIX_HOST_ARGS:-} --option max-jobs 0 \
  -A gateway-pgo-bolt -A checks.pgo-proof -A checks.closure --no-out-link >/dev/null ||
  fail "a stage was not reused from the store"
echo "  ok"
echo "tier c: PASS in $(($(date +%s) - t0)) s"
