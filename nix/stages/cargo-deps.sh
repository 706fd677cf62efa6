# shellcheck shell=bash
# Stage (host builder): the dependencies of one flag set, built once and kept as a target-dir
# tarball, like crane's buildDepsOnly. The workspace's own sources are replaced by stubs, so
# this derivation depends on the manifests and Cargo.lock only: a change of gateway code
# rebuilds the gateway crate, not hyper and tokio. Dependencies must be built with the same
# RUSTFLAGS as the final build (they are instrumented and profile-used too), hence one per
# flag set. tar keeps the mtimes (the store resets them to 1) so cargo's fingerprints hold.
#
# Environment: as cargo-build.sh (SRC is the manifests-only source), OUT_DIR gets target.tar.
set -euo pipefail
# shellcheck source=common.sh
. "$STAGE_COMMON"
stage_start
need_var SRC
OUT_DIR=${OUT_DIR:-${out:-}}
need_var OUT_DIR
work=${TMPDIR:-/tmp}

cp -R --no-preserve=mode,ownership "$SRC" "$work/src"
cd "$work/src"
# Stub every target of every workspace member: lib.rs, main.rs and each explicit `path =`.
while IFS= read -r manifest; do
  dir=$(dirname "$manifest")
  mkdir -p "$dir/src"
  : >"$dir/src/lib.rs"
  echo 'fn main() {}' >"$dir/src/main.rs"
  sed -nE 's/^[[:space:]]*path[[:space:]]*=[[:space:]]*"([^"]+\.rs)".*/\1/p' "$manifest" |
    while IFS= read -r target; do
      mkdir -p "$dir/$(dirname "$target")"
      echo 'fn main() {}' >"$dir/$target"
    done
done < <(find . -mindepth 2 -name Cargo.toml -not -path './target/*')

if [ -n "${VENDOR_DIR:-}" ]; then
  export CARGO_HOME="$work/cargo-home"
  mkdir -p "$CARGO_HOME"
  printf '[source.crates-io]\nreplace-with = "vendored-sources"\n\n[source.vendored-sources]\ndirectory = "%s"\n' \
    "$VENDOR_DIR" >"$CARGO_HOME/config.toml"
fi
export RUSTFLAGS=${RUSTFLAGS:-}
# An empty CARGO_BUILD_TARGET is an error to cargo ("target was empty"): unset it.
[ -n "${CARGO_BUILD_TARGET:-}" ] || unset CARGO_BUILD_TARGET
note "deps: RUSTFLAGS='$RUSTFLAGS' target='${CARGO_BUILD_TARGET:-host}' args='${CARGO_EXTRA_ARGS:-}'"
# shellcheck disable=SC2086 # CARGO_EXTRA_ARGS is a word list by design
cargo build --release --locked --offline ${CARGO_EXTRA_ARGS:-} 2>"$work/deps.log" || {
  cat "$work/deps.log" >&2
  die "dependency build failed"
}
mkdir -p "$OUT_DIR"
tar -cf "$OUT_DIR/target.tar" target
note "target.tar: $(bytes_of "$OUT_DIR/target.tar") bytes"
stage_done
