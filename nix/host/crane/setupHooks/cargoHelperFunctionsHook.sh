# shellcheck shell=bash
# crane stand-in hook (crane: lib/setupHooks/cargoHelperFunctionsHook.sh): `cargo` echoes each
# invocation (set -x in a subshell); `cargoWithProfile SUBCOMMAND ARGS` puts --release
# (CARGO_PROFILE=release) or --profile CARGO_PROFILE right after the subcommand.
cargo() {
  (
    set -x
    command cargo "$@"
  )
}

cargoWithProfile() {
  local profileArgs=()
  if [[ "${CARGO_PROFILE}" == "release" ]]; then
    profileArgs+=("--release")
  elif [[ -n "${CARGO_PROFILE:-}" ]]; then
    profileArgs+=("--profile" "${CARGO_PROFILE}")
  fi
  cargo "${@:1:1}" "${profileArgs[@]}" "${@:2}"
}
