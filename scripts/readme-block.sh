#!/usr/bin/env bash
# Prints one marked block of the README, verbatim: the lines of the fenced block that follows
# `<!-- readme-block: NAME -->`, without the fences. .ci/run runs the `main` and `tests`
# blocks exactly as a reader sees them; nix/tests/readme-setup.sh checks the `main` block's
# install line; scripts/newcomer.sh runs it on a fresh Debian.
#
# Usage: scripts/readme-block.sh NAME [README]   (default: the repository's README.md)
# Exit status: 0 printed; 1 no such block, or it is not one closed ```sh fence; 2 usage.
set -euo pipefail
[ $# -ge 1 ] && [ $# -le 2 ] || {
  echo "usage: scripts/readme-block.sh NAME [README]" >&2
  exit 2
}
name=$1
readme=${2:-$(cd "$(dirname "$0")/.." && pwd)/README.md}
# state 0: before the marker; 1: marker seen, fence expected next; 2: inside; 3: closed.
awk -v name="$name" -v file="$readme" '
  state == 0 && $0 == "<!-- readme-block: " name " -->" { state = 1; next }
  state == 1 {
    if ($0 != "```sh") { print file ": block " name ": the marker must stand right above a ```sh fence" > "/dev/stderr"; exit 1 }
    state = 2; next
  }
  state == 2 && $0 == "```" { state = 3; exit }
  state == 2 { print; lines++ }
  END {
    if (state == 0) { print file ": no block marked <!-- readme-block: " name " -->" > "/dev/stderr"; exit 1 }
    if (state == 2) { print file ": block " name " is not closed" > "/dev/stderr"; exit 1 }
    if (state == 3 && lines == 0) { print file ": block " name " is empty" > "/dev/stderr"; exit 1 }
  }
' "$readme"
