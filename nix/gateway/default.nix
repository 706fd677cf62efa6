# This repository's use of the library: the gateway's chain (lib.mkPgoBoltChain with the
# gateway's arguments, ./chain-args.nix), the trainer, the bench and the workspace checks
# (./workspace.nix). The one wiring of both callers: the flake (./per-system.nix) and CI's
# host chain (../host/chain.nix), which differ only in the builder and tools they pass.
#
# Arguments:
#   pkgs            nixpkgs (the stand-in on the host)
#   craneLib        crane's lib on the toolchain
#   mkPgoBoltChain  lib.mkPgoBoltChain (../lib/mkPgoBoltChain.nix) as the caller applied it
#   root            the repository
#   valgrind        absolute path of valgrind (the holdout gate counts instructions)
#   args            the caller's choices, each optional: shapes, workload, perShape, allocator,
#                   profile, boltProfile
#                   (docs/chain.md "The gateway's chain")
#
# Returns the chain's outputs (gateway, gateway-instrumented, ... gateway-pgo-bolt) with
# trainer, bench, runStage and checks (the chain's and the workspace's).
{
  pkgs,
  craneLib,
  mkPgoBoltChain,
  root,
  valgrind,
  args ? { },
}:
let
  source = import ./source.nix { inherit root; };
  workspace = import ./workspace.nix { inherit pkgs craneLib source; };
  chain = mkPgoBoltChain (
    import ./chain-args.nix {
      inherit pkgs valgrind;
      inherit (workspace) runStage trainer bench;
      shapes = args.shapes or source.shapes;
      workload = args.workload or null;
      perShape = args.perShape or true;
      allocator = args.allocator or null;
    }
    // builtins.removeAttrs args [
      "shapes"
      "workload"
      "perShape"
      "allocator"
    ]
    // {
      inherit pkgs craneLib;
      # The gateway crate alone (./source.nix): a test, trainer or docs edit leaves every
      # chain stage that does not run the trainer as it was.
      src = source.gateway;
    }
  );
in
chain
// {
  inherit (workspace) trainer bench runStage;
  checks = chain.checks // workspace.checks;
}
