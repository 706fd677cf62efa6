#!/usr/bin/env bash
# The bench of the second program (examples/textsearch): instructions of its plain, PGO and
# PGO+BOLT builds on fixed commands over a fixed generated corpus, counted by valgrind
# (callgrind's "Collected", stable run to run: no timing on a shared 2-core VM), and the ratios
# to plain. A report, not a gate: textsearch has no holdout.
#
# Usage: scripts/bench-example.sh CHAIN_OUT
#   CHAIN_OUT  where scripts/chain-nix-host.sh built textsearch's chain (tier c:
#              out/tier-c/textsearch, with result-textsearch, -pgo, -pgo-bolt)
# Results: $BENCH_CI_OUT (default ./out/bench-ci): textsearch.md, textsearch.json.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
chain=${1:?usage: scripts/bench-example.sh CHAIN_OUT}
out=${BENCH_CI_OUT:-$repo/out/bench-ci}
valgrind=${VALGRIND:-valgrind}
mkdir -p "$out"
work=$(mktemp -d /var/tmp/bench-example.XXXXXX)
trap 'rm -rf "$work"' EXIT

variants=(plain pgo pgo-bolt)
declare -A bin=(
  [plain]="$chain/result-textsearch/bin/textsearch"
  [pgo]="$chain/result-textsearch-pgo/bin/textsearch"
  [pgo-bolt]="$chain/result-textsearch-pgo-bolt/bin/textsearch"
)
for v in "${variants[@]}"; do
  [ -x "${bin[$v]}" ] || { echo "bench-example: no $v build at ${bin[$v]}" >&2; exit 1; }
done
# The example's own bench input and commands (examples/textsearch/bench.sh: a seed none of the
# workload's, so the text never trained). 50,000 lines keep the nine valgrind runs near a minute.
mapfile -t commands < <(TEXTSEARCH_BENCH_LINES=${TEXTSEARCH_BENCH_LINES:-50000} \
  bash "$repo/examples/textsearch/bench.sh" "${bin[plain]}" "$work")
[ "${#commands[@]}" -gt 0 ] || { echo "bench-example: bench.sh printed no command" >&2; exit 1; }

# instructions VARIANT COMMAND: callgrind's total for one run; the output is discarded, but
# the run must succeed and print the same as plain's.
instructions() {
  local v=$1 cmd=$2 log="$work/$1.log" n
  # shellcheck disable=SC2086 # cmd is a word list by design
  "$valgrind" --tool=callgrind --callgrind-out-file="$work/cg.out" "${bin[$v]}" $cmd \
    >"$work/$v.stdout" 2>"$log" || { cat "$log" >&2; return 1; }
  n=$(sed -nE 's/^==[0-9]+== Collected : ([0-9]+)$/\1/p' "$log" | head -n1)
  [ -n "$n" ] || { cat "$log" >&2; return 1; }
  printf '%s\n' "$n"
}

{
  echo "# textsearch: instructions per command (callgrind), plain vs PGO vs PGO+BOLT"
  echo
  echo "| command | plain | pgo | pgo-bolt | pgo / plain | pgo-bolt / plain | pgo-bolt / pgo |"
  echo "| --- | ---: | ---: | ---: | ---: | ---: | ---: |"
} >"$work/table.md"
json_rows=()
declare -A total=([plain]=0 [pgo]=0 [pgo-bolt]=0)
for cmd in "${commands[@]}"; do
  declare -A n=()
  for v in "${variants[@]}"; do
    n[$v]=$(instructions "$v" "$cmd") || { echo "bench-example: $v failed: $cmd" >&2; exit 1; }
    if [ "$v" != plain ] && ! cmp -s "$work/plain.stdout" "$work/$v.stdout"; then
      echo "bench-example: $v prints other output than plain for: $cmd" >&2
      exit 1
    fi
    total[$v]=$((total[$v] + n[$v]))
  done
  label=${cmd//$work\//}
  ratios=$(awk -v a="${n[plain]}" -v b="${n[pgo]}" -v c="${n[pgo-bolt]}" \
    'BEGIN { printf "%.3f|%.3f|%.3f", b / a, c / a, c / b }')
  IFS='|' read -r r1 r2 r3 <<<"$ratios"
  echo "| \`$label\` | ${n[plain]} | ${n[pgo]} | ${n[pgo-bolt]} | $r1 | $r2 | $r3 |" >>"$work/table.md"
  json_rows+=("{\"command\": \"$label\", \"plain\": ${n[plain]}, \"pgo\": ${n[pgo]}, \"pgo_bolt\": ${n[pgo-bolt]}, \"pgo_ratio\": $r1, \"pgo_bolt_ratio\": $r2}")
done
ratios=$(awk -v a="${total[plain]}" -v b="${total[pgo]}" -v c="${total[pgo-bolt]}" \
  'BEGIN { printf "%.3f|%.3f|%.3f", b / a, c / a, c / b }')
IFS='|' read -r r1 r2 r3 <<<"$ratios"
echo "| **all three** | ${total[plain]} | ${total[pgo]} | ${total[pgo-bolt]} | **$r1** | **$r2** | $r3 |" >>"$work/table.md"
mv "$work/table.md" "$out/textsearch.md"
{
  printf '{\n  "commands": [\n    %s\n  ],\n' "$(printf '%s,\n    ' "${json_rows[@]}" | sed '$ s/,[[:space:]]*$//')"
  printf '  "total": {"plain": %s, "pgo": %s, "pgo_bolt": %s, "pgo_ratio": %s, "pgo_bolt_ratio": %s}\n}\n' \
    "${total[plain]}" "${total[pgo]}" "${total[pgo-bolt]}" "$r1" "$r2"
} >"$out/textsearch.json"
cat "$out/textsearch.md"
