# shellcheck shell=bash
# crane stand-in hook, after installing: blank the toolchain's store hash in every output
# file (panic messages can name the standard library's sources), so the runtime closure does
# not pull in the toolchain. A toolchain outside the store (the host's) leaves nothing to do.
removeReferencesToRustToolchain() {
  local dir=${1:-$out} sysroot hash
  sysroot=$(rustc --print sysroot)
  hash=$(printf '%s\n' "$sysroot" | grep -oE '/nix/store/[a-z0-9]{32}' || true)
  if [ -z "$hash" ]; then
    echo "removeReferencesToRustToolchain: $sysroot is not in the store"
    return 0
  fi
  find "$dir" -type f -print0 | xargs -0 -r sed -i "s|$hash|/nix/store/eeeeeeeeeeeeeeeeeeeeeeeeeeeeeeee|g"
}

if [ -z "${doNotRemoveReferencesToRustToolchain-}" ]; then
  postInstallHooks+=(removeReferencesToRustToolchain)
fi
