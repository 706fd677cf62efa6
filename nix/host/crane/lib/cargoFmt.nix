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
    # Nothing to archive, but the install hook archives a target dir: crane's extra phase.
    preInstallPhases = [ "ensureTargetDir" ] ++ (args.preInstallPhases or [ ]);
    ensureTargetDir = ''
      mkdir -p ''${CARGO_TARGET_DIR:-target}
    '';
  }
)
