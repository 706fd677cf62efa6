# shellcheck shell=bash
# Sourced by scripts/chain-*.sh and nix/tests/tier-*.sh: finds and checks the host tools
# (TOOLCHAIN.md: rustc's LLVM major must equal llvm-profdata's; /usr/bin/llvm-profdata is
# LLVM 14 and cannot read rustc's profiles, so only absolute LLVM 22 paths are used), vendors
# the crates once per Cargo.lock and sets host_nix_args for nix-build.
# Environment:
#   CHAIN_CRATE       the cargo workspace whose Cargo.lock is vendored (default: this repo)
#   CHAIN_VENDOR_DIR  where `cargo vendor` writes (default /var/tmp/<name>-vendor-<lock sha>)
: "${repo:?repo must be set}"
LLVM_BIN=${LLVM_BIN:-/usr/lib/llvm-22/bin}
BOLT_RT_LIB=${BOLT_RT_LIB:-$(dirname "$LLVM_BIN")/lib/libbolt_rt_instr.a}
for tool in llvm-profdata llvm-bolt merge-fdata; do
  [ -x "$LLVM_BIN/$tool" ] || {
    echo "missing $LLVM_BIN/$tool: apt-get install -y llvm-22 bolt-22 libbolt-22-dev" >&2
    exit 1
  }
done
[ -f "$BOLT_RT_LIB" ] || { echo "missing $BOLT_RT_LIB: apt-get install -y libbolt-22-dev" >&2; exit 1; }
# The build scripts' C (nix/host/lib.nix: clang of rustc's LLVM, by absolute path), and the
# profile runtime its instrumented link tests need (jemalloc's configure links with it).
for tool in clang clang++; do
  [ -x "$LLVM_BIN/$tool" ] || {
    echo "missing $LLVM_BIN/$tool: apt-get install -y clang-22 libclang-rt-22-dev" >&2
    exit 1
  }
done
compgen -G "$("$LLVM_BIN/clang" --print-runtime-dir)/libclang_rt.profile*.a" >/dev/null || {
  echo "missing clang's profile runtime: apt-get install -y libclang-rt-22-dev" >&2
  exit 1
}
command -v rustc >/dev/null || { echo "no rustc on PATH" >&2; exit 1; }
rustc_vv=$(rustc -vV)
rust_sysroot=$(rustc --print sysroot)
host_triple=$(printf '%s\n' "$rustc_vv" | sed -n 's/^host: //p')
rustc_llvm_major=$(printf '%s\n' "$rustc_vv" | sed -nE 's/^LLVM version: ([0-9]+).*/\1/p')
profdata_major=$("$LLVM_BIN/llvm-profdata" --version | grep -oE 'version [0-9]+' | head -n1 | grep -oE '[0-9]+')
if [ "$rustc_llvm_major" != "$profdata_major" ]; then
  echo "rustc uses LLVM $rustc_llvm_major but $LLVM_BIN/llvm-profdata is LLVM $profdata_major" >&2
  exit 1
fi

chain_crate=$(cd "${CHAIN_CRATE:-$repo}" && pwd)
[ -f "$chain_crate/Cargo.lock" ] || {
  echo "$chain_crate has no Cargo.lock: the chain builds with --locked (run cargo generate-lockfile)" >&2
  exit 1
}
lock_sha=$(sha256sum "$chain_crate/Cargo.lock" | cut -c1-16)
vendor_name=gateway
[ "$chain_crate" = "$repo" ] || vendor_name=$(basename "$chain_crate")
vendor_dir=${CHAIN_VENDOR_DIR:-/var/tmp/$vendor_name-vendor-$lock_sha-mtime1}
if [ ! -f "$vendor_dir/.complete" ]; then
  rm -rf "$vendor_dir.tmp"
  (cd "$chain_crate" && cargo vendor --locked --versioned-dirs "$vendor_dir.tmp" >/dev/null 2>"$vendor_dir.log") || {
    cat "$vendor_dir.log" >&2
    exit 1
  }
  # A crate without dependencies vendors nothing, and cargo then creates no directory.
  mkdir -p "$vendor_dir.tmp"
  rm -rf "$vendor_dir"
  # Every mtime 1, as in the Nix store where crane's vendored crates live: the dependency
  # builds' archived target/ (mtime 1 too) must stay fresh against them.
  find "$vendor_dir.tmp" -exec touch -h -d @1 {} +
  mv "$vendor_dir.tmp" "$vendor_dir"
  touch "$vendor_dir/.complete"
fi

# The toolchain as a store path, as fenix's is: crane's removeReferencesToRustToolchain hook
# (and the stand-in's, which runs the same commands) fails on a sysroot outside the store.
# Added once per toolchain (`rustc -vV` names its commit); the builds get it as an input.
toolchain_rec=/var/tmp/gateway-toolchain-$(printf '%s\n' "$rustc_vv" | sha256sum | cut -c1-16).path
rust_toolchain=$(cat "$toolchain_rec" 2>/dev/null || true)
if [ -z "$rust_toolchain" ] || ! nix-store --check-validity "$rust_toolchain" 2>/dev/null; then
  toolchain_tmp=$(mktemp -d /var/tmp/rust-toolchain.XXXXXX)
  mkdir "$toolchain_tmp/rust-toolchain"
  cp -a "$rust_sysroot/bin" "$rust_sysroot/lib" "$toolchain_tmp/rust-toolchain/"
  rust_toolchain=$(nix-store --add "$toolchain_tmp/rust-toolchain")
  rm -rf "$toolchain_tmp"
  printf '%s\n' "$rust_toolchain" >"$toolchain_rec"
fi

# Debian's nix-bin is Nix 2.8, root, no daemon: flakes on, no substituters (no cache here),
# the sandbox on, with the host tools bound in. /bin etc. for bash, cc, make (jemalloc). Not
# /usr/share or /usr/local: the workload contract promises no host files but its tools'
# (docs/chain.md), and a workload reading them would pass here and fail on the flake.
nix_sandbox_paths="/bin /usr/bin /usr/sbin /usr/lib /usr/lib64 /usr/libexec /usr/include /lib /lib64"
nix_sandbox_paths="$nix_sandbox_paths /etc/alternatives $vendor_dir"
case "$LLVM_BIN" in
  /usr/*) ;;
  *) nix_sandbox_paths="$nix_sandbox_paths $(dirname "$LLVM_BIN")" ;;
esac
# shellcheck disable=SC2034 # used by the scripts that source this file
host_nix_args=(
  --extra-experimental-features 'nix-command flakes'
  --option substituters ''
  --option build-users-group ''
  --option sandbox true
  --option sandbox-paths "$nix_sandbox_paths"
  --arg rustSysroot "builtins.storePath \"$rust_toolchain\""
  --argstr vendorDir "$vendor_dir"
  --argstr llvmBin "$LLVM_BIN"
  --argstr boltRuntimeLib "$BOLT_RT_LIB"
  --argstr hostTriple "$host_triple"
)
