# packages.<system>.gateway-image: the OCI image of gateway-pgo-bolt, a gzip'd docker-archive
# (`docker load < result`, `skopeo copy docker-archive:result ...`).
#
# dockerTools.buildLayeredImage, no base image: the layers hold the gateway's runtime closure
# (the gateway-pgo-bolt output, glibc, libgcc: what its Entrypoint references, nothing else),
# plus one small layer with /etc/passwd, /etc/group and /etc/gateway/gateway.example.toml.
# It runs as an unprivileged user. The labels carry the version, the source revision and,
# stamped after the build by ./label-image.sh (the proofs are build outputs, unknown at
# evaluation time), the proof summary; that step also re-runs the release check.
#
# Arguments:
#   dockerTools      nixpkgs' dockerTools (buildLayeredImage)
#   runCommand       nixpkgs' runCommand (the /etc layer)
#   runStage         name -> env -> script -> derivation (the relabelling, as ./tarball.nix)
#   gateway          the gateway-pgo-bolt derivation
#   releaseCheck     scripts/release-check.sh (a path)
#   readelf, jq      absolute paths of the tools the relabelling uses
#   exampleConfig    gateway.example.toml (a path); shipped with listen = 0.0.0.0:8080
#   version          the image tag and org.opencontainers.image.version
#   rev              the source revision (`self.shortRev or "dirty"`)
#   source           the repository URL (org.opencontainers.image.source: ghcr links it)
#   licenses         SPDX expression (org.opencontainers.image.licenses)
#   imageName        repository part of the tag baked into the archive (default "gateway";
#                    the workflow pushes under ghcr.io/<owner>/<imageName>)
#   binName          the binary (default "gateway")
#   uid              the unprivileged user and group id (default 65532, distroless' nonroot)
#   floors           release-check floors to override, e.g. { RELEASE_MIN_BOLT_FUNCS = "50"; }
#                    (default { }: scripts/release-check.sh's own, set for this gateway)
{
  dockerTools,
  runCommand,
  runStage,
  gateway,
  releaseCheck,
  readelf,
  jq,
  exampleConfig,
  version,
  rev,
  source,
  licenses,
  imageName ? "gateway",
  binName ? "gateway",
  uid ? 65532,
  floors ? { },
}:
let
  id = toString uid;
  labelPrefix = "io.github.pgo-bolt-gateway.proof";

  # /etc for a non-root user (getpwuid must resolve) and the example config. In the image the
  # gateway must listen on all interfaces, or `docker run -p` reaches nothing.
  etc = runCommand "${imageName}-image-etc" { inherit exampleConfig; } ''
    mkdir -p $out/etc/gateway
    {
      echo 'root:x:0:0:root:/:/sbin/nologin'
      echo 'gateway:x:${id}:${id}:gateway:/var/empty:/sbin/nologin'
    } >$out/etc/passwd
    printf 'root:x:0:\ngateway:x:${id}:\n' >$out/etc/group
    sed -E 's/^listen = "127\.0\.0\.1:([0-9]+)"/listen = "0.0.0.0:\1"/' $exampleConfig \
      >$out/etc/gateway/gateway.example.toml
    grep -q '^listen = "0.0.0.0:8080"' $out/etc/gateway/gateway.example.toml
  '';

  unlabelled = dockerTools.buildLayeredImage {
    name = imageName;
    tag = version;
    contents = [ etc ];
    # `created` stays at dockerTools' fixed default: the same inputs give the same image.
    config = {
      # The store path itself (not a /bin symlink): the layers are exactly its closure.
      Entrypoint = [ "${gateway}/bin/${binName}" ];
      # No config is baked in as the default: the example holds a demo key, so a container
      # started without a mounted config fails with "no such file" instead of serving it.
      Cmd = [
        "--config"
        "/etc/gateway/gateway.toml"
      ];
      User = "${id}:${id}";
      ExposedPorts = {
        "8080/tcp" = { };
      };
      Labels = {
        "org.opencontainers.image.title" = imageName;
        "org.opencontainers.image.description" =
          "AI gateway (OpenAI chat/responses, Anthropic messages), PGO + BOLT optimized";
        "org.opencontainers.image.version" = version;
        "org.opencontainers.image.revision" = rev;
        "org.opencontainers.image.source" = source;
        "org.opencontainers.image.licenses" = licenses;
        "${labelPrefix}.files" = "${gateway}/share/${binName}";
      };
    };
  };
in
runStage "${imageName}-image.tar.gz" (
  {
    IMAGE = unlabelled;
    GATEWAY = gateway;
    BIN_NAME = binName;
    RELEASE_CHECK = releaseCheck;
    READELF = readelf;
    JQ = jq;
    LABEL_PREFIX = labelPrefix;
  }
  // floors
) "bash ${./label-image.sh}"
