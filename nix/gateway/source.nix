# The sources, cut so that a change only rebuilds what it touches: `cargo` holds what cargo
# needs (a README, nix/, bench/ or shapes/ change does not rebuild any binary); `shapes` is
# the training data alone (a shapes change retrains, then rebuilds only the PGO stages);
# `tests` is `cargo` plus shapes/ for the test suites that read them; `bench` the bench.
# builtins.path with a filter, not lib.fileset: lib.fileset needs builtins.readFileType, which
# Nix 2.8 (Debian's nix-bin, tier b) lacks.
#
# Arguments:
#   root  the repository (a path; `self` in the flake)
{ root }:
let
  rootStr = toString root;
  rel = path: builtins.substring (builtins.stringLength rootStr + 1) (-1) (toString path);
  firstSegment = r: builtins.head (builtins.split "/" r);
  skipped =
    base:
    base == "target"
    || base == "result"
    || builtins.substring 0 7 base == "result-"
    || builtins.match ".*\\.(profraw|profdata|fdata)" base != null;
  cargoTop = [
    "Cargo.toml"
    "Cargo.lock"
    ".cargo"
    "gateway"
    "trainer"
    # config.rs include_str!s the example config.
    "gateway.example.toml"
  ];
  cut =
    name: tops: keep:
    builtins.path {
      path = root;
      inherit name;
      filter =
        path: type:
        let
          r = rel path;
        in
        builtins.elem (firstSegment r) tops && !(skipped (baseNameOf path)) && keep path type;
    };
  all = path: type: true;
  manifest =
    path: type:
    type == "directory"
    || builtins.elem (baseNameOf path) [
      "Cargo.toml"
      "Cargo.lock"
      "build.rs"
      "config.toml"
    ];
in
{
  cargo = cut "gateway-src" cargoTop all;
  tests = cut "gateway-test-src" (cargoTop ++ [ "shapes" ]) all;
  manifests = cut "gateway-manifests" cargoTop manifest;
  # The bench (bench/, a cargo workspace of its own, so that no chain stage's source holds
  # it), with the trainer it depends on and the root manifest the trainer inherits its package
  # fields from.
  bench = cut "gateway-bench-src" [
    "Cargo.toml"
    "bench"
    "trainer"
  ] all;
  shapes = builtins.path {
    path = root + "/shapes";
    name = "gateway-shapes";
    # README.md documents the format: editing it retrains nothing.
    filter =
      path: type:
      let
        base = baseNameOf path;
      in
      !(skipped base) && builtins.match ".*\\.md" base == null;
  };
}
