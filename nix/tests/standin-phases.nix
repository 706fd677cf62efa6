# Tier d: the crane stand-in must model stdenv's one-shell phases, or it could not have caught
# the production bug it exists for (a postInstall child process reading a variable that the
# build phase assigned without exporting). Two builds of a dependency-free crate through
# craneLib.buildPackage, differing only in `export`:
#   unexported  must FAIL: the child process does not see buildVar
#   exported    must build: the same child sees it
#
# Arguments (strings): rustSysroot, vendorDir, hostTriple, system (as nix/host/chain.nix)
{
  rustSysroot,
  vendorDir,
  hostTriple ? "x86_64-unknown-linux-gnu",
  system ? "x86_64-linux",
  ...
}:
let
  pkgs = import ../host/pkgs.nix { inherit system hostTriple; };
  craneLib = (import ../host/crane/lib { inherit pkgs vendorDir; }).overrideToolchain (
    _: rustSysroot
  );
  build =
    name: assign:
    craneLib.buildPackage {
      pname = name;
      version = "0.1.0";
      src = ./fixtures/hello-crate;
      doCheck = false;
      buildPhaseCargoCommand = ''
        cargoBuildLog=$(mktemp cargoBuildLogXXXX.json)
        cargoWithProfile build --message-format json-render-diagnostics --locked >"$cargoBuildLog"
        ${assign}
      '';
      postInstall = "bash ${./fixtures/read-build-var.sh}";
    };
in
{
  unexported = build "standin-unexported" "buildVar=$NIX_BUILD_TOP/some.log";
  exported = build "standin-exported" "export buildVar=$NIX_BUILD_TOP/some.log";
}
