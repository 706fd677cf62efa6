#!/usr/bin/env bash
# Translated paths beside passthrough (`bench translated`): callgrind instructions per request
# of each translated shape next to its passthrough twin (the same client body, the model on
# the dialect's own provider), so the difference is the translation's cost; the streaming
# pair is judged against its target (at most 1.30x passthrough).
#
# Usage: scripts/bench-translated.sh OUT_DIR --variant NAME=GATEWAY [--variant NAME=GATEWAY ...]
#   e.g. scripts/bench-translated.sh out/translated --variant plain=out/chain-local/gateway/bin/gateway
# Environment (optional):
#   BENCH          a built bench (default: built here, as scripts/benchmarks.sh does)
#   BENCHMARKS_MD  also replace the translated section of this file (between its markers)
#                  with this run's (`bench report --translated-only`); scripts/benchmarks.sh
#                  writes the whole file instead
# Writes OUT_DIR/callgrind-<shape>.{json,md} per shape, OUT_DIR/callgrind-translated.md, and
# OUT_DIR/translated-run.md (when, at which commit, which binaries), which the report shows.
# Takes ~80 s per gateway on a 2-core VM (9 shapes under valgrind).
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
[ $# -ge 3 ] || { sed -n '7,8p' "$0" >&2; exit 2; }
out=$1
shift
if [ -z "${BENCH:-}" ]; then
  cargo build --release --locked --manifest-path "$repo/bench/Cargo.toml" --target-dir "$repo/target"
  BENCH="$repo/target/release/bench"
fi
mkdir -p "$out"
{
  echo "Measured $(date -u +%Y-%m-%d) at commit \`$(git -C "$repo" rev-parse --short HEAD)\`$(git -C "$repo" diff --quiet HEAD -- gateway || echo ' (gateway/ modified)'), by \`scripts/bench-translated.sh\`:"
  echo
  for arg in "$@"; do
    case $arg in
      *=*)
        path=${arg#*=}
        [ -x "$path" ] || { echo "bench-translated: no gateway at $path" >&2; exit 1; }
        echo "- \`${arg%%=*}\`: \`$path\` (sha256 $(sha256sum "$path" | cut -c1-12))"
        ;;
    esac
  done
} >"$out/translated-run.md"
mapfile -t shapes < <("$BENCH" translated --list-shapes)
for shape in "${shapes[@]}"; do
  "$BENCH" callgrind --shapes "$repo/shapes" --shape "$shape" "$@" \
    --work-dir "$out/callgrind-$shape" --json "$out/callgrind-$shape.json" \
    --markdown "$out/callgrind-$shape.md" >/dev/null
done
"$BENCH" translated --results "$out" --markdown "$out/callgrind-translated.md"
echo "bench-translated: wrote $out/callgrind-translated.md" >&2
if [ -n "${BENCHMARKS_MD:-}" ]; then
  "$BENCH" report --results "$out" --translated-only --out "$BENCHMARKS_MD"
fi
