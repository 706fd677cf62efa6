# checks.holdout, the gateway's holdout gate. The holdout shape (`holdout = true` in shapes/) never
# trains; on it the PGO and PGO+BOLT binaries must not need more instructions per request
# than plain. Instructions, not throughput: valgrind's counts are stable to ~0.1% with one
# worker and exact request counts, where throughput on a 2-core builder is not.
# `bench holdout` exits non-zero when a ratio exceeds 1.00, or a variant measures an implausible
# instruction count (0: the counted process served nothing), failing the check; tier d proves it
# with a worse build (nix/tests/holdout-worse.nix).
#
# Arguments:
#   valgrind  absolute path of the valgrind executable (pinned in Nix, Debian's on the host)
#   bench     absolute path of the bench executable (bench/)
#   shapes    the shapes directory whose holdout shapes are measured (the one trained on)
#   binName   the binary's name in each stage's bin/ (default "gateway")
#   benchArgs more `bench holdout` arguments (default none; tier d's worse-build case asks for
#             fewer requests: nix/tests/holdout-worse.nix)
#
# Returns the function ../lib/chain.nix takes as `holdoutGate`.
{
  valgrind,
  bench,
  shapes,
  binName ? "gateway",
  benchArgs ? [ ],
}:
{
  plain,
  pgo,
  pgoBolt,
  runStage,
}:
runStage "${binName}-check-holdout" { } ''
  ${bench} holdout \
    --variant plain=${plain}/bin/${binName} \
    --variant pgo=${pgo}/bin/${binName} \
    --variant pgo-bolt=${pgoBolt}/bin/${binName} \
    --shapes ${shapes} \
    --valgrind ${valgrind} \
    --work-dir "$TMPDIR/holdout" \
    --json "$TMPDIR/holdout.json" \
    --markdown "$TMPDIR/holdout.md" ${builtins.concatStringsSep " " benchArgs}
  mkdir -p "$out"
  cp "$TMPDIR/holdout.json" "$TMPDIR/holdout.md" "$out/"
''
