# shellcheck shell=bash
# Stage step of every chain build, right after unpacking: give each workspace member whose
# code is not in this stage's source (a directory with a Cargo.toml and no .rs file) stub
# targets, as crane's mkDummySrc does for a dependency build. Cargo loads every member of the
# workspace, even one it does not build, and refuses a member without its targets; a stage's
# source holds only the crates it builds (nix/gateway/source.nix), so that an edit to another
# crate leaves the stage's derivation, and its cache entry, as it was.
#
# A stub is never meant to be compiled: its lib is empty and its binaries exit 1 saying why,
# so a stage that did need the crate fails at compile or run time, loudly. A member with code
# (even a broken one) is left as it is.
#
# Usage: [STAGE_COMMON=common.sh] bash stub-crates.sh SOURCE_DIR
set -euo pipefail
# shellcheck source=common.sh
. "${STAGE_COMMON:-$(dirname "${BASH_SOURCE[0]}")/common.sh}"
STAGE_NAME=${STAGE_NAME:-stub-crates}
src=${1:?usage: stub-crates.sh SOURCE_DIR}
[ -d "$src" ] || die "no source directory $src"
stub_main='fn main() { eprintln!("stub crate: its code is not in this stage'"'"'s source"); std::process::exit(1) }'
while IFS= read -r manifest; do
  grep -q '^\[package\]' "$manifest" || continue
  dir=$(dirname "$manifest")
  [ -z "$(find "$dir" -name '*.rs' -not -path '*/target/*' -print -quit)" ] || continue
  mkdir -p "$dir/src"
  : >"$dir/src/lib.rs"
  printf '%s\n' "$stub_main" >"$dir/src/main.rs"
  # Explicit target paths ([[bin]] path = "src/bin/x.rs", ...).
  sed -nE 's/^[[:space:]]*path[[:space:]]*=[[:space:]]*"([^"]+\.rs)".*/\1/p' "$manifest" |
    while IFS= read -r target; do
      mkdir -p "$dir/$(dirname "$target")"
      printf '%s\n' "$stub_main" >"$dir/$target"
    done
  note "stubbed ${dir#"$src"/} (not in this stage's source)"
done < <(find "$src" -name Cargo.toml -not -path '*/target/*')
