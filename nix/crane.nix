# The production builder: crane on the fenix toolchain. Supplies chain.nix's `buildWith`
# and `runStage`, plus the workspace checks (tests, clippy, fmt).
#
# Arguments:
#   pkgs      nixpkgs
#   craneLib  crane's lib with the fenix toolchain (`(crane.mkLib pkgs).overrideToolchain`)
#   src       the cargo workspace (nix/source.nix `cargo`)
#   testSrc   the workspace plus shapes/ for the tests (nix/source.nix `tests`)
#   version   the workspace version
{
  pkgs,
  craneLib,
  src,
  testSrc ? src,
  version ? "0.1.0",
}:
let
  common = {
    inherit src version;
    strictDeps = true;
    # Tests run in checks.tests: in a flagged build they would rebuild with the profile
    # flags and, instrumented, write .profraw files.
    doCheck = false;
    # BOLT needs the symbol table and the --emit-relocs relocations: stdenv's fixup would
    # strip and patchelf the binary.
    dontStrip = true;
    dontPatchELF = true;
  };

  # Each script by its own path, so that editing one rebuilds only the builds that run it.
  stage = file: ./stages + "/${file}";
  # cargo's stderr, kept by stages/cargo-build.sh for the PGO gate. A shell word: the gate
  # gets it on its own command line (chain.nix's contract), never from the phase's scope.
  cargoStderrLog = ''"$NIX_BUILD_TOP/cargo-stderr.log"'';
  shellQuote = s: "'" + builtins.replaceStrings [ "'" ] [ "'\\''" ] s + "'";

  buildWith =
    {
      pname,
      rustflags ? "",
      cargoTarget ? null,
      cargoExtraArgs ? "",
      binName,
      postInstall ? _: "",
      pgoProfile ? null,
      env ? { },
    }:
    let
      args =
        common
        // {
          inherit pname;
          cargoExtraArgs = "--locked ${cargoExtraArgs}";
        }
        // pgoArgs
        // (if cargoTarget == null then { } else { CARGO_BUILD_TARGET = cargoTarget; })
        // env;
      # Dependencies carry the same RUSTFLAGS (the hot path lives in hyper, tokio,
      # serde_json): hence one buildDepsOnly per flag set. A profile-use build exports no
      # RUSTFLAGS attribute: its flags name `@pgoProfile@` (chain.nix), and crane's own hooks
      # run cargo with whatever RUSTFLAGS are exported (installFromCargoBuildLog's `cargo
      # metadata` asks rustc for target information). So the first hook of the build, before
      # any phase that may run cargo, stages the profile at a fixed path and exports the
      # resolved flags (stages/pgo-use-flags.sh): every process of every phase sees only
      # flags rustc can read, and none names the profile's store path.
      pgoArgs =
        if pgoProfile == null then
          (
            if builtins.match ".*@pgoProfile@.*" rustflags != null then
              throw "buildWith ${pname}: rustflags name @pgoProfile@ but no pgoProfile was given"
            else
              { RUSTFLAGS = rustflags; }
          )
        else
          {
            preUnpack = ''
              RUSTFLAGS=$(PGO_PROFILE=${pgoProfile} PGO_RUSTFLAGS=${shellQuote rustflags} \
                STAGE_COMMON=${stage "common.sh"} bash ${stage "pgo-use-flags.sh"})
              export RUSTFLAGS
            '';
          };
      cargoBuild = buildLog: ''
        CARGO_BUILD_LOG="${buildLog}" CARGO_STDERR_LOG=${cargoStderrLog} \
          STAGE_COMMON=${stage "common.sh"} \
          bash ${stage "cargo-build.sh"} --release --locked ${cargoExtraArgs}
      '';
      # No `cargo check` pass: nothing else reuses a flagged dependency set, and it would
      # type-check every crate a second time. A profile-use build's dependencies go through
      # cargo-build.sh too, with the same staged profile and flags as the binary's.
      depsArgs =
        args
        // (
          if pgoProfile == null then
            { cargoCheckCommand = "true"; }
          else
            { buildPhaseCargoCommand = cargoBuild "$(mktemp cargoBuildLogXXXX.json)"; }
        );
    in
    craneLib.buildPackage (
      args
      // {
        cargoArtifacts = craneLib.buildDepsOnly depsArgs;
        # crane's default command through stages/cargo-build.sh, which also keeps cargo's
        # stderr for the PGO gate. `cargoBuildLog` stays a phase variable on purpose: crane's
        # own postBuild hook (installFromCargoBuildLog) reads it in this same shell.
        buildPhaseCargoCommand = ''
          cargoBuildLog=$(mktemp cargoBuildLogXXXX.json)
          ${cargoBuild "$cargoBuildLog"}
        '';
        postInstall = postInstall { inherit cargoStderrLog; };
      }
    );

  runStage =
    name: env: script:
    pkgs.runCommand name env ''
      set -euo pipefail
      ${script}
    '';

  # The workspace checks build with cargo's dev profile: the release profile's fat LTO would
  # link every test binary for minutes. doCheck = true: crane's cargoTest runs nothing
  # without it (`args.doCheck or true`, and `common` turns it off), and buildDepsOnly then
  # also builds the dev-dependencies (`cargo test --no-run`).
  plainArgs = common // {
    pname = "gateway-workspace";
    src = testSrc;
    doCheck = true;
    CARGO_PROFILE = "dev";
  };
  plainDeps = craneLib.buildDepsOnly plainArgs;
in
{
  inherit buildWith runStage;

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
    # crane's cargoClippy, but through stages/cargo-clippy.sh: a lint that only the flake's
    # newer toolchain knows fails with a message that says so.
    clippy = craneLib.mkCargoDerivation (
      plainArgs
      // {
        pnameSuffix = "-clippy";
        cargoArtifacts = plainDeps;
        doInstallCargoArtifacts = false;
        buildPhaseCargoCommand = ''
          STAGE_COMMON=${stage "common.sh"} bash ${stage "cargo-clippy.sh"} \
            --profile dev --locked --workspace --all-targets -- --deny warnings
        '';
      }
    );
    fmt = craneLib.cargoFmt { inherit src version; pname = "gateway-workspace"; };
  };
}
