# Tier c / the local Nix command: the gateway's chain through the SAME wiring as the flake
# (../gateway/default.nix: lib.mkPgoBoltChain, ../lib/builder.nix, ../lib/chain.nix, the
# gateway's arguments), built with host tools (./lib.nix): the crane stand-in (./crane) on a
# stdenv stand-in (./pkgs.nix), host rustc/cargo, crates vendored beforehand, Debian's LLVM 22.
# So the shell that ../lib/builder.nix puts into a build runs here exactly as crane would run
# it.
# Evaluated with nix-build (not as a flake output: the tool paths are host paths, passed as
# arguments by scripts/chain-nix-host.sh).
#
# Arguments (strings unless noted):
#   root            the repository (path; default ../..)
#   rustSysroot     `rustc --print sysroot` (the toolchain: its bin/ goes on PATH)
#   vendorDir       `cargo vendor` output, outside the repo
#   llvmBin         Debian's LLVM 22 bin dir (/usr/lib/llvm-22/bin): llvm-profdata,
#                   llvm-bolt and merge-fdata of one LLVM, by absolute path
#   boltRuntimeLib  libbolt_rt_instr.a (libbolt-22-dev)
#   hostTriple      the host triple (`rustc -vV` host)
#   workload        null: the gateway's (`trainer workload` over the shapes); else a path (an
#                   executable file) of a stand-in (tier d's failing workloads)
#   shapes          null: the repo's shapes/; else a path (the user's own shapes: tier c's
#                   fixture; tier d's empty set)
#   profile         null: train; else a profile directory (a store path, with context:
#                   `builtins.storePath`) used instead
#   boltProfile     null: BOLT-train; else a BOLT profile directory (gateway.fdata +
#                   manifest.json, a store path with context) used instead
#                   (scripts/verify-release.sh passes a release's published ones)
#   profileFrom     null; else another checkout (a path) whose trained profile is used
#                   (tier d's stale profile). The profile is that checkout's own derivation,
#                   so the PGO dependency build is the one tier c already built.
#   craneHooks      null: the stand-in's setup hooks; else a directory of crane's own
#                   (scripts/test.sh crane-real)
#   perShape        false: one training derivation over all shapes instead of one per shape
{
  root ? ../..,
  rustSysroot,
  vendorDir,
  llvmBin ? "/usr/lib/llvm-22/bin",
  boltRuntimeLib ? "/usr/lib/llvm-22/lib/libbolt_rt_instr.a",
  hostTriple ? "x86_64-unknown-linux-gnu",
  system ? "x86_64-linux",
  workload ? null,
  shapes ? null,
  profile ? null,
  boltProfile ? null,
  profileFrom ? null,
  craneHooks ? null,
  perShape ? true,
}@hostArgs:
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
in
import ../gateway/default.nix {
  inherit (host) pkgs craneLib mkPgoBoltChain;
  inherit root;
  # Debian's valgrind; /usr is bound into the sandbox (scripts/chain-host-env.sh).
  valgrind = "/usr/bin/valgrind";
  args =
    (if shapes == null then { } else { inherit shapes; })
    // (if workload == null then { } else { inherit workload; })
    // { inherit perShape; }
    // {
      inherit boltProfile;
      profile =
        if profileFrom == null then
          profile
        else
          (import ./chain.nix (
            hostArgs
            // {
              root = profileFrom;
              profileFrom = null;
            }
          )).gateway-profile;
    };
}
