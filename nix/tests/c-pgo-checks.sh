#!/usr/bin/env bash
# Tier d, the C of build scripts (issue 50 item 2), on fabricated build outputs (seconds, no
# cargo): the stage scripts that list a build's C objects (c-objects.sh), hold them against
# the profile in the PGO gate (c-proof.sh through pgo-gate.sh) and resolve the C flags of a
# profile-use build (c-flags.sh), with Debian's clang-22 and llvm-profdata:
#   1. a build with C by clang (instrumented, trained, profile-used), an assembly object and
#      an object another compiler made: the proof counts them, names the two that take no
#      profile, and finds the C function the training ran in the profile;
#   2. fail-closed: `hash mismatch` in a build script's C (the profile was trained on other C)
#      and a clang of another LLVM major each fail the gate, with no proof and no binary;
#   3. c-objects.sh refuses a target dir that is not the build's (an empty list would say "no
#      C"); c-flags.sh refuses flags without the token and a profile not staged, and resolves it.
#
# Usage: nix/tests/c-pgo-checks.sh [WORKDIR]   (the README's packages: clang-22, llvm-22)
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
work=${1:-$(mktemp -d /var/tmp/c-pgo-checks.XXXXXX)}
llvm_bin=${LLVM_BIN:-/usr/lib/llvm-22/bin}
clang="$llvm_bin/clang"
stages="$repo/nix/lib/stages"
fail() {
  echo "c-pgo checks: FAIL: $*" >&2
  exit 1
}
[ -x "$clang" ] || fail "no $clang (apt-get install -y clang-22)"
rm -rf "$work" && mkdir -p "$work"
cd "$work"
triple=x86_64-unknown-linux-gnu

# A build script's C (hot.c) as the chain compiles it: instrumented, linked and run for its
# profile (one .profraw, merged), then profile-used into the build's OUT_DIR.
cat >hot.c <<'EOF'
unsigned hot_sum(const unsigned char *p, unsigned n) {
  unsigned h = 0;
  for (unsigned i = 0; i < n; i++) h = (p[i] & 1) ? h * 31 + p[i] : h + p[i];
  return h;
}
unsigned never_called(unsigned x) { return x * 7; }
EOF
cat >main.c <<'EOF'
unsigned hot_sum(const unsigned char *p, unsigned n);
int main(void) { unsigned char b[64] = {1, 2, 3}; return hot_sum(b, 64) == 12345; }
EOF
"$clang" -O2 -fprofile-generate="$work/raw" hot.c main.c -o trained
LLVM_PROFILE_FILE="$work/raw/t-%p.profraw" ./trained
mkdir -p profile
"$llvm_bin/llvm-profdata" merge -o profile/gateway.profdata raw/*.profraw
sha=$(sha256sum profile/gateway.profdata | cut -d' ' -f1)
printf '{"raw_files": 1, "raw_bytes": 100, "merged_sha256": "%s"}\n' "$sha" >profile/manifest.json

# build RUN HOT_C: a target dir whose build script run RUN compiled HOT_C with the profile
# (its warnings as the `cc` crate passes them on: `cargo:warning=` lines of `output`), an
# assembly object and one by another compiler (a .comment of GCC's).
build() {
  local run="$work/$1/$triple/release/build/hot-0123456789abcdef"
  rm -rf "${work:?}/$1" && mkdir -p "$run/out"
  "$clang" -O2 -c "$2" -o "$run/out/hot.o" -fprofile-use="$work/profile/gateway.profdata" \
    -Wno-error=backend-plugin 2>"$work/$1.cc-stderr"
  sed 's/^/cargo:warning=/' "$work/$1.cc-stderr" >"$run/output"
  printf '\t.text\n\t.globl asm_fn\nasm_fn:\n\tret\n' >"$work/asm.S"
  "$clang" -c "$work/asm.S" -o "$run/out/asm.o"
  "$clang" -O2 -c hot.c -o "$run/out/gcc.o"
  "$llvm_bin/llvm-objcopy" --remove-section .comment "$run/out/gcc.o"
  "$llvm_bin/llvm-objcopy" --add-section .comment=<(printf 'GCC: (Debian 12.2.0-14) 12.2.0\0') \
    --set-section-flags .comment=merge,strings "$run/out/gcc.o"
}
# gate NAME: c-objects.sh on target dir NAME into a PGO build output, then the PGO gate with
# the C proof, as nix/lib/chain.nix runs them.
gate() {
  local b="$work/$1.build"
  rm -rf "$b" "$work/$1.out-dir"
  mkdir -p "$b/bin" "$b/share/gateway/pgo-build"
  cp /bin/true "$b/bin/gateway"
  : >"$work/empty.log"
  env STAGE_COMMON="$stages/common.sh" CARGO_STDERR_LOG="$work/empty.log" \
    DIAGNOSTICS_OUT="$b/share/gateway/pgo-build" bash "$stages/pgo-diagnostics.sh" >"$work/$1.out" 2>&1
  env STAGE_COMMON="$stages/common.sh" C_TARGET_DIR="$work/$1" TARGET=$triple READELF="$(command -v readelf)" \
    CLANG="${CLANG_UNDER_TEST:-$clang}" C_OBJECTS_OUT="$b/share/gateway/pgo-build" \
    bash "$stages/c-objects.sh" >>"$work/$1.out" 2>&1
  env STAGE_COMMON="$stages/common.sh" PGO_BUILD="$b" PROFILE_DIR="$work/profile" BIN_NAME=gateway \
    OUT_DIR="$work/$1.out-dir" LLVM_PROFDATA="$llvm_bin/llvm-profdata" \
    PGO_RUSTFLAGS="-Cprofile-use=x -Clink-args=-Wl,--emit-relocs" \
    C_PROOF="$stages/c-proof.sh" C_PGO_FLAGS="-fprofile-use=/build/pgo-profile/profile.profdata" \
    bash "$stages/pgo-gate.sh" >>"$work/$1.out" 2>&1
}
expect_refused() {
  local name=$1 pattern=$2
  if gate "$name"; then fail "$name: the gate passed"; fi
  [ ! -e "$work/$name.out-dir/share/gateway/pgo-proof.json" ] || fail "$name: a proof was written"
  [ ! -e "$work/$name.out-dir/bin/gateway" ] || fail "$name: the binary was written"
  grep -q -- "$pattern" "$work/$name.out" || {
    cat "$work/$name.out"
    fail "$name: no '$pattern'"
  }
  grep FAILED "$work/$name.out" | head -n1 | sed 's/^/  log: /'
  echo "  ok: $name refused, no proof, no binary"
}
field() { grep -E "^  \"$1\": " "$work/good.out-dir/share/gateway/pgo-proof.json" | sed -E 's/^[^:]*: //; s/,$//'; }

echo "== C proof: clang, assembly and another compiler's objects"
build good hot.c
gate good || {
  cat "$work/good.out"
  fail "the gate refused a good build"
}
grep -P '^hot\thot.o\tclang 22\t0\thot_sum never_called$' good.build/share/gateway/pgo-build/c-objects.tsv >/dev/null ||
  fail "c-objects.tsv: $(cat good.build/share/gateway/pgo-build/c-objects.tsv)"
[ "$(field c_objects)" = 3 ] || fail "c_objects = $(field c_objects)"
[ "$(field c_objects_clang)" = 1 ] || fail "c_objects_clang = $(field c_objects_clang)"
[ "$(field c_functions)" = 2 ] || fail "c_functions = $(field c_functions)"
# hot_sum ran in the training; never_called did not.
[ "$(field c_functions_with_profile)" = 1 ] || fail "c_functions_with_profile = $(field c_functions_with_profile)"
field c_not_profiled | grep -qF '"hot: 1 object(s), no compiler note (assembly)"' ||
  fail "c_not_profiled does not name the assembly: $(field c_not_profiled)"
field c_not_profiled | grep -qF 'hot: 1 object(s), other: GCC: (Debian 12.2.0-14) 12.2.0' ||
  fail "c_not_profiled does not name the other compiler: $(field c_not_profiled)"
field c_compiler | grep -q 'clang version 22' || fail "c_compiler = $(field c_compiler)"
field c_flags | grep -qF -- '-fprofile-use=/build/pgo-profile/profile.profdata' || fail "c_flags = $(field c_flags)"
echo "  ok: 3 objects, 1 by clang 22 (1 of its 2 functions trained), assembly and GCC named"

echo "== C proof: fail-closed"
# The C changed since training: clang warns `hash mismatch` and builds it without the profile.
sed 's/h \* 31 + p\[i\]/(h > 9 ? h * 31 : h) + p[i]/' hot.c >changed.c
build mismatch changed.c
grep -q 'hash mismatch' "$work/mismatch.cc-stderr" || fail "clang gave no hash mismatch on changed C"
expect_refused mismatch "hash mismatch' warning(s) in build scripts' C"
# A clang of another LLVM major (here a stand-in that says 21).
printf '#!/bin/sh\necho "clang version 21.1.8"\n' >clang-21
chmod +x clang-21
build other-llvm hot.c
CLANG_UNDER_TEST="$work/clang-21" expect_refused other-llvm "not clang of rustc's LLVM"

# A target dir that is not the build's (the wrong working directory) must not read as "no C".
if env STAGE_COMMON="$stages/common.sh" C_TARGET_DIR="$work/nowhere" TARGET=$triple READELF="$(command -v readelf)" \
  CLANG="$clang" C_OBJECTS_OUT="$work/nowhere.out" bash "$stages/c-objects.sh" >nowhere.log 2>&1; then
  fail "c-objects.sh listed a target dir that does not exist"
fi
grep -q "not the build's target dir" nowhere.log || fail "c-objects.sh: $(cat nowhere.log)"
echo "  ok: c-objects.sh refuses a directory that is not the build's target dir"

echo "== c-flags.sh"
mkdir -p staged
if PGO_CFLAGS="-fprofile-use=x" PGO_PROFILE_STAGE_DIR="$work/staged" bash "$stages/c-flags.sh" \
  >cflags.out 2>&1; then fail "c-flags.sh passed flags without the token"; fi
grep -q 'no -fprofile-use=@pgoProfile@' cflags.out || fail "c-flags.sh: $(cat cflags.out)"
if PGO_CFLAGS="-fprofile-use=@pgoProfile@" PGO_PROFILE_STAGE_DIR="$work/staged" bash "$stages/c-flags.sh" \
  >cflags.out 2>&1; then fail "c-flags.sh resolved a profile that is not staged"; fi
grep -q 'staged profile' cflags.out || fail "c-flags.sh: $(cat cflags.out)"
cp profile/gateway.profdata staged/profile.profdata
[ "$(PGO_CFLAGS="-O2 -fprofile-use=@pgoProfile@ -Wno-error=backend-plugin" PGO_PROFILE_STAGE_DIR="$work/staged" \
  bash "$stages/c-flags.sh" 2>/dev/null)" = "-O2 -fprofile-use=$work/staged/profile.profdata -Wno-error=backend-plugin" ] ||
  fail "c-flags.sh did not resolve the token"
echo "  ok: refuses no token and an unstaged profile; resolves the token"
echo "c-pgo checks: all passed"
