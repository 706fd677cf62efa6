#!/usr/bin/env bash
# Tier c: the real chain in the Nix sandbox. nix/lib/chain.nix evaluated with the host builder
# (host rustc/cargo, crates vendored beforehand, Debian's llvm-22/bolt-22 bound in with
# sandbox-paths) and built with --option sandbox true: trainer, plain, instrumented, profile
# (the gateway's workload, `trainer workload`, on loopback inside the sandbox), pgo (+ gate + pgo-proof.json),
# bolt-profile, pgo-bolt (+ bolt-proof.json), then the pgo-proof, closure and holdout checks,
# and checks.fmt (clippy and the test suite in the sandbox are on demand, tier-c-extra.sh: the
# lint and cargo-test tiers run the same clippy and tests on the host). Every cargo
# build goes through nix/lib/builder.nix's buildWith on the crane stand-in (nix/host/crane).
# Then: a rebuild with max-jobs 0 must find every stage in the store (nothing rebuilds).
# Then (issue 11): examples/textsearch's whole chain through lib.mkPgoBoltChain with its own
# workload. The README's main command (.ci/run runs it first) has built the same derivations,
# so only what it does not build (checks.fmt, textsearch) builds here. The workspace's clippy
# and tests in the sandbox, the `--check` rebuilds and the gateway on a user's shapes are on
# demand: nix/tests/tier-c-extra.sh.
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

# The chain, then the workspace checks, all through nix/lib/builder.nix on the crane stand-in.
CHAIN_ATTRS="trainer gateway-instrumented gateway-profile gateway-pgo-build gateway-pgo gateway-bolt-profile \
gateway-pgo-bolt checks.pgo-proof checks.closure gateway bench checks.holdout checks.fmt" \
  "$repo/scripts/chain-nix-host.sh" "$outdir" || fail "the chain failed"

r="$outdir/result-gateway-pgo-bolt"
for attr in trainer bench gateway gateway-instrumented gateway-profile gateway-pgo-build gateway-pgo gateway-bolt-profile \
  gateway-pgo-bolt checks.pgo-proof checks.closure checks.holdout checks.fmt; do
  [ -e "$outdir/result-$attr" ] || fail "no result for $attr"
done
"$r/bin/gateway" --help >/dev/null || fail "the optimized gateway does not run"
# Issue 22: the profile-use build takes its dependencies from the PGO dependency build (the
# staged profile's mtime, stages/pgo-use-flags.sh); it compiled all of them again before.
echo "== gateway-pgo-build compiles only the workspace's crates"
pgo_log=$(nix-store --read-log "$(readlink "$outdir/result-gateway-pgo-build")" 2>/dev/null || true)
[ -n "$pgo_log" ] || pgo_log=$(nix log "$(readlink "$outdir/result-gateway-pgo-build")" 2>/dev/null || true)
printf '%s\n' "$pgo_log" | grep -qE 'Finished .release. profile' ||
  fail "gateway-pgo-build's build log has no cargo output"
compiled=$(printf '%s\n' "$pgo_log" | sed -nE 's/^ *Compiling ([^ ]+) v.*/\1/p' | sort -u | tr '\n' ' ')
[ "$compiled" = "gateway " ] ||
  fail "gateway-pgo-build compiled [${compiled}], not only the workspace's gateway: its dependency build was not reused"
echo "  ok: compiled $compiled"
echo "== pgo-proof.json"
cat "$r/share/gateway/pgo-proof.json"
echo "== bolt-proof.json"
cat "$r/share/gateway/bolt-proof.json"
echo "== profile manifest (excerpt)"
grep -E '"(raw_files|raw_bytes|merged_bytes|functions|functions_executed)"' "$outdir/result-gateway-profile/manifest.json" || true
echo "== sizes"
ls -l "$outdir"/result-gateway*/bin/gateway | awk '{print "  " $5 "  " $9}'

echo "== cached: a second build must build nothing"
. "$repo/scripts/chain-host-env.sh"
nix-build "$repo/nix/host/chain.nix" "${host_nix_args[@]}" ${NIX_HOST_ARGS:-} --option max-jobs 0 \
  -A gateway-pgo-bolt -A checks.pgo-proof -A checks.closure -A checks.fmt --no-out-link >/dev/null ||
  fail "a stage was not reused from the store"
echo "  ok"
# Issue 11: the same chain for another program.
echo "== examples/textsearch: its chain through lib.mkPgoBoltChain, as its flake calls it"
ts="$outdir/textsearch"
CHAIN_FILE="$repo/examples/textsearch/chain.nix" "$repo/scripts/chain-nix-host.sh" "$ts" >/dev/null ||
  fail "the textsearch chain failed"
for attr in textsearch textsearch-profile textsearch-pgo textsearch-bolt-profile textsearch-pgo-bolt \
  checks.pgo-proof checks.closure; do
  [ -e "$ts/result-$attr" ] || fail "no result for textsearch's $attr"
done
sed 's/^/  /' "$ts/stage-timings.txt"
grep -E '"(raw_files|raw_bytes|functions|functions_executed)"' "$ts/result-textsearch-profile/manifest.json" "$ts/result-textsearch-bolt-profile/manifest.json" |
  sed 's/^/  /'
grep -E '"(functions_with_profile|functions_total)"' "$ts/result-textsearch-pgo-bolt/share/textsearch/bolt-proof.json" | sed 's/^/  /'
# Its training data (chain.nix's trainingData = ./training) reached the workload: one process
# per query of training/queries.txt beside the 35 of its own checks.
queries=$(grep -cvE '^(#|$)' "$repo/examples/textsearch/training/queries.txt")
raw=$(sed -nE 's/.*"raw_files": ([0-9]+).*/\1/p' "$ts/result-textsearch-profile/manifest.json" | head -n1)
[ "$raw" = $((35 + queries)) ] ||
  fail "textsearch-profile counts $raw processes, not 35 + $queries training queries: TRAINING_DATA did not reach the workload"
echo "  ok: the workload ran the $queries training queries ($raw processes)"
# What BOLT costs in bytes against the crate's own build (the proof's size); the gateway's
# ring assembly keeps its old text (-use-old-text refused, named).
for proof in "$ts/result-textsearch-pgo-bolt/share/textsearch/bolt-proof.json" \
  "$outdir/result-gateway-pgo-bolt/share/gateway/bolt-proof.json"; do
  grep -o '"size": {[^}]*}' "$proof" | sed 's/^/  /' || fail "$proof has no size"
  grep -o '"use_old_text": "[^"]*"' "$proof" | sed 's/^/  /' || fail "$proof has no use_old_text"
done
grep -q '"use_old_text": "refused: cannot ignore non-empty function ring_' \
  "$outdir/result-gateway-pgo-bolt/share/gateway/bolt-proof.json" ||
  fail "the gateway's proof does not name the function that kept -use-old-text out"
# The optimized binary must still do its job: the example's own workload checks every output.
bash "$repo/examples/textsearch/workload.sh" "$ts/result-textsearch-pgo-bolt/bin/textsearch" ||
  fail "textsearch-pgo-bolt fails its own workload"
echo "  ok: textsearch-pgo-bolt passes its workload"
# The release gate knows no binary but by --bin-name: its stages are textsearch-pgo and
# textsearch-pgo-bolt. The floors are the gateway's 8 shapes' and 2.5 MB profile; textsearch's
# own are given here, under what it measures (35 processes; 29 KB profile of 71 functions,
# 393 KB fdata, 91 functions with a BOLT profile).
RELEASE_MIN_PROFILE_BYTES=4096 RELEASE_MIN_PROFILE_FUNCS=50 RELEASE_MIN_FDATA_BYTES=1024 \
  RELEASE_MIN_BOLT_FUNCS=20 READELF=readelf "$repo/scripts/release-check.sh" --bin-name textsearch \
  "$ts/result-textsearch-pgo-bolt" >"$ts/release-check.log" 2>&1 || {
  cat "$ts/release-check.log" >&2
  fail "textsearch-pgo-bolt fails the release gate"
}
echo "  ok: release-check.sh --bin-name textsearch passes ($(grep -c ': ok: ' "$ts/release-check.log") checks)"

echo "tier c: PASS in $(($(date +%s) - t0)) s"
