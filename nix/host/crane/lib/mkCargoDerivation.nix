# crane's mkCargoDerivation: a stdenv derivation whose build, check and install phases run
# the given cargo commands between the usual hooks, with crane's setup hooks sourced first.
{
  pkgs,
  toolchain,
  hook,
  cargoVendorDir,
}:
args@{
  # A target/ to restore before building (a buildDepsOnly output), or null.
  cargoArtifacts,
  # Run in buildPhase between `runHook preBuild` and `runHook postBuild`.
  buildPhaseCargoCommand,
  # Run in checkPhase, which stdenv runs only when doCheck is set.
  checkPhaseCargoCommand ? "",
  # Run in installPhase, before `runHook postInstall`.
  installPhaseCommand ? "mkdir -p $out",
  ...
}:
let
  cleanedArgs = builtins.removeAttrs args [
    "buildPhaseCargoCommand"
    "checkPhaseCargoCommand"
    "installPhaseCommand"
    "pnameSuffix"
  ];
in
pkgs.stdenv.mkDerivation (
  cleanedArgs
  // {
    inherit cargoArtifacts;
    pname = "${args.pname}${args.pnameSuffix or ""}";
    version = args.version or "0.0.0";
    # Whether target/ becomes an output (buildDepsOnly's purpose).
    doInstallCargoArtifacts = args.doInstallCargoArtifacts or true;
    cargoVendorDir = args.cargoVendorDir or cargoVendorDir;

    # In crane's order: the caller's inputs, the toolchain, then the hooks (sourcing order
    # decides the order of the hooks each registers for the same phase).
    nativeBuildInputs =
      (args.nativeBuildInputs or [ ])
      ++ (if toolchain == null then [ ] else [ toolchain ])
      ++ map hook [
        "cargoHelperFunctionsHook"
        "configureCargoCommonVarsHook"
        "configureCargoVendoredDepsHook"
        "inheritCargoArtifactsHook"
        "installCargoArtifactsHook"
        "replaceCargoLockHook"
      ];

    buildPhase =
      args.buildPhase or ''
        runHook preBuild
        cargo --version
        ${buildPhaseCargoCommand}
        runHook postBuild
      '';

    checkPhase =
      args.checkPhase or ''
        runHook preCheck
        ${checkPhaseCargoCommand}
        runHook postCheck
      '';

    configurePhase =
      args.configurePhase or ''
        runHook preConfigure
        echo default configurePhase, nothing to do
        runHook postConfigure
      '';

    installPhase =
      args.installPhase or ''
        runHook preInstall
        ${installPhaseCommand}
        runHook postInstall
      '';
  }
)
