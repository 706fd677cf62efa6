# shellcheck shell=bash
# crane stand-in hook (crane: lib/setupHooks/configureCargoCommonVarsHook.sh), after patching:
# a CARGO_HOME in the build dir, jobs and test threads from NIX_BUILD_CORES, no incremental
# builds, CARGO_PROFILE=release unless the derivation set it (a plain, unexported variable:
# only cargoWithProfile, in this shell, reads it), and each __CRANE_EXPORT_X exported as X
# unless X is set (crane's cross-compilation variables; a native build has none).
configureCargoCommonVars() {
  echo "Executing configureCargoCommonVars"
  export CARGO_HOME=${CARGO_HOME:-${PWD}/.cargo-home}
  mkdir -p "${CARGO_HOME}"
  export CARGO_BUILD_JOBS=${CARGO_BUILD_JOBS:-$NIX_BUILD_CORES}
  export RUST_TEST_THREADS=${RUST_TEST_THREADS:-$NIX_BUILD_CORES}
  export CARGO_BUILD_INCREMENTAL=${CARGO_BUILD_INCREMENTAL-false}
  CARGO_PROFILE=${CARGO_PROFILE-release}

  local craneVar var
  for craneVar in ${!__CRANE_EXPORT_*}; do
    var="${craneVar#__CRANE_EXPORT_}"
    if [ -z "${!var}" ]; then
      echo "${var}=${!craneVar}"
      export "${var}"="${!craneVar}"
    fi
  done
}

postPatchHooks+=(configureCargoCommonVars)
