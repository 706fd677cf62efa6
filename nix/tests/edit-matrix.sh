#!/usr/bin/env bash
# Tier b's edit matrix: what an edit rebuilds. Evaluates every chain stage's derivation (and
# the checks and tools beside the chain) on a copy of the tracked tree, then again after each
# kind of edit (one line appended to one file), and asserts the set of derivations that
# changed: exactly the "rebuilds" column below, which is the README's table ("What an edit
# rebuilds"). A stage outside its set that changes is a wasted rebuild on every cache; a
# stage inside it that does not change would ship a stale binary. Nothing is built.
#
# Usage: nix/tests/edit-matrix.sh   (called by tier-b.sh; the same stub inputs)
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
# shellcheck source-path=SCRIPTDIR source=stub-inputs.sh
. "$repo/nix/tests/stub-inputs.sh"
fail() {
  echo "edit matrix: FAIL: $*" >&2
  exit 1
}
work=$(mktemp -d /var/tmp/edit-matrix.XXXXXX)
trap 'rm -rf "$work"' EXIT
tree="$work/tree"
mkdir -p "$tree"
# The tracked files as they are in the working tree (what a commit of them would hold).
(cd "$repo" && git ls-files -z | tar --null --ignore-failed-read -T - -cf - 2>/dev/null) |
  tar -C "$tree" -xf -

# Every derivation an edit may touch, as NAME=DRVPATH lines, sorted.
stages='gateway gateway-instrumented trainer gateway-profile gateway-pgo-build gateway-pgo gateway-bolt-profile gateway-pgo-bolt bench'
checks='tests clippy fmt holdout pgo-proof closure'
list() {
  local names=$1
  # shellcheck disable=SC2086 # a word list
  printf '[%s]' "$(printf '"%s" ' $names)"
}
drvs() {
  {
    nix eval "${nixf[@]}" --raw "path:$tree#packages.x86_64-linux" --apply "p: builtins.concatStringsSep \"\\n\"
      (map (n: n + \"=\" + p.\${n}.drvPath) $(list "$stages"))"
    echo
    nix eval "${nixf[@]}" --raw "path:$tree#checks.x86_64-linux" --apply "c: builtins.concatStringsSep \"\\n\"
      (map (n: \"checks.\" + n + \"=\" + c.\${n}.drvPath) $(list "$checks"))"
    echo
    # The training parts, one per shape: pgo-part.<shape> and bolt-part.<shape>.
    nix eval "${nixf[@]}" --raw "path:$tree#packages.x86_64-linux" --apply "p: let
        parts = kind: d: map (n: kind + \".\" + n + \"=\" + d.parts.\${n}.drvPath) (builtins.attrNames d.parts);
      in builtins.concatStringsSep \"\\n\" (parts \"pgo-part\" p.gateway-profile ++ parts \"bolt-part\" p.gateway-bolt-profile)"
    echo
  } 2>"$work/err" | sort || {
    cat "$work/err" >&2
    return 1
  }
}

drvs >"$work/base" || fail "the tree does not evaluate"
training=$(grep -L -E '^holdout *= *true' "$tree"/shapes/*.toml | xargs -n1 basename | sed 's/\.toml$//' | sort)
n_training=$(printf '%s\n' "$training" | wc -l)
[ "$(wc -l <"$work/base")" -eq $((15 + 2 * n_training)) ] || { cat "$work/base"; fail "expected $((15 + 2 * n_training)) derivations"; }

# changed_by FILE: append a line to FILE (a comment in its language), evaluate, restore it;
# prints the names whose derivation changed, one line, space separated.
changed_by() {
  local f="$tree/$1" line
  [ -f "$f" ] || fail "no file $1 to edit"
  case $1 in
    *.rs) line='// edit-matrix' ;;
    *.toml | *.sh | *.py | *.nix) line='# edit-matrix' ;;
    *.json) line=' ' ;;
    *) line='edit-matrix' ;;
  esac
  cp "$f" "$work/saved"
  printf '%s\n' "$line" >>"$f"
  drvs >"$work/edited" || fail "the tree does not evaluate after editing $1"
  cp "$work/saved" "$f"
  join -t= -j1 "$work/base" "$work/edited" | awk -F= '$2 != $3 { print $1 }' | sort | tr '\n' ' ' |
    sed 's/ $//'
}

# A PGO part's edit changes the merged profile, so the PGO binary, so every BOLT part (trained
# on that binary) reruns: the stages after the merge.
trained='pgo-parts:all bolt-parts:all gateway-bolt-profile gateway-pgo gateway-pgo-build gateway-pgo-bolt gateway-profile checks.holdout checks.pgo-proof checks.closure'
# sorted WORDS: WORDS sorted, with `pgo-parts:` and `bolt-parts:` followed by `all` (every
# training shape's part) or shape names (A,B) spelled out as pgo-part.A ...
sorted() {
  local w kind list shape
  for w in $1; do
    case $w in
      pgo-parts:* | bolt-parts:*)
        kind=${w%%-parts:*}
        list=${w#*-parts:}
        [ "$list" != all ] || list=$training
        for shape in ${list//,/ }; do printf '%s-part.%s\n' "$kind" "$shape"; done
        ;;
      *) printf '%s\n' "$w" ;;
    esac
  done | sort | tr '\n' ' ' | sed 's/ $//'
}
# shown WORDS: the training parts summarised (all / the shapes' names), the rest as is.
shown() {
  local words kind names out
  [ -n "$1" ] || { printf nothing; return; }
  words=$(printf '%s\n' "$1" | tr ' ' '\n')
  out=$(printf '%s\n' "$words" | grep -v -- '-part\.' | tr '\n' ' ' | sed 's/ $//')
  for kind in pgo bolt; do
    names=$(printf '%s\n' "$words" | sed -n "s/^$kind-part\\.//p")
    [ -n "$names" ] || continue
    if [ "$(printf '%s\n' "$names" | wc -l)" -eq "$n_training" ]; then
      names="all $n_training"
    else
      names=$(printf '%s\n' "$names" | tr '\n' ',' | sed 's/,$//')
    fi
    out="$out + $kind parts: $names"
  done
  printf '%s' "$out"
}
# The training shapes whose body is bodies/chat-minimal.json: a body edit retrains those.
# shellcheck disable=SC2086 # a word list
body_users=$(cd "$tree/shapes" && printf '%s.toml\n' $training | xargs grep -l '^body *= *"bodies/chat-minimal.json"' | sed 's/\.toml$//' | tr '\n' ',' | sed 's/,$//')
# FILE | what it stands for | the derivations that must change (all others must not)
matrix=(
  "README.md|docs: README|"
  "BENCHMARKS.md|docs: BENCHMARKS|"
  "docs/chain.md|docs: docs/|"
  "scripts/test.sh|scripts/|"
  "examples/textsearch/src/main.rs|examples/|"
  "tests/sdk/test_text.py|tests/ (SDK, agents)|"
  "nix/tests/tier-c.sh|nix/tests/|"
  "shapes/README.md|shapes/README.md|"
  "gateway/tests/integration/main.rs|a gateway test|checks.tests checks.clippy checks.fmt"
  "trainer/tests/integration/main.rs|a trainer test|checks.tests checks.clippy checks.fmt"
  "gateway.example.toml|the example config|checks.tests checks.clippy checks.fmt"
  "bench/src/main.rs|the bench|bench checks.holdout"
  "trainer/src/lib.rs|trainer/src|trainer bench checks.tests checks.clippy checks.fmt $trained"
  "gateway/src/main.rs|gateway/src|gateway gateway-instrumented checks.tests checks.clippy checks.fmt $trained"
  "shapes/chat-nonstream-minimal.toml|a shape|checks.tests ${trained/pgo-parts:all/pgo-parts:chat-nonstream-minimal}"
  "shapes/bodies/chat-minimal.json|a shape's body|checks.tests ${trained/pgo-parts:all/pgo-parts:$body_users}"
  # Each stage script by its own path: editing one rebuilds its stage and what follows.
  "nix/lib/stages/bolt-optimize.sh|the BOLT stage's script|gateway-pgo-bolt checks.pgo-proof checks.closure checks.holdout"
)
printf '  %-36s %-24s %s\n' "edited file" "kind" "rebuilds"
for row in "${matrix[@]}"; do
  IFS='|' read -r file kind want <<<"$row"
  got=$(changed_by "$file")
  want=$(sorted "$want")
  printf '  %-36s %-24s %s\n' "$file" "$kind" "$(shown "$got")"
  [ "$got" = "$want" ] || fail "editing $file rebuilds [${got}], expected [${want}]"
done
echo "edit matrix: PASS (${#matrix[@]} edits)"
