# The host builder: chain.nix's `buildWith` and `runStage` on host tools, for machines with
# no binary cache (no nixpkgs, crane or fenix in the store). Plain `derivation`s with
# /bin/bash as builder; the host's rust toolchain, Debian's LLVM 22 and the vendored crates
# are bound into the Nix sandbox with `sandbox-paths` (see scripts/chain-nix-host.sh), so the
# builds stay sandboxed (loopback only, no network) like the production ones.
#
# Arguments:
#   system      the build platform (default "x86_64-linux")
#   rustSysroot the host toolchain directory (`rustc --print sysroot`); its bin/ holds cargo
#   vendorDir   crates vendored beforehand with `cargo vendor` (outside the repo)
#   src         the cargo workspace (a store path)
#   manifests   the same cut to Cargo.toml/Cargo.lock/build.rs (nix/source.nix `manifests`):
#               the dependency builds depend on it alone
#   hostPath    PATH of the builds: cc, make, sh, coreutils for jemalloc's C build
{
  system ? "x86_64-linux",
  rustSysroot,
  vendorDir,
  src,
  manifests,
  hostPath ? "/usr/bin:/bin",
}:
let
  stages = ../stages;
  path = "${rustSysroot}/bin:${hostPath}";
in
{
  buildWith =
    {
      pname,
      rustflags ? "",
      cargoTarget ? null,
      cargoExtraArgs ? "",
      binName,
      postInstall ? "",
      env ? { },
    }:
    let
      cargoEnv = {
        inherit system;
        builder = "/bin/bash";
        PATH = path;
        STAGE_COMMON = stages + "/common.sh";
        COPY_SRC = "1";
        RUSTFLAGS = rustflags;
        CARGO_BUILD_TARGET = if cargoTarget == null then "" else cargoTarget;
        CARGO_EXTRA_ARGS = cargoExtraArgs;
        VENDOR_DIR = vendorDir;
        # The sandbox has HOME=/homeless-shelter; cargo wants a writable one.
        HOME = "/build";
      }
      // env;
      # One dependency build per flag set (as crane's buildDepsOnly): same RUSTFLAGS, target
      # and cargo arguments as the final build, or cargo would rebuild every crate.
      deps = derivation (
        cargoEnv
        // {
          name = "${pname}-deps";
          args = [ (stages + "/cargo-deps.sh") ];
          STAGE_NAME = "${pname}-deps";
          SRC = manifests;
        }
      );
    in
    derivation (
      cargoEnv
      // {
        name = pname;
        inherit src;
        args = [ (stages + "/cargo-build.sh") ];
        STAGE_NAME = pname;
        SRC = src;
        DEPS_DIR = deps;
        BIN_NAME = binName;
        POST_INSTALL = postInstall;
      }
    );

  runStage =
    name: env: script:
    derivation (
      env
      // {
        inherit name system;
        builder = "/bin/bash";
        args = [
          "-euo"
          "pipefail"
          "-c"
          script
        ];
        PATH = path;
        STAGE_NAME = name;
      }
    );
}
