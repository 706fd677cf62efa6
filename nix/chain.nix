# The PGO + BOLT chain as separate derivations, independent of crane and of the host.
#
#   gateway-instrumented -> gateway-profile -> gateway-pgo -> gateway-bolt-profile
#     -> gateway-pgo-bolt   (+ gateway: the plain build, same target and profile)
#
# Every stage is its own store path, so a binary cache substitutes whatever did not change.
# The shell logic lives in ./stages/*.sh (one file per stage, passed one by one so that
# editing one stage does not rebuild the others); the same scripts run in
# scripts/chain-local.sh without Nix.
#
# The build-time contract, the same for every builder (crane in production, the crane
# stand-in in CI: nix/host/crane): whatever runs inside a build is a script under
# ./stages, run as a child process, and every input reaches it on its own command line (its
# arguments or its environment prefix). Never through a variable that a phase assigned: stdenv
# runs the phases in one bash process, so a later phase's inline shell sees such a variable,
# but a child process does not unless it was exported, and which builder exports what is not
# part of any contract.
#
# Arguments:
#   buildWith       { pname, rustflags, cargoTarget, cargoExtraArgs, binName, postInstall,
#                   pgoProfile } -> derivation with bin/<binName>. One cargo release build
#                   with one flag set, through ./stages/cargo-build.sh; its dependencies must
#                   be built with the same RUSTFLAGS (they are instrumented and profile-used
#                   too). `pgoProfile` (null or a .profdata file) goes to cargo-build.sh as
#                   PGO_PROFILE, which stages it at a fixed path inside the build and puts that
#                   path where RUSTFLAGS say `@pgoProfile@` (deps and binary alike).
#                   `postInstall` is a function { cargoStderrLog } -> shell snippet, run after
#                   the binary is in $out/bin: cargoStderrLog is a shell word naming the file
#                   that holds cargo's stderr, for the snippet to pass on explicitly. A failing
#                   snippet fails the build. nix/crane.nix supplies buildWith.
#   runStage        name -> env (attrset) -> script (string) -> derivation. A plain builder
#                   with bash, coreutils, grep, sed and awk; env becomes the environment.
#   hostTriple      the build host's target triple: every chain build passes it as
#                   CARGO_BUILD_TARGET so RUSTFLAGS stay off build scripts and proc macros.
#   tools           { llvmProfdata, llvmBolt, boltRuntimeLib, mergeFdata, readelf }, each an
#                   absolute path (never looked up on PATH).
#   trainer         absolute path of the training command: `<trainer> profile ...` and
#                   `<trainer> bolt-profile ...` as in the trainer's contract.
#   shapes          the training data directory, passed as --shapes.
#   binName         the binary the chain optimizes (default "gateway").
#   cargoExtraArgs  cargo arguments selecting it (default "-p <binName> --bin <binName>").
#   extraRustflags  flags prepended to every stage's RUSTFLAGS (default "").
#   boltFlags       llvm-bolt optimization flags (list; never -use-gnu-stack).
#   maxMissingProfiles  allowed "no profile data available" warnings in workspace crates.
#   profile         null (train), or a profile directory (gateway.profdata + manifest.json:
#                   an earlier gateway-profile output, or a release's published profile, see
#                   ./lib/publishedProfiles.nix) used instead of training; the PGO gate still
#                   refuses it when the source changed since it was trained (tier d).
#   boltProfile     null (train), or a BOLT profile directory (gateway.fdata + manifest.json)
#                   used instead of BOLT training; bolt-optimize.sh refuses it unless its
#                   manifest names the PGO binary being optimized (sha256).
#   holdoutGate     null, or a function { plain, pgo, pgoBolt, trainer, shapes, runStage }
#                   -> derivation: the hook for the holdout gate (its own issue); when given
#                   it becomes checks.holdout.
{
  buildWith,
  runStage,
  hostTriple,
  tools,
  trainer,
  shapes,
  binName ? "gateway",
  cargoExtraArgs ? "-p ${binName} --bin ${binName}",
  extraRustflags ? "",
  boltFlags ? [
    "-reorder-blocks=ext-tsp"
    "-reorder-functions=cdsort"
    "-split-functions"
    "-split-all-cold"
    "-split-eh"
    # -icf=1 is deprecated in BOLT 22.
    "-icf=all"
    "-dyno-stats"
  ],
  maxMissingProfiles ? 0,
  profile ? null,
  boltProfile ? null,
  holdoutGate ? null,
}:
let
  stages = ./stages;
  common = stages + "/common.sh";
  stage = file: "bash ${stages + "/${file}"}";
  flags = rest: if extraRustflags == "" then rest else "${extraRustflags} ${rest}";
  shellQuote = s: "'" + builtins.replaceStrings [ "'" ] [ "'\\''" ] s + "'";

  build =
    {
      suffix,
      rustflags,
      postInstall ? _: "",
      pgoProfile ? null,
    }:
    buildWith {
      pname = if suffix == "" then binName else "${binName}-${suffix}";
      rustflags = flags rustflags;
      cargoTarget = hostTriple;
      inherit
        cargoExtraArgs
        binName
        postInstall
        pgoProfile
        ;
    };

  # Plain release: the baseline of every comparison; same target dir layout as the others.
  plain = build {
    suffix = "";
    rustflags = "";
  };

  # The embedded default path only matters when LLVM_PROFILE_FILE is unset; the trainer
  # always sets it (one file per process, or all runs merge into default_%m.profraw).
  instrumented = build {
    suffix = "instrumented";
    rustflags = "-Cprofile-generate=/tmp/${binName}-pgo";
  };

  trained = runStage "${binName}-profile" {
    STAGE_COMMON = common;
    TRAINER = trainer;
    GATEWAY_BIN = "${instrumented}/bin/${binName}";
    LLVM_PROFDATA = tools.llvmProfdata;
    SHAPES = shapes;
  } (stage "profile.sh");
  profileDir = if profile == null then trained else profile;

  # --emit-relocs: BOLT reorders functions only in relocation mode. `@pgoProfile@`: the
  # profile is staged at one fixed path inside the build (stages/cargo-build.sh), so RUSTFLAGS
  # name no store path: a profile from training, a cache or a release gives the same flags,
  # and the same profile bytes give the same binary whichever derivation supplied them.
  pgoFlags = builtins.concatStringsSep " " [
    "-Cprofile-use=@pgoProfile@"
    "-Cllvm-args=-pgo-warn-missing-function"
    "-Clink-args=-Wl,--emit-relocs"
  ];
  pgo = build {
    suffix = "pgo";
    rustflags = pgoFlags;
    pgoProfile = "${profileDir}/gateway.profdata";
    postInstall =
      { cargoStderrLog }:
      ''
        STAGE_COMMON=${common} \
        CARGO_STDERR_LOG=${cargoStderrLog} \
        PROFILE_DIR=${profileDir} \
        RUSTFLAGS=${shellQuote (flags pgoFlags)} \
        TARGET=${hostTriple} \
        PROOF_OUT="$out/share/${binName}/pgo-proof.json" \
        LLVM_PROFDATA=${tools.llvmProfdata} \
        MAX_MISSING_PROFILES=${toString maxMissingProfiles} \
        ${stage "pgo-gate.sh"}
      '';
  };

  trainedBoltProfile = runStage "${binName}-bolt-profile" {
    STAGE_COMMON = common;
    TRAINER = trainer;
    GATEWAY_BIN = "${pgo}/bin/${binName}";
    LLVM_BOLT = tools.llvmBolt;
    BOLT_RT_LIB = tools.boltRuntimeLib;
    MERGE_FDATA = tools.mergeFdata;
    SHAPES = shapes;
  } (stage "bolt-profile.sh");
  boltProfileDir = if boltProfile == null then trainedBoltProfile else boltProfile;

  pgoBolt = runStage "${binName}-pgo-bolt" {
    STAGE_COMMON = common;
    GATEWAY_BIN = "${pgo}/bin/${binName}";
    PGO_PROOF = "${pgo}/share/${binName}/pgo-proof.json";
    FDATA = "${boltProfileDir}/gateway.fdata";
    FDATA_MANIFEST = "${boltProfileDir}/manifest.json";
    LLVM_BOLT = tools.llvmBolt;
    READELF = tools.readelf;
    BOLT_FLAGS = builtins.concatStringsSep " " boltFlags;
    BIN_NAME = binName;
  } (stage "bolt-optimize.sh");

  checks = {
    pgo-proof = runStage "${binName}-check-pgo-proof" {
      STAGE_COMMON = common;
      RESULT = pgoBolt;
      PROFILE_DIR = profileDir;
      BOLT_PROFILE = boltProfileDir;
      READELF = tools.readelf;
      BIN_NAME = binName;
    } "${stage "check-proofs.sh"} && touch $out";

    closure = runStage "${binName}-check-closure" {
      STAGE_COMMON = common;
      exportReferencesGraph = [
        "graph"
        pgoBolt
      ];
      GRAPH = "graph";
      RESULT = pgoBolt;
      BIN_NAME = binName;
      # Compared as strings only: without their context these paths need not be built (the
      # check must not force a plain build just to name it).
      FORBIDDEN = builtins.concatStringsSep " " (
        map (p: builtins.unsafeDiscardStringContext (toString p)) [
          instrumented
          profileDir
          pgo
          boltProfileDir
          plain
          (builtins.dirOf (builtins.dirOf trainer))
        ]
      );
    } "${stage "check-closure.sh"} && touch $out";
  }
  // (
    if holdoutGate == null then
      { }
    else
      {
        holdout = holdoutGate {
          inherit
            plain
            pgo
            pgoBolt
            trainer
            shapes
            runStage
            ;
        };
      }
  );
in
{
  "${binName}" = plain;
  "${binName}-instrumented" = instrumented;
  "${binName}-profile" = profileDir;
  "${binName}-pgo" = pgo;
  "${binName}-bolt-profile" = boltProfileDir;
  "${binName}-pgo-bolt" = pgoBolt;
  inherit checks;
}
