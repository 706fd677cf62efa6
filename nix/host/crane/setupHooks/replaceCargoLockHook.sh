# shellcheck shell=bash
# crane stand-in hook (crane: lib/setupHooks/replaceCargoLockHook.sh), before patching: with
# a `cargoLock` attribute, that file becomes the source's Cargo.lock (the original kept as
# Cargo.lock.orig). No build of ours sets cargoLock; the hook is here because crane's
# mkCargoDerivation sources it in every build.
replaceCargoLock() {
  local cargoLockOverride="${1:-${cargoLock:?not defined}}"
  if [[ -f Cargo.lock ]]; then
    echo "moving Cargo.lock to Cargo.lock.orig, then will use ${cargoLockOverride} as Cargo.lock"
    mv Cargo.lock Cargo.lock.orig
  else
    echo "will use ${cargoLockOverride} as Cargo.lock"
  fi
  cp --no-preserve=ownership,mode "${cargoLockOverride}" Cargo.lock
}

if [ -n "${cargoLock:-}" ]; then
  if [ -n "${doNotReplaceCargoLock:-}" ]; then
    echo "skipping Cargo.lock override as requested"
  else
    prePatchHooks+=(replaceCargoLock)
  fi
fi
