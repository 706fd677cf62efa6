# A crane stand-in that builds: the subset of crane's API that nix/lib/builder.nix calls, with
# crane's build-time behaviour, so CI runs nix/lib/builder.nix's own shell (crane itself cannot be
# fetched here). Every command its hooks and phases run is the command crane runs at the pinned
# revision (2c71e19), same program and arguments: docs/testing.md "The crane stand-in" lists
# each with both files and lines (tier a checks ours, `scripts/test.sh crane-real` crane's),
# and crane-real swaps in crane's own setup hooks to build the whole chain with them.
#
# What it models, because our build depends on it:
#   - mkCargoDerivation's phases: buildPhase = preBuild hooks, buildPhaseCargoCommand,
#     postBuild hooks; checkPhase (only with doCheck) = checkPhaseCargoCommand; installPhase =
#     installPhaseCommand then postInstall; run by a stdenv whose phases share one bash process
#     (pkgs.stdenv.mkDerivation: nix/host/stdenv for the host builder).
#   - the setup hooks (./setupHooks, one file each, as crane's): cargo and cargoWithProfile,
#     CARGO_HOME and CARGO_PROFILE (release unless set), vendored sources, cargoArtifacts
#     restored into target/ after patching, target/ archived by buildDepsOnly, binaries
#     installed from cargo's JSON build log (read from $cargoBuildLog after the build).
#   - buildDepsOnly over a dummy source (only manifests and Cargo.lock matter), buildPackage
#     with doCheck defaulting to true, cargoTest with `doCheck = args.doCheck or true`.
#
# Arguments:
#   pkgs       nixpkgs or a stand-in: stdenv.mkDerivation, runCommand, makeSetupHook
#   vendorDir  the crates, vendored beforehand (`cargo vendor`); crane downloads them per
#              Cargo.lock instead (vendorCargoDeps), which needs the network
#   hooks      the directory of the setup-hook scripts (default ../setupHooks). The crane-real
#              tier passes crane's own, with their @placeholders@ filled in.
{
  pkgs,
  vendorDir ? null,
  hooks ? ../setupHooks,
}:
let
  hook = name: pkgs.makeSetupHook { inherit name; } (hooks + "/${name}.sh");
  mkLib =
    toolchain:
    let
      mkCargoDerivation = import ./mkCargoDerivation.nix {
        inherit pkgs toolchain hook;
        cargoVendorDir = vendorDir;
      };
      mkDummySrc = import ./mkDummySrc.nix { inherit pkgs; };
      buildDepsOnly = import ./buildDepsOnly.nix { inherit mkCargoDerivation mkDummySrc; };
    in
    {
      overrideToolchain = t: mkLib (if builtins.isFunction t then t pkgs else t);
      inherit mkCargoDerivation buildDepsOnly;
      buildPackage = import ./buildPackage.nix { inherit mkCargoDerivation buildDepsOnly hook; };
      cargoTest = import ./cargoTest.nix { inherit mkCargoDerivation; };
      cargoClippy = import ./cargoClippy.nix { inherit mkCargoDerivation; };
      cargoFmt = import ./cargoFmt.nix { inherit mkCargoDerivation; };
    };
in
mkLib null
