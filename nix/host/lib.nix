# CI's host builder for ../lib/mkPgoBoltChain.nix: the flake's own lib function, called with the
# crane stand-in (./crane) on the stdenv stand-in (./pkgs.nix), host rustc/cargo and Debian's
# LLVM 22 in place of crane, nixpkgs and fenix, which CI cannot fetch. Tier c builds the
# gateway's chain (./chain.nix) and a packager's chain file (./packager.nix) through it.
#
# Arguments (strings): as ./chain.nix documents them.
{
  rustSysroot,
  vendorDir,
  llvmBin ? "/usr/lib/llvm-22/bin",
  boltRuntimeLib ? "/usr/lib/llvm-22/lib/libbolt_rt_instr.a",
  hostTriple ? "x86_64-unknown-linux-gnu",
  system ? "x86_64-linux",
  craneHooks ? null,
}:
let
  pkgs = import ./pkgs.nix { inherit system hostTriple; };
  craneLib =
    (import ./crane/lib (
      {
        inherit pkgs vendorDir;
      }
      // (if craneHooks == null then { } else { hooks = craneHooks; })
    )).overrideToolchain
      (_: rustSysroot);
  toolchain = {
    inherit hostTriple;
    llvmProfdata = "${llvmBin}/llvm-profdata";
    llvmBolt = "${llvmBin}/llvm-bolt";
    mergeFdata = "${llvmBin}/merge-fdata";
    inherit boltRuntimeLib;
    readelf = "/usr/bin/readelf";
    strip = "${llvmBin}/llvm-strip";
    # Debian's clang-22 (beside llvm-22): the build scripts' C, by absolute path.
    clang = "${llvmBin}/clang";
    clangxx = "${llvmBin}/clang++";
  };
  lib = import ../lib/mkPgoBoltChain.nix {
    crane = null;
    fenix = null;
  };
in
{
  inherit pkgs craneLib toolchain;
  # lib.mkPgoBoltChain as a flake user calls it; craneLib and toolchain are the host's.
  mkPgoBoltChain = args: lib (args // { inherit craneLib toolchain; });
}
