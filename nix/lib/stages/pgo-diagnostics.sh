# shellcheck shell=bash
# Stage step of the profile-use build (<bin>-pgo-build, after cargo-build.sh): keeps what the
# PGO gate, the next stage (pgo-gate.sh), reads of the build. Not cargo's stderr itself: it
# holds timings, so no two builds would be the same bytes; only rustc's PGO diagnostics
# (common.sh's pgo_diagnostic_re, sorted: cargo's job order is not fixed) and the rustc that
# built.
#
# Every input comes on this script's own command line (nix/lib/chain.nix states the contract).
#   STAGE_COMMON      path of common.sh
#   CARGO_STDERR_LOG  cargo's stderr of the build (cargo-build.sh keeps it)
#   DIAGNOSTICS_OUT   the directory to write: diagnostics.txt, rustc-vV.txt
#   RUSTC             rustc to ask for its version (default: rustc on PATH, the one that built)
set -euo pipefail
# shellcheck source=common.sh
. "$STAGE_COMMON"
# shellcheck disable=SC2034 # read by common.sh's note and die
STAGE_NAME=pgo-diagnostics

need_var CARGO_STDERR_LOG
need_var DIAGNOSTICS_OUT
[ -f "$CARGO_STDERR_LOG" ] || die "cargo's stderr log is missing: $CARGO_STDERR_LOG"
mkdir -p "$DIAGNOSTICS_OUT"
"${RUSTC:-rustc}" -vV >"$DIAGNOSTICS_OUT/rustc-vV.txt.tmp" || die "cannot run ${RUSTC:-rustc} -vV"
# Store paths scrubbed: a diagnostic naming one would make the build's output refer to it.
# shellcheck disable=SC2154 # set by common.sh
{ grep -iE "$pgo_diagnostic_re" "$CARGO_STDERR_LOG" || true; } |
  scrub_store_lines | LC_ALL=C sort \
  >"$DIAGNOSTICS_OUT/diagnostics.txt.tmp"
mv "$DIAGNOSTICS_OUT/rustc-vV.txt.tmp" "$DIAGNOSTICS_OUT/rustc-vV.txt"
mv "$DIAGNOSTICS_OUT/diagnostics.txt.tmp" "$DIAGNOSTICS_OUT/diagnostics.txt"
note "$(wc -l <"$DIAGNOSTICS_OUT/diagnostics.txt") PGO diagnostic line(s) kept in $DIAGNOSTICS_OUT"
