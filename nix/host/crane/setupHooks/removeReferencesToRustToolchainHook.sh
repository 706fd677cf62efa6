# shellcheck shell=bash
# crane stand-in hook (crane: lib/setupHooks/removeReferencesToRustToolchainHook.sh), after
# installing: blank the toolchain's store hash in every output file (panic messages can name
# the standard library's sources), so the runtime closure does not pull in the toolchain. As
# in crane, a sysroot outside the store fails the build (grep finds no store hash): the host
# builder adds the toolchain to the store first, as fenix's is (scripts/chain-host-env.sh).
removeReferencesToRustToolchain() {
  local installLocation="${1:-${out:?not defined}}"
  echo "stripping references to Rust toolchain"
  local rustToolchainLocation rustToolchainStoreHash
  rustToolchainLocation=$(rustc --print sysroot)
  echo "Rust toolchain at: $rustToolchainLocation"
  rustToolchainStoreHash=$(echo "$rustToolchainLocation" | grep --only-matching '/nix/store/[a-z0-9]\{32\}')
  find "${installLocation}" -type f -print0 | xargs -0 --no-run-if-empty sed -i'' "s|${rustToolchainStoreHash}|/nix/store/eeeeeeeeeeeeeeeeeeeeeeeeeeeeeeee|g"
  echo "stripping Rust toolchain references done"
}

if [ -n "${doNotRemoveReferencesToRustToolchain-}" ]; then
  echo "removeReferencesToRustToolchain disabled"
else
  postInstallHooks+=(removeReferencesToRustToolchain)
fi
