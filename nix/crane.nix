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

  buildWith =
    {
      pname,
      rustflags ? "",
      cargoTarget ? null,
      cargoExtraArgs ? "",
      binName,
      postInstall ? "",
      env ? { },
    }:
    let
      args =
        common
        // {
          inherit pname;
          cargoExtraArgs = "--locked ${cargoExtraArgs}";
          # Dependencies carry the same RUSTFLAGS (the hot path lives in hyper, tokio,
          # serde_json): hence one buildDepsOnly per flag set.
          RUSTFLAGS = rustflags;
        }
        // (if cargoTarget == null then { } else { CARGO_BUILD_TARGET = cargoTarget; })
        // env;
    in
    craneLib.buildPackage (
      args
      // {
        # No `cargo check` pass: nothing else reuses a flagged dependency set, and it would
        # type-check every crate a second time.
        cargoArtifacts = craneLib.buildDepsOnly (args // { cargoCheckCommand = "true"; });
        # crane's default command, with cargo's stderr kept in a file: the PGO gate reads the
        # `hash mismatch` warnings from it ($cargoStderrLog, as in nix/stages/cargo-build.sh).
        buildPhaseCargoCommand = ''
          cargoBuildLog=$(mktemp cargoBuildLogXXXX.json)
          cargoStderrLog=$NIX_BUILD_TOP/cargo-stderr.log
          if ! cargoWithProfile build --message-format json-render-diagnostics \
            --locked ${cargoExtraArgs} >"$cargoBuildLog" 2>"$cargoStderrLog"; then
            cat "$cargoStderrLog" >&2
            exit 1
          fi
          cat "$cargoStderrLog" >&2
        '';
        inherit postInstall;
      }
    );

  runStage =
    name: env: script:
    pkgs.runCommand name env ''
      set -euo pipefail
      ${script}
    '';

  plainArgs = common // {
    pname = "gateway-workspace";
    src = testSrc;
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
      }
    );
    clippy = craneLib.cargoClippy (
      plainArgs
      // {
        cargoArtifacts = plainDeps;
        cargoClippyExtraArgs = "--workspace --all-targets -- --deny warnings";
      }
    );
    fmt = craneLib.cargoFmt { inherit src version; pname = "gateway-workspace"; };
  };
}
