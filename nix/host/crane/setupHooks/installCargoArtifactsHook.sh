# shellcheck shell=bash
# crane stand-in hook (crane: lib/setupHooks/installCargoArtifactsHook.sh), after installing
# (with doInstallCargoArtifacts=1): target/ archived as $out/target.tar.zst with crane's tar
# and zstd arguments (entries sorted, mtime 1, owner 0, u+w, no atime/ctime). With previous
# artifacts crane archives only the newer files and links the old archive as .prev; only
# buildDepsOnly archives here, and it has none (cargoArtifacts = null), so the stand-in
# refuses that case and crane's other mode (use-symlink) rather than model them loosely.
prepareAndInstallCargoArtifactsDir() {
  local dir="${1:-${out}}"
  local cargoTargetDir="${2:-${CARGO_TARGET_DIR:-target}}"
  local mode="${3:-${installCargoArtifactsMode:-use-zstd}}"
  local prevCargoArtifacts="${4:-${cargoArtifacts:-}}"

  mkdir -p "${dir}"
  if [ "${mode}" != use-zstd ]; then
    echo "unknown mode: \"${mode}\" (the stand-in models crane's use-zstd only)"
    false
  fi
  if [ -n "${prevCargoArtifacts}" ]; then
    echo "installCargoArtifacts: previous artifacts ${prevCargoArtifacts}: crane's incremental archive is not modelled by the stand-in" >&2
    return 1
  fi

  local dest="${dir}/target.tar.zst"
  (
    export SOURCE_DATE_EPOCH=1
    if [[ -d "${cargoTargetDir}" ]]; then
      >&2 echo "no previous artifacts found, compressing and installing full archive of ${cargoTargetDir} to ${dest}"
      # shellcheck disable=SC2086 # zstdCompressionExtraArgs is a word list, as in crane
      (
        cd "${cargoTargetDir}" || false
        tar --sort=name \
          --mtime="@${SOURCE_DATE_EPOCH}" \
          --owner=0 \
          --group=0 \
          --mode=u+w \
          --numeric-owner \
          --pax-option=exthdr.name=%d/PaxHeaders/%f,delete=atime,delete=ctime \
          -c .
      ) | zstd "-T${NIX_BUILD_CORES:-0}" -o "${dest}" ${zstdCompressionExtraArgs:-}
    else
      echo "'${cargoTargetDir}' does not exist, will NOT output to ${dest}"
    fi
  )
}

if [ "1" = "${doInstallCargoArtifacts-}" ]; then
  postInstallHooks+=(prepareAndInstallCargoArtifactsDir)
fi
