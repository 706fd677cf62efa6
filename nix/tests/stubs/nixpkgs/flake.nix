# Stub nixpkgs (tier b): only the attributes the gateway flake (and the crane and fenix
# stubs) use. Its derivations evaluate to real .drv files whose hashes follow every
# argument, but refuse to build: nixpkgs cannot be fetched here.
{
  description = "stub nixpkgs for evaluation tests";

  outputs =
    { self }:
    let
      triples = {
        x86_64-linux = "x86_64-unknown-linux-gnu";
        aarch64-linux = "aarch64-unknown-linux-gnu";
      };
      # Keep what can become a derivation attribute; drop functions and plain attrsets.
      toEnv =
        attrs:
        builtins.removeAttrs attrs (
          builtins.filter (
            n:
            let
              v = attrs.${n};
            in
            builtins.isFunction v || (builtins.isAttrs v && !(v ? drvPath))
          ) (builtins.attrNames attrs)
        );
      mkPkgs =
        system:
        let
          drv =
            name: attrs:
            derivation (
              toEnv attrs
              // {
                inherit name system;
                builder = "/bin/sh";
                args = [
                  "-c"
                  "echo 'stub derivation ${name}: evaluation only (nix/tests/stubs)' >&2; exit 1"
                ];
              }
            );
          pkg = name: drv name { };
        in
        {
          stdenv = {
            hostPlatform = {
              inherit system;
              rust.rustcTarget = triples.${system};
            };
            cc = pkg "stub-cc";
            mkDerivation = attrs: drv (attrs.name or "${attrs.pname}-${attrs.version}") attrs;
          };
          runCommand = name: env: script: drv name (env // { buildCommand = script; });
          makeSetupHook = { name }: script: drv name { inherit script; };
          writeShellScript = name: text: drv name { inherit text; };
          mkShell = attrs: drv "stub-shell" attrs;
          gnumake = pkg "stub-gnumake";
          binutils-unwrapped = pkg "stub-binutils";
          nixfmt = pkg "stub-nixfmt";
          llvmPackages_22 = {
            bolt = pkg "stub-bolt-22";
            clang = pkg "stub-clang-22";
          };
          # nix/release: the image and its relabelling. `config` is kept as JSON so tests can
          # read the Entrypoint, User and labels back.
          jq = pkg "stub-jq";
          valgrind = pkg "stub-valgrind";
          dockerTools.buildLayeredImage =
            args:
            drv "docker-image-${args.name}.tar.gz" (
              builtins.removeAttrs args [ "config" ]
              // {
                config = builtins.toJSON (args.config or { });
              }
            );
        };
    in
    {
      legacyPackages = builtins.listToAttrs (
        map
          (system: {
            name = system;
            value = mkPkgs system;
          })
          [
            "x86_64-linux"
            "aarch64-linux"
          ]
      );
    };
}
