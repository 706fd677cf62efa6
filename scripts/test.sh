#!/usr/bin/env bash
# The project's test command (docs/testing.md; the README's tests block runs it). Runs every
# tier in order and prints each tier's duration. Needs: cargo, llvm-22, bolt-22, libbolt-22-dev,
# nix-bin, valgrind, node/npm, python3, .venv-sdk and .agents, iproute2 and unshare,
# redis-server, openssl (the README's main block and scripts/test-deps.sh install them).
#
# Tiers (each fails the run):
#   lint        cargo fmt --check, clippy -D warnings (the workspace and each allocator feature,
#               bench/, tools/layering/ and examples/textsearch), the layering of every crate in
#               tools/layering/layers.toml (gateway, trainer, bench), bench/Cargo.lock's
#               crate versions within the root lock's (scripts/check-bench-lock.sh)
#   cargo-test  unit + integration tests of gateway, trainer, bench and tools/layering (real
#               gateway processes against the mock upstream, replicas sharing rate limits on
#               real redis-server processes, fail-closed stage tests, a short real bench run)
#   sdk         the official openai, anthropic and google-genai Python SDKs (pinned,
#               tests/sdk/requirements.txt, in .venv-sdk) against the real gateway and the mock
#               upstream: each SDK on its own provider and translated onto the others, streaming
#               and not, countTokens, tool-call round
#               trips, typed errors, usage (tests/sdk/run.sh)
#   agents      the real agent CLIs, Claude Code, Codex, Gemini CLI and opencode (pinned,
#               tests/agents/clients.txt, in .agents), non-interactive through the real gateway against the mock
#               upstream, in a network namespace with only lo: each on translated models and
#               a passthrough control, plain answers, tool round trips, Codex's freeform
#               apply_patch (tests/agents/run.sh)
#   nix a-f     static checks, stub evaluation, the chain in a real Nix sandbox (instrumented
#               build, the gateway's workload with Debian's llvm-profdata-22, PGO build gated
#               on no hash mismatch, BOLT profile with llvm-bolt-22, proofs; examples/textsearch
#               through lib.mkPgoBoltChain; the gateway on a user's shapes), fail-closed, the
#               binary-cache round trip, and ripgrep from crates.io through a chain file
#   bench       valgrind instruction / I1 ratios and the holdout gate on tier c's binaries
#   release     workflows, release derivations, the release gate on tier c's proofs, and
#               scripts/verify-release.sh rebuilding tier c's release from its published
#               profiles (bit for bit; tampered evidence refused)
#
# Not in the default run:
#   chain-local (scripts/chain-local.sh) the same stage scripts as tier c with host tools
#               outside Nix. It repeats the fat-LTO builds that tier c already proves, which
#               CI's time budget cannot spare; run it when changing the stages.
#   chain-extra (nix/tests/tier-c-extra.sh, after tier c) checks.clippy and checks.tests in the
#               sandbox, `nix-build --check` of the profile-use build, the PGO gate and BOLT,
#               and the gateway trained on a user's shapes directory: builds that CI's budget
#               cannot spare and other tiers cover (lint and cargo-test run the same clippy and
#               tests; the release tier's verify-release rebuilds the same stages bit for bit;
#               tier b evaluates the user-shapes wiring). docs/testing.md says why.
#   crane-real  (nix/tests/crane-real.sh) the whole chain built through nix/lib/builder.nix with
#               crane's OWN setup hooks from a crane snapshot (CRANE_SRC; CI cannot fetch
#               crane, so it skips, saying so, when CRANE_SRC is unset), the stand-in's
#               fidelity cases with those hooks, and the stand-in command table (docs/testing.md)
#               against crane's files. ~15 min. Required on the final commit of any change
#               to the chain (nix/, flake.nix, the stage scripts).
#   remote-builders (nix/tests/remote-builders.sh, after tier c) the whole chain built on Nix's
#               remote builders over ssh on loopback (sshd and two builder stores started here),
#               nothing built locally; compared with tier c's build; then the training parts
#               split between two builders. A second whole chain: ~40 min on a loaded 2-core
#               machine. Run it on a change to how stages get their inputs.
#
# Usage: scripts/test.sh [TIER ...]   (default: all but chain-local, chain-extra, crane-real and
#        remote-builders, in the order above)
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
cd "$repo"

durations=()
tier() {
  local name=$1
  shift
  echo "=== tier: $name ($(date -u +%T))"
  local t0=$SECONDS
  "$@"
  local dt=$((SECONDS - t0))
  durations+=("$name: ${dt}s")
  echo "=== tier $name done in ${dt}s"
}

# examples/textsearch is its own cargo workspace (a packager's crate): linted and tested too.
example=(--manifest-path examples/textsearch/Cargo.toml)
# bench/ and tools/layering/ are their own workspaces (outside the chain's cargo source), built
# into the root target/ so that the dependencies they share with it compile once.
bench=(--manifest-path bench/Cargo.toml --target-dir "$repo/target")
layering=(--manifest-path tools/layering/Cargo.toml --target-dir "$repo/target")
lint() {
  cargo fmt --all -- --check
  cargo clippy --workspace --all-targets --locked -- -D warnings
  # The global allocator is one alloc-* feature (gateway/src/main.rs): the others build
  # lint-clean too, and two at once are refused at compile time, naming the fix.
  for a in mimalloc system; do
    cargo clippy -p gateway --bin gateway --no-default-features --features "alloc-$a" --locked \
      -- -D warnings
  done
  local two
  if two=$(cargo check -p gateway --bin gateway --features alloc-system --locked 2>&1); then
    echo "lint: the gateway built with two global allocators (alloc-jemalloc + alloc-system)" >&2
    return 1
  fi
  grep -q 'choose one global allocator' <<<"$two" || {
    printf '%s\n' "$two" >&2
    return 1
  }
  cargo fmt --manifest-path bench/Cargo.toml -- --check
  cargo clippy "${bench[@]}" --all-targets --locked -- -D warnings
  # bench/'s crate versions are the root lock's (the host chain vendors from that one); the
  # check must refuse a lock that names a version the root does not.
  bash scripts/check-bench-lock.sh
  local doctored
  doctored=$(mktemp)
  sed '/^name = "serde"$/{n;s/^version = .*/version = "0.0.1"/}' bench/Cargo.lock >"$doctored"
  if bash scripts/check-bench-lock.sh Cargo.lock "$doctored" 2>/dev/null; then
    echo "lint: scripts/check-bench-lock.sh accepted serde 0.0.1 in bench's lock" >&2
    rm -f "$doctored"
    return 1
  fi
  rm -f "$doctored"
  cargo fmt --manifest-path tools/layering/Cargo.toml -- --check
  cargo clippy "${layering[@]}" --all-targets --locked -- -D warnings
  # Every crate of tools/layering/layers.toml (gateway, trainer, bench) is a stack.
  cargo run -q "${layering[@]}" --locked -- tools/layering/layers.toml
  cargo fmt "${example[@]}" -- --check
  cargo clippy "${example[@]}" --all-targets --locked -- -D warnings
  # Tier d's long-symbol fixture, a crate of its own.
  cargo fmt --manifest-path nix/tests/fixtures/long-symbols/Cargo.toml -- --check
  cargo clippy --manifest-path nix/tests/fixtures/long-symbols/Cargo.toml --target-dir target/long-symbols \
    --locked -- -D warnings
}

cargo_test() {
  cargo test --workspace --locked
  # After the workspace: bench's tests run the gateway that `cargo test --workspace` built
  # into target/debug.
  cargo test "${bench[@]}" --locked
  cargo test "${layering[@]}" --locked
  cargo test "${example[@]}" --locked
  # Every shapes directory the repository ships, validated as the workload's build validates
  # it: a bad fixture fails here in seconds, not at the end of tier c.
  local dir
  for dir in shapes nix/tests/fixtures/user-shapes; do
    cargo run -q --locked -p trainer --bin trainer -- shapes --shapes "$dir" >/dev/null
  done
}

tiers=("$@")
[ "${#tiers[@]}" -gt 0 ] || tiers=(lint cargo-test sdk agents nix bench release)
for t in "${tiers[@]}"; do
  case $t in
    lint) tier lint lint ;;
    cargo-test) tier cargo-test cargo_test ;;
    sdk) tier sdk tests/sdk/run.sh ;;
    agents) tier agents tests/agents/run.sh ;;
    chain-local) tier chain-local scripts/chain-local.sh "$repo/out/chain-local" ;;
    crane-real) tier crane-real nix/tests/crane-real.sh ;;
    remote-builders) tier remote-builders nix/tests/remote-builders.sh "$repo/out/tier-c" ;;
    chain-extra) tier chain-extra nix/tests/run-all.sh c-extra ;;
    nix) tier nix nix/tests/run-all.sh a b c d e f ;;
    # Both reuse tier c's outputs (out/tier-c): no second build of the chain.
    bench) tier bench scripts/bench-ci.sh "$repo/out/tier-c" ;;
    release) tier release nix/tests/release-tests.sh "$repo/out/tier-c" ;;
    *) echo "unknown tier $t" >&2; exit 2 ;;
  esac
done

echo "=== durations"
printf '  %s\n' "${durations[@]}"
