# Everything the flake exposes for one system.
#
# Arguments:
#   self, nixpkgs, crane, fenix  the flake inputs
#   system                       "x86_64-linux" or "aarch64-linux"
#   mkPgoBoltChain               ../lib/mkPgoBoltChain.nix, applied to crane and fenix
{
  self,
  nixpkgs,
  crane,
  fenix,
  system,
  mkPgoBoltChain,
}:
let
  pkgs = nixpkgs.legacyPackages.${system};
  toolchain = import ../lib/toolchain.nix { inherit pkgs fenix system; };
  craneLib = (crane.mkLib pkgs).overrideToolchain (_: toolchain.rust);

  # The gateway's chain (./default.nix), by default trained on the repo's shapes/. `args`
  # (flake.nix lib.gatewayChain) may give `shapes`, the user's own shapes directory to train
  # on and to hold out, and/or { profile, boltProfile } (lib.publishedProfiles): a release's
  # published profiles instead of training (docs/chain.md "The gateway's chain").
  gatewayChain =
    args:
    import ./default.nix {
      inherit
        pkgs
        craneLib
        mkPgoBoltChain
        args
        ;
      root = self;
      valgrind = "${pkgs.valgrind}/bin/valgrind";
    };
  chain = gatewayChain { };
  inherit (chain) trainer bench;

  # Release artifacts (tarball, OCI image) and their gate, checks.release: nix/release.
  release = import ../release {
    inherit pkgs system;
    inherit (chain) runStage;
    inherit (toolchain) readelf;
    gateway = chain.gateway-pgo-bolt;
    profile = chain.gateway-profile;
    boltProfile = chain.gateway-bolt-profile;
    root = self;
    rev = self.shortRev or "dirty";
    sourceDateEpoch = self.lastModified or 1;
  };

  localChain = pkgs.writeShellScript "gateway-chain-local" ''
    # The chain outside the Nix store (scripts/chain-local.sh) with the pinned tools.
    export PATH=${toolchain.rust}/bin:${pkgs.stdenv.cc}/bin:${pkgs.gnumake}/bin:$PATH
    export LLVM_PROFDATA=${toolchain.llvmProfdata}
    export LLVM_BOLT=${toolchain.llvmBolt}
    export MERGE_FDATA=${toolchain.mergeFdata}
    export BOLT_RT_LIB=${toolchain.boltRuntimeLib}
    export READELF=${toolchain.readelf}
    if [ ! -f scripts/chain-local.sh ]; then
      echo "run from the repository root" >&2
      exit 1
    fi
    exec bash scripts/chain-local.sh "$@"
  '';
in
{
  packages = {
    inherit (chain)
      gateway
      gateway-instrumented
      gateway-profile
      gateway-pgo-build
      gateway-pgo
      gateway-bolt-profile
      gateway-pgo-bolt
      ;
    inherit trainer bench;
    default = chain.gateway-pgo-bolt;
  }
  // release.packages;

  checks = chain.checks // release.checks;

  devShells.default = pkgs.mkShell {
    packages = [
      toolchain.rust
      toolchain.bolt
      pkgs.nixfmt
    ];
    # The tools by absolute path, as the chain uses them (PATH may hold another LLVM's).
    LLVM_PROFDATA = toolchain.llvmProfdata;
    LLVM_BOLT = toolchain.llvmBolt;
    MERGE_FDATA = toolchain.mergeFdata;
    BOLT_RT_LIB = toolchain.boltRuntimeLib;
  };

  apps = {
    chain-local = {
      type = "app";
      program = "${localChain}";
    };
    trainer = {
      type = "app";
      program = "${trainer}/bin/trainer";
    };
    bench = {
      type = "app";
      program = "${bench}/bin/bench";
    };
    default = {
      type = "app";
      program = "${chain.gateway-pgo-bolt}/bin/gateway";
    };
  };

  formatter = pkgs.nixfmt;

  inherit gatewayChain;
}
