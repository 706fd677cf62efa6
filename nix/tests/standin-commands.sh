#!/usr/bin/env bash
# The crane stand-in's command table (docs/testing.md, "The crane stand-in") holds: each row names a
# command and the line of the stand-in and of crane (at the pin) that runs it; this checks
# that the named line of each file contains the command, verbatim. Tier a checks the stand-in
# column; with CRANE_SRC (crane's source tree at the pin) the crane column too (crane-real).
# crane's hook files are read as makeSetupHook substitutes them (@storeDir@ = /nix/store).
#
# Usage: nix/tests/standin-commands.sh [CRANE_SRC]
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
crane=${1:-}
fail() {
  echo "standin-commands: FAIL: $*" >&2
  exit 1
}
rows=$(sed -n '/<!-- standin-commands: begin/,/<!-- standin-commands: end/p' "$repo/docs/testing.md" |
  grep -E '^\| ' | tail -n +3) || true
[ -n "$rows" ] || fail "docs/testing.md has no stand-in command table between the standin-commands markers"

# check WHAT ROOT FILE:LINE COMMAND [SED]: line LINE of ROOT/FILE contains COMMAND.
check() {
  local what=$1 root=$2 ref=$3 cmd=$4 subst=${5:-}
  local file=${ref%:*} line=${ref##*:} text
  [ -f "$root/$file" ] || fail "$what: no file $file (row '$cmd')"
  text=$(sed -n "${line}p" "$root/$file")
  [ -z "$subst" ] || text=$(printf '%s' "$text" | sed -e "$subst")
  case "$text" in
    *"$cmd"*) ;;
    *) fail "$what $file:$line does not run '$cmd'; the line is: $text" ;;
  esac
}

n=0
while IFS= read -r row; do
  # Cells split on `|`; `\|` is a pipe inside a cell.
  row=${row//\\|/$'\x01'}
  IFS='|' read -r _ _ cmd_cell ours_cell crane_cell _ <<<"$row"
  cmd=$(printf '%s' "$cmd_cell" | sed -nE 's/^[^`]*`([^`]+)`.*/\1/p' | tr '\001' '|')
  ours=$(printf '%s' "$ours_cell" | sed -nE 's/.*`([^`]+:[0-9]+)`.*/\1/p')
  theirs=$(printf '%s' "$crane_cell" | sed -nE 's/.*`([^`]+:[0-9]+)`.*/\1/p')
  [ -n "$cmd" ] && [ -n "$ours" ] && [ -n "$theirs" ] || fail "a row lacks a command or a file:line: $row"
  check stand-in "$repo/nix/host/crane" "$ours" "$cmd"
  [ -z "$crane" ] || check crane "$crane/lib" "$theirs" "$cmd" 's|@storeDir@|/nix/store|g'
  n=$((n + 1))
done <<<"$rows"
if [ -n "$crane" ]; then
  echo "  ok: $n commands, each on the named line of the stand-in and of crane ($crane)"
else
  echo "  ok: $n commands, each on the named line of the stand-in (crane's column: crane-real)"
fi
