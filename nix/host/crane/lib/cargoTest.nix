# crane's cargoTest: `cargo test` in the check phase on top of cargoArtifacts. The check phase
# runs only with doCheck, which defaults to true HERE ONLY (`args.doCheck or true`): an
# inherited `doCheck = false` silently runs no test, as with crane.
{ mkCargoDerivation }:
{
  cargoArtifacts,
  cargoExtraArgs ? "--locked",
  cargoTestExtraArgs ? "",
  ...
}@origArgs:
let
  args = builtins.removeAttrs origArgs [
    "cargoExtraArgs"
    "cargoTestExtraArgs"
  ];
in
mkCargoDerivation (
  args
  // {
    inherit cargoArtifacts;
    doCheck = args.doCheck or true;
    pnameSuffix = "-test";
    buildPhaseCargoCommand = "";
    checkPhaseCargoCommand = "cargoWithProfile test ${cargoExtraArgs} ${cargoTestExtraArgs}";
    preConfigure = ''
      if [[ -z "''${doCheck:-}" ]]; then
        echo '###################################################'
        echo '##                                               ##'
        echo '## doCheck is not set, cargo tests will not run! ##'
        echo '##                                               ##'
        echo '###################################################'
      fi
    ''
    + (args.preConfigure or "");
  }
)
