# lib.mkPgoBoltChain: the PGO + BOLT chain (../chain.nix) for any cargo binary, built with crane.
# The caller names the binary and supplies a workload; the chain owns profile collection,
# merging, the gates and the proofs (docs/chain.md "lib.mkPgoBoltChain").
#
# Applied to the flake's crane and fenix inputs; then called with:
#   pkgs                nixpkgs of the build system (required)
#   src                 the cargo workspace, cleaned (required)
#   binName             the binary to optimize (required)
#   workload            absolute path of an executable: `<workload> BIN` exercises BIN and exits
#                       0 when it did (the contract: ../stages/workload.sh), e.g.
#                       `pkgs.writeShellScript "my-workload" (builtins.readFile ./workload.sh)`
#                       (required)
#   minProfiles         fewest profile files a workload run must leave, one per process of
#                       the binary that exits normally (default 1)
#   minProfileBytes     smallest acceptable .profraw (default 1024)
#   minFdataBytes       smallest acceptable .fdata (default 64)
#   workloadTimeout     seconds one workload run may take (default 3600)
#   cargoExtraArgs      default "-p <binName> --bin <binName>"
#   extraRustflags      prepended to every stage's RUSTFLAGS (default "")
#   boltFlags           llvm-bolt optimization flags (default: ../chain.nix)
#   maxMissingProfiles  allowed "no profile data" warnings in workspace crates (default 0)
#   holdoutGate         null or { plain, pgo, pgoBolt, runStage } -> derivation (checks.holdout)
#   profile             null (train) or a profile directory (<binName>.profdata +
#                       manifest.json), e.g. a release's published one (./publishedProfiles.nix);
#                       the PGO gate still refuses a profile trained on other source
#   boltProfile         null (train) or a BOLT profile directory (<binName>.fdata +
#                       manifest.json); refused unless trained on the very PGO binary it gets
#   craneLib            default: crane on the toolchain below
#   toolchain           default: ../toolchain.nix (fenix stable with llvm-tools, nixpkgs' BOLT
#                       22); else { hostTriple, llvmProfdata, llvmBolt, mergeFdata,
#                       boltRuntimeLib, readelf } by absolute path, with craneLib given (the host
#                       builder of CI: nix/host/lib.nix)
#
# Returns <binName>, <binName>-instrumented, -profile, -pgo, -bolt-profile, -pgo-bolt and
# checks.{pgo-proof,closure} (+ checks.holdout when holdoutGate is given).
{ crane, fenix }:
{
  pkgs,
  src,
  craneLib ? null,
  toolchain ? null,
  ...
}@args:
let
  system = pkgs.stdenv.hostPlatform.system;
  tools =
    if toolchain == null then import ../toolchain.nix { inherit pkgs fenix system; } else toolchain;
  craneLib' =
    if craneLib == null then (crane.mkLib pkgs).overrideToolchain (_: tools.rust) else craneLib;
  builder = import ../crane.nix {
    inherit pkgs src;
    craneLib = craneLib';
  };
in
# Every other argument goes to ../chain.nix as given: it documents the defaults and rejects
# an unknown (or retired: trainCommand, trainData) argument by name.
import ../chain.nix (
  builtins.removeAttrs args [
    "pkgs"
    "src"
    "craneLib"
    "toolchain"
  ]
  // {
    inherit (builder) buildWith runStage;
    inherit (tools) hostTriple;
    tools = {
      inherit (tools)
        llvmProfdata
        llvmBolt
        mergeFdata
        boltRuntimeLib
        readelf
        ;
    };
  }
)
