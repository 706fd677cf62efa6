#!/usr/bin/env bash
# The dilution check's binary: the chain's instrumented gateway trained on the benchmarked
# shape (chat-nonstream-minimal) alone, then built with the same PGO flags as
# scripts/chain-local.sh's gateway-pgo stage, through the same stage scripts (nix/lib/stages/).
# Writes RESULTS/gateway-pgo-single/bin/gateway (published only on success).
#
# Usage: scripts/bench-dilution.sh RESULTS INSTRUMENTED_GATEWAY
#   TRAINER (required), TARGET_BASE (default RESULTS/chain-target), LLVM_BIN.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
results=$(cd "${1:?results dir}" && pwd)
instrumented=$(realpath "${2:?instrumented gateway}")
: "${TRAINER:?TRAINER must name a built trainer}"
LLVM_BIN=${LLVM_BIN:-/usr/lib/llvm-22/bin}
target_base=${TARGET_BASE:-$results/chain-target}
export STAGE_COMMON="$repo/nix/lib/stages/common.sh" STAGE_WORKLOAD="$repo/nix/lib/stages/workload.sh"

single_shapes="$results/shapes-single"
rm -rf "$single_shapes" && mkdir -p "$single_shapes"
cp "$repo/shapes/chat-nonstream-minimal.toml" "$single_shapes/"
cp -R "$repo/shapes/bodies" "$single_shapes/"

rm -rf "$results/profile-single" "$results/profile-single.tmp"
# The gateway's workload on the one shape (as nix/gateway/workload.nix writes it).
printf '#!/usr/bin/env bash\nexec %q workload --shapes %q "$@"\n' "$TRAINER" "$single_shapes" >"$results/workload-single"
chmod +x "$results/workload-single"
env STAGE_NAME=gateway-profile-single OUT_DIR="$results/profile-single.tmp" \
  WORKLOAD="$results/workload-single" BIN="$instrumented" BIN_NAME=gateway MIN_PROFILES=1 \
  MIN_PROFILE_BYTES=65536 LLVM_PROFDATA="$LLVM_BIN/llvm-profdata" READELF="$(command -v readelf)" \
  bash "$repo/nix/lib/stages/pgo-profile.sh"
mv "$results/profile-single.tmp" "$results/profile-single"
# Content-named, as chain-local.sh does: cargo fingerprints RUSTFLAGS, not the profile.
sha=$(sha256sum "$results/profile-single/gateway.profdata" | cut -c1-16)
prof="$results/profile-single/merged-$sha.profdata"
cp "$results/profile-single/gateway.profdata" "$prof"

host_triple=$(rustc -vV | sed -n 's/^host: //p')
rm -rf "$results/gateway-pgo-single.tmp"
env STAGE_NAME=gateway-pgo-single OUT_DIR="$results/gateway-pgo-single.tmp" SRC="$repo" \
  BIN_NAME=gateway CARGO_BUILD_TARGET="$host_triple" CARGO_EXTRA_ARGS="-p gateway --bin gateway" \
  CARGO_TARGET_DIR="$target_base/gateway-pgo-single" \
  RUSTFLAGS="-Cprofile-use=$prof -Cllvm-args=-pgo-warn-missing-function -Clink-args=-Wl,--emit-relocs" \
  bash "$repo/scripts/cargo-stage.sh"
rm -rf "$results/gateway-pgo-single"
mv "$results/gateway-pgo-single.tmp" "$results/gateway-pgo-single"
