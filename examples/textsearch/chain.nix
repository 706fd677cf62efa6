# textsearch's PGO + BOLT chain: the one call of lib.mkPgoBoltChain a packager writes. It lives
# apart from flake.nix so that the gateway repository's CI builds this very call on the host path
# (`CHAIN_FILE=examples/textsearch/chain.nix scripts/chain-nix-host.sh`), where crane and
# nixpkgs cannot be fetched.
#
# Arguments:
#   pkgs            nixpkgs
#   mkPgoBoltChain  the gateway flake's lib.mkPgoBoltChain
{ pkgs, mkPgoBoltChain }:
let
  root = toString ./.;
  # Only what cargo reads: editing the workload, the training data, the README or the Nix
  # files rebuilds no cargo build.
  cargoFiles =
    path: _type:
    let
      rel = builtins.substring (builtins.stringLength root + 1) (-1) (toString path);
    in
    builtins.elem (builtins.head (builtins.split "/" rel)) [
      "Cargo.toml"
      "Cargo.lock"
      "src"
    ];
in
mkPgoBoltChain {
  inherit pkgs;
  src = builtins.path {
    path = ./.;
    name = "textsearch-src";
    filter = cargoFiles;
  };
  binName = "textsearch";
  # `workload.sh BIN` generates corpora and runs BIN on them, checking every output against
  # grep, wc and awk; it exits 0 only when every run was right.
  workload = pkgs.writeShellScript "textsearch-workload" (builtins.readFile ./workload.sh);
  # The searches its users run most (training/queries.txt), which the workload runs and
  # checks: copied into the store on their own and named to the workload as $TRAINING_DATA, an
  # input of the two training stages only (an edit retrains; the plain and instrumented builds
  # stay cached).
  trainingData = ./training;
  # workload.sh runs textsearch 35 times, and once per training query; each process writes one
  # profile file: fewer means one did not exit normally.
  minProfiles = 35;
}
