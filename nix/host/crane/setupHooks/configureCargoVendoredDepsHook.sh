# shellcheck shell=bash
# crane stand-in hook (crane: lib/setupHooks/configureCargoVendoredDepsHook.sh), before
# configuring: point cargo at the vendored crates through $CARGO_HOME/config.toml (the
# project's own .cargo/config.toml still wins), under crane's source name `nix-sources`.
configureCargoVendoredDepsHook() {
  local vendoredDir="${1:-${cargoVendorDir:?not defined}}"
  local cargoConfig="${2:-${CARGO_HOME:?not defined}/config.toml}"
  if [[ -f "${vendoredDir}/config.toml" ]]; then
    echo "will append ${cargoConfig} with contents of ${vendoredDir}/config.toml"
    cat "${vendoredDir}/config.toml" >>"${cargoConfig}"
    return
  fi
  echo "setting source replacement config in ${cargoConfig} using vendored directory ${vendoredDir}"
  printf '\n[source.crates-io]\nreplace-with = "nix-sources"\n[source.nix-sources]\ndirectory = "%s"\n' \
    "${vendoredDir}" >>"${cargoConfig}"
}

if [ -n "${cargoVendorDir-}" ]; then
  preConfigureHooks+=(configureCargoVendoredDepsHook)
else
  echo "cargoVendorDir not set, will not automatically configure vendored sources"
fi
