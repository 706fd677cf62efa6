# Tier c: examples/textsearch's chain, through the very call its flake makes
# (examples/textsearch/chain.nix, lib.mkPgoBoltChain as a packager calls it), with CI's host
# builder (./lib.nix) in place of crane and nixpkgs.
#
# Arguments: root (the repository, default ../..) and the host tools, as ./chain.nix documents.
{
  root ? ../..,
  rustSysroot,
  vendorDir,
  llvmBin ? "/usr/lib/llvm-22/bin",
  boltRuntimeLib ? "/usr/lib/llvm-22/lib/libbolt_rt_instr.a",
  hostTriple ? "x86_64-unknown-linux-gnu",
  system ? "x86_64-linux",
  craneHooks ? null,
}:
let
  host = import ./lib.nix {
    inherit
      rustSysroot
      vendorDir
      llvmBin
      boltRuntimeLib
      hostTriple
      system
      craneHooks
      ;
  };
in
import (root + "/examples/textsearch/chain.nix") { inherit (host) pkgs mkPgoBoltChain; }
