#!/usr/bin/env bash
# The whole PGO + BOLT chain WITHOUT Nix, with host tools (host rustc/cargo, Debian's
# llvm-22, bolt-22, libbolt-22-dev, clang-22): plain, instrumented, profile, PGO (--emit-relocs),
# BOLT instrument + profile, PGO+BOLT, each binary copied out, proofs written and checked.
# It runs the same stage scripts (nix/lib/stages/*.sh) as the Nix chain.
#
# Usage: scripts/chain-local.sh [OUTDIR]        (default: ./out/chain-local)
# Environment (all optional):
#   LLVM_BIN       LLVM 22 bin dir (default /usr/lib/llvm-22/bin); or each tool by path:
#   LLVM_PROFDATA, LLVM_BOLT, MERGE_FDATA, BOLT_RT_LIB, READELF
#   TRAINER        a built trainer (default: built here, release, without fat LTO)
#   SHAPES         the shapes directory (default ./shapes): the gateway's workload is
#                  `trainer workload --shapes SHAPES BIN`, as in the Nix chain
#                  (nix/gateway/workload.nix)
#   GATEWAY_SRC    the cargo workspace whose gateway the chain builds (default: this one): another
#                  commit's checkout, through this commit's stages, trainer and shapes
#                  (scripts/bench-hotpath.sh compares two)
#   RESUME=1       keep the stages an earlier run into OUTDIR published (each stage's output
#                  is published only on success) and run the rest
#   TARGET_BASE    persistent cargo target dirs, one per flag set (default ./target/chain-local)
#   CLANG, CLANGXX C and C++ compilers of build scripts (`cc`, `cmake` crates), every stage
#                  (default $LLVM_BIN/clang, clang++: rustc's LLVM, so C trains into the same
#                  profile; the Nix chain's tools.clang). C_PGO=0: the host's cc without a
#                  profile, as the chain before cross-language PGO (BENCHMARKS.md's "before")
#   ALLOCATOR      the gateway's global allocator: jemalloc, mimalloc or system (the cargo
#                  feature alloc-NAME); default: the crate's default feature. The Nix chain's
#                  `allocator` argument (nix/gateway/chain-args.nix) does the same.
#
# Each stage writes OUTDIR/<stage>.tmp and renames it only on success: a failed stage leaves
# no result. Outside Nix the profile is copied to a content-named file before use, because
# cargo fingerprints the RUSTFLAGS string, not the profile's content, and would otherwise
# reuse stale PGO artifacts from the persistent target dir.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
outdir=${1:-$repo/out/chain-local}
outdir=$(mkdir -p "$outdir" && cd "$outdir" && pwd)
stages="$repo/nix/lib/stages"
export STAGE_COMMON="$stages/common.sh" STAGE_WORKLOAD="$stages/workload.sh"

LLVM_BIN=${LLVM_BIN:-/usr/lib/llvm-22/bin}
LLVM_PROFDATA=${LLVM_PROFDATA:-$LLVM_BIN/llvm-profdata}
LLVM_BOLT=${LLVM_BOLT:-$LLVM_BIN/llvm-bolt}
MERGE_FDATA=${MERGE_FDATA:-$LLVM_BIN/merge-fdata}
BOLT_RT_LIB=${BOLT_RT_LIB:-$(dirname "$LLVM_BIN")/lib/libbolt_rt_instr.a}
READELF=${READELF:-$(command -v readelf || echo /usr/bin/readelf)}
CLANG=${CLANG:-$LLVM_BIN/clang}
CLANGXX=${CLANGXX:-$LLVM_BIN/clang++}
SHAPES=${SHAPES:-$repo/shapes}
TARGET_BASE=${TARGET_BASE:-$repo/target/chain-local}
gateway_src=${GATEWAY_SRC:-$repo}
gateway_args="-p gateway --bin gateway"
case ${ALLOCATOR:-} in
  '') ;;
  jemalloc | mimalloc | system) gateway_args+=" --no-default-features --features alloc-$ALLOCATOR" ;;
  *) echo "ALLOCATOR=$ALLOCATOR: choose jemalloc, mimalloc or system" >&2; exit 1 ;;
esac
export LLVM_PROFDATA LLVM_BOLT MERGE_FDATA BOLT_RT_LIB READELF SHAPES

rustc_vv=$(rustc -vV)
host_triple=$(printf '%s\n' "$rustc_vv" | sed -n 's/^host: //p')
rustc_major=$(printf '%s\n' "$rustc_vv" | sed -nE 's/^LLVM version: ([0-9]+).*/\1/p')
profdata_major=$("$LLVM_PROFDATA" --version | grep -oE 'version [0-9]+' | head -n1 | grep -oE '[0-9]+')
if [ "$rustc_major" != "$profdata_major" ]; then
  echo "rustc is LLVM $rustc_major, $LLVM_PROFDATA is LLVM $profdata_major (apt-get install llvm-22)" >&2
  exit 1
fi

timings="$outdir/stage-timings.txt"
[ "${RESUME:-0}" = 1 ] || : >"$timings"
# run_stage NAME SCRIPT [VAR=VALUE...]: one stage into OUTDIR/NAME, published on success.
# SCRIPT is a path, or a name under nix/lib/stages/. With RESUME=1 a stage whose OUTDIR/NAME
# exists (published, so it succeeded) is kept: a run that failed late goes on from there.
run_stage() {
  local name=$1 script=$2 t0
  shift 2
  if [ "${RESUME:-0}" = 1 ] && [ -d "$outdir/$name" ]; then
    echo "$name: kept from an earlier run (RESUME=1)"
    return
  fi
  case $script in /*) ;; *) script="$stages/$script" ;; esac
  t0=$(date +%s)
  rm -rf "${outdir:?}/$name" "$outdir/$name.tmp"
  env STAGE_NAME="$name" OUT_DIR="$outdir/$name.tmp" "$@" bash "$script"
  mv "$outdir/$name.tmp" "$outdir/$name"
  printf '%-22s %5d s  %s\n' "$name" "$(($(date +%s) - t0))" "$outdir/$name" | tee -a "$timings"
}
# v0 mangling in every cargo stage, as nix/lib/chain.nix's default symbolMangling.
mangling="-Csymbol-mangling-version=v0"
# The C of build scripts (`cc`, `cmake` crates) through the same clang in every stage, with the
# stage's C flags (CFLAGS, the 4th argument), as nix/lib/chain.nix passes them: the cc crate
# reads CC_<target>/CFLAGS_<target> (and CXX/CXXFLAGS), and only for the --target build.
t_env=${host_triple//-/_}
cargo_stage() {
  local name=$1 flags=$2 cflags=$3
  shift 3
  local c_env=()
  if [ "${C_PGO:-1}" != 0 ]; then
    c_env=("CC_$t_env=$CLANG" "CXX_$t_env=$CLANGXX" "CFLAGS_$t_env=$cflags" "CXXFLAGS_$t_env=$cflags")
  fi
  run_stage "$name" "$repo/scripts/cargo-stage.sh" SRC="$gateway_src" BIN_NAME=gateway RUSTFLAGS="$mangling${flags:+ $flags}" \
    CARGO_BUILD_TARGET="$host_triple" CARGO_EXTRA_ARGS="$gateway_args" \
    CARGO_TARGET_DIR="$TARGET_BASE/$name" "${c_env[@]}" "$@"
}

if [ -z "${TRAINER:-}" ]; then
  # A tool, not the product: no fat LTO (minutes on 2 cores for nothing the profile needs).
  run_stage trainer "$repo/scripts/cargo-stage.sh" SRC="$repo" BIN_NAME=trainer RUSTFLAGS= \
    CARGO_EXTRA_ARGS="-p trainer --bin trainer" CARGO_TARGET_DIR="$TARGET_BASE/trainer" \
    CARGO_PROFILE_RELEASE_LTO=false CARGO_PROFILE_RELEASE_CODEGEN_UNITS=16
  TRAINER="$outdir/trainer/bin/trainer"
fi
export TRAINER

# The gateway's workload and its floors, as nix/gateway/chain-args.nix gives them to the chain.
# `trainer shapes` validates the shapes and counts the training ones: one profile each.
training=$("$TRAINER" shapes --shapes "$SHAPES" 2>&1 | sed -nE 's/.* ([0-9]+) training, .*/\1/p' | tail -n1)
[ "${training:-0}" -gt 0 ] || { echo "no training shapes in $SHAPES" >&2; exit 1; }
workload="$outdir/gateway-workload"
printf '#!/usr/bin/env bash\nexec %q workload --shapes %q "$@"\n' "$TRAINER" "$SHAPES" >"$workload"
chmod +x "$workload"
export WORKLOAD="$workload" BIN_NAME=gateway MIN_PROFILES="$training"

# DWARF 4 in every stage, as nix/lib/chain.nix's cBaseFlags: valgrind 3.19 cannot read clang
# 22's DWARF 5.
c_base="-fdebug-default-version=4"
cargo_stage gateway "" "$c_base"
cargo_stage gateway-instrumented "-Cprofile-generate=/tmp/gateway-pgo" "$c_base -fprofile-generate=/tmp/gateway-pgo"
run_stage gateway-profile pgo-profile.sh BIN="$outdir/gateway-instrumented/bin/gateway" \
  MIN_PROFILE_BYTES=65536

sha=$(sha256sum "$outdir/gateway-profile/gateway.profdata" | cut -c1-16)
profile="$outdir/profiles/merged-$sha.profdata"
mkdir -p "$outdir/profiles"
cp "$outdir/gateway-profile/gateway.profdata" "$profile"
pgo_flags="-Cprofile-use=$profile -Cllvm-args=-pgo-warn-missing-function -Clink-args=-Wl,--emit-relocs"
c_pgo_flags="$c_base -fprofile-use=$profile -Wno-error=backend-plugin"
cargo_stage gateway-pgo-build "$pgo_flags" "$c_pgo_flags" CARGO_STDERR_LOG="$outdir/gateway-pgo-build.cargo-stderr.log"
# What the build keeps for its gate, then the gate as a stage of its own, with every input on
# its command line, as in the Nix chain (nix/lib/chain.nix).
env CARGO_STDERR_LOG="$outdir/gateway-pgo-build.cargo-stderr.log" \
  DIAGNOSTICS_OUT="$outdir/gateway-pgo-build/share/gateway/pgo-build" bash "$stages/pgo-diagnostics.sh"
c_proof=()
if [ "${C_PGO:-1}" != 0 ]; then
  env C_TARGET_DIR="$TARGET_BASE/gateway-pgo-build" TARGET="$host_triple" CLANG="$CLANG" \
    C_OBJECTS_OUT="$outdir/gateway-pgo-build/share/gateway/pgo-build" bash "$stages/c-objects.sh"
  c_proof=(C_PROOF="$stages/c-proof.sh" C_PGO_FLAGS="$c_pgo_flags")
fi
run_stage gateway-pgo pgo-gate.sh PGO_BUILD="$outdir/gateway-pgo-build" PROFILE_DIR="$outdir/gateway-profile" \
  PGO_RUSTFLAGS="$mangling $pgo_flags" TARGET="$host_triple" SYMBOL_MANGLING=v0 \
  CARGO_ARGS="--release --locked $gateway_args" "${c_proof[@]}"

run_stage gateway-bolt-profile bolt-profile.sh BIN="$outdir/gateway-pgo/bin/gateway" \
  MIN_FDATA_BYTES=16384
# KEEP_DEBUG_INFO=0 and the flags of nix/lib/bolt-flags.txt: the gateway's chain's
# (nix/gateway/chain-args.nix keepDebugInfo = false, nix/lib/chain.nix boltFlags).
run_stage gateway-pgo-bolt bolt-optimize.sh PGO_BIN="$outdir/gateway-pgo/bin/gateway" \
  PGO_PROOF="$outdir/gateway-pgo/share/gateway/pgo-proof.json" \
  FDATA="$outdir/gateway-bolt-profile/gateway.fdata" \
  FDATA_MANIFEST="$outdir/gateway-bolt-profile/manifest.json" BIN_NAME=gateway \
  PLAIN_BIN="$outdir/gateway/bin/gateway" KEEP_DEBUG_INFO=0 \
  BOLT_FLAGS="$(grep -vE '^\s*(#|$)' "$repo/nix/lib/bolt-flags.txt" | paste -sd ' ' -)"
STAGE_NAME=check-pgo-proof RESULT="$outdir/gateway-pgo-bolt" PROFILE_DIR="$outdir/gateway-profile" \
  BOLT_PROFILE="$outdir/gateway-bolt-profile" BIN_NAME=gateway bash "$stages/check-proofs.sh"

echo
echo "plain:            $outdir/gateway/bin/gateway"
echo "pgo:              $outdir/gateway-pgo/bin/gateway"
echo "optimized binary: $outdir/gateway-pgo-bolt/bin/gateway"
echo "proofs:           $outdir/gateway-pgo-bolt/share/gateway/pgo-proof.json"
echo "                  $outdir/gateway-pgo-bolt/share/gateway/bolt-proof.json"
echo "stage timings:    $timings"
