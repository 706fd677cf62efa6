# lib.mkPgoBoltChain: the PGO + BOLT chain (./chain.nix) for any cargo binary, built with crane
# (./builder.nix) on the toolchain (./toolchain.nix). The caller names the binary and supplies
# a workload; the chain owns profile collection, merging, the gates and the proofs.
#
# Applied to the flake's crane and fenix inputs; then called with the arguments documented
# once, in docs/chain.md "Arguments" (pkgs, src and workload required; binName defaults to
# this repository's "gateway"). Of those, pkgs, version, craneLib and toolchain are taken
# here; src goes to the builder and to ./chain.nix's preflight; every other goes to
# ./chain.nix as given.
#
# Returns <binName>, <binName>-instrumented, -profile, -pgo-build, -pgo, -bolt-profile,
# -pgo-bolt and checks.{pgo-proof,closure} (+ checks.holdout when holdoutGate is given).
{ crane, fenix }:
{
  pkgs,
  src,
  version ? null,
  craneLib ? null,
  toolchain ? null,
  ...
}@args:
let
  system = pkgs.stdenv.hostPlatform.system;
  tools =
    if toolchain == null then import ./toolchain.nix { inherit pkgs fenix system; } else toolchain;
  craneLib' =
    if craneLib == null then (crane.mkLib pkgs).overrideToolchain (_: tools.rust) else craneLib;
  # As crane's crateNameFromCargoToml: the package's version, else the workspace's. Read only
  # when not given (a `src` built by a derivation would make this an import from it).
  manifest = src + "/Cargo.toml";
  cargoToml =
    if builtins.pathExists manifest then builtins.fromTOML (builtins.readFile manifest) else { };
  version' =
    if version != null then
      version
    else
      cargoToml.package.version or cargoToml.workspace.package.version or (throw (
        "mkPgoBoltChain: ${toString manifest} names no package.version or"
        + " workspace.package.version: give `version`"
      ));
  builder = import ./builder.nix {
    inherit pkgs src;
    version = version';
    craneLib = craneLib';
  };
in
# Every other argument goes to ../chain.nix as given: it documents the defaults and rejects
# an unknown (or retired: trainCommand, trainData) argument by name.
import ./chain.nix (
  builtins.removeAttrs args [
    "pkgs"
    "craneLib"
    "toolchain"
  ]
  // {
    version = version';
    inherit (builder) buildWith runStage;
    inherit (tools) hostTriple;
    tools = {
      inherit (tools)
        llvmProfdata
        llvmBolt
        mergeFdata
        boltRuntimeLib
        readelf
        strip
        ;
    }
    # A caller's toolchain without them gets chain.nix's message (or gives cPgo = false).
    // builtins.intersectAttrs {
      clang = null;
      clangxx = null;
    } tools;
  }
)
