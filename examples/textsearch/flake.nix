{
  description = "textsearch, PGO + BOLT optimized through the gateway flake's lib.mkPgoBoltChain";

  inputs = {
    pgo-bolt.url = "github:pgo-bolt-gateway/gateway";
    # The chain's pinned nixpkgs: the toolchain and BOLT it was tested with.
    nixpkgs.follows = "pgo-bolt/nixpkgs";
  };

  outputs =
    {
      self,
      nixpkgs,
      pgo-bolt,
    }:
    let
      systems = [
        "x86_64-linux"
        "aarch64-linux"
      ];
      forAllSystems =
        f:
        builtins.listToAttrs (
          map (system: {
            name = system;
            value = f system;
          }) systems
        );
      chains = forAllSystems (
        system:
        import ./chain.nix {
          pkgs = nixpkgs.legacyPackages.${system};
          inherit (pgo-bolt.lib) mkPgoBoltChain;
        }
      );
    in
    {
      # textsearch, textsearch-instrumented, -profile, -pgo, -bolt-profile, -pgo-bolt.
      packages = builtins.mapAttrs (
        _: chain:
        builtins.removeAttrs chain [ "checks" ]
        // {
          default = chain.textsearch-pgo-bolt;
        }
      ) chains;
      # pgo-proof (the proofs match the profiles) and closure (no build input is referenced).
      checks = builtins.mapAttrs (_: chain: chain.checks) chains;
    };
}
