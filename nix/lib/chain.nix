# The PGO + BOLT chain as separate derivations, independent of crane and of the host, for
# any cargo binary <bin> (the gateway's is <bin> = gateway):
#
#   <bin>-instrumented -> <bin>-profile -> <bin>-pgo-build -> <bin>-pgo (the PGO gate)
#     -> <bin>-bolt-profile -> <bin>-pgo-bolt
#     (+ <bin>: the plain build, same target and profile)
#
# Both profile stages run the caller's workload (./stages/workload.sh states the contract) and
# own the rest: profile files, floors, merging, manifests, all fail-closed.
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
#                   pgoProfile, env } -> derivation with bin/<binName>. `env`: variables every
#                   cargo run of the build sees (the preflight's profile overrides). One
#                   cargo release build with one flag set, through ./stages/cargo-build.sh;
#                   its dependencies must be built with the same RUSTFLAGS (they are
#                   instrumented and profile-used too). `pgoProfile` (null or a .profdata
#                   file): the builder stages it at a fixed path inside the build and puts
#                   that path where RUSTFLAGS say
#                   `@pgoProfile@` (./stages/pgo-use-flags.sh), before the first phase that may
#                   run cargo, for deps and binary alike: no process of the build (the
#                   builder's own hooks included) may see the token.
#                   `postInstall` is a function { cargoStderrLog } -> shell snippet, run after
#                   the binary is in $out/bin: cargoStderrLog is a shell word naming the file
#                   that holds cargo's stderr, for the snippet to pass on explicitly. A failing
#                   snippet fails the build. ./builder.nix supplies buildWith.
#   runStage        name -> env (attrset) -> script (string) -> derivation. A plain builder
#                   with bash, coreutils, grep, sed and awk; env becomes the environment.
#   hostTriple      the build host's target triple: every chain build passes it as
#                   CARGO_BUILD_TARGET so RUSTFLAGS stay off build scripts and proc macros.
#   tools           { llvmProfdata, llvmBolt, boltRuntimeLib, mergeFdata, readelf, strip, clang,
#                   clangxx }, each an absolute path (never looked up on PATH). clang and
#                   clangxx: C and C++ of rustc's LLVM major, for build scripts (`cc`, `cmake`).
#   src             the cargo workspace, read at evaluation by the preflight (./preflight.nix)
#
# The caller's arguments (workload, binName, cargoExtraArgs, the floors, boltFlags, profile,
# boltProfile, holdoutGate, ...) are documented once, in docs/chain.md "Arguments"; their
# defaults are below.
{
  buildWith,
  runStage,
  hostTriple,
  tools,
  src,
  workload ? null,
  workloads ? null,
  # Files the workload reads (a corpus, queries, recorded requests): a path, copied into the
  # store as `<pname>-training-data` (filtered: no VCS directories or result links; a
  # directory named target may be data) and named to every workload run by TRAINING_DATA.
  # An input of the training stages only: an edit retrains and rebuilds what follows
  # training, nothing before it.
  trainingData ? null,
  binName ? "gateway",
  # The cargo package that holds the binary, when its name is not the binary's (ripgrep's
  # is `rg`): cargo-build.sh names this argument when `-p` matches no package.
  package ? binName,
  # The store paths' names: <pname>-pgo-bolt-<version> (the attributes stay <binName>-*).
  pname ? binName,
  # The product stages' version (<pname>-pgo-<version>, <pname>-pgo-bolt-<version>), as the
  # cargo builds'; mkPgoBoltChain reads it from the crate's Cargo.toml when not given.
  version,
  cargoExtraArgs ? "-p ${package} --bin ${binName}",
  # Added after cargoExtraArgs, so that a feature flag does not mean restating `-p`/`--bin`.
  extraCargoArgs ? "",
  extraRustflags ? "",
  # v0 by default: legacy mangling writes whole generic types into symbols (11,415 characters
  # in a JSON query tool), more than BOLT's instrumentation runtime can write (bolt-profile.sh).
  symbolMangling ? "v0",
  # ./bolt-flags.txt, one flag a line (BENCHMARKS.md's BOLT flag study measures the choice).
  boltFlags ? builtins.filter (l: l != "" && builtins.match "#.*" l == null) (
    builtins.filter builtins.isString (builtins.split "\n" (builtins.readFile ./bolt-flags.txt))
  ),
  # Added to boltFlags, so that one more flag does not mean copying the defaults.
  extraBoltFlags ? [ ],
  # BOLT drops the DWARF sections unless told to rewrite them; kept by default, so that a
  # debugger and a profiler still symbolize the optimized binary. The proof records which.
  keepDebugInfo ? true,
  maxMissingProfiles ? 0,
  minProfiles ? 1,
  minProfileBytes ? 1024,
  minFdataBytes ? 64,
  workloadTimeout ? 3600,
  profile ? null,
  boltProfile ? null,
  holdoutGate ? null,
  # C and C++ of build scripts through tools.clang in every stage, instrumented and
  # profile-used with the Rust code's profile; false: the builder's own C compiler, no profile.
  cPgo ? true,
}:
let
  stages = ./stages;
  common = stages + "/common.sh";
  # One workload, trained in one derivation per profile stage, or named parts (`workloads`),
  # trained one derivation per part and then merged (the stage scripts' PARTS mode): a
  # builder farm trains parts in parallel, and a cache keeps every part whose inputs did not
  # change.
  parts =
    if (workload == null) == (workloads == null) then
      throw (
        "mkPgoBoltChain ${binName}: give exactly one of `workload` (an executable) and "
        + "`workloads` ({ <part> = executable; }, one training derivation per part)"
      )
    else if workloads == null then
      null
    else if workloads == { } then
      throw "mkPgoBoltChain ${binName}: `workloads` names no part"
    else
      builtins.mapAttrs (
        name: w:
        if builtins.match "[A-Za-z0-9][A-Za-z0-9_-]*" name == null then
          throw "mkPgoBoltChain ${binName}: workloads part name '${name}' is not [A-Za-z0-9_-]"
        else
          w
      ) workloads;
  workloadList = if parts == null then [ workload ] else builtins.attrValues parts;
  # A path literal is filtered and copied under a fixed name (so moving the directory changes
  # nothing); a store path (a derivation, `builtins.path` of the caller's own) is used as is.
  trainingDataPath =
    if trainingData == null then
      null
    else if builtins.isPath trainingData then
      builtins.path {
        path = trainingData;
        name = "${pname}-training-data";
        filter =
          path: type:
          let
            base = baseNameOf path;
          in
          !(
            builtins.elem base [
              ".git"
              ".hg"
              ".jj"
            ]
            || builtins.match "result(-.*)?" base != null && type == "symlink"
          );
      }
    else
      trainingData;
  # What both profile stages pass: a workload and its contract.
  workloadEnv = w: {
    STAGE_COMMON = common;
    STAGE_WORKLOAD = stages + "/workload.sh";
    WORKLOAD = w;
    BIN_NAME = binName;
    MIN_PROFILES = toString minProfiles;
    WORKLOAD_TIMEOUT = toString workloadTimeout;
  }
  // (if trainingDataPath == null then { } else { TRAINING_DATA = trainingDataPath; });
  # train NAME ENV SCRIPT: the profile stage NAME, run on the workload or fanned out over the
  # parts (NAME-<part> each, then NAME merges them; its `parts` are the part derivations).
  train =
    name: env: script:
    if parts == null then
      runNamed name (workloadEnv workload // env) script
    else
      let
        trainedParts = builtins.mapAttrs (
          part: w: runNamed "${name}-${part}" (workloadEnv w // env) script
        ) parts;
      in
      runNamed name (
        env
        // {
          STAGE_COMMON = common;
          STAGE_WORKLOAD = stages + "/workload.sh";
          BIN_NAME = binName;
          PARTS = toString (
            map (part: "${part}=${trainedParts.${part}}") (builtins.attrNames trainedParts)
          );
        }
      ) script
      // {
        parts = trainedParts;
      };
  stage = file: "bash ${stages + "/${file}"}";
  # Every stage script's log lines name its derivation ("stage rg-pgo-bolt: ..."), whatever
  # the binary.
  runNamed = name: env: runStage name ({ STAGE_NAME = name; } // env);
  # The binaries a user installs carry the version in their store path, as crane's builds do;
  # profiles and checks are data, named by stage alone.
  runProduct = name: env: runStage "${name}-${version}" ({ STAGE_NAME = name; } // env);
  cargoArgs =
    if extraCargoArgs == "" then cargoExtraArgs else "${cargoExtraArgs} ${extraCargoArgs}";
  # Refuses at evaluation what the chain cannot take (every build's arguments force it).
  preflight = import ./preflight.nix {
    inherit
      src
      binName
      cargoArgs
      extraRustflags
      keepDebugInfo
      symbolMangling
      hostTriple
      ;
  };
  # Every stage's RUSTFLAGS: the crate's config rustflags (cargo ignores them under RUSTFLAGS),
  # the mangling, the caller's, then the stage's own.
  flags =
    rest:
    builtins.concatStringsSep " " (
      builtins.filter (f: f != "") [
        preflight.configRustflags
        preflight.manglingFlags
        extraRustflags
        rest
      ]
    );
  # The store path that holds a file (the workload's package), or the string itself.
  storePathOf =
    p:
    let
      m = builtins.match "(${builtins.storeDir}/[^/]+).*" (toString p);
    in
    if m == null then toString p else builtins.head m;

  # The C of build scripts: the `cc` crate (and `cmake`, through it) reads CC_<target> and
  # CXX_<target>, so every stage, plain too, compiles it with the same pinned clang: the plain
  # build is the baseline of every ratio, and a ratio against gcc's C would measure the
  # compiler change with the profile. Instrumented C writes its counters into the same
  # .profraw files as rustc's (one profile runtime, LLVM_PROFILE_FILE), merged by the same
  # llvm-profdata; the profile-use build reads the same staged profile.
  triple_ = builtins.replaceStrings [ "-" ] [ "_" ] hostTriple;
  toolOf =
    name:
    tools.${name} or (throw (
      "mkPgoBoltChain ${binName}: the toolchain has no ${name} (clang of rustc's LLVM"
      + " major, by absolute path); give it one, or cPgo = false"
    ));
  cEnv =
    if cPgo then
      {
        "CC_${triple_}" = toolOf "clang";
        "CXX_${triple_}" = toolOf "clangxx";
      }
    else
      { };
  # Every stage's C flags start here. DWARF 4 where a build script asks for debug info
  # (jemalloc's does): clang 22's default DWARF 5 range lists stop valgrind 3.19 (Debian
  # bookworm's; the holdout gate and the benches run it) reading the binary at all ("unhandled
  # dwarf2 abbrev form code 0x23"); gcc's DWARF 5 it reads. Adds no debug info where none was.
  cBaseFlags = "-fdebug-default-version=4";
  cFlagsOf = f: if cPgo then f else "";

  build =
    {
      suffix,
      rustflags,
      cflags ? "",
      postInstall ? _: "",
      pgoProfile ? null,
    }:
    buildWith {
      pname = if suffix == "" then pname else "${pname}-${suffix}";
      rustflags = flags rustflags;
      cflags = cFlagsOf cflags;
      cargoTarget = hostTriple;
      cargoExtraArgs = cargoArgs;
      env = preflight.buildEnv // cEnv;
      inherit
        binName
        postInstall
        pgoProfile
        ;
    };

  # Plain release: the baseline of every comparison; same target dir layout as the others.
  plain = build {
    suffix = "";
    rustflags = "";
    cflags = cBaseFlags;
  };

  # The embedded default path only matters when LLVM_PROFILE_FILE is unset; the profile stage
  # always sets it (one file per process).
  instrumented = build {
    suffix = "instrumented";
    rustflags = "-Cprofile-generate=/tmp/${binName}-pgo";
    cflags = "${cBaseFlags} -fprofile-generate=/tmp/${binName}-pgo";
  };

  trained = train "${pname}-profile" {
    BIN = "${instrumented}/bin/${binName}";
    LLVM_PROFDATA = tools.llvmProfdata;
    READELF = tools.readelf;
    MIN_PROFILE_BYTES = toString minProfileBytes;
  } (stage "pgo-profile.sh");
  profileDir = if profile == null then trained else profile;

  # --emit-relocs: BOLT reorders functions only in relocation mode. `@pgoProfile@`: the
  # profile is staged at one fixed path inside the build (stages/pgo-use-flags.sh), so RUSTFLAGS
  # name no store path: a profile from training, a cache or a release gives the same flags,
  # and the same profile bytes give the same binary whichever derivation supplied them.
  pgoFlags = builtins.concatStringsSep " " [
    "-Cprofile-use=@pgoProfile@"
    "-Cllvm-args=-pgo-warn-missing-function"
    "-Clink-args=-Wl,--emit-relocs"
  ];
  # The profile-use build keeps what its gate reads (./stages/pgo-diagnostics.sh); the gate is
  # the next stage, <bin>-pgo, as every other gate: its output, the binary and pgo-proof.json,
  # exists only when the build used the profile.
  # C's: the same staged profile (stages/c-flags.sh); a build script's -Werror must not turn
  # clang's profile warnings into errors (the gate reads them: stages/c-objects.sh).
  pgoCFlags = "${cBaseFlags} -fprofile-use=@pgoProfile@ -Wno-error=backend-plugin";
  pgoBuild = build {
    suffix = "pgo-build";
    rustflags = pgoFlags;
    cflags = pgoCFlags;
    pgoProfile = "${profileDir}/${binName}.profdata";
    postInstall =
      { cargoStderrLog }:
      ''
        STAGE_COMMON=${common} \
        CARGO_STDERR_LOG=${cargoStderrLog} \
        DIAGNOSTICS_OUT="$out/share/${binName}/pgo-build" \
        ${stage "pgo-diagnostics.sh"}
      ''
      + (
        if cPgo then
          ''
            STAGE_COMMON=${common} C_TARGET_DIR="''${CARGO_TARGET_DIR:-target}" \
            TARGET=${hostTriple} READELF=${tools.readelf} CLANG=${toolOf "clang"} \
            C_OBJECTS_OUT="$out/share/${binName}/pgo-build" \
            ${stage "c-objects.sh"}
          ''
        else
          ""
      );
  };
  pgo = runProduct "${pname}-pgo" {
    STAGE_COMMON = common;
    PGO_BUILD = pgoBuild;
    PROFILE_DIR = profileDir;
    BIN_NAME = binName;
    PGO_RUSTFLAGS = flags pgoFlags;
    TARGET = hostTriple;
    LLVM_PROFDATA = tools.llvmProfdata;
    MAX_MISSING_PROFILES = toString maxMissingProfiles;
    # What the proof records of the build: its cargo arguments and the release profile the
    # preflight resolved (with the chain's overrides: strip = "symbols" builds as "debuginfo").
    CARGO_ARGS = "--release --locked ${cargoArgs}";
    PROFILE_RELEASE = builtins.toJSON (
      preflight.profile
      // {
        build-strip = preflight.buildEnv.CARGO_PROFILE_RELEASE_STRIP or preflight.profile.strip;
      }
    );
    SYMBOL_MANGLING = symbolMangling;
    # Every rustflag this build applied, by where it came from, in order (the preflight
    # checked the first two): the proof says what reached rustc, not only the profile.
    RUSTFLAGS_APPLIED = builtins.toJSON (
      preflight.rustflagSources
      ++ [
        {
          source = "symbolMangling";
          flags = preflight.manglingFlags;
        }
        {
          source = "chain (the profile-use stage)";
          flags = pgoFlags;
        }
      ]
    );
    # The C proof (stages/c-proof.sh): required when the C took the profile.
    C_PROOF = if cPgo then stages + "/c-proof.sh" else "";
    C_PGO_FLAGS = cFlagsOf pgoCFlags;
  } ''OUT_DIR="$out" ${stage "pgo-gate.sh"}'';

  trainedBoltProfile = train "${pname}-bolt-profile" {
    BIN = "${pgo}/bin/${binName}";
    LLVM_BOLT = tools.llvmBolt;
    READELF = tools.readelf;
    BOLT_RT_LIB = tools.boltRuntimeLib;
    MERGE_FDATA = tools.mergeFdata;
    MIN_FDATA_BYTES = toString minFdataBytes;
  } (stage "bolt-profile.sh");
  boltProfileDir = if boltProfile == null then trainedBoltProfile else boltProfile;

  pgoBolt = runProduct "${pname}-pgo-bolt" {
    STAGE_COMMON = common;
    PGO_BIN = "${pgo}/bin/${binName}";
    PGO_PROOF = "${pgo}/share/${binName}/pgo-proof.json";
    FDATA = "${boltProfileDir}/${binName}.fdata";
    FDATA_MANIFEST = "${boltProfileDir}/manifest.json";
    LLVM_BOLT = tools.llvmBolt;
    READELF = tools.readelf;
    BOLT_FLAGS = builtins.concatStringsSep " " (
      boltFlags
      ++ extraBoltFlags
      ++ (if keepDebugInfo then [ "-update-debug-sections" ] else [ ])
    );
    KEEP_DEBUG_INFO = if keepDebugInfo then "1" else "0";
    # The crate's strip = true or "symbols", applied to the shipped binary only (the chain
    # built with symbols), and quoted as the crate wrote it.
    SHIP_STRIP = preflight.shipStrip;
    SHIP_STRIP_SETTING = preflight.stripSetting;
    # The crate's own build, for the proof's size: the shipped binary beside it.
    PLAIN_BIN = "${plain}/bin/${binName}";
    STRIP = tools.strip;
    BIN_NAME = binName;
  } (stage "bolt-optimize.sh");

  checks = {
    pgo-proof = runNamed "${pname}-check-pgo-proof" {
      STAGE_COMMON = common;
      RESULT = pgoBolt;
      PROFILE_DIR = profileDir;
      BOLT_PROFILE = boltProfileDir;
      READELF = tools.readelf;
      BIN_NAME = binName;
    } "${stage "check-proofs.sh"} && touch $out";

    closure = runNamed "${pname}-check-closure" {
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
        map (p: builtins.unsafeDiscardStringContext (toString p)) (
          [
            instrumented
            profileDir
            pgoBuild
            pgo
            boltProfileDir
            plain
          ]
          ++ map storePathOf workloadList
          ++ (if trainingDataPath == null then [ ] else [ (storePathOf trainingDataPath) ])
          ++ builtins.attrValues (trained.parts or { })
          ++ builtins.attrValues (trainedBoltProfile.parts or { })
        )
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
  "${binName}-pgo-build" = pgoBuild;
  "${binName}-pgo" = pgo;
  "${binName}-bolt-profile" = boltProfileDir;
  "${binName}-pgo-bolt" = pgoBolt;
  # What the preflight resolved, evaluated on its own by scripts/chain-nix-host.sh before it
  # vendors or builds anything (throws its refusals).
  "${binName}-preflight" = {
    inherit (preflight)
      profile
      shipStrip
      stripSetting
      configRustflags
      rustflagSources
      ;
    inherit cargoArgs symbolMangling cPgo;
  };
  inherit checks;
}
