# lib.publishedProfiles: a release's published profiles as the chain's `profile` and
# `boltProfile` directories, so a build uses them instead of training (docs/releases.md "Verifiable
# releases"). Each file is a path: a fixed-output fetch (`pkgs.fetchurl { url; hash; }`) of
# the file published next to the release tarball, or a local file.
#
# Arguments:
#   pkgs             nixpkgs (runCommand)
#   profdata         <name>.profdata
#   profileManifest  <name>.profdata.manifest.json
#   fdata            <name>.fdata
#   fdataManifest    <name>.fdata.manifest.json
#   binName          the chain's binName (default "gateway", this repository's)
#
# Returns { profile, boltProfile }: directories in the stage outputs' layout
# (<binName>.profdata + manifest.json, <binName>.fdata + manifest.json). The files are copied,
# never rewritten, so their bytes (and the gates on them) are the release's.
{
  pkgs,
  profdata,
  profileManifest,
  fdata,
  fdataManifest,
  binName ? "gateway",
}:
let
  dir =
    name: data: dataName: manifest:
    pkgs.runCommand name { } ''
      mkdir -p $out
      cp ${data} $out/${dataName}
      cp ${manifest} $out/manifest.json
    '';
in
{
  profile = dir "published-profile" profdata "${binName}.profdata" profileManifest;
  boltProfile = dir "published-bolt-profile" fdata "${binName}.fdata" fdataManifest;
}
