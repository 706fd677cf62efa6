# shellcheck shell=bash
# crane stand-in hook (crane: lib/setupHooks/inheritCargoArtifactsHook.sh), after patching
# (so target/ is newer than the sources): restore a dependency build's target/ from its
# target.tar.zst (and, first, the .prev archive it links to) before anything compiles.
# crane also restores a plain target/ directory (installCargoArtifactsMode = "use-symlink",
# with rsync and symlinks); no build of ours makes one, so the stand-in refuses it rather than
# model it loosely.
inheritCargoArtifacts() {
  local preparedArtifacts="${1:-${cargoArtifacts:?not defined}}"
  local cargoTargetDir="${2:-${CARGO_TARGET_DIR:-target}}"

  if [ -d "${preparedArtifacts}" ]; then
    if [ -f "${preparedArtifacts}/target.tar.zst" ]; then
      preparedArtifacts="${preparedArtifacts}/target.tar.zst"
    elif [ -d "${preparedArtifacts}/target" ]; then
      echo "inheritCargoArtifacts: ${preparedArtifacts}/target is a directory (crane's use-symlink mode): not modelled by the stand-in" >&2
      return 1
    fi
  fi

  mkdir -p "${cargoTargetDir}"
  if [ -f "${preparedArtifacts}" ]; then
    if [ -f "${preparedArtifacts}.prev" ]; then
      inheritCargoArtifacts "$(realpath "${preparedArtifacts}.prev")" "$cargoTargetDir"
    fi
    echo "decompressing cargo artifacts from ${preparedArtifacts} to ${cargoTargetDir}"
    zstd -d "${preparedArtifacts}" --stdout | tar -x -C "${cargoTargetDir}"
  else
    echo "unable to copy cargo artifacts, \"${preparedArtifacts}\" looks invalid"
    false
  fi
}

if [ -n "${cargoArtifacts-}" ]; then
  postPatchHooks+=(inheritCargoArtifacts)
else
  echo "cargoArtifacts not set, will not reuse any cargo artifacts"
fi
