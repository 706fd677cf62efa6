# shellcheck shell=bash
# shellcheck disable=SC2016 # the single-quoted $names are jq variables, not shell ones
# Second half of packages.<system>.gateway-image (nix/release/image.nix): stamps the proof
# summary into the image's labels. The proofs exist only once gateway-pgo-bolt is built, and
# dockerTools takes its config at evaluation time, so the labels cannot go into
# buildLayeredImage's `config` without import-from-derivation (which would make `nix flake
# show` build the whole chain). Instead this rewrites the finished docker-archive: the config
# JSON gains the labels and is renamed to its new sha256, manifest.json points at it, the
# layers are copied byte for byte, and the archive is repacked reproducibly.
#
# Fail-closed: the release check must pass on the gateway, the image must run that very
# gateway (Entrypoint) as a non-root user, and one layer must hold its binary.
#
# Environment:
#   IMAGE          buildLayeredImage's output (a gzip'd docker-archive)
#   GATEWAY        the gateway-pgo-bolt output the image runs
#   BIN_NAME       the binary (default gateway)
#   RELEASE_CHECK  scripts/release-check.sh
#   READELF        absolute path of readelf
#   JQ             absolute path of jq
#   LABEL_PREFIX   prefix of the proof labels
#   OUT_FILE       the relabelled archive (default $out, like buildLayeredImage's output)
set -euo pipefail

die() {
  echo "gateway-image: FAILED: $*" >&2
  exit 1
}
for v in IMAGE GATEWAY RELEASE_CHECK READELF JQ LABEL_PREFIX; do
  [ -n "${!v:-}" ] || die "environment variable $v is not set"
done
BIN_NAME=${BIN_NAME:-gateway}
OUT_FILE=${OUT_FILE:-${out:-}}
[ -n "$OUT_FILE" ] || die "OUT_FILE (or \$out) is not set"
export READELF

bash "$RELEASE_CHECK" --bin-name "$BIN_NAME" "$GATEWAY" >&2 || die "the release check refused $GATEWAY"

work=$(mktemp -d "${TMPDIR:-/tmp}/image.XXXXXX")
trap 'rm -rf "$work"' EXIT
mkdir "$work/archive"
gzip -dc "$IMAGE" | tar -xf - -C "$work/archive"
cd "$work/archive"
[ -f manifest.json ] || die "$IMAGE is not a docker-archive (no manifest.json)"
[ "$("$JQ" 'length' manifest.json)" = 1 ] || die "manifest.json must describe exactly one image"
config=$("$JQ" -er '.[0].Config' manifest.json) || die "manifest.json names no config"
[ -f "$config" ] || die "config $config is missing from the archive"

entry=$("$JQ" -r '.config.Entrypoint[0] // ""' "$config")
[ "$entry" = "$GATEWAY/bin/$BIN_NAME" ] || die "Entrypoint is '$entry', not $GATEWAY/bin/$BIN_NAME"
user=$("$JQ" -r '.config.User // ""' "$config")
case "$user" in
  "" | 0 | 0:* | root | root:*) die "the image would run as root (User '$user')" ;;
esac
found=0
while IFS= read -r layer; do
  if tar -tf "$layer" | grep -qx "\\.\\{0,1\\}/\\{0,1\\}${GATEWAY#/}/bin/$BIN_NAME"; then
    found=1
    break
  fi
done < <("$JQ" -r '.[0].Layers[]' manifest.json)
[ "$found" = 1 ] || die "no layer holds $GATEWAY/bin/$BIN_NAME"

pgo="$GATEWAY/share/$BIN_NAME/pgo-proof.json"
bolt="$GATEWAY/share/$BIN_NAME/bolt-proof.json"
labels=$("$JQ" -n --arg p "$LABEL_PREFIX" --slurpfile pgo "$pgo" --slurpfile bolt "$bolt" '
  ($pgo[0]) as $g | ($bolt[0]) as $b |
  {
    ($p + ".pgo.profile-sha256"): $g.profile_sha256,
    ($p + ".pgo.profraw-count"): ($g.profraw_count | tostring),
    ($p + ".pgo.profile-total-functions"): ($g.profile_total_functions | tostring),
    ($p + ".pgo.rustc"): $g.rustc,
    ($p + ".pgo.rustc-llvm"): $g.rustc_llvm,
    ($p + ".bolt.functions-with-profile"): ($b.functions_with_profile | tostring),
    ($p + ".bolt.functions-total"): ($b.functions_total | tostring),
    ($p + ".bolt.fdata-sha256"): $b.fdata_sha256,
    ($p + ".bolt.version"): $b.bolt_version,
    ($p + ".binary-sha256"): $b.output_sha256,
    ($p + ".summary"): ("PGO: profile \($g.profile_sha256[0:12]) from \($g.profraw_count) runs, "
      + "\($g.profile_total_functions) functions, \($g.rustc); BOLT: "
      + "\($b.functions_with_profile)/\($b.functions_total) functions profiled, "
      + "fdata \($b.fdata_sha256[0:12]); binary sha256 \($b.output_sha256)")
  }') || die "cannot read the proofs with jq"

"$JQ" --argjson l "$labels" '.config.Labels = ((.config.Labels // {}) + $l)' "$config" >"$work/config.json"
sum=$(sha256sum "$work/config.json" | cut -d' ' -f1)
rm "$config"
mv "$work/config.json" "$sum.json"
"$JQ" --arg c "$sum.json" '.[0].Config = $c' manifest.json >"$work/manifest.json"
mv "$work/manifest.json" manifest.json
"$JQ" -r '.config.Labels | to_entries[] | "  \(.key) = \(.value)"' "$sum.json" >&2

# Top-level names without a "./" prefix, as dockerTools writes them (docker and skopeo look
# manifest.json up by name).
mapfile -t top < <(LC_ALL=C ls -A)
LC_ALL=C tar --sort=name --format=gnu --mtime=@1 --owner=0 --group=0 --numeric-owner \
  -cf - -- "${top[@]}" | gzip -n >"$work/image.tar.gz"
mkdir -p "$(dirname "$OUT_FILE")"
cp "$work/image.tar.gz" "$OUT_FILE"
echo "gateway-image: $OUT_FILE (config sha256:$sum)" >&2
