#!/usr/bin/env bash
# Tier d: fail-closed. Each broken input must make `nix-build` fail and leave no result link
# and no valid output path:
#   1. a workload that fails                      -> gateway-profile fails
#   2. a workload that exits 0, runs nothing      -> gateway-profile fails (no .profraw)
#   3. an empty shapes set                        -> gateway-profile fails (`trainer shapes`)
#   4. a profile trained on another source        -> gateway-pgo fails on `hash mismatch`
#   5. a worse build as the holdout's PGO variant -> checks.holdout fails naming the shape
#      (the instrumented gateway, nix/tests/holdout-worse.nix)
# and, without a build, the workload contract of the profile stages on fabricated workloads
# (too few profile files, one under the floor, one llvm-profdata cannot read, a hung workload,
# a BOLT-instrumented binary that never ran), the merge of training parts (a torn part, parts
# of two binaries, a malformed PARTS entry), the gates of the stage scripts on fabricated
# inputs: the PGO gate on
# an unreadable, empty or mismatched profile and a log with `hash mismatch` (rustc only warns
# and builds plain), on what a toolchain bump changes (a profile of another LLVM, missing
# profiles, llvm-profdata of another LLVM), the BOLT stage on -use-gnu-stack and on a binary
# without relocations; the profile staging (pgo-use-flags.sh) and cargo-build.sh refusing an
# unresolved token; and the crane stand-in failing where crane fails: a postInstall that reads
# a variable its build phase did not export, and exported RUSTFLAGS that rustc cannot read
# outside cargo-build.sh (crane's install hook runs `cargo metadata`; nix/tests/standin-phases.nix).
# Then the packager's side (nix/tests/packager-checks.sh): each preflight refusal, strip = true
# and config rustflags handled, and BOLT's symbol limit on nix/tests/fixtures/long-symbols;
# the C proof of build scripts' C and its gates (nix/tests/c-pgo-checks.sh).
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
# The broken-input builds reuse tier c's store paths (instrumented build, PGO dependencies).
[ -e "$tier_c/result-gateway-profile" ] || fail "run tier c first (no $tier_c/result-gateway-profile)"
work=$(mktemp -d /var/tmp/tier-d.XXXXXX)
trap 'rm -rf "$work"' EXIT

# expect_failure NAME ATTR PATTERN ARGS...: the build of ATTR must fail, print PATTERN in its
# log, leave no result link, and its output path must not be valid. ATTR of EXPECT_NIX (default
# the host chain, nix/host/chain.nix).
expect_failure() {
  local name=$1 attr=$2 pattern=$3 t1 drv out file=${EXPECT_NIX:-$repo/nix/host/chain.nix}
  shift 3
  t1=$(date +%s)
  echo "== $name"
  drv=$(nix-instantiate "$file" "${host_nix_args[@]}" ${NIX_HOST_ARGS:-} "$@" -A "$attr" 2>/dev/null) ||
    fail "$name: does not evaluate"
  out=$(nix-store -q --outputs "$drv")
  if nix-build "$file" "${host_nix_args[@]}" ${NIX_HOST_ARGS:-} "$@" -A "$attr" \
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

# ---- the stage gates on fabricated inputs (seconds) ----
gate_dir="$work/gates"
mkdir -p "$gate_dir/profile"
printf '# IR level Instrumentation Flag\n:ir\nmain\n# Func Hash:\n1234\n# Num Counters:\n1\n# Counter Values:\n7\n' \
  >"$gate_dir/good.proftext"
"$LLVM_BIN/llvm-profdata" merge -o "$gate_dir/profile/gateway.profdata" "$gate_dir/good.proftext"
good_sha=$(sha256sum "$gate_dir/profile/gateway.profdata" | cut -d' ' -f1)
printf '{"raw_files": 1, "raw_bytes": 100, "merged_sha256": "%s"}\n' "$good_sha" >"$gate_dir/profile/manifest.json"
: >"$gate_dir/clean.log"
echo 'warning: gateway/src/main.rs: function control flow change detected (hash mismatch) main Hash = 1' \
  >"$gate_dir/mismatch.log"
echo 'warning: /nix/store/x/gateway.profdata: invalid instrumentation profile data (bad magic)' \
  >"$gate_dir/corrupt.log"
# pgo_gate NAME LOG PROFILE_DIR [RUSTFLAGS]: what the chain runs of a PGO build whose cargo
# stderr was LOG: the build's pgo-diagnostics.sh (into a PGO build output NAME.build, with
# a stand-in binary), then the gate stage (nix/lib/stages/pgo-gate.sh) into NAME.out-dir.
pgo_gate() {
  rm -rf "$gate_dir/$1.build" "$gate_dir/$1.out-dir"
  mkdir -p "$gate_dir/$1.build/bin"
  cp /bin/true "$gate_dir/$1.build/bin/gateway"
  env STAGE_COMMON="$repo/nix/lib/stages/common.sh" CARGO_STDERR_LOG="$gate_dir/$2" \
    DIAGNOSTICS_OUT="$gate_dir/$1.build/share/gateway/pgo-build" \
    bash "$repo/nix/lib/stages/pgo-diagnostics.sh" >"$gate_dir/$1.out" 2>&1 || return 1
  env STAGE_COMMON="$repo/nix/lib/stages/common.sh" PGO_BUILD="$gate_dir/$1.build" PROFILE_DIR="$3" \
    BIN_NAME=gateway OUT_DIR="$gate_dir/$1.out-dir" LLVM_PROFDATA="${PROFDATA_TOOL:-$LLVM_BIN/llvm-profdata}" \
    PGO_RUSTFLAGS="${4:--Cprofile-use=$3/gateway.profdata -Clink-args=-Wl,--emit-relocs}" \
    bash "$repo/nix/lib/stages/pgo-gate.sh" >>"$gate_dir/$1.out" 2>&1
}
expect_gate_failure() {
  local name=$1 pattern=$2
  shift 2
  echo "== gate: $name"
  if pgo_gate "$name" "$@"; then fail "gate $name passed"; fi
  [ ! -e "$gate_dir/$name.out-dir/share/gateway/pgo-proof.json" ] || fail "gate $name wrote a proof"
  [ ! -e "$gate_dir/$name.out-dir/bin/gateway" ] || fail "gate $name wrote the binary"
  grep -q -- "$pattern" "$gate_dir/$name.out" || {
    cat "$gate_dir/$name.out"
    fail "gate $name does not say '$pattern'"
  }
  grep -- "FAILED" "$gate_dir/$name.out" | head -n 1 | sed 's/^/  log: /'
  echo "  ok: refused, no pgo-proof.json, no binary"
}
echo "== gate: good profile and clean log"
pgo_gate good clean.log "$gate_dir/profile" || { cat "$gate_dir/good.out"; fail "the gate refused a good build"; }
grep -q '"profraw_count": 1' "$gate_dir/good.out-dir/share/gateway/pgo-proof.json" || fail "the proof lacks profraw_count"
cmp -s "$gate_dir/good.build/bin/gateway" "$gate_dir/good.out-dir/bin/gateway" || fail "the gated binary is not the build's"
echo "  ok: pgo-proof.json and the build's binary written"
# The build keeps only rustc's PGO diagnostics, sorted (cargo's job order is not fixed).
printf 'Compiling gateway v0.1.0\nwarning: b.rs: no profile data available for function b\nwarning: a.rs: function control flow change detected (hash mismatch) a\nFinished in 3.2s\n' \
  >"$gate_dir/mixed.log"
pgo_gate mixed mixed.log "$gate_dir/profile" || true
[ "$(cat "$gate_dir/mixed.build/share/gateway/pgo-build/diagnostics.txt")" = "$(printf 'warning: a.rs: function control flow change detected (hash mismatch) a\nwarning: b.rs: no profile data available for function b')" ] ||
  fail "pgo-diagnostics.sh kept $(cat "$gate_dir/mixed.build/share/gateway/pgo-build/diagnostics.txt")"
echo "  ok: the build keeps the two PGO diagnostics, sorted, and nothing else"
echo "== gate: a build that kept no diagnostics"
rm "$gate_dir/good.build/share/gateway/pgo-build/diagnostics.txt"
if env STAGE_COMMON="$repo/nix/lib/stages/common.sh" PGO_BUILD="$gate_dir/good.build" PROFILE_DIR="$gate_dir/profile" \
  BIN_NAME=gateway OUT_DIR="$gate_dir/nodiag.out-dir" LLVM_PROFDATA="$LLVM_BIN/llvm-profdata" \
  PGO_RUSTFLAGS="-Cprofile-use=x" bash "$repo/nix/lib/stages/pgo-gate.sh" >"$gate_dir/nodiag.out" 2>&1; then
  fail "the gate passed a build without diagnostics"
fi
grep -q "kept no diagnostics" "$gate_dir/nodiag.out" || { cat "$gate_dir/nodiag.out"; fail "no-diagnostics: wrong message"; }
[ ! -e "$gate_dir/nodiag.out-dir/bin/gateway" ] || fail "the gate wrote a binary without diagnostics"
echo "  ok: refused"
expect_gate_failure hash-mismatch "hash mismatch" mismatch.log "$gate_dir/profile"
expect_gate_failure unreadable-profile "could not use the profile" corrupt.log "$gate_dir/profile"
expect_gate_failure no-profile-use "no -Cprofile-use" clean.log "$gate_dir/profile" "-Copt-level=3"
# What a toolchain bump changes (fenix's rustc 1.97 vs the host's 1.95), each named as such:
echo 'warning: /nix/store/x/gateway.profdata: unsupported instrumentation profile format version' \
  >"$gate_dir/newer-llvm.log"
expect_gate_failure profile-of-other-llvm "written by an LLVM other than" newer-llvm.log "$gate_dir/profile"
for i in 1 2; do
  echo "warning: gateway/src/f$i.rs: no profile data available for function f$i"
done >"$gate_dir/missing.log"
expect_gate_failure missing-profiles "2 function(s) in workspace crates without profile data (allowed: 0, maxMissingProfiles)" \
  missing.log "$gate_dir/profile"
printf '#!/bin/sh\necho "LLVM (http://llvm.org/):"\necho "  LLVM version 14.0.6"\n' >"$gate_dir/llvm-profdata-14"
chmod +x "$gate_dir/llvm-profdata-14"
PROFDATA_TOOL="$gate_dir/llvm-profdata-14" expect_gate_failure llvm-mismatch \
  "LLVM mismatch: .* but $gate_dir/llvm-profdata-14 is LLVM 14" clean.log "$gate_dir/profile"
mkdir -p "$gate_dir/empty"
: >"$gate_dir/empty/gateway.profdata"
cp "$gate_dir/profile/manifest.json" "$gate_dir/empty/"
expect_gate_failure empty-profile "profile is missing or empty" clean.log "$gate_dir/empty"
mkdir -p "$gate_dir/other"
cp "$gate_dir/profile/gateway.profdata" "$gate_dir/other/"
printf '{"raw_files": 1, "raw_bytes": 100, "merged_sha256": "%064d"}\n' 0 >"$gate_dir/other/manifest.json"
expect_gate_failure manifest-mismatch "merged_sha256 is not the profile" clean.log "$gate_dir/other"

# The profile staging (nix/lib/stages/pgo-use-flags.sh, issues 12 and 18): flags that would not
# use the profile, or a profile that is missing, fail before anything runs cargo; with both,
# the profile lands at $NIX_BUILD_TOP/pgo-profile and the printed flags name that path and
# nothing else. cargo-build.sh refuses flags that still carry the token, or a PGO_PROFILE it
# would not stage (a builder that skipped the staging step).
use_flags() { # NAME PGO_RUSTFLAGS PGO_PROFILE
  env STAGE_COMMON="$repo/nix/lib/stages/common.sh" NIX_BUILD_TOP="$gate_dir/$1.top" \
    PGO_RUSTFLAGS="$2" PGO_PROFILE="$3" bash "$repo/nix/lib/stages/pgo-use-flags.sh" \
    >"$gate_dir/$1.flags" 2>"$gate_dir/$1.out"
}
cargo_stage() { # NAME RUSTFLAGS [PGO_PROFILE]
  env STAGE_COMMON="$repo/nix/lib/stages/common.sh" CARGO_BUILD_LOG="$gate_dir/$1.json" \
    CARGO_STDERR_LOG="$gate_dir/$1.err" RUSTFLAGS="$2" ${3:+PGO_PROFILE="$3"} \
    bash "$repo/nix/lib/stages/cargo-build.sh" --help >"$gate_dir/$1.out" 2>&1
}
expect_refused() { # KIND NAME PATTERN COMMAND...
  local kind=$1 name=$2 pattern=$3
  shift 3
  echo "== gate: $kind $name"
  if "$@"; then fail "$kind $name passed"; fi
  grep -q -- "$pattern" "$gate_dir/$name.out" || {
    cat "$gate_dir/$name.out"
    fail "$kind $name does not say '$pattern'"
  }
  grep -- "FAILED" "$gate_dir/$name.out" | head -n 1 | sed 's/^/  log: /'
}
expect_refused pgo-use-flags no-token "have no -Cprofile-use=@pgoProfile@" \
  use_flags no-token "-Copt-level=3" "$gate_dir/profile/gateway.profdata"
expect_refused pgo-use-flags no-profile "PGO profile (PGO_PROFILE) is missing or empty" \
  use_flags no-profile "-Cprofile-use=@pgoProfile@" "$gate_dir/absent.profdata"
if [ -s "$gate_dir/no-token.flags" ] || [ -s "$gate_dir/no-profile.flags" ]; then
  fail "pgo-use-flags printed flags although it failed"
fi
expect_refused cargo-build unresolved-token "the builder did not stage the profile" \
  cargo_stage unresolved-token "-Cprofile-use=@pgoProfile@"
expect_refused cargo-build profile-given "PGO_PROFILE is not read here" \
  cargo_stage profile-given "-Copt-level=3" "$gate_dir/profile/gateway.profdata"
# cargo reads CARGO_ENCODED_RUSTFLAGS before RUSTFLAGS (issue 50): set, even empty, it would
# build without the stage's flags.
encoded_stage() {
  CARGO_ENCODED_RUSTFLAGS='' cargo_stage encoded-rustflags "-Copt-level=3"
}
expect_refused cargo-build encoded-rustflags "CARGO_ENCODED_RUSTFLAGS is set" encoded_stage
use_flags staged "-Cprofile-use=@pgoProfile@ -Clink-args=-Wl,--emit-relocs" \
  "$gate_dir/profile/gateway.profdata" || fail "pgo-use-flags with a profile and the token failed: $(cat "$gate_dir/staged.out")"
[ "$(cat "$gate_dir/staged.flags")" = \
  "-Cprofile-use=$gate_dir/staged.top/pgo-profile/profile.profdata -Clink-args=-Wl,--emit-relocs" ] ||
  fail "pgo-use-flags printed '$(cat "$gate_dir/staged.flags")'"
cmp -s "$gate_dir/profile/gateway.profdata" "$gate_dir/staged.top/pgo-profile/profile.profdata" ||
  fail "pgo-use-flags did not stage the profile at \$NIX_BUILD_TOP/pgo-profile"
echo "  ok: refused without the pair; staged at \$NIX_BUILD_TOP/pgo-profile with it; cargo-build refuses the token"

# bolt_gate NAME FLAGS BINARY [TRAINED_SHA]: run nix/lib/stages/bolt-optimize.sh as the pgo-bolt
# stage does; the fdata's manifest says it was trained on TRAINED_SHA (default: BINARY's).
# KEEP_DEBUG (default 0) is KEEP_DEBUG_INFO, BOLT_EXE the llvm-bolt it runs.
printf 'int main(void) { return 0; }\n' >"$gate_dir/t.c"
cc -O2 "$gate_dir/t.c" -o "$gate_dir/norelocs"
echo '1 main 0 1 main 4 0 1' >"$gate_dir/t.fdata"
bolt_gate() {
  local trained=${4-$(sha256sum "$3" | cut -d' ' -f1)}
  printf '{\n  "pgo_bin_sha256": "%s",\n  "kind": "bolt"\n}\n' "$trained" >"$gate_dir/t-$1.manifest.json"
  env STAGE_COMMON="$repo/nix/lib/stages/common.sh" PGO_BIN="$3" PGO_PROOF="$gate_dir/good.out-dir/share/gateway/pgo-proof.json" \
    FDATA="$gate_dir/t.fdata" FDATA_MANIFEST="$gate_dir/t-$1.manifest.json" \
    LLVM_BOLT="${BOLT_EXE:-$LLVM_BIN/llvm-bolt}" READELF="$(command -v readelf)" \
    BOLT_FLAGS="$2" KEEP_DEBUG_INFO="${KEEP_DEBUG:-0}" BIN_NAME=gateway OUT_DIR="$gate_dir/bolt-$1" \
    bash "$repo/nix/lib/stages/bolt-optimize.sh" >"$gate_dir/bolt-$1.out" 2>&1
}
# bolt_refused NAME PATTERN: after a bolt_gate NAME that failed, nothing was installed and
# its log names the cause.
bolt_refused() {
  [ ! -e "$gate_dir/bolt-$1/bin/gateway" ] || fail "bolt gate $1 installed a binary"
  grep -q -- "$2" "$gate_dir/bolt-$1.out" || {
    cat "$gate_dir/bolt-$1.out"
    fail "bolt gate $1 does not say '$2'"
  }
  grep -- "FAILED" "$gate_dir/bolt-$1.out" | head -n 1 | sed 's/^/  log: /'
  echo "  ok: refused, nothing installed"
}
# A published or cached fdata applied to another PGO binary (issue 12: the fdata must match
# the binary it optimizes), and one whose manifest does not say which binary it fits.
other_sha=$(printf other | sha256sum | cut -d' ' -f1)
for c in "use-gnu-stack|-reorder-blocks=ext-tsp -use-gnu-stack|executable|" \
  "no-relocations|-reorder-blocks=ext-tsp|relocation mode|" \
  "fdata-for-another-binary|-reorder-blocks=ext-tsp|trained on another binary|$other_sha" \
  "fdata-without-binary-sha|-reorder-blocks=ext-tsp|names no pgo_bin_sha256|none"; do
  IFS='|' read -r name flags pattern trained <<<"$c"
  echo "== gate: bolt $name"
  if bolt_gate "$name" "$flags" "$gate_dir/norelocs" ${trained:+"$trained"}; then
    fail "bolt gate $name passed"
  fi
  bolt_refused "$name" "$pattern"
done

# keepDebugInfo (issue 22): BOLT writes no DWARF unless told to rewrite it. Kept is asked for
# with the flag, and proven on the output; a llvm-bolt that loses it anyway (here a wrapper
# that swallows the flag, as a packager's boltFlags override could) fails the stage.
printf 'int f(int x) { return x * 3; }\nint main(int c, char **v) { int s = 0; for (int i = 0; i < c * 1000; i++) s += f(i); return s & 1; }\n' >"$gate_dir/d.c"
cc -g -O2 -Wl,--emit-relocs "$gate_dir/d.c" -o "$gate_dir/debug-relocs"
printf '#!/bin/bash\nargs=()\nfor a in "$@"; do [ "$a" = -update-debug-sections ] || args+=("$a"); done\nexec %s "${args[@]}"\n' \
  "$LLVM_BIN/llvm-bolt" >"$gate_dir/bolt-drops-debug"
chmod +x "$gate_dir/bolt-drops-debug"
# NAME|KEEP_DEBUG_INFO|BOLT_FLAGS|refusal (empty: builds)|the proof's debug_info|llvm-bolt
for c in "debug-kept|1|-reorder-blocks=ext-tsp -update-debug-sections||kept|" \
  "debug-dropped|0|-reorder-blocks=ext-tsp||dropped|" \
  "debug-flag-missing|1|-reorder-blocks=ext-tsp|lack -update-debug-sections||" \
  "debug-lost|1|-reorder-blocks=ext-tsp -update-debug-sections|lost it||$gate_dir/bolt-drops-debug" \
  "debug-unasked|0|-reorder-blocks=ext-tsp -update-debug-sections|not told to update||"; do
  IFS='|' read -r name keep flags pattern proven wrapper <<<"$c"
  echo "== gate: bolt $name (KEEP_DEBUG_INFO=$keep, $flags)"
  if KEEP_DEBUG=$keep BOLT_EXE=$wrapper bolt_gate "$name" "$flags" "$gate_dir/debug-relocs"; then
    [ -n "$proven" ] || fail "bolt gate $name passed"
    grep -q "\"debug_info\": \"$proven\"" "$gate_dir/bolt-$name/share/gateway/bolt-proof.json" ||
      fail "bolt $name: the proof does not say debug_info $proven: $(cat "$gate_dir/bolt-$name/share/gateway/bolt-proof.json")"
    echo "  ok: built, the proof says debug_info $proven"
    continue
  fi
  [ -z "$proven" ] || { cat "$gate_dir/bolt-$name.out"; fail "bolt $name failed"; }
  bolt_refused "$name" "$pattern"
done

# A chain whose package is not named as its binary (ripgrep: package ripgrep, binary rg) and
# the default `-p <binName>`: cargo-build.sh names the argument that fixes it.
mkdir -p "$gate_dir/misnamed/src"
printf '[package]\nname = "pkg"\nversion = "0.1.0"\nedition = "2021"\n\n[[bin]]\nname = "tool"\npath = "src/main.rs"\n' \
  >"$gate_dir/misnamed/Cargo.toml"
echo 'fn main() {}' >"$gate_dir/misnamed/src/main.rs"
misnamed_build() { # NAME CARGO_ARGS...
  local name=$1
  shift
  (cd "$gate_dir/misnamed" && env STAGE_COMMON="$repo/nix/lib/stages/common.sh" \
    CARGO_BUILD_LOG="$gate_dir/$name.json" CARGO_STDERR_LOG="$gate_dir/$name.err" \
    CARGO_TARGET_DIR="$gate_dir/misnamed-target" RUSTFLAGS="" \
    bash "$repo/nix/lib/stages/cargo-build.sh" --offline "$@") >"$gate_dir/$name.out" 2>&1
}
expect_refused cargo-build package-is-not-binName "Give the chain \`package\`" \
  misnamed_build package-is-not-binName -p tool --bin tool
expect_refused cargo-build no-such-bin "Give the chain \`package\`" \
  misnamed_build no-such-bin -p pkg --bin other
misnamed_build package-given -p pkg --bin tool || {
  cat "$gate_dir/package-given.out"
  fail "cargo-build.sh with package = pkg failed"
}
echo "  ok: -p pkg --bin tool builds"

# ---- the workload contract of the profile stages (nix/lib/stages/workload.sh), no Nix ----
# Each fabricated workload runs against tier c's instrumented gateway through the real stage
# script and the real llvm-profdata / llvm-bolt; each must fail naming its cause and leave no
# output directory.
wl_dir="$work/workloads"
mkdir -p "$wl_dir"
# fake_workload NAME BODY: an executable workload script; $1 is the binary, $p the profile path
# the stage gave it (LLVM_PROFILE_FILE with %p and %m filled in).
fake_workload() {
  {
    # shellcheck disable=SC2016 # the workload's own expansions
    printf '%s\n' '#!/bin/bash' 'set -eu' 'p=$(printf "%s" "${LLVM_PROFILE_FILE:-}" | sed "s/%p/$$/; s/%m/0/")'
    printf '%s\n' "$2"
  } >"$wl_dir/$1"
  chmod +x "$wl_dir/$1"
}
# profile_stage SCRIPT NAME [VAR=VALUE...]: run a profile stage with workload NAME into
# $wl_dir/out-NAME.
profile_stage() {
  local script=$1 name=$2
  shift 2
  env STAGE_COMMON="$repo/nix/lib/stages/common.sh" STAGE_WORKLOAD="$repo/nix/lib/stages/workload.sh" \
    WORKLOAD="$wl_dir/$name" BIN_NAME=gateway LLVM_PROFDATA="$LLVM_BIN/llvm-profdata" \
    READELF="$(command -v readelf)" LLVM_BOLT="$LLVM_BIN/llvm-bolt" MERGE_FDATA="$LLVM_BIN/merge-fdata" \
    BOLT_RT_LIB="$BOLT_RT_LIB" OUT_DIR="$wl_dir/out-$name" TMPDIR="$wl_dir" "$@" \
    bash "$repo/nix/lib/stages/$script" >"$wl_dir/$name.log" 2>&1
}
expect_workload_failure() { # SCRIPT NAME PATTERN [VAR=VALUE...]
  local script=$1 name=$2 pattern=$3
  shift 3
  echo "== workload contract: $name"
  if profile_stage "$script" "$name" "$@"; then fail "workload $name: $script passed"; fi
  [ ! -e "$wl_dir/out-$name" ] || fail "workload $name: $script left an output"
  grep -q -- "$pattern" "$wl_dir/$name.log" || {
    cat "$wl_dir/$name.log"
    fail "workload $name: the log does not say '$pattern'"
  }
  grep -- "FAILED" "$wl_dir/$name.log" | head -n 1 | sed 's/^/  log: /'
}
instrumented="$(readlink -f "$tier_c/result-gateway-instrumented")/bin/gateway"
pgo_bin="$(readlink -f "$tier_c/result-gateway-pgo")/bin/gateway"
fake_workload one-run '"$1" --version >/dev/null'
expect_workload_failure pgo-profile.sh one-run "the workload left 1 .profraw file(s), fewer than the 2 expected" \
  BIN="$instrumented" MIN_PROFILES=2
fake_workload tiny-profile 'head -c 100 /dev/zero >"$p"'
expect_workload_failure pgo-profile.sh tiny-profile "is 100 bytes, under the floor of 1024" BIN="$instrumented"
fake_workload foreign-profile 'head -c 4096 /dev/zero >"$p"'
expect_workload_failure pgo-profile.sh foreign-profile "llvm-profdata merge failed" BIN="$instrumented"
fake_workload hung 'sleep 600'
expect_workload_failure pgo-profile.sh hung "did not finish within 2 s" BIN="$instrumented" WORKLOAD_TIMEOUT=2
fake_workload bolt-never-ran 'true'
expect_workload_failure bolt-profile.sh bolt-never-ran "the workload left 0 .fdata file(s)" BIN="$pgo_bin"
# The same stage with a workload that does run the binary: the contract's positive case.
profile_stage pgo-profile.sh one-run BIN="$instrumented" MIN_PROFILES=1 || {
  cat "$wl_dir/one-run.log"
  fail "pgo-profile.sh refused a workload that ran the binary once"
}
grep -q '"raw_files": 1,' "$wl_dir/out-one-run/manifest.json" || fail "one-run: manifest lacks raw_files 1"
echo "  ok: one run -> gateway.profdata + manifest.json ($(grep -oE '"functions(_executed)?": [0-9]+' "$wl_dir/out-one-run/manifest.json" | paste -sd ' '))"

# The merge of a fanned-out training (PARTS): two whole parts merge, summed; a part whose file
# is not its manifest's, parts of two binaries, or a malformed entry fail, leaving nothing.
for p in a b; do cp -R "$wl_dir/out-one-run" "$wl_dir/part-$p"; done
profile_stage pgo-profile.sh merged PARTS="a=$wl_dir/part-a b=$wl_dir/part-b" || {
  cat "$wl_dir/merged.log"
  fail "pgo-profile.sh refused to merge two whole parts"
}
for want in '"raw_files": 2,' '"parts": 2,' '"part_a_sha256": "'; do
  grep -q "$want" "$wl_dir/out-merged/manifest.json" || {
    cat "$wl_dir/out-merged/manifest.json"
    fail "the merged manifest lacks $want"
  }
done
echo "  ok: two parts -> one profile ($(grep -oE '"(raw_files|parts)": [0-9]+' "$wl_dir/out-merged/manifest.json" | paste -sd ' '))"
cp -R "$wl_dir/part-b" "$wl_dir/part-torn"
head -c 100 "$wl_dir/part-a/gateway.profdata" >"$wl_dir/part-torn/gateway.profdata"
expect_workload_failure pgo-profile.sh merge-torn "part torn: its gateway.profdata is not the one its manifest names" \
  PARTS="a=$wl_dir/part-a torn=$wl_dir/part-torn"
cp -R "$wl_dir/part-b" "$wl_dir/part-other"
sed -i -E 's/("binary_sha256": ")[0-9a-f]{8}/\100000000/' "$wl_dir/part-other/manifest.json"
expect_workload_failure pgo-profile.sh merge-other-binary "part other was trained on another binary" \
  PARTS="a=$wl_dir/part-a other=$wl_dir/part-other"
expect_workload_failure pgo-profile.sh merge-malformed "PARTS entry '$wl_dir/part-a' is not NAME=DIR" \
  PARTS="$wl_dir/part-a"
bolt_dir=$(readlink -f "$tier_c/result-gateway-bolt-profile")
cp -R "$bolt_dir" "$wl_dir/bolt-part-other"
chmod -R u+w "$wl_dir/bolt-part-other"
sed -i -E 's/("pgo_bin_sha256": ")[0-9a-f]{8}/\100000000/' "$wl_dir/bolt-part-other/manifest.json"
expect_workload_failure bolt-profile.sh bolt-merge-other-binary "part other was trained on another binary" \
  PARTS="a=$bolt_dir other=$wl_dir/bolt-part-other"

# ---- the crane stand-in behaves as crane where our builds depend on it (nix/tests/standin-phases.nix) ----
standin() {
  nix-build "$repo/nix/tests/standin-phases.nix" "${host_nix_args[@]}" -A "$1" \
    -o "$work/result-standin-$1" >"$work/standin-$1.log" 2>&1
}
# standin_pair FAILING PASSING PATTERN WHAT: the first must fail saying PATTERN, leaving no
# result; the second, differing in one thing, must build.
standin_pair() {
  local bad=$1 good=$2 pattern=$3 what=$4
  echo "== stand-in: $what"
  if standin "$bad"; then fail "the stand-in built $bad ($what)"; fi
  [ ! -e "$work/result-standin-$bad" ] || fail "standin-$bad: a result link was left"
  grep -qF -- "$pattern" "$work/standin-$bad.log" || {
    tail -n 30 "$work/standin-$bad.log"
    fail "standin-$bad failed for another reason than '$pattern'"
  }
  grep -F -- "$pattern" "$work/standin-$bad.log" | head -n 1 | sed 's/^/  log: /'
  standin "$good" || {
    tail -n 30 "$work/standin-$good.log"
    fail "standin-$good (the same build, $what fixed) failed"
  }
  echo "  ok: $bad fails, $good builds"
}
# The class of bug that broke `nix build .#gateway-pgo-bolt` the first time: a postInstall
# child process that reads a variable the build phase assigned without exporting.
standin_pair unexported exported 'buildVar is not set in this child process' \
  "a postInstall reading an unexported build-phase variable"
# The second time (issue 18): crane's own install hook runs `cargo metadata` with the exported
# RUSTFLAGS, which rustc could not read. A stand-in whose hook adds --no-deps builds this.
standin_pair unreadable-rustflags readable-rustflags 'passed to `-C profile-use` does not exist' \
  "exported RUSTFLAGS rustc cannot read, outside cargo-build.sh"

# ---- broken inputs through nix-build (the real sandboxed stages) ----
expect_failure failing-workload gateway-profile "the workload failed (exit 3)" \
  --arg workload "$repo/nix/tests/fixtures/failing-workload.sh"
expect_failure silent-workload gateway-profile "the workload left 0 .profraw file(s), fewer than the" \
  --arg workload "$repo/nix/tests/fixtures/silent-workload.sh"
# The host path's sandbox holds what the workload contract promises and no more (issue 22):
# stdenv's tools on PATH (gawk as awk, no python3), no /usr/share or /usr/local.
expect_failure sandbox-probe gateway-profile "the workload failed (exit 3)" \
  --arg workload "$repo/nix/tests/fixtures/sandbox-probe-workload.sh"
for finding in "awk is GNU Awk" "no python3 on PATH" "no /usr/share" "no /usr/local"; do
  grep -q "probe: $finding" "$work/sandbox-probe.log" || {
    grep 'probe:' "$work/sandbox-probe.log" >&2
    fail "the workload's sandbox: not '$finding'"
  }
done
echo "  ok: the workload saw $(grep -c 'probe: ' "$work/sandbox-probe.log") findings, each as the contract says"
expect_failure empty-shapes gateway-profile "no shape files (\*.toml)" \
  --arg shapes "$repo/nix/tests/fixtures/empty-shapes"

# Another source: the same workspace with one trained function's control flow changed.
stale="$work/stale-src"
mkdir -p "$stale"
(cd "$repo" && git ls-files -z -- Cargo.toml Cargo.lock gateway.example.toml gateway trainer shapes |
  xargs -0 cp --parents -t "$stale")
main="$stale/gateway/src/main.rs"
grep -qE '^fn main\(.*\{$' "$main" || fail "stale-profile: no 'fn main(...) {' line in $main"
sed -i -E '0,/^fn main\(.*\{$/s//&\n    if std::env::var_os("GATEWAY_STALE_PROFILE_PROBE").is_some() {\n        std::process::exit(7);\n    }/' "$main"
expect_failure stale-profile gateway-pgo "hash mismatch" \
  --arg root "$stale" --arg profileFrom "$repo"

# The holdout gate, end to end in its Nix check: a worse build fails it, naming the shape.
holdout_shape=$(grep -l '^holdout = true' "$repo"/shapes/*.toml | head -n1 | xargs basename -s .toml)
EXPECT_NIX="$repo/nix/tests/holdout-worse.nix" \
  expect_failure holdout-worse holdout "holdout gate FAILED on $holdout_shape: instructions/request over 1.00x plain: pgo"

# checks.pgo-proof's script holds the shipped proofs against tier c's artefacts: it passes on
# them as built, and fails on a proof whose figure is not the artefact's, naming the field.
echo "== check-proofs.sh on tier c's proofs, then each with one figure changed"
proofs() { # DIR: run check-proofs.sh with DIR as the BOLT stage's output
  env STAGE_COMMON="$repo/nix/lib/stages/common.sh" RESULT="$1" BIN_NAME=gateway \
    PROFILE_DIR="$tier_c/result-gateway-profile" BOLT_PROFILE="$tier_c/result-gateway-bolt-profile" \
    READELF="$(command -v readelf)" bash "$repo/nix/lib/stages/check-proofs.sh"
}
proofs "$tier_c/result-gateway-pgo-bolt" >"$work/proofs.log" 2>&1 ||
  { tail -n 5 "$work/proofs.log"; fail "check-proofs.sh refuses tier c's proofs"; }
grep -q 'ok: size.ratio' "$work/proofs.log" || fail "check-proofs.sh did not check the proof's size"
for edit in 's/"shipped_bytes": [0-9]*/"shipped_bytes": 1/:size.shipped_bytes' \
  's/"ratio": [0-9.]*/"ratio": 0.500/:size.ratio' \
  's/"fdata_bytes": [0-9]*/"fdata_bytes": 2/:fdata_bytes'; do
  t="$work/proofs-${edit##*:}"
  mkdir -p "$t/bin" "$t/share/gateway"
  cp "$tier_c/result-gateway-pgo-bolt/bin/gateway" "$t/bin/"
  cp "$tier_c/result-gateway-pgo-bolt/share/gateway/pgo-proof.json" "$t/share/gateway/"
  sed "${edit%:*}" "$tier_c/result-gateway-pgo-bolt/share/gateway/bolt-proof.json" >"$t/share/gateway/bolt-proof.json"
  if proofs "$t" >"$t.log" 2>&1; then fail "check-proofs.sh passed a proof with ${edit##*:} changed"; fi
  grep -q "FAILED: ${edit##*:}: proof says" "$t.log" || { tail -n 5 "$t.log"; fail "check-proofs.sh failed otherwise"; }
  echo "  ok: $(grep -m1 FAILED "$t.log" | sed 's/^stage //')"
done

# The packager's side: the preflight's refusals, strip = true, BOLT's symbol limit.
"$repo/nix/tests/packager-checks.sh" "$work/packager"
# The C of build scripts: the C proof and its gates (hash mismatch, another LLVM's clang).
"$repo/nix/tests/c-pgo-checks.sh" "$work/c-pgo"
echo "tier d: PASS in $(($(date +%s) - t0)) s"
