# The gateway's workload under the chain's workload contract (../lib/stages/workload.sh):
# `trainer workload --shapes DIR BIN` runs one gateway lifetime per training shape (in-process
# mock upstream on loopback, every response checked, SIGTERM, exit 0 required). The shapes
# it reads are a copy that `trainer shapes` validated first, so a bad shape file fails that
# build, named, before anything trains.
#
# Arguments:
#   pkgs      nixpkgs (writeShellScript)
#   runStage  the builder's runStage (../lib/builder.nix)
#   trainer   the trainer package (bin/trainer)
#   shapes    the shapes directory
#
# Returns { workload, minProfiles, workloads, validatedShapes }: the executable's path over all
# shapes and the number of training shapes (shapes without `holdout = true`: each runs one
# gateway process, which writes one profile); `workloads`, the same workload fanned out, one
# per training shape (the chain's `workloads`: one training derivation each, then a merge),
# each on a directory cut to that shape's file and its body, so that editing one shape
# retrains one; and the whole set as `trainer shapes` validated it (the holdout gate's).
{
  pkgs,
  runStage,
  trainer,
  shapes,
}:
let
  files = builtins.attrNames (builtins.readDir shapes);
  tomls = builtins.filter (n: builtins.match ".*\\.toml" n != null) files;
  holdout = n: (builtins.fromTOML (builtins.readFile "${shapes}/${n}")).holdout or false;
  training = builtins.filter (n: !(holdout n)) tomls;
  rel = import ./rel-path.nix shapes;
  # One shape: its file and the body it names, nothing else of the directory.
  shapeDir =
    file:
    let
      body = (builtins.fromTOML (builtins.readFile "${shapes}/${file}")).body or "";
    in
    builtins.path {
      path = shapes;
      name = "gateway-shape-${stem file}";
      filter =
        path: _type:
        let
          r = rel path;
        in
        r == file || r == body || under r body;
    };
  # path p lies below directory d
  under = d: p: builtins.substring 0 (builtins.stringLength d + 1) p == d + "/";
  stem = file: builtins.head (builtins.match "(.*)\\.toml" file);
  # The shapes a workload reads are a copy that `trainer shapes` validated first: the whole
  # set (exactly one holdout), or one part (`--part`: a shape that trains).
  validated =
    name: dir: flags:
    runStage "${name}-validated" {
      TRAINER = "${trainer}/bin/trainer";
      SHAPES = dir;
    } ''"$TRAINER" shapes --shapes "$SHAPES" ${flags} >&2 && cp -R "$SHAPES" "$out"'';
  all = validated "gateway-shapes" shapes "";
  workloadOver =
    name: dir:
    "${pkgs.writeShellScript name ''
      # The gateway's workload: one gateway lifetime per training shape.
      exec ${trainer}/bin/trainer workload --shapes ${dir} "$@"
    ''}";
in
{
  # The whole set, validated: what the holdout gate measures.
  validatedShapes = all;
  workload = workloadOver "gateway-workload" all;
  workloads = builtins.listToAttrs (
    map (file: {
      name = stem file;
      value = workloadOver "gateway-workload-${stem file}" (
        validated "gateway-shape-${stem file}" (shapeDir file) "--part"
      );
    }) training
  );
  # At least one: an empty set fails in `trainer shapes`, naming the directory.
  minProfiles = if training == [ ] then 1 else builtins.length training;
}
