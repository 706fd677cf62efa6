# shellcheck shell=bash
# Step of the PGO gate (pgo-gate.sh runs it): the C and C++ of build scripts in the
# profile-use build, held against the profile. Prints the proof's C fields, one
# `KEY<TAB>JSON` line each, on stdout:
#   c_compiler                the build scripts' compiler (clang --version)
#   c_objects                 objects under the build scripts' OUT_DIRs (c-objects.sh)
#   c_objects_clang           of those, compiled by the pinned clang: profile-used
#   c_not_profiled            what takes no profile, by package: objects another compiler made
#                             (a build script forcing its own) and objects no compiler signed
#                             (assembly); named here, never silently left out
#   c_functions               functions the clang objects define
#   c_functions_with_profile  of those, executed in the training (the profile's covered
#                             functions; a static function is `file;name` there)
#   c_packages                the packages with C objects
#   c_hash_mismatch_warnings  clang's `hash mismatch` warnings (0, or the gate failed)
# Fails closed, as the gate does for Rust: on a clang of another LLVM major than rustc's
# (its profile format and rustc's differ), and on `hash mismatch` in any build script's C (the
# profile was trained on other C source or flags; clang only warns and builds without it).
#
# Every input comes on this script's own command line:
#   STAGE_COMMON   path of common.sh
#   C_OBJECTS_DIR  the build's c-objects.sh output (c-objects.tsv, c-diagnostics.txt,
#                  clang-version.txt)
#   PROFILE        the .profdata the build used
#   LLVM_PROFDATA  absolute path of llvm-profdata
#   RUSTC_LLVM     rustc's LLVM version (`rustc -vV`)
set -euo pipefail
# shellcheck source=common.sh
. "$STAGE_COMMON"
# shellcheck disable=SC2034 # read by common.sh's note and die
STAGE_NAME=${STAGE_NAME:-c-proof}
need_var C_OBJECTS_DIR
need_var PROFILE
need_var RUSTC_LLVM
need_exe LLVM_PROFDATA "${LLVM_PROFDATA:-}"
objects="$C_OBJECTS_DIR/c-objects.tsv"
diagnostics="$C_OBJECTS_DIR/c-diagnostics.txt"
[ -f "$objects" ] || die "the PGO build listed no C objects (c-objects.sh): $objects"
[ -f "$diagnostics" ] || die "the PGO build kept no C diagnostics (c-objects.sh): $diagnostics"
nonempty "$C_OBJECTS_DIR/clang-version.txt" "the build scripts' clang --version"
clang_version=$(head -n1 "$C_OBJECTS_DIR/clang-version.txt")
clang_major=$(printf '%s\n' "$clang_version" | sed -nE 's/.*clang version ([0-9]+).*/\1/p')
[ "$clang_major" = "${RUSTC_LLVM%%.*}" ] ||
  die "the build scripts' C compiler is '$clang_version', not clang of rustc's LLVM ${RUSTC_LLVM}: its profile data and rustc's do not mix (give the chain the clang of rustc's LLVM major)"

mismatch=$(grep -c 'hash mismatch' "$diagnostics" || true)
if [ "$mismatch" -gt 0 ]; then
  grep 'hash mismatch' "$diagnostics" | head -n 20 >&2
  die "$mismatch 'hash mismatch' warning(s) in build scripts' C: the profile was trained on other C source or flags (clang builds that code without the profile)"
fi

total=$(grep -c . "$objects" || true)
clang_objects=$(awk -F'\t' -v c="clang $clang_major" '$3 == c' "$objects" | grep -c . || true)
# What cannot take the profile, by package and reason: "ring: 12 object(s), no compiler
# note (assembly)", "foo: 3 object(s), other: GCC: (Debian 12.2.0-14) 12.2.0".
not_profiled=$(awk -F'\t' -v c="clang $clang_major" '$3 != c {
    n[$1 "\t" ($3 == "none" ? "no compiler note (assembly)" : $3)]++
  } END { for (k in n) { split(k, a, "\t"); print a[1] ": " n[k] " object(s), " a[2] } }' \
  "$objects" | LC_ALL=C sort)
packages=$(cut -f1 "$objects" | LC_ALL=C sort -u)
# The clang objects' functions against the profile's executed ones (static functions are
# `file;name` in an IR profile: compared by name).
work=$(mktemp -d "${TMPDIR:-/tmp}/c-proof.XXXXXX")
trap 'rm -rf "$work"' EXIT
awk -F'\t' -v c="clang $clang_major" '$3 == c { n = split($5, f, " "); for (i = 1; i <= n; i++) print f[i] }' \
  "$objects" | LC_ALL=C sort -u >"$work/functions"
"$LLVM_PROFDATA" show --covered "$PROFILE" >"$work/covered.raw" 2>"$work/show.err" || {
  cat "$work/show.err" >&2
  die "llvm-profdata show --covered failed on $PROFILE"
}
sed -E 's/.*;//' "$work/covered.raw" | LC_ALL=C sort -u >"$work/covered"
functions=$(grep -c . "$work/functions" || true)
with_profile=$(LC_ALL=C comm -12 "$work/functions" "$work/covered" | grep -c . || true)

# json_list: stdin's lines as a one-line JSON array of strings.
json_list() {
  local sep='' line
  printf '['
  while IFS= read -r line; do
    [ -n "$line" ] || continue
    printf '%s%s' "$sep" "$(json_str "$line")"
    sep=', '
  done
  printf ']'
}
printf 'c_compiler\t%s\n' "$(json_str "$clang_version")"
printf 'c_objects\t%s\n' "$total"
printf 'c_objects_clang\t%s\n' "$clang_objects"
printf 'c_not_profiled\t%s\n' "$(printf '%s\n' "$not_profiled" | json_list)"
printf 'c_functions\t%s\n' "$functions"
printf 'c_functions_with_profile\t%s\n' "$with_profile"
printf 'c_packages\t%s\n' "$(printf '%s\n' "$packages" | json_list)"
printf 'c_hash_mismatch_warnings\t%s\n' "$mismatch"
[ -z "$not_profiled" ] || note "C that takes no profile: $(printf '%s\n' "$not_profiled" | paste -sd ';' -)"
note "C: $clang_objects of $total object(s) compiled by $clang_version; $with_profile of $functions function(s) executed in the training"
