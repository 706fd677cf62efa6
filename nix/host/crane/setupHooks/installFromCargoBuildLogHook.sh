# shellcheck shell=bash
# crane stand-in hook (crane: lib/setupHooks/installFromCargoBuildLogHook.sh): right after
# the build (postBuild), copy the workspace's binaries and dynamic/static libraries that
# cargo's JSON build log ($cargoBuildLog, a variable of the build phase, read in this same
# shell) names into a temporary dir; buildPackage's install moves them into $out.
#
# The workspace members come from `cargo metadata --format-version 1`, crane's exact command:
# WITHOUT --no-deps, cargo resolves the whole graph and asks rustc for target information
# with the exported RUSTFLAGS, so flags rustc cannot read (an unresolved token, a profile not
# staged yet) fail here after a successful build, as they fail crane. Adding --no-deps once
# hid exactly that (tier d's fidelity case, nix/tests/standin-phases.nix).
installFromCargoBuildLog() (
  local dest=${1:-${out}}
  local log=${2:-${cargoBuildLog:?not defined}}

  if ! [ -f "${log}" ]; then
    echo "unable to install, cargo build log does not exist at: ${log}"
    false
  fi

  echo "searching for bins/libs to install from cargo build log at ${log}"
  local logs
  logs=$(jq -R 'fromjson?' <"${log}")

  # bindeps artifacts are never installation candidates.
  local select_non_deps_artifact='select(contains("/deps/artifact/") | not)'
  local members
  members="$(command cargo metadata --format-version 1 | jq -c '.workspace_members')"
  # shellcheck disable=SC2016 # $pid is jq's
  local select_non_test_members='select(.reason == "compiler-artifact" and .profile.test == false)
    | select(.package_id as $pid
      | '"${members}"'
      | contains([$pid])
    )'
  local select_bins="${select_non_test_members}| .executable | select(.!= null) | ${select_non_deps_artifact}"
  local select_lib_files="${select_non_test_members}"'
    | select(.target.kind
        | contains(["cdylib"])
        or contains(["dylib"])
        or contains(["staticlib"])
    )
    | .filenames[]
    | select(endswith(".rlib") | not)
    | '"${select_non_deps_artifact}"

  installArtifacts() {
    local loc=${1?:missing}
    mkdir -p "${loc}"
    while IFS= read -r to_install; do
      echo "installing ${to_install} in ${loc}"
      cp "${to_install}" "${loc}"
    done
    rmdir --ignore-fail-on-non-empty "${loc}"
  }

  echo "${logs}" | jq -r "${select_lib_files}" | installArtifacts "${dest}/lib"
  echo "${logs}" | jq -r "${select_bins}" | installArtifacts "${dest}/bin"
  echo searching for bins/libs complete
)

# Captured right after the build, installed later: a check phase's `cargo test` could clobber
# the artifacts (crane issue 765).
postBuildInstallFromCargoBuildLog() (
  if [ -n "${cargoBuildLog:-}" ] && [ -f "${cargoBuildLog}" ]; then
    installFromCargoBuildLog "${postBuildInstallFromCargoBuildLogOut}" "${cargoBuildLog}"
  else
    echo "\$cargoBuildLog is either undefined or does not point to a valid file location!" >&2
    false
  fi
)

if [ -z "${doNotPostBuildInstallCargoBinaries:-}" ]; then
  postBuildInstallFromCargoBuildLogOut=$(mktemp -d postBuildInstallFromCargoBuildLogOutTempXXX)
  postBuildHooks+=(postBuildInstallFromCargoBuildLog)
fi
