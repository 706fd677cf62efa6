#!/usr/bin/env bash
# Prepares the fixed input of textsearch's instruction-count bench and prints the commands to
# measure. Generating the corpus is not part of any measured command.
#
# Usage: bench.sh BIN DIR
#   Writes DIR/corpus.txt (seed 424242, TEXTSEARCH_BENCH_LINES lines, default 300000, about
#   16 MB) with BIN, then prints on stdout the measured commands, one per line, each a word
#   list to run as `BIN WORDS...` (under valgrind --tool=callgrind, say):
#     stats --top 20 DIR/corpus.txt
#     search -i -w -c the DIR/corpus.txt
#     search -n -o data DIR/corpus.txt
# Each takes a fraction of a second natively with a release build, and the same input gives
# the same output and instruction count on every run. The seed is none of the workload's, so
# the measured text is not the training text.
set -euo pipefail

if [ "$#" -ne 2 ]; then
  echo "usage: bench.sh BIN DIR" >&2
  exit 2
fi
bin=$1 dir=$2
lines=${TEXTSEARCH_BENCH_LINES:-300000}
[ -x "$bin" ] || { echo "bench: '$bin' is not executable" >&2; exit 2; }
mkdir -p "$dir"
"$bin" generate --seed 424242 --lines "$lines" >"$dir/corpus.txt"
printf '%s\n' \
  "stats --top 20 $dir/corpus.txt" \
  "search -i -w -c the $dir/corpus.txt" \
  "search -n -o data $dir/corpus.txt"
