# The sources, cut so that an edit rebuilds only the stages that read it (README "What an
# edit rebuilds"; tier b asserts it):
#   gateway  the gateway's chain stages: the workspace manifest and lock, the gateway crate
#            without its tests, the trainer's manifest alone (cargo loads every workspace
#            member; ../lib/stages/stub-crates.sh stubs its targets inside the build)
#   trainer  the trainer: the same, the other way round
#   tests    the workspace tests: everything cargo sees, with the example config and shapes/,
#            which tests read
#   lint     clippy's: `tests` without shapes/
#   bench    bench/ (a cargo workspace of its own) with the trainer it depends on
#   shapes   the training data alone (a shape edit retrains, then rebuilds the stages after)
# No README, docs/, nix/, scripts/, examples/ or tests/ file is in any of them.
# builtins.path with a filter, not lib.fileset: lib.fileset needs builtins.readFileType, which
# Nix 2.8 (Debian's nix-bin, tier b) lacks.
#
# Arguments:
#   root  the repository (a path; `self` in the flake)
{ root }:
let
  rel = import ./rel-path.nix root;
  # r is dir or lies below it.
  under = dir: r: r == dir || builtins.substring 0 (builtins.stringLength dir + 1) r == dir + "/";
  skipped =
    base:
    base == "target"
    || base == "result"
    || builtins.substring 0 7 base == "result-"
    || builtins.match ".*\\.(profraw|profdata|fdata)" base != null;
  # keep: relative path -> bool, asked of every directory and file (a rejected directory
  # hides what is below it).
  cut =
    name: keep:
    builtins.path {
      path = root;
      inherit name;
      filter = path: _type: !(skipped (baseNameOf path)) && keep (rel path);
    };
  workspaceTop = r: builtins.elem r [
    "Cargo.toml"
    "Cargo.lock"
  ] || under ".cargo" r;
  # A crate's code: its manifest, src/ and build script; never its tests/.
  crate = dir: r: under dir r && !(under "${dir}/tests" r);
  isDoc = r: builtins.match ".*\\.md" r != null;
  manifestOnly = dir: r: r == dir || r == "${dir}/Cargo.toml";
  lint =
    r:
    workspaceTop r
    || under "gateway" r
    || under "trainer" r
    # config/tests.rs include_str!s the example config.
    || r == "gateway.example.toml";
in
{
  gateway = cut "gateway-src" (r: workspaceTop r || crate "gateway" r || manifestOnly "trainer" r);
  trainer = cut "trainer-src" (r: workspaceTop r || crate "trainer" r || manifestOnly "gateway" r);
  tests = cut "gateway-test-src" (r: lint r || (under "shapes" r && !isDoc r));
  # clippy's: the same name as `tests`, so both unpack where their shared dependency build
  # did (cargo's fingerprints hold paths), without shapes/ (a shape edit re-lints nothing).
  lint = cut "gateway-test-src" lint;
  # The bench's own manifest and lock live in bench/; the root manifest is there for the
  # package fields the trainer inherits.
  bench = cut "gateway-bench-src" (r: r == "Cargo.toml" || under "bench" r || crate "trainer" r);
  shapes = builtins.path {
    path = root + "/shapes";
    name = "gateway-shapes";
    # README.md documents the format: editing it retrains nothing.
    filter =
      path: type:
      let
        base = baseNameOf path;
      in
      !(skipped base) && !(isDoc base);
  };
}
