# shellcheck shell=bash
# crane stand-in hook, after patching: a CARGO_HOME in the build dir, jobs and test threads
# from NIX_BUILD_CORES, no incremental builds, and CARGO_PROFILE=release unless the
# derivation set it. CARGO_PROFILE is a plain (unexported) variable: only cargoWithProfile,
# in this shell, reads it.
configureCargoCommonVars() {
  export CARGO_HOME=${CARGO_HOME:-$PWD/.cargo-home}
  mkdir -p "$CARGO_HOME"
  export CARGO_BUILD_JOBS=${CARGO_BUILD_JOBS:-$NIX_BUILD_CORES}
  export RUST_TEST_THREADS=${RUST_TEST_THREADS:-$NIX_BUILD_CORES}
  export CARGO_BUILD_INCREMENTAL=${CARGO_BUILD_INCREMENTAL-false}
  CARGO_PROFILE=${CARGO_PROFILE-release}
}

postPatchHooks+=(configureCargoCommonVars)
