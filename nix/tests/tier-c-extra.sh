#!/usr/bin/env bash
# Tier c-extra (on demand: scripts/test.sh chain-extra): what tier c once ran and CI's time
# budget no longer spares, because other tiers prove the same property more cheaply
# (docs/testing.md, "Why chain-extra is on demand"). Needs tier c's results in OUTDIR.
#  - checks.clippy and checks.tests (the test suite in the sandbox, its counts checked: crane's
#    cargoTest runs nothing without doCheck): the lint and cargo-test tiers run the same clippy
#    and the same tests on the host;
#  - `nix-build --check` rebuilds gateway-pgo-build, gateway-pgo and gateway-pgo-bolt and must get
#    the same bytes. The release tier's scripts/verify-release.sh already rebuilds gateway-pgo
#    and gateway-pgo-bolt from the published profile (another store path) bit for bit.
#  - the gateway trained on a user's shapes directory (nix/tests/fixtures/user-shapes, 3 training
#    shapes) with checks.holdout on its holdout shape: the same stage scripts as tier c on other
#    data; tier b evaluates this wiring (lib.gatewayChain on the fixture) in seconds.
#
# Usage: nix/tests/tier-c-extra.sh [OUTDIR]   (default ./out/tier-c, after nix/tests/tier-c.sh)
# shellcheck disable=SC2086 # NIX_HOST_ARGS is a word list by design
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
outdir=${1:-$repo/out/tier-c}
t0=$(date +%s)
fail() {
  echo "tier c-extra: FAIL: $*" >&2
  exit 1
}
[ -e "$outdir/result-gateway-profile" ] || fail "no tier c results in $outdir (run nix/tests/tier-c.sh first)"
. "$repo/scripts/chain-host-env.sh"

echo "== checks.clippy and checks.tests through nix/lib/builder.nix (the flake's nix flake check)"
# Into a directory of its own: tier c's results and stage timings stay as tier c left them.
checks="$outdir/checks-extra"
CHAIN_ATTRS="checks.clippy checks.tests" "$repo/scripts/chain-nix-host.sh" "$checks" ||
  fail "checks.clippy or checks.tests failed"
echo "== checks.tests ran the test suite (crane's cargoTest runs nothing without doCheck)"
tests_log=$(nix-store --read-log "$(readlink "$checks/result-checks.tests")" 2>/dev/null || true)
[ -n "$tests_log" ] || tests_log=$(nix log "$(readlink "$checks/result-checks.tests")" 2>/dev/null || true)
results=$(printf '%s\n' "$tests_log" | grep -E '^test result: ' || true)
[ -n "$results" ] || fail "checks.tests' build log has no 'test result:' line"
passed=$(printf '%s\n' "$results" | sed -nE 's/.* ([0-9]+) passed.*/\1/p' | awk '{s += $1} END {print s + 0}')
failed=$(printf '%s\n' "$results" | sed -nE 's/.* ([0-9]+) failed.*/\1/p' | awk '{s += $1} END {print s + 0}')
echo "  $(printf '%s\n' "$results" | wc -l) test binaries: $passed passed, $failed failed"
[ "$passed" -gt 50 ] || fail "checks.tests ran only $passed tests"
[ "$failed" -eq 0 ] || fail "checks.tests: $failed failed"

# Issue 12: everything after training is deterministic. Nix rebuilds the profile-use build
# and the BOLT rewrite from the same inputs and compares the outputs bit for bit.
echo "== reproducible: nix-build --check rebuilds gateway-pgo-build, gateway-pgo and gateway-pgo-bolt"
for attr in gateway-pgo-build gateway-pgo gateway-pgo-bolt; do
  t1=$(date +%s)
  nix-build "$repo/nix/host/chain.nix" "${host_nix_args[@]}" ${NIX_HOST_ARGS:-} --check -A "$attr" \
    --no-out-link >"$outdir/check-$attr.log" 2>&1 || {
    tail -n 20 "$outdir/check-$attr.log" >&2
    fail "$attr is not reproducible: nix-build --check gave other bytes (or failed)"
  }
  echo "  ok: $attr rebuilt bit for bit ($(sha256sum "$outdir/result-$attr/bin/gateway" | cut -c1-16)) in $(($(date +%s) - t1)) s"
done

echo "== the gateway trained on a user's own shapes (nix/tests/fixtures/user-shapes)"
us="$outdir/user-shapes"
NIX_HOST_ARGS="${NIX_HOST_ARGS:-} --arg shapes $repo/nix/tests/fixtures/user-shapes" \
  CHAIN_ATTRS="gateway-profile gateway-pgo-build gateway-pgo gateway-bolt-profile gateway-pgo-bolt checks.pgo-proof checks.holdout" \
  "$repo/scripts/chain-nix-host.sh" "$us" >/dev/null || fail "the chain on the user's shapes failed"
sed 's/^/  /' "$us/stage-timings.txt"
grep -q '"raw_files": 3,' "$us/result-gateway-profile/manifest.json" ||
  fail "the user's profile is not from its 3 training shapes: $(cat "$us/result-gateway-profile/manifest.json")"
cmp -s "$us/result-gateway-profile/gateway.profdata" "$outdir/result-gateway-profile/gateway.profdata" &&
  fail "the user's shapes gave the same profile as shapes/"
grep -q 'support-chat' "$us/result-checks.holdout/holdout.md" || fail "the holdout gate did not measure support-chat"
sed 's/^/  /' "$us/result-checks.holdout/holdout.md"
echo "  ok: trained on 3 user shapes, the holdout gate passed on support-chat"

echo "tier c-extra: PASS in $(($(date +%s) - t0)) s"
