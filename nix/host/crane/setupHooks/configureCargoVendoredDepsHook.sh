# shellcheck shell=bash
# crane stand-in hook, before configuring: point cargo at the vendored crates through
# $CARGO_HOME/config.toml (the project's own .cargo/config.toml still wins).
configureCargoVendoredDeps() {
  local dir=${cargoVendorDir:?cargoVendorDir is not set}
  local config=${CARGO_HOME:?CARGO_HOME is not set}/config.toml
  if [[ -f "$dir/config.toml" ]]; then
    cat "$dir/config.toml" >>"$config"
    return
  fi
  printf '\n[source.crates-io]\nreplace-with = "vendored"\n[source.vendored]\ndirectory = "%s"\n' \
    "$dir" >>"$config"
}

if [ -n "${cargoVendorDir-}" ]; then
  preConfigureHooks+=(configureCargoVendoredDeps)
fi
