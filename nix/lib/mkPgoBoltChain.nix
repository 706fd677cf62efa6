# lib.mkPgoBoltChain: the same PGO + BOLT chain for another crane project.
#
# Applied to the flake's crane and fenix inputs; then called with:
#   pkgs                nixpkgs of the build system (required)
#   src                 the cargo workspace, cleaned (required)
#   binName             the binary to optimize (required)
#   trainCommand        absolute path of an executable with the trainer's CLI contract:
#                       `profile --gateway-bin B --llvm-profdata P --shapes D --out O` writing
#                       O/gateway.profdata + O/manifest.json, and `bolt-profile --gateway-bin B
#                       --merge-fdata M --shapes D --fdata-dir F --out O` writing
#                       O/gateway.fdata + O/manifest.json; non-zero exit and nothing in O on
#                       any failure (required)
#   trainData           the directory passed as --shapes (required)
#   craneLib            default: crane on fenix stable with llvm-tools
#   cargoExtraArgs      default "-p <binName> --bin <binName>"
#   extraRustflags      prepended to every stage's RUSTFLAGS (default "")
#   boltFlags           llvm-bolt optimization flags (default: nix/chain.nix)
#   maxMissingProfiles  allowed "no profile data" warnings in workspace crates (default 0)
#   holdoutGate         null or { plain, pgo, pgoBolt, trainer, shapes, runStage } -> drv
#   profile             null (train) or a profile directory (gateway.profdata + manifest.json),
#                       e.g. a release's published one (./publishedProfiles.nix); the PGO gate
#                       still refuses a profile trained on other source
#   boltProfile         null (train) or a BOLT profile directory (gateway.fdata +
#                       manifest.json); refused unless trained on the very PGO binary it gets
#
# Returns <binName>, <binName>-instrumented, -profile, -pgo, -bolt-profile, -pgo-bolt and
# checks.{pgo-proof,closure} (+ checks.holdout when holdoutGate is given).
{ crane, fenix }:
{
  pkgs,
  src,
  binName,
  trainCommand,
  trainData,
  craneLib ? null,
  cargoExtraArgs ? "-p ${binName} --bin ${binName}",
  extraRustflags ? "",
  boltFlags ? null,
  maxMissingProfiles ? 0,
  holdoutGate ? null,
  profile ? null,
  boltProfile ? null,
}:
let
  system = pkgs.stdenv.hostPlatform.system;
  toolchain = import ../toolchain.nix { inherit pkgs fenix system; };
  craneLib' =
    if craneLib == null then (crane.mkLib pkgs).overrideToolchain (_: toolchain.rust) else craneLib;
  builder = import ../crane.nix {
    inherit pkgs src;
    craneLib = craneLib';
  };
in
import ../chain.nix (
  {
    inherit (builder) buildWith runStage;
    inherit (toolchain) hostTriple;
    tools = {
      inherit (toolchain)
        llvmProfdata
        llvmBolt
        mergeFdata
        boltRuntimeLib
        readelf
        ;
    };
    trainer = trainCommand;
    shapes = trainData;
    inherit
      binName
      cargoExtraArgs
      extraRustflags
      maxMissingProfiles
      holdoutGate
      profile
      boltProfile
      ;
  }
  // (if boltFlags == null then { } else { inherit boltFlags; })
)
