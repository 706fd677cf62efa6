# Release tests (nix/tests/release-tests.sh): nix/release/tarball.nix and
# nix/release/release-check.nix built for real in the Nix sandbox with the host builder's
# runStage (host tar, gzip, coreutils, readelf bound in with sandbox-paths), on a real
# gateway-pgo-bolt output from the host chain.
#
# Arguments (strings):
#   gateway          a gateway-pgo-bolt output: a store path (tier c's result) or a directory
#                    outside the store (scripts/chain-local.sh's), then copied in
#   profile          its gateway-profile output (a store path or a directory, likewise)
#   boltProfile      its gateway-bolt-profile output (likewise)
#   license          the LICENSE file to ship ("" = none: the tarball must refuse)
#   rev              source revision recorded in release.json
#   sourceDateEpoch  the tarball's mtime
#   system           the Nix system
#   floors           release-check floor overrides (an attrset, see nix/release/tarball.nix)
{
  gateway,
  profile,
  boltProfile,
  license ? "",
  rev ? "test",
  sourceDateEpoch ? "1",
  system ? "x86_64-linux",
  floors ? { },
}:
let
  root = ../..;
  # ../lib/builder.nix's runStage on the host stdenv (its crane arguments are never evaluated).
  inherit
    (import ../lib/builder.nix {
      pkgs = import ../host/pkgs.nix { inherit system; };
      craneLib = null;
      src = null;
    })
    runStage
    ;
  input =
    name: p:
    if builtins.substring 0 11 p == "/nix/store/" then
      builtins.storePath p
    else
      builtins.path {
        path = p;
        inherit name;
      };
  gatewayDrv = input "gateway-pgo-bolt" gateway;
  releaseCheck = root + "/scripts/release-check.sh";
  readelf = "/usr/bin/readelf";
  cargo = builtins.fromTOML (builtins.readFile (root + "/Cargo.toml"));
  version = cargo.workspace.package.version;
in
{
  tarball = import ../release/tarball.nix {
    inherit runStage;
    inherit
      releaseCheck
      readelf
      version
      system
      rev
      ;
    gateway = gatewayDrv;
    profile = input "gateway-profile" profile;
    boltProfile = input "gateway-bolt-profile" boltProfile;
    license =
      if license == "" then
        null
      else
        builtins.path {
          path = license;
          name = "LICENSE";
        };
    exampleConfig = root + "/gateway.example.toml";
    inherit sourceDateEpoch floors;
  };
  release = import ../release/release-check.nix {
    inherit runStage;
    inherit releaseCheck readelf floors;
    gateway = gatewayDrv;
  };
}
