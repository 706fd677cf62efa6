# crane's cargoFmt: `cargo fmt -- --check`, no dependencies, no vendored sources.
{ mkCargoDerivation }:
{
  cargoExtraArgs ? "",
  rustFmtExtraArgs ? "",
  ...
}@origArgs:
let
  args = builtins.removeAttrs origArgs [
    "cargoExtraArgs"
    "rustFmtExtraArgs"
  ];
in
mkCargoDerivation (
  args
  // {
    cargoArtifacts = null;
    cargoVendorDir = null;
    pnameSuffix = "-fmt";
    buildPhaseCargoCommand = "cargo fmt ${cargoExtraArgs} -- --check ${rustFmtExtraArgs}";
    # Nothing to archive, but crane's install hook still wants a target dir.
    preInstall = "mkdir -p \${CARGO_TARGET_DIR:-target}";
  }
)
