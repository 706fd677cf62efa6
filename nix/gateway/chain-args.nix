# The gateway's arguments to the chain (lib.mkPgoBoltChain, ../lib/chain.nix) for one shapes
# directory: its workload, the profile floors that fit it and its holdout gate. ./default.nix,
# the one wiring of the flake and the host chain, passes them.
#
# Arguments:
#   pkgs      nixpkgs (the stand-in on the host)
#   runStage  the builder's runStage (../lib/builder.nix)
#   trainer   the trainer package (bin/trainer)
#   bench     the bench package (bin/bench): the holdout gate runs it
#   shapes    the shapes directory (*.toml + bodies/): the repo's shapes/, or the user's own
#             (docs/chain.md "Training on your own traffic"); a path or a store path
#   valgrind  absolute path of valgrind (the holdout gate counts instructions)
#   workload  null: `trainer workload` over `shapes` (./workload.nix); else the path of a
#             stand-in executable (tier d's failing workloads)
#   perShape  true: train one derivation per training shape, then merge; false: one training
#             derivation over all shapes
#   allocator null: the crate's default global allocator (gateway/Cargo.toml's default feature);
#             "jemalloc", "mimalloc" or "system": that one (the cargo feature alloc-NAME) in
#             every stage, so the profiles train the binary that ships
{
  pkgs,
  runStage,
  trainer,
  bench,
  shapes,
  valgrind,
  workload ? null,
  perShape ? true,
  allocator ? null,
}:
let
  allocators = [
    "jemalloc"
    "mimalloc"
    "system"
  ];
  gatewayWorkload = import ./workload.nix {
    inherit
      pkgs
      runStage
      trainer
      shapes
      ;
  };
  # Trained one shape per derivation (then merged), unless perShape is false, a stand-in
  # workload is given, or no shape trains (then the one workload's build fails in `trainer
  # shapes`, naming the directory).
  fanOut = perShape && workload == null && gatewayWorkload.workloads != { };
in
assert
  allocator == null
  || builtins.elem allocator allocators
  || throw (
    "gatewayChain: allocator = \"${toString allocator}\": choose one of "
    + "jemalloc, mimalloc, system (or null: the crate's default)"
  );
{
  binName = "gateway";
  ${if allocator == null then null else "cargoExtraArgs"} =
    "-p gateway --bin gateway --no-default-features --features alloc-${allocator}";
  workload =
    if workload != null then
      "${workload}"
    else if fanOut then
      null
    else
      gatewayWorkload.workload;
  workloads = if fanOut then gatewayWorkload.workloads else null;
  # One gateway process per training shape, each writing one profile file: per part, one.
  minProfiles = if fanOut then 1 else gatewayWorkload.minProfiles;
  # An instrumented gateway's .profraw is ~1.3 MB whatever it ran (counters for every
  # function): 64 KiB only catches truncated or foreign files; coverage shows in the profile's
  # function count. A shape's .fdata is text, one line per executed branch edge.
  minProfileBytes = 64 * 1024;
  minFdataBytes = 16 * 1024;
  # Dropped (the proof says `dropped`): the release profile builds the gateway without debug
  # info, and the DWARF BOLT rewrites for std's units (form 0x23, DW_FORM_rnglistx) is what
  # valgrind 3.19 cannot read ("unhandled dwarf2 abbrev form code 0x23"), so the holdout gate,
  # which counts instructions under valgrind, would fail on the optimized binary.
  keepDebugInfo = false;
  # checks.holdout: on the shapes marked `holdout = true`, which never train, PGO and PGO+BOLT
  # must not cost more instructions per request than plain.
  # The whole set after `trainer shapes` (exactly one holdout): a set it refuses fails here.
  holdoutGate = import ./holdout.nix {
    inherit valgrind;
    shapes = gatewayWorkload.validatedShapes;
    bench = "${bench}/bin/bench";
  };
}
