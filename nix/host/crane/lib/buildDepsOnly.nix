# crane's buildDepsOnly: the dependencies alone, built over a dummy source (manifests and
# Cargo.lock only, so editing a workspace crate does not rebuild them), with target/ archived
# as the output for a later build's cargoArtifacts.
{
  mkCargoDerivation,
  mkDummySrc,
}:
{
  cargoBuildCommand ? "cargoWithProfile build",
  cargoCheckCommand ? "cargoWithProfile check",
  cargoExtraArgs ? "--locked",
  cargoBuildExtraArgs ? "",
  cargoTestCommand ? "cargoWithProfile test",
  cargoTestExtraArgs ? "--no-run",
  ...
}@args:
let
  cleanedArgs = builtins.removeAttrs args [
    "cargoBuildCommand"
    "cargoCheckCommand"
    "cargoCheckExtraArgs"
    "cargoExtraArgs"
    "cargoBuildExtraArgs"
    "cargoTestCommand"
    "cargoTestExtraArgs"
    "dummySrc"
  ];
  # Tests by default, to cache the dev-dependencies too.
  doCheck = args.doCheck or true;
  cargoCheckExtraArgs = args.cargoCheckExtraArgs or (if doCheck then "--all-targets" else "");
in
mkCargoDerivation (
  cleanedArgs
  // {
    inherit doCheck;
    src = args.dummySrc or (mkDummySrc args.src);
    pnameSuffix = "-deps";
    cargoArtifacts = null;
    env = (args.env or { }) // {
      CRANE_BUILD_DEPS_ONLY = 1;
    };
    # A caller's own commands win, as in crane (its other hooks, postInstall included, run
    # here too: keep what the dummy source cannot satisfy out of the arguments).
    buildPhaseCargoCommand =
      args.buildPhaseCargoCommand or ''
        ${cargoCheckCommand} ${cargoExtraArgs} ${cargoCheckExtraArgs}
        ${cargoBuildCommand} ${cargoExtraArgs} ${cargoBuildExtraArgs}
      '';
    checkPhaseCargoCommand =
      args.checkPhaseCargoCommand or ''
        ${cargoTestCommand} ${cargoExtraArgs} ${cargoTestExtraArgs}
      '';
    doInstallCargoArtifacts = true;
  }
)
