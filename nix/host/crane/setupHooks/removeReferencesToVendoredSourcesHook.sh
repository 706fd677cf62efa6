# shellcheck shell=bash
# crane stand-in hook (crane: lib/setupHooks/removeReferencesToVendoredSourcesHook.sh), after
# installing: blank the store hashes of the vendored sources (the vendor dir and every crate
# its symlinks point to) in every output file, with one case-insensitive sed script, as crane
# does. Vendored crates outside the store (the host builder's `cargo vendor`) give no hash:
# the script then only names crane's placeholder hash, and changes nothing. crane's signing
# step (@signIfRequired@) is empty on Linux.
removeReferencesToVendoredSources() {
  local installLocation="${1:-${out:?not defined}}"
  local vendoredDir="${2:-${cargoVendorDir:?not defined}}"
  (
    exec 3>&1
    echo stripping references to cargoVendorDir from:
    find "${installLocation}" -type f -print0 |
      sort -z |
      tee -a >(tr '\0' '\n' >&3) |
      xargs -0 --no-run-if-empty sed -i'' -f <(
        echo -n 's!/nix/store/\(eeeeeeeeeeeeeeeeeeeeeeeeeeeeeeee'
        (
          echo "${vendoredDir}"
          find -L "${vendoredDir}" -mindepth 1 -maxdepth 1 -type d -print0 |
            xargs -0 -I DIR find -H DIR -type l -exec readlink '{}' \;
        ) |
          grep --ignore-case --only-matching '/nix/store/[a-z0-9]\{32\}' |
          sort -u |
          while read -r crateSource; do
            echo -n '\|'"${crateSource#/nix/store/}"
          done || true
        echo -n '\)!/nix/store/eeeeeeeeeeeeeeeeeeeeeeeeeeeeeeee!gi'
      )
    echo 'stripping references done'
  )
}

if [ -n "${doNotRemoveReferencesToVendorDir-}" ]; then
  echo "removeReferencesToVendoredSources disabled"
elif [ -n "${cargoVendorDir-}" ]; then
  postInstallHooks+=(removeReferencesToVendoredSources)
else
  echo "cargoVendorDir not set, will not attempt to remove any references"
fi
