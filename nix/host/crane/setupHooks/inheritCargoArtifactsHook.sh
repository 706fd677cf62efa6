# shellcheck shell=bash
# crane stand-in hook, after patching (so target/ is newer than the sources): restore a
# dependency build's target/ (its target.tar.zst) before anything compiles.
inheritCargoArtifacts() {
  local from=${1:-${cargoArtifacts:?cargoArtifacts is not set}}
  local dir=${2:-${CARGO_TARGET_DIR:-target}}
  [ -f "$from/target.tar.zst" ] || {
    echo "inheritCargoArtifacts: $from has no target.tar.zst" >&2
    return 1
  }
  echo "restoring cargo artifacts from $from to $dir"
  mkdir -p "$dir"
  zstd -d "$from/target.tar.zst" --stdout | tar -x -C "$dir"
}

if [ -n "${cargoArtifacts-}" ]; then
  postPatchHooks+=(inheritCargoArtifacts)
fi
