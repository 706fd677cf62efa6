# The pinned toolchain and the PGO/BOLT tools, each by absolute store path.
#
# Arguments:
#   pkgs    nixpkgs for the build system
#   fenix   the fenix flake (its nixpkgs follows ours)
#   system  the build system ("x86_64-linux" or "aarch64-linux"; training runs on the build
#           host, so each is built natively)
#
# Returns { rust, hostTriple, llvmProfdata, bolt, llvmBolt, mergeFdata, boltRuntimeLib,
# readelf, strip, clang, clangxx }.
{
  pkgs,
  fenix,
  system,
}:
let
  hostTriple = pkgs.stdenv.hostPlatform.rust.rustcTarget;
  # fenix's stable channel at the pinned rev is Rust 1.97.1. llvm-tools ships llvm-profdata of
  # exactly rustc's LLVM: the profile format follows LLVM's major version, and another
  # llvm-profdata fails with "unsupported instrumentation profile format version".
  rust = fenix.packages.${system}.stable.withComponents [
    "cargo"
    "clippy"
    "rust-src"
    "rustc"
    "rustfmt"
    "llvm-tools"
  ];
  # BOLT 22: the LLVM major of the pinned rustc (and of Debian's bolt-22 that the host tiers
  # and the local chain use, so their figures compare). BOLT reads the final ELF, not bitcode,
  # so it need not match rustc exactly; nixpkgs ships BOLT only for LLVM >= 19.
  bolt = pkgs.llvmPackages_22.bolt;
in
{
  inherit rust hostTriple bolt;
  llvmProfdata = "${rust}/lib/rustlib/${hostTriple}/bin/llvm-profdata";
  # Never through PATH or build inputs: llvm-bolt is called by this absolute path, and its
  # runtime library is passed explicitly (llvm-bolt otherwise resolves it relative to its own
  # location). As a build input, nixpkgs' bolt would also add its setup hook, which BOLTs
  # every ELF in the fixup phase without a profile.
  llvmBolt = "${bolt}/bin/llvm-bolt";
  mergeFdata = "${bolt}/bin/merge-fdata";
  boltRuntimeLib = "${bolt}/lib/libbolt_rt_instr.a";
  readelf = "${pkgs.binutils-unwrapped}/bin/readelf";
  # The shipped binary only, when the crate asks strip = true or "symbols" (bolt-optimize.sh):
  # LLVM's, as GNU strip breaks BOLT's segment layout.
  strip = "${rust}/lib/rustlib/${hostTriple}/bin/llvm-strip";
  # The build scripts' C and C++ (`cc`, `cmake` crates), in every stage: clang of rustc's LLVM
  # major writes and reads the profile format rustc does, so the C trains into the same
  # profile. By absolute path (chain.nix passes it as CC_<target>), never through PATH or
  # build inputs: stdenv's cc stays gcc for everything else. nixpkgs' wrapper, which finds
  # libc's headers and compiler-rt's profile runtime.
  clang = "${pkgs.llvmPackages_22.clang}/bin/clang";
  clangxx = "${pkgs.llvmPackages_22.clang}/bin/clang++";
}
