#!/usr/bin/env bash
# Tier a: static checks, seconds, no build.
#  - every .nix file parses (nix-instantiate --parse);
#  - flake.lock is well formed, version 7, every github node has rev/lastModified/narHash,
#    follows resolve, and the pins are DESIGN.md's (nix/tests/lock-check.nix), with two
#    mutated locks that must be refused;
#  - Nix files follow the house style (no nixfmt on Debian bookworm): 2-space indentation,
#    no tabs, no trailing blanks, lines <= 100 columns, final newline;
#  - every stage and test script passes `bash -n` (and shellcheck when installed);
#  - the README's install line covers what the main command needs (nix/tests/readme-setup.sh).
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
cd "$repo"
t0=$(date +%s)
fail() {
  echo "tier a: FAIL: $*" >&2
  exit 1
}

mapfile -t nix_files < <(git ls-files --cached --others --exclude-standard -- '*.nix' 'flake.nix' | sort -u)
[ "${#nix_files[@]}" -gt 0 ] || fail "no .nix files found"
echo "== parse (${#nix_files[@]} files)"
for f in "${nix_files[@]}"; do
  nix-instantiate --parse "$f" >/dev/null || fail "$f does not parse"
  echo "  ok: $f"
done

echo "== flake.lock"
lock_check() {
  nix-instantiate --eval --strict nix/tests/lock-check.nix --arg lockFile "$1" 2>&1
}
out=$(lock_check "$repo/flake.lock") || fail "$out"
[ "$out" = true ] || fail "lock check returned $out"
echo "  ok: version 7, nodes, follows, pins"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
sed 's/"narHash": "sha256-MPaRdV/"narHash": "sha256-XPaRdV/' flake.lock >"$tmp/bad-hash.lock"
if lock_check "$tmp/bad-hash.lock" >/dev/null; then fail "a wrong narHash was accepted"; fi
sed 's/"version": 7/"version": 6/' flake.lock >"$tmp/bad-version.lock"
if lock_check "$tmp/bad-version.lock" >/dev/null; then fail "lock version 6 was accepted"; fi
echo "  ok: a wrong narHash and version 6 are refused"
design="$repo/../shared/DESIGN.md"
if [ -f "$design" ]; then
  for v in $(grep -oE '"(rev|narHash)": "[^"]+"' flake.lock | sed -E 's/.*: "//; s/"$//'); do
    grep -qF "$v" "$design" || fail "$v is not in DESIGN.md"
  done
  echo "  ok: every rev and narHash appears in DESIGN.md"
else
  echo "  (no ../shared/DESIGN.md beside the repo: pins checked against lock-check.nix only)"
fi

echo "== Nix style"
for f in "${nix_files[@]}"; do
  grep -nP '\t' "$f" && fail "$f: tab"
  grep -nE ' +$' "$f" && fail "$f: trailing blanks"
  awk -v f="$f" 'length($0) > 100 { print f ":" NR ": longer than 100 columns"; bad = 1 }
    /^ +/ { match($0, /^ +/); if (RLENGTH % 2) { print f ":" NR ": odd indentation"; bad = 1 } }
    END { exit bad }' "$f" || fail "$f: style"
  [ -z "$(tail -c1 "$f")" ] || fail "$f: no final newline"
done
echo "  ok: ${#nix_files[@]} files"

echo "== shell scripts"
shell_files=(nix/lib/stages/*.sh nix/tests/*.sh scripts/chain-*.sh scripts/cargo-stage.sh
  scripts/readme-block.sh scripts/test-deps.sh scripts/newcomer.sh .ci/run
  nix/host/stdenv/setup.sh nix/host/crane/setupHooks/*.sh)
for f in "${shell_files[@]}"; do
  [ -f "$f" ] || continue
  bash -n "$f" || fail "$f: syntax"
done
if command -v shellcheck >/dev/null; then
  shellcheck -x -S warning "${shell_files[@]}" || fail shellcheck
  echo "  ok: bash -n, shellcheck"
else
  echo "  ok: bash -n (shellcheck not installed)"
fi
echo "== the crane stand-in runs crane's commands (docs/testing.md table, stand-in column)"
"$repo/nix/tests/standin-commands.sh" || fail "the stand-in command table"
# The README's install line (its main block, which .ci/run runs first) lacks nothing that the
# main command needs on a fresh Debian, and .ci/run installs nothing of its own; the check
# proves that each part can fail.
"$repo/nix/tests/readme-setup.sh" || fail "the README's install line"
echo "tier a: PASS in $(($(date +%s) - t0)) s"
