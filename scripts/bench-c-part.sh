#!/usr/bin/env bash
# The C part of a binary's instructions under callgrind: what build scripts' C (`cc`, `cmake`
# crates: jemalloc and ring in the gateway, libdeflate in oxipng) costs, beside the whole, so
# that the PGO/plain ratio of the C alone shows whether it took the profile (BENCHMARKS.md,
# "C of build scripts"). The C functions are the ones BINARY defines whose symbols are not
# Rust's (v0 `_R...` or legacy `_ZN...`); each callgrind function's self cost is attributed by
# name (gcc's clones, `name.isra.0`, count as `name`).
#
# Usage: scripts/bench-c-part.sh BINARY CALLGRIND_OUT                -> "TOTAL C"
#        scripts/bench-c-part.sh BINARY SMALL_OUT BIG_OUT NSMALL NBIG -> per request, marginal:
#          (BIG - SMALL) / (NBIG - NSMALL), as `bench callgrind` counts (its --work-dir keeps
#          the out files: <shape>-<variant>-<n>.callgrind.out)
# Prints "total <instructions> c <instructions> c_share <fraction>". Needs readelf and
# callgrind_annotate (valgrind).
set -euo pipefail
[ $# -eq 2 ] || [ $# -eq 5 ] || {
  echo "usage: bench-c-part.sh BINARY CALLGRIND_OUT | BINARY SMALL_OUT BIG_OUT NSMALL NBIG" >&2
  exit 2
}
bin=$1
[ -f "$bin" ] || { echo "bench-c-part: no binary $bin" >&2; exit 1; }
names=$(mktemp)
trap 'rm -f "$names"' EXIT
readelf -sW "$bin" | awk '$4 == "FUNC" && $7 != "UND" && $8 != "" {
    n = $8; sub(/@.*/, "", n); sub(/\..*/, "", n)
    if (n !~ /^(_R|_ZN)/) print n
  }' | sort -u >"$names"
[ -s "$names" ] || { echo "bench-c-part: $bin defines no C function (stripped?)" >&2; exit 1; }

# counts OUT: "TOTAL C" of one callgrind out file.
counts() {
  [ -s "$1" ] || { echo "bench-c-part: no callgrind out file $1" >&2; exit 1; }
  callgrind_annotate --show=Ir --threshold=100 --inclusive=no "$1" |
    awk -v names="$names" '
      BEGIN { while ((getline n < names) > 0) c[n] = 1 }
      /PROGRAM TOTALS/ { gsub(/,/, "", $1); total = $1; next }
      /^ *[0-9,]+ \( *[0-9.]+%\) +[^ ].*:/ {
        ir = $1; gsub(/,/, "", ir)
        line = $0; sub(/ \[[^]]*\] *$/, "", line)
        # The function: the name after the last single colon (C names have none; a Rust
        # path ends in "::name", which is not taken).
        if (match(line, /[^:]:[A-Za-z_][A-Za-z0-9_.$]*$/)) {
          f = substr(line, RSTART + 2); sub(/\..*/, "", f)
          if (f in c) cpart += ir
        }
      }
      END { printf "%d %d\n", total, cpart }'
}
if [ $# -eq 2 ]; then
  read -r t c < <(counts "$2")
  awk -v t="$t" -v c="$c" 'BEGIN { printf "total %d c %d c_share %.3f\n", t, c, (t ? c / t : 0) }'
else
  read -r ts cs < <(counts "$2")
  read -r tb cb < <(counts "$3")
  awk -v ts="$ts" -v cs="$cs" -v tb="$tb" -v cb="$cb" -v n="$(($5 - $4))" 'BEGIN {
    t = (tb - ts) / n; c = (cb - cs) / n
    printf "total %.1f c %.1f c_share %.3f\n", t, c, (t ? c / t : 0) }'
fi
