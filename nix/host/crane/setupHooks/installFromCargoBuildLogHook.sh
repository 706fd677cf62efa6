# shellcheck shell=bash
# crane stand-in hook: right after the build (postBuild), copy the workspace's binaries that
# cargo's JSON build log ($cargoBuildLog, a variable of the build phase, read in this same
# shell) names into a temporary dir; buildPackage's install moves them into $out.
installFromCargoBuildLog() (
  local dest=${1:-$out}
  local log=${2:-${cargoBuildLog:?cargoBuildLog is not set}}
  [ -f "$log" ] || {
    echo "installFromCargoBuildLog: no cargo build log at $log" >&2
    return 1
  }
  local members
  members=$(command cargo metadata --format-version 1 --no-deps | jq -c '.workspace_members')
  mkdir -p "$dest/bin"
  jq -R 'fromjson?' <"$log" |
    jq -r --argjson members "$members" '
      select(.reason == "compiler-artifact" and .profile.test == false)
      | select(.package_id as $p | $members | index($p))
      | .executable | select(. != null)' |
    while IFS= read -r bin; do
      echo "installing $bin in $dest/bin"
      cp "$bin" "$dest/bin/"
    done
  rmdir --ignore-fail-on-non-empty "$dest/bin"
)

postBuildInstallFromCargoBuildLog() {
  if [ -n "${cargoBuildLog:-}" ] && [ -f "$cargoBuildLog" ]; then
    installFromCargoBuildLog "$postBuildInstallFromCargoBuildLogOut" "$cargoBuildLog"
  else
    echo "installFromCargoBuildLog: \$cargoBuildLog is unset or not a file: the build phase must capture cargo's JSON output there" >&2
    return 1
  fi
}

if [ -z "${doNotPostBuildInstallCargoBinaries:-}" ]; then
  postBuildInstallFromCargoBuildLogOut=$(mktemp -d postBuildInstallFromCargoBuildLogOutXXX)
  postBuildHooks+=(postBuildInstallFromCargoBuildLog)
fi
