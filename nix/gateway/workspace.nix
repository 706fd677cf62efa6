# This repository's own crane builds beside the chain: the trainer (the workload's driver),
# the bench (checks.holdout runs it) and the workspace checks (tests, clippy, fmt), on the
# same builder as the chain (../lib/builder.nix).
#
# Arguments:
#   pkgs      nixpkgs
#   craneLib  crane's lib on the toolchain
#   source    ./source.nix applied to the repository
{
  pkgs,
  craneLib,
  source,
}:
let
  # The trainer's own source: a gateway edit leaves it, and its cache entry, as it was.
  builder = import ../lib/builder.nix {
    inherit pkgs craneLib;
    src = source.trainer;
  };
  inherit (builder) buildWith commonArgs;
  stage = file: ../lib/stages + "/${file}";

  # The workspace checks build with cargo's dev profile: the release profile's fat LTO would
  # link every test binary for minutes. doCheck = true: crane's cargoTest runs nothing
  # without it (`args.doCheck or true`, and `commonArgs` turns it off), and buildDepsOnly then
  # also builds the dev-dependencies (`cargo test --no-run`).
  plainArgs = commonArgs // {
    pname = "gateway-workspace";
    src = source.tests;
    doCheck = true;
    CARGO_PROFILE = "dev";
  };
  plainDeps = craneLib.buildDepsOnly plainArgs;
in
{
  inherit (builder) runStage;

  # The trainer is a tool, not the product: thin-local LTO and 16 codegen units save minutes
  # for nothing the profile depends on.
  trainer = buildWith {
    pname = "trainer";
    binName = "trainer";
    cargoExtraArgs = "-p trainer --bin trainer";
    env = {
      CARGO_PROFILE_RELEASE_LTO = "false";
      CARGO_PROFILE_RELEASE_CODEGEN_UNITS = "16";
    };
  };

  # bench/ is a cargo workspace of its own (no chain stage's source holds it): built from
  # bench/ (sourceRoot) beside the trainer it depends on, in one derivation (no dependency
  # build: nothing else reuses it). A tool like the trainer: no fat LTO.
  bench = craneLib.buildPackage (
    commonArgs
    // {
      pname = "bench";
      src = source.bench;
      sourceRoot = "gateway-bench-src/bench";
      cargoLock = "${source.bench}/bench/Cargo.lock";
      cargoArtifacts = null;
      CARGO_PROFILE_RELEASE_LTO = "false";
      CARGO_PROFILE_RELEASE_CODEGEN_UNITS = "16";
      buildPhaseCargoCommand = ''
        cargoBuildLog=$(mktemp cargoBuildLogXXXX.json)
        CARGO_BUILD_LOG="$cargoBuildLog" CARGO_STDERR_LOG="$NIX_BUILD_TOP/cargo-stderr.log" \
          STAGE_COMMON=${stage "common.sh"} \
          bash ${stage "cargo-build.sh"} --release --locked --bin bench
      '';
    }
  );

  checks = {
    # Unit and integration tests, including the ones that drive the real gateway on
    # loopback (the sandbox has lo and nothing else).
    tests = craneLib.cargoTest (
      plainArgs
      // {
        cargoArtifacts = plainDeps;
        cargoTestExtraArgs = "--workspace";
        # Nothing reuses the test build's target/: archiving it would cost minutes.
        doInstallCargoArtifacts = false;
      }
    );
    # crane's cargoClippy, but through ../lib/stages/cargo-clippy.sh: a lint that only the
    # flake's newer toolchain knows fails with a message that says so.
    clippy = craneLib.mkCargoDerivation (
      plainArgs
      // {
        src = source.lint;
        pnameSuffix = "-clippy";
        cargoArtifacts = plainDeps;
        doInstallCargoArtifacts = false;
        buildPhaseCargoCommand = ''
          STAGE_COMMON=${stage "common.sh"} bash ${stage "cargo-clippy.sh"} \
            --profile dev --locked --workspace --all-targets -- --deny warnings
        '';
      }
    );
    fmt = craneLib.cargoFmt {
      inherit (commonArgs) version;
      src = source.lint;
      pname = "gateway-workspace";
    };
  };
}
