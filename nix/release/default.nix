# The release artifacts of one system and their gate, as nix/gateway/per-system.nix wires them:
# packages.gateway-tarball (./tarball.nix), packages.gateway-image (./image.nix) and
# checks.release (./release-check.nix). Version, licence and repository come from the
# workspace's Cargo.toml, so a release cannot disagree with the binary it ships.
#
# Arguments:
#   pkgs             nixpkgs of the build system (dockerTools, runCommand, jq)
#   runStage         name -> env -> script -> derivation (the chain builder's)
#   gateway          the gateway-pgo-bolt derivation
#   profile          its gateway-profile, boltProfile its gateway-bolt-profile (published)
#   readelf          absolute path of readelf (nix/lib/toolchain.nix)
#   root             the repository (`self`): Cargo.toml, LICENSE, gateway.example.toml
#   system           the Nix system
#   rev              the source revision (`self.shortRev or "dirty"`)
#   sourceDateEpoch  mtime of the tarball's entries (`self.lastModified or 1`)
#
# Returns { packages = { gateway-tarball, gateway-image }; checks = { release }; }.
{
  pkgs,
  runStage,
  gateway,
  profile,
  boltProfile,
  readelf,
  root,
  system,
  rev,
  sourceDateEpoch,
}:
let
  cargo = (builtins.fromTOML (builtins.readFile (root + "/Cargo.toml"))).workspace.package;
  releaseCheck = ../../scripts/release-check.sh;
  exampleConfig = root + "/gateway.example.toml";
  # null when the repository has none: the tarball build then fails and says so.
  license = if builtins.pathExists (root + "/LICENSE") then root + "/LICENSE" else null;
in
{
  packages = {
    gateway-tarball = import ./tarball.nix {
      inherit
        runStage
        gateway
        profile
        boltProfile
        releaseCheck
        readelf
        license
        exampleConfig
        system
        rev
        sourceDateEpoch
        ;
      inherit (cargo) version;
    };
    gateway-image = import ./image.nix {
      inherit (pkgs) dockerTools runCommand;
      inherit
        runStage
        gateway
        releaseCheck
        readelf
        exampleConfig
        rev
        ;
      inherit (cargo) version;
      jq = "${pkgs.jq}/bin/jq";
      source = cargo.repository;
      licenses = cargo.license;
    };
  };
  checks.release = import ./release-check.nix {
    inherit
      runStage
      gateway
      releaseCheck
      readelf
      ;
  };
}
