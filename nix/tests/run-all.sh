#!/usr/bin/env bash
# Tiers a-e in order, each with its duration; what .ci/run calls. Tiers d and e reuse tier c's
# store paths. Needs (Debian bookworm, root): nix-bin llvm-22 bolt-22 libbolt-22-dev, a rust
# toolchain on PATH, and crates.io once for `cargo vendor`.
#
# Usage: nix/tests/run-all.sh [a|b|c|d|e ...]   (default: a b c d e)
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
tiers=("$@")
[ "${#tiers[@]}" -gt 0 ] || tiers=(a b c d e)
summary=()
for t in "${tiers[@]}"; do
  t0=$(date +%s)
  echo "######## tier $t"
  case $t in
    a | b) "$repo/nix/tests/tier-$t.sh" ;;
    c | d | e) "$repo/nix/tests/tier-$t.sh" "$repo/out/tier-c" ;;
    *) echo "unknown tier $t" >&2; exit 2 ;;
  esac
  summary+=("tier $t: $(($(date +%s) - t0)) s")
done
echo "######## durations"
printf '  %s\n' "${summary[@]}"
