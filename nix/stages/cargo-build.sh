# shellcheck shell=bash
# Stage: one cargo release build with one flag set, binary installed to $OUT_DIR/bin.
# Used by the host builder (nix/host/builder.nix, inside the Nix sandbox) and by
# scripts/chain-local.sh (no Nix). The production builder is crane (nix/crane.nix), which
# runs its own cargo but the same gates (POST_INSTALL).
#
# Environment:
#   STAGE_COMMON       path of common.sh
#   SRC                the cargo workspace
#   COPY_SRC           1: copy SRC to a writable dir first (it is a read-only store path)
#   OUT_DIR            install prefix (defaults to $out)
#   BIN_NAME           the binary to install
#   RUSTFLAGS          the flag set of this stage (passed through to cargo untouched)
#   CARGO_BUILD_TARGET optional; the host triple for every flagged stage, so RUSTFLAGS stay
#                      off build scripts and proc macros (they would write .profraw files)
#   CARGO_EXTRA_ARGS   e.g. "-p gateway --bin gateway"
#   VENDOR_DIR         optional; crates vendored beforehand (`cargo vendor`), used offline
#   DEPS_DIR           optional; a cargo-deps.sh output: its target dir is unpacked first, so
#                      only the workspace crates compile here
#   POST_INSTALL       optional shell snippet run after the install with $cargoStderrLog set
#                      (the PGO gate and proof writer); a failure fails the stage
set -euo pipefail
# shellcheck source=common.sh
. "$STAGE_COMMON"
stage_start

need_var SRC
need_var BIN_NAME
OUT_DIR=${OUT_DIR:-${out:-}}
need_var OUT_DIR
work=${TMPDIR:-/tmp}

if [ "${COPY_SRC:-0}" = 1 ]; then
  cp -R --no-preserve=mode,ownership "$SRC" "$work/src"
  cd "$work/src"
else
  cd "$SRC"
fi

offline=()
if [ -n "${VENDOR_DIR:-}" ]; then
  [ -d "$VENDOR_DIR" ] || die "VENDOR_DIR is not a directory: $VENDOR_DIR"
  export CARGO_HOME="$work/cargo-home"
  mkdir -p "$CARGO_HOME"
  cat >"$CARGO_HOME/config.toml" <<TOML
[source.crates-io]
replace-with = "vendored-sources"

[source.vendored-sources]
directory = "$VENDOR_DIR"
TOML
  offline=(--offline)
fi

if [ -n "${DEPS_DIR:-}" ]; then
  nonempty "$DEPS_DIR/target.tar" "dependency artifacts"
  tar -xf "$DEPS_DIR/target.tar"
fi

export RUSTFLAGS=${RUSTFLAGS:-}
# An empty CARGO_BUILD_TARGET is an error to cargo ("target was empty"): unset it.
[ -n "${CARGO_BUILD_TARGET:-}" ] || unset CARGO_BUILD_TARGET
note "RUSTFLAGS='$RUSTFLAGS' target='${CARGO_BUILD_TARGET:-host}' args='${CARGO_EXTRA_ARGS:-}'"

cargoStderrLog="$work/cargo-stderr-$BIN_NAME.log"
export cargoStderrLog
# shellcheck disable=SC2086 # CARGO_EXTRA_ARGS is a word list by design
if ! cargo build --release --locked "${offline[@]}" ${CARGO_EXTRA_ARGS:-} 2>"$cargoStderrLog"; then
  cat "$cargoStderrLog" >&2
  die "cargo build failed"
fi
cat "$cargoStderrLog" >&2

target_dir=${CARGO_TARGET_DIR:-target}
if [ -n "${CARGO_BUILD_TARGET:-}" ]; then
  bin="$target_dir/$CARGO_BUILD_TARGET/release/$BIN_NAME"
else
  bin="$target_dir/release/$BIN_NAME"
fi
nonempty "$bin" "built binary"
mkdir -p "$OUT_DIR/bin"
# Copy, never link: the next stage rebuilds the same target dir with other flags.
install -m 0755 "$bin" "$OUT_DIR/bin/$BIN_NAME"

if [ -n "${POST_INSTALL:-}" ]; then
  out=$OUT_DIR
  export out
  eval "$POST_INSTALL"
fi
stage_done
