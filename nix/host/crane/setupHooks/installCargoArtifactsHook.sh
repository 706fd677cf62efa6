# shellcheck shell=bash
# crane stand-in hook, after installing (with doInstallCargoArtifacts=1): target/ archived as
# $out/target.tar.zst, entries sorted, one mtime, owner 0, as crane's default mode does.
prepareAndInstallCargoArtifactsDir() {
  local dest=${1:-$out}
  local dir=${2:-${CARGO_TARGET_DIR:-target}}
  mkdir -p "$dest"
  [ -d "$dir" ] || {
    echo "installCargoArtifacts: no $dir, nothing archived"
    return 0
  }
  (cd "$dir" && tar --sort=name --mtime=@1 --owner=0 --group=0 --numeric-owner -c .) |
    zstd -q "-T${NIX_BUILD_CORES:-0}" -o "$dest/target.tar.zst"
}

if [ "1" = "${doInstallCargoArtifacts-}" ]; then
  postInstallHooks+=(prepareAndInstallCargoArtifactsDir)
fi
