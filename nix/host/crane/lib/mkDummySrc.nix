# crane's mkDummySrc: the source cut to what decides the dependency build (Cargo.toml,
# Cargo.lock, .cargo/config.toml), every Rust target replaced by a stub. The cut is a filter
# at evaluation time, so the dummy source, and with it buildDepsOnly, does not change when a
# workspace crate's code does. Named like the real source, so both unpack to the same
# directory (cargo's fingerprints hold paths).
#
# Load-bearing, as in crane: every package's `build` points at a dummy build script in the
# store. In the store every mtime is 1, so cargo cannot see by time that a stub became the
# real source; the build-script unit that exists only in the dummy build changes the
# workspace crates' fingerprints, and cargo rebuilds them (never a stub binary), while the
# dependencies' artefacts stay fresh.
{ pkgs }:
src:
let
  base = builtins.unsafeDiscardStringContext (baseNameOf src);
  name =
    if builtins.match "[a-z0-9]{32}-.*" base == null then
      "dummy-src"
    else
      builtins.substring 33 (-1) base;
  manifests = builtins.path {
    path = src;
    name = "${name}-manifests";
    filter =
      path: type:
      type == "directory"
      || builtins.elem (baseNameOf path) [
        "Cargo.toml"
        "Cargo.lock"
        "config.toml"
      ];
  };
  dummyBuildScript = builtins.toFile "dummy-build.rs" "fn main() {}\n";
in
pkgs.runCommand name { } ''
  set -euo pipefail
  cp -R --no-preserve=mode,ownership ${manifests} $out
  cd $out
  # Every package: an empty lib and an empty main, plus each explicit `path = "*.rs"` target.
  find . -name Cargo.toml -not -path './target/*' | while IFS= read -r manifest; do
    grep -q '^\[package\]' "$manifest" || continue
    dir=$(dirname "$manifest")
    sed -i -E '/^[[:space:]]*build[[:space:]]*=/d' "$manifest"
    sed -i -E 's|^\[package\]$|&\nbuild = "${dummyBuildScript}"|' "$manifest"
    mkdir -p "$dir/src"
    : >"$dir/src/lib.rs"
    echo 'fn main() {}' >"$dir/src/main.rs"
    sed -nE 's/^[[:space:]]*path[[:space:]]*=[[:space:]]*"([^"]+\.rs)".*/\1/p' "$manifest" |
      while IFS= read -r target; do
        mkdir -p "$dir/$(dirname "$target")"
        echo 'fn main() {}' >"$dir/$target"
      done
  done
''
