# Stub fenix (tier b): packages.<system>.stable.withComponents, nothing else. Its inputs
# mirror the real fenix's so `follows` and `--override-input fenix/rust-analyzer-src` resolve.
{
  description = "stub fenix for evaluation tests";

  inputs = {
    nixpkgs.url = "github:nixos/nixpkgs/nixos-unstable";
    rust-analyzer-src = {
      url = "github:rust-lang/rust-analyzer/nightly";
      flake = false;
    };
  };

  outputs =
    {
      self,
      nixpkgs,
      rust-analyzer-src,
    }:
    let
      forSystem = system: {
        stable.withComponents =
          components:
          # nixpkgs here must be the stub the root flake got (inputs.nixpkgs.follows).
          nixpkgs.legacyPackages.${system}.stdenv.mkDerivation {
            name = "rust-stable-with-components";
            components = builtins.concatStringsSep " " components;
            rustAnalyzerSrc = "${rust-analyzer-src}";
          };
      };
    in
    {
      packages = {
        x86_64-linux = forSystem "x86_64-linux";
        aarch64-linux = forSystem "aarch64-linux";
      };
    };
}
