#!/usr/bin/env bash
# Two builds of the gateway's chain side by side in one run, for a change to the chain itself
# (a stage, the workload, the flags): "the figures must not get worse" is checked here, on
# valgrind's instruction counts, which do not drift with the machine's load.
#
# For each chain it reports the profile (functions, functions executed, .profraw count) and
# the BOLT proof (functions with profile); then callgrind on the given shapes and the holdout
# gate, each with the variants plain (AFTER's; BEFORE's too when its bytes differ), pgo and
# pgo-bolt of BEFORE and of AFTER, so every ratio below comes from the same run.
#
# Usage: scripts/bench-compare.sh BEFORE_CHAIN AFTER_CHAIN [SHAPE ...]
#   *_CHAIN  scripts/chain-nix-host.sh output directories (gateway/, gateway-profile/, ...)
#   SHAPE    training shapes to measure (default: chat-nonstream-minimal messages-stream-mid)
#   BENCH    a built bench (bench/; default: built here, as scripts/bench-ci.sh does)
# Results: $BENCH_COMPARE_OUT (default ./out/bench-compare): compare.md and the reports.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
cd "$repo"
before=${1:?usage: scripts/bench-compare.sh BEFORE_CHAIN AFTER_CHAIN [SHAPE ...]}
after=${2:?usage: scripts/bench-compare.sh BEFORE_CHAIN AFTER_CHAIN [SHAPE ...]}
shift 2
shapes=("$@")
[ "${#shapes[@]}" -gt 0 ] || shapes=(chat-nonstream-minimal messages-stream-mid)
out=${BENCH_COMPARE_OUT:-$repo/out/bench-compare}
profdata=${LLVM_PROFDATA:-/usr/lib/llvm-22/bin/llvm-profdata}
mkdir -p "$out"
if [ -z "${BENCH:-}" ]; then
  # Its own workspace (bench/), default release profile (no fat LTO: it is not the product),
  # into the root target/ (target/release/bench), as every script builds it.
  cargo build --release --locked --manifest-path "$repo/bench/Cargo.toml" --target-dir "$repo/target"
  BENCH="$repo/target/release/bench"
fi
for c in "$before" "$after"; do
  for stage in gateway gateway-pgo gateway-pgo-bolt; do
    [ -x "$c/$stage/bin/gateway" ] || { echo "bench-compare: no $c/$stage/bin/gateway" >&2; exit 1; }
  done
done

# profile_row LABEL CHAIN: the merged profile as llvm-profdata reads it (the manifests of other
# versions record other fields), the manifest's .profraw count and BOLT's coverage.
profile_row() {
  local label=$1 c=$2 p total covered raw bolt
  p="$c/gateway-profile/gateway.profdata"
  total=$("$profdata" show "$p" | sed -nE 's/^Total functions: ([0-9]+).*/\1/p')
  covered=$("$profdata" show --covered "$p" | grep -c .)
  raw=$(sed -nE 's/.*"raw_files": ([0-9]+).*/\1/p' "$c/gateway-profile/manifest.json" | head -n1)
  bolt=$(sed -nE 's/.*"functions_with_profile": ([0-9]+).*/\1/p' "$c/gateway-pgo-bolt/share/gateway/bolt-proof.json" | head -n1)
  echo "| $label | ${raw:-?} | $total | $covered | $(wc -c <"$p") | ${bolt:-?} |"
}

plain=(--variant "plain=$after/gateway/bin/gateway")
optimized=(
  --variant "pgo-before=$before/gateway-pgo/bin/gateway"
  --variant "pgo-bolt-before=$before/gateway-pgo-bolt/bin/gateway"
  --variant "pgo-after=$after/gateway-pgo/bin/gateway"
  --variant "pgo-bolt-after=$after/gateway-pgo-bolt/bin/gateway"
)
# Plain builds of other bytes (another Cargo.lock changes every symbol's hash, and so the
# layout) are measured too on the training shapes: the control that says how much of a
# difference is the source's. (Not in the holdout gate: a control is not held to it.)
control=()
same_plain=true
cmp -s "$before/gateway/bin/gateway" "$after/gateway/bin/gateway" || {
  same_plain=false
  control=(--variant "plain-before=$before/gateway/bin/gateway")
}
{
  echo "# Chain before vs after, one run"
  echo
  echo "before: \`$before\`; after: \`$after\`"
  echo
  echo "| chain | .profraw files | functions | functions executed | profile bytes | BOLT functions with profile |"
  echo "| --- | ---: | ---: | ---: | ---: | ---: |"
  profile_row before "$before"
  profile_row after "$after"
  echo
  if $same_plain; then
    echo "The plain builds are identical: the two chains optimized the same code."
  else
    echo "The plain builds differ, so BEFORE's is measured too (plain-before): the difference"
    echo "between the two plains is the source's, not the chain's."
  fi
} >"$out/compare.md"

for shape in "${shapes[@]}"; do
  "$BENCH" callgrind --shapes shapes --shape "$shape" "${plain[@]}" "${control[@]}" "${optimized[@]}" \
    --work-dir "$out/callgrind-$shape" --json "$out/callgrind-$shape.json" \
    --markdown "$out/callgrind-$shape.md" >/dev/null
  { echo; echo "## $shape (training shape)"; echo; cat "$out/callgrind-$shape.md"; } >>"$out/compare.md"
done
# The gate's own verdict is part of the comparison: a regression on the holdout fails this run.
status=0
"$BENCH" holdout --shapes shapes "${plain[@]}" "${optimized[@]}" \
  --work-dir "$out/holdout" --json "$out/holdout.json" --markdown "$out/holdout.md" >/dev/null ||
  status=$?
{ echo; echo "## holdout"; echo; cat "$out/holdout.md"; } >>"$out/compare.md"
cat "$out/compare.md"
exit "$status"
