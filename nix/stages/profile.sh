# shellcheck shell=bash
# Stage: PGO training. Runs `trainer profile` (one instrumented gateway lifetime per shape,
# loopback only, so it runs inside the Nix build sandbox) and re-checks what it wrote before
# publishing it. Fail-closed: the result appears in OUT_DIR only when every check passed, so a
# failed run leaves no output (and in Nix no store path).
#
# Environment:
#   STAGE_COMMON   path of common.sh
#   TRAINER        absolute path of the training command (the `trainer profile` contract)
#   GATEWAY_BIN    the instrumented gateway (-Cprofile-generate)
#   LLVM_PROFDATA  absolute path of llvm-profdata of rustc's LLVM (never PATH's)
#   SHAPES         the shapes directory (*.toml + bodies/)
#   OUT_DIR        where gateway.profdata + manifest.json go (defaults to $out)
set -euo pipefail
# shellcheck source=common.sh
. "$STAGE_COMMON"
STAGE_NAME=${STAGE_NAME:-gateway-profile}
stage_start

need_exe TRAINER "${TRAINER:-}"
need_exe GATEWAY_BIN "${GATEWAY_BIN:-}"
need_exe LLVM_PROFDATA "${LLVM_PROFDATA:-}"
need_var SHAPES
OUT_DIR=${OUT_DIR:-${out:-}}
need_var OUT_DIR
[ -d "$SHAPES" ] || die "shapes directory missing: $SHAPES"
# An empty shapes set would train nothing; the trainer refuses it too, this says it first.
compgen -G "$SHAPES/*.toml" >/dev/null || die "no shapes (*.toml) in $SHAPES"

# llvm_major "VERSION TEXT": the LLVM major of `rustc -vV` or `llvm-profdata --version`.
llvm_major() {
  { printf '%s\n' "$1" | grep -oE 'LLVM version:? [0-9]+' || true; } |
    head -n1 | grep -oE '[0-9]+$' || true
}

# rustc's LLVM and llvm-profdata's must share a major version (profile format).
expect_major=()
if command -v rustc >/dev/null 2>&1; then
  rustc_major=$(llvm_major "$(rustc -vV)")
  [ -z "$rustc_major" ] || expect_major=(--expect-llvm-major "$rustc_major")
  profdata_major=$(llvm_major "$("$LLVM_PROFDATA" --version 2>&1)")
  if [ -n "$rustc_major" ] && [ -n "$profdata_major" ] && [ "$rustc_major" != "$profdata_major" ]; then
    die "llvm-profdata is LLVM $profdata_major, rustc is LLVM $rustc_major"
  fi
fi

work=$(mktemp -d "${TMPDIR:-/tmp}/profile.XXXXXX")
"$TRAINER" profile \
  --gateway-bin "$GATEWAY_BIN" \
  --llvm-profdata "$LLVM_PROFDATA" \
  "${expect_major[@]}" \
  --shapes "$SHAPES" \
  --out "$work/out" ||
  die "trainer profile failed (exit $?)"

nonempty "$work/out/gateway.profdata" "merged profile"
nonempty "$work/out/manifest.json" "profile manifest"
total=$("$LLVM_PROFDATA" show "$work/out/gateway.profdata" | sed -nE 's/^Total functions: ([0-9]+).*/\1/p' | head -n1)
[ "${total:-0}" -gt 0 ] || die "merged profile reports no functions"
note "profile: $(bytes_of "$work/out/gateway.profdata") bytes, $total functions"

mkdir -p "$OUT_DIR"
mv "$work/out/gateway.profdata" "$work/out/manifest.json" "$OUT_DIR/"
rm -rf "$work"
stage_done
