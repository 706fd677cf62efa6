# shellcheck shell=bash
# Stage step: the cargo invocation of every chain build, whatever the builder. crane's
# buildPhaseCargoCommand (nix/crane.nix) runs it inside the Nix build, scripts/cargo-stage.sh
# outside Nix. It keeps cargo's two streams apart, in files that later steps read:
#   - stdout, cargo's JSON messages: crane installs the binaries named there
#     (installFromCargoBuildLog), scripts/cargo-stage.sh finds the binary with it;
#   - stderr, where rustc's PGO warnings (`hash mismatch`, `no profile data available`, an
#     unreadable profile) appear: the PGO gate (pgo-gate.sh) reads them.
# stderr is also echoed to the build log, on success and on failure.
#
# Usage: CARGO_BUILD_LOG=FILE CARGO_STDERR_LOG=FILE [STAGE_COMMON=common.sh] \
#          bash cargo-build.sh CARGO_BUILD_ARGS...
# Every input arrives on this command line (arguments, or the environment prefix): never
# through a variable that a build phase assigned without exporting (a child process does not
# see those; that broke the production build once).
#   CARGO_BUILD_LOG   where cargo's JSON messages go (stdout)
#   CARGO_STDERR_LOG  where cargo's stderr goes
#   PGO_PROFILE       optional: the .profdata of a profile-use build. It is copied to one
#                     fixed path, $PGO_PROFILE_STAGE_DIR/profile.profdata (default dir:
#                     $NIX_BUILD_TOP/pgo-profile, /build/pgo-profile in Nix's sandbox), and
#                     `@pgoProfile@` in RUSTFLAGS becomes that path. So RUSTFLAGS never name
#                     the profile's store path: the same profile bytes give the same flags, and
#                     the same binary, whichever derivation supplied them (trained, cached or
#                     published with a release).
#   arguments         passed to `cargo build` after --message-format (e.g. --release --locked
#                     -p gateway --bin gateway). RUSTFLAGS and CARGO_BUILD_TARGET come from the
#                     environment, as cargo reads them.
set -euo pipefail
# shellcheck source=common.sh
. "${STAGE_COMMON:-$(dirname "${BASH_SOURCE[0]}")/common.sh}"
STAGE_NAME=${STAGE_NAME:-cargo-build}
need_var CARGO_BUILD_LOG
need_var CARGO_STDERR_LOG
# An empty CARGO_BUILD_TARGET is an error to cargo ("target was empty"): unset it.
[ -n "${CARGO_BUILD_TARGET:-}" ] || unset CARGO_BUILD_TARGET
if [ -n "${PGO_PROFILE:-}" ]; then
  nonempty "$PGO_PROFILE" "PGO profile (PGO_PROFILE)"
  stage_dir=${PGO_PROFILE_STAGE_DIR:-${NIX_BUILD_TOP:-}/pgo-profile}
  [ "$stage_dir" != /pgo-profile ] || die "PGO_PROFILE needs NIX_BUILD_TOP or PGO_PROFILE_STAGE_DIR"
  mkdir -p "$stage_dir"
  install -m 0644 "$PGO_PROFILE" "$stage_dir/profile.profdata"
  case "${RUSTFLAGS:-}" in
    *@pgoProfile@*) ;;
    *) die "PGO_PROFILE is set but RUSTFLAGS have no -Cprofile-use=@pgoProfile@" ;;
  esac
  RUSTFLAGS=${RUSTFLAGS//@pgoProfile@/$stage_dir/profile.profdata}
  export RUSTFLAGS
fi
case "${RUSTFLAGS:-}" in
  *@pgoProfile@*) die "RUSTFLAGS name @pgoProfile@ but no PGO_PROFILE was given" ;;
esac
note "RUSTFLAGS='${RUSTFLAGS:-}' target='${CARGO_BUILD_TARGET:-host}' args='$*'"

if ! cargo build --message-format json-render-diagnostics "$@" \
  >"$CARGO_BUILD_LOG" 2>"$CARGO_STDERR_LOG"; then
  cat "$CARGO_STDERR_LOG" >&2
  die "cargo build failed"
fi
cat "$CARGO_STDERR_LOG" >&2
