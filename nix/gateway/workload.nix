# The gateway's workload under the chain's workload contract (../stages/workload.sh):
# `trainer workload --shapes DIR BIN` runs one gateway lifetime per training shape (in-process
# mock upstream on loopback, every response checked, SIGTERM, exit 0 required). Its build
# validates the shapes once with `trainer shapes`, so a bad shape file fails here, named.
#
# Arguments:
#   runStage  the builder's runStage (../crane.nix)
#   trainer   the trainer package (bin/trainer)
#   shapes    the shapes directory
#
# Returns { workload, minProfiles }: the executable's path, and the number of training shapes
# (shapes without `holdout = true`): each runs one gateway process, which writes one profile.
{
  runStage,
  trainer,
  shapes,
}:
let
  files = builtins.attrNames (builtins.readDir shapes);
  tomls = builtins.filter (n: builtins.match ".*\\.toml" n != null) files;
  holdout = n: (builtins.fromTOML (builtins.readFile "${shapes}/${n}")).holdout or false;
  training = builtins.filter (n: !(holdout n)) tomls;
  script =
    runStage "gateway-workload"
      {
        TRAINER = "${trainer}/bin/trainer";
        SHAPES = shapes;
      }
      ''
        "$TRAINER" shapes --shapes "$SHAPES" >&2
        mkdir -p "$out/bin"
        {
          echo "#!$BASH"
          echo "# The gateway's workload: one gateway lifetime per training shape."
          printf 'exec %q workload --shapes %q "$@"\n' "$TRAINER" "$SHAPES"
        } >"$out/bin/gateway-workload"
        chmod +x "$out/bin/gateway-workload"
      '';
in
{
  workload = "${script}/bin/gateway-workload";
  # At least one: an empty set fails in `trainer shapes`, naming the directory.
  minProfiles = if training == [ ] then 1 else builtins.length training;
}
