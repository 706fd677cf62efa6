#!/usr/bin/env bash
# Tier d, the packager's side (issue 37): what a crate carries that the chain cannot take is
# named within seconds, before vendoring or any build; what the chain can do itself, it does.
#   1. the preflight's refusals (nix/lib/preflight.nix), one crate each (rustflags from every
#      source among them), through the README's
#      packager command (CHAIN_FILE=... scripts/chain-nix-host.sh): each must fail naming its
#      cause, in under a minute, before vendoring (its vendor directory never appears);
#   2. what the chain does itself, on a small crate with `strip = true` and `.cargo/config.toml`
#      rustflags its source needs: it builds, the shipped binary is stripped (keeping
#      .note.bolt_info), the PGO binary kept its symbols, and the proofs say so;
#   3. BOLT's symbol limit on nix/tests/fixtures/long-symbols (a 14,808-character symbol under
#      legacy mangling): with default arguments (v0) it builds; with symbolMangling = "legacy"
#      the BOLT profile stage refuses it before instrumenting; and, the check lifted
#      (BOLT_LINE_BUFFER), BOLT's runtime aborts and the stage names that, not the workload;
#   4. the other diagnoses of a failed workload, on a stand-in binary: its own checks failed
#      (stdin passed on and TERM forwarded by the recorder), a process that failed with the
#      stderr the workload discarded, an LLVM profile runtime error;
#   5. docs/chain.md's holdoutGate example as written, on examples/textsearch's builds (tier
#      c's store): it passes, and fails when PGO+BOLT needs more instructions than plain.
#
# Usage: nix/tests/packager-checks.sh [WORKDIR]   (root, the README's packages)
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
work=${1:-$(mktemp -d /var/tmp/packager-checks.XXXXXX)}
t0=$(date +%s)
fail() {
  echo "packager checks: FAIL: $*" >&2
  exit 1
}
mkdir -p "$work"

# crate DIR ARGS [MANIFEST-TAIL]: a copy of the hello fixture with a workload that checks it,
# the release profile lines MANIFEST-TAIL, and a chain file passing ARGS (Nix attributes).
crate() {
  local dir=$1 args=$2 tail=${3:-}
  rm -rf "$dir"
  mkdir -p "$dir/src"
  cp "$repo/nix/tests/fixtures/hello-crate/Cargo.lock" "$dir/"
  cat >"$dir/Cargo.toml" <<EOF
[package]
name = "hello"
version = "0.1.0"
edition = "2021"

[workspace]

[profile.release]
$tail
EOF
  echo 'fn main() { println!("hello"); }' >"$dir/src/main.rs"
  cat >"$dir/workload.sh" <<'EOF'
#!/usr/bin/env bash
set -euo pipefail
for _ in 1 2 3; do [ "$("$1")" = hello ] || exit 1; done
EOF
  cat >"$dir/chain.nix" <<EOF
{ pkgs, mkPgoBoltChain }:
mkPgoBoltChain {
  inherit pkgs;
  src = builtins.path {
    path = ./.;
    name = "hello-src";
    filter = path: _type: !builtins.elem (baseNameOf path) [ "chain.nix" "workload.sh" ];
  };
  binName = "hello";
  workload = pkgs.writeShellScript "hello-workload" (builtins.readFile ./workload.sh);
  minProfiles = 3;
  minProfileBytes = 512; # a one-line program's profile is under the default floor
  $args
}
EOF
}

# refused NAME PATTERN: the packager command on $work/NAME must fail within a minute, print
# PATTERN, and vendor nothing.
refused() {
  local name=$1 pattern=$2 t1 rc=0
  t1=$(date +%s)
  CHAIN_FILE="$work/$name/chain.nix" CHAIN_VENDOR_DIR="$work/$name.vendor" \
    "$repo/scripts/chain-nix-host.sh" "$work/$name.out" >"$work/$name.log" 2>&1 || rc=$?
  [ "$rc" -ne 0 ] || fail "$name: the chain built"
  grep -qF -- "$pattern" "$work/$name.log" || {
    tail -n 20 "$work/$name.log" >&2
    fail "$name: the log does not say '$pattern'"
  }
  [ ! -e "$work/$name.vendor" ] || fail "$name: vendored before refusing"
  [ $(($(date +%s) - t1)) -lt 60 ] || fail "$name: refused after $(($(date +%s) - t1)) s"
  echo "  ok: $name refused in $(($(date +%s) - t1)) s: $(grep -F -- "$pattern" "$work/$name.log" | head -n1 | sed 's/^ *//' | cut -c1-150)"
}

echo "== the preflight's refusals"
crate "$work/opt0" "" "opt-level = 0"
refused opt0 "the release profile has opt-level = 0"
crate "$work/split-debuginfo" "" $'debug = true\nsplit-debuginfo = "packed"'
refused split-debuginfo 'split-debuginfo = "packed": the chain ships bin/hello alone'
crate "$work/strip-arg" 'extraCargoArgs = "--config profile.release.strip=true";'
refused strip-arg "cargo arguments set --config profile.release.strip=true"
crate "$work/strip-flag" 'extraRustflags = "-Clink-args=-Wl,--strip-all";'
refused strip-flag "rustflags strip the binary"
crate "$work/profile-flag" 'extraRustflags = "-Cprofile-generate=/tmp/x";'
refused profile-flag "rustflags carry a -Cprofile-* flag"
crate "$work/mangling-flag" 'extraRustflags = "-Csymbol-mangling-version=v0";'
refused mangling-flag "the chain sets it from \`symbolMangling\`"
crate "$work/profile-arg" 'extraCargoArgs = "--profile dist";'
refused profile-arg "cargo arguments carry --profile"
crate "$work/mangling-value" 'symbolMangling = "v1";'
refused mangling-value 'symbolMangling must be "v0" or "legacy", not "v1"'
crate "$work/cfg-rustflags" ""
mkdir -p "$work/cfg-rustflags/.cargo"
printf '[target.%s]\nrustflags = ["--cfg", "probe"]\n' "'cfg(unix)'" >"$work/cfg-rustflags/.cargo/config.toml"
refused cfg-rustflags "sets rustflags under target.'cfg(unix)'"
# Every place a rustflag can come from (issue 50): -Copt-level=0 passed the preflight and the
# whole chain from extraRustflags while the proof's profile_release said opt-level 3.
crate "$work/opt0-flag" 'extraRustflags = "-Copt-level=0";'
refused opt0-flag "rustflags (extraRustflags) set -Copt-level=0, which overrides the release profile's opt-level = 3"
crate "$work/opt0-config" ""
mkdir -p "$work/opt0-config/.cargo"
printf '[build]\nrustflags = ["-C", "opt-level=0"]\n' >"$work/opt0-config/.cargo/config.toml"
refused opt0-config "rustflags (.cargo/config.toml build.rustflags) set -Copt-level=0"
crate "$work/opt1-target" "" "opt-level = 2"
mkdir -p "$work/opt1-target/.cargo"
printf '[target.x86_64-unknown-linux-gnu]\nrustflags = ["-Copt-level=1"]\n' \
  >"$work/opt1-target/.cargo/config.toml"
refused opt1-target "target.x86_64-unknown-linux-gnu.rustflags) set -Copt-level=1, which overrides the release profile's opt-level = 2"
crate "$work/config-arg-rustflags" "extraCargoArgs = \"--config build.rustflags=['-Copt-level=0']\";"
refused config-arg-rustflags "cargo arguments set --config build.rustflags="
crate "$work/no-lock" ""
rm "$work/no-lock/Cargo.lock"
refused no-lock "src has no Cargo.lock"
# All at once: a packager fixes them in one go.
crate "$work/three" 'extraRustflags = "-Cstrip=symbols";' "opt-level = 0"
rm "$work/three/Cargo.lock"
refused three "src has no Cargo.lock"
[ "$(grep -c '^ *- ' "$work/three.log")" = 3 ] || fail "three: not every refusal listed: $(cat "$work/three.log")"
echo "  ok: three causes, three refusals in one message"

echo "== what the chain does itself: strip = true, config rustflags"
# extraCargoArgs adds to the -p/--bin defaults; its --config is part of the resolved profile.
crate "$work/strip" 'extraCargoArgs = "--config profile.release.codegen-units=4";' "strip = true"
mkdir -p "$work/strip/.cargo"
# The source compiles only with this cfg: cargo ignores config rustflags under RUSTFLAGS, so it
# builds only if the chain passed them on.
printf '[build]\nrustflags = ["--cfg", "chain_probe", "--check-cfg", "cfg(chain_probe)"]\n' \
  >"$work/strip/.cargo/config.toml"
cat >"$work/strip/src/main.rs" <<'EOF'
#[cfg(not(chain_probe))]
compile_error!("the crate's .cargo/config.toml rustflags did not reach rustc");
fn main() { println!("hello"); }
EOF
CHAIN_FILE="$work/strip/chain.nix" "$repo/scripts/chain-nix-host.sh" "$work/strip.out" \
  >"$work/strip.log" 2>&1 || {
  tail -n 30 "$work/strip.log" >&2
  fail "a crate with strip = true and config rustflags does not build"
}
shipped=$work/strip.out/result-hello-pgo-bolt
readelf -SW "$shipped/bin/hello" >"$work/strip.sections"
! grep -q ' \.symtab ' "$work/strip.sections" || fail "the shipped binary has a symbol table (strip = true)"
# (readelf into files: grep -q closing a pipe early would fail readelf under pipefail)
readelf -p .note.bolt_info "$shipped/bin/hello" >"$work/strip.note"
grep -q 'BOLT revision' "$work/strip.note" || fail "the stripped binary lost .note.bolt_info"
readelf -SW "$work/strip.out/result-hello-pgo/bin/hello" >"$work/strip.pgo-sections"
grep -q ' \.symtab ' "$work/strip.pgo-sections" || fail "the PGO binary (BOLT's input) has no symbol table"
[ "$("$shipped/bin/hello")" = hello ] || fail "the stripped binary does not run"
grep -q '"strip": "symbols"' "$shipped/share/hello/bolt-proof.json" || fail "bolt-proof.json does not say strip symbols"
grep -q '"build-strip":"debuginfo"' "$shipped/share/hello/pgo-proof.json" ||
  fail "pgo-proof.json's profile_release does not say the builds used strip = debuginfo"
grep -q '"rustflags": "--cfg chain_probe ' "$shipped/share/hello/pgo-proof.json" ||
  fail "pgo-proof.json's rustflags do not start with the config's"
grep -q '"cargo_args": "--release --locked -p hello --bin hello --config profile.release.codegen-units=4"' \
  "$shipped/share/hello/pgo-proof.json" || fail "pgo-proof.json's cargo_args are not the defaults plus extraCargoArgs"
grep -q '"strip_setting": "Cargo.toml \[profile.release\] strip = true"' "$shipped/share/hello/bolt-proof.json" ||
  fail "bolt-proof.json does not quote the crate's strip = true"
grep -qF '"rustflags_applied": [{"flags":"--cfg chain_probe --check-cfg cfg(chain_probe)","source":".cargo/config.toml build.rustflags"}' \
  "$shipped/share/hello/pgo-proof.json" || fail "pgo-proof.json's rustflags_applied does not name the config's rustflags"
grep -q '"codegen-units":"4"' "$shipped/share/hello/pgo-proof.json" ||
  fail "pgo-proof.json's profile_release does not take the --config of extraCargoArgs"
echo "  ok: shipped stripped ($(stat -c %s "$(readlink -f "$shipped/bin/hello")") bytes, .note.bolt_info kept), the PGO binary with symbols, config rustflags passed on, extraCargoArgs added to the defaults"
# GNU strip moves BOLT's code segment and exits 0; the stage must notice (and so ships LLVM's).
rc=0
env STAGE_COMMON="$repo/nix/lib/stages/common.sh" PGO_BIN="$work/strip.out/result-hello-pgo/bin/hello" \
  PGO_PROOF="$work/strip.out/result-hello-pgo/share/hello/pgo-proof.json" \
  FDATA="$work/strip.out/result-hello-bolt-profile/hello.fdata" \
  FDATA_MANIFEST="$work/strip.out/result-hello-bolt-profile/manifest.json" \
  LLVM_BOLT=/usr/lib/llvm-22/bin/llvm-bolt READELF=/usr/bin/readelf BIN_NAME=hello \
  BOLT_FLAGS="$(grep -vE '^\s*(#|$)' "$repo/nix/lib/bolt-flags.txt" | paste -sd ' ' -)" \
  KEEP_DEBUG_INFO=0 SHIP_STRIP=symbols STRIP=/usr/bin/strip OUT_DIR="$work/gnu-strip.out" TMPDIR="$work" \
  bash "$repo/nix/lib/stages/bolt-optimize.sh" >"$work/gnu-strip.log" 2>&1 || rc=$?
[ "$rc" -ne 0 ] || fail "GNU strip's broken output passed the BOLT stage"
grep -q 'strip changed the program headers' "$work/gnu-strip.log" || {
  tail -n 10 "$work/gnu-strip.log" >&2
  fail "the BOLT stage did not name GNU strip's moved segments"
}
[ ! -e "$work/gnu-strip.out" ] || fail "the refused strip left an output"
echo "  ok: GNU strip's output refused: program headers changed"

echo "== BOLT's symbol limit (nix/tests/fixtures/long-symbols)"
fixture=$repo/nix/tests/fixtures/long-symbols
CHAIN_FILE="$fixture/chain.nix" "$repo/scripts/chain-nix-host.sh" "$work/long.out" \
  >"$work/long.log" 2>&1 || {
  tail -n 30 "$work/long.log" >&2
  fail "the long-symbol fixture does not build with default arguments"
}
grep -q '"symbol_mangling": "v0"' "$work/long.out/result-long-symbols-pgo-bolt/share/long-symbols/pgo-proof.json" ||
  fail "pgo-proof.json does not record v0 mangling"
longest=$(grep -oE '"longest_function_symbol": [0-9]+' "$work/long.out/result-long-symbols-bolt-profile/manifest.json" | grep -oE '[0-9]+$')
[ "${longest:-99999}" -le 5070 ] || fail "v0: the longest function symbol is ${longest:-unknown} characters"
echo "  ok: default arguments (v0) build it, longest function symbol $longest characters"
rc=0
CHAIN_FILE="$fixture/chain-legacy.nix" CHAIN_ATTRS="long-symbols-pgo long-symbols-bolt-profile" \
  "$repo/scripts/chain-nix-host.sh" "$work/legacy.out" >"$work/legacy.log" 2>&1 || rc=$?
[ "$rc" -ne 0 ] || fail "symbolMangling = legacy: the BOLT profile built"
grep -q 'more than BOLT.s instrumentation runtime can write' "$work/legacy.log" || {
  tail -n 20 "$work/legacy.log" >&2
  fail "symbolMangling = legacy: the BOLT profile stage did not name the symbol limit"
}
grep -q 'llvm-bolt -instrument\|BOLT-INFO: runtime library' "$work/legacy.log" &&
  fail "symbolMangling = legacy: the stage instrumented before refusing"
echo "  ok: legacy refused before instrumenting: $(grep -o 'a function symbol of [0-9]* characters' "$work/legacy.log")"
# The check lifted: BOLT's runtime aborts inside the workload's run; the stage must say so.
diag=$work/diagnosis
rm -rf "$diag"
mkdir -p "$diag"
rc=0
(cd "$diag" && env STAGE_COMMON="$repo/nix/lib/stages/common.sh" \
  STAGE_WORKLOAD="$repo/nix/lib/stages/workload.sh" WORKLOAD="$fixture/workload.sh" \
  BIN="$(readlink -f "$work/legacy.out/result-long-symbols-pgo")/bin/long-symbols" \
  BIN_NAME=long-symbols LLVM_BOLT=/usr/lib/llvm-22/bin/llvm-bolt READELF=/usr/bin/readelf \
  BOLT_RT_LIB=/usr/lib/llvm-22/lib/libbolt_rt_instr.a MERGE_FDATA=/usr/lib/llvm-22/bin/merge-fdata \
  MIN_PROFILES=6 OUT_DIR="$diag/out" TMPDIR="$diag" BOLT_LINE_BUFFER=100000 \
  bash "$repo/nix/lib/stages/bolt-profile.sh") >"$work/diagnosis.log" 2>&1 || rc=$?
[ "$rc" -ne 0 ] || fail "the BOLT runtime's abort passed the stage"
[ ! -e "$diag/out" ] || fail "the failed stage wrote its output"
grep -q "FAILED: the instrumented binary failed, not the workload: BOLT's instrumentation runtime aborted (Assertion failed: buffer overflow, function name too large)" \
  "$work/diagnosis.log" || {
  tail -n 20 "$work/diagnosis.log" >&2
  fail "the stage did not name BOLT's runtime abort"
}
echo "  ok: BOLT's runtime abort named as the binary's, with its process: $(grep -A1 'not the workload' "$work/diagnosis.log" | tail -n1 | sed 's/^ *//')"
echo "== a failed workload, diagnosed (nix/lib/stages/workload.sh)"
# A stand-in binary: reads one line of stdin and echoes it (exit 5 without one); `fail MSG N`
# writes MSG to stderr and exits N; `serve` runs until TERM, then exits 0.
fake=$work/diag-bin/tool
mkdir -p "$(dirname "$fake")"
cat >"$fake" <<'EOF'
#!/usr/bin/env bash
case ${1:-} in
  fail) echo "$2" >&2; exit "$3" ;;
  serve) trap 'exit 0' TERM; : >ready; while :; do sleep 0.1; done ;;
  *) read -r line || { echo "no stdin" >&2; exit 5; }; echo "$line" ;;
esac
EOF
chmod +x "$fake"
# shellcheck disable=SC2016 # the workload bodies are the workloads' own shell, not ours
# diagnosed NAME PATTERN WORKLOAD-BODY: run_workload on a workload of that body must die
# printing PATTERN.
diagnosed() {
  local name=$1 pattern=$2 rc=0
  rm -rf "$work/diag-$name"
  printf '#!/usr/bin/env bash\nbin=$1\n%s\n' "$3" >"$work/diag-$name.sh"
  chmod +x "$work/diag-$name.sh"
  (
    export STAGE_NAME=diagnosis WORKLOAD_TIMEOUT=60
    # shellcheck source=../lib/stages/common.sh
    . "$repo/nix/lib/stages/common.sh"
    # shellcheck source=../lib/stages/workload.sh
    . "$repo/nix/lib/stages/workload.sh"
    run_workload "$work/diag-$name.sh" "$fake" "$work/diag-$name"
  ) >"$work/diag-$name.log" 2>&1 || rc=$?
  [ "$rc" -ne 0 ] || fail "diagnosis $name: the failed workload passed"
  grep -qF -- "$pattern" "$work/diag-$name.log" || {
    cat "$work/diag-$name.log" >&2
    fail "diagnosis $name: the log does not say '$pattern'"
  }
  echo "  ok: $name: $(grep -F -- "$pattern" "$work/diag-$name.log" | head -n1 | sed 's/^ *//' | cut -c1-140)"
}
# The recorder passes stdin on and forwards TERM: every process exits 0, the checks are blamed.
diagnosed own-checks "all 2 process(es) of tool exited 0: its own checks failed" '
[ "$(echo hi | "$bin")" = hi ] || exit 9
"$bin" serve & pid=$!
for _ in $(seq 600); do [ -e ready ] && break; sleep 0.05; done
[ -e ready ] || exit 7
kill -TERM "$pid"
wait "$pid" || exit 8
exit 1'
diagnosed hidden-stderr "1 process(es) of tool exited non-zero" '
"$bin" fail "boom: the real cause" 3 2>/dev/null || exit 1'
grep -q 'boom: the real cause' "$work/diag-hidden-stderr.log" ||
  fail "diagnosis hidden-stderr: the stderr the workload discarded is not shown"
diagnosed profile-runtime "the instrumented binary failed, not the workload: LLVM Profile Error: Failed to write file" '
"$bin" fail "LLVM Profile Error: Failed to write file \"x.profraw\": No space left on device" 0 &&
"$bin" fail "LLVM Profile Error: Failed to write file \"x.profraw\": No space left on device" 1 || exit 1'
echo "== docs/chain.md's holdoutGate example, on examples/textsearch (its stages from tier c)"
# The documented gate as written (valgrind by Debian's path: the host pkgs has none, as the docs
# say), on a held-out corpus: it passes on textsearch's builds, and fails with PGO+BOLT and plain
# swapped (a "PGO+BOLT" that needs more instructions than "plain").
ho=$work/holdout
rm -rf "$ho"
mkdir -p "$ho/holdout"
(cd "$repo/examples/textsearch" && git ls-files --cached --others --exclude-standard -z |
  tar --null -T - -cf -) | tar -C "$ho" -xf -
gate=$(awk '/^  holdoutGate =$/ { on = 1 } on { print } on && $0 == "    \047\047;" { exit }' "$repo/docs/chain.md" |
  sed 's#${pkgs.valgrind}/bin/valgrind#/usr/bin/valgrind#; s#my-tool#textsearch#g')
[ -n "$gate" ] || fail "docs/chain.md has no holdoutGate example"
holdout_chain() { # SWAP: true to swap plain and pgoBolt
  sed '/^  minProfiles = 35;$/d; $d' "$repo/examples/textsearch/chain.nix" >"$ho/chain.nix"
  printf '  minProfiles = 35;\n  holdoutGate = args: (let\n%s\n  in holdoutGate) (if %s then args // { plain = args.pgoBolt; pgoBolt = args.plain; } else args);\n}\n' \
    "$(printf '%s\n' "$gate" | sed 's/^  holdoutGate =$/    holdoutGate =/')" "$1" >>"$ho/chain.nix"
}
# Held out: text no workload generates (this repository's docs).
cat "$repo"/docs/*.md "$repo/README.md" >"$ho/holdout/input.txt"
holdout_chain false
CHAIN_FILE="$ho/chain.nix" CHAIN_ATTRS=checks.holdout "$repo/scripts/chain-nix-host.sh" "$ho.out" \
  >"$ho.pass.log" 2>&1 || { tail -n 30 "$ho.pass.log" >&2; fail "the documented holdout gate fails on textsearch"; }
# The figures are in the build log; a check already in the store (an earlier run on this
# machine, or a warm CI store) is not rebuilt, prints none, and passed when it was built.
grep -E 'instructions, plain' "$ho.pass.log" | sed 's#^/nix/store/[^/]*/#  #' ||
  echo "  (checks.holdout was in the store: it passed when built, no log this time)"
holdout_chain true
if CHAIN_FILE="$ho/chain.nix" CHAIN_ATTRS=checks.holdout "$repo/scripts/chain-nix-host.sh" "$ho.out" \
  >"$ho.fail.log" 2>&1; then
  fail "the documented holdout gate passed a PGO+BOLT build worse than plain"
fi
grep -q 'regressed on held-out input' "$ho.fail.log" || { tail -n 30 "$ho.fail.log" >&2; fail "the swapped gate failed otherwise"; }
echo "  ok: passes on textsearch's builds, fails on a PGO+BOLT worse than plain: $(grep -m1 'regressed' "$ho.fail.log" | sed 's#/nix/store/[^/]*/##')"

echo "packager checks: PASS in $(($(date +%s) - t0)) s"
