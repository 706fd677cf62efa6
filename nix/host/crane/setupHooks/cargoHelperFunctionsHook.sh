# shellcheck shell=bash
# crane stand-in hook: `cargo` echoes each invocation; `cargoWithProfile SUBCOMMAND ARGS`
# adds --release (CARGO_PROFILE=release) or --profile CARGO_PROFILE after the subcommand.
cargo() {
  (
    set -x
    command cargo "$@"
  )
}

cargoWithProfile() {
  local profileArgs=()
  if [[ "${CARGO_PROFILE:-}" == "release" ]]; then
    profileArgs=(--release)
  elif [[ -n "${CARGO_PROFILE:-}" ]]; then
    profileArgs=(--profile "$CARGO_PROFILE")
  fi
  cargo "$1" "${profileArgs[@]}" "${@:2}"
}
