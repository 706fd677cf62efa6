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
# Returns { workload, minProfiles }: the executable's path, and the number of training shapes
# (shapes without `holdout = true`): each runs one gateway process, which writes one profile.
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
  validated = runStage "gateway-shapes-validated" {
    TRAINER = "${trainer}/bin/trainer";
    SHAPES = shapes;
  } ''"$TRAINER" shapes --shapes "$SHAPES" >&2 && cp -R "$SHAPES" "$out"'';
in
{
  workload = "${pkgs.writeShellScript "gateway-workload" ''
    # The gateway's workload: one gateway lifetime per training shape.
    exec ${trainer}/bin/trainer workload --shapes ${validated} "$@"
  ''}";
  # At least one: an empty set fails in `trainer shapes`, naming the directory.
  minProfiles = if training == [ ] then 1 else builtins.length training;
}
