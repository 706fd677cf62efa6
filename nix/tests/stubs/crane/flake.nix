# Stub crane (tier b): mkLib, overrideToolchain and the builders the gateway flake calls.
# Each builder returns pkgs.stdenv.mkDerivation of its arguments (as crane does), so a changed
# flag set, source or dependency artefact changes the drvPath as it would with the real one.
{
  description = "stub crane for evaluation tests";

  inputs = { };

  outputs =
    { self }:
    {
      mkLib =
        pkgs:
        let
          mk =
            toolchain: kind: args:
            pkgs.stdenv.mkDerivation (
              args
              // {
                name = "${args.pname}${kind}-${args.version}";
                inherit toolchain;
              }
            );
          lib = toolchain: {
            overrideToolchain = t: lib (if builtins.isFunction t then t pkgs else t);
            buildDepsOnly = mk toolchain "-deps";
            buildPackage = args: assert args ? cargoArtifacts; mk toolchain "" args;
            cargoTest = mk toolchain "-test";
            cargoClippy = mk toolchain "-clippy";
            cargoFmt = mk toolchain "-fmt";
          };
        in
        lib null;
    };
}
