#!/usr/bin/env bash
# Tier f (issue 22): the packager's path on a real published crate that is not ours. ripgrep,
# as crates.io serves it (name, version and sha256 in fixtures/ripgrep/crate.txt), gets a chain
# file and a checked workload (fixtures/ripgrep/) copied in, and the README's packager command
# builds its whole PGO + BOLT chain on the host path, vendoring ripgrep's own Cargo.lock. Then:
# the release gate by --bin-name, debug info kept (ripgrep's release profile has debug = 1), the
# optimized rg passing its workload, and its callgrind ratios against its PGO build.
#
# Usage: nix/tests/tier-f.sh [OUTDIR]   (default ./out/tier-f)
# RG_CRATE_FILE: a ripgrep .crate already downloaded (checked against crate.txt all the same).
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
outdir=${1:-$repo/out/tier-f}
fixture=$repo/nix/tests/fixtures/ripgrep
t0=$(date +%s)
fail() {
  echo "tier f: FAIL: $*" >&2
  exit 1
}
mkdir -p "$outdir"

read -r name version sha256 < <(grep -v '^#' "$fixture/crate.txt")
crate=$outdir/$name-$version.crate
echo "== $name $version from crates.io, checked against crate.txt's sha256"
if [ -n "${RG_CRATE_FILE:-}" ]; then
  cp "$RG_CRATE_FILE" "$crate.part"
elif [ ! -s "$crate" ]; then
  curl -fsSL --retry 3 -o "$crate.part" "https://static.crates.io/crates/$name/$name-$version.crate" ||
    fail "cannot download $name $version from static.crates.io"
fi
[ -e "$crate.part" ] && mv "$crate.part" "$crate"
got=$(sha256sum "$crate" | cut -d' ' -f1)
[ "$got" = "$sha256" ] || {
  rm -f "$crate"
  fail "$name-$version.crate has sha256 $got, crate.txt says $sha256"
}
# A fresh unpack each run: the chain's source is the crate as published plus our three files.
# Outside this repository: a published crate's manifest has no [workspace] table, so cargo
# (`cargo vendor` of its Cargo.lock) would take our workspace for its own and refuse it. A
# fresh machine shows this: it vendors; a machine with the vendored dir cached does not.
unpack=${TIER_F_SRC:-/var/tmp/tier-f-src}
src=$unpack/$name-$version
rm -rf "$src"
mkdir -p "$unpack"
tar -xzf "$crate" -C "$unpack"
[ -f "$src/Cargo.lock" ] || fail "$name $version ships no Cargo.lock"
cp "$fixture/chain.nix" "$fixture/workload.sh" "$fixture/bench.sh" "$src/"
# tar keeps the crate's mtimes: the vendored dir and the source hash do not depend on the clock.

echo "== its chain through CHAIN_FILE (docs/chain.md \"Chain files\")"
chain=$outdir/chain
CHAIN_FILE="$src/chain.nix" "$repo/scripts/chain-nix-host.sh" "$chain" >"$outdir/chain.log" 2>&1 || {
  tail -40 "$outdir/chain.log" >&2
  fail "ripgrep's chain failed (log: $outdir/chain.log)"
}
sed 's/^/  /' "$chain/stage-timings.txt"
for attr in rg rg-instrumented rg-profile rg-pgo rg-bolt-profile rg-pgo-bolt checks.pgo-proof checks.closure; do
  [ -e "$chain/result-$attr" ] || fail "no result for $attr"
done
# pname and version: the derivations are ripgrep-*-15.2.0, not rg-0.1.0.
for attr in rg rg-pgo rg-pgo-bolt; do
  drv=$(basename "$(readlink "$chain/result-$attr")")
  case $drv in
    *-"$name"*"-$version") ;;
    *) fail "result-$attr is $drv: not named by pname $name and version $version" ;;
  esac
done
echo "  ok: derivations named $name-*-$version"

opt=$chain/result-rg-pgo-bolt
proof=$opt/share/rg/bolt-proof.json
grep -E '"(functions_with_profile|functions_total|debug_info)"' "$proof" | sed 's/^/  /'
grep -q '"debug_info": "kept"' "$proof" || fail "bolt-proof.json does not say debug_info kept: $(cat "$proof")"
# (readelf into a file: grep -q closing the pipe early would fail readelf under pipefail)
readelf -SW "$opt/bin/rg" >"$outdir/sections.txt"
grep -q ' \.debug_info ' "$outdir/sections.txt" || fail "rg-pgo-bolt has no .debug_info section"
echo "  ok: debug info kept through BOLT ($(du -b "$(readlink -f "$opt/bin/rg")" | cut -f1) bytes)"

echo "== the optimized rg passes its own workload"
# In a directory of its own: the workload writes its corpus and outputs where it runs.
rm -rf "$outdir/workload-run"
mkdir -p "$outdir/workload-run"
(cd "$outdir/workload-run" && bash "$src/workload.sh" "$opt/bin/rg") >"$outdir/workload.log" 2>&1 || {
  tail -20 "$outdir/workload.log" >&2
  fail "rg-pgo-bolt fails its workload"
}
echo "  ok: $(tail -1 "$outdir/workload.log")"

# The release gate knows the binary only by --bin-name; ripgrep's 24-run profile clears the
# gateway's default floors.
echo "== release-check.sh --bin-name rg"
READELF=readelf "$repo/scripts/release-check.sh" --bin-name rg "$opt" \
  >"$outdir/release-check.log" 2>&1 || {
  cat "$outdir/release-check.log" >&2
  fail "rg-pgo-bolt fails the release gate"
}
echo "  ok: $(grep -c ': ok: ' "$outdir/release-check.log") release checks"

echo "== ratios (callgrind, fixtures/ripgrep/bench.sh)"
BENCH_CI_OUT=$outdir "$repo/scripts/bench-example.sh" "$chain" rg "$fixture/bench.sh" >"$outdir/bench.log" 2>&1 || {
  tail -20 "$outdir/bench.log" >&2
  fail "the ripgrep benchmark failed"
}
sed 's/^/  /' "$outdir/rg.md"
echo "tier f: ok ($(($(date +%s) - t0)) s)"
