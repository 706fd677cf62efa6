#!/usr/bin/env bash
# The PGO/BOLT training workload for textsearch, under the chain's workload contract
# (nix/lib/stages/workload.sh): `workload.sh BIN` runs BIN as separate processes over every
# subcommand and flag, including a no-match exit 1 and usage and I/O errors (exit 2), checks
# every output against grep, wc, awk or sort computing the same thing, and exits 0 only when
# every check passed (1 on a failed check, 2 on bad usage).
#
# It needs only bash, coreutils, grep, sed, awk and diffutils, no network and no clock: it runs
# in the Nix build sandbox.
#
# TEXTSEARCH_WORKLOAD_LINES (default 40000, at least 1000) sets the size of the corpora.
# TRAINING_DATA: the directory of training data (the chain sets it to the store path of
# chain.nix's `trainingData = ./training;`); default: training/ beside this script. Its
# queries.txt lists the searches users run most: each is run and checked.
set -euo pipefail

# grep, wc, awk and sort then compare and fold bytes (ASCII only), whatever the caller's locale.
export LC_ALL=C

if [ "$#" -ne 1 ]; then
  echo "usage: workload.sh BIN" >&2
  exit 2
fi
if [ ! -f "$1" ] || [ ! -x "$1" ]; then
  echo "workload: '$1' is not an executable file" >&2
  exit 2
fi
# Absolute, so that a bare name is not looked up in PATH.
bin=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")

lines=${TEXTSEARCH_WORKLOAD_LINES:-40000}
case $lines in
  '' | *[!0-9]* | 0*)
    echo "workload: TEXTSEARCH_WORKLOAD_LINES='$lines' is not a decimal number without leading zeros" >&2
    exit 2
    ;;
esac
if [ "$lines" -lt 1000 ]; then
  echo "workload: TEXTSEARCH_WORKLOAD_LINES=$lines is under 1000: too few for the checks" >&2
  exit 2
fi

queries=${TRAINING_DATA:-$(dirname "$0")/training}/queries.txt
if [ ! -s "$queries" ]; then
  echo "workload: no training data: $queries is missing or empty (TRAINING_DATA)" >&2
  exit 2
fi

work=$(mktemp -d "${TMPDIR:-/tmp}/textsearch-workload.XXXXXX")
trap 'rm -rf "$work"' EXIT
a=$work/a.txt b=$work/b.txt c=$work/c.txt out=$work/out err=$work/err
runs=0

fail() {
  echo "workload: FAILED: $*" >&2
  exit 1
}

# run_from IN STATUS ARGS...: one process of the binary with stdin from IN, stdout to $out and
# stderr to $err; fails unless it exits STATUS, or if a successful run wrote to stderr.
run_from() {
  local input=$1 want=$2 status=0
  shift 2
  runs=$((runs + 1))
  "$bin" "$@" <"$input" >"$out" 2>"$err" || status=$?
  [ "$status" -eq "$want" ] ||
    fail "textsearch $*: exit $status, expected $want: $(head -c 300 "$err")"
  if [ "$want" -ne 2 ] && [ -s "$err" ]; then
    fail "textsearch $*: unexpected stderr: $(head -c 300 "$err")"
  fi
}

# run STATUS ARGS...: run_from with no input.
run() {
  run_from /dev/null "$@"
}

# same CHECK GOT WANT
same() {
  [ "$2" = "$3" ] || fail "$1: textsearch gives '$2', the reference '$3'"
}

# same_file CHECK GOT WANT
same_file() {
  if ! cmp -s "$2" "$3"; then
    diff "$3" "$2" | head -n 6 >&2 || true
    fail "$1: the output differs from the reference (diff above: < reference, > textsearch)"
  fi
}

# grep_ref ARGS...: grep, where finding nothing (exit 1) is an answer, not an error.
grep_ref() {
  grep "$@" || [ "$?" -eq 1 ]
}

# expect_error CHECK WORD: the last run's stderr names WORD and its stdout is empty.
expect_error() {
  grep -q -F -e "$2" "$err" || fail "$1: stderr does not mention '$2': $(head -c 300 "$err")"
  [ ! -s "$out" ] || fail "$1: an error run wrote to stdout"
}


# frequencies FILE: the word table `stats --top` prints, computed with awk and sort: each
# blank-separated token with the ASCII punctuation at both of its ends removed (a token of
# punctuation only vanishes), lowercased, counted, then sorted by count descending and word
# ascending. The trimming works on whole lines, a token's ends being the punctuation next to a
# blank or to the line's ends, because per-token regex calls make gawk several times slower.
# awk's tolower is ASCII-only in the C locale, so the non-ASCII capitals of textsearch's word
# list (src/corpus.rs) are lowered by hand.
frequencies() {
  awk '
    BEGIN { n = split("É é Ï ï Ü ü Ö ö Ç ç Ñ ñ Å å À à", pair, " ") }
    {
      $0 = tolower($0)
      if ($0 ~ /[^ -~]/)
        for (k = 1; k < n; k += 2) gsub(pair[k], pair[k + 1])
      gsub(/[[:punct:]]+[ \t]/, " ")
      gsub(/[ \t][[:punct:]]+/, " ")
      sub(/^[[:punct:]]+/, "")
      sub(/[[:punct:]]+$/, "")
      for (i = 1; i <= NF; i++) count[$i]++
    }
    END { for (w in count) print count[w], w }
  ' "$1" | sort -t ' ' -k1,1nr -k2,2
}

# frequency_of TABLE WORD: WORD's count in a frequencies table, 0 when absent.
frequency_of() {
  awk -v w="$2" '$2 == w { n = $1 } END { print n + 0 }' "$1"
}

# check_counts CHECK FILE: the first three lines of the last stats run against wc.
check_counts() {
  local l w c
  read -r l w c <<<"$(wc -l -w -c <"$2")"
  same "$1: lines" "$(sed -n 1p "$out")" "lines $l"
  same "$1: words" "$(sed -n 2p "$out")" "words $w"
  same "$1: bytes" "$(sed -n 3p "$out")" "bytes $c"
}

# --- generate -------------------------------------------------------------------------------
run 0 generate --seed 1 --lines "$lines"
cp "$out" "$a"
run 0 generate --seed=1 --lines="$lines"
cmp -s "$out" "$a" || fail "generate: seed 1 gave different text on the second run"
run 0 generate --seed 2 --lines "$lines"
cp "$out" "$b"
cmp -s "$a" "$b" && fail "generate: seeds 1 and 2 gave the same text"
run 0 generate --seed 20260101 --lines $((lines / 2))
cp "$out" "$c"
run 0 generate --lines 100 --seed 1
head -n 100 "$a" | cmp -s - "$out" || fail "generate: 100 lines of seed 1 are not the start of the longer corpus"
run 0 generate
same "generate: default line count" "$(wc -l <"$out")" 1000
same "generate: corpus a line count" "$(wc -l <"$a")" "$lines"
same "generate: corpus c line count" "$(wc -l <"$c")" $((lines / 2))
for word in café Zürich THE ','; do
  grep -q -F -e "$word" "$a" || fail "generate: corpus a has no '$word'"
done

# --- search: counts -------------------------------------------------------------------------
run 0 search -c the "$a"
same "search -c the" "$(cat "$out")" "$(grep_ref -c -F the "$a")"
run 0 search -i -c the "$b"
same "search -i -c the" "$(cat "$out")" "$(grep_ref -c -i -F the "$b")"
run 0 search -w -c the "$a"
same "search -w -c the" "$(cat "$out")" "$(grep_ref -c -w -F the "$a")"
run 0 search -iwc data "$c"
same "search -iwc data" "$(cat "$out")" "$(grep_ref -c -i -w -F data "$c")"
run 0 search --count --ignore-case CAFÉ "$a"
same "search -c -i CAFÉ" "$(cat "$out")" "$(grep_ref -c -F -e café -e Café -e CAFÉ "$a")"
run 0 search -c '' "$b"
same "search -c ''" "$(cat "$out")" "$(wc -l <"$b")"
run_from "$c" 0 search -c -w snake_case
same "search -c -w snake_case (stdin)" "$(cat "$out")" "$(grep_ref -c -w -F snake_case "$c")"

# --- search: printed lines and matches ------------------------------------------------------
run 0 search data "$a"
grep_ref -F data "$a" >"$work/ref"
same_file "search data" "$out" "$work/ref"
run 0 search -n -i 'of the' "$b"
grep_ref -n -i -F 'of the' "$b" >"$work/ref"
same_file "search -n -i 'of the'" "$out" "$work/ref"
run 0 search -n , "$c"
grep_ref -n -F , "$c" >"$work/ref"
same_file "search -n ," "$out" "$work/ref"
run 0 search -o -i the "$a"
grep_ref -o -i -F the "$a" >"$work/ref"
same_file "search -o -i the" "$out" "$work/ref"
run 0 search -o -n -w data "$b"
grep_ref -o -n -w -F data "$b" >"$work/ref"
same_file "search -o -n -w data" "$out" "$work/ref"
run_from "$c" 0 search -i -w -n -o "it's" -
grep_ref -i -w -n -o -F "it's" "$c" >"$work/ref"
same_file "search -i -w -n -o it's (stdin)" "$out" "$work/ref"
run 0 search -o -i zürich "$b"
same "search -o -i zürich" "$(wc -l <"$out")" \
  "$(grep_ref -o -F -e zürich -e Zürich -e ZÜRICH "$b" | wc -l)"

# --- search: the training data's queries ----------------------------------------------------
n_queries=0
while read -r flags pattern; do
  case $flags in '' | '#'*) continue ;; esac
  case $flags in
    -) flags="" ;;
    -*[!iwcno]*) fail "training data: bad flags '$flags' in $queries" ;;
  esac
  [ -n "$pattern" ] || fail "training data: a line of $queries has no pattern"
  n_queries=$((n_queries + 1))
  want=0
  # shellcheck disable=SC2086 # FLAGS: empty or one bundle
  grep_ref $flags -F -e "$pattern" "$a" >"$work/ref"
  # Exit 1 when no line matches (with -c too, as grep's): what -i and -w alone decide.
  match_flags=${flags//[!iw]/}
  grep -q ${match_flags:+"-$match_flags"} -F -e "$pattern" "$a" || want=1
  # shellcheck disable=SC2086
  run "$want" search $flags -- "$pattern" "$a"
  same_file "training query '${flags:--} $pattern'" "$out" "$work/ref"
done <"$queries"
[ "$n_queries" -gt 0 ] || fail "training data: $queries lists no query"

# --- search: no match (exit 1) and errors (exit 2) ------------------------------------------
run 1 search zyzzyva "$a"
[ ! -s "$out" ] || fail "search zyzzyva: printed something without a match"
run 1 search -c -w case "$a"
same "search -c -w case" "$(cat "$out")" "$(grep_ref -c -w -F case "$a")"
run 2 search the "$work/missing.txt"
expect_error "search on a missing file" missing.txt
run 2 search -x the "$a"
expect_error "search with an unknown flag" "'-x'"

# --- stats ----------------------------------------------------------------------------------
frequencies "$a" >"$work/freq-a"
frequencies "$b" >"$work/freq-b"
frequencies "$c" >"$work/freq-c"
run 0 stats "$a"
check_counts "stats a" "$a"
sed -n '4,$p' "$out" >"$work/top"
head -n 10 "$work/freq-a" >"$work/ref"
same_file "stats: top 10 words of a" "$work/top" "$work/ref"
run 0 stats --top 1000000 "$b"
check_counts "stats b" "$b"
sed -n '4,$p' "$out" >"$work/top"
same_file "stats: every word of b" "$work/top" "$work/freq-b"
run_from "$c" 0 stats --top=5 --word the --word CAFÉ --word '(Zürich)' -
check_counts "stats c (stdin)" "$c"
same "stats: line count with --top 5" "$(wc -l <"$out")" 11
sed -n '4,8p' "$out" >"$work/top"
head -n 5 "$work/freq-c" >"$work/ref"
same_file "stats: top 5 words of c" "$work/top" "$work/ref"
same "stats --word the" "$(sed -n 9p "$out")" "word the $(frequency_of "$work/freq-c" the)"
same "stats --word CAFÉ" "$(sed -n 10p "$out")" "word CAFÉ $(frequency_of "$work/freq-c" café)"
same "stats --word (Zürich)" "$(sed -n 11p "$out")" \
  "word (Zürich) $(frequency_of "$work/freq-c" zürich)"
run 0 stats --top 0 "$c"
check_counts "stats --top 0" "$c"
same "stats --top 0: line count" "$(wc -l <"$out")" 3
run 2 stats --top many "$a"
expect_error "stats with a bad number" "many"
run 2 stats "$work/nope.txt"
expect_error "stats on a missing file" nope.txt

# --- help, version, usage errors ------------------------------------------------------------
run 0 --help
grep -q '^Usage:' "$out" || fail "--help: no usage"
run 0 search -h
grep -q 'textsearch search' "$out" || fail "search -h: no usage"
run 0 --version
grep -q -E '^textsearch [0-9]+\.[0-9]+\.[0-9]+$' "$out" || fail "--version: got '$(cat "$out")'"
run 2 generate --lines ten
expect_error "generate with a bad number" "ten"
run 2
expect_error "no command" "missing command"

echo "workload: $runs runs of $(basename "$bin") passed every check (corpora of $lines lines, $n_queries training queries)" >&2
