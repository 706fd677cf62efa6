# The chain's builder: crane on the caller's toolchain. Supplies ./chain.nix's `buildWith` and
# `runStage` (their contract is stated there); the commands it puts into a build are
# ./stages scripts. `commonArgs` are the crane arguments every build shares, for a caller's
# own crane builds of the same workspace (nix/gateway/workspace.nix).
#
# Arguments:
#   pkgs      nixpkgs
#   craneLib  crane's lib on the toolchain (`(crane.mkLib pkgs).overrideToolchain`)
#   src       the cargo workspace, cleaned
#   version   the derivations' version (default "0.1.0"; mkPgoBoltChain passes the crate's)
{
  pkgs,
  craneLib,
  src,
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
      cflags ? "",
      env ? { },
    }:
    let
      # The build scripts' C and C++ flags (`cc`, `cmake` crates), under the target's names:
      # the `cc` crate reads CFLAGS_<target> before CFLAGS, and with --target only C compiled
      # for the target (not a host tool's) is meant. The compilers come in `env` (chain.nix).
      cflagVars =
        let
          t = builtins.replaceStrings [ "-" ] [ "_" ] cargoTarget;
        in
        if cargoTarget == null then
          [
            "CFLAGS"
            "CXXFLAGS"
          ]
        else
          [
            "CFLAGS_${t}"
            "CXXFLAGS_${t}"
          ];
      args =
        common
        // {
          inherit pname;
          cargoExtraArgs = "--locked ${cargoExtraArgs}";
        }
        // pgoArgs
        // {
          # A stage's source holds only the crates it builds: the other workspace members
          # get stub targets, so that cargo loads the workspace (stages/stub-crates.sh).
          postUnpack = ''
            STAGE_COMMON=${stage "common.sh"} bash ${stage "stub-crates.sh"} "$sourceRoot"
          '';
        }
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
            if builtins.match ".*@pgoProfile@.*" (rustflags + cflags) != null then
              throw "buildWith ${pname}: flags name @pgoProfile@ but no pgoProfile was given"
            else
              { RUSTFLAGS = rustflags; }
              // (
                if cflags == "" then
                  { }
                else
                  builtins.listToAttrs (
                    map (v: {
                      name = v;
                      value = cflags;
                    }) cflagVars
                  )
              )
          )
        else
          {
            # The C flags likewise (stages/c-flags.sh), after the profile is staged.
            preUnpack = ''
              RUSTFLAGS=$(PGO_PROFILE=${pgoProfile} PGO_RUSTFLAGS=${shellQuote rustflags} \
                STAGE_COMMON=${stage "common.sh"} bash ${stage "pgo-use-flags.sh"})
              export RUSTFLAGS
            ''
            + (
              if cflags == "" then
                ""
              else
                ''
                  ${builtins.head cflagVars}=$(PGO_CFLAGS=${shellQuote cflags} \
                    STAGE_COMMON=${stage "common.sh"} bash ${stage "c-flags.sh"})
                  export ${builtins.head cflagVars}
                  export ${builtins.elemAt cflagVars 1}="''$${builtins.head cflagVars}"
                ''
            );
          };
      cargoBuild = buildLog: ''
        CARGO_BUILD_LOG="${buildLog}" CARGO_STDERR_LOG=${cargoStderrLog} \
          STAGE_COMMON=${stage "common.sh"} \
          bash ${stage "cargo-build.sh"} --release --locked ${cargoExtraArgs}
      '';
      # No `cargo check` pass: nothing else reuses a flagged dependency set, and it would
      # type-check every crate a second time. The dependencies go through cargo-build.sh too,
      # as the binary does (a profile-use build's with the same staged profile and flags): the
      # first cargo run of a chain names the argument to fix when `-p`/`--bin` match nothing.
      depsArgs = args // {
        buildPhaseCargoCommand = cargoBuild "$(mktemp cargoBuildLogXXXX.json)";
      };
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
in
{
  inherit buildWith runStage;
  commonArgs = common;
}
