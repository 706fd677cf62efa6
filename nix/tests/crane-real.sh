#!/usr/bin/env bash
# On demand, never in CI (crane cannot be fetched there): `scripts/test.sh crane-real`.
# Builds the whole chain (trainer, gateway-instrumented, gateway-profile, gateway-pgo-build,
# gateway-pgo, gateway-bolt-profile, gateway-pgo-bolt, checks.pgo-proof, checks.closure) through
# nix/lib/builder.nix exactly as the host chain does, but with crane's OWN setup hooks (read from a
# crane snapshot at the pinned revision, their @placeholders@ filled in as makeSetupHook
# would) in place of the stand-in's, on the host stdenv, with the host toolchain in the store
# as fenix's is. So every command crane's hooks run (cargo metadata with the exported
# RUSTFLAGS, the install from cargo's JSON log, the artifact archives, the reference removal)
# runs on our builds, beside our stage scripts. Then the stand-in's fidelity cases
# (nix/tests/standin-phases.nix) run with crane's hooks: each must fail, or build, as it does
# with the stand-in's. Nothing of crane is copied into this repository: the hooks go to a
# temporary directory and the store.
#
# Usage: CRANE_SRC=DIR nix/tests/crane-real.sh
#   CRANE_SRC  a crane source tree at the pinned revision (flake.lock), e.g.
#              git --git-dir=<crane.git> archive 2c71e19 | tar -x -C DIR
# Trains its own profiles (no reuse of tier c's): about 15 minutes on 2 cores when nothing is
# cached; results and logs in out/crane-real.
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
t0=$(date +%s)
fail() {
  echo "crane-real: FAIL: $*" >&2
  exit 1
}
pinned=$(grep -A8 '"crane": {' "$repo/flake.lock" | sed -nE 's/.*"rev": "([0-9a-f]+)".*/\1/p' | head -n1)
if [ -z "${CRANE_SRC:-}" ]; then
  echo "crane-real: SKIPPED: set CRANE_SRC to a crane source tree at the pinned revision (${pinned:0:7})"
  exit 0
fi
hooks_src="$CRANE_SRC/lib/setupHooks"
[ -d "$hooks_src" ] || fail "$hooks_src is not a directory: CRANE_SRC must be crane's source tree"
if [ -d "$CRANE_SRC/.git" ]; then
  have=$(git -C "$CRANE_SRC" rev-parse HEAD)
  [ "$have" = "$pinned" ] || fail "CRANE_SRC is at $have, flake.lock pins $pinned"
fi

. "$repo/scripts/chain-host-env.sh"
work=$(mktemp -d /var/tmp/crane-real.XXXXXX)
trap 'rm -rf "$work"' EXIT

# crane's hooks, one for each of the stand-in's, with what makeSetupHook would substitute
# (signing is empty on Linux).
echo "crane-real: crane's files used (flake.lock pins $pinned), in place of nix/host/crane/setupHooks:"
mkdir -p "$work/hooks"
jq_bin=$(command -v jq) || fail "jq is missing (apt-get install jq)"
for ours in "$repo"/nix/host/crane/setupHooks/*.sh; do
  name=$(basename "$ours")
  [ -f "$hooks_src/$name" ] || fail "crane has no $name"
  sed -e "s|@jq@|$jq_bin|g" -e 's|@storeDir@|/nix/store|g' \
    -e 's|@signIfRequired@||g' -e 's|@sourceSigningUtils@||g' "$hooks_src/$name" >"$work/hooks/$name"
  printf '  %s  lib/setupHooks/%s\n' "$(sha256sum "$hooks_src/$name" | cut -d' ' -f1)" "$name"
done
if grep -l '@[A-Za-z]*@' "$work"/hooks/*.sh; then fail "an @placeholder@ is left in crane's hooks"; fi
echo "  (crane's lib/*.nix are not used: the stand-in's nix/host/crane/lib builds the same phases)"

echo "crane-real: the stand-in command table (docs/testing.md), crane's column"
"$repo/nix/tests/standin-commands.sh" "$CRANE_SRC" || fail "the stand-in command table"

args=("${host_nix_args[@]}" --arg craneHooks "$work/hooks")
out="$repo/out/crane-real"
rm -rf "$out"
mkdir -p "$out"

# build ATTR [EXPECTED LOG LINE...]: builds ATTR, then holds the build log of ATTR's derivation
# (stored by Nix, so a cached result is checked too) to each expected line.
build() {
  local attr=$1 drv log s
  shift
  log="$out/$attr.log"
  drv=$(nix-instantiate "$repo/nix/host/chain.nix" "${args[@]}" -A "$attr" 2>"$log") || {
    cat "$log"
    fail "$attr does not evaluate"
  }
  s=$(date +%s)
  nix-build "$repo/nix/host/chain.nix" "${args[@]}" -A "$attr" -o "$out/result-$attr" \
    >>"$log" 2>&1 || {
    tail -n 40 "$log"
    fail "$attr did not build with crane's own hooks (log: $log)"
  }
  nix-store --read-log "$drv" >"$log.drv" 2>/dev/null || true
  local expect
  for expect in "$@"; do
    grep -qF -- "$expect" "$log.drv" || fail "the build log of $attr lacks '$expect'"
  done
  printf '  ok: %-22s %4d s  %s\n' "$attr" "$(($(date +%s) - s))" "$(readlink "$out/result-$attr")"
}

# What crane's hooks print in every buildPackage (each line is crane's own).
crane_pkg=(
  "decompressing cargo artifacts from"
  "searching for bins/libs to install from cargo build log"
  "searching for bins/libs complete"
  "actually installing contents of"
  "stripping references to Rust toolchain"
  "stripping Rust toolchain references done"
  "stripping references done"
)
echo "crane-real: the chain with crane's hooks (logs: $out)"
build trainer "${crane_pkg[@]}"
build gateway-instrumented "${crane_pkg[@]}" "stage cargo-build: RUSTFLAGS='-Csymbol-mangling-version=v0 -Cprofile-generate="
build gateway-instrumented.cargoArtifacts "no previous artifacts found, compressing and installing full archive"
build gateway-profile "stage gateway-profile: done"
# The profile-use build: staged and resolved before any phase (deps and binary), then crane's
# `cargo metadata` runs with the resolved flags.
build gateway-pgo-build.cargoArtifacts "stage pgo-use-flags: profile" \
  "stage cargo-build: RUSTFLAGS='-Csymbol-mangling-version=v0 -Cprofile-use=/build/pgo-profile/profile.profdata"
build gateway-pgo-build "${crane_pkg[@]}" "stage pgo-use-flags: profile" \
  "stage cargo-build: RUSTFLAGS='-Csymbol-mangling-version=v0 -Cprofile-use=/build/pgo-profile/profile.profdata" \
  "stage pgo-diagnostics: 0 PGO diagnostic line(s) kept"
# The PGO gate, the stage after the build.
build gateway-pgo "stage gateway-pgo: gated binary:"
build gateway-bolt-profile "stage gateway-bolt-profile: done"
build gateway-pgo-bolt "stage gateway-pgo-bolt: done"
build checks.pgo-proof
build checks.closure
# The bench: its own workspace, built from bench/ (sourceRoot) with no dependency build, so
# no artifacts to decompress.
build bench "${crane_pkg[@]:1}"

# Same commands, same bytes: the instrumented gateway built with the stand-in's hooks (tier c
# builds it; here it is built or taken from the store) must be the one crane's hooks built.
nix-build "$repo/nix/host/chain.nix" "${host_nix_args[@]}" -A gateway-instrumented \
  -o "$out/result-standin-gateway-instrumented" >"$out/standin-gateway-instrumented.log" 2>&1 || {
  tail -n 30 "$out/standin-gateway-instrumented.log"
  fail "gateway-instrumented did not build with the stand-in's hooks"
}
ours=$(sha256sum <"$out/result-standin-gateway-instrumented/bin/gateway" | cut -d' ' -f1)
theirs=$(sha256sum <"$out/result-gateway-instrumented/bin/gateway" | cut -d' ' -f1)
[ "$ours" = "$theirs" ] ||
  fail "gateway-instrumented differs: $theirs with crane's hooks, $ours with the stand-in's"
echo "  ok: gateway-instrumented is the same bytes with crane's hooks and the stand-in's (${ours:0:16})"

r="$out/result-gateway-pgo-bolt"
"$r/bin/gateway" --version >/dev/null || fail "the PGO+BOLT gateway does not run"
grep -q '"hash_mismatch_warnings": 0' "$r/share/gateway/pgo-proof.json" || fail "pgo-proof.json"
readelf -p .note.bolt_info "$r/bin/gateway" | grep -q 'llvm-bolt' || fail "no .note.bolt_info"
echo "== $r/share/gateway/pgo-proof.json"
cat "$r/share/gateway/pgo-proof.json"
echo "== $r/share/gateway/bolt-proof.json"
cat "$r/share/gateway/bolt-proof.json"

# The stand-in's fidelity cases, with crane's hooks: the same outcome as with the stand-in's.
echo "crane-real: the stand-in's fidelity cases (nix/tests/standin-phases.nix) with crane's hooks"
for c in "unexported|fail|buildVar is not set in this child process" "exported|build|" \
  "unreadable-rustflags|fail|passed to \`-C profile-use\` does not exist" "readable-rustflags|build|"; do
  IFS='|' read -r name want pattern <<<"$c"
  log="$out/standin-$name.log"
  if nix-build "$repo/nix/tests/standin-phases.nix" "${args[@]}" -A "$name" \
    -o "$out/result-standin-$name" >"$log" 2>&1; then
    [ "$want" = build ] || fail "standin-phases $name built with crane's hooks: the stand-in fails it"
  else
    [ "$want" = fail ] || {
      tail -n 30 "$log"
      fail "standin-phases $name failed with crane's hooks"
    }
    grep -qF -- "$pattern" "$log" || {
      tail -n 30 "$log"
      fail "standin-phases $name failed with crane's hooks for another reason than '$pattern'"
    }
  fi
  echo "  ok: $name: ${want}s, as with the stand-in's hooks"
done
echo "crane-real: PASS in $(($(date +%s) - t0)) s"
