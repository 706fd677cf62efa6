#!/usr/bin/env bash
# Tier f (issues 22, 37): the packager's path on real published crates that are not ours, each
# as the Rust crate registry serves it (name, version and sha256 in fixtures/<crate>/crate.txt),
# with a chain file and a checked workload copied in, built by the README's packager command
# with default arguments and no workaround, vendoring the crate's own Cargo.lock:
#   - ripgrep: package `ripgrep`, binary `rg`; its release profile has debug = 1, kept
#     through BOLT;
#   - sd: its release profile has strip = true (rust-lld refuses --strip-all with the
#     --emit-relocs BOLT needs): built with symbols, the shipped binary stripped;
#   - oxipng: its hot path is C (libdeflate, by libdeflate-sys's build script): compiled by the
#     chain's clang, trained into the same profile, and the proof says so.
# Then for each: the release gate by --bin-name, the optimized binary passing its workload,
# and its callgrind ratios against its plain and PGO builds.
#
# Usage: nix/tests/tier-f.sh [OUTDIR]   (default ./out/tier-f)
# <CRATE>_CRATE_FILE (RIPGREP_CRATE_FILE, SD_CRATE_FILE): a .crate already downloaded (checked
# against crate.txt all the same).
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
outdir=${1:-$repo/out/tier-f}
t0=$(date +%s)
fail() {
  echo "tier f: FAIL: $*" >&2
  exit 1
}
# Absolute: the workloads run in directories of their own.
outdir=$(mkdir -p "$outdir" && cd "$outdir" && pwd)

# published FIXTURE BIN: downloads, checks and unpacks the crate of nix/tests/fixtures/FIXTURE,
# builds its chain into $outdir/FIXTURE/chain and checks what every packager's build must give.
# Sets `chain` and `opt` (its pgo-bolt result) for the crate's own checks.
published() {
  local fixture=$repo/nix/tests/fixtures/$1 bin=$2 name version sha256 crate got unpack src attr drv var
  local out=$outdir/$1
  mkdir -p "$out"
  read -r name version sha256 < <(grep -v '^#' "$fixture/crate.txt")
  crate=$out/$name-$version.crate
  echo "== $name $version from the crate registry, checked against crate.txt's sha256"
  var=$(printf '%s' "$name" | tr '[:lower:]-' '[:upper:]_')_CRATE_FILE
  if [ -n "${!var:-}" ]; then
    cp "${!var}" "$crate.part"
  elif [ ! -s "$crate" ]; then
    curl -fsSL --retry 3 -o "$crate.part" "https://static.crates.io/crates/$name/$name-$version.crate" ||
      fail "cannot download $name $version"
  fi
  [ -e "$crate.part" ] && mv "$crate.part" "$crate"
  got=$(sha256sum "$crate" | cut -d' ' -f1)
  [ "$got" = "$sha256" ] || {
    rm -f "$crate"
    fail "$name-$version.crate has sha256 $got, crate.txt says $sha256"
  }
  # A fresh unpack each run: the chain's source is the crate as published plus our files.
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
  # Training data beside the workload (oxipng's images), when the fixture has some.
  [ ! -f "$fixture/images.b64" ] || cp "$fixture/images.b64" "$src/"
  # tar keeps the crate's mtimes: the vendored dir and the source hash do not depend on the clock.

  echo "== its chain through CHAIN_FILE (docs/chain.md \"Chain files\"), default arguments"
  chain=$out/chain
  CHAIN_FILE="$src/chain.nix" "$repo/scripts/chain-nix-host.sh" "$chain" >"$out/chain.log" 2>&1 || {
    tail -40 "$out/chain.log" >&2
    fail "$name's chain failed (log: $out/chain.log)"
  }
  sed 's/^/  /' "$chain/stage-timings.txt"
  for attr in "$bin" "$bin-instrumented" "$bin-profile" "$bin-pgo" "$bin-bolt-profile" "$bin-pgo-bolt" \
    checks.pgo-proof checks.closure; do
    [ -e "$chain/result-$attr" ] || fail "no result for $attr"
  done
  # pname and version: the derivations are <name>-*-<version>, not <bin>-0.1.0.
  for attr in "$bin" "$bin-pgo" "$bin-pgo-bolt"; do
    drv=$(basename "$(readlink "$chain/result-$attr")")
    case $drv in
      *-"$name"*"-$version") ;;
      *) fail "result-$attr is $drv: not named by pname $name and version $version" ;;
    esac
  done
  echo "  ok: derivations named $name-*-$version"
  opt=$chain/result-$bin-pgo-bolt
  grep -E '"(functions_with_profile|functions_total|debug_info|strip|output_bytes)"' \
    "$opt/share/$bin/bolt-proof.json" | sed 's/^/  /'

  echo "== the optimized $bin passes its own workload"
  # In a directory of its own: the workload writes its corpus and outputs where it runs.
  rm -rf "$out/workload-run"
  mkdir -p "$out/workload-run"
  (cd "$out/workload-run" && bash "$src/workload.sh" "$opt/bin/$bin") >"$out/workload.log" 2>&1 || {
    tail -20 "$out/workload.log" >&2
    fail "$bin-pgo-bolt fails its workload"
  }
  echo "  ok: $(tail -1 "$out/workload.log")"

  # The release gate knows the binary only by --bin-name; 24-run profiles clear the gateway's
  # default floors.
  echo "== release-check.sh --bin-name $bin"
  READELF=readelf "$repo/scripts/release-check.sh" --bin-name "$bin" "$opt" \
    >"$out/release-check.log" 2>&1 || {
    cat "$out/release-check.log" >&2
    fail "$bin-pgo-bolt fails the release gate"
  }
  echo "  ok: $(grep -c ': ok: ' "$out/release-check.log") release checks"

  echo "== ratios (callgrind, fixtures/$1/bench.sh)"
  BENCH_CI_OUT=$out "$repo/scripts/bench-example.sh" "$chain" "$bin" "$fixture/bench.sh" \
    >"$out/bench.log" 2>&1 || {
    tail -20 "$out/bench.log" >&2
    fail "the $name benchmark failed"
  }
  sed 's/^/  /' "$out/$bin.md"
}

published ripgrep rg
# ripgrep's release profile has debug = 1: the proof must say `kept`, and the DWARF be there.
grep -q '"debug_info": "kept"' "$opt/share/rg/bolt-proof.json" ||
  fail "bolt-proof.json does not say debug_info kept: $(cat "$opt/share/rg/bolt-proof.json")"
# (readelf into a file: grep -q closing the pipe early would fail readelf under pipefail)
readelf -SW "$opt/bin/rg" >"$outdir/ripgrep/sections.txt"
grep -q ' \.debug_info ' "$outdir/ripgrep/sections.txt" || fail "rg-pgo-bolt has no .debug_info section"
echo "  ok: debug info kept through BOLT ($(du -b "$(readlink -f "$opt/bin/rg")" | cut -f1) bytes)"

published sd sd
# sd's release profile has strip = true: built with symbols (BOLT needs them), shipped without.
grep -q '"strip": "symbols"' "$opt/share/sd/bolt-proof.json" || fail "sd's bolt-proof.json does not say strip symbols"
grep -q '"strip":"symbols"' "$opt/share/sd/pgo-proof.json" || fail "sd's pgo-proof.json does not record the crate's strip = true"
readelf -SW "$opt/bin/sd" >"$outdir/sd/sections.txt"
! grep -q ' \.symtab ' "$outdir/sd/sections.txt" || fail "sd-pgo-bolt ships a symbol table (strip = true)"
readelf -SW "$chain/result-sd-pgo/bin/sd" >"$outdir/sd/pgo-sections.txt"
grep -q ' \.symtab ' "$outdir/sd/pgo-sections.txt" || fail "sd-pgo (BOLT's input) has no symbol table"
# The size the crate intends: no 2 MiB huge-page padding (-no-huge-pages), so the shipped
# binary stays within 1.5 times its unstripped PGO input (8.6 MB against 3.9 MB with it).
grep -q -- '-no-huge-pages' "$opt/share/sd/bolt-proof.json" || fail "sd's BOLT flags lack -no-huge-pages (strip = true)"
shipped=$(stat -c %s "$(readlink -f "$opt/bin/sd")")
pgo_bytes=$(stat -c %s "$(readlink -f "$chain/result-sd-pgo/bin/sd")")
[ $((shipped * 2)) -le $((pgo_bytes * 3)) ] || fail "sd-pgo-bolt is $shipped bytes, over 1.5 times its PGO input ($pgo_bytes)"
echo "  ok: shipped stripped, $shipped bytes (unstripped PGO input $pgo_bytes bytes)"
# Against the crate's own build (issue 50: an oxipng shipped at 1.54x its own stripped build):
# the proof's size, with the new code in the old .text (-use-old-text: 2.63 MB against 2.39 MB,
# 3.24 MB without), and the strip setting quoted as sd's Cargo.toml writes it.
grep -q '"strip_setting": "Cargo.toml \[profile.release\] strip = true"' "$opt/share/sd/bolt-proof.json" ||
  fail "sd's bolt-proof.json does not quote its Cargo.toml's strip = true"
grep -q '"use_old_text": "yes"' "$opt/share/sd/bolt-proof.json" || fail "sd was rewritten without -use-old-text"
size=$(grep -o '"size": {[^}]*}' "$opt/share/sd/bolt-proof.json") || fail "sd's bolt-proof.json has no size"
[ "$(printf '%s' "$size" | sed -nE 's/.*"shipped_bytes": ([0-9]+).*/\1/p')" = "$shipped" ] ||
  fail "sd's proof size does not name the shipped binary's $shipped bytes: $size"
ratio=$(printf '%s' "$size" | sed -nE 's/.*"ratio": ([0-9.]+).*/\1/p')
awk -v r="$ratio" 'BEGIN { exit !(r > 0 && r <= 1.2) }' || fail "sd ships at ${ratio}x its own stripped build (over 1.2): $size"
echo "  ok: shipped at ${ratio}x the crate's own stripped build: $size"
published oxipng oxipng
# The C of its build script took the profile: libdeflate's objects by clang of rustc's LLVM, and
# functions of theirs executed in the training, as the PGO proof records them.
proof=$opt/share/oxipng/pgo-proof.json
grep -q '"c_packages": \[.*"libdeflate-sys"' "$proof" || fail "oxipng's pgo-proof.json names no libdeflate-sys C"
c_clang=$(sed -nE 's/^  "c_objects_clang": ([0-9]+).*/\1/p' "$proof")
c_trained=$(sed -nE 's/^  "c_functions_with_profile": ([0-9]+).*/\1/p' "$proof")
[ "${c_clang:-0}" -gt 0 ] || fail "oxipng: no C object compiled by the chain's clang ($proof)"
[ "${c_trained:-0}" -gt 0 ] || fail "oxipng: no C function with profile data ($proof)"
echo "  ok: $c_clang C objects by clang, $c_trained C functions trained"
echo "tier f: ok ($(($(date +%s) - t0)) s)"
