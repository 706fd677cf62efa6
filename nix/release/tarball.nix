# packages.<system>.gateway-tarball: the reproducible release tarball of gateway-pgo-bolt.
# $out holds <bin>-<version>-<system>.tar.gz and its .sha256; the layout, the reproducibility
# rules and the double release check are in ./make-tarball.sh, which also runs outside Nix.
#
# Arguments:
#   runStage         name -> env -> script -> derivation (nix/lib/builder.nix or nix/host/lib.nix):
#                    a plain builder with bash, coreutils, tar, gzip, grep, sed, awk, find
#   gateway          the gateway-pgo-bolt derivation (bin/<binName>, share/<binName>/*.json)
#   profile          the profile directory it was built with (gateway-profile: gateway.profdata,
#                    manifest.json), published next to the tarball
#   boltProfile      the BOLT profile directory (gateway-bolt-profile: gateway.fdata,
#                    manifest.json), published next to the tarball
#   releaseCheck     scripts/release-check.sh (a path)
#   readelf          absolute path of readelf
#   license          the LICENSE file (a path), or null: then the build fails, naming it
#   exampleConfig    gateway.example.toml (a path)
#   version          the release version (the workspace's Cargo.toml)
#   system           the Nix system, part of the file name
#   rev              the source revision (`self.shortRev or "dirty"`), recorded in release.json
#   sourceDateEpoch  the mtime of every entry (`self.lastModified`): the same commit gives the
#                    same bytes
#   binName          the binary (default "gateway")
#   floors           release-check floors to override, e.g. { RELEASE_MIN_BOLT_FUNCS = "50"; }
#                    (default { }: scripts/release-check.sh's own, set for this gateway)
{
  runStage,
  gateway,
  profile,
  boltProfile,
  releaseCheck,
  readelf,
  license,
  exampleConfig,
  version,
  system,
  rev,
  sourceDateEpoch,
  binName ? "gateway",
  floors ? { },
}:
runStage "${binName}-tarball-${version}" (
  {
    GATEWAY = gateway;
    PROFILE_DIR = profile;
    BOLT_PROFILE_DIR = boltProfile;
    BIN_NAME = binName;
    # Empty when absent: make-tarball.sh then fails closed and says why (evaluation must not
    # fail, or one missing file would hide every other package from `nix flake show`).
    LICENSE_FILE = if license == null then "" else license;
    EXAMPLE_CONFIG = exampleConfig;
    RELEASE_CHECK = releaseCheck;
    READELF = readelf;
    VERSION = version;
    SYSTEM = system;
    REV = rev;
    SOURCE_DATE_EPOCH = toString sourceDateEpoch;
  }
  // floors
) "bash ${./make-tarball.sh}"
