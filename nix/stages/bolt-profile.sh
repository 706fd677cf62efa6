# shellcheck shell=bash
# Stage: BOLT training. Instruments the PGO binary with llvm-bolt (no PMU on these VMs, so
# instrumentation, not perf sampling), runs `trainer bolt-profile` on it and publishes the
# merged .fdata only after it checked out. Fail-closed like profile.sh.
#
# Environment:
#   STAGE_COMMON  path of common.sh
#   TRAINER       absolute path of the training command (the `trainer bolt-profile` contract)
#   GATEWAY_BIN   the PGO gateway, linked with --emit-relocs
#   LLVM_BOLT     absolute path of llvm-bolt
#   BOLT_RT_LIB   absolute path of libbolt_rt_instr.a: llvm-bolt otherwise looks for it next to
#                 its own binary and fails with "library not found" when that is elsewhere
#   MERGE_FDATA   absolute path of merge-fdata
#   SHAPES        the shapes directory
#   OUT_DIR       where gateway.fdata + manifest.json go (defaults to $out)
set -euo pipefail
# shellcheck source=common.sh
. "$STAGE_COMMON"
STAGE_NAME=${STAGE_NAME:-gateway-bolt-profile}
stage_start

need_exe TRAINER "${TRAINER:-}"
need_exe GATEWAY_BIN "${GATEWAY_BIN:-}"
need_exe LLVM_BOLT "${LLVM_BOLT:-}"
need_exe MERGE_FDATA "${MERGE_FDATA:-}"
nonempty "${BOLT_RT_LIB:-/nonexistent}" "BOLT runtime library"
need_var SHAPES
OUT_DIR=${OUT_DIR:-${out:-}}
need_var OUT_DIR
[ -d "$SHAPES" ] || die "shapes directory missing: $SHAPES"
compgen -G "$SHAPES/*.toml" >/dev/null || die "no shapes (*.toml) in $SHAPES"

work=$(mktemp -d "${TMPDIR:-/tmp}/bolt-profile.XXXXXX")
mkdir -p "$work/fdata"
# Copy first: the instrumented binary must not name a store path of its input.
cp "$GATEWAY_BIN" "$work/gateway"
chmod u+w "$work/gateway"
# exec -a: llvm-bolt records argv[0] in .note.bolt_info; keep store paths out of it.
(cd "$work" && exec -a llvm-bolt "$LLVM_BOLT" gateway -o gateway.inst \
  -instrument \
  --runtime-instrumentation-lib="$BOLT_RT_LIB" \
  -instrumentation-file="$work/fdata/prof" \
  -instrumentation-file-append-pid) >"$work/instrument.log" 2>&1 || {
  cat "$work/instrument.log" >&2
  die "llvm-bolt -instrument failed"
}
tail -n 3 "$work/instrument.log" >&2

"$TRAINER" bolt-profile \
  --gateway-bin "$work/gateway.inst" \
  --merge-fdata "$MERGE_FDATA" \
  --shapes "$SHAPES" \
  --instrumentation-file "$work/fdata/prof" \
  --out "$work/out" ||
  die "trainer bolt-profile failed (exit $?)"

nonempty "$work/out/gateway.fdata" "merged fdata"
nonempty "$work/out/manifest.json" "bolt-profile manifest"
# The fdata only fits the binary it was trained on (BOLT matches functions by address and
# layout): record that binary's sha256, which bolt-optimize.sh requires to equal its input's.
# Then a published or cached fdata cannot be applied to another PGO build unnoticed.
pgo_sha=$(sha256_of "$work/gateway")
head -n1 "$work/out/manifest.json" | grep -qx '{' || die "unexpected bolt-profile manifest layout"
sed -i "1a\\  \"pgo_bin_sha256\": \"$pgo_sha\"," "$work/out/manifest.json"
grep -q "\"pgo_bin_sha256\": \"$pgo_sha\"" "$work/out/manifest.json" || die "cannot record pgo_bin_sha256"
note "fdata: $(bytes_of "$work/out/gateway.fdata") bytes"

mkdir -p "$OUT_DIR"
mv "$work/out/gateway.fdata" "$work/out/manifest.json" "$OUT_DIR/"
rm -rf "$work"
stage_done
