# crane's buildPackage: build the workspace (or what cargoExtraArgs selects) on top of a
# dependency build, then install the binaries named in cargo's JSON build log. doCheck
# defaults to true, as crane's does.
{
  mkCargoDerivation,
  buildDepsOnly,
  hook,
}:
{
  cargoBuildCommand ? "cargoWithProfile build",
  cargoExtraArgs ? "--locked",
  cargoBuildExtraArgs ? "",
  cargoTestCommand ? "cargoWithProfile test",
  cargoTestExtraArgs ? "",
  ...
}@args:
let
  cleanedArgs = builtins.removeAttrs args [
    "cargoBuildCommand"
    "cargoExtraArgs"
    "cargoBuildExtraArgs"
    "cargoTestCommand"
    "cargoTestExtraArgs"
  ];
in
mkCargoDerivation (
  cleanedArgs
  // {
    doCheck = args.doCheck or true;
    doInstallCargoArtifacts = args.doInstallCargoArtifacts or false;
    # The caller's hooks would fail on the dummy source: the dependency build only archives.
    cargoArtifacts =
      args.cargoArtifacts or (buildDepsOnly (
        args // { installPhase = "prepareAndInstallCargoArtifactsDir"; }
      ));

    buildPhaseCargoCommand =
      args.buildPhaseCargoCommand or ''
        cargoBuildLog=$(mktemp cargoBuildLogXXXX.json)
        ${cargoBuildCommand} --message-format json-render-diagnostics \
          ${cargoExtraArgs} ${cargoBuildExtraArgs} >"$cargoBuildLog"
      '';

    checkPhaseCargoCommand =
      args.checkPhaseCargoCommand or ''
        ${cargoTestCommand} ${cargoExtraArgs} ${cargoTestExtraArgs}
      '';

    # The binaries were captured right after the build (installFromCargoBuildLogHook's
    # postBuild hook), so a check phase cannot clobber them; move them into $out.
    installPhaseCommand =
      args.installPhaseCommand or ''
        if [ -n "$postBuildInstallFromCargoBuildLogOut" -a \
          -d "$postBuildInstallFromCargoBuildLogOut" ]; then
          echo "actually installing contents of $postBuildInstallFromCargoBuildLogOut to $out"
          mkdir -p $out
          find "$postBuildInstallFromCargoBuildLogOut" -mindepth 1 -maxdepth 1 | xargs -r mv -t $out
        else
          echo "buildPackage: \$postBuildInstallFromCargoBuildLogOut is either undefined" \
            "or does not point to a valid location" >&2
          false
        fi
      '';

    nativeBuildInputs = (args.nativeBuildInputs or [ ]) ++ [
      (hook "installFromCargoBuildLogHook")
      (hook "removeReferencesToRustToolchainHook")
      (hook "removeReferencesToVendoredSourcesHook")
    ];
  }
)
