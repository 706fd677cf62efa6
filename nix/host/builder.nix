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
#   hostPath    PATH of the builds: cc, make, sh, coreutils for jemalloc's C build
{
  system ? "x86_64-linux",
  rustSysroot,
  vendorDir,
  src,
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
    derivation (
      {
        name = pname;
        inherit system src;
        builder = "/bin/bash";
        args = [ (stages + "/cargo-build.sh") ];
        PATH = path;
        STAGE_COMMON = stages + "/common.sh";
        STAGE_NAME = pname;
        COPY_SRC = "1";
        SRC = src;
        BIN_NAME = binName;
        RUSTFLAGS = rustflags;
        CARGO_BUILD_TARGET = if cargoTarget == null then "" else cargoTarget;
        CARGO_EXTRA_ARGS = cargoExtraArgs;
        VENDOR_DIR = vendorDir;
        POST_INSTALL = postInstall;
        # The sandbox has HOME=/homeless-shelter; cargo wants a writable one.
        HOME = "/build";
      }
      // env
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
