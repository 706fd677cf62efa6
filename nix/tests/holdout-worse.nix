# Tier d: checks.holdout fails closed. The gateway's holdout gate (../gateway/holdout.nix), as
# the chain calls it, handed a build that really is worse as its "PGO" variant: the
# instrumented gateway (a counter on every edge, ~1.3x the instructions of plain on any path).
# Its build must fail, naming the holdout shape (nix/tests/tier-d.sh "holdout-worse").
# Fewer requests than the chain's check: the verdict is far from the noise.
#
# Arguments: those of ../host/chain.nix (tier d passes the host ones), unchanged.
{ ... }@args:
let
  chain = import ../host/chain.nix args;
  source = import ../gateway/source.nix { root = args.root or ../..; };
in
{
  holdout =
    import ../gateway/holdout.nix
      {
        valgrind = "/usr/bin/valgrind";
        bench = "${chain.bench}/bin/bench";
        inherit (source) shapes;
        benchArgs = [
          "--small 8"
          "--big 200"
        ];
      }
      {
        plain = chain.gateway;
        pgo = chain.gateway-instrumented;
        pgoBolt = chain.gateway-pgo-bolt;
        inherit (chain) runStage;
      };
}
