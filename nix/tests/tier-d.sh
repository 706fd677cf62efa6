#!/usr/bin/env bash
# Tier d: fail-closed. Each broken input must make `nix-build` fail and leave no result link
# and no valid output path:
#   1. a trainer that fails                  -> gateway-profile fails
#   2. a trainer that exits 0, writes nothing -> gateway-profile fails
#   3. an empty shapes set                    -> gateway-profile fails
#   4. an empty profile                       -> gateway-pgo fails
#   5. a profile trained on another source    -> gateway-pgo fails on `hash mismatch`
# Reuses tier c's store paths (instrumented build, profile): run tier c first.
#
# Usage: nix/tests/tier-d.sh [TIER_C_OUTDIR]   (default ./out/tier-c)
# NIX_HOST_ARGS: extra nix-build arguments (e.g. --arg root DIR to test another checkout).
# shellcheck disable=SC2086 # NIX_HOST_ARGS is a word list by design
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
tier_c=${1:-$repo/out/tier-c}
t0=$(date +%s)
fail() {
  echo "tier d: FAIL: $*" >&2
  exit 1
}
. "$repo/scripts/chain-host-env.sh"
profile=$(readlink "$tier_c/result-gateway-profile") || fail "run tier c first (no $tier_c/result-gateway-profile)"
work=$(mktemp -d /var/tmp/tier-d.XXXXXX)
trap 'rm -rf "$work"' EXIT

# expect_failure NAME ATTR PATTERN ARGS...: the build of ATTR must fail, print PATTERN in its
# log, leave no result link, and its output path must not be valid.
expect_failure() {
  local name=$1 attr=$2 pattern=$3 t1 drv out
  shift 3
  t1=$(date +%s)
  echo "== $name"
  drv=$(nix-instantiate "$repo/nix/host/chain.nix" "${host_nix_args[@]}" ${NIX_HOST_ARGS:-} "$@" -A "$attr" 2>/dev/null) ||
    fail "$name: does not evaluate"
  out=$(nix-store -q --outputs "$drv")
  if nix-build "$repo/nix/host/chain.nix" "${host_nix_args[@]}" ${NIX_HOST_ARGS:-} "$@" -A "$attr" \
    -o "$work/result-$name" >"$work/$name.log" 2>&1; then
    fail "$name: $attr built"
  fi
  [ ! -e "$work/result-$name" ] || fail "$name: a result link was left"
  if nix-store --check-validity "$out" 2>/dev/null; then fail "$name: $out is valid"; fi
  grep -q -- "$pattern" "$work/$name.log" || {
    tail -n 30 "$work/$name.log"
    fail "$name: the log does not say '$pattern'"
  }
  grep -- "$pattern" "$work/$name.log" | head -n 2 | sed 's/^/  log: /'
  echo "  ok: failed closed in $(($(date +%s) - t1)) s, no result, $out not in the store"
}

expect_failure failing-trainer gateway-profile "trainer profile failed" \
  --arg trainerCommand "$repo/nix/tests/fixtures/failing-trainer.sh"
expect_failure silent-trainer gateway-profile "merged profile is missing or empty" \
  --arg trainerCommand "$repo/nix/tests/fixtures/silent-trainer.sh"
expect_failure empty-shapes gateway-profile "no shapes" \
  --arg shapes "$repo/nix/tests/fixtures/empty-shapes"

mkdir -p "$work/empty-profile"
: >"$work/empty-profile/gateway.profdata"
echo '{}' >"$work/empty-profile/manifest.json"
expect_failure empty-profile gateway-pgo "gateway.profdata" \
  --arg profile "builtins.path { path = $work/empty-profile; name = \"empty-profile\"; }"

# Another source: the same workspace with one trained function's control flow changed.
stale="$work/stale-src"
mkdir -p "$stale"
(cd "$repo" && git ls-files -z -- Cargo.toml Cargo.lock gateway.example.toml gateway trainer shapes |
  xargs -0 cp --parents -t "$stale")
main="$stale/gateway/src/main.rs"
grep -qE '^fn main\(.*\{$' "$main" || fail "stale-profile: no 'fn main(...) {' line in $main"
sed -i -E '0,/^fn main\(.*\{$/s//&\n    if std::env::var_os("GATEWAY_STALE_PROFILE_PROBE").is_some() {\n        std::process::exit(7);\n    }/' "$main"
expect_failure stale-profile gateway-pgo "hash mismatch" \
  --arg root "$stale" --arg profile "builtins.storePath \"$profile\""

echo "tier d: PASS in $(($(date +%s) - t0)) s"
