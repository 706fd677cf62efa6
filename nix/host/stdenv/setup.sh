# shellcheck shell=bash
# The host stdenv's builder: runs one derivation the way nixpkgs' stdenv does, as far as our
# builds can tell the difference:
#   - one bash process for the whole build: `set -eu -o pipefail` while it sets up (sources the
#     inputs' hooks), then the phases run with `set -e -o pipefail` but WITHOUT nounset, as
#     stdenv's setup.sh restores the shell's own -u before genericBuild (crane's hooks read
#     unset variables, e.g. doCompressAndInstallFullArchive);
#   - the derivation's attributes are its environment (exported by Nix); a variable that a
#     phase or hook assigns is NOT exported, so a child process never sees it;
#   - each nativeBuildInputs entry: its bin/ on PATH, its nix-support/setup-hook sourced (in
#     order, from $NIX_BUILD_TOP, before any phase);
#   - runHook NAME: the attribute NAME first (a string to eval), then NAME's hooks array
#     (postInstall, then postInstallHooks), as stdenv's runHook does;
#   - buildCommand, when set, instead of the phases; else unpack (the source copied writable,
#     mtimes kept), patch, configure, build, check (only with doCheck), install, fixup (strip
#     unless dontStrip);
#   - an attribute named like a phase replaces that phase's default.
# shellcheck disable=SC2154 # src, out and hostPath are derivation attributes (the environment)
set -eu -o pipefail
shopt -s inherit_errexit

inputsPath=
for input in ${nativeBuildInputs:-}; do
  if [ -d "$input/bin" ]; then inputsPath=${inputsPath:+$inputsPath:}$input/bin; fi
done
export PATH=${inputsPath:+$inputsPath:}$hostPath

_eval() {
  if declare -F "$1" >/dev/null 2>&1; then
    "$@"
  else
    eval "$1"
  fi
}

runHook() {
  local hookName=$1 hook
  shift
  local hooksSlice="${hookName%Hook}Hooks[@]"
  if declare -F "$hookName" >/dev/null 2>&1; then
    "$hookName" "$@"
  elif [ -n "${!hookName:-}" ]; then
    eval "${!hookName}"
  fi
  for hook in ${!hooksSlice+"${!hooksSlice}"}; do
    _eval "$hook" "$@"
  done
}

cd "$NIX_BUILD_TOP"
for input in ${nativeBuildInputs:-}; do
  if [ -f "$input/nix-support/setup-hook" ]; then
    # shellcheck disable=SC1091 # the inputs' hooks
    . "$input/nix-support/setup-hook"
  fi
done

# stdenv's setup.sh ends by restoring the builder shell's own options: no nounset in phases.
set +u

unpackPhase() {
  runHook preUnpack
  local name
  name=$(basename "$src")
  # Without the store hash, as stdenv's stripHash.
  if [[ $name =~ ^[a-z0-9]{32}- ]]; then name=${name:33}; fi
  cp -r --preserve=timestamps --no-preserve=mode,ownership "$src" "$name"
  chmod -R u+w "$name"
  # A caller's sourceRoot (a directory inside the source, e.g. "src-name/sub") wins, as in
  # stdenv.
  [ -n "${sourceRoot:-}" ] || sourceRoot=$name
  runHook postUnpack
}

patchPhase() {
  runHook prePatch
  runHook postPatch
}

configurePhase() {
  runHook preConfigure
  runHook postConfigure
}

buildPhase() {
  runHook preBuild
  runHook postBuild
}

checkPhase() {
  runHook preCheck
  runHook postCheck
}

installPhase() {
  runHook preInstall
  runHook postInstall
}

fixupPhase() {
  runHook preFixup
  if [ -z "${dontStrip:-}" ] && [ -d "$out/bin" ]; then
    find "$out/bin" -type f -exec strip -S {} + 2>/dev/null || true
  fi
  runHook postFixup
}

runPhase() {
  local phase=$1
  echo "Running phase: $phase"
  if [ -n "${!phase:-}" ]; then
    eval "${!phase}"
  else
    "$phase"
  fi
  if [ "$phase" = unpackPhase ]; then cd "${sourceRoot:-.}"; fi
}

if [ -n "${buildCommand:-}" ]; then
  eval "$buildCommand"
  exit 0
fi

for phase in unpackPhase patchPhase configurePhase buildPhase checkPhase ${preInstallPhases:-} \
  installPhase fixupPhase; do
  case $phase in
    checkPhase) [ -n "${doCheck:-}" ] || continue ;;
  esac
  runPhase "$phase"
done
