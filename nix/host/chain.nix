# Tier c / the local Nix command: the SAME nix/chain.nix, evaluated with the host builder.
# Evaluated with nix-build (not as a flake output: the tool paths are host paths, passed as
# arguments by scripts/chain-nix-host.sh).
#
# Arguments (strings unless noted):
#   root            the repository (path; default ../..)
#   rustSysroot     `rustc --print sysroot`
#   vendorDir       `cargo vendor` output, outside the repo
#   llvmBin         Debian's LLVM 22 bin dir (/usr/lib/llvm-22/bin): llvm-profdata,
#                   llvm-bolt and merge-fdata of one LLVM, by absolute path
#   boltRuntimeLib  libbolt_rt_instr.a (libbolt-22-dev)
#   hostTriple      the host triple (`rustc -vV` host)
#   trainerCommand  null: the workspace's trainer; else a path (an executable file) of a
#                   stand-in honouring the same CLI (tier d's failing trainer)
#   shapes          null: the repo's shapes/; else a path (tier d's empty shapes set)
#   profile         null: train; else a profile directory (a store path, with context:
#                   `builtins.storePath`) used instead
#   profileFrom     null; else another checkout (a path) whose trained profile is used
#                   (tier d's stale profile). The profile is that checkout's own derivation,
#                   so the PGO dependency build is the one tier c already built.
{
  root ? ../..,
  rustSysroot,
  vendorDir,
  llvmBin ? "/usr/lib/llvm-22/bin",
  boltRuntimeLib ? "/usr/lib/llvm-22/lib/libbolt_rt_instr.a",
  hostTriple ? "x86_64-unknown-linux-gnu",
  system ? "x86_64-linux",
  trainerCommand ? null,
  shapes ? null,
  profile ? null,
  profileFrom ? null,
}@args:
let
  source = import ../source.nix { inherit root; };
  host = import ./builder.nix {
    inherit system rustSysroot vendorDir;
    inherit (source) manifests;
    src = source.cargo;
  };
  # The trainer is a tool, not the product: thin-local LTO and 16 codegen units save minutes
  # of a 2-core build for nothing the profile depends on.
  trainer = host.buildWith {
    pname = "trainer";
    binName = "trainer";
    cargoExtraArgs = "-p trainer --bin trainer";
    env = {
      CARGO_PROFILE_RELEASE_LTO = "false";
      CARGO_PROFILE_RELEASE_CODEGEN_UNITS = "16";
    };
  };
  chain = import ../chain.nix {
    inherit (host) buildWith runStage;
    inherit hostTriple;
    tools = {
      llvmProfdata = "${llvmBin}/llvm-profdata";
      llvmBolt = "${llvmBin}/llvm-bolt";
      mergeFdata = "${llvmBin}/merge-fdata";
      inherit boltRuntimeLib;
      readelf = "/usr/bin/readelf";
    };
    # A path given here is copied into the store (it must be visible in the sandbox).
    trainer = if trainerCommand == null then "${trainer}/bin/trainer" else "${trainerCommand}";
    shapes = if shapes == null then source.shapes else shapes;
    # Debian's valgrind; /usr is bound into the sandbox (scripts/chain-host-env.sh).
    holdoutGate = import ../checks/holdout.nix { valgrind = "/usr/bin/valgrind"; };
    profile =
      if profileFrom == null then
        profile
      else
        (import ./chain.nix (
          args
          // {
            root = profileFrom;
            profileFrom = null;
          }
        )).gateway-profile;
  };
in
chain // { inherit trainer; }
