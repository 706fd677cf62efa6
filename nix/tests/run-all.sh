#!/usr/bin/env bash
# Tiers a-f in order, each with its duration; what .ci/run calls. Tiers d and e reuse tier c's
# store paths; tier f downloads ripgrep from static.crates.io and builds its own chain. Needs
# (Debian bookworm, root): nix-bin llvm-22 bolt-22 libbolt-22-dev clang-22 libclang-rt-22-dev gawk
# curl, a rust toolchain on PATH, and crates.io once for `cargo vendor`.
#
# Usage: nix/tests/run-all.sh [a|b|c|d|e|f|c-extra ...]   (default: a b c d e f; c-extra, on
# demand, after c)
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
tiers=("$@")
[ "${#tiers[@]}" -gt 0 ] || tiers=(a b c d e f)
summary=()
for t in "${tiers[@]}"; do
  t0=$(date +%s)
  echo "######## tier $t"
  case $t in
    a | b) "$repo/nix/tests/tier-$t.sh" ;;
    c | d | e | c-extra) "$repo/nix/tests/tier-$t.sh" "$repo/out/tier-c" ;;
    f) "$repo/nix/tests/tier-f.sh" "$repo/out/tier-f" ;;
    *) echo "unknown tier $t" >&2; exit 2 ;;
  esac
  summary+=("tier $t: $(($(date +%s) - t0)) s")
done
echo "######## durations"
printf '  %s\n' "${summary[@]}"
