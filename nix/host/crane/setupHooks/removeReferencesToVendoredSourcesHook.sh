# shellcheck shell=bash
# crane stand-in hook, after installing: blank the vendored sources' store hashes in every
# output file. Vendored crates outside the store (cargo vendor on the host) leave nothing to do.
removeReferencesToVendoredSources() {
  local dir=${1:-$out} hashes h
  hashes=$(printf '%s\n' "${cargoVendorDir:-}" | grep -oE '/nix/store/[a-z0-9]{32}' || true)
  if [ -z "$hashes" ]; then
    echo "removeReferencesToVendoredSources: ${cargoVendorDir:-(none)} is not in the store"
    return 0
  fi
  for h in $hashes; do
    find "$dir" -type f -print0 | xargs -0 -r sed -i "s|$h|/nix/store/eeeeeeeeeeeeeeeeeeeeeeeeeeeeeeee|g"
  done
}

if [ -z "${doNotRemoveReferencesToVendorDir-}" ] && [ -n "${cargoVendorDir-}" ]; then
  postInstallHooks+=(removeReferencesToVendoredSources)
fi
