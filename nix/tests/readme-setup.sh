#!/usr/bin/env bash
# The README's install line (its `main` block, scripts/readme-block.sh) installs everything the
# main command needs on a fresh Debian bookworm (debootstrap --variant=minbase: the packages of
# Priority required, and nothing else). Needed:
#  - nix/host/pkgs.nix's stdenvPackages: the host sandbox's runCommand PATH, read from dpkg's
#    lists at evaluation (a missing one stops the main command in seconds);
#  - the Debian package of every program that the main command's scripts call (scripts/chain-*.sh,
#    the stage scripts, the crane and stdenv stand-ins' hooks): each word in a command position
#    that names a program on this machine, mapped to its package with dpkg -S;
#  - the packages the scripts' own `apt-get install -y ...` hints name;
#  - programs called from Nix strings or by the toolchain, listed below with the reason.
# A needed package is satisfied when it is on the install line, a dependency (Depends or
# Pre-Depends, recursively) of one on it, or of Priority required. Every miss is named with who
# needs it. .ci/run must run the README's main then tests blocks and install nothing itself.
# Then the check proves it can fail: README copies without gawk, and without jq, must be
# refused, naming them.
#
# Usage: nix/tests/readme-setup.sh [README]   (needs dpkg, apt-cache after apt-get update)
set -euo pipefail
# A failure inside $(needs) or $(owner ...) must stop the check, not be read as output.
shopt -s inherit_errexit
repo=$(cd "$(dirname "$0")/../.." && pwd)
cd "$repo"
fail() {
  echo "readme-setup: FAIL: $*" >&2
  exit 1
}

# Programs no script names in a command position, with who calls them.
implicit=(
  "cc:rustc's linker, and the C builds of jemalloc's and ring's build scripts"
  "make:tikv-jemalloc-sys builds jemalloc with make"
  "valgrind:checks.holdout measures instructions with bench callgrind"
)
scanned=(scripts/chain-nix-host.sh scripts/chain-host-env.sh nix/lib/stages/*.sh
  nix/host/stdenv/setup.sh nix/host/crane/setupHooks/*.sh)

# needs: lines "PACKAGE<TAB>WHO NEEDS IT", computed once from this checkout.
needs() {
  local f pkg
  # stdenvPackages, as nix/host/pkgs.nix lists them.
  local std
  std=$(awk '/stdenvPackages = \[/ { on = 1; next } on && /\];/ { exit } on { gsub(/[" ]/, ""); print }' \
    nix/host/pkgs.nix)
  grep -qx gawk <<<"$std" || fail "could not read stdenvPackages from nix/host/pkgs.nix"
  for pkg in $std; do printf '%s\tnix/host/pkgs.nix stdenvPackages\n' "$pkg"; done
  # Hints the scripts print: `apt-get install -y PKG...`.
  for f in "${scanned[@]}" nix/host/pkgs.nix; do
    grep -oE 'apt-get install -y [a-z0-9 .+-]+' "$f" | sed 's/apt-get install -y //' | tr ' ' '\n' |
      grep -E '^[a-z0-9]' | grep -v '^\$' | sed "s|\$|\t$f (its install hint)|" || true
  done
  # Programs in command positions: a line's first word, or the word after | && || ; ( $( `
  # then do else if while until ! command exec xargs time. Comments and single-quoted strings
  # (regular expressions, awk programs) are left out, and so are assignments (word=).
  local word path words pkg
  words=$(for f in "${scanned[@]}"; do
    sed -E "s/#.*\$//; s/'[^']*'//g" "$f" |
      grep -oE '(^|[|;&(`]|\$\(|\b(then|do|else|if|while|until|command|exec|xargs|time)\b|!)[[:space:]]*[a-z][a-z0-9_.+-]*([^=a-z0-9_.+-]|$)' |
      grep -oE '[a-z][a-z0-9_.+-]*[^a-z0-9_.+-]?$' | grep -oE '^[a-z][a-z0-9_.+-]*' |
      sort -u | sed "s|\$|\t$f|" || true
  done)
  # Each program resolved once: builtins and keywords are bash's, the rest must be on PATH.
  for word in $(cut -f1 <<<"$words" | sort -u); do
    case $(type -t "$word" 2>/dev/null || true) in builtin | keyword) continue ;; esac
    path=$(PATH=/usr/sbin:/usr/bin:/sbin:/bin command -v "$word" 2>/dev/null) || continue
    [ "${path#/}" != "$path" ] || continue
    pkg=$(owner "$path")
    awk -F '\t' -v w="$word" -v p="$pkg" '$1 == w { print p "\t" $2 " (" w ")" }' <<<"$words"
  done
  local entry
  for entry in "${implicit[@]}"; do
    path=$(PATH=/usr/sbin:/usr/bin:/sbin:/bin command -v "${entry%%:*}") ||
      fail "${entry%%:*} is not on this machine, so its package is unknown (${entry#*:})"
    printf '%s\t%s\n' "$(owner "$path")" "${entry#*:}"
  done
}
# owner PATH: the Debian package holding PATH, through symlinks (/usr/bin/cc -> gcc-12) and
# merged /usr (/bin/bash is /usr/bin/bash's file).
owner() {
  local p=$1 real o
  for real in "$p" "$(readlink -f "$p")" "/usr$(readlink -f "$p")" "${p#/usr}"; do
    o=$(dpkg -S "$real" 2>/dev/null | head -n1 | cut -d: -f1) && [ -n "$o" ] && {
      echo "$o"
      return
    }
  done
  fail "no Debian package holds $p"
}

# install_line README: the packages of the `main` block's apt-get install.
install_line() {
  local block
  block=$(scripts/readme-block.sh main "$1") || return 1
  # Continuation lines joined; the words after `apt-get install -y` up to && ; | or the end.
  sed -e ':a' -e '/\\$/N; s/\\\n//; ta' <<<"$block" | grep -oE 'apt-get install -y [^&;|]*' |
    sed 's/apt-get install -y //' | tr -s ' ' '\n' | grep -E '^[a-z0-9]' | sort -u
}

# closure PKG...: what installing them installs besides (Depends and Pre-Depends, recursively).
closure() {
  apt-cache depends --recurse --no-recommends --no-suggests --no-conflicts --no-breaks \
    --no-replaces --no-enhances "$@" 2>/dev/null | grep -vE '^ |<' | sort -u
}
# required PKG: in every minimal Debian (debootstrap --variant=minbase installs Priority required).
required() {
  local prio
  prio=$(apt-cache show "$1" 2>/dev/null | sed -n 's/^Priority: //p' | head -n1)
  [ "$prio" = required ]
}

check() {
  local readme=$1 line sat missing=0 pkg
  line=$(install_line "$readme") || return 1
  [ -n "$line" ] || {
    echo "  $readme: the main block has no 'apt-get install -y' line" >&2
    return 1
  }
  # shellcheck disable=SC2086 # one word per package
  sat=$( (printf '%s\n' $line; closure $line) | sort -u)
  for pkg in $(printf '%s\n' "$needed" | cut -f1 | sort -u); do
    grep -qxF "$pkg" <<<"$sat" && continue
    required "$pkg" && continue
    echo "  missing from the README's install line: $pkg (needed by" \
      "$(printf '%s\n' "$needed" | awk -F '\t' -v p="$pkg" '$1 == p { print $2 }' | sort -u |
        paste -sd ';' | sed 's/;/; /g'))" >&2
    missing=1
  done
  return "$missing"
}

command -v apt-cache >/dev/null && command -v dpkg >/dev/null || fail "needs Debian's dpkg and apt-cache"
[ -n "$(apt-cache policy gawk 2>/dev/null | sed -n 's/^ *Candidate: //p')" ] ||
  fail "apt-cache knows no packages: run apt-get update first"
needed=$(needs)
readme=${1:-$repo/README.md}
echo "== the README's install line covers what the main command needs"
echo "  install line: $(install_line "$readme" | tr '\n' ' ')"
echo "  needed: $(printf '%s\n' "$needed" | cut -f1 | sort -u | tr '\n' ' ')"
check "$readme" || fail "the README's install line lacks packages (above)"
echo "  ok: every needed package is on the line, a dependency of one, or in a minimal Debian"

# ci_run_check FILE: FILE (a .ci/run) runs the README's main block, then its tests block, and
# installs or downloads nothing itself: what CI installs before the README's line could hide a
# package the line lacks (it did: CI was green while the line lacked gawk, patch and make).
ci_run_check() {
  local order
  if grep -nE '^[^#]*(apt-get|apt |pip3? install|-m pip|npm (install|i) |curl |wget )' "$1" >&2; then
    echo "  $1 installs or downloads something itself (above): the README's blocks must" >&2
    return 1
  fi
  order=$(grep -oE 'readme-block\.sh (main|tests)' "$1" | cut -d' ' -f2 | paste -sd ' ')
  [ "$order" = "main tests" ] || {
    echo "  $1 must run the README's main block, then its tests block (found: $order)" >&2
    return 1
  }
}
echo "== .ci/run runs the README's blocks and installs nothing of its own"
ci_run_check .ci/run || fail ".ci/run"
echo "  ok: main, then tests; no install of its own"

echo "== the check fails without a needed package"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for drop in gawk jq; do
  sed -E "/^apt-get update && apt-get install -y /,/[^\\\\]\$/ s/ $drop( |\$)/\\1/" "$readme" >"$tmp/README-$drop.md"
  ! install_line "$tmp/README-$drop.md" | grep -qx "$drop" || fail "could not remove $drop from a README copy"
  if check "$tmp/README-$drop.md" 2>"$tmp/err-$drop"; then
    fail "a README without $drop passed"
  fi
  grep -q "missing from the README's install line: $drop " "$tmp/err-$drop" ||
    fail "a README without $drop failed without naming it: $(cat "$tmp/err-$drop")"
  echo "  ok: without $drop: $(head -n1 "$tmp/err-$drop" | sed 's/^ *//')"
done
sed 's|^main_block=|apt-get install -y -qq gawk\nmain_block=|' .ci/run >"$tmp/run-installs"
! ci_run_check "$tmp/run-installs" 2>/dev/null || fail "a .ci/run that installs gawk itself passed"
sed 's|readme-block.sh tests|readme-block.sh other|' .ci/run >"$tmp/run-no-tests"
! ci_run_check "$tmp/run-no-tests" 2>/dev/null || fail "a .ci/run without the tests block passed"
echo "  ok: a .ci/run that installs gawk itself, and one without the tests block, are refused"
# scripts/readme-block.sh refuses a block it cannot read whole, rather than run a part of it.
printf '<!-- readme-block: main -->\n```sh\nscripts/chain-nix-host.sh out/nix-host\n' >"$tmp/unclosed.md"
printf '<!-- readme-block: main -->\n\n```sh\ntrue\n```\n' >"$tmp/apart.md"
printf '<!-- readme-block: main -->\n```sh\n```\n' >"$tmp/empty.md"
for bad in "unclosed:is not closed" "apart:must stand right above" "empty:is empty"; do
  if scripts/readme-block.sh main "$tmp/${bad%%:*}.md" >/dev/null 2>"$tmp/err-block"; then
    fail "readme-block.sh read a ${bad%%:*} block"
  fi
  grep -q "${bad#*:}" "$tmp/err-block" ||
    fail "readme-block.sh refused a ${bad%%:*} block without saying so: $(cat "$tmp/err-block")"
done
! scripts/readme-block.sh other "$readme" >/dev/null 2>&1 || fail "readme-block.sh read a block with no marker"
echo "  ok: readme-block.sh refuses an unclosed block, a marker apart from its fence, an empty block, no marker"
