#!/usr/bin/env bash
# On demand, never in CI (crane cannot be fetched there): `scripts/test.sh crane-real`.
# Builds gateway-pgo exactly as nix/crane.nix's buildWith describes it, with crane's OWN setup
# hooks (read from a crane snapshot at the pinned revision, their @placeholders@ filled in)
# in place of the stand-in's, on the host stdenv, with the toolchain added to the store as
# fenix's is. So the cargo build through nix/stages/cargo-build.sh, crane's install from the
# JSON build log, the PGO gate in postInstall and crane's reference-removing postInstall hooks
# run as the production build runs them. Nothing of crane is copied into this repository:
# the hooks go to a temporary directory and the store.
#
# Usage: CRANE_SRC=DIR nix/tests/crane-real.sh [TIER_C_OUTDIR]     (default ./out/tier-c)
#   CRANE_SRC  a crane source tree at the pinned revision (flake.lock), e.g.
#              git --git-dir=<crane.git> archive 2c71e19 | tar -x -C DIR
#   With tier c's results, its trained profile is reused (no training, no instrumented
#   build): only the PGO dependencies and the PGO build run (minutes).
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
tier_c=${1:-$repo/out/tier-c}
t0=$(date +%s)
fail() {
  echo "crane-real: FAIL: $*" >&2
  exit 1
}
if [ -z "${CRANE_SRC:-}" ]; then
  echo "crane-real: SKIPPED: set CRANE_SRC to a crane source tree at the pinned revision" \
    "($(grep -A8 '"crane": {' "$repo/flake.lock" | sed -nE 's/.*"rev": "([0-9a-f]{7}).*/\1/p' | head -n1))"
  exit 0
fi
hooks_src="$CRANE_SRC/lib/setupHooks"
[ -d "$hooks_src" ] || fail "$hooks_src is not a directory: CRANE_SRC must be crane's source tree"
pinned=$(grep -A8 '"crane": {' "$repo/flake.lock" | sed -nE 's/.*"rev": "([0-9a-f]+)".*/\1/p' | head -n1)
if [ -d "$CRANE_SRC/.git" ]; then
  have=$(git -C "$CRANE_SRC" rev-parse HEAD)
  [ "$have" = "$pinned" ] || fail "CRANE_SRC is at $have, flake.lock pins $pinned"
fi
echo "crane-real: crane's setup hooks from $hooks_src (flake.lock pins $pinned)"

. "$repo/scripts/chain-host-env.sh"
work=$(mktemp -d /var/tmp/crane-real.XXXXXX)
trap 'rm -rf "$work"' EXIT

# crane's hooks, one for each of the stand-in's, with what makeSetupHook would substitute.
mkdir -p "$work/hooks"
jq_bin=$(command -v jq) || fail "jq is missing (apt-get install jq)"
for ours in "$repo"/nix/host/crane/setupHooks/*.sh; do
  name=$(basename "$ours")
  [ -f "$hooks_src/$name" ] || fail "crane has no $name"
  sed -e "s|@jq@|$jq_bin|g" -e 's|@storeDir@|/nix/store|g' \
    -e 's|@signIfRequired@||g' -e 's|@sourceSigningUtils@||g' "$hooks_src/$name" >"$work/hooks/$name"
  echo "  $name"
done
grep -l '@[A-Za-z]*@' "$work"/hooks/*.sh && fail "an @placeholder@ is left in crane's hooks"

# The toolchain in the store, as fenix's is: crane's removeReferencesToRustToolchain expects
# rustc's sysroot to be a store path (it fails on one outside the store).
mkdir -p "$work/rust-toolchain"
cp -a "$rust_sysroot/bin" "$rust_sysroot/lib" "$work/rust-toolchain/"
toolchain=$(nix-store --add "$work/rust-toolchain")
rm -rf "$work/rust-toolchain"
echo "crane-real: toolchain $toolchain"

args=()
skip=0
for a in "${host_nix_args[@]}"; do
  if [ "$skip" = 1 ]; then skip=0; continue; fi
  if [ "$a" = rustSysroot ]; then unset 'args[${#args[@]}-1]'; skip=1; continue; fi
  args+=("$a")
done
args+=(--arg rustSysroot "builtins.storePath \"$toolchain\"")
args+=(--arg craneHooks "$work/hooks")
if [ -e "$tier_c/result-gateway-profile" ]; then
  profile=$(readlink -f "$tier_c/result-gateway-profile")
  args+=(--arg profile "builtins.storePath \"$profile\"")
  echo "crane-real: tier c's profile $profile"
fi

out="$repo/out/crane-real"
mkdir -p "$out"
log="$out/gateway-pgo.log"
echo "crane-real: nix-build -A gateway-pgo (log: $log)"
nix-build "$repo/nix/host/chain.nix" "${args[@]}" -A gateway-pgo -o "$out/result-gateway-pgo" \
  >"$log" 2>&1 || {
  tail -n 40 "$log"
  fail "gateway-pgo did not build with crane's own hooks"
}
r="$out/result-gateway-pgo"
# Each of these lines is printed by crane's own hook or by our stage scripts.
for expect in \
  "decompressing cargo artifacts" \
  "searching for bins/libs to install from cargo build log" \
  "stage cargo-build: RUSTFLAGS='-Cprofile-use=" \
  "stage pgo-gate: proof:" \
  "stripping references to Rust toolchain" \
  "stripping references done"; do
  grep -qF -- "$expect" "$log" || fail "the build log lacks '$expect'"
  echo "  ok: log has '$expect'"
done
"$r/bin/gateway" --help >/dev/null || fail "the PGO gateway does not run"
grep -q '"hash_mismatch_warnings": 0' "$r/share/gateway/pgo-proof.json" || fail "pgo-proof.json"
echo "== pgo-proof.json"
cat "$r/share/gateway/pgo-proof.json"
echo "crane-real: PASS in $(($(date +%s) - t0)) s"
