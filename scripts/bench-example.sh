#!/usr/bin/env bash
# The bench of a packager's program built through lib.mkPgoBoltChain (examples/textsearch,
# tier f's ripgrep): instructions and I1 misses of its plain, PGO and PGO+BOLT builds on fixed
# commands over a fixed generated input, counted by valgrind (callgrind with its cache
# simulation; stable run to run: no timing on a shared 2-core VM), and the ratios to plain. A
# report, not a gate: these programs have no holdout.
#
# Usage: scripts/bench-example.sh CHAIN_OUT [BIN_NAME BENCH_SH]
#   CHAIN_OUT  where scripts/chain-nix-host.sh built the chain (tier c: out/tier-c/textsearch,
#              with result-<BIN_NAME>, -pgo, -pgo-bolt)
#   BIN_NAME   the binary (default textsearch)
#   BENCH_SH   the program's bench script (default examples/textsearch/bench.sh): `BENCH_SH BIN
#              DIR` prepares its input in DIR and prints one command (BIN's words) per line
# Results: $BENCH_CI_OUT (default ./out/bench-ci): <BIN_NAME>.md, <BIN_NAME>.json.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
chain=${1:?usage: scripts/bench-example.sh CHAIN_OUT [BIN_NAME BENCH_SH]}
name=${2:-textsearch}
bench_sh=${3:-$repo/examples/textsearch/bench.sh}
out=${BENCH_CI_OUT:-$repo/out/bench-ci}
valgrind=${VALGRIND:-valgrind}
mkdir -p "$out"
work=$(mktemp -d /var/tmp/bench-example.XXXXXX)
trap 'rm -rf "$work"' EXIT

variants=(plain pgo pgo-bolt)
declare -A bin=(
  [plain]="$chain/result-$name/bin/$name"
  [pgo]="$chain/result-$name-pgo/bin/$name"
  [pgo-bolt]="$chain/result-$name-pgo-bolt/bin/$name"
)
for v in "${variants[@]}"; do
  [ -x "${bin[$v]}" ] || { echo "bench-example: no $v build at ${bin[$v]}" >&2; exit 1; }
done
# The program's own bench input and commands (a seed none of the workload's, so the input never
# trained). textsearch: 50,000 lines keep the nine valgrind runs near a minute.
mapfile -t commands < <(TEXTSEARCH_BENCH_LINES=${TEXTSEARCH_BENCH_LINES:-50000} \
  bash "$bench_sh" "${bin[plain]}" "$work")
[ "${#commands[@]}" -gt 0 ] || { echo "bench-example: bench.sh printed no command" >&2; exit 1; }

# counts VARIANT COMMAND: callgrind's instructions and I1 misses for one run, "IR I1MR"; the
# output is discarded, but the run must succeed and print the same as plain's. The command is
# run with globbing off: its words are BIN's arguments, patterns among them.
counts() {
  local v=$1 cmd=$2 log="$work/$1.log" line
  set -f
  # shellcheck disable=SC2086 # cmd is a word list by design
  "$valgrind" --tool=callgrind --cache-sim=yes --callgrind-out-file="$work/cg.out" \
    "${bin[$v]}" $cmd >"$work/$v.stdout" 2>"$log" || { set +f; cat "$log" >&2; return 1; }
  set +f
  # With the cache simulation the events are Ir Dr Dw I1mr D1mr D1mw ILmr DLmr DLmw.
  line=$(sed -nE 's/^==[0-9]+== Collected : ([0-9 ]+)$/\1/p' "$log" | head -n1)
  [ "$(printf '%s\n' "$line" | awk '{ print NF }')" -ge 4 ] || { cat "$log" >&2; return 1; }
  printf '%s\n' "$line" | awk '{ print $1, $4 }'
}

{
  echo "# $name: instructions and I1 misses per command (callgrind), plain vs PGO vs PGO+BOLT"
  echo
  echo "| command | plain Ir | pgo / plain | pgo-bolt / plain | plain I1 misses | pgo I1 | pgo-bolt I1 | pgo-bolt I1 / pgo I1 |"
  echo "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"
} >"$work/table.md"
json_rows=()
declare -A total=([plain]=0 [pgo]=0 [pgo-bolt]=0) itotal=([plain]=0 [pgo]=0 [pgo-bolt]=0)
for cmd in "${commands[@]}"; do
  declare -A n=() i1=()
  for v in "${variants[@]}"; do
    c=$(counts "$v" "$cmd") || { echo "bench-example: $v failed: $cmd" >&2; exit 1; }
    read -r "n[$v]" "i1[$v]" <<<"$c"
    if [ "$v" != plain ] && ! cmp -s "$work/plain.stdout" "$work/$v.stdout"; then
      echo "bench-example: $v prints other output than plain for: $cmd" >&2
      exit 1
    fi
    total[$v]=$((total[$v] + n[$v]))
    itotal[$v]=$((itotal[$v] + i1[$v]))
  done
  label=${cmd//$work\//}
  ratios=$(awk -v a="${n[plain]}" -v b="${n[pgo]}" -v c="${n[pgo-bolt]}" -v p="${i1[pgo]}" \
    -v q="${i1[pgo-bolt]}" 'BEGIN { printf "%.3f|%.3f|%.3f", b / a, c / a, (p ? q / p : 0) }')
  IFS='|' read -r r1 r2 r3 <<<"$ratios"
  echo "| \`$label\` | ${n[plain]} | $r1 | $r2 | ${i1[plain]} | ${i1[pgo]} | ${i1[pgo-bolt]} | $r3 |" >>"$work/table.md"
  json_rows+=("{\"command\": \"$label\", \"plain\": ${n[plain]}, \"pgo\": ${n[pgo]}, \"pgo_bolt\": ${n[pgo-bolt]}, \"pgo_ratio\": $r1, \"pgo_bolt_ratio\": $r2, \"i1_misses\": {\"plain\": ${i1[plain]}, \"pgo\": ${i1[pgo]}, \"pgo_bolt\": ${i1[pgo-bolt]}}}")
done
ratios=$(awk -v a="${total[plain]}" -v b="${total[pgo]}" -v c="${total[pgo-bolt]}" \
  -v p="${itotal[pgo]}" -v q="${itotal[pgo-bolt]}" \
  'BEGIN { printf "%.3f|%.3f|%.3f", b / a, c / a, (p ? q / p : 0) }')
IFS='|' read -r r1 r2 r3 <<<"$ratios"
echo "| **all** | ${total[plain]} | **$r1** | **$r2** | ${itotal[plain]} | ${itotal[pgo]} | ${itotal[pgo-bolt]} | **$r3** |" >>"$work/table.md"
mv "$work/table.md" "$out/$name.md"
{
  rows=$(printf ',\n    %s' "${json_rows[@]}")
  printf '{\n  "commands": [\n    %s\n  ],\n' "${rows:6}"
  printf '  "total": {"plain": %s, "pgo": %s, "pgo_bolt": %s, "pgo_ratio": %s, "pgo_bolt_ratio": %s, "i1_misses": {"plain": %s, "pgo": %s, "pgo_bolt": %s}, "pgo_bolt_i1_over_pgo": %s}\n}\n' \
    "${total[plain]}" "${total[pgo]}" "${total[pgo-bolt]}" "$r1" "$r2" \
    "${itotal[plain]}" "${itotal[pgo]}" "${itotal[pgo-bolt]}" "$r3"
} >"$out/$name.json"
cat "$out/$name.md"
