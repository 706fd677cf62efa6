{
  description = "A fast multi-dialect AI gateway, PGO + BOLT optimized by a chain of derivations";

  inputs = {
    nixpkgs.url = "github:NixOS/nixpkgs/nixos-unstable";
    crane.url = "github:ipetkov/crane";
    fenix = {
      url = "github:nix-community/fenix";
      inputs.nixpkgs.follows = "nixpkgs";
    };
  };

  # Only Nix 2.8 builtins below (no lib.fileset, no builtins.readFileType): CI evaluates this
  # flake with Debian's nix-bin against the stub inputs in nix/tests/stubs (tier b).
  outputs =
    {
      self,
      nixpkgs,
      crane,
      fenix,
    }:
    let
      # Training runs on the build host, so each system is built natively (no cross chain).
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
      mkPgoBoltChain = import ./nix/lib/mkPgoBoltChain.nix { inherit crane fenix; };
      perSystem = forAllSystems (
        system:
        import ./nix/gateway/per-system.nix {
          inherit
            self
            nixpkgs
            crane
            fenix
            system
            mkPgoBoltChain
            ;
        }
      );
      select = name: builtins.mapAttrs (_: outputs: outputs.${name}) perSystem;
    in
    {
      packages = select "packages";
      checks = select "checks";
      devShells = select "devShells";
      apps = select "apps";
      formatter = select "formatter";

      # Hydra and the CI systems that read it (buildbot-nix, hercules-ci): every stage and check
      # for x86_64-linux, as <name>.<system> (Hydra's job names). Training runs natively, so a
      # system's jobs need a builder of that system; aarch64-linux is left to fleets that have one.
      hydraJobs =
        let
          system = "x86_64-linux";
          jobs = builtins.mapAttrs (_: drv: { ${system} = drv; });
        in
        jobs (builtins.removeAttrs self.packages.${system} [ "default" ])
        // {
          checks = jobs self.checks.${system};
        };

      overlays.default = final: prev: {
        gateway = self.packages.${final.stdenv.hostPlatform.system}.gateway-pgo-bolt;
      };

      lib = {
        inherit mkPgoBoltChain;
        # A release's published profiles as the chain's inputs: nix/lib/publishedProfiles.nix.
        publishedProfiles = import ./nix/lib/publishedProfiles.nix;
        # The gateway's chain for one system: `(gatewayChain "x86_64-linux" { }).gateway-pgo-bolt`
        # trains on shapes/; { shapes = ./my-shapes; } on your own traffic (held out too);
        # { profile, boltProfile } (publishedProfiles) uses a release's profiles instead.
        gatewayChain = system: perSystem.${system}.gatewayChain;
      };

      # `nix flake init -t github:pgo-bolt-gateway/gateway`: a crate with its workload and
      # lib.mkPgoBoltChain wired (examples/textsearch; replace the crate with yours).
      templates.default = {
        path = ./examples/textsearch;
        description = "A Rust binary, PGO + BOLT optimized by lib.mkPgoBoltChain from its workload";
      };
    };
}
