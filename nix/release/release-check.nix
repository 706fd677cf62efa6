# checks.<system>.release: scripts/release-check.sh on gateway-pgo-bolt's proofs, the same
# gate the release workflow runs before it publishes anything (and that ./tarball.nix and
# ./image.nix run again on what they package).
#
# Arguments:
#   runStage      name -> env -> script -> derivation (nix/lib/builder.nix or nix/host/lib.nix)
#   gateway       the gateway-pgo-bolt derivation
#   releaseCheck  scripts/release-check.sh (a path)
#   readelf       absolute path of readelf
#   binName       the binary (default "gateway")
#   floors        release-check floors to override, e.g. { RELEASE_MIN_BOLT_FUNCS = "50"; }
#                 (default { }: scripts/release-check.sh's own, set for this gateway)
{
  runStage,
  gateway,
  releaseCheck,
  readelf,
  binName ? "gateway",
  floors ? { },
}:
# `exit 0` last: with a plain `bash -c` builder (nix/host/lib.nix) bash execs a final
# `touch`, which closes its stdout before it exits; Nix kills a builder as soon as its log
# pipe reaches EOF, so under load the check then fails "due to signal 9" (seen with Nix 2.8).
runStage "${binName}-check-release" (
  {
    GATEWAY = gateway;
    READELF = readelf;
  }
  // floors
) "bash ${releaseCheck} --bin-name ${binName} \"$GATEWAY\" && touch $out && exit 0"
