# shellcheck shell=bash
# Stage step of the profile-use build (<bin>-pgo-build, after cargo-build.sh, beside
# pgo-diagnostics.sh): what the build's build scripts compiled of C and C++ (`cc`, `cmake`
# crates), for the PGO gate's C proof (c-proof.sh). Every object under a build script's
# OUT_DIR is listed with the compiler its .comment names (clang of rustc's LLVM, another
# compiler a build script forced, or none: assembly), whether it was profile-instrumented, and
# the functions it defines; the build scripts' PGO diagnostics (the `cc` crate passes the
# compiler's warnings on as `cargo:warning=` lines in the build script's `output`, which cargo
# shows for workspace crates only) are kept beside it.
#
# Every input comes on this script's own command line (nix/lib/chain.nix states the contract).
#   STAGE_COMMON   path of common.sh
#   C_TARGET_DIR   cargo's target dir of the build
#   TARGET         the build's target triple (build scripts' outputs are under TARGET/release)
#   READELF        absolute path of readelf
#   CLANG          absolute path of the C compiler the build was given (its --version is kept)
#   C_OBJECTS_OUT  the directory to write: c-objects.tsv, c-diagnostics.txt, clang-version.txt
#
# c-objects.tsv, one object a line, sorted: PACKAGE<TAB>OBJECT (below OUT_DIR)<TAB>COMPILER
# (`clang N`, `other: <.comment>` or `none`)<TAB>INSTRUMENTED (1: has __llvm_prf_cnts)
# <TAB>FUNCTIONS (the defined function symbols, space-separated).
set -euo pipefail
# shellcheck source=common.sh
. "$STAGE_COMMON"
# shellcheck disable=SC2034 # read by common.sh's note and die
STAGE_NAME=c-objects

need_var C_TARGET_DIR
need_var TARGET
need_var C_OBJECTS_OUT
need_exe READELF "${READELF:-}"
need_exe CLANG "${CLANG:-}"
build_dir="$C_TARGET_DIR/$TARGET/release/build"
# The release dir exists after every build; without it this is not the build's target dir, and
# an empty list would say "no C" instead.
[ -d "$C_TARGET_DIR/$TARGET/release" ] || die "no $C_TARGET_DIR/$TARGET/release: not the build's target dir"
mkdir -p "$C_OBJECTS_OUT"
"$CLANG" --version | head -n1 >"$C_OBJECTS_OUT/clang-version.txt.tmp" || die "cannot run $CLANG --version"
: >"$C_OBJECTS_OUT/c-objects.tsv.tmp"
: >"$C_OBJECTS_OUT/c-diagnostics.txt.tmp"
if [ -d "$build_dir" ]; then
  # Each build script's run is build/<package>-<hash>/ with out/ (its OUT_DIR) and output.
  for run in "$build_dir"/*/; do
    run=${run%/}
    [ -d "$run/out" ] || continue
    package=$(basename "$run" | sed -E 's/-[0-9a-f]{16}$//')
    while IFS= read -r -d '' obj; do
      comment=$("$READELF" -p .comment "$obj" 2>/dev/null | sed -nE 's/^ *\[ *[0-9a-f]+\] +//p' | head -n1)
      case $comment in
        *clang\ version\ *) compiler="clang $(printf '%s' "$comment" | sed -nE 's/.*clang version ([0-9]+).*/\1/p')" ;;
        '') compiler=none ;;
        *) compiler="other: $comment" ;;
      esac
      instrumented=0
      "$READELF" -SW "$obj" 2>/dev/null | grep -q '__llvm_prf_cnts' && instrumented=1
      # Defined FUNC symbols (section index not UND), names only.
      functions=$("$READELF" -sW "$obj" 2>/dev/null |
        awk '$4 == "FUNC" && $7 != "UND" && $8 != "" { print $8 }' | LC_ALL=C sort -u | paste -sd ' ' -)
      printf '%s\t%s\t%s\t%s\t%s\n' "$package" "${obj#"$run/out/"}" "$compiler" "$instrumented" "$functions"
    done < <(find "$run/out" -name '*.o' -type f -print0) >>"$C_OBJECTS_OUT/c-objects.tsv.tmp"
    if [ -f "$run/output" ]; then
      # shellcheck disable=SC2154 # set by common.sh
      { grep -E '^cargo:+warning=' "$run/output" | grep -iE "$pgo_diagnostic_re" || true; } |
        sed -E "s#^cargo:+warning=#$package: #" >>"$C_OBJECTS_OUT/c-diagnostics.txt.tmp"
    fi
  done
fi
# Store paths scrubbed (an output naming one would refer to it); sorted: cargo's job order
# and the find order are not fixed.
for f in c-objects.tsv c-diagnostics.txt; do
  scrub_store_lines <"$C_OBJECTS_OUT/$f.tmp" | LC_ALL=C sort -u >"$C_OBJECTS_OUT/$f"
  rm "$C_OBJECTS_OUT/$f.tmp"
done
mv "$C_OBJECTS_OUT/clang-version.txt.tmp" "$C_OBJECTS_OUT/clang-version.txt"
note "$(wc -l <"$C_OBJECTS_OUT/c-objects.tsv") C/C++ object(s) of build scripts listed in $C_OBJECTS_OUT"
