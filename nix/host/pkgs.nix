# The nixpkgs stand-in of the host builder: the few functions nix/lib/builder.nix, the crane
# stand-in (./crane) and the checks call, as derivations that really build, with host tools
# bound into the Nix sandbox (scripts/chain-host-env.sh) instead of nixpkgs' store paths.
#
# Arguments:
#   system      the build platform (default "x86_64-linux")
#   hostTriple  rustc's host triple
#   hostPath    PATH after the inputs' bin/ dirs: bash, coreutils, cc, make, tar, zstd, jq
{
  system ? "x86_64-linux",
  hostTriple ? "x86_64-unknown-linux-gnu",
  hostPath ? "/usr/bin:/bin",
}:
let
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
        inherit system hostPath;
        builder = "/bin/bash";
        args = [ ./stdenv/setup.sh ];
      }
    );

  runCommand =
    name: env: buildCommand:
    mkDerivation (env // { inherit name buildCommand; });
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
