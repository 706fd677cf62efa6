# Tier d: the crane stand-in must behave as crane where our builds depend on it, or it could
# not have caught the production bugs it exists for. Builds of a dependency-free crate through
# craneLib.buildPackage, in pairs that differ in one thing:
#   unexported / exported  a postInstall child process reads a variable the build phase
#                          assigned: without `export` it must FAIL (stdenv's one shell: the
#                          child does not see it), with it the same build must pass.
#   unreadable-rustflags / readable-rustflags
#                          the derivation exports RUSTFLAGS while the build phase's own cargo
#                          (stages/cargo-build.sh) runs with none: crane's postBuild hook then
#                          runs `cargo metadata --format-version 1`, which asks rustc for target
#                          information with the EXPORTED flags. A flag rustc cannot read
#                          (`-Cprofile-use=@pgoProfile@`, the unresolved token) must FAIL the
#                          build after cargo built it, as it fails crane; readable flags build.
# `scripts/test.sh crane-real` builds the same pairs with crane's own hooks (craneHooks).
#
# Arguments: rustSysroot, vendorDir, hostTriple, system, craneHooks (as nix/host/chain.nix)
{
  rustSysroot,
  vendorDir,
  hostTriple ? "x86_64-unknown-linux-gnu",
  system ? "x86_64-linux",
  craneHooks ? null,
  ...
}:
let
  host = import ../host/lib.nix {
    inherit
      rustSysroot
      vendorDir
      hostTriple
      system
      craneHooks
      ;
  };
  inherit (host) craneLib;
  build =
    name: extra:
    craneLib.buildPackage (
      {
        pname = name;
        version = "0.1.0";
        src = ./fixtures/hello-crate;
        doCheck = false;
      }
      // extra
    );
  buildVar =
    name: assign:
    build name {
      buildPhaseCargoCommand = ''
        cargoBuildLog=$(mktemp cargoBuildLogXXXX.json)
        cargoWithProfile build --message-format json-render-diagnostics --locked >"$cargoBuildLog"
        ${assign}
      '';
      postInstall = "bash ${./fixtures/read-build-var.sh}";
    };
  exportedRustflags =
    name: rustflags:
    build name {
      RUSTFLAGS = rustflags;
      buildPhaseCargoCommand = ''
        cargoBuildLog=$(mktemp cargoBuildLogXXXX.json)
        RUSTFLAGS= CARGO_BUILD_LOG="$cargoBuildLog" \
          CARGO_STDERR_LOG="$NIX_BUILD_TOP/cargo-stderr.log" \
          STAGE_COMMON=${../lib/stages/common.sh} \
          bash ${../lib/stages/cargo-build.sh} --release --locked
      '';
    };
in
{
  unexported = buildVar "standin-unexported" "buildVar=$NIX_BUILD_TOP/some.log";
  exported = buildVar "standin-exported" "export buildVar=$NIX_BUILD_TOP/some.log";
  unreadable-rustflags =
    exportedRustflags "standin-unreadable-rustflags"
      "-Cprofile-use=@pgoProfile@";
  readable-rustflags = exportedRustflags "standin-readable-rustflags" "-Cdebuginfo=0";
}
