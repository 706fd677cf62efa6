# A packager's chain file on the host path (`CHAIN_FILE=chain.nix scripts/chain-nix-host.sh`):
# the file is called as the flake's users call it, `import chainFile { pkgs, mkPgoBoltChain }`,
# with CI's host builder (./lib.nix) in place of nixpkgs, crane and fenix. Tier c builds
# examples/textsearch/chain.nix and tier f ripgrep's (nix/tests/fixtures/ripgrep) through it.
#
# Arguments: chainFile (the chain file, a path) and the host tools, as ./chain.nix documents.
# Returns the chain file's outputs and `chainAttrs`: its stages in build order, then its
# checks (what chain-nix-host.sh builds when CHAIN_ATTRS is not given).
{
  chainFile,
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
  chain = import chainFile { inherit (host) pkgs mkPgoBoltChain; };
  names = builtins.attrNames chain;
  # The binary's name: the attribute <bin> whose <bin>-pgo-bolt is there too.
  bins = builtins.filter (n: builtins.elem "${n}-pgo-bolt" names) names;
  bin =
    if builtins.length bins == 1 then
      builtins.head bins
    else
      throw "${toString chainFile} returns no single mkPgoBoltChain result (binaries: ${
        toString bins
      })";
  stages = map (s: "${bin}${s}") [
    "-instrumented"
    "-profile"
    "-pgo-build"
    "-pgo"
    "-bolt-profile"
    "-pgo-bolt"
    ""
  ];
in
chain
// {
  preflight = chain."${bin}-preflight";
  chainAttrs = toString (
    stages ++ map (c: "checks.${c}") (builtins.attrNames (chain.checks or { }))
  );
}
