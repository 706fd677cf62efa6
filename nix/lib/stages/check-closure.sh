# shellcheck shell=bash
# Check `closure`: the runtime closure of <BIN_NAME>-pgo-bolt holds no profile, no instrumented
# build, no trainer and no intermediate binary. The closure comes from Nix itself
# (exportReferencesGraph), so a stray reference (a store path in a proof, in .note.bolt_info,
# in an rpath) shows here even if nothing else noticed it.
#
# Environment:
#   STAGE_COMMON  path of common.sh
#   GRAPH         the exportReferencesGraph file of the result
#   RESULT        the result's store path (itself allowed)
#   FORBIDDEN     space-separated store paths that must not be in the closure
#   BIN_NAME      the optimized binary's name: names the intermediates
set -euo pipefail
# shellcheck source=common.sh
. "$STAGE_COMMON"
STAGE_NAME=${STAGE_NAME:-check-closure}
stage_start
nonempty "${GRAPH:-/nonexistent}" "references graph"
need_var RESULT

closure=$(grep '^/nix/store/' "$GRAPH" | sort -u)
printf '%s\n' "$closure" | grep -qxF "$RESULT" || die "result $RESULT is not in its own graph"
note "closure: $(printf '%s\n' "$closure" | wc -l) path(s)"
printf '%s\n' "$closure" >&2

for p in ${FORBIDDEN:-}; do
  if printf '%s\n' "$closure" | grep -qxF "$p"; then
    die "forbidden path in the runtime closure: $p"
  fi
done
# By name too, for intermediates the caller did not list (a profile or trainer of another build).
need_var BIN_NAME
b=$BIN_NAME
bad=$(printf '%s\n' "$closure" | grep -v -xF "$RESULT" |
  grep -E -- "-($b|$b-profile|$b-instrumented|$b-bolt-profile|$b-pgo-build|$b-pgo|trainer)(-deps)?(-[0-9][^/]*)?\$|\.(profdata|profraw|fdata)\$" ||
  true)
[ -z "$bad" ] || die "intermediate in the runtime closure: $bad"
stage_done
