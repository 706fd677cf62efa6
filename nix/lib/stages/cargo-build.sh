# shellcheck shell=bash
# Stage step: the cargo invocation of every chain build, whatever the builder. crane's
# buildPhaseCargoCommand (nix/lib/builder.nix) runs it inside the Nix build, scripts/cargo-stage.sh
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
#   arguments         passed to `cargo build` after --message-format (e.g. --release --locked
#                     -p <package> --bin <binName>). RUSTFLAGS and CARGO_BUILD_TARGET come from the
#                     environment, as cargo reads them.
set -euo pipefail
# shellcheck source=common.sh
. "${STAGE_COMMON:-$(dirname "${BASH_SOURCE[0]}")/common.sh}"
STAGE_NAME=${STAGE_NAME:-cargo-build}
need_var CARGO_BUILD_LOG
need_var CARGO_STDERR_LOG
# An empty CARGO_BUILD_TARGET is an error to cargo ("target was empty"): unset it.
[ -n "${CARGO_BUILD_TARGET:-}" ] || unset CARGO_BUILD_TARGET
# A profile-use build arrives with RUSTFLAGS already resolved (pgo-use-flags.sh, run by the
# builder before any phase runs cargo): a token here means some builder skipped that step, and
# crane's own hooks, which run cargo with the exported RUSTFLAGS, would fail after this build.
case "${RUSTFLAGS:-}" in
  *@pgoProfile@*) die "RUSTFLAGS name @pgoProfile@: the builder did not stage the profile (pgo-use-flags.sh) before the build" ;;
esac
# cargo takes CARGO_ENCODED_RUSTFLAGS before RUSTFLAGS, even empty: set, it would replace this
# stage's flags (the profile, the mangling, the preflight-checked ones) without a word. Only an
# environment outside Nix carries it (scripts/chain-local.sh inherits the caller's).
[ -z "${CARGO_ENCODED_RUSTFLAGS+set}" ] ||
  die "CARGO_ENCODED_RUSTFLAGS is set: cargo would build with it instead of this stage's RUSTFLAGS; unset it (give the flags as extraRustflags)"
[ -z "${PGO_PROFILE:-}" ] || die "PGO_PROFILE is not read here: stage it with pgo-use-flags.sh before the first phase that runs cargo"
note "RUSTFLAGS='${RUSTFLAGS:-}' target='${CARGO_BUILD_TARGET:-host}' args='$*'"

if ! cargo build --message-format json-render-diagnostics "$@" \
  >"$CARGO_BUILD_LOG" 2>"$CARGO_STDERR_LOG"; then
  cat "$CARGO_STDERR_LOG" >&2
  # The chain's default is `-p <binName> --bin <binName>`: wrong when the package and its
  # binary have other names (ripgrep's binary is rg). Say which argument fixes it.
  if grep -qE 'package ID specification .* did not match any packages|no bin target named' \
    "$CARGO_STDERR_LOG"; then
    die "cargo build failed: no package or binary of that name (args: $*). Give the chain" \
      "\`package\` (the cargo package that holds the binary) when it is not named as the" \
      "binary, or \`cargoExtraArgs\`"
  fi
  die "cargo build failed"
fi
cat "$CARGO_STDERR_LOG" >&2
