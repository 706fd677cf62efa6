# The nixpkgs stand-in of the host builder: the few functions nix/lib/builder.nix, the crane
# stand-in (./crane) and the checks call, as derivations that really build, with host tools
# bound into the Nix sandbox (scripts/chain-host-env.sh) instead of nixpkgs' store paths.
#
# A chain file written for the flake may use what docs/chain.md "Chain files" lists of pkgs
# (writeShellScript, writeText, runCommand, stdenv.hostPlatform); a few more that chain files
# commonly reach for fail with a message saying so, not with "attribute missing".
#
# Arguments:
#   system      the build platform (default "x86_64-linux")
#   hostTriple  rustc's host triple
#   hostPath    PATH of the crane builds after their inputs' bin/ dirs: bash, coreutils, cc,
#               make, tar, zstd, jq (the cargo builds' stdenv has a C compiler)
{
  system ? "x86_64-linux",
  hostTriple ? "x86_64-unknown-linux-gnu",
  hostPath ? "/usr/bin:/bin",
}:
let
  # runCommand's PATH, as nixpkgs' runCommand (stdenvNoCC) has it: bash, coreutils, findutils,
  # diffutils, grep, sed, gawk, tar, gzip, bzip2, xz, patch, make, and nothing else of the
  # host's (no python3, no mawk as awk, no cc). The workload runs in such a stage, so a workload
  # that passes here uses only what the flake's sandbox has. Debian's files of those packages,
  # linked by name (read from dpkg's lists at evaluation: the host path is Debian's).
  stdenvPackages = [
    "bash"
    "coreutils"
    "findutils"
    "diffutils"
    "grep"
    "sed"
    "gawk"
    "tar"
    "gzip"
    "bzip2"
    "xz-utils"
    "patch"
    "make"
  ];
  dpkgList =
    pkg:
    let
      candidates = builtins.filter builtins.pathExists [
        "/var/lib/dpkg/info/${pkg}.list"
        "/var/lib/dpkg/info/${pkg}:amd64.list"
        "/var/lib/dpkg/info/${pkg}:arm64.list"
      ];
    in
    if candidates == [ ] then
      throw "host pkgs: Debian package ${pkg} is not installed (apt-get install -y ${pkg})"
    else
      builtins.filter (l: builtins.isString l && builtins.match "/(usr/)?bin/[^/]+" l != null) (
        builtins.split "\n" (builtins.readFile (builtins.head candidates))
      );
  stdenvTools = derivation {
    name = "host-stdenv-tools";
    inherit system;
    builder = "/bin/bash";
    tools = builtins.concatMap dpkgList stdenvPackages;
    args = [
      "-euc"
      ''
        PATH=/usr/bin:/bin
        mkdir -p "$out/bin"
        for t in $tools; do ln -sfn "$t" "$out/bin/''${t##*/}"; done
        ln -sfn /usr/bin/gawk "$out/bin/awk"
        ln -sfn /bin/bash "$out/bin/sh"
      ''
    ];
  };

  # Attributes a derivation cannot carry (functions, plain attrsets) are left out; `env` is
  # merged into the environment, as stdenv.mkDerivation does.
  toEnv =
    attrs:
    builtins.removeAttrs attrs (
      [
        "env"
        "passthru"
        "meta"
      ]
      ++ builtins.filter (
        n:
        let
          v = attrs.${n};
        in
        builtins.isFunction v || (builtins.isAttrs v && !(v ? outPath))
      ) (builtins.attrNames attrs)
    )
    // builtins.mapAttrs (_: toString) (attrs.env or { });

  mkDerivation =
    attrs:
    derivation (
      toEnv attrs
      // {
        name = attrs.name or "${attrs.pname}-${attrs.version}";
        inherit system;
        hostPath = attrs.hostPath or hostPath;
        builder = "/bin/bash";
        args = [ ./stdenv/setup.sh ];
      }
    );

  runCommand =
    name: env: buildCommand:
    mkDerivation (
      env
      // {
        inherit name buildCommand;
        hostPath = "${stdenvTools}/bin";
      }
    );
  # What a chain file may reach for and the host path cannot offer: a clear error instead.
  noNetwork = "the host sandbox has no network; ";
  missing =
    what: why:
    throw (
      "the host path's pkgs (nix/host/pkgs.nix) has no ${what}: ${why}"
      + " (docs/chain.md \"Chain files\")"
    );
in
{
  stdenv = {
    hostPlatform = {
      inherit system;
      rust.rustcTarget = hostTriple;
    };
    inherit mkDerivation;
  };
  inherit runCommand;
  runtimeShell = "/bin/bash";
  # nixpkgs' writeText: one file holding the text.
  writeText =
    name: text:
    runCommand name {
      inherit text;
      passAsFile = [ "text" ];
    } ''cp "$textPath" "$out"'';
  lib = missing "lib" "CI has no nixpkgs; use builtins (builtins.path with a filter for src)";
  fetchurl = missing "fetchurl" (noNetwork + "unpack the source beforehand and pass it as a path");
  fetchFromGitHub = missing "fetchFromGitHub" (noNetwork + "pass the source as a path");
  fetchCrate = missing "fetchCrate" (noNetwork + "pass the unpacked crate as a path");
  writeShellApplication = missing "writeShellApplication" "use writeShellScript";
  python3 = missing "python3" (
    "the workload contract's PATH has none;"
    + " the host sandbox offers bash, coreutils, grep, sed and gawk"
  );
  # nixpkgs' writeShellScript: one executable file, the shell's shebang first, syntax-checked
  # (`bash -n`, nixpkgs' shellDryRun) at build time.
  writeShellScript =
    name: text:
    runCommand name
      {
        text = "#!/bin/bash\n" + text;
        passAsFile = [ "text" ];
      }
      ''
        cp "$textPath" "$out"
        chmod +x "$out"
        /bin/bash -n "$out"
      '';
  # nixpkgs' makeSetupHook: a package whose nix-support/setup-hook stdenv sources.
  makeSetupHook =
    { name }:
    script:
    runCommand name { } ''
      mkdir -p $out/nix-support
      cp ${script} $out/nix-support/setup-hook
    '';
}
