# shellcheck shell=bash
# Builder of the release tarball (nix/release/tarball.nix); runs the same way outside Nix
# (nix/tests/release-tests.sh builds it twice and compares the bytes).
#
# The tarball holds gateway-<version>-<system>/ with bin/<bin>, share/<bin>/{pgo,bolt}-proof.json,
# LICENSE, gateway.example.toml, release.json and SHA256SUMS. It is reproducible: files sorted
# by name, one mtime (SOURCE_DATE_EPOCH), owner 0:0 numeric, modes normalized, GNU format (no
# pax headers with atimes), `gzip -n` (no name or timestamp in the gzip header).
# The release check runs on the staged tree and again on the packed tarball, unpacked: what
# ships is exactly what was checked. The binary is copied byte for byte (never stripped or
# patched): its sha256 is the bolt-proof's output_sha256.
#
# Next to the tarball it publishes the evidence of the two training runs, the only steps of
# the chain that are not reproducible (docs/releases.md "Verifiable releases"): <name>.profdata and
# <name>.fdata with their manifests (<name>.profdata.manifest.json, <name>.fdata.manifest.json),
# each with a .sha256, and records their sums in release.json. They must be the very files
# the binary was built with: the profile's and its manifest's sha256 must equal pgo-proof's,
# the fdata's bolt-proof's; otherwise nothing is written. scripts/verify-release.sh rebuilds
# the binary from them.
#
# Environment:
#   GATEWAY            the gateway-pgo-bolt output (bin/, share/<bin>/)
#   PROFILE_DIR        the profile it was built with (gateway.profdata, manifest.json)
#   BOLT_PROFILE_DIR   the BOLT profile it was optimized with (gateway.fdata, manifest.json)
#   BIN_NAME           the binary (default gateway)
#   LICENSE_FILE       the project's LICENSE (required: a release carries its license)
#   EXAMPLE_CONFIG     gateway.example.toml
#   RELEASE_CHECK      scripts/release-check.sh
#   READELF            absolute path of readelf (for the release check)
#   VERSION SYSTEM REV the release's version, Nix system and source revision
#   SOURCE_DATE_EPOCH  the one mtime of every entry
#   OUT_DIR            where the .tar.gz and its .sha256 go (default $out)
set -euo pipefail

die() {
  echo "gateway-tarball: FAILED: $*" >&2
  exit 1
}
for v in GATEWAY PROFILE_DIR BOLT_PROFILE_DIR EXAMPLE_CONFIG RELEASE_CHECK READELF VERSION SYSTEM REV SOURCE_DATE_EPOCH; do
  [ -n "${!v:-}" ] || die "environment variable $v is not set"
done
[ -s "${LICENSE_FILE:-/nonexistent}" ] ||
  die "no LICENSE: the repository must carry a LICENSE file at its top (Cargo.toml says Apache-2.0)"
BIN_NAME=${BIN_NAME:-gateway}
OUT_DIR=${OUT_DIR:-${out:-}}
[ -n "$OUT_DIR" ] || die "OUT_DIR (or \$out) is not set"
export READELF

name="$BIN_NAME-$VERSION-$SYSTEM"
sha() { sha256sum "$1" | cut -d' ' -f1; }
# proof_field FILE KEY: a string field of a proof (one key per line, as the stages write them).
proof_field() { sed -nE "s/^ *\"$2\": \"([^\"]*)\".*/\\1/p" "$1" | head -n1; }
proofs="$GATEWAY/share/$BIN_NAME"
# The evidence, published next to the tarball: name in the release -> file.
declare -A evidence=(
  ["$name.profdata"]="$PROFILE_DIR/gateway.profdata"
  ["$name.profdata.manifest.json"]="$PROFILE_DIR/manifest.json"
  ["$name.fdata"]="$BOLT_PROFILE_DIR/gateway.fdata"
  ["$name.fdata.manifest.json"]="$BOLT_PROFILE_DIR/manifest.json"
)
for f in "${evidence[@]}"; do
  [ -s "$f" ] || die "missing or empty $f: a release publishes the profiles it was built with"
done
# Only the files the binary was built with may be published as its evidence.
[ "$(sha "$PROFILE_DIR/gateway.profdata")" = "$(proof_field "$proofs/pgo-proof.json" profile_sha256)" ] ||
  die "$PROFILE_DIR/gateway.profdata is not the profile pgo-proof.json records (profile_sha256)"
[ "$(sha "$PROFILE_DIR/manifest.json")" = "$(proof_field "$proofs/pgo-proof.json" manifest_sha256)" ] ||
  die "$PROFILE_DIR/manifest.json is not the manifest pgo-proof.json records (manifest_sha256)"
[ "$(sha "$BOLT_PROFILE_DIR/gateway.fdata")" = "$(proof_field "$proofs/bolt-proof.json" fdata_sha256)" ] ||
  die "$BOLT_PROFILE_DIR/gateway.fdata is not the fdata bolt-proof.json records (fdata_sha256)"
work=$(mktemp -d "${TMPDIR:-/tmp}/tarball.XXXXXX")
trap 'rm -rf "$work"' EXIT
stage="$work/$name"
mkdir -p "$stage/bin" "$stage/share/$BIN_NAME"
cp "$GATEWAY/bin/$BIN_NAME" "$stage/bin/$BIN_NAME"
cp "$GATEWAY/share/$BIN_NAME/pgo-proof.json" "$GATEWAY/share/$BIN_NAME/bolt-proof.json" \
  "$stage/share/$BIN_NAME/"
cp "$LICENSE_FILE" "$stage/LICENSE"
cp "$EXAMPLE_CONFIG" "$stage/gateway.example.toml"
# The ELF interpreter is recorded because a Nix-built binary names the nixpkgs glibc loader by
# its store path: users of the tarball outside Nix need to know (docs/releases.md).
interp=$("$READELF" -lW "$stage/bin/$BIN_NAME" | sed -nE 's/.*Requesting program interpreter: ([^]]*)\]/\1/p')
# ... and the newest glibc symbol version it needs: the floor for running it with the host's
# loader instead (docs/releases.md).
glibc_min=$("$READELF" -W -V "$stage/bin/$BIN_NAME" | sed -n '/Version needs section/,$p' |
  grep -oE 'GLIBC_[0-9]+(\.[0-9]+)*' | sed 's/^GLIBC_//' | sort -uV | tail -n1)
needed=$("$READELF" -dW "$stage/bin/$BIN_NAME" | sed -nE 's/.*\(NEEDED\).*\[(.*)\]/\1/p' | paste -sd ' ' -)
{
  printf '{\n'
  printf '  "name": "%s",\n' "$BIN_NAME"
  printf '  "version": "%s",\n' "$VERSION"
  printf '  "system": "%s",\n' "$SYSTEM"
  printf '  "source_revision": "%s",\n' "$REV"
  printf '  "elf_interpreter": "%s",\n' "$interp"
  printf '  "glibc_min": "%s",\n' "$glibc_min"
  printf '  "needed_libraries": "%s",\n' "$needed"
  # What scripts/verify-release.sh rebuilds from, and the PGO binary BOLT rewrote.
  printf '  "evidence": {\n'
  printf '    "%s": "%s",\n' \
    "$name.profdata" "$(sha "$PROFILE_DIR/gateway.profdata")" \
    "$name.profdata.manifest.json" "$(sha "$PROFILE_DIR/manifest.json")" \
    "$name.fdata" "$(sha "$BOLT_PROFILE_DIR/gateway.fdata")" \
    "$name.fdata.manifest.json" "$(sha "$BOLT_PROFILE_DIR/manifest.json")"
  printf '    "pgo_bin_sha256": "%s"\n' "$(proof_field "$proofs/bolt-proof.json" input_sha256)"
  printf '  }\n'
  printf '}\n'
} >"$stage/release.json"

# Relative paths, sorted in the C locale, the tarball's own file excluded.
(cd "$stage" && find . -type f ! -name SHA256SUMS | sed 's#^\./##' | LC_ALL=C sort |
  xargs -d '\n' sha256sum) >"$work/SHA256SUMS"
mv "$work/SHA256SUMS" "$stage/SHA256SUMS"
chmod -R u+w,go-w "$stage"
chmod 0755 "$stage/bin/$BIN_NAME"

bash "$RELEASE_CHECK" --bin-name "$BIN_NAME" "$stage" >&2 || die "the release check refused the staged tree"

tarball="$work/$name.tar.gz"
(cd "$work" && LC_ALL=C tar --sort=name --format=gnu --mtime="@$SOURCE_DATE_EPOCH" \
  --owner=0 --group=0 --numeric-owner --mode='u=rwX,go=rX' -cf - "$name") | gzip -9 -n >"$tarball"

# What ships is what was checked: unpack the archive itself and check again.
mkdir "$work/verify"
tar -xzf "$tarball" -C "$work/verify"
bash "$RELEASE_CHECK" --bin-name "$BIN_NAME" "$work/verify/$name" >/dev/null ||
  die "the release check refused the packed tarball"

# Everything staged first, then moved: OUT_DIR gets all of the release or nothing.
mkdir "$work/publish"
install -m 0644 "$tarball" "$work/publish/$name.tar.gz"
for f in "${!evidence[@]}"; do
  install -m 0644 "${evidence[$f]}" "$work/publish/$f"
done
(cd "$work/publish" && for f in *; do sha256sum "$f" >"$f.sha256"; done)
mkdir -p "$OUT_DIR"
mv "$work/publish"/* "$OUT_DIR/"
echo "gateway-tarball: $OUT_DIR/$name.tar.gz $(cut -d' ' -f1 "$OUT_DIR/$name.tar.gz.sha256")" >&2
