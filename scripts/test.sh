#!/usr/bin/env bash
# The project's test command (README "Testing"; .ci/run calls it). Runs every tier in order
# and prints each tier's duration. Needs: cargo, llvm-22, bolt-22, libbolt-22-dev, nix-bin,
# valgrind (see .ci/run for the install line).
set -euo pipefail
cd "$(dirname "$0")/.."

durations=()
tier() {
  local name=$1
  shift
  echo "=== tier: $name"
  local t0=$SECONDS
  "$@"
  local dt=$((SECONDS - t0))
  durations+=("$name: ${dt}s")
  echo "=== tier $name done in ${dt}s"
}

lint() {
  cargo fmt --all -- --check
  cargo clippy --workspace --all-targets --locked -- -D warnings
}

unit_and_integration() {
  cargo test --workspace --locked
}

tier lint lint
tier cargo-test unit_and_integration

echo "=== durations"
printf '  %s\n' "${durations[@]}"
